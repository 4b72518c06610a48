"""A faithful local stand-in for the FaxWS v5 service, for tests and demos.

>>> with FaxWSSimulator() as sim:                                    # doctest: +SKIP
...     client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
...     client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", FileType.PDF)])
...     sim.jobs[0].files[0].data
b'%PDF-1.4'

It is a real HTTP/1.1 server (threaded, keep-alive) on 127.0.0.1, strict where the contract is:
405 for a method other than POST, 404 for another path, 415 for another Content-Type, a SOAP
Client fault for a missing SOAPAction header, malformed XML, an unknown operation or a body
that fails the schema, and HTTP 401 for any request that breaks the two authentication rules.
It also serves an OAuth 2.0 token endpoint (client credentials grant) at ``/connect/token``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import secrets
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from lxml import etree

from faxws._reader import ReadError, read_payload, soap_payload
from faxws._wire import envelope
from faxws._xsd import NAMESPACE
from faxws.bindings import (
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
SOAP11_NS = "http://schemas.xmlsoap.org/soap/envelope/"
RESPONSE_CONTENT_TYPE = "application/soap+xml; charset=utf-8"

#: The account every simulator accepts unless given others; not secrets, by design.
DEMO_USER_ID = "mbx0000000000"
DEMO_PIN = "0000"
DEMO_TOKEN = "demo-token"  # noqa: S105
DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # noqa: S105

#: Largest request body the simulator reads.
MAX_BODY = 512 * 1024 * 1024


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


@dataclass(frozen=True)
class ReceivedRequest:
    """One HTTP request as the simulator received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    operation: str | None = None

    def header(self, name: str) -> str | None:
        """A header value by case-insensitive name."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None

    def masked_headers(self) -> dict[str, str]:
        """The headers with the Authorization value masked, for printing."""
        out = {}
        for key, value in self.headers.items():
            if key.lower() == "authorization":
                scheme = value.split(" ", 1)[0]
                value = f"{scheme} ***"
            out[key] = value
        return out


@dataclass(frozen=True)
class ReceivedFile:
    index: int
    file_type: int
    data: bytes


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    sim: FaxWSSimulator

    def process_request(self, request: Any, client_address: Any) -> None:
        self.sim._connection_opened(request)
        super().process_request(request, client_address)


class FaxWSSimulator:
    """The simulator. Use as a context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        accounts: the users it accepts; default: the demo account
            (:data:`DEMO_USER_ID` with PIN :data:`DEMO_PIN`, token :data:`DEMO_TOKEN`,
            client :data:`DEMO_CLIENT_ID` / :data:`DEMO_CLIENT_SECRET`).
        host, port: where to listen; port 0 picks a free port (see :attr:`url`).
        token_lifetime: seconds a token from the token endpoint stays valid.
        ttfp: the TTFP value SendFax answers with.
    """

    def __init__(
        self,
        accounts: Iterable[Account] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token_lifetime: float = 3600.0,
        ttfp: int = 30,
    ) -> None:
        self.accounts = tuple(accounts) if accounts is not None else (DEMO_ACCOUNT,)
        self.token_lifetime = token_lifetime
        self.ttfp = ttfp
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self._issued: dict[str, tuple[str, float]] = {}  # token -> (user id, expiry)
        self._injections: list[_Injection] = []
        self.reset()

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> FaxWSSimulator:
        server = _Server((self._host, self._port), _Handler)
        server.sim = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            open_sockets, self._sockets = set(self._sockets), set()
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(5)

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
        """Forget received requests, jobs, counters and pending faults (accounts stay)."""
        with self._lock:
            self._requests: list[ReceivedRequest] = []
            self._jobs: list[SimulatedJob] = []
            self.connections = 0
            self.token_requests = 0
            self._injections = []
            self._job_counter = 0

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
        return next((j for j in self.jobs if job_id in j.job_ids), None)

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
        """A new bearer token for ``user_id``, valid for ``lifetime`` seconds."""
        token = secrets.token_urlsafe(24)
        expiry = time.monotonic() + (self.token_lifetime if lifetime is None else lifetime)
        with self._lock:
            self._issued[token] = (user_id, expiry)
        return token

    def expire_tokens(self) -> None:
        """Make every token the token endpoint issued invalid from now on."""
        with self._lock:
            self._issued = {t: (u, 0.0) for t, (u, _) in self._issued.items()}

    # -- internals used by the handler -------------------------------------------------------

    def _connection_opened(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._sockets.add(sock)

    def _connection_closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self._requests.append(request)

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
            if token in account.tokens:
                return account.user_id
        return None

    def _pin_matches(self, user_id: str, pin: str) -> bool:
        return any(
            a.user_id == user_id and a.pin is not None and secrets.compare_digest(a.pin, pin)
            for a in self.accounts
        )

    def _client(self, client_id: str, client_secret: str) -> Account | None:
        for a in self.accounts:
            if (
                a.client_id is not None
                and a.client_secret is not None
                and secrets.compare_digest(a.client_id, client_id)
                and secrets.compare_digest(a.client_secret, client_secret)
            ):
                return a
        return None

    def _new_job(self, request: SendFax, auth_mode: str, request_id: str | None) -> SimulatedJob:
        with self._lock:
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
            files=tuple(
                ReceivedFile(f.file_index, f.file_type_id, bytes(f.file_data))  # type: ignore[arg-type]
                for f in request.fax_job_files.item
            ),
        )
        with self._lock:
            self._jobs.append(job)
        return job

    def _known_job(self, user_id: str, job_id: str) -> bool:
        with self._lock:
            return any(job_id in j.job_ids and j.user_id == user_id for j in self._jobs)


class _RejectError(Exception):
    def __init__(self, status: int, body: bytes, content_type: str) -> None:
        super().__init__(status)
        self.status, self.body, self.content_type = status, body, content_type


def _fault_body(code: str, text: str) -> bytes:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<soap:Envelope xmlns:soap="{SOAP11_NS}"><soap:Body><soap:Fault>'
        f"<faultcode>{code}</faultcode><faultstring>{text}</faultstring>"
        "</soap:Fault></soap:Body></soap:Envelope>"
    ).encode()


def _client_fault(text: str, status: int = 500) -> _RejectError:
    return _RejectError(status, _fault_body("soap:Client", text), RESPONSE_CONTENT_TYPE)


def _parse(body: bytes) -> etree._Element:
    """Parse a request like the service would: no DTDs or entities, large text allowed."""
    if b"<!DOCTYPE" in body:
        raise _client_fault("DTDs are not allowed")
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True
    )
    try:
        return etree.fromstring(body, parser)
    except etree.XMLSyntaxError as exc:
        raise _client_fault(f"malformed XML: {exc.msg}") from None


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

    def finish(self) -> None:
        super().finish()
        self.server.sim._connection_closed(self.connection)

    # Every method arrives here, so that each gets the contract's answer.
    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def _handle(self) -> None:
        sim = self.server.sim
        started = time.perf_counter()
        request_id = self.headers.get("x-ch-request-id")
        path = self.path.split("?", 1)[0]
        try:
            if path == TOKEN_PATH:
                self._token_endpoint()
                return
            if path != SERVICE_PATH or self.command != "POST":
                # Recorded too: a test may want to see what its code sent to the wrong place.
                sim._record(ReceivedRequest(self.command, path, dict(self.headers), self._drain()))
                if path != SERVICE_PATH:
                    raise _RejectError(404, b"not found\n", "text/plain")
                raise _RejectError(405, b"method not allowed\n", "text/plain")
            if sim._take_fault(None, before_read=True) is not None:
                sim._record(ReceivedRequest(self.command, path, dict(self.headers), b""))
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            body = self._read_body()
            operation = _operation_of(body)
            sim._record(ReceivedRequest(self.command, path, dict(self.headers), body, operation))
            fault = sim._take_fault(operation, before_read=False)
            if fault is not None and fault.kind == "close_after_read":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault is not None and fault.kind == "delay":
                time.sleep(fault.delay)
            status, payload = self._service(body, fault)
            content_type = RESPONSE_CONTENT_TYPE
        except _RejectError as reject:
            status, payload, content_type = reject.status, reject.body, reject.content_type
            fault = None
        headers = {
            "Content-Type": content_type,
            "x-ch-activity-id": str(uuid.uuid4()),
            "x-ch-execution-time": str(int((time.perf_counter() - started) * 1000)),
        }
        if request_id is not None:
            headers["x-ch-request-id"] = request_id
        drip = fault.delay if fault is not None and fault.kind == "drip" else 0.0
        reset = fault is not None and fault.kind == "reset"
        self._send(status, headers, payload, drip=drip, reset=reset)

    def _drain(self) -> bytes:
        """Read the body of a request that is refused anyway (keep-alive needs it read)."""
        length = self._content_length()
        return self.rfile.read(min(length, MAX_BODY)) if length else b""

    def _content_length(self) -> int:
        try:
            return max(0, int(self.headers.get("Content-Length", "0")))
        except ValueError:
            raise _RejectError(400, b"bad Content-Length\n", "text/plain") from None

    def _read_body(self) -> bytes:
        length = self._content_length()
        if length > MAX_BODY:
            self.close_connection = True
            raise _RejectError(413, b"request too large\n", "text/plain")
        return self.rfile.read(length) if length else b""

    def _service(self, body: bytes, fault: Fault | None) -> tuple[int, bytes]:
        sim = self.server.sim
        content_type = self.headers.get("Content-Type", "")
        if content_type.split(";", 1)[0].strip().lower() != "application/soap+xml":
            raise _RejectError(415, b"unsupported media type\n", "text/plain")
        if self.headers.get("SOAPAction") is None:
            raise _client_fault("the SOAPAction header is missing")
        root = _parse(body)
        try:
            payload = soap_payload(root)
        except ReadError as exc:
            raise _client_fault(exc.message) from None
        if root.tag != f"{{{SOAP11_NS}}}Envelope":
            raise _client_fault("only SOAP 1.1 envelopes are accepted")
        op_name = etree.QName(payload).localname
        if etree.QName(payload).namespace != NAMESPACE or op_name not in OPERATIONS:
            raise _client_fault(f"unknown operation {etree.QName(payload).text}")
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
            return fault.status, _fault_body(fault.code, fault.text)
        error = WSError(0, "")
        if fault is not None and fault.kind == "wserror":
            error = WSError(int(fault.code), fault.text)
        if isinstance(request, SendFax):
            ok = error.error_code == 0
            job_ids: tuple[str, ...] = ()
            if ok:
                job = sim._new_job(request, auth_mode, self.headers.get("x-ch-request-id"))
                job_ids = job.job_ids
            response: Any = FaxSendResponse(
                return_=ok,
                fax_job_ids=FaxJobIds(item=tuple(FaxJobId(j) for j in job_ids)),
                ttfp=sim.ttfp if ok else 0,
                ws_error=error,
            )
        else:
            assert isinstance(request, GetFaxBroadcastReport)
            if error.error_code == 0 and not sim._known_job(request.user_id, request.job_id):
                error = WSError(-5019, "Invalid Job ID")
            response = GetFaxBroadcastReportResponse(return_=error.error_code == 0, ws_error=error)
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
        if self.command != "POST":
            self._drain()
            self._json(405, {"error": "invalid_request"})
            return
        if not self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            self._drain()
            self._json(400, {"error": "invalid_request"})
            return
        form = {k: v[0] for k, v in parse_qs(self._read_body().decode("utf-8", "replace")).items()}
        client_id, client_secret = form.get("client_id", ""), form.get("client_secret", "")
        basic = self.headers.get("Authorization", "")
        if basic.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(basic[6:], validate=True).decode()
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
            # SO_LINGER with a zero timeout: close() sends a TCP reset, not a FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if drip > 0 and body:
            pause = drip / len(body)
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(pause)
            return
        self.wfile.write(body)


def _operation_of(body: bytes) -> str | None:
    """The operation name, read cheaply from the start of the Body, for records and faults."""
    marker = body.find(b"Body>")
    if marker < 0:
        return None
    head = body[marker + 5 : marker + 200]
    for name in OPERATIONS:
        for candidate in (b"<" + name.encode() + b" ", b"<" + name.encode() + b">"):
            if head.lstrip().startswith(candidate):
                return name
        if b":" + name.encode() in head[:100]:
            return name
    return None
