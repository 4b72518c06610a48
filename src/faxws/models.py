"""What callers pass in and get back: recipients, files, file types and results, the layer
over the generated :mod:`faxws.bindings` (type inference, file indexes, checks that name the
argument at fault)."""

from __future__ import annotations

import contextlib
import enum
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from faxws._protocol.checks import check_file_index, check_int, check_recipient
from faxws._protocol.content import (
    BusyError,
    BytesSource,
    PathSource,
    StreamSource,
    measure_stream,
    open_all,
    open_regular,
)
from faxws.errors import BadInputError

__all__ = [
    "BroadcastReportResult",
    "FaxFile",
    "FileType",
    "Recipient",
    "SendFaxResult",
]


class FileType(enum.IntEnum):
    """Known values of ``FileTypeId``, as public client code uses them. The service's own
    table is not public: any xs:int is accepted wherever a file type is expected. The TIFF
    merge-cover id (3 or 4, sources disagree) is left out on purpose."""

    TIFF_G3 = 1
    TIFF_G4 = 2
    WORD = 100
    PDF = 101
    RTF = 102
    EXCEL = 103
    POWERPOINT = 104
    TEXT = 105
    VISIO = 106
    GIF = 107
    JPEG = 108
    TIFF_COLOR = 109
    HTML = 111
    PNG = 120
    """Seen in one public source only."""


#: File name extensions whose type is unambiguous. TIFF is not here: G3, G4 and colour TIFF
#: have different ids and the extension does not tell them apart.
EXTENSION_TYPES: dict[str, FileType] = {
    f".{extension}": file_type
    for file_type, extensions in (
        (FileType.PDF, "pdf"),
        (FileType.WORD, "doc docx"),
        (FileType.RTF, "rtf"),
        (FileType.EXCEL, "xls xlsx"),
        (FileType.POWERPOINT, "ppt pptx"),
        (FileType.TEXT, "txt"),
        (FileType.VISIO, "vsd vsdx"),
        (FileType.GIF, "gif"),
        (FileType.JPEG, "jpg jpeg"),
        (FileType.HTML, "htm html mht mhtml"),
        (FileType.PNG, "png"),
    )
    for extension in extensions.split()
}


def file_type_from_name(name: str) -> int:
    """``"pdf"``, ``"PDF"``, ``".pdf"``, ``"tiff_g4"`` or ``"101"`` -> the type id."""
    text = name.strip()
    try:
        return check_int("file_type", int(text))
    except ValueError:
        pass
    key = text.lower().removeprefix(".")
    ext = EXTENSION_TYPES.get(f".{key}")
    if ext is not None:
        return int(ext)
    try:
        return int(FileType[key.upper()])
    except KeyError:
        known = ", ".join(sorted({m.name.lower() for m in FileType}))
        raise BadInputError("file_type", f"unknown file type {name!r}; known: {known}") from None


@dataclass(frozen=True, slots=True)
class Recipient:
    """One recipient of a fax. All five elements are always sent, empty when not given."""

    fax_number: str
    company: str = ""
    title: str = ""
    name: str = ""
    secure_csid: str = ""

    def __post_init__(self) -> None:
        check_recipient(self.fax_number, self.company, self.title, self.name, self.secure_csid)


Content = BytesSource | PathSource | StreamSource


class FaxFile:
    """One document of a fax job.

    ``data`` is bytes, a path (:class:`os.PathLike`), or a binary file object; a ``str`` is
    refused, being ambiguous (use :meth:`from_path` for a path). Paths and seekable file
    objects are streamed while sending and measured again by each send: one that shrinks or
    grows meanwhile fails the call with :class:`~faxws.errors.DocumentError`, the request left
    incomplete. A seekable file object is sent from its position when the ``FaxFile`` was made
    (sends of it from several threads take turns); one that cannot seek is read whole here.
    ``index`` is the 1-based ``FileIndex``; when None the client numbers the files 1..n.
    """

    __slots__ = ("_content", "_file_type", "_index", "_name")

    def __init__(
        self,
        data: bytes | bytearray | memoryview | os.PathLike[str] | BinaryIO,
        file_type: int,
        index: int | None = None,
    ) -> None:
        self._file_type = check_int("file_type", file_type)
        if index is not None:
            check_file_index("index", index)
        self._index = index
        self._content, self._name = _content_of(data)
        if self._content.size == 0:
            raise BadInputError("data", f"{self._name} is empty")

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        file_type: int | None = None,
        index: int | None = None,
    ) -> FaxFile:
        """A file on disk; ``file_type`` is inferred from the extension when not given."""
        if not isinstance(path, (str, os.PathLike)):
            raise BadInputError("path", f"must be a str or a path, not {type(path).__name__}")
        p = Path(path)
        if file_type is None:
            ext = p.suffix.lower()
            inferred = EXTENSION_TYPES.get(ext)
            if inferred is None:
                hint = " (TIFF has several ids: pass FileType.TIFF_G3, TIFF_G4 or TIFF_COLOR)"
                raise BadInputError(
                    "file_type",
                    f"cannot infer the type of {p.name!r} from its extension {ext or '(none)'!r}"
                    f"; pass file_type{hint if ext in ('.tif', '.tiff') else ''}",
                )
            file_type = inferred
        return cls(p, file_type, index)

    @property
    def file_type(self) -> int:
        return self._file_type

    @property
    def index(self) -> int | None:
        return self._index

    @property
    def size(self) -> int:
        """Size in bytes (before base64), as last measured: when made, or by the latest send."""
        return self._content.size

    @property
    def name(self) -> str:
        """A short description of the source, for messages: the file name or ``<bytes>``."""
        return self._name

    @property
    def content(self) -> Content:
        """The document as a :class:`~faxws._protocol.content.Source`."""
        return self._content

    def read_bytes(self) -> bytes:
        """The whole document (reads it into memory)."""
        with contextlib.closing(open_all([self._content])) as opened:
            return b"".join(opened.readers[0].chunks(1 << 20))

    def __repr__(self) -> str:
        try:
            type_text = FileType(self._file_type).name
        except ValueError:
            type_text = str(self._file_type)
        return (
            f"FaxFile({self._name}, file_type={type_text}, index={self._index}, "
            f"size={self._content.size})"
        )


