"""What a journal row sends: FaxSpec and FileSpec are checked when made (a bad field is a
BadInputError naming it; no reference_id or notify in the options), their payload is canonical
JSON read back to an equal spec, and the digest binds the payload to the documents' bytes."""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from faxws import FileType, JobOptions, Notify, Recipient
from faxws.errors import BadInputError
from faxws.journal import FaxSpec, FileSpec

PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
START = datetime(2026, 1, 2, 9, 30, tzinfo=timezone(timedelta(hours=2)))


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "a.pdf"
    path.write_bytes(PDF)
    return path


@pytest.fixture
def tif(tmp_path: Path) -> Path:
    path = tmp_path / "b.tif"
    path.write_bytes(b"II*\x00tiff")
    return path


def full(pdf: Path, tif: Path) -> FaxSpec:
    return FaxSpec(
        [Recipient("+1 555 0100", name="Dr. Ünï", company="ACME"), "+1 555 0101"],
        [FileSpec(pdf), FileSpec(str(tif), FileType.TIFF_G3)],
        JobOptions(cover_subject="Invoice", start_at=START, sender_name="Ops"),
    )


def test_the_payload_is_canonical_json_with_absolute_paths(pdf: Path, tif: Path) -> None:
    spec = full(pdf, tif)
    text = spec.payload()
    assert text.isascii()
    assert " " not in text.replace("+1 555 ", "").replace("Dr. ", "")
    document = json.loads(text)
    assert text == json.dumps(document, sort_keys=True, separators=(",", ":"))
    assert document == {
        "v": 1,
        "recipients": [
            {"fax_number": "+1 555 0100", "name": "Dr. Ünï", "company": "ACME"},
            {"fax_number": "+1 555 0101"},
        ],
        "files": [
            {"path": str(pdf), "type": int(FileType.PDF)},
            {"path": str(tif), "type": int(FileType.TIFF_G3)},
        ],
        "options": {
            "cover_subject": "Invoice",
            "sender_name": "Ops",
            "start_at": "2026-01-02T09:30:00+02:00",
        },
    }


def test_from_payload_gives_an_equal_spec(pdf: Path, tif: Path) -> None:
    spec = full(pdf, tif)
    again = FaxSpec.from_payload(spec.payload())
    assert again == spec
    assert again.payload() == spec.payload()
    assert again.options.start_at == START
    assert again.fax_numbers() == ("+1 555 0100", "+1 555 0101")
    assert FaxSpec.from_payload(FaxSpec(["+1 555 0100"], [FileSpec(pdf)]).payload()).options == (
        JobOptions()
    )


def test_a_relative_path_is_made_absolute(pdf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(pdf.parent)
    assert FileSpec("a.pdf").path == str(pdf)
    assert FileSpec(Path("a.pdf")) == FileSpec(pdf)
    assert os.path.isabs(
        json.loads(FaxSpec(["1"], [FileSpec("a.pdf")]).payload())["files"][0]["path"]
    )


def test_the_digest_covers_the_payload_and_each_documents_bytes(pdf: Path, tif: Path) -> None:
    spec = full(pdf, tif)
    parts = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (pdf, tif)]
    expected = hashlib.sha256(
        spec.payload().encode() + b"".join(b"\n" + p.encode() for p in parts)
    ).hexdigest()
    assert spec.digest() == expected
    tif.write_bytes(b"II*\x00other")
    assert spec.digest() != expected
    other = FaxSpec(["+1 555 0100"], [FileSpec(pdf)], JobOptions(cover_subject="x"))
    assert other.digest() != FaxSpec(["+1 555 0100"], [FileSpec(pdf)]).digest()


def test_an_unreadable_file_is_bad_input_naming_it(tmp_path: Path) -> None:
    spec = FaxSpec(["+1 555 0100"], [FileSpec(tmp_path / "gone.pdf")])
    with pytest.raises(BadInputError) as caught:
        spec.digest()
    assert str(tmp_path / "gone.pdf") in str(caught.value)
    with pytest.raises(BadInputError) as sent:
        spec.fax_files()
    assert sent.value.field == "files[0]"
    assert "gone.pdf" in str(sent.value)


