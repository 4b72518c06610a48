"""The simulator's HTTP side: a threaded HTTP/1.1 server whose every connection is tracked
(so that ``stop()`` can end it), and the handler that reads each request, applies faults,
checks the contract and answers."""

from __future__ import annotations

import io
import logging
import re
import socket
import struct
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.client import HTTPMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import parse_qs

from lxml import etree

from faxws._http.shared import declared_length
from faxws._protocol.reader import ReadError, read_payload, soap_payload
from faxws._protocol.redact import redact
from faxws._protocol.request_reader import ENVELOPE, OPERATION_TAGS, deviations
from faxws._protocol.soap import CONTENT_TYPE, MEDIA_TYPE, PATH, new_request_id
from faxws._protocol.writer import document, fault_envelope
from faxws.bindings import NAMESPACE, OPERATIONS, WSError
from faxws.testing import _api, _inbox
from faxws.testing._accounts import same
from faxws.testing._answers import RejectError, client_fault, not_allowed, plain, server_fault
from faxws.testing._documents import Received
from faxws.testing._faults import (
    CloseAfterRead,
    CloseBeforeRead,
    DelayResponse,
    Fault,
    Html500,
    HttpStatus,
    ResetMidResponse,
    SlowDrip,
    SoapFault,
    WsError,
)
from faxws.testing._oauth import TOKEN_PATH, token_endpoint
from faxws.testing._operations import HANDLERS, Call
from faxws.testing._records import ReceivedRequest
from faxws.validation import default_validator, schema_issues

if TYPE_CHECKING:
    from faxws.testing._simulator import FaxWSSimulator

__all__ = ["MAX_BODY", "Handler", "Server"]

#: Largest request body the simulator reads (a larger one gets 413 and the connection closes).
MAX_BODY = 512 * 1024 * 1024
#: Seconds a connection may wait for its next request, or any read or write may wait.
IDLE = 30

