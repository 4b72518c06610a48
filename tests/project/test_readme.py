"""The README's runnable examples run."""

from __future__ import annotations

import csv
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_the_simulator_example_runs() -> None:
    (block,) = [b for b in python_blocks() if "FaxWSSimulator() as sim" in b]
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation


def test_the_async_simulator_example_runs() -> None:
    from faxws.testing import FaxWSSimulator

    (block,) = [b for b in python_blocks() if "def test_my_async_code(faxws_simulator)" in b]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    with FaxWSSimulator() as sim:
        namespace["test_my_async_code"](sim)  # type: ignore[operator]
        assert len(sim.jobs) == 1


def test_the_readme_opens_with_the_two_commands() -> None:
    first_block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in first_block.splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]


def test_the_transport_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = [b for b in python_blocks() if "MockTransport(answer)" in b]
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    assert capsys.readouterr().out == "HTTPStatusError True 1\n"


def test_the_fax_life_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = [b for b in python_blocks() if "wait_for_delivery(sent, timeout=60)" in b]
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert " delivered 1 pages " in lines[0]
    assert lines[1].endswith("failed: Failed: the line was busy")


def test_the_batch_commands_run(tmp_path: Path) -> None:
    """The README's 1,000-row batch, interrupted and resumed, as a reader pastes it (on a free
    port): every fax delivered, and the simulator took exactly one SendFaxEx per row."""
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    (block,) = [b for b in blocks if "faxws batch send faxes.csv" in b]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    count = (
        'python3 -c "import json, urllib.request; print(json.load(urllib.request.urlopen('
        f"'http://127.0.0.1:{port}/api/jobs?limit=1', timeout=30))['total'])\" > jobs.txt\n"
    )
    script = block.replace("8765", port).replace("kill $SERVER", count + "kill $SERVER")
    assert script != block
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    env = {k: v for k, v in env.items() if not k.startswith("FAXWS_")}
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "outcomes.csv", newline="") as outcomes:
        rows = list(csv.DictReader(outcomes))
    assert len(rows) == 1000
    assert {row["state"] for row in rows} == {"delivered"}
    assert len({row["reference_id"] for row in rows}) == 1000
    assert (tmp_path / "jobs.txt").read_text().strip() == "1000"


def test_the_batch_python_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = [b for b in python_blocks() if "Batch(journal, client" in b]
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    assert capsys.readouterr().out == "20 delivered\n"
