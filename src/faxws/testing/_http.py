"""The simulator's HTTP side: a threaded HTTP/1.1 server whose every connection is tracked
(so that ``stop()`` can end it), and the handler that reads each request, applies faults,
checks the contract and answers."""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import parse_qs

from lxml import etree

from faxws._reader import ReadError, read_payload, soap_payload
from faxws._redact import redact
from faxws._request_reader import ENVELOPE, deviations
from faxws._soap import CONTENT_TYPE, MEDIA_TYPE, PATH
from faxws._wire import envelope, fault_envelope
from faxws.bindings import NAMESPACE, OPERATIONS, WSError
from faxws.testing import _api, _inbox
from faxws.testing._accounts import same
from faxws.testing._answers import RejectError, client_fault, not_allowed, server_fault
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
from faxws.validation import schema_issues

if TYPE_CHECKING:
    from faxws.testing._simulator import FaxWSSimulator

__all__ = ["MAX_BODY", "Handler", "Server"]

#: Largest request body the simulator reads (a larger one gets 413 and the connection closes).
MAX_BODY = 512 * 1024 * 1024

_CHUNK = 256 * 1024  # bytes read from the socket and fed to the parser at a time
_HEAD = 64 * 1024  # bytes of a body that is not kept, for the record's operation name
_log = logging.getLogger("faxws.simulator")
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_SMALL = 256 * 1024  # bodies up to this size are parsed whole (faster), larger ones streamed
# SOAP 1.1's media type, which standard clients send, and the contract's.
_SOAP_TYPES = frozenset({"text/xml", MEDIA_TYPE})


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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server
    timeout = 30  # idle keep-alive connections end
    # Headers and body go out in separate writes; with Nagle's algorithm on, each answer
    # would wait for the client's delayed ACK.
    disable_nagle_algorithm = True
    error_content_type = "text/plain"

    operation: str | None = None  # of the request being answered, for the log line
    fields: dict[str, str] = {}  # noqa: RUF012 - replaced, never changed, per request
    _known: tuple[str, ...] | None = None  # the request's secrets, longest first, once found

    def handle_one_request(self) -> None:
        # Nothing of the previous request on this connection may be taken for this one's
        # (the log line of a request line the standard library refuses, say).
        self.operation, self.fields, self.path, self.command = None, {}, "", None  # type: ignore[assignment]
        self._known = None
        super().handle_one_request()

    def _secrets(self) -> tuple[str, ...]:
        """What this request's records and lines must never show (found once per request)."""
        if self._known is None:
            found = self.server.sim._state.secrets_of(self.fields)
            self._known = tuple(sorted(found, key=len, reverse=True))
        return self._known

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: the log line is :meth:`log_request`'s, and tests read the records."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request on the ``faxws.simulator`` logger, at INFO: method, path
        (without its query, which may hold the API token), operation, status, request id;
        whatever the request holds that is a secret is masked."""
        if not _log.isEnabledFor(logging.INFO):
            return
        fields = self.fields  # empty when the standard library refused the request line
        path = (self.path or "").partition("?")[0]
        line = (
            f"{self.command or '-'} {path or '-'} {self.operation or '-'} {code} "
            f"request_id={fields.get('x-ch-request-id', '-')}"
        )
        # Control characters a client sent would move a terminal's cursor: escaped.
        _log.info("%s", _printable(redact(line, self._secrets())))

    if not TYPE_CHECKING:
        # BaseHTTPRequestHandler answers 501 to a method without a do_ handler (TRACE,
        # lowercase "post", anything): every method arrives here instead, so each gets the
        # contract's answer (405 with Allow: POST, or 404 for another path).
        def __getattr__(self, name):
            if name.startswith("do_"):
                return self._handle
            raise AttributeError(name)

    def _handle(self) -> None:
        self.operation = None
        # email.message.Message looks each header up by scanning them all: read them once.
        self.fields: dict[str, str] = {}
        for key, value in self.headers.items():
            self.fields.setdefault(key.lower(), value)
        self._known = None
        sim = self.server.sim
        state = sim._state
        started = time.perf_counter()
        arrived = time.time()
        request_id = self.fields.get("x-ch-request-id")
        path, _, query = self.path.partition("?")
        if path.startswith(_api.PREFIX) or _inbox.is_inbox_path(path):
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
                    raise RejectError(404, b"not found\n", "text/plain")
                raise not_allowed()
            if isinstance(state.faults.take(None, before_read=True), CloseBeforeRead):
                ticket = self._record(path, None, arrived)
                state.settle(ticket, fault=CloseBeforeRead.kind)
                self.log_request("no answer: close_before_read")
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            received = self.receive(parse=self._is_soap())
            if received.complete and self._is_soap():
                found = deviations(
                    self.fields.get("content-type"),
                    self.fields.get("soapaction"),
                    received.prolog,
                    received.root,
                )
                # They quote the client's headers, which could hold a secret it knows.
                received.deviations = tuple(self._masked(d) for d in found)
            ticket = self._record(path, received, arrived)
            self.operation = received.operation
            if not received.complete:
                self.log_request("no answer: the request ended early")
                self.close_connection = True  # the client went away halfway
                return
            fault = state.faults.take(received.operation, before_read=False)
            if fault is not None:
                state.settle(ticket, fault=fault.kind)
            if isinstance(fault, CloseAfterRead):
                self.log_request("no answer: close_after_read")
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if isinstance(fault, DelayResponse) and sim._stopping.wait(fault.seconds):
                self.close_connection = True  # stop() woke the delay
                self.log_request("no answer: the simulator stopped")
                return
            status, payload = self._service(received, fault, arrived)
            content_type = CONTENT_TYPE
            extra: dict[str, str] = {}
        except RejectError as reject:
            status, payload, content_type = reject.status, reject.body, reject.content_type
            extra = reject.headers
            refusal = reject.reason
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
        if ticket is None:  # refused before its body was read (413, a bad Content-Length)
            ticket = self._record(path, None, arrived)
        state.settle(ticket, status=status, refusal=refusal)
        drip = fault.seconds if isinstance(fault, SlowDrip) else 0.0
        self.send(status, headers, payload, drip=drip, reset=isinstance(fault, ResetMidResponse))

    def _tools(self, path: str, query: str) -> None:
        """The inbox and the API: not service requests, so not recorded; behind the
        simulator's token when it listens beyond loopback, and only for the simulator's own
        host names (a page that rebinds its own name to 127.0.0.1 is not let in)."""
        if not self._own_host():
            self.close_connection = True
            text = b"the inbox and API answer only to the simulator's own host name\n"
            self.send(403, {"Content-Type": "text/plain; charset=utf-8"}, text)
            return
        required = self.server.sim.api_token
        if required is not None:
            given = self.fields.get("x-faxws-token") or _query_token(query)
            if given is None or not same(required, given):
                self.close_connection = True  # the body, if any, is not read
                text = b"the inbox and API need the token faxws serve printed (?token=...)\n"
                self.send(401, {"Content-Type": "text/plain; charset=utf-8"}, text)
                return
        if path.startswith(_api.PREFIX):
            _api.handle(self, path, query)
        else:
            _inbox.handle(self, path, required)

    def _masked(self, text: str) -> str:
        return redact(text, self._secrets())

    def _own_host(self) -> bool:
        if self.server.sim.api_token is not None:
            return True  # the token is the guard: a rebinding page does not have it
        host = self.fields.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        name = name.strip("[]").lower()
        return name in _LOCAL_NAMES or name == self.server.sim._host.strip("[]").lower()

    def _is_soap(self) -> bool:
        """Whether this body is parsed: SOAP 1.1's media type or the contract's (in strict
        mode, a deviation); any other is only read."""
        content_type = self.fields.get("content-type", "")
        return content_type.split(";", 1)[0].strip().lower() in _SOAP_TYPES

    def _record(self, path: str, received: Received | None, arrived: float) -> tuple[int, int]:
        state = self.server.sim._state
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            headers.setdefault(key, value)
        return state.record(
            ReceivedRequest(
                self.command,
                path,
                headers,
                received.body if received is not None and received.retained else b"",
                received.operation if received is not None else None,
                body_size=received.size if received is not None else 0,
                body_retained=received.retained if received is not None else True,
                deviations=received.deviations if received is not None else (),
                received_at=arrived,
                _secrets=frozenset(self._secrets()),
            )
        )

    def _content_length(self) -> int:
        if "transfer-encoding" in self.fields:
            # Its body would be read as the next request: refused, and the stream ends.
            self.close_connection = True
            raise RejectError(
                411, b"a Content-Length is required (no Transfer-Encoding)\n", "text/plain"
            )
        text = self.fields.get("content-length", "0").strip()
        if not text.isdigit() or not text.isascii():
            self.close_connection = True
            raise RejectError(400, b"bad Content-Length\n", "text/plain")
        return int(text)

    def receive(self, *, parse: bool, limit: int = MAX_BODY, whole: bool = False) -> Received:
        """Read the body in chunks: kept whole when it fits the retained budget; for a SOAP
        request, parsed (documents spooled) as it arrives, never held whole otherwise."""
        sim = self.server.sim
        length = self._content_length()
        if length > limit:
            self.close_connection = True  # the body is not read, so the stream is lost
            raise RejectError(413, b"request too large\n", "text/plain")
        stream = length > _SMALL
        received = Received(sim._spool if parse else None, stream=stream)
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

    def _service(
        self, received: Received, fault: Fault | None, arrived: float
    ) -> tuple[int, bytes]:
        sim = self.server.sim
        request_id = self.fields.get("x-ch-request-id")
        if not self._is_soap():
            raise RejectError(415, b"unsupported media type\n", "text/plain")
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
        name = etree.QName(payload)
        handler = HANDLERS.get(name.localname) if name.namespace == NAMESPACE else None
        if handler is None:
            if name.namespace == NAMESPACE:
                raise client_fault(f"the operation {name.localname} is not simulated")
            raise client_fault(f"unknown operation {name.text}")
        # The documents' base64 was checked while it was decoded; here it is absent.
        issues = schema_issues(payload, max_issues=1)
        if issues:
            raise client_fault(f"{issues[0].path}: {issues[0].message}")
        request = read_payload(payload, OPERATIONS[name.localname].input)
        auth_mode = self._authenticate(request.user_id, request.str_pin)
        if isinstance(fault, Html500):
            return 500, b"<html><body><h1>500 Internal Server Error</h1></body></html>"
        if isinstance(fault, HttpStatus):
            return fault.status, f"{fault.status} simulated\n".encode()
        if isinstance(fault, SoapFault):
            return 500, fault_envelope(fault.code, fault.text)
        error = WSError(fault.code, fault.text) if isinstance(fault, WsError) else WSError(0, "")
        call = Call(
            sim._state,
            request,
            auth_mode,
            None if request_id is None else self._masked(request_id),
            received,
            sim.ttfp,
            error,
            arrived,
        )
        return 200, b"".join(envelope(handler(call)))

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

    def send_stream(
        self, status: int, headers: dict[str, str], stream: BinaryIO, size: int
    ) -> None:
        """Answer with ``size`` bytes read from ``stream`` in chunks."""
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(size))
        self.end_headers()
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

    def send(
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


def _query_token(query: str) -> str | None:
    try:
        values = parse_qs(query, max_num_fields=20).get("token")
    except ValueError:
        return None
    return values[-1] if values else None


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
