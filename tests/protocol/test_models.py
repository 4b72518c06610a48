"""Recipients, files and file types."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from faxws import BadInputError, FaxFile, FileType, Recipient


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.pdf", FileType.PDF),
        ("A.PDF", FileType.PDF),
        ("letter.docx", FileType.WORD),
        ("notes.txt", FileType.TEXT),
        ("photo.jpeg", FileType.JPEG),
        ("page.html", FileType.HTML),
        ("scan.png", FileType.PNG),
    ],
)
def test_type_is_inferred_from_known_extensions(
    tmp_path: Path, name: str, expected: FileType
) -> None:
    path = tmp_path / name
    path.write_bytes(b"data")
    f = FaxFile.from_path(path)
    assert f.file_type == expected
    assert (f.name, f.size, f.index) == (name, 4, None)


def test_explicit_type_wins_and_any_xs_int_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "scan.tif"
    path.write_bytes(b"II*\x00")
    assert FaxFile.from_path(path, FileType.TIFF_G4).file_type == 2
    assert FaxFile.from_path(path, 9999).file_type == 9999


def test_file_types_are_the_known_ids() -> None:
    assert FileType.PDF == 101
    assert FileType.TIFF_G3 == 1
    assert FileType.TEXT == 105
    assert FileType.PNG == 120


def test_binary_file_object_is_read_from_its_position() -> None:
    stream = io.BytesIO(b"HEADERpayload")
    stream.seek(6)
    f = FaxFile(stream, FileType.TEXT)
    assert f.size == 7
    assert f.read_bytes() == b"payload"
    assert f.read_bytes() == b"payload"  # readable again, for a retry


def test_non_seekable_stream_is_read_once_at_construction() -> None:
    class Pipe(io.RawIOBase):
        def __init__(self) -> None:
            self.data = [b"abc", b"def"]

        def readable(self) -> bool:
            return True

        def readinto(self, buf: bytearray) -> int:  # type: ignore[override]
            if not self.data:
                return 0
            chunk = self.data.pop(0)
            buf[: len(chunk)] = chunk
            return len(chunk)

    f = FaxFile(io.BufferedReader(Pipe()), 105)
    assert f.read_bytes() == b"abcdef"


def test_path_content_is_streamed_in_chunks(tmp_path: Path) -> None:
    path = tmp_path / "a.pdf"
    path.write_bytes(b"x" * 10)
    reader = FaxFile.from_path(path).content.open()
    chunks = list(reader.chunks(3))
    reader.close()
    assert chunks == [b"xxx", b"xxx", b"xxx", b"x"]


def test_repr_shows_no_content() -> None:
    f = FaxFile(b"SECRET-CONTENT", FileType.PDF, index=2)
    assert repr(f) == "FaxFile(<bytes>, file_type=PDF, index=2, size=14)"


def test_recipient_defaults_are_empty_strings() -> None:
    r = Recipient("+1 555 0100")
    assert (r.company, r.title, r.name, r.secure_csid) == ("", "", "", "")


def test_recipient_is_frozen() -> None:
    r = Recipient("+1 555 0100")
    with pytest.raises(AttributeError):
        r.fax_number = "x"  # type: ignore[misc]


def test_recipient_field_of_wrong_type() -> None:
    with pytest.raises(BadInputError) as info:
        Recipient("+1 555 0100", name=3)  # type: ignore[arg-type]
    assert (info.value.field, info.value.problem) == ("name", "must be a str, not int")
