"""The manifest of `faxws batch send`: CSV or JSON Lines, every row checked before anything is
sent. A bad row is named by its line and its field, all of them at once, and the command exits
2 having sent nothing and added no row to the journal."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from faxws.cli import main
from faxws.cli._manifest import ManifestError, Problem, format_of, read_manifest
from faxws.cli._output import UsageError
from faxws.jobs import JobOptions
from faxws.journal import SqliteJournal
from faxws.models import Recipient
from faxws.pytest_plugin import SimulatorFactory
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

PDF = b"%PDF-1.4 manifest test"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A manifest's folder with documents: a.pdf, b.pdf, empty.pdf, notes.xyz, a folder."""
    (tmp_path / "a.pdf").write_bytes(PDF + b" a")
    (tmp_path / "b.pdf").write_bytes(PDF + b" b")
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "notes.xyz").write_bytes(b"x")
    (tmp_path / "sub.pdf").mkdir()
    return tmp_path


@pytest.fixture(autouse=True)
def _no_client_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("FAXWS_"):
            monkeypatch.delenv(name)


def problems_of(path: Path, manifest_format: str, **defaults: object) -> list[tuple[int, str]]:
    with pytest.raises(ManifestError) as raised:
        read_manifest(str(path), manifest_format, defaults)
    return [(p.line, p.field) for p in raised.value.problems]


# Each case: the rows after the header ``key,to,file`` (CSV), the line and field named, and
# what the problem says.
IN_FIVE_DAYS = (datetime.now(timezone.utc) + timedelta(days=5)).isoformat()
BAD_CSV = {
    "missing key": ("key,to,file\n,+1 555 0100,a.pdf\n", 2, "key", "is missing or empty"),
    "blank key": ("key,to,file\n   ,+1 555 0100,a.pdf\n", 2, "key", "is missing or empty"),
    "duplicate key": (
        "key,to,file\nk1,+1 555 0100,a.pdf\nk2,+1 555 0101,a.pdf\nk1,+1 555 0102,b.pdf\n",
        4,
        "key",
        "'k1' is also the key of line 2",
    ),
    "resend key": ("key,to,file\nk/resend-1,+1 555 0100,a.pdf\n", 2, "key", "/resend-<n>"),
    "key with a space": ('key,to,file\n"inv-1 ",+1 555 0100,a.pdf\n', 2, "key", "spaces"),
    "key not NFC": ("key,to,file\ncafe\u0301,+1 555 0100,a.pdf\n", 2, "key", "composed form"),
    "bad number": ("key,to,file\nk1,call me,a.pdf\n", 2, "to", "'call me' has no digits"),
    "missing number": ("key,to,file\nk1,,a.pdf\n", 2, "to", "is missing or empty"),
    "missing file": ("key,to,file\nk1,+1 555 0100,gone.pdf\n", 2, "file", "not found: "),
    "empty file": ("key,to,file\nk1,+1 555 0100,empty.pdf\n", 2, "file", "is empty: "),
    "a folder": ("key,to,file\nk1,+1 555 0100,sub.pdf\n", 2, "file", "is not a file: "),
    "no file": ("key,to,file\nk1,+1 555 0100,\n", 2, "file", "is missing or empty"),
    "type not inferred": (
        "key,to,file\nk1,+1 555 0100,notes.xyz\n",
        2,
        "file",
        "cannot infer the type of 'notes.xyz'",
    ),
    "unknown column": (
        "key,to,file,colour\nk1,+1 555 0100,a.pdf,red\n",
        1,
        "colour",
        "unknown field 'colour'",
    ),
    "reference column": (
        "key,to,file,reference\nk1,+1 555 0100,a.pdf,r\n",
        1,
        "reference",
        "made by the journal",
    ),
    "column twice": ("key,to,file,key\nk1,+1 555 0100,a.pdf,k\n", 1, "key", "a column twice"),
    "no to column": ("key,file\nk1,a.pdf\n", 1, "to", "the header has no to column"),
    "bad date": (
        "key,to,file,start-at\nk1,+1 555 0100,a.pdf,tomorrow\n",
        2,
        "start-at",
        "must be an ISO 8601 date and time",
    ),
    "date without offset": (
        "key,to,file,expires-at\nk1,+1 555 0100,a.pdf,2030-01-01T00:00:00\n",
        2,
        "expires-at",
        "with an offset",
    ),
    "start too far ahead": (
        f"key,to,file,start-at\nk1,+1 555 0100,a.pdf,{IN_FIVE_DAYS}\n",
        2,
        "start-at",
        "more than 4 days ahead",
    ),
    "expiry before start": (
        "key,to,file,start-at,expires-at\n"
        "k1,+1 555 0100,a.pdf,2030-01-02T00:00:00Z,2030-01-01T00:00:00Z\n",
        2,
        "expires-at",
        "must be after start_at",
    ),
    "bad file type": (
        "key,to,file,file-type\nk1,+1 555 0100,a.pdf,paper\n",
        2,
        "file-type",
        "unknown file type 'paper'",
    ),
    "line break in a cover text": (
        'key,to,file,cover-text\nk1,+1 555 0100,a.pdf,"two\nlines"\n',
        2,
        "cover-text",
        "contains a line break",
    ),
    "a name without a number": (
        "key,to,file,name,to,name\nk1,+1 555 0100,a.pdf,Ann,,Bob\n",
        2,
        "name 2",
        "'Bob' is given for no fax number (to 2)",
    ),
    "a bad second number": (
        "key,to,to,file\nk1,+1 555 0100,fax,a.pdf\n",
        2,
        "to 2",
        "'fax' has no digits",
    ),
    "too many cells": ("key,to,file\nk1,+1 555 0100,a.pdf,extra\n", 2, "-", "has 4 cells"),
    "bad quoting": ('key,to,file\nk1,"+1 555 0100"x,a.pdf\n', 2, "-", "is not CSV"),
    "no rows": ("key,to,file\n", 1, "-", "has no rows"),
}


