"""Every ```python and ```sh example of README.md and docs/ runs as a reader pastes it (the
conventions are doc_examples.py's), and what some of them show is checked too."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import socket
from collections.abc import Callable
from pathlib import Path

import doc_examples
import pytest
from doc_examples import (
    ROOT,
    SERVE,
    Block,
    Result,
    all_blocks,
    problems,
    read_page,
    run,
    runnable_blocks,
)

BLOCKS = runnable_blocks()


def _lines(result: Result) -> list[str]:
    return result.stdout.splitlines()


def _transport(result: Result) -> None:
    assert result.stdout == "HTTPStatusError True 1\n"


def _fax_life(result: Result) -> None:
    lines = _lines(result)
    assert len(lines) == 2
    assert " delivered 1 pages " in lines[0]
    assert lines[1].endswith("failed: Failed: the line was busy")


def _batch_commands(result: Result) -> None:
    """The 1,000-row batch, interrupted and resumed: every fax delivered, and the simulator
    took exactly one SendFaxEx per row."""
    with open(result.folder / "outcomes.csv", newline="") as outcomes:
        rows = list(csv.DictReader(outcomes))
    assert len(rows) == 1000
    assert {row["state"] for row in rows} == {"delivered"}
    assert len({row["reference_id"] for row in rows}) == 1000
    received = json.loads(result.stdout.strip().splitlines()[-1])
    assert received["total"] == 1000


def _batch_python(result: Result) -> None:
    assert result.stdout == "20 delivered\n"


def _first_fax(result: Result) -> None:
    lines = _lines(result)
    assert lines[0] == "sent: SIM00000001"
    assert lines[1].startswith("SIM00000001 SUCCEEDED 1 page(s)")
    assert len(result.simulator.jobs) == 1  # type: ignore[attr-defined]


def _first_cli(result: Result) -> None:
    assert "job SIM00000001" in result.stdout
    assert "Reference first-fax: found, succeeded." in result.stdout


def _pytest_passed(count: int) -> Callable[[Result], None]:
    def check(result: Result) -> None:
        assert re.search(rf"\b{count} passed\b", result.stdout), result.stdout

    return check


def _shown(page: str, marker: str) -> str:
    """The shown (not run) block of ``page`` holding ``marker``: what the page says a run
    prints, to compare with what it printed."""
    (found,) = [
        block.code
        for block in read_page(ROOT / page).blocks
        if not block.runs and marker in block.code
    ]
    return found


def _failure(result: Result) -> None:
    """The failure the command line's page shows is the one `faxws send` gives: the exit
    code, the stderr line and the JSON object, as shown."""
    assert _lines(result)[0] == "exit 5"
    shown = json.loads(_shown("docs/cli.md", '"exit_code": 5'))
    assert json.loads((result.folder / "failure.json").read_text()) == shown
    (line,) = _shown("docs/cli.md", "faxws send: HTTPStatusError").splitlines()
    assert line in result.stderr.splitlines(), result.stderr
    assert "Reference invoice-2041: not found." in result.stdout


def _validation(result: Result) -> None:
    lines = _lines(result)
    assert lines[0].startswith("4 /SendFax/Recipients/item[2]/RecipCompany ")
    assert "(1, False)" in lines[-1]


#: Checks of what a block shows, each found by a piece of text only its block has.
CHECKS: dict[str, Callable[[Result], None]] = {
    "MockTransport(answer)": _transport,
    "except WaitTimeoutError as exc:": _fax_life,
    "faxws batch send faxes.csv": _batch_commands,
    "Batch(journal, client": _batch_python,
    'print("sent:", sent.job_ids[0])': _first_fax,
    "faxws status --reference first-fax": _first_cli,
    "def test_my_async_code(faxws_simulator)": _pytest_passed(1),
    "def test_my_code(faxws_simulator)": _pytest_passed(3),
    "faxws.validate(request)": _validation,
    "--json > failure.json": _failure,
}


def _check_for(block: Block) -> Callable[[Result], None] | None:
    found = [check for marker, check in CHECKS.items() if marker in block.code]
    assert len(found) <= 1, f"{block.id} matches several checks"
    return found[0] if found else None


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_example_runs(block: Block, tmp_path: Path) -> None:
    result = run(block, tmp_path / "example")
    assert result.returncode == 0, result.explain()
    check = _check_for(block)
    if check is not None:
        check(result)


#: The blocks that start `faxws serve` in the background and wait until it listens.
WAITING = [
    block
    for block in BLOCKS
    if block.lang == "sh" and re.search(r"^faxws serve\b.*&", block.code, flags=re.M)
]


@pytest.mark.parametrize("block", WAITING, ids=[block.id for block in WAITING])
def test_a_failed_start_ends_the_wait(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script that waits for `faxws serve` gives up when the server exited instead of
    listening, here because its port is taken: the wait ends, the script fails, and what
    follows the wait never runs."""
    assert re.search(r'kill -0 "\$SERVER" \|\| exit 1', block.code), block.id
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(doc_examples, "free_port", lambda: port)
        code = re.sub(r"--port 0\b", f"--port {port}", block.code)
        result = run(dataclasses.replace(block, code=code), tmp_path / "example", timeout=120)
    assert result.returncode == 1, result.explain()
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert result.stdout == "", result.explain()  # nothing after the wait ran


