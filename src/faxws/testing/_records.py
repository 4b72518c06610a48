"""What the simulator records: each request (masked in reprs), and each job with its
documents."""

from __future__ import annotations

import dataclasses
import hashlib
import html
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from lxml import etree

from faxws._protocol import safexml
from faxws._protocol.assumptions import DEFAULT_EXPIRY
from faxws._protocol.redact import MASK, redact
from faxws._protocol.request_reader import wide_codec
from faxws.bindings import FaxJob, FaxJobRecipient
from faxws.testing._accounts import PUBLIC

__all__ = [
    "ReceivedFile",
    "ReceivedRequest",
    "SimulatedJob",
    "body_secrets",
    "masked",
    "text_of",
    "without_userinfo",
]

# The elements whose content is a secret: the PIN, and the password a push is sent with.
_STR_PIN = re.compile(
    r"(<(?:[\w.-]+:)?(strPIN|NotifyAuthPassword)(?:\s[^>]*)?(?<!/)>)(.*?)"
    r"(</(?:[\w.-]+:)?\2\s*>)",
    re.S,
)
_DESTINATION = re.compile(
    r"(<(?:[\w.-]+:)?NotifyDestination(?:\s[^>]*)?(?<!/)>)(.*?)(</(?:[\w.-]+:)?NotifyDestination\s*>)",
    re.S,
)
_USERINFO = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*://((?:&#x?[0-9A-Fa-f]+;|[^/?#])*)@")
_SHOWN = 2000  # characters of a body a repr shows


def text_of(body: bytes) -> str:
    """A body as text for display, in whichever encoding its first bytes announce."""
    return body.decode(wide_codec(body) or "utf-8-sig", "replace")


def _element_text(raw: str) -> str:
    """An element's content as the request's reader got it: references and CDATA decoded
    (so that the secret is found however else the body spells it)."""
    try:
        root = etree.fromstring(f"<x>{raw}</x>", parser=safexml.parser())
    except (etree.XMLSyntaxError, ValueError):
        return html.unescape(raw)  # not well-formed: the request was refused anyway
    return etree.tostring(root, method="text", encoding="unicode")


def body_secrets(text: str) -> set[str]:
    """The contents of strPIN and NotifyAuthPassword in a request's ``text``, as written
    and as read (the demo account's public PIN aside)."""
    found: set[str] = set()
    for m in _STR_PIN.finditer(text):
        found.update(s for s in (m.group(3), _element_text(m.group(3))) if s not in PUBLIC)
    return found


def masked(text: str, known: Iterable[str]) -> str:
    """``text`` with the contents of strPIN and NotifyAuthPassword, and every form of the
    known secrets and of theirs (in a NotifyDestination's query, say), masked."""
    found = set(known) | body_secrets(text)
    text = _DESTINATION.sub(lambda m: m.group(1) + without_userinfo(m.group(2)) + m.group(3), text)
    return redact(_STR_PIN.sub(lambda m: m.group(1) + MASK + m.group(4), text), found)


def without_userinfo(url: str) -> str:
    """``url`` with the user information of its authority (``user:password@``) masked (in
    XML too: a character reference is no end of the authority)."""
    match = _USERINFO.match(url)
    return url if match is None else url[: match.start(1)] + MASK + url[match.end(1) :]