@pytest.mark.parametrize("case", list(BAD_CSV), ids=list(BAD_CSV))
def test_a_bad_csv_row_is_named_by_line_and_field(folder: Path, case: str) -> None:
    text, line, field, problem = BAD_CSV[case]
    path = folder / "faxes.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as raised:
        read_manifest(str(path), "csv", {})
    [found] = raised.value.problems
    assert (found.line, found.field) == (line, field)
    assert problem in found.problem


BAD_JSONL = {
    "missing key": ('{"to": "+1 555 0100", "file": "a.pdf"}\n', 1, "key", "is missing"),
    "duplicate key": (
        '{"key": "k1", "to": "+1 555 0100", "file": "a.pdf"}\n\n'
        '{"key": "k1", "to": "+1 555 0101", "file": "b.pdf"}\n',
        3,
        "key",
        "is also the key of line 1",
    ),
    "key twice in a line": (
        '{"key": "k1", "key": "k2", "to": "+1 555 0100", "file": "a.pdf"}\n',
        1,
        "key",
        "is given twice",
    ),
    "key spelled twice": (
        '{"key": "k1", "to": "+1 555 0100", "file": "a.pdf", "cover_text": "a", '
        '"cover-text": "b"}\n',
        1,
        "cover-text",
        "is given twice",
    ),
    "a number as a number": (
        '{"key": "k1", "to": 15550100, "file": "a.pdf"}\n',
        1,
        "to",
        "must be a string",
    ),
    "a list of keys": (
        '{"key": ["k1", "k2"], "to": "+1 555 0100", "file": "a.pdf"}\n',
        1,
        "key",
        "must be a string",
    ),
    "bad number": ('{"key": "k1", "to": "x", "file": "a.pdf"}\n', 1, "to", "has no digits"),
    "missing file": (
        '{"key": "k1", "to": "+1 555 0100", "file": ["a.pdf", "gone.pdf"]}\n',
        1,
        "file 2",
        "not found: ",
    ),
    "unknown field": (
        '{"key": "k1", "to": "+1 555 0100", "file": "a.pdf", "colour": "red"}\n',
        1,
        "colour",
        "unknown field",
    ),
    "notify field": (
        '{"key": "k1", "to": "+1 555 0100", "file": "a.pdf", "notify_url": "http://x"}\n',
        1,
        "notify_url",
        "--notify-url",
    ),
    "bad option": (
        '{"key": "k1", "to": "+1 555 0100", "file": "a.pdf", "start_at": "soon"}\n',
        1,
        "start-at",
        "ISO 8601",
    ),
    "not JSON": ("{key: k1}\n", 1, "-", "is not JSON"),
    "not an object": ('["k1", "+1 555 0100", "a.pdf"]\n', 1, "-", "is not a JSON object"),
    "not UTF-8": (b'{"key": "k\xe9", "to": "+1", "file": "a.pdf"}\n', 1, "-", "is not UTF-8"),
}


