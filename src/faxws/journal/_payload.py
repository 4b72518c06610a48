"""What one journal row sends (:class:`FaxSpec`), as canonical JSON text, and its digest.

The payload names the documents by absolute path and never holds their bytes; the digest binds
the row to what the files held when it was added: a worker checks it again before the send, so
a key never sends a different document than the one it was added with. A file this process
hashed is not read again while its identity (device, inode, size, modification and change
times) is unchanged: any write changes its change time, which no caller can set back, and a
file changed so recently that a second write could keep its times is never remembered.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from faxws._protocol.checks import check_int, check_text
from faxws.errors import BadInputError
from faxws.jobs import JobOptions
from faxws.journal._store import MAX_KEY_BYTES
from faxws.models import EXTENSION_TYPES, FaxFile, Recipient

__all__ = ["PAYLOAD_VERSION", "FaxSpec", "FileSpec", "check_key", "check_path"]

#: The ``v`` of the payload's JSON: a later layout gets a new number, and a worker of this
#: faxws refuses (to review) a row it cannot read instead of guessing.
PAYLOAD_VERSION = 1

_RECIPIENT_FIELDS = ("fax_number", "company", "title", "name", "secure_csid")
#: JobOptions fields a payload holds: the row gives the ReferenceId, the batch the Notify.
_OPTION_FIELDS = tuple(
    f.name for f in dataclasses.fields(JobOptions) if f.name not in ("reference_id", "notify")
)
_TIMES = ("start_at", "expires_at")
_DEFAULT_OPTIONS = JobOptions()
_CHUNK = 1 << 20
#: A file's digest is remembered only when its times are this much older than the hashing:
#: two writes within one tick of the file system's clock leave the times as they were (FAT's
#: tick is 2 s; others' are milliseconds), so only a file left alone longer is told apart by
#: them.
SETTLED_NS = 2_000_000_000
#: Digests remembered, the least recently used forgotten first.
REMEMBERED = 4096

Identity = tuple[int, int, int, int, int]


def _identity(found: os.stat_result) -> Identity:
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


class _Digests:
    """The sha256 of the files this process read, by path and the file's identity."""

    def __init__(self, clock: Callable[[], int] = time.time_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._known: OrderedDict[str, tuple[Identity, str]] = OrderedDict()

    def sha256(self, path: str) -> str:
        try:
            now = _identity(os.stat(path))
        except OSError:
            now = None  # reading it says why
        found = self._remembered(path, now)
        if found is not None:
            return found
        try:
            with open(path, "rb") as fh:
                return self._hashed(path, fh)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise BadInputError("file", f"cannot read {path}: {reason}") from None

    def sha256_open(self, path: str, fh: BinaryIO, found: os.stat_result) -> str:
        """The sha256 of the file open as ``fh`` (opened from ``path``, read from its start
        and left there), whose ``os.fstat`` was ``found``."""
        try:
            now = _identity(found)
            digest = self._remembered(path, now)
            if digest is None:
                digest = self._hashed(path, fh)
                fh.seek(0)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise BadInputError("file", f"cannot read {path}: {reason}") from None
        return digest

    def _remembered(self, path: str, now: Identity | None) -> str | None:
        with self._lock:
            found = self._known.get(path)
            if found is not None and found[0] == now:
                self._known.move_to_end(path)
                return found[1]
        return None

    def _hashed(self, path: str, fh: BinaryIO) -> str:
        started = self._clock()
        digest = hashlib.sha256()
        before = _identity(os.fstat(fh.fileno()))
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
        after = _identity(os.fstat(fh.fileno()))
        text = digest.hexdigest()
        # not written to while read, and left alone long enough for its times to tell
        if before == after and max(after[3], after[4]) <= started - SETTLED_NS:
            with self._lock:
                self._known[path] = (after, text)
                self._known.move_to_end(path)
                while len(self._known) > REMEMBERED:
                    self._known.popitem(last=False)
        return text


_DIGESTS = _Digests()


def check_key(key: object) -> str:
    """A row's key as given, refused (BadInputError naming ``key``) when empty, with spaces
    around it, or not in Unicode's composed form (NFC): keys that look alike to a person
    must not be two rows, each sent once."""
    text = check_text("key", key, required=True)
    if len(text.encode("utf-8")) > MAX_KEY_BYTES:
        raise BadInputError("key", f"is longer than {MAX_KEY_BYTES} bytes in UTF-8")
    if text != text.strip():
        raise BadInputError("key", "has spaces before or after it")
    if unicodedata.normalize("NFC", text) != text:
        raise BadInputError("key", "is not in Unicode's composed form (NFC)")
    return text


def check_path(path: object) -> str:
    """A document's path as given (text, not empty), or BadInputError naming ``path``: a NUL
    no file name can hold would fail every use of it with a ValueError."""
    text = check_text("path", path, required=True)
    if "\x00" in text:
        raise BadInputError("path", "contains U+0000")
    return text


@dataclass(frozen=True, init=False)
class FileSpec:
    """One document of a row: a file, by absolute path (a relative one is made absolute at
    once, against the current directory), and its FileTypeId (by default from the extension,
    as :meth:`faxws.FaxFile.from_path` infers it; TIFF needs one)."""

    path: str
    file_type: int

    def __init__(self, path: str | os.PathLike[str], file_type: int | None = None) -> None:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        absolute = os.path.abspath(check_path(path))
        if file_type is None:
            ext = Path(absolute).suffix.lower()
            inferred = EXTENSION_TYPES.get(ext)
            if inferred is None:
                tiff = " (TIFF has several ids: pass FileType.TIFF_G3, TIFF_G4 or TIFF_COLOR)"
                hint = tiff if ext in (".tif", ".tiff") else ""
                raise BadInputError(
                    "file_type",
                    f"cannot infer the type of {Path(absolute).name!r} from its extension "
                    f"{ext or '(none)'!r}; pass file_type{hint}",
                )
            file_type = int(inferred)
        object.__setattr__(self, "path", absolute)
        object.__setattr__(self, "file_type", check_int("file_type", file_type))

    def sha256(self) -> str:
        """The file's own sha256 (reads it, unless this process read it before and it is
        unchanged since: see the module's docstring; BadInputError naming it when it cannot be
        read)."""
        return _DIGESTS.sha256(self.path)


@dataclass(frozen=True, init=False)
class FaxSpec:
    """What one row sends: ``recipients`` (Recipient, or a fax number), ``files``
    (:class:`FileSpec`) and ``options`` (:class:`~faxws.JobOptions` without ``reference_id``,
    which each row has its own, and without ``notify``, which the batch gives and which is
    never stored). Checked when made: a bad field raises BadInputError naming it."""

    recipients: tuple[Recipient, ...]
    files: tuple[FileSpec, ...]
    options: JobOptions

    def __init__(
        self,
        recipients: Sequence[Recipient | str],
        files: Sequence[FileSpec],
        options: JobOptions | None = None,
    ) -> None:
        object.__setattr__(self, "recipients", _recipients(recipients))
        object.__setattr__(self, "files", _files(files))
        object.__setattr__(self, "options", _options(options))

    def payload(self) -> str:
        """Canonical JSON text: sorted keys, no whitespace, ASCII, paths absolute; options
        left at their defaults are left out."""
        return json.dumps(self._document(), sort_keys=True, separators=(",", ":"))

    def _document(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        default = _DEFAULT_OPTIONS
        for name in _OPTION_FIELDS:
            value = getattr(self.options, name)
            if value != getattr(default, name):
                options[name] = value.isoformat() if isinstance(value, datetime) else value
        return {
            "v": PAYLOAD_VERSION,
            "recipients": [
                {name: getattr(r, name) for name in _RECIPIENT_FIELDS if getattr(r, name)}
                for r in self.recipients
            ],
            "files": [{"path": f.path, "type": f.file_type} for f in self.files],
            "options": options,
        }

    @classmethod
    def from_payload(cls, text: str) -> FaxSpec:
        """The spec a payload (from :meth:`payload`) holds; BadInputError naming the part
        at fault for any other text."""
        try:
            document = json.loads(text)
        except (TypeError, ValueError):
            raise BadInputError("payload", "is not JSON text") from None
        if not isinstance(document, dict):
            raise BadInputError("payload", "is not a JSON object")
        if document.get("v") != PAYLOAD_VERSION:
            raise BadInputError(
                "payload.v", f"is {document.get('v')!r}; this faxws reads {PAYLOAD_VERSION}"
            )
        extra = set(document) - {"v", "recipients", "files", "options"}
        if extra:
            raise BadInputError("payload", f"has unknown fields: {', '.join(sorted(extra))}")
        recipients = _list(document, "recipients")
        files = _list(document, "files")
        options = document.get("options", {})
        if not isinstance(options, dict):
            raise BadInputError("payload.options", "is not a JSON object")
        return cls(
            [_recipient_from(i, item) for i, item in enumerate(recipients)],
            [_file_from(i, item) for i, item in enumerate(files)],
            _options_from(options),
        )

    def digest(self) -> str:
        """sha256 hex of the payload text and of each file's own sha256 (in order): reads the
        files; one that cannot be read raises BadInputError naming it."""
        return payload_digest(self.payload(), self.files)

    def fax_files(self) -> list[FaxFile]:
        """The documents to give to ``send_fax`` (each opened and measured now)."""
        out = []
        for i, spec in enumerate(self.files):
            try:
                out.append(FaxFile(Path(spec.path), spec.file_type))
            except BadInputError as exc:
                raise BadInputError(f"files[{i}]", f"{spec.path}: {exc.problem}") from None
        return out

    def open_documents(self) -> OpenDocuments:
        """The documents opened, to be checked and sent from the same open files: a file
        renamed over, swapped for a link or deleted after the check is not what is sent
        (BadInputError naming one that cannot be read; close what this returns)."""
        return OpenDocuments(self.files)

    def fax_numbers(self) -> tuple[str, ...]:
        return tuple(r.fax_number for r in self.recipients)


class OpenDocuments:
    """A row's documents, open: their digest with the row's payload, the FaxFiles to send
    from the same open files, and whether any was written to since it was hashed."""

    def __init__(self, files: Sequence[FileSpec]) -> None:
        self._files = files
        self._open: list[BinaryIO] = []
        found: list[os.stat_result] = []
        try:
            for spec in files:
                try:
                    self._open.append(open(spec.path, "rb"))  # noqa: SIM115 (closed by close())
                    found.append(os.fstat(self._open[-1].fileno()))
                except OSError as exc:
                    reason = exc.strerror or type(exc).__name__
                    raise BadInputError("file", f"cannot read {spec.path}: {reason}") from None
            self._digests = [
                _DIGESTS.sha256_open(spec.path, fh, stat)
                for spec, fh, stat in zip(files, self._open, found, strict=True)
            ]
        except BaseException:
            self.close()
            raise
        # each file's identity and link count when hashed
        self._identities = [(_identity(stat), stat.st_nlink) for stat in found]

    def digest(self, payload: str) -> str:
        """:func:`payload_digest` of ``payload`` with these files as they were opened."""
        digest = hashlib.sha256(payload.encode("ascii"))
        for text in self._digests:
            digest.update(b"\n" + text.encode("ascii"))
        return digest.hexdigest()

    def fax_files(self) -> list[FaxFile]:
        """The documents to give to ``send_fax``, read from the open files."""
        out = []
        for i, (spec, fh) in enumerate(zip(self._files, self._open, strict=True)):
            try:
                out.append(FaxFile(fh, spec.file_type))
            except BadInputError as exc:
                raise BadInputError(f"files[{i}]", f"{spec.path}: {exc.problem}") from None
        return out

    def changed(self) -> list[str]:
        """The paths of the files written to since they were hashed (size or modification
        time moved; or the change time, unless a link count moved with it: a file renamed
        over or deleted meanwhile keeps its bytes), or that can no longer be looked at."""
        out = []
        for spec, fh, (identity, links) in zip(
            self._files, self._open, self._identities, strict=True
        ):
            try:
                found = os.fstat(fh.fileno())
            except (OSError, ValueError):
                out.append(spec.path)
                continue
            now = _identity(found)
            if now[2:4] != identity[2:4] or (now[4] != identity[4] and found.st_nlink == links):
                out.append(spec.path)
        return out

    def close(self) -> None:
        for fh in self._open:
            fh.close()


def _recipients(recipients: object) -> tuple[Recipient, ...]:
    if isinstance(recipients, (str, bytes, Recipient)) or not isinstance(recipients, Sequence):
        raise BadInputError("recipients", "must be a list of Recipient")
    if not recipients:
        raise BadInputError("recipients", "must hold at least one recipient")
    out = []
    for i, r in enumerate(recipients):
        if isinstance(r, str):
            try:
                r = Recipient(r)
            except BadInputError as exc:
                raise BadInputError(f"recipients[{i}].{exc.field}", exc.problem) from None
        elif type(r) is not Recipient:
            # A subclass may have replaced the checks; the payload holds plain fields.
            if not isinstance(r, Recipient):
                raise BadInputError(
                    f"recipients[{i}]", f"must be a Recipient, not {type(r).__name__}"
                )
            try:
                r = Recipient(*(getattr(r, name) for name in _RECIPIENT_FIELDS))
            except BadInputError as exc:
                raise BadInputError(f"recipients[{i}].{exc.field}", exc.problem) from None
        out.append(r)
    return tuple(out)


def _files(files: object) -> tuple[FileSpec, ...]:
    if isinstance(files, (str, bytes, FileSpec)) or not isinstance(files, Sequence):
        raise BadInputError("files", "must be a list of FileSpec")
    if not files:
        raise BadInputError("files", "must hold at least one file")
    for i, f in enumerate(files):
        if not isinstance(f, FileSpec):
            raise BadInputError(f"files[{i}]", f"must be a FileSpec, not {type(f).__name__}")
    return tuple(files)


def payload_digest(payload: str, files: Sequence[FileSpec]) -> str:
    """:meth:`FaxSpec.digest` of a spec whose payload text is ``payload``."""
    digest = hashlib.sha256(payload.encode("ascii"))
    for spec in files:
        digest.update(b"\n" + spec.sha256().encode("ascii"))
    return digest.hexdigest()


def _options(options: object) -> JobOptions:
    if options is None:
        return _DEFAULT_OPTIONS
    if not isinstance(options, JobOptions):
        raise BadInputError("options", f"must be a JobOptions, not {type(options).__name__}")
    if options.reference_id is not None:
        raise BadInputError("options.reference_id", "is given by the journal: each row has its own")
    if options.notify is not None:
        raise BadInputError(
            "options.notify", "is given to the Batch (its password is never stored)"
        )
    return options


def _list(document: dict[str, Any], name: str) -> list[Any]:
    value = document.get(name)
    if not isinstance(value, list):
        raise BadInputError(f"payload.{name}", "is not a JSON list")
    return value


def _recipient_from(i: int, item: object) -> Recipient:
    where = f"payload.recipients[{i}]"
    if not isinstance(item, dict) or set(item) - set(_RECIPIENT_FIELDS):
        raise BadInputError(where, f"is not an object of {', '.join(_RECIPIENT_FIELDS)}")
    try:
        return Recipient(**item)
    except (BadInputError, TypeError) as exc:
        problem = exc.problem if isinstance(exc, BadInputError) else str(exc)
        raise BadInputError(where, problem) from None


def _file_from(i: int, item: object) -> FileSpec:
    where = f"payload.files[{i}]"
    if not isinstance(item, dict) or set(item) != {"path", "type"}:
        raise BadInputError(where, "is not an object of path and type")
    path = item["path"]
    if not isinstance(path, str) or not os.path.isabs(path):
        raise BadInputError(f"{where}.path", "is not an absolute path")
    try:
        return FileSpec(path, item["type"])
    except BadInputError as exc:
        raise BadInputError(f"{where}.{exc.field}", exc.problem) from None


def _options_from(options: dict[str, Any]) -> JobOptions:
    unknown = set(options) - set(_OPTION_FIELDS)
    if unknown:
        raise BadInputError("payload.options", f"has unknown fields: {', '.join(sorted(unknown))}")
    values = dict(options)
    for name in _TIMES:
        if name in values:
            text = values[name]
            try:
                values[name] = datetime.fromisoformat(text) if isinstance(text, str) else None
            except ValueError:
                values[name] = None
            if values[name] is None:
                raise BadInputError(f"payload.options.{name}", "is not an ISO 8601 date and time")
    try:
        return JobOptions(**values)
    except BadInputError as exc:
        raise BadInputError(f"payload.options.{exc.field}", exc.problem) from None