def test_fax_files_are_the_documents_to_send(pdf: Path, tif: Path) -> None:
    files = full(pdf, tif).fax_files()
    assert [(f.file_type, f.read_bytes()) for f in files] == [
        (FileType.PDF, PDF),
        (FileType.TIFF_G3, b"II*\x00tiff"),
    ]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (JobOptions(reference_id="mine"), "options.reference_id"),
        (JobOptions(notify=Notify("https://hooks.example.com/fax")), "options.notify"),
        ("cover", "options"),
    ],
)
def test_options_the_journal_or_the_batch_give_are_refused(
    pdf: Path, options: object, field: str
) -> None:
    with pytest.raises(BadInputError) as caught:
        FaxSpec(["+1 555 0100"], [FileSpec(pdf)], options)  # type: ignore[arg-type]
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("recipients", "files", "field"),
    [
        ([], None, "recipients"),
        ("+1 555 0100", None, "recipients"),
        (["+1 555 0100", "no digits"], None, "recipients[1].fax_number"),
        (["+1 555 0100", 42], None, "recipients[1]"),
        (None, [], "files"),
        (None, ["/abs/a.pdf"], "files[0]"),
    ],
)
def test_bad_fields_are_named(pdf: Path, recipients: object, files: object, field: str) -> None:
    with pytest.raises(BadInputError) as caught:
        FaxSpec(
            ["+1 555 0100"] if recipients is None else recipients,  # type: ignore[arg-type]
            [FileSpec(pdf)] if files is None else files,  # type: ignore[arg-type]
        )
    assert caught.value.field == field


def test_file_spec_checks_its_fields(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as tiff:
        FileSpec(tmp_path / "scan.tif")
    assert tiff.value.field == "file_type"
    assert "TIFF_G3" in tiff.value.problem
    for path in ("", 7, "a\nb.pdf"):
        with pytest.raises(BadInputError) as bad:
            FileSpec(path)  # type: ignore[arg-type]
        assert bad.value.field == "path"
    with pytest.raises(BadInputError) as kind:
        FileSpec(tmp_path / "a.pdf", "pdf")  # type: ignore[arg-type]
    assert kind.value.field == "file_type"


def test_specs_are_frozen(pdf: Path) -> None:
    spec = FaxSpec(["+1 555 0100"], [FileSpec(pdf)])
    with pytest.raises(AttributeError):
        spec.recipients = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        spec.files[0].path = "/other.pdf"  # type: ignore[misc]
    assert hash(spec) == hash(FaxSpec(["+1 555 0100"], [FileSpec(pdf)]))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("not json", "payload"),
        ("[]", "payload"),
        ('{"v": 2, "recipients": [], "files": []}', "payload.v"),
        ('{"v": 1, "recipients": {}, "files": []}', "payload.recipients"),
        ('{"v": 1, "recipients": [{"fax_number": "1"}], "files": [], "x": 1}', "payload"),
        ('{"v": 1, "recipients": [{"fax": "1"}], "files": []}', "payload.recipients[0]"),
        (
            '{"v": 1, "recipients": [{"fax_number": "1"}], "files": [{"path": "a.pdf", '
            '"type": 1}]}',
            "payload.files[0].path",
        ),
        (
            '{"v": 1, "recipients": [{"fax_number": "1"}], "files": [{"path": "/a.pdf", '
            '"type": 1}], "options": {"start_at": "soon"}}',
            "payload.options.start_at",
        ),
        (
            '{"v": 1, "recipients": [{"fax_number": "1"}], "files": [{"path": "/a.pdf", '
            '"type": 1}], "options": {"reference_id": "x"}}',
            "payload.options",
        ),
    ],
)
def test_a_payload_of_another_form_is_bad_input(text: str, field: str) -> None:
    with pytest.raises(BadInputError) as caught:
        FaxSpec.from_payload(text)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("inv-1 ", "spaces before or after"),
        (" inv-1", "spaces before or after"),
        ("cafe\u0301", "composed form"),
        ("", "empty"),
        ("\u00e9" * 501, "longer than 1000 bytes"),
    ],
)
def test_keys_that_look_alike_are_refused(key: str, problem: str) -> None:
    from faxws.journal._payload import check_key

    with pytest.raises(BadInputError) as caught:
        check_key(key)
    assert caught.value.field == "key"
    assert problem in str(caught.value)
    assert check_key("caf\u00e9 inv-1") == "caf\u00e9 inv-1"