@pytest.mark.parametrize("case", list(BAD_JSONL), ids=list(BAD_JSONL))
def test_a_bad_jsonl_row_is_named_by_line_and_field(folder: Path, case: str) -> None:
    text, line, field, problem = BAD_JSONL[case]
    path = folder / "faxes.jsonl"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as raised:
        read_manifest(str(path), "jsonl", {})
    [found] = raised.value.problems
    assert (found.line, found.field) == (line, field)
    assert problem in found.problem


def test_every_bad_row_is_named_at_once_and_good_rows_are_not(folder: Path) -> None:
    path = folder / "faxes.csv"
    path.write_text(
        "key,to,file\n"
        "k1,+1 555 0100,a.pdf\n"
        ",x,gone.pdf\n"
        "k3,+1 555 0102,b.pdf\n"
        "k1,+1 555 0103,a.pdf\n",
        encoding="utf-8",
    )
    with pytest.raises(ManifestError) as raised:
        read_manifest(str(path), "csv", {})
    assert [str(p) for p in raised.value.problems] == [
        "line 3, key: is missing or empty: every row needs its own key",
        "line 3, to: 'x' has no digits",
        f"line 3, file: not found: {folder / 'gone.pdf'}",
        "line 5, key: 'k1' is also the key of line 2",
    ]
    assert str(raised.value) == f"{path}: 2 bad row(s)"


