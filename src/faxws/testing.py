"""A faithful local stand-in for the FaxWS v5 service, for tests and demos.

>>> with FaxWSSimulator() as sim:                                    # doctest: +SKIP
...     client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
...     client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", FileType.PDF)])
...     sim.jobs[0].files[0].data
b'%PDF-1.4'

It is a real HTTP/1.1 server (threaded, keep-alive) on 127.0.0.1, strict where the contract is:
405 (with ``Allow: POST``) for any method other than POST, 404 for another path, 415 for
another Content-Type, a SOAP Client fault for a missing SOAPAction header, malformed XML, a
DTD (in any encoding), an unknown operation or a body that fails the schema, and HTTP 401 for
any request that breaks the two authentication rules. It also serves an OAuth 2.0 token
endpoint (client credentials grant) at ``/connect/token``.

It stays bounded under any input. A large request is parsed while it arrives, and each
document's base64 is decoded in chunks; a document larger than ``SPOOL_THRESHOLD`` goes to a
file in a spool directory (removed at :meth:`stop`) as it is decoded, so a large fax costs
memory of the order of one chunk. Small documents stay in memory within ``DOCUMENT_MEMORY``.
Request bodies are kept in memory only within ``retained_body_bytes`` (newest first; the
metadata of every request stays), and a request's XML outside the documents is bounded in
depth, elements and text. :meth:`stop` wakes every parked fault, shuts every connection down
and joins every thread it started.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import contextlib
import dataclasses
import hashlib
import hmac
import io
import json
import math
import os
import re
import secrets
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import parse_qs

from lxml import etree

from faxws._reader import ReadError, read_payload, soap_payload
from faxws._redact import MASK, redact
from faxws._request_reader import ENVELOPE, RequestReader, Writer, sniff_operation
from faxws._soap import CONTENT_TYPE, MEDIA_TYPE
from faxws._wire import envelope, fault_envelope
from faxws.bindings import (
    NAMESPACE,
    OPERATIONS,
    FaxJobId,
    FaxJobIds,
    FaxJobRecipient,
    FaxSendResponse,
    GetFaxBroadcastReport,
    GetFaxBroadcastReportResponse,
    SendFax,
    WSError,
)
from faxws.errors import BadInputError
from faxws.validation import schema_issues

__all__ = [
    "DEMO_CLIENT_ID",
    "DEMO_CLIENT_SECRET",
    "DEMO_PIN",
    "DEMO_TOKEN",
    "DEMO_USER_ID",
    "Account",
    "Fault",
    "FaxWSSimulator",
    "ReceivedFile",
    "ReceivedRequest",
    "SimulatedJob",
]

SERVICE_PATH = "/fax/v5"
TOKEN_PATH = "/connect/token"  # noqa: S105 - a path
RESPONSE_CONTENT_TYPE = CONTENT_TYPE

#: The account every simulator accepts unless given others; not secrets, by design.
DEMO_USER_ID = "mbx0000000000"
DEMO_PIN = "0000"
DEMO_TOKEN = "demo-token"  # noqa: S105
DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # noqa: S105

#: Largest request body the simulator reads (a larger one gets 413 and the connection closes).
MAX_BODY = 512 * 1024 * 1024
#: Default ``retained_body_bytes``: request bodies kept in memory, in total, newest first.
RETAINED_BODY_BYTES = 8 * 1024 * 1024
#: Largest form the token endpoint reads.
MAX_FORM = 64 * 1024
#: A document larger than this is written to disk as it is decoded; a smaller one stays in
#: memory while all such documents together fit in ``DOCUMENT_MEMORY``, and goes to disk too
#: beyond that. Documents on disk are removed at stop() or reset().
SPOOL_THRESHOLD = 64 * 1024
DOCUMENT_MEMORY = 16 * 1024 * 1024
_CHUNK = 256 * 1024  # bytes read from the socket and fed to the parser at a time
_HEAD = 64 * 1024  # bytes of a body that is not kept, for the record's operation name
_SMALL = 256 * 1024  # bodies up to this size are parsed whole (faster), larger ones streamed
_PUBLIC = frozenset({DEMO_PIN, DEMO_TOKEN, DEMO_CLIENT_SECRET})


@dataclass(frozen=True)
class Account:
    """A user the simulator accepts: a PIN, fixed bearer tokens, and/or OAuth client
    credentials with which the token endpoint issues expiring tokens."""

    user_id: str
    pin: str | None = None
    tokens: tuple[str, ...] = ()
    client_id: str | None = None
    client_secret: str | None = None

    def __repr__(self) -> str:
        # The simulator is also used with real-looking secrets: keep them out of reprs.
        return (
            f"Account(user_id={self.user_id!r}, pin={'<set>' if self.pin else None}, "
            f"tokens={len(self.tokens)}, client_id={self.client_id!r})"
        )


DEMO_ACCOUNT = Account(
    DEMO_USER_ID,
    pin=DEMO_PIN,
    tokens=(DEMO_TOKEN,),
    client_id=DEMO_CLIENT_ID,
    client_secret=DEMO_CLIENT_SECRET,
)


@dataclass(frozen=True)
class Fault:
    """A failure to inject. Build one with the class methods."""

    kind: str
    status: int = 0
    code: str = ""
    text: str = ""
    delay: float = 0.0

    @classmethod
    def delay_response(cls, seconds: float) -> Fault:
        """Answer normally, after ``seconds``."""
        return cls("delay", delay=seconds)

    @classmethod
    def html_500(cls) -> Fault:
        """HTTP 500 with an HTML error page."""
        return cls("html", status=500)

    @classmethod
    def http_status(cls, status: int) -> Fault:
        """HTTP ``status`` (e.g. 502, 503, 504) with a short plain-text body."""
        return cls("status", status=status)

    @classmethod
    def soap_fault(cls, code: str = "soap:Server", text: str = "simulated fault") -> Fault:
        """A SOAP fault with HTTP 500."""
        return cls("fault", status=500, code=code, text=text)

    @classmethod
    def ws_error(cls, code: int, text: str = "simulated error") -> Fault:
        """A normal response with ``return`` false and the given WSError."""
        return cls("wserror", code=str(code), text=text)

    @classmethod
    def close_before_read(cls) -> Fault:
        """Close the connection after the request headers, without reading the body.
        The body holds the operation, so this fault cannot be limited to one operation."""
        return cls("close_before_read")

    @classmethod
    def close_after_read(cls) -> Fault:
        """Read the whole request, then close the connection without answering."""
        return cls("close_after_read")

    @classmethod
    def reset_mid_response(cls) -> Fault:
        """Send the status line, the headers and half of the body, then reset the connection."""
        return cls("reset")

    @classmethod
    def slow_drip(cls, seconds: float) -> Fault:
        """Send a normal response one byte at a time, spread over about ``seconds``."""
        return cls("drip", delay=seconds)


@dataclass
class _Injection:
    fault: Fault
    operation: str | None
    remaining: int


def _seconds(name: str, value: object) -> float:
    """A finite, positive number of seconds, or BadInputError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInputError(name, f"must be a number of seconds, not {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise BadInputError(name, f"must be a finite number of seconds above 0, not {value!r}")
    return seconds


# -- what the simulator records ------------------------------------------------------------

_STR_PIN = re.compile(
    r"(<(?:[\w.-]+:)?strPIN(?:\s[^>]*)?(?<!/)>)(.*?)(</(?:[\w.-]+:)?strPIN\s*>)", re.S
)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SHOWN = 2000  # characters of a body a repr shows


def _text_of(body: bytes) -> str:
    """A body as text for display, in whichever encoding its first bytes announce."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body.decode(codec, "replace")
    start = body[:4]
    for pattern, codec in (
        (b"<\0\0\0", "utf-32-le"),
        (b"\0\0\0<", "utf-32-be"),
        (b"<\0", "utf-16-le"),
        (b"\0<", "utf-16-be"),
    ):
        if start.startswith(pattern):
            return body.decode(codec, "replace")
    return body.decode("utf-8", "replace")


def _masked(text: str, known: Iterable[str]) -> str:
    """``text`` with strPIN contents and every form of the known secrets masked."""
    found = set(known)
    found.update(m.group(2) for m in _STR_PIN.finditer(text) if m.group(2) not in _PUBLIC)
    text = _STR_PIN.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    # Longest first: a secret that contains a shorter one is masked whole.
    return redact(text, sorted(found, key=len, reverse=True))


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
        known = sorted(self._secrets, key=len, reverse=True)
        out = {}
        for key, value in self.headers.items():
            if key.lower() in ("authorization", "proxy-authorization"):
                scheme, space, _ = value.strip().partition(" ")
                value = f"{scheme} {MASK}" if space else MASK
            out[key] = redact(value, known)
        return out

    def __repr__(self) -> str:
        if self.body_retained:
            text = _masked(_text_of(self.body), self._secrets)
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
            body = f"<{self.body_size} bytes: {shown!r}>"
        else:
            body = f"<{self.body_size} bytes, not kept>"
        text = (
            f"ReceivedRequest(method={self.method!r}, path={self.path!r}, "
            f"headers={self.masked_headers()!r}, body={body}, operation={self.operation!r})"
        )
        return redact(text, sorted(self._secrets, key=len, reverse=True))


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
    """A SendFax the simulator accepted."""

    job_ids: tuple[str, ...]
    user_id: str
    auth_mode: str
    request_id: str | None
    recipients: tuple[FaxJobRecipient, ...]
    """As received, in the generated binding's form (``recip_fax_number``, ...)."""
    files: tuple[ReceivedFile, ...]


# -- parsing a request while it arrives ----------------------------------------------------


class _Document:
    """One FileData's decoded bytes. They stay in memory while the document is small (up to
    :data:`SPOOL_THRESHOLD`); a larger one goes to a file in the spool directory as it is
    decoded, so it is never held whole."""

    def __init__(self, spool: Path) -> None:
        self._spool = spool
        self.path: Path | None = None
        self._out: BinaryIO | None = None
        self._buffer = bytearray()
        self._sha = hashlib.sha256()
        self.size = 0

    @property
    def data(self) -> bytes | None:
        """The bytes, for a document still in memory."""
        return bytes(self._buffer) if self.path is None else None

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    def write(self, data: bytes) -> None:
        self._sha.update(data)
        self.size += len(data)
        if self._out is None and len(self._buffer) + len(data) <= SPOOL_THRESHOLD:
            self._buffer += data
            return
        if self._out is None:
            self._spill()
            assert self._out is not None
        self._out.write(data)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()

    def to_file(self) -> None:
        """Move a finished document that is still in memory to a spool file."""
        if self.path is None:
            self._spill()
            assert self._out is not None
            self._out.close()

    def discard(self) -> None:
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def _spill(self) -> None:
        fd, name = tempfile.mkstemp(dir=self._spool, suffix=".bin")
        self.path = Path(name)
        self._out = os.fdopen(fd, "wb")
        self._out.write(self._buffer)
        self._buffer = bytearray()


class _Received:
    """A request body as read: the bytes kept (within the budget) and, for a SOAP request,
    the parsed tree and the spooled documents, or why it was refused.

    The parse is the core's :class:`~faxws._request_reader.RequestReader`: a small body in
    one go once it is read, a large one while it arrives, so that it is never held whole."""

    def __init__(self, spool: Path | None, *, stream: bool) -> None:
        self.body = b""  # as read: whole when kept, parsed whole or asked for; else empty
        self.head = b""
        self.size = 0
        self.complete = False
        self.retained = True
        self.root: etree._Element | None = None
        self.refusal: _RejectError | None = None
        self.documents: list[_Document] = []
        self._spool = spool
        self._reader = None if spool is None else RequestReader(self._new_document, stream=stream)

    @property
    def operation(self) -> str | None:
        found = None if self._reader is None else self._reader.operation
        return found or sniff_operation(self.body or self.head)

    def _new_document(self, item: int) -> Writer:
        assert self._spool is not None
        document = _Document(self._spool)
        self.documents.append(document)
        return document.write

    def feed(self, chunk: bytes) -> None:
        """The next chunk of a large body."""
        if self._reader is not None:
            self._reader.feed(chunk)

    def close(self) -> None:
        """The end of a large body."""
        if self._reader is not None:
            self._reader.close()
            self._settle()

    def parse(self, body: bytes) -> None:
        """A small body, whole."""
        if self._reader is not None:
            self._reader.parse(body)
            self._settle()

    def _settle(self) -> None:
        assert self._reader is not None
        for document in self.documents:
            document.close()
        refusal = self._reader.refusal
        if refusal is None:
            self.root = self._reader.root
            return
        self.discard()
        if refusal.server_side:
            message = f"the simulator cannot spool the document: {refusal.message}"
            self.refusal = _RejectError(500, fault_envelope("soap:Server", message))
        else:
            self.refusal = _client_fault(refusal.message)

    def take_documents(self) -> list[_Document]:
        """The spooled documents, now owned by the caller."""
        documents, self.documents = self.documents, []
        return documents

    def discard(self) -> None:
        """Remove every spool file this request wrote and no job adopted."""
        for document in self.take_documents():
            document.discard()


# -- the server ----------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog: a burst of clients connecting at once must find room in the
    # kernel's queue, not wait for SYN retries (socketserver's default is 5).
    request_queue_size = 128
    sim: FaxWSSimulator

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="faxws-simulator-connection",
            daemon=True,
        )
        self.sim._connection_opened(request, thread)
        try:
            thread.start()
        except BaseException:
            self.sim._thread_ended(thread)  # never started: nothing for stop() to join
            raise

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            self.sim._thread_ended(threading.current_thread())

    def shutdown_request(self, request: Any) -> None:
        # Under the simulator's lock, so that stop() never shuts down a socket whose
        # descriptor was closed (and perhaps reused) in between.
        with self.sim._lock:
            self.sim._sockets.discard(request)
            super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away, or stop() shut the connection down
        super().handle_error(request, client_address)