@dataclass(frozen=True)
class ReceivedRequest:
    """One HTTP request as the simulator received it.

    The metadata of every request is kept; its body only while the simulator's
    ``retained_body_bytes`` budget holds it (the newest bodies stay). A body that was not
    kept, or was dropped later, reads ``b""`` with ``body_retained`` False; ``body_size``
    always tells how many bytes arrived. ``repr`` masks credentials: the Authorization value,
    the content of ``strPIN`` and the accounts' secrets, in every escaped or encoded form.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    operation: str | None = None
    body_size: int = -1
    """Bytes of body received (-1 when built by hand: the length of ``body``)."""
    body_retained: bool = True
    deviations: tuple[str, ...] = ()
    """How the request differs from the contract's exact form, one sentence each."""
    received_at: float = 0.0
    """When it arrived (the simulator's clock, seconds since the epoch)."""
    status: int | None = None
    """The HTTP status answered, or None when the connection closed without an answer."""
    refusal: str | None = None
    """Why it was refused (a fault or an error status the simulator chose), if it was."""
    fault: str | None = None
    """The kind of the injected fault applied to it, if any."""
    _secrets: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        if self.body_size < 0:
            object.__setattr__(self, "body_size", len(self.body))

    def header(self, name: str) -> str | None:
        """A header value by case-insensitive name."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None

    def masked_headers(self) -> dict[str, str]:
        """The headers with the Authorization value and any known secret masked, for
        printing."""
        out = {}
        for key, value in self.headers.items():
            if key.lower() in ("authorization", "proxy-authorization"):
                scheme, space, _ = value.strip().partition(" ")
                value = f"{scheme} {MASK}" if space else MASK
            out[key] = redact(value, self._secrets)
        return out

    def __repr__(self) -> str:
        secrets = set(self._secrets)
        if self.body_retained:
            raw = text_of(self.body)
            secrets |= body_secrets(raw)
            text = masked(raw, secrets)
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
            body = f"<{self.body_size} bytes: {shown!r}>"
        else:
            body = f"<{self.body_size} bytes, not kept>"
        text = (
            f"ReceivedRequest(method={self.method!r}, path={self.path!r}, "
            f"headers={self.masked_headers()!r}, body={body}, operation={self.operation!r})"
        )
        return redact(text, secrets)


class ReceivedFile:
    """One document of a job: ``index``, ``file_type``, ``size``, ``sha256`` and its bytes.

    A small document is held in memory (``path`` is None). A large one was written to a
    file in the simulator's spool directory (``path``) while it was decoded: ``data`` reads
    it from disk on each access and ``open()`` streams it. The file is removed when the
    simulator stops or forgets the job (:meth:`FaxWSSimulator.reset`); reading it after that
    raises FileNotFoundError.
    """

    __slots__ = ("_data", "file_type", "index", "path", "sha256", "size")

    def __init__(
        self,
        index: int,
        file_type: int,
        data: bytes | None = None,
        *,
        path: Path | None = None,
        size: int = 0,
        sha256: str = "",
    ) -> None:
        if (data is None) == (path is None):
            raise TypeError("ReceivedFile needs either data or path")
        self.index = index
        self.file_type = file_type
        self.path = path
        self._data = data
        self.size = len(data) if data is not None else size
        self.sha256 = sha256 or hashlib.sha256(data or b"").hexdigest()

    @property
    def data(self) -> bytes:
        """The document's bytes."""
        with self.open() as f:
            return f.read()

    def open(self) -> BinaryIO:
        """The document as a binary file object (close it, or use ``with``)."""
        if self._data is not None:
            return io.BytesIO(self._data)
        assert self.path is not None
        try:
            return self.path.open("rb")
        except FileNotFoundError:
            raise FileNotFoundError(
                f"document {self.index} is gone: the simulator was stopped or reset"
            ) from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReceivedFile):
            return NotImplemented
        mine = (self.index, self.file_type, self.size, self.sha256)
        return mine == (other.index, other.file_type, other.size, other.sha256)

    def __hash__(self) -> int:
        return hash((self.index, self.file_type, self.size, self.sha256))

    def __repr__(self) -> str:
        return (
            f"ReceivedFile(index={self.index}, file_type={self.file_type}, size={self.size}, "
            f"sha256={self.sha256!r})"
        )


@dataclass(frozen=True)
class SimulatedJob:
    """A SendFax or SendFaxEx the simulator accepted: what was received, never changed (what
    happens to each recipient's job since is the simulator's ``progress(job_id)``)."""

    job_ids: tuple[str, ...]
    user_id: str
    auth_mode: str
    request_id: str | None
    recipients: tuple[FaxJobRecipient, ...]
    """As received, in the generated binding's form (``recip_fax_number``, ...)."""
    files: tuple[ReceivedFile, ...]
    deviations: tuple[str, ...] = ()
    """How its request differed from the contract's exact form, one sentence each."""
    id: str = ""
    """The simulator's own number for the job ("1", "2", ...), for its inbox and API."""
    received_at: float = 0.0
    """When its request arrived (the simulator's clock, seconds since the epoch)."""
    operation: str = "SendFax"
    details: FaxJob | None = None
    """SendFaxEx's JobDetails as received, but NotifyAuthPassword masked; None for SendFax."""
    pages: int = 0
    """The pages of its documents, which each recipient is sent."""
    start_after: float = 0.0
    """Simulated seconds from receipt to the scheduled start (0: at once)."""
    expires_after: float = DEFAULT_EXPIRY.total_seconds()
    """Simulated seconds from receipt until an undelivered fax gives up."""
    _notify_password: str = field(default="", repr=False)
    # The number of the request that sent it, among the simulator's records (not kept in a
    # database: the records are not).
    _request: int | None = field(default=None, repr=False, compare=False)

    def shown_details(self) -> dict[str, Any] | None:
        """``details`` as the simulator shows them: the password masked wherever it is (in
        the NotifyDestination's query or user information too, in any spelling), and the
        destination's user information masked."""
        if self.details is None:
            return None
        secrets = [self._notify_password]
        shown = {
            name: redact(value, secrets) if isinstance(value, str) else value
            for name, value in dataclasses.asdict(self.details).items()
        }
        shown["notify_destination"] = without_userinfo(shown["notify_destination"])
        return shown

    def __repr__(self) -> str:
        names = [f.name for f in dataclasses.fields(self) if f.repr]
        shown = [
            f"{name}={getattr(self, name)!r}"
            if name != "details"
            else f"details={self._details_repr()}"
            for name in names
        ]
        return redact(f"SimulatedJob({', '.join(shown)})", [self._notify_password])

    def _details_repr(self) -> str:
        if self.details is None:
            return "None"
        shown = self.shown_details()
        assert shown is not None
        return repr(dataclasses.replace(self.details, **shown))

    @property
    def reference_id(self) -> str:
        return "" if self.details is None else self.details.reference_id