def test_every_check_has_its_example() -> None:
    for marker in CHECKS:
        assert any(marker in block.code for block in BLOCKS), marker


def test_the_pages_fences_and_set_up_sentences() -> None:
    """Every block is run or shown by its language, and every set-up sentence is one the
    runner provides, just before a block it runs."""
    assert problems() == []


def test_the_runner_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "With `faxws serve --port 9090` running:\n\n```python\nprint(1)\n```\n\n"
        "With a `notes.docx` in the current folder:\n\n```sh\ntrue\n```\n\n"
        f"{SERVE.capitalize()}:\n\n```console\n$ true\n```\n\n"
        "```py\nprint(2)\n```\n\n```\nplain\n```\n"
    )
    found = read_page_at(page)
    expected = [
        "a set-up sentence the example runner does not know",
        "no sample document for 'notes.docx'",
        "a set-up sentence not followed by a python or sh block",
        "```py is neither run (python, sh) nor shown",
        "a block without a language",
    ]
    assert len(found) == len(expected), found
    for problem, start in zip(found, expected, strict=True):
        assert problem.split(": ", 1)[1].startswith(start), problem


def read_page_at(path: Path) -> list[str]:
    """read_page's problems for a page outside the repository."""
    saved = doc_examples.ROOT
    doc_examples.ROOT = path.parent
    try:
        return read_page(path).problems
    finally:
        doc_examples.ROOT = saved


def test_the_runner_provides_what_a_set_up_sentence_names(tmp_path: Path) -> None:
    """The set-up sentences' promises: a simulator on the port the block names, and
    documents of the names the sentence gives."""
    page = tmp_path / "page.md"
    page.write_text(
        f"{SERVE.capitalize()} and a `contract.pdf` and a `scan.tif` in the current folder:\n\n"
        "```sh\n"
        "faxws send --base-url http://127.0.0.1:8080 --user-id mbx0000000000 --pin 0000 \\\n"
        '  --to "+1 555 0100" contract.pdf scan.tif --file-type tiff_g4 --json\n'
        "```\n"
    )
    saved = doc_examples.ROOT
    doc_examples.ROOT = tmp_path
    try:
        (block,) = read_page(page).blocks
    finally:
        doc_examples.ROOT = saved
    assert block.needs_server
    assert block.files == ("contract.pdf", "scan.tif")
    result = run(block, tmp_path / "run")
    assert result.returncode == 0, result.explain()
    assert "8080" not in result.script
    (job,) = result.simulator.jobs  # type: ignore[attr-defined]
    assert [f.size for f in job.files] == [
        (tmp_path / "run" / "contract.pdf").stat().st_size,
        (tmp_path / "run" / "scan.tif").stat().st_size,
    ]
    assert job.pages == 2


def test_every_page_has_examples_or_reference() -> None:
    """The runner reads the pages the site is built from (a page it missed would rot)."""
    paths = {block.path for block in all_blocks()}
    assert "README.md" in paths
    assert {p for p in paths if p.startswith("docs/")} >= {
        f"docs/{name}.md" for name in ("getting-started", "client", "cli", "simulator")
    }
    assert (ROOT / "mkdocs.yml").is_file()