def _content_of(data: object) -> tuple[Content, str]:
    if isinstance(data, str):
        raise BadInputError(
            "data",
            "is a str: pass bytes for content, or FaxFile.from_path() / a pathlib.Path for a file",
        )
    if isinstance(data, (bytes, bytearray, memoryview)):
        return BytesSource(data), "<bytes>"
    if isinstance(data, os.PathLike):
        path = Path(data)
        if path.is_dir():
            raise BadInputError("data", f"{path.name!r} is a directory, not a file")
        try:
            with open_regular(path) as fh:
                size = os.fstat(fh.fileno()).st_size
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise BadInputError("data", f"cannot read {path.name!r}: {reason}") from None
        return PathSource(path, size), path.name
    if hasattr(data, "read"):
        return _stream_content(data)
    raise BadInputError(
        "data", f"must be bytes, a path or a binary file object, not {type(data).__name__}"
    )


def _stream_content(stream: object) -> tuple[Content, str]:
    if isinstance(stream, io.TextIOBase):
        raise BadInputError("data", "is a text file object; open the file in binary mode ('rb')")
    raw_name = getattr(stream, "name", None)
    name = Path(raw_name).name if isinstance(raw_name, str) else "<stream>"
    try:
        probe = stream.read(0)  # type: ignore[attr-defined]
        if not isinstance(probe, (bytes, bytearray, memoryview)):
            raise BadInputError("data", "file object does not return bytes; open it in 'rb' mode")
        if getattr(stream, "seekable", lambda: False)():
            try:
                start, size = measure_stream(stream)
            except BusyError:
                raise BadInputError(
                    "data",
                    "this file object is being sent by a call on this event loop; make the "
                    "FaxFile before that call starts, or after it ends",
                ) from None
            return StreamSource(stream, start, size, name), name  # type: ignore[arg-type]
        # Not seekable: it can be read only once, and a retry needs it again.
        return BytesSource(_read_all(stream)), name
    except BadInputError:
        raise
    except Exception as exc:  # whatever a caller's file object raises
        raise BadInputError(
            "data", f"cannot read the file object: {type(exc).__name__}: {exc}"
        ) from None


def _read_all(stream: object) -> bytes:
    """Everything a non-seekable file object has, however short its reads are."""
    pieces: list[bytes] = []
    while True:
        piece = stream.read(1 << 20)  # type: ignore[attr-defined]
        if piece is None:
            raise BadInputError("data", "is a non-blocking file object that has no data now")
        if not piece:
            return b"".join(pieces)
        pieces.append(bytes(piece))


@dataclass(frozen=True, slots=True)
class SendFaxResult:
    """The outcome of a successful SendFax: one job id per recipient, in the order given; the
    service's estimate of seconds until the job starts (TTFP); the ``x-ch-request-id`` sent;
    the service's ``x-ch-activity-id`` and ``x-ch-execution-time`` headers, if it sent them."""

    job_ids: tuple[str, ...]
    ttfp: int
    request_id: str
    activity_id: str | None = None
    execution_time_ms: int | None = None
    reference_id: str | None = None
    """The ReferenceId a send with job options went with (look it up with
    ``get_status_by_reference``); None for a plain SendFax."""


@dataclass(frozen=True, slots=True)
class BroadcastReportResult:
    """The outcome of a successful GetFaxBroadcastReport: what was asked and the tracing ids
    (as in :class:`SendFaxResult`). The response carries no report records (the report's
    delivery is not shown in the interface)."""

    job_id: str
    request_id: str
    activity_id: str | None = None
    execution_time_ms: int | None = None
    recipient_type: int = 0
    recip_address: str = ""
