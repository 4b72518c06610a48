"""The README's runnable examples run."""

from __future__ import annotations

import re
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