_CHUNK = 256 * 1024  # bytes read from the socket and fed to the parser at a time
_HEAD = 64 * 1024  # bytes of a body that is not kept, for the record's operation name
# The most of a body left unread that is read and dropped before an answer, so that the
# connection stays open; a longer rest closes it.
_DRAIN = 64 * 1024
# After an answer that leaves part of a request unread, how long and how much of what the
# client still sends is read and dropped before the connection closes (see _linger).
_LINGER = 2.0
_LINGER_BYTES = 1024 * 1024
_log = logging.getLogger("faxws.simulator")
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_NO_ERROR = WSError(0, "")
# SOAP 1.1's media type, which standard clients send, and the contract's.
_SOAP_TYPES = frozenset({"text/xml", MEDIA_TYPE})
# A header line as read: a name that is a token (RFC 9110), a colon, and a value without CR,
# LF or NUL, then its line ending (none on a last line cut short).
_HEADER_LINE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\r\n\0]*\r?\n?")
_NO_HEADERS = HTTPMessage()  # never changed: those of a request whose headers were not read
# Every answer of the inbox and the API: no page of another origin may load it (a browser
# without Fetch Metadata still honours this), and no browser reads it as another type.
_TOOL_HEADERS = {
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


class Server(ThreadingHTTPServer):
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


class _Lines:
    """The stream the headers are read from, keeping each line http.client reads."""

    def __init__(self, stream: io.BufferedIOBase) -> None:
        self._stream = stream
        self.read: list[bytes] = []

    def readline(self, limit: int = -1) -> bytes:
        line = self._stream.readline(limit)
        self.read.append(line)
        return line


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server
    # Idle keep-alive connections end after IDLE seconds: a limit the kernel keeps (see
    # setup), not a socket time-out, with which Python polls before every read and write.
    timeout = None
    # Headers and body may go out in separate writes; with Nagle's algorithm on, an answer
    # would wait for the client's delayed ACK.
    disable_nagle_algorithm = True
    error_content_type = "text/plain"

    operation: str | None = None  # of the request being answered, for the log line
    quiet = False  # whether the request being answered is the inbox's own: not logged
    headers: HTTPMessage = _NO_HEADERS
    # The request's header values without the whitespace around them: by lower-case name
    # (the first of each), and as they came.
    fields: dict[str, str] = {}  # noqa: RUF012 - replaced, never changed, per request
    pairs: list[tuple[str, str]] = []  # noqa: RUF012 - likewise
    _known: frozenset[str] | None = None  # the request's secrets, once found
    # Bytes of the request's body not read yet; -1 while unknown (no request line taken
    # apart yet, or framing refused). Whatever answers a request reads them, or the
    # connection closes after the answer: they would be read as the next request.
    _unread = 0
    _framing: RejectError | None = None  # why the body's framing is refused, if it is
    _expect = False  # whether the client waits for 100 Continue before its body
    _tool = False  # whether the request is the inbox's or the API's (see _tools)
    _answered = False  # whether the answer's head has been written

    def setup(self) -> None:
        super().setup()
        _limit_waits(self.connection, IDLE)

    def handle_one_request(self) -> None:
        """The standard library's, with one route for every method (405 with Allow: POST,
        or 404 for another path, where it answers 501 to a method it has no do_ method for)."""
        # Nothing of the previous request on this connection may be taken for this one's
        # (the log line of a request line the standard library refuses, say).
        self.operation, self.fields, self.path, self.command = None, {}, "", None  # type: ignore[assignment]
        self.headers, self.pairs = _NO_HEADERS, []
        self._known = None
        self.quiet = self._tool = self._answered = False
        self._unread, self._framing = 0, None
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if self.raw_requestline:
                self._unread = -1  # until the headers say how long the body is
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if self.parse_request():
                self._handle()
        except TimeoutError:
            self.close_connection = True  # a read or a write waited too long
        if self._unread:
            # Whatever answered (or did not), the rest of this request was not read: read as
            # the next request, a body would run as one.
            self.close_connection = True

    def finish(self) -> None:
        super().finish()
        if self._unread:
            _linger(self.connection)

    def parse_request(self) -> bool:
        """The standard library's, then checks of the header lines it read: one that is not
        ``name: value`` (a folded line, a CR or NUL in the value, a name that is not a
        token) gets 400, where the email package would join it to the previous header,
        split it at a bare CR, or end the headers there and drop the rest unseen. Then the
        body's framing, and only then 100 Continue."""
        rfile, lines = self.rfile, _Lines(self.rfile)
        self.rfile, self._expect = lines, False  # type: ignore[assignment]
        try:
            if not super().parse_request():
                return False
        finally:
            self.rfile = rfile
        if not all(map(_HEADER_LINE.fullmatch, lines.read[:-1])):  # the last ends them
            self.send_error(HTTPStatus.BAD_REQUEST, "Bad header line")
            return False
        self.pairs = [(name, value.strip(" \t")) for name, value in self.headers.items()]
        self.fields = {name.lower(): value for name, value in reversed(self.pairs)}
        self._framing = self._frame()
        if self._framing is not None:
            self.close_connection = True
            return True  # answered by the route, as it answers a body it refuses
        return not self._expect or super().handle_expect_100()

    def handle_expect_100(self) -> bool:
        self._expect = True  # answered by parse_request once the headers are checked
        return True

    def _frame(self) -> RejectError | None:
        """How long the body is (:attr:`_unread`), from one plain Content-Length or none; any
        other framing is refused, as RFC 9112 section 6.3 asks: two readers could each take a
        different body from it, and the simulator reads no chunked body."""
        names = [name.lower() for name, _ in self.pairs]
        if names.count("content-length") > 1 or names.count("transfer-encoding") > 1:
            return plain(400, "Content-Length or Transfer-Encoding given twice")
        coding = self.fields.get("transfer-encoding")
        length = self.fields.get("content-length")
        if coding is not None:
            codings = [c.strip(" \t").lower() for c in coding.split(",")]
            if length is not None:
                return plain(400, "both Content-Length and Transfer-Encoding")
            if codings[-1] != "chunked" or codings.count("chunked") > 1:
                return plain(400, "bad Transfer-Encoding")  # a body whose end cannot be found
            return plain(411, "a Content-Length is required (no Transfer-Encoding)")
        value = 0 if length is None else declared_length(length)
        if value is None:
            return plain(400, "bad Content-Length")
        self._unread = value
        return None

    def _secrets(self) -> frozenset[str]:
        """What this request's records and lines must never show (found once per request)."""
        if self._known is None:
            self._known = self.server.sim._state.secrets_of(self.fields)
        return self._known

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: the log line is :meth:`log_request`'s, and tests read the records."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request on the ``faxws.simulator`` logger, at INFO: method, path
        (without its query, which may hold the API token), operation, status, request id;
        whatever the request holds that is a secret is masked. The inbox's own requests (its
        pages, files, event stream and calls) are not logged: they would bury the others."""
        if self.quiet or not _log.isEnabledFor(logging.INFO):
            return
        path = (self.path or "").partition("?")[0]
        line = (
            f"{self.command or '-'} {path or '-'} {self.operation or '-'} {code} "
            f"request_id={self.fields.get('x-ch-request-id', '-')}"
        )
        # Control characters a client sent would move a terminal's cursor: escaped.
        _log.info("%s", _printable(self._masked(line)))

    def _handle(self) -> None:
        sim = self.server.sim
        state = sim._state
        started = time.perf_counter()
        arrived = state.clock()
        request_id = self.fields.get("x-ch-request-id")
        path, _, query = self.path.partition("?")
        if path != PATH and (path.startswith(_api.PREFIX) or _inbox.is_inbox_path(path)):
            self._tools(path, query)
            return
        received: Received | None = None
        fault: Fault | None = None
        ticket: tuple[int, int] | None = None
        refusal: str | None = None
        try:
            if path == TOKEN_PATH:
                token_endpoint(self)
                return
            if path != PATH or self.command != "POST":
                # Recorded too: a test may want to see what its code sent to the wrong place.
                received = self.receive(parse=False)
                ticket = self._record(path, received, arrived)
                if path != PATH:
                    raise plain(404, "not found")
                raise not_allowed()
            if isinstance(state.faults.take(None, before_read=True), CloseBeforeRead):
                ticket = self._record(path, None, arrived)
                state.settle(ticket, fault=CloseBeforeRead.kind)
                self._hang_up(CloseBeforeRead.kind)
                return
            content_type = self.fields.get("content-type")
            # Parsed: SOAP 1.1's media type or the contract's (in strict mode, a deviation);
            # any other body is only read.
            soap = (content_type or "").split(";", 1)[0].strip().lower() in _SOAP_TYPES
            received = self.receive(parse=soap)
            if received.complete and soap:
                found = deviations(
                    content_type, self.fields.get("soapaction"), received.prolog, received.root
                )
                # They quote the client's headers, which could hold its secrets.
                received.deviations = tuple(self._masked(d) for d in found)
            ticket = self._record(path, received, arrived)
            self.operation = received.operation
            if not received.complete:
                self.log_request("no answer: the request ended early")
                self.close_connection = True  # the client went away halfway
                return
            fault = state.faults.take(self.operation, before_read=False)
            if fault is not None:
                state.settle(ticket, fault=fault.kind)
                if isinstance(fault, CloseAfterRead):
                    self._hang_up(fault.kind)
                    return
                if isinstance(fault, DelayResponse) and sim._stopping.wait(fault.seconds):
                    self.close_connection = True  # stop() woke the delay
                    self.log_request("no answer: the simulator stopped")
                    return
            if not soap:
                raise plain(415, "unsupported media type")
            status, payload = self._service(received, fault, arrived, request_id, ticket[1])
            headers = {"Content-Type": CONTENT_TYPE}
        except RejectError as reject:
            status, payload, refusal, fault = reject.status, reject.body, reject.reason, None
            headers = {"Content-Type": reject.content_type, **reject.headers}
        except OSError:
            raise  # the client went away, or stop() shut the connection down
        except Exception as exc:
            # A failure of the simulator itself: answered (unless an answer was begun), so
            # that the client is not left waiting for one that never comes, and logged with
            # its traceback, secrets masked.
            self.close_connection = True
            failed = f"the simulator failed: {type(exc).__name__}: {exc}"
            refusal = _printable(self._masked(failed))
            trace = "".join(traceback.format_exception(exc)).rstrip()
            _log.error("%s\n%s", refusal, self._masked(trace))
            if self._answered:
                return
            status, payload, fault = 500, fault_envelope("soap:Server", refusal), None
            headers = {"Content-Type": CONTENT_TYPE}
        finally:
            if received is not None and received.documents:
                received.discard()  # the documents no job adopted
        headers["x-ch-activity-id"] = new_request_id()  # unique, with no system call
        headers["x-ch-execution-time"] = str(int((time.perf_counter() - started) * 1000))
        if request_id is not None:
            headers["x-ch-request-id"] = request_id
        if ticket is None:  # refused before its body was read (413, a bad Content-Length)
            ticket = self._record(path, None, arrived)
        state.settle(ticket, status=status, refusal=refusal)
        drip = fault.seconds if isinstance(fault, SlowDrip) else 0.0
        self.send(status, headers, payload, drip=drip, reset=isinstance(fault, ResetMidResponse))

    def _hang_up(self, fault: str) -> None:
        """End the connection without an answer, as the injected ``fault`` asks."""
        self.log_request(f"no answer: {fault}")
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _tools(self, path: str, query: str) -> None:
        """The inbox and the API: not service requests, so not recorded; behind the
        simulator's token when it listens beyond loopback, only for the simulator's own host
        names (a page that rebinds its own name to 127.0.0.1 is not let in), and never for a
        page of another site (see :meth:`_from_another_site`). Every answer says that no
        other origin may embed it (Cross-Origin-Resource-Policy) and is never sniffed.

        A route that fails unexpectedly answers 500 saying how (rather than the connection
        closing unanswered), and the error goes on to the server's error handler as before."""
        self._tool = True
        if self._framing is not None:  # refused for every route, whether it reads a body or not
            reject = self._framing
            self.send(reject.status, {"Content-Type": reject.content_type}, reject.body)
            return
        if not self._own_host():
            self.close_connection = True
            text = b"the inbox and API answer only to the simulator's own host name\n"
            self.send(403, {"Content-Type": "text/plain; charset=utf-8"}, text)
            return
        if self._from_another_site():
            message = f"{self.command} from another site is refused"
            if path.startswith(_api.PREFIX):
                _api.send_json(self, 403, {"error": message})
            else:
                text = f"{message}\n".encode()
                self.send(403, {"Content-Type": "text/plain; charset=utf-8"}, text)
            return
        required = self.server.sim.api_token
        if required is not None and not _inbox.is_public(path):
            given = self.fields.get("x-faxws-token") or _query_token(query)
            if given is None or not same(required, given):
                self.close_connection = True
                text = b"the inbox and API need the token faxws serve printed (?token=...)\n"
                self.send(401, {"Content-Type": "text/plain; charset=utf-8"}, text)
                return
        try:
            if path.startswith(_api.PREFIX):
                # The inbox's calls say so; what its pages load (documents, previews) comes
                # from a page of this origin, as a browser tells.
                own = self.fields.get("x-faxws-client") == _api.INBOX_CLIENT or (
                    self.fields.get("sec-fetch-site", "").lower() == "same-origin"
                )
                self.quiet = own or path == _api.EVENTS
                _api.handle(self, path, query)
            else:
                self.quiet = True
                _inbox.handle(self, path, query, required)
        except (ConnectionError, TimeoutError):
            raise  # the client went away, or stop() shut the connection down
        except Exception as exc:
            self.close_connection = True
            if not self._answered:
                failed = self._masked(f"the simulator failed: {type(exc).__name__}: {exc}")
                if path.startswith(_api.PREFIX):
                    _api.send_json(self, 500, {"error": failed})
                else:
                    plain_text = {"Content-Type": "text/plain; charset=utf-8"}
                    self.send(500, plain_text, f"{failed}\n".encode())
            raise

    def _from_another_site(self) -> bool:
        """Whether a browser says a page of another origin sent the request: its Origin is
        not the simulator's, or its Sec-Fetch-Site says another site (another port of
        127.0.0.1 is "same-site": another origin all the same) and it is not a link followed
        to a page. So such a page can neither change anything nor embed the inbox's
        documents, frames or event stream (each would hold one of the browser's few
        connections to the simulator), nor learn from them what the simulator holds."""
        origin = self.fields.get("origin")
        if origin is not None and origin.lower() != f"http://{self.fields.get('host', '')}".lower():
            return True
        site = self.fields.get("sec-fetch-site", "same-origin").lower()
        if site in ("same-origin", "none"):  # a page of the simulator's, or the person
            return False
        return not (
            self.command in ("GET", "HEAD")
            and self.fields.get("sec-fetch-mode", "").lower() == "navigate"
            and self.fields.get("sec-fetch-dest", "document").lower() == "document"
        )

    def _masked(self, text: str) -> str:
        return redact(text, self._secrets())

    def _own_host(self) -> bool:
        if sum(name.lower() == "host" for name, _ in self.pairs) > 1:
            return False  # RFC 9112 3.2: which one is meant is anyone's guess
        if self.server.sim.api_token is not None:
            return True  # the token is the guard: a rebinding page does not have it
        host = self.fields.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        name = name.strip("[]").lower()
        return name in _LOCAL_NAMES or name == self.server.sim._host.strip("[]").lower()

    def _record(self, path: str, received: Received | None, arrived: float) -> tuple[int, int]:
        headers: dict[str, str] = {}
        for name, value in self.pairs:
            headers.setdefault(name, value)  # a name given twice: the first value is kept
        record = ReceivedRequest(
            self.command,
            path,
            headers,
            received.body if received is not None and received.retained else b"",
            None if received is None else received.operation,
            0 if received is None else received.size,
            True if received is None else received.retained,
            () if received is None else received.deviations,
            arrived,
            _secrets=self._secrets(),
        )
        return self.server.sim._state.record(record)

    def receive(self, *, parse: bool, limit: int = MAX_BODY, whole: bool = False) -> Received:
        """Read the body in chunks: kept whole when it fits the retained budget (or ``whole``
        asks); for a SOAP request, parsed (documents spooled) as it arrives."""
        if self._framing is not None:
            raise self._framing  # the connection then closes
        if self._unread > limit:
            self.close_connection = True  # the body is not read, so the stream is lost
            raise plain(413, "request too large")
        sim = self.server.sim
        received = Received(sim._spool if parse else None)
        received.retained = self._unread <= sim.retained_body_bytes
        collect = whole or received.retained
        kept: list[bytes] = []
        head = b""
        try:
            while self._unread > 0:
                chunk = self.rfile.read(min(_CHUNK, self._unread))
                if not chunk:  # the client went away, or the idle limit passed
                    break
                self._unread -= len(chunk)
                received.size += len(chunk)
                if collect:
                    kept.append(chunk)
                elif len(head) < _HEAD:
                    head += chunk[: _HEAD - len(head)]
                received.feed(chunk)
            received.complete = self._unread == 0
            if received.complete:
                received.close()
        except BaseException:
            received.discard()
            raise
        received.body = b"".join(kept)
        received.head = received.body[:_HEAD] if collect else head
        return received

    def _service(
        self,
        received: Received,
        fault: Fault | None,
        arrived: float,
        request_id: str | None,
        number: int,
    ) -> tuple[int, bytes]:
        sim = self.server.sim
        if received.refusal is not None:
            if received.refusal.server_side:
                raise server_fault(
                    f"the simulator cannot spool the document: {received.refusal.message}"
                )
            raise client_fault(received.refusal.message)
        if sim.strict and received.deviations:
            raise client_fault(
                "the request differs from the contract's form: " + " | ".join(received.deviations)
            )
        root = received.root
        assert root is not None
        try:
            payload = soap_payload(root)
        except ReadError as exc:
            raise client_fault(exc.message) from None
        if root.tag != ENVELOPE:
            raise client_fault("only SOAP 1.1 envelopes are accepted")
        name = OPERATION_TAGS.get(str(payload.tag))
        handler = None if name is None else HANDLERS.get(name)
        if name is None or handler is None:
            qname = etree.QName(payload)
            if qname.namespace == NAMESPACE:
                raise client_fault(f"the operation {qname.localname} is not simulated")
            raise client_fault(f"unknown operation {qname.text}")
        # The documents' base64 was checked while it was decoded; here it is absent.
        if not default_validator().is_valid(payload):
            issue = schema_issues(payload, max_issues=1)[0]
            raise client_fault(f"{issue.path}: {issue.message}")
        # Checked above, and the parse keeps no comment, processing instruction or entity.
        request = read_payload(payload, OPERATIONS[name].input)
        auth_mode = self._authenticate(request.user_id, request.str_pin)
        error = _NO_ERROR
        if fault is not None:
            if isinstance(fault, Html500):
                return 500, b"<html><body><h1>500 Internal Server Error</h1></body></html>"
            if isinstance(fault, HttpStatus):
                return fault.status, f"{fault.status} simulated\n".encode()
            if isinstance(fault, SoapFault):
                return 500, fault_envelope(fault.code, fault.text)
            if isinstance(fault, WsError):
                error = WSError(fault.code, fault.text)
        call = Call(
            sim._state,
            request,
            auth_mode,
            None if request_id is None else self._masked(request_id),
            received,
            sim.ttfp,
            error,
            arrived,
            sim._spool,
            number,
        )
        return 200, document(handler(call))

    def _authenticate(self, user_id: str, pin: str) -> str:
        """The contract's two rules; anything else is HTTP 401."""
        state = self.server.sim._state
        authorization = self.fields.get("authorization")
        if authorization is not None:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token:
                raise client_fault("Authorization must be a Bearer token", 401)
            if pin:
                raise client_fault("strPIN must be empty with a Bearer token", 401)
            owner = state.user_for_token(token.strip())
            if owner is None:
                raise client_fault("the access token is unknown or expired", 401)
            if owner != user_id:
                raise client_fault("the access token belongs to another user", 401)
            return "oauth2"
        if not pin:
            raise client_fault("no credentials: send a Bearer token or strPIN", 401)
        if not state.pin_matches(user_id, pin):
            raise client_fault("wrong user id or PIN", 401)
        return "pin"

    def send(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes,
        drip: float = 0,
        reset: bool = False,
    ) -> None:
        """Answer with ``body``, its head and it in one write (each write lets another thread
        run), or as an injected fault delivers it: ``drip`` seconds a byte at a time, or
        ``reset`` halfway."""
        head = self._head(status, headers, len(body))
        if self.command == "HEAD":
            self.wfile.write(head)
        elif reset:
            self.wfile.write(head + body[: len(body) // 2])
            self.close_connection = True
            self.server.sim._reset_connection(self.connection)
        elif drip > 0 and body:
            self.wfile.write(head)
            stopping = self.server.sim._stopping
            pause = drip / len(body)
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                if stopping.wait(pause):
                    self.close_connection = True  # stop() ends the drip
                    return
        elif len(body) <= _CHUNK:
            self.wfile.write(head + body)
        else:
            self.wfile.write(head)
            self.wfile.write(body)

    def start_stream(self, status: int, headers: dict[str, str]) -> None:
        """Begin an answer of no announced length, which ends when the connection closes
        (an event stream); the caller writes it to :attr:`wfile`."""
        self.close_connection = True
        self.wfile.write(self._head(status, headers, None))

    def send_stream(
        self, status: int, headers: dict[str, str], stream: BinaryIO, size: int
    ) -> None:
        """Answer with ``size`` bytes read from ``stream`` in chunks."""
        self.wfile.write(self._head(status, headers, size))
        if self.command == "HEAD":
            return
        remaining = size
        while remaining > 0:
            chunk = stream.read(min(_CHUNK, remaining))
            if not chunk:
                self.close_connection = True  # shorter than announced: the stream is lost
                return
            self.wfile.write(chunk)
            remaining -= len(chunk)

    def _head(self, status: int, headers: dict[str, str], size: int | None) -> bytes:
        """An answer's head as send_response, send_header and end_headers write it (none to
        HTTP/0.9), with Connection: close when the connection closes after the answer, and
        the body's ``size`` unless it is None."""
        self.log_request(status)
        self._answered = True
        closing = self._closing()
        if self.request_version == "HTTP/0.9":
            return b""
        reason = self.responses[status][0] if status in self.responses else ""
        if self._tool:
            headers = {**headers, **{k: v for k, v in _TOOL_HEADERS.items() if k not in headers}}
        lines = [
            f"{self.protocol_version} {status} {reason}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            *(f"{name}: {value}" for name, value in headers.items()),
            *(["Connection: close"] if closing else []),
            *([] if size is None else [f"Content-Length: {size}"]),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "strict")

    def _closing(self) -> bool:
        """Whether the connection closes after the answer about to be written. The rest of a
        body no one read is read and dropped first when it is short (the connection then
        stays open); a longer one, or one whose length is not known, closes the connection,
        as it would otherwise be read as the next request."""
        left = self._unread
        if left and not self.close_connection:
            if 0 < left <= _DRAIN:
                self._unread -= len(self.rfile.read(left) or b"")
            if self._unread:
                self.close_connection = True
        return self.close_connection


def _limit_waits(sock: socket.socket, seconds: int) -> None:
    """End any single read or write on ``sock`` that waits longer than ``seconds``: a read
    then gives what came (nothing: the connection is closed as idle), a write raises
    OSError. Set in the kernel, so reads and writes are plain system calls; where the
    options are missing, a Python time-out does it."""
    value = (
        struct.pack("I", seconds * 1000)  # Windows takes milliseconds
        if sys.platform == "win32"
        else struct.pack("ll", seconds, 0)  # a struct timeval
    )
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
    except (OSError, AttributeError):
        sock.settimeout(seconds)


def _linger(sock: socket.socket) -> None:
    """End a connection whose client may still be sending what was not read. Closed with
    unread bytes, a socket answers with a reset, and a client's system may drop an answer it
    had received but not yet handed over; so the writing side ends first (the client sees
    the answer end), and what comes is read and dropped until the client closes too, within
    a time and a number of bytes."""
    try:
        sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + _LINGER
        taken = 0
        while taken < _LINGER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            sock.settimeout(left)
            data = sock.recv(_CHUNK)
            if not data:
                return
            taken += len(data)
    except OSError:  # a time-out, or the client or stop() ended the connection
        pass


def _query_token(query: str) -> str | None:
    try:
        values = parse_qs(query, max_num_fields=20).get("token")
    except ValueError:
        return None
    return values[-1] if values else None


def _printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