class FaxWSSimulator:
    """The simulator. Use as a context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        accounts: the users it accepts; default: the demo account
            (:data:`DEMO_USER_ID` with PIN :data:`DEMO_PIN`, token :data:`DEMO_TOKEN`,
            client :data:`DEMO_CLIENT_ID` / :data:`DEMO_CLIENT_SECRET`).
        host, port: where to listen; port 0 picks a free port (see :attr:`url`).
        token_lifetime: seconds a token from the token endpoint stays valid (finite, > 0).
        ttfp: the TTFP value SendFax answers with.
        retained_body_bytes: how many bytes of request bodies :attr:`requests` keeps in
            memory, newest first (default 8 MiB); a larger body is never kept. Documents
            are kept either way, in :attr:`jobs` (large ones on disk).
    """

    def __init__(
        self,
        accounts: Iterable[Account] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token_lifetime: float = 3600.0,
        ttfp: int = 30,
        retained_body_bytes: int = RETAINED_BODY_BYTES,
    ) -> None:
        if isinstance(retained_body_bytes, bool) or not isinstance(retained_body_bytes, int):
            raise BadInputError("retained_body_bytes", "must be an int")
        if retained_body_bytes < 0:
            raise BadInputError("retained_body_bytes", "must not be negative")
        self.accounts = tuple(accounts) if accounts is not None else (DEMO_ACCOUNT,)
        self.token_lifetime = _seconds("token_lifetime", token_lifetime)
        self.ttfp = ttfp
        self.retained_body_bytes = retained_body_bytes
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        self._spool: Path | None = None
        self._issued: dict[str, tuple[str, float]] = {}  # token -> (user id, expiry)
        self._injections: list[_Injection] = []
        self._secrets_for: tuple[Account, ...] | None = None
        self._account_secrets: frozenset[str] = frozenset()
        self.reset()

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> FaxWSSimulator:
        server = _Server((self._host, self._port), _Handler)
        server.sim = self
        self._stopping = threading.Event()
        self._spool = Path(tempfile.mkdtemp(prefix="faxws-simulator-"))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="faxws-simulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wake parked faults, shut every connection down, join every thread
        and remove the spooled documents. Raises RuntimeError if a thread does not end."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # delays and slow drips end now
        server.shutdown()  # the accept loop ends: no connection is added after this
        server.server_close()
        with self._lock:
            for sock in self._sockets:
                # Wakes a handler blocked reading a request or writing an answer.
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            threads = list(self._threads)
        if self._thread is not None:
            threads.append(self._thread)
        deadline = time.monotonic() + 60
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        spool, self._spool = self._spool, None
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)
        alive = [t for t in threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"{len(alive)} simulator thread(s) did not stop")

    def __enter__(self) -> FaxWSSimulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulator is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The service root to give to :class:`~faxws.FaxClient` (``http://127.0.0.1:N``)."""
        return f"http://{self._host}:{self.port}"

    @property
    def token_url(self) -> str:
        return f"{self.url}{TOKEN_PATH}"

    # -- inspection ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget received requests, jobs (and their spooled documents), counters and pending
        faults (accounts stay)."""
        with self._lock:
            forgotten = getattr(self, "_jobs", [])
            self._requests: list[ReceivedRequest] = []
            self._retained: deque[int] = deque()  # indexes of requests that hold a body
            self._retained_bytes = 0
            self._jobs: list[SimulatedJob] = []
            self._by_job_id: dict[str, SimulatedJob] = {}
            self._document_bytes = 0  # of documents kept in memory
            self.connections = 0
            self.token_requests = 0
            self._injections = []
            self._job_counter = 0
        for job in forgotten:
            for f in job.files:
                if f.path is not None:
                    f.path.unlink(missing_ok=True)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """The requests received so far, oldest first (a copy); token endpoint requests are
        counted in :attr:`token_requests` instead."""
        with self._lock:
            return list(self._requests)

    @property
    def jobs(self) -> list[SimulatedJob]:
        """The jobs SendFax accepted so far, oldest first (a copy)."""
        with self._lock:
            return list(self._jobs)

    def requests_for(self, operation: str) -> list[ReceivedRequest]:
        return [r for r in self.requests if r.operation == operation]

    def job(self, job_id: str) -> SimulatedJob | None:
        with self._lock:
            return self._by_job_id.get(job_id)

    # -- control ------------------------------------------------------------------------------

    def inject(self, fault: Fault, *, operation: str | None = None, times: int = 1) -> None:
        """Apply ``fault`` to the next ``times`` requests (of ``operation``, if given)."""
        if operation is not None and operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}")
        if operation is not None and fault.kind == "close_before_read":
            raise ValueError("close_before_read cannot be limited to one operation")
        with self._lock:
            self._injections.append(_Injection(fault, operation, times))

    def issue_token(self, user_id: str, lifetime: float | None = None) -> str:
        """A new bearer token for ``user_id``, valid for ``lifetime`` seconds (finite, > 0;
        default: ``token_lifetime``)."""
        seconds = self.token_lifetime if lifetime is None else _seconds("lifetime", lifetime)
        token = secrets.token_urlsafe(24)
        expiry = time.monotonic() + seconds
        with self._lock:
            self._issued[token] = (user_id, expiry)
        return token

    def expire_tokens(self) -> None:
        """Make every token the token endpoint issued invalid from now on."""
        with self._lock:
            self._issued = {t: (u, 0.0) for t, (u, _) in self._issued.items()}

    # -- internals used by the handler -------------------------------------------------------

    def _connection_opened(self, sock: socket.socket, thread: threading.Thread) -> None:
        with self._lock:
            self.connections += 1
            self._sockets.add(sock)
            self._threads.add(thread)

    def _thread_ended(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads.discard(thread)

    def _reset_connection(self, sock: socket.socket) -> None:
        """Close ``sock`` with a TCP reset (SO_LINGER 0), under the lock like every close."""
        with self._lock:
            self._sockets.discard(sock)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    def _secrets_of(self, headers: Mapping[str, str]) -> frozenset[str]:
        """What a record of a request with ``headers`` must never show: the accounts'
        secrets (the demo account's are public) and the request's own credential."""
        if self._secrets_for is not self.accounts:
            self._account_secrets = frozenset(
                s
                for a in self.accounts
                for s in (a.pin, a.client_secret, *a.tokens)
                if s and s not in _PUBLIC
            )
            self._secrets_for = self.accounts
        found = set(self._account_secrets)
        authorization = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        scheme, _, credential = authorization.strip().partition(" ")
        credential = credential.strip() or scheme
        if credential:
            found.add(credential)
        if scheme.lower() == "basic":
            with contextlib.suppress(ValueError):  # binascii.Error, UnicodeDecodeError
                decoded = base64.b64decode(credential, validate=True).decode()
                found |= {decoded, decoded.partition(":")[2]}
        return frozenset(s for s in found if s)

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            if not request.body:
                return
            self._retained.append(len(self._requests) - 1)
            self._retained_bytes += len(request.body)
            while self._retained_bytes > self.retained_body_bytes:
                index = self._retained.popleft()
                old = self._requests[index]
                self._retained_bytes -= len(old.body)
                self._requests[index] = dataclasses.replace(old, body=b"", body_retained=False)

    def _take_fault(self, operation: str | None, *, before_read: bool) -> Fault | None:
        with self._lock:
            for inj in self._injections:
                if inj.remaining <= 0:
                    continue
                if before_read != (inj.fault.kind == "close_before_read"):
                    continue
                if inj.operation is not None and inj.operation != operation:
                    continue
                inj.remaining -= 1
                return inj.fault
        return None

    def _user_for_token(self, token: str) -> str | None:
        now = time.monotonic()
        with self._lock:
            issued = self._issued.get(token)
        if issued is not None:
            return issued[0] if issued[1] > now else None
        for account in self.accounts:
            if any(_same(t, token) for t in account.tokens):
                return account.user_id
        return None

    def _pin_matches(self, user_id: str, pin: str) -> bool:
        return any(
            a.user_id == user_id and a.pin is not None and _same(a.pin, pin) for a in self.accounts
        )

    def _client(self, client_id: str, client_secret: str) -> Account | None:
        for a in self.accounts:
            if (
                a.client_id is not None
                and a.client_secret is not None
                and _same(a.client_id, client_id)
                and _same(a.client_secret, client_secret)
            ):
                return a
        return None

    def _new_job(
        self,
        request: SendFax,
        auth_mode: str,
        request_id: str | None,
        documents: list[_Document],
    ) -> SimulatedJob:
        # Small documents stay in memory while DOCUMENT_MEMORY lasts (concurrent jobs may
        # overshoot it by a few small documents); the others go to disk.
        with self._lock:
            room = DOCUMENT_MEMORY - self._document_bytes
        in_memory = []
        for document in documents:
            fits = document.path is None and document.size <= room
            room -= document.size if fits else 0
            in_memory.append(fits)
            if not fits:
                document.to_file()
        files = tuple(
            ReceivedFile(
                f.file_index,
                f.file_type_id,
                d.data if fits else None,
                path=None if fits else d.path,
                size=d.size,
                sha256=d.sha256,
            )
            for f, d, fits in zip(request.fax_job_files.item, documents, in_memory, strict=True)
        )
        with self._lock:
            self._document_bytes += sum(f.size for f in files if f.path is None)
            ids = []
            for _ in request.recipients.item:
                self._job_counter += 1
                ids.append(f"SIM{self._job_counter:08d}")
            job = SimulatedJob(
                job_ids=tuple(ids),
                user_id=request.user_id,
                auth_mode=auth_mode,
                request_id=request_id,
                recipients=request.recipients.item,
                files=files,
            )
            self._jobs.append(job)
            for job_id in ids:
                self._by_job_id[job_id] = job
        return job

    def _known_job(self, user_id: str, job_id: str) -> bool:
        with self._lock:
            job = self._by_job_id.get(job_id)
        return job is not None and job.user_id == user_id


def _same(expected: str, given: str) -> bool:
    """Constant-time comparison of two strings, whatever characters they hold (compared as
    UTF-8: ``secrets.compare_digest`` refuses non-ASCII ``str``)."""
    return hmac.compare_digest(
        expected.encode("utf-8", "surrogatepass"), given.encode("utf-8", "surrogatepass")
    )


class _RejectError(Exception):
    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: str = RESPONSE_CONTENT_TYPE,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status)
        self.status, self.body, self.content_type = status, body, content_type
        self.headers = dict(headers or {})


def _client_fault(text: str, status: int = 500) -> _RejectError:
    return _RejectError(status, fault_envelope("soap:Client", text))


def _not_allowed() -> _RejectError:
    return _RejectError(405, b"method not allowed\n", "text/plain", {"Allow": "POST"})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # idle keep-alive connections end
    # Headers and body go out in separate writes; with Nagle's algorithm on, each answer
    # would wait for the client's delayed ACK.
    disable_nagle_algorithm = True
    error_content_type = "text/plain"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: tests and the demo read the simulator's records instead."""

    if not TYPE_CHECKING:
        # BaseHTTPRequestHandler answers 501 to a method without a do_ handler (TRACE,
        # lowercase "post", anything): every method arrives here instead, so each gets the
        # contract's answer (405 with Allow: POST, or 404 for another path).
        def __getattr__(self, name):
            if name.startswith("do_"):
                return self._handle
            raise AttributeError(name)

    def _handle(self) -> None:
        sim = self.server.sim
        started = time.perf_counter()
        request_id = self.headers.get("x-ch-request-id")
        path = self.path.split("?", 1)[0]
        received: _Received | None = None
        fault: Fault | None = None
        try:
            if path == TOKEN_PATH:
                self._token_endpoint()
                return
            if path != SERVICE_PATH or self.command != "POST":
                # Recorded too: a test may want to see what its code sent to the wrong place.
                received = self._receive(parse=False)
                self._record(path, received)
                if path != SERVICE_PATH:
                    raise _RejectError(404, b"not found\n", "text/plain")
                raise _not_allowed()
            if sim._take_fault(None, before_read=True) is not None:
                self._record(path, None)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            received = self._receive(parse=self._is_soap())
            self._record(path, received)
            if not received.complete:
                self.close_connection = True  # the client went away halfway
                return
            fault = sim._take_fault(received.operation, before_read=False)
            if fault is not None and fault.kind == "close_after_read":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault is not None and fault.kind == "delay" and sim._stopping.wait(fault.delay):
                self.close_connection = True  # stop() woke the delay
                return
            status, payload = self._service(received, fault)
            content_type = RESPONSE_CONTENT_TYPE
            extra: dict[str, str] = {}
        except _RejectError as reject:
            status, payload, content_type = reject.status, reject.body, reject.content_type
            extra = reject.headers
            fault = None
        finally:
            if received is not None:
                received.discard()  # the documents no job adopted
        headers = {
            "Content-Type": content_type,
            **extra,
            "x-ch-activity-id": str(uuid.uuid4()),
            "x-ch-execution-time": str(int((time.perf_counter() - started) * 1000)),
        }
        if request_id is not None:
            headers["x-ch-request-id"] = request_id
        drip = fault.delay if fault is not None and fault.kind == "drip" else 0.0
        reset = fault is not None and fault.kind == "reset"
        self._send(status, headers, payload, drip=drip, reset=reset)

    def _is_soap(self) -> bool:
        """Whether the service would parse this body; else it is only read, not parsed."""
        content_type = self.headers.get("Content-Type", "")
        soap = content_type.split(";", 1)[0].strip().lower() == MEDIA_TYPE
        return soap and self.headers.get("SOAPAction") is not None

    def _record(self, path: str, received: _Received | None) -> None:
        sim = self.server.sim
        headers = dict(self.headers)
        sim._record(
            ReceivedRequest(
                self.command,
                path,
                headers,
                received.body if received is not None and received.retained else b"",
                received.operation if received is not None else None,
                body_size=received.size if received is not None else 0,
                body_retained=received.retained if received is not None else True,
                _secrets=sim._secrets_of(headers),
            )
        )

    def _content_length(self) -> int:
        try:
            return max(0, int(self.headers.get("Content-Length", "0")))
        except ValueError:
            self.close_connection = True
            raise _RejectError(400, b"bad Content-Length\n", "text/plain") from None

    def _receive(self, *, parse: bool, limit: int = MAX_BODY, whole: bool = False) -> _Received:
        """Read the body in chunks: kept whole when it fits the retained budget; for a SOAP
        request, parsed (documents spooled) as it arrives, never held whole otherwise."""
        sim = self.server.sim
        length = self._content_length()
        if length > limit:
            self.close_connection = True  # the body is not read, so the stream is lost
            raise _RejectError(413, b"request too large\n", "text/plain")
        stream = length > _SMALL
        received = _Received(sim._spool if parse else None, stream=stream)
        received.retained = length <= sim.retained_body_bytes
        collect = whole or received.retained or (parse and not stream)
        kept: list[bytes] = []
        head = b""
        remaining = length
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(_CHUNK, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
                received.size += len(chunk)
                if collect:
                    kept.append(chunk)
                elif len(head) < _HEAD:
                    head += chunk[: _HEAD - len(head)]
                received.feed(chunk)
            received.complete = remaining == 0
            body = b"".join(kept)
            if received.complete and parse and stream:
                received.close()
            elif received.complete and parse:
                received.parse(body)
        except BaseException:
            received.discard()
            raise
        received.body = body
        received.head = body[:_HEAD] if collect else head
        return received

    def _service(self, received: _Received, fault: Fault | None) -> tuple[int, bytes]:
        sim = self.server.sim
        content_type = self.headers.get("Content-Type", "")
        if content_type.split(";", 1)[0].strip().lower() != MEDIA_TYPE:
            raise _RejectError(415, b"unsupported media type\n", "text/plain")
        if self.headers.get("SOAPAction") is None:
            raise _client_fault("the SOAPAction header is missing")
        if received.refusal is not None:
            raise received.refusal
        root = received.root
        assert root is not None
        try:
            payload = soap_payload(root)
        except ReadError as exc:
            raise _client_fault(exc.message) from None
        if root.tag != ENVELOPE:
            raise _client_fault("only SOAP 1.1 envelopes are accepted")
        op_name = etree.QName(payload).localname
        if etree.QName(payload).namespace != NAMESPACE or op_name not in OPERATIONS:
            raise _client_fault(f"unknown operation {etree.QName(payload).text}")
        # The documents' base64 was checked while it was decoded; here it is absent.
        issues = schema_issues(payload)
        if issues:
            raise _client_fault(f"{issues[0].path}: {issues[0].message}")
        operation = OPERATIONS[op_name]
        request = read_payload(payload, operation.input)
        auth_mode = self._authenticate(request.user_id, request.str_pin)
        if fault is not None and fault.kind == "html":
            return 500, b"<html><body><h1>500 Internal Server Error</h1></body></html>"
        if fault is not None and fault.kind == "status":
            return fault.status, f"{fault.status} simulated\n".encode()
        if fault is not None and fault.kind == "fault":
            return fault.status, fault_envelope(fault.code, fault.text)
        error = WSError(0, "")
        if fault is not None and fault.kind == "wserror":
            error = WSError(int(fault.code), fault.text)
        if isinstance(request, SendFax):
            ok = error.error_code == 0
            job_ids: tuple[str, ...] = ()
            if ok:
                documents = received.take_documents()
                if len(documents) != len(request.fax_job_files.item):
                    for document in documents:
                        document.discard()
                    raise _RejectError(500, fault_envelope("soap:Server", "documents out of step"))
                job = sim._new_job(
                    request, auth_mode, self.headers.get("x-ch-request-id"), documents
                )
                job_ids = job.job_ids
            response: Any = FaxSendResponse(
                return_=ok,
                fax_job_ids=FaxJobIds(item=tuple(FaxJobId(j) for j in job_ids)),
                ttfp=sim.ttfp if ok else 0,
                ws_error=error,
            )
        elif isinstance(request, GetFaxBroadcastReport):
            if error.error_code == 0 and not sim._known_job(request.user_id, request.job_id):
                error = WSError(-5019, "Invalid Job ID")
            response = GetFaxBroadcastReportResponse(return_=error.error_code == 0, ws_error=error)
        else:
            raise _client_fault(f"the operation {type(request).__name__} is not simulated")
        return 200, b"".join(envelope(response))

    def _authenticate(self, user_id: str, pin: str) -> str:
        """The contract's two rules; anything else is HTTP 401."""
        sim = self.server.sim
        authorization = self.headers.get("Authorization")
        if authorization is not None:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token:
                raise _client_fault("Authorization must be a Bearer token", 401)
            if pin:
                raise _client_fault("strPIN must be empty with a Bearer token", 401)
            owner = sim._user_for_token(token.strip())
            if owner is None:
                raise _client_fault("the access token is unknown or expired", 401)
            if owner != user_id:
                raise _client_fault("the access token belongs to another user", 401)
            return "oauth2"
        if not pin:
            raise _client_fault("no credentials: send a Bearer token or strPIN", 401)
        if not sim._pin_matches(user_id, pin):
            raise _client_fault("wrong user id or PIN", 401)
        return "pin"

    def _token_endpoint(self) -> None:
        """RFC 6749 section 4.4: client credentials grant."""
        sim = self.server.sim
        with sim._lock:
            sim.token_requests += 1
        try:
            received = self._receive(parse=False, limit=MAX_FORM, whole=True)
        except _RejectError as reject:
            self._json(reject.status, {"error": "invalid_request"})
            return
        if self.command != "POST":
            self._json(405, {"error": "invalid_request"}, {"Allow": "POST"})
            return
        if not received.complete:
            self.close_connection = True
            return
        if not self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            self._json(400, {"error": "invalid_request"})
            return
        form = {k: v[0] for k, v in parse_qs(received.body.decode("utf-8", "replace")).items()}
        client_id, client_secret = form.get("client_id", ""), form.get("client_secret", "")
        basic = self.headers.get("Authorization", "")
        if basic.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(basic[6:].strip(), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                decoded = ":"
            client_id, _, client_secret = decoded.partition(":")
        if form.get("grant_type") != "client_credentials":
            self._json(400, {"error": "unsupported_grant_type"})
            return
        account = sim._client(client_id, client_secret)
        if account is None:
            self._json(401, {"error": "invalid_client"}, {"WWW-Authenticate": "Basic"})
            return
        token = sim.issue_token(account.user_id)
        self._json(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": int(sim.token_lifetime),
                "scope": form.get("scope", ""),
            },
            {"Cache-Control": "no-store"},
        )

    def _json(self, status: int, data: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        headers = {"Content-Type": "application/json", **(extra or {})}
        self._send(status, headers, json.dumps(data).encode())

    def _send(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes,
        drip: float = 0,
        reset: bool = False,
    ) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if reset:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.server.sim._reset_connection(self.connection)
            return
        if drip > 0 and body:
            stopping = self.server.sim._stopping
            pause = drip / len(body)
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                if stopping.wait(pause):
                    self.close_connection = True  # stop() ends the drip
                    return
            return
        self.wfile.write(body)
