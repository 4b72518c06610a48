"""The wheel built from the working tree, once per test session, for the packaging tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_built: list[Path] = []


def build_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if _built:
        return _built[0]
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        timeout=600,
        check=True,
    )
    (found,) = out.glob("faxws-*.whl")
    _built.append(found)
    return found
