"""What a journal row sends: FaxSpec and FileSpec are checked when made (a bad field is a
BadInputError naming it; no reference_id or notify in the options), their payload is canonical
JSON read back to an equal spec, and the digest binds the payload to the documents' bytes."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

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
    ],
)
def test_keys_that_look_alike_are_refused(key: str, problem: str) -> None:
    from faxws.journal._payload import check_key

    with pytest.raises(BadInputError) as caught:
        check_key(key)
    assert caught.value.field == "key"
    assert problem in str(caught.value)
    assert check_key("caf\u00e9 inv-1") == "caf\u00e9 inv-1"