def test_csv_fields_repeat_pair_and_take_the_flags_as_defaults(
    folder: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative paths are the manifest's folder's, wherever the command runs.
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    path = folder / "faxes.csv"
    path.write_text(
        "\ufeffKey,to,name,company,to,name,company,file,file,cover_subject,Start-At,resolution\n"
        'inv-1,+1 555 0100,Ann,,+1 555 0101,,ACME,a.pdf,b.pdf,"Hello, you",'
        "2030-01-01T08:00:00+02:00,\n"
        "\n"
        "inv-2,,,,+1 555 0102,,,,b.pdf,,,fine\n",
        encoding="utf-8",
    )
    now = datetime(2029, 12, 31, tzinfo=timezone.utc)
    defaults = {"cover_subject": "Default", "resolution": "standard", "file_type": 101}
    first, second = read_manifest(str(path), "csv", defaults, now=now)
    assert first.line == 2
    assert first.key == "inv-1"
    assert first.recipients == (
        Recipient("+1 555 0100", name="Ann"),
        Recipient("+1 555 0101", company="ACME"),
    )
    assert first.files == ((str(folder / "a.pdf"), 101), (str(folder / "b.pdf"), 101))
    assert first.options == JobOptions(
        cover_subject="Hello, you",
        start_at=datetime(2030, 1, 1, 6, tzinfo=timezone.utc),
        resolution="standard",
    )
    assert second.line == 4  # the blank line is skipped, and counted
    assert second.recipients == (Recipient("+1 555 0102"),)
    assert second.options == JobOptions(cover_subject="Default", resolution="fine")


def test_jsonl_lists_and_a_file_type_per_row(folder: Path) -> None:
    (folder / "scan.tif").write_bytes(b"II*\x00tiff")
    path = folder / "faxes.ndjson"
    path.write_text(
        json.dumps(
            {
                "key": "j1",
                "to": ["+1 555 0100", "+1 555 0101"],
                "name": ["Ann"],
                "file": "scan.tif",
                "file_type": "tiff_g4",
                "sender-name": "Ops",
                "cover-text": None,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    [entry] = read_manifest(str(path), format_of(str(path), None), {})
    assert entry.recipients == (Recipient("+1 555 0100", name="Ann"), Recipient("+1 555 0101"))
    assert entry.files == ((str(folder / "scan.tif"), 2),)
    assert entry.options == JobOptions(sender_name="Ops")


def test_the_format_is_the_extension_or_the_flag() -> None:
    assert format_of("a/faxes.CSV", None) == "csv"
    assert format_of("faxes.jsonl", None) == "jsonl"
    assert format_of("faxes.ndjson", None) == "jsonl"
    assert format_of("faxes.txt", "csv") == "csv"
    with pytest.raises(UsageError, match=r"pass --format csv or --format jsonl"):
        format_of("faxes.txt", None)


def test_problem_text() -> None:
    assert str(Problem(3, "to", "has no digits")) == "line 3, to: has no digits"
    assert str(Problem(4, "-", "is not JSON")) == "line 4: is not JSON"


# -- through the command ---------------------------------------------------------------------


def run(
    capsys: pytest.CaptureFixture[str], sim: FaxWSSimulator, *args: str
) -> tuple[int, str, str]:
    code = main(
        [
            "batch",
            "send",
            *args,
            "--base-url",
            sim.url,
            "--user-id",
            DEMO_USER_ID,
            "--pin",
            DEMO_PIN,
        ]
    )
    out, err = capsys.readouterr()
    return code, out, err


def journal_rows(path: Path) -> int:
    if not path.exists():
        return 0
    journal = SqliteJournal(path)
    try:
        return sum(journal.counts_by_state().values())
    finally:
        journal.close()


@pytest.mark.parametrize(
    "case", ["duplicate key", "bad number", "missing file", "unknown column", "bad date"]
)
def test_the_command_sends_nothing_and_adds_nothing_for_a_bad_row(
    faxws_simulator: FaxWSSimulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    text, line, field, problem = BAD_CSV[case]
    manifest = folder / "faxes.csv"
    manifest.write_text(text, encoding="utf-8")
    journal = folder / "batch.db"
    code, out, err = run(capsys, faxws_simulator, str(manifest), "--journal", str(journal))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == f"faxws batch send: {manifest}: 1 bad row(s); nothing was sent:"
    assert lines[1].startswith(f"  line {line}, {field}: ")
    assert problem in lines[1]
    assert faxws_simulator.requests == []
    assert journal_rows(journal) == 0


def test_bad_rows_in_json(
    faxws_simulator: FaxWSSimulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = folder / "faxes.jsonl"
    manifest.write_text(
        '{"key": "k1", "to": "x", "file": "a.pdf"}\n{"key": "k2", "to": "+1 555 0100"}\n',
        encoding="utf-8",
    )
    code, out, err = run(
        capsys, faxws_simulator, str(manifest), "--journal", str(folder / "b.db"), "--json"
    )
    assert code == 2
    error = json.loads(out)["error"]
    assert error["type"] == "ManifestError"
    assert error["maybe_delivered"] is False
    assert error["problems"] == [
        {"line": 1, "field": "to", "problem": "'x' has no digits"},
        {"line": 2, "field": "file", "problem": "is missing or empty: every row needs a document"},
    ]
    assert err.splitlines()[1:] == [
        "  line 1, to: 'x' has no digits",
        "  line 2, file: is missing or empty: every row needs a document",
    ]
    assert faxws_simulator.requests == []


def test_a_key_in_the_journal_with_another_fax_is_a_bad_row(
    faxws_simulator_factory: SimulatorFactory, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = faxws_simulator_factory(time_scale=1000)
    manifest = folder / "faxes.csv"
    journal = folder / "batch.db"
    manifest.write_text(
        "key,to,file\nk1,+1 555 0100,a.pdf\nk2,+1 555 0101,b.pdf\n", encoding="utf-8"
    )
    code, _, err = run(capsys, sim, str(manifest), "--journal", str(journal))
    assert code == 0, err
    sent = len(sim.requests_for("SendFaxEx"))
    assert sent == 2
    # Another number for k1, and b.pdf (k2's document) changed: neither key sends anything.
    manifest.write_text(
        "key,to,file\nk1,+1 555 0199,a.pdf\nk2,+1 555 0101,b.pdf\nk3,+1 555 0102,a.pdf\n",
        encoding="utf-8",
    )
    (folder / "b.pdf").write_bytes(PDF + b" b, changed")
    code, _, err = run(capsys, sim, str(manifest), "--journal", str(journal))
    assert code == 2
    assert err.splitlines()[1:] == [
        "  line 2, key: 'k1' is in the journal with another fax (other recipients, files or "
        "options, or a document changed since): a key is never reused",
        "  line 3, key: 'k2' is in the journal with another fax (other recipients, files or "
        "options, or a document changed since): a key is never reused",
    ]
    assert len(sim.requests_for("SendFaxEx")) == sent
    assert journal_rows(journal) == 2  # k3 was not added either
