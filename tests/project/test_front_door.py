"""The README's front door, from a wheel built from the tree and installed into a fresh virtual
environment: `faxws serve` starts, the first fax in Python is sent and delivered, the inbox
shows it, and the command line's lines send and check another.

The fresh environment has no network: the wheel goes in with ``--no-index --no-deps``, and
its dependencies (lxml, requests, urllib3, zeep) are this environment's, reached through a
``.pth`` file naming this environment's site-packages (which does not bring this
environment's own faxws: a ``.pth`` there is not read from a folder added that way)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from built_wheel import build_wheel
from doc_examples import ROOT, Server, environment, read_page, run


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel = build_wheel(tmp_path_factory)
    home = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, timeout=300)
    python = home / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
        check=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return home


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(timeout), f"no line from faxws serve in {timeout} s"
    return process.stdout.readline()


@pytest.fixture
def served(venv: Path, tmp_path: Path) -> Iterator[dict[str, object]]:
    """`faxws serve` of the fresh environment, on a free port."""
    process = subprocess.Popen(
        [str(venv / "bin" / "faxws"), "serve", "--port", "0", "--json", "--quiet"],
        cwd=tmp_path,
        env=environment(venv / "bin"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield json.loads(_first_line(process, 60))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
            assert process.stdout is not None
            process.stdout.close()


def test_the_wheel_is_what_runs(venv: Path) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import faxws, zeep; print(faxws.__file__)"],
        env=environment(venv / "bin"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith(str(venv)), done.stdout
    assert not done.stdout.startswith(str(ROOT))


def _inbox_shows(url: str, text: str, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(url, timeout=30) as answer:
            if text in answer.read().decode("utf-8"):
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)  # the inbox is read again until the job is listed


def test_the_readme_front_door_from_the_wheel(
    venv: Path, served: dict[str, object], tmp_path: Path
) -> None:
    first_fax, command_line = [b for b in read_page(ROOT / "README.md").blocks if b.runs]
    server = Server(str(served["url"]), str(served["token_url"]))
    python = venv / "bin" / "python"

    result = run(first_fax, tmp_path / "python", python=python, server=server)
    assert result.returncode == 0, result.explain()
    assert result.stdout.splitlines()[0] == "sent: SIM00000001"
    assert result.stdout.splitlines()[1].startswith("SIM00000001 SUCCEEDED 1 page(s)")
    assert _inbox_shows(str(served["inbox_url"]), "SIM00000001")

    result = run(command_line, tmp_path / "shell", python=python, server=server)
    assert result.returncode == 0, result.explain()
    assert "job SIM00000002" in result.stdout
    assert "Reference first-fax: found, succeeded." in result.stdout
    assert _inbox_shows(str(served["inbox_url"]), "SIM00000002")