# -- the digests this process remembers ----------------------------------------------------------

#: A digests' clock this far ahead finds every file settled (left alone long enough).
AHEAD_NS = 3600 * 10**9
SAME_SIZE = b"%PDF-1.4\n1 0 obj << /Type /Pag! >> endobj\n%%EOF\n"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the digests open from now on; every file is settled for them."""
    from faxws.journal import _payload

    opened: list[str] = []

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(_payload, "open", counting, raising=False)
    ahead = _payload._Digests(clock=lambda: time.time_ns() + AHEAD_NS)
    monkeypatch.setattr(_payload, "_DIGESTS", ahead)
    return opened


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` (same inode), its modification time set back as it was,
    until its change time moves on (the file system's clock ticks in milliseconds)."""
    before = os.stat(path)
    deadline = time.monotonic() + 10
    while True:
        with open(path, "r+b") as fh:
            fh.write(data)
            fh.truncate()
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        if after.st_ctime_ns != before.st_ctime_ns:
            break
        assert time.monotonic() < deadline, "the change time never moved on"
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def test_an_unchanged_document_is_read_once(pdf: Path, tif: Path, reads: list[str]) -> None:
    spec = full(pdf, tif)
    first = spec.digest()
    assert spec.digest() == first
    assert FaxSpec(["+1 555 0199"], [FileSpec(pdf)]).digest() != first
    assert reads == [str(pdf), str(tif)]


def test_a_same_size_rewrite_keeping_the_modification_time_is_read_again(
    pdf: Path, reads: list[str]
) -> None:
    # Only the change time tells (no caller can set it back).
    first = FileSpec(pdf).sha256()
    rewrite_in_place(pdf, SAME_SIZE)
    assert len(SAME_SIZE) == len(PDF)
    assert FileSpec(pdf).sha256() == hashlib.sha256(SAME_SIZE).hexdigest() != first
    assert reads == [str(pdf), str(pdf)]


def test_a_document_replaced_by_one_of_the_same_size_and_times_is_read_again(
    pdf: Path, tmp_path: Path, reads: list[str]
) -> None:
    first = FileSpec(pdf).sha256()
    before = os.stat(pdf)
    other = tmp_path / "other.pdf"
    other.write_bytes(SAME_SIZE)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, pdf)
    assert FileSpec(pdf).sha256() == hashlib.sha256(SAME_SIZE).hexdigest() != first


def test_a_document_written_within_one_tick_of_its_clock_is_never_remembered(
    pdf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two writes within one tick of the file system's clock leave every time as it was: as
    # if inode and change time were not seen, the file just written is still read again.
    from faxws.journal import _payload

    def blind(found: os.stat_result) -> Any:
        return (found.st_dev, 0, found.st_size, found.st_mtime_ns, 0)

    monkeypatch.setattr(_payload, "_identity", blind)
    monkeypatch.setattr(_payload, "_DIGESTS", _payload._Digests())
    first = FileSpec(pdf).sha256()
    rewrite_in_place(pdf, SAME_SIZE)
    assert FileSpec(pdf).sha256() == hashlib.sha256(SAME_SIZE).hexdigest() != first


def test_a_document_gone_since_its_digest_is_bad_input(pdf: Path, reads: list[str]) -> None:
    FileSpec(pdf).sha256()
    pdf.unlink()
    with pytest.raises(BadInputError, match="cannot read"):
        FileSpec(pdf).sha256()


def test_the_least_recently_used_digests_are_forgotten(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from faxws.journal import _payload

    monkeypatch.setattr(_payload, "REMEMBERED", 2)
    files = [FileSpec(tmp_path / f"{n}.pdf") for n in range(3)]
    for spec in files:
        Path(spec.path).write_bytes(PDF)
    for spec in (*files, files[2], files[0]):
        spec.sha256()
    # 0, 1, 2 read; 2 remembered; 0 read again (forgotten when 2 was remembered)
    assert reads == [files[0].path, files[1].path, files[2].path, files[0].path]
