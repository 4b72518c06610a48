"""Shared fixtures: the two faces of the client, response documents, a raw-socket capture
server, request helpers, and a tripwire that shows whether a parser opened an external
resource."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest
import responses

from faxws.journal import JournalStore
from scripted import Conn, ScriptedServer

GOLDEN = Path(__file__).parent / "golden"
BASE = "https://fax.example.com"
URL = f"{BASE}/fax/v5"
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"


T = TypeVar("T")


# -- the two faces: FaxClient and AsyncFaxClient ---------------------------------------------


class BlockingClient:
    """An AsyncFaxClient driven through plain calls: each runs to its end on the face's event
    loop (from any one thread at a time), so shared tests call both clients alike."""

    def __init__(self, client: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.client, name)
        if not inspect.iscoroutinefunction(found):
            return found

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(found(*args, **kwargs))

        return blocking

    def __repr__(self) -> str:
        return repr(self.client)


class Face:
    """One way of calling the service: ``sync`` (FaxClient) or ``async`` (AsyncFaxClient,
    with its own event loop for the test). Clients made here are closed with the face."""

    def __init__(self, name: str) -> None:
        assert name in ("sync", "async")
        self.name = name
        self.loop = asyncio.new_event_loop() if name == "async" else None
        self._clients: list[Any] = []
        self._providers: list[Any] = []

    @property
    def is_async(self) -> bool:
        return self.loop is not None

    def client(self, base_url: str, **kwargs: Any) -> Any:
        """A FaxClient, or an AsyncFaxClient seen through :class:`BlockingClient`."""
        from faxws import AsyncFaxClient, FaxClient

        if self.loop is None:
            client: Any = FaxClient(base_url, **kwargs)
        else:
            client = BlockingClient(AsyncFaxClient(base_url, **kwargs), self.loop)
        self._clients.append(client)
        return client

    def provider(self, *args: Any, **kwargs: Any) -> Any:
        """The face's client credentials provider (AsyncClientCredentials for async)."""
        from faxws.oauth import AsyncClientCredentials, ClientCredentials

        cls = AsyncClientCredentials if self.is_async else ClientCredentials
        provider = cls(*args, **kwargs)
        self._providers.append(provider)
        return provider

    def fetch_token(self, provider: Any) -> str:
        """One token from the provider, as the face's client would ask for it."""
        if self.loop is None:
            token: str = provider()
            return token
        return self.run(provider())

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self.loop is not None, "only the async face has an event loop"
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        try:
            for client in self._clients:
                client.close()
            for provider in self._providers:
                provider.close()
        finally:
            if self.loop is not None:
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
                self.loop.run_until_complete(self.loop.shutdown_default_executor())
                self.loop.close()


FACES = ("sync", "async")


@pytest.fixture(params=FACES)
def face(request: pytest.FixtureRequest) -> Iterator[Face]:
    """Each client in turn: a test using it runs once for FaxClient, once for AsyncFaxClient."""
    made = Face(request.param)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def make_face() -> Iterator[Callable[[str], Face]]:
    """Faces by name (``sync``, ``async``), closed after the test."""
    made: list[Face] = []

    def make(name: str) -> Face:
        made.append(Face(name))
        return made[-1]

    try:
        yield make
    finally:
        for one in made:
            one.close()


@dataclass
class Request:
    """A raw HTTP request, split up: header names lower-cased (each must be there once)."""

    line: bytes
    headers: dict[str, str]
    body: bytes
    names: list[bytes]


def parse_request(raw: bytes) -> Request:
    head, _, body = raw.partition(b"\r\n\r\n")
    line, *lines = head.split(b"\r\n")
    names = [item.split(b":", 1)[0].lower() for item in lines]
    headers = {}
    for item in lines:
        name, _, value = item.partition(b":")
        headers[name.decode().lower()] = value.strip().decode()
    return Request(line, headers, body, names)


def envelope(payload: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<SOAP-ENV:Envelope xmlns:SOAP-ENV="{SOAP}"><SOAP-ENV:Body>{payload}'
        "</SOAP-ENV:Body></SOAP-ENV:Envelope>"
    ).encode()


def send_response(
    job_ids: list[str], ttfp: int = 45, ok: bool = True, code: int = 0, text: str = ""
) -> bytes:
    """A FaxSendResponse, written with a namespace prefix as gSOAP does."""
    ids = "".join(f"<f:item><f:JobId>{j}</f:JobId></f:item>" for j in job_ids)
    return envelope(
        f'<f:FaxSendResponse xmlns:f="urn:FaxWS"><f:return>{str(ok).lower()}</f:return>'
        f"<f:FaxJobIds>{ids}</f:FaxJobIds><f:TTFP>{ttfp}</f:TTFP>"
        f"<f:WSError><f:ErrorCode>{code}</f:ErrorCode><f:ErrorString>{text}</f:ErrorString>"
        "</f:WSError></f:FaxSendResponse>"
    )


def report_response(ok: bool = True, code: int = 0, text: str = "") -> bytes:
    return envelope(
        f'<GetFaxBroadcastReportResponse xmlns="urn:FaxWS"><return>{str(ok).lower()}</return>'
        f"<WSError><ErrorCode>{code}</ErrorCode><ErrorString>{text}</ErrorString></WSError>"
        "</GetFaxBroadcastReportResponse>"
    )


def fault_response(code: str = "SOAP-ENV:Client", text: str = "bad request") -> bytes:
    return envelope(
        f"<SOAP-ENV:Fault><faultcode>{code}</faultcode><faultstring>{text}</faultstring>"
        "</SOAP-ENV:Fault>"
    )


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    """requests mocked: a test that expects no request asserts ``len(mocked.calls) == 0``."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rs:
        yield rs


@dataclass
class Captured:
    """What a capture server received: whole raw HTTP requests, in order."""

    requests: list[bytes] = field(default_factory=list)
    connections: int = 0


Reply = Callable[[bytes], bytes | None]

#: Longest a handler waits for one request to arrive whole, or for one answer to be taken.
IO_TIMEOUT = 30.0
#: Longest close() waits for a thread: past it the thread is stuck in ``reply`` itself.
JOIN_TIMEOUT = 30.0


def _read_request(conn: socket.socket, timeout: float = IO_TIMEOUT) -> bytes:
    """One whole request (head and Content-Length body), b"" on a clean close before it.

    The whole request must arrive within ``timeout`` seconds, however slowly its bytes drip:
    each receive waits only for what is left of that time. Raises TimeoutError past it.
    """
    deadline = time.monotonic() + timeout

    def receive(size: int) -> bytes:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        conn.settimeout(left)
        return conn.recv(size)

    data = b""
    while b"\r\n\r\n" not in data:
        chunk = receive(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = receive(1 << 20)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def http_reply(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/xml; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


class CaptureServer:
    """An HTTP/1.1 server on 127.0.0.1 that records the raw bytes of each request.

    ``reply`` maps the raw request to the raw response; ``b""`` means: close the connection
    without answering; None: answer nothing and keep the connection open until close().

    One thread accepts, one thread per connection handles it. close() never closes a socket a
    running thread may still use: it wakes the accept loop through a socket pair and joins it,
    shuts the open connections down so their handlers' reads return, joins every handler, and
    only then closes the listening socket. Each handler closes its own connection.
    """

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.captured = Captured()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._open: set[socket.socket] = set()
        self._handlers: list[threading.Thread] = []
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.setblocking(False)
        self._wake_read, self._wake_write = socket.socketpair()
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # Daemon threads only so that a server nobody closes cannot hang the interpreter's exit.
        self._thread = threading.Thread(
            target=self._serve, name=f"capture-{self.port}", daemon=True
        )
        self._thread.start()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._wake_read in ready:
                    return
                try:
                    conn, _ = self._listener.accept()
                except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                    continue  # the peer gave up before it was accepted
                with self._lock:
                    if self._closing.is_set():
                        conn.close()
                        return
                    self.captured.connections += 1
                    self._open.add(conn)
                    handler = threading.Thread(
                        target=self._handle,
                        args=(conn,),
                        name=f"capture-{self.port}-conn",
                        daemon=True,
                    )
                    self._handlers.append(handler)
                handler.start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            while not self._closing.is_set():
                raw = _read_request(conn)
                if not raw:
                    break
                self.captured.requests.append(raw)
                answer = self.reply(raw)
                if answer is None:
                    self._closing.wait()  # held open until close(); nothing to read or send
                    break
                if not answer:
                    break  # close without answering
                conn.settimeout(IO_TIMEOUT)
                conn.sendall(answer)
        except OSError:
            pass  # the peer went away, close() shut the connection down, or a time-out
        finally:
            with self._lock:
                self._open.discard(conn)
            conn.close()

    def close(self) -> None:
        with self._lock:
            if self._closing.is_set():
                return
            self._closing.set()
        self._wake_write.send(b"x")
        self._thread.join(JOIN_TIMEOUT)
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):  # the peer may have gone already
                    conn.shutdown(socket.SHUT_RDWR)
            handlers = list(self._handlers)
        for handler in handlers:
            handler.join(JOIN_TIMEOUT)
        stuck = [t.name for t in (self._thread, *handlers) if t.is_alive()]
        if stuck:  # their sockets stay open: closing them under a running thread is the race
            raise RuntimeError(f"capture server threads still running: {stuck}")
        self._listener.close()
        self._wake_read.close()
        self._wake_write.close()


@pytest.fixture
def capture_server() -> Iterator[Callable[[Reply], CaptureServer]]:
    """Starts capture servers; each is closed after the test, even when another's close fails."""
    with contextlib.ExitStack() as stack:

        def start(reply: Reply) -> CaptureServer:
            server = CaptureServer(reply)
            stack.callback(server.close)
            return server

        yield start


class Tripwire:
    """A named pipe that records whether anything opened it: the proof that a parser read no
    external resource, whether or not the resource's content would have changed the result.

    Opening a FIFO for reading blocks until a writer opens it, so a parser that opens it has
    been served (and counted) before its parse can end: no waiting or polling is needed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opened = False
        self._done = False
        os.mkfifo(path)
        self._thread = threading.Thread(target=self._serve, name="tripwire")
        self._thread.start()

    def _serve(self) -> None:
        content = b'<!ENTITY e "TRIPPED">'
        while True:
            fd = os.open(self.path, os.O_WRONLY)  # returns once a reader has it open
            try:
                if self._done:
                    return
                self.opened = True
                os.write(fd, content)
                content = b""  # while that reader stays open, opens return at once: no content
            except OSError:
                pass  # the reader went away
            finally:
                os.close(fd)

    def close(self) -> None:
        self._done = True
        # Holding a read end open lets the writer's pending open return, so it sees _done.
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self._thread.join(30)
        finally:
            os.close(fd)
        assert not self._thread.is_alive()


@pytest.fixture
def tripwire(tmp_path: Path) -> Iterator[Tripwire]:
    """A named pipe at ``tripwire.path``: point a DOCTYPE or entity at ``tripwire.path.as_uri()``
    and assert ``tripwire.opened is False`` after ``tripwire.close()``."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("named pipes are POSIX")
    wire = Tripwire(tmp_path / "external.dtd")
    try:
        yield wire
    finally:
        wire.close()


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port where connections are refused for the whole test: the socket stays
    bound (so no other server can take the port) but never listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    """Starts scripted servers (tests/scripted.py); each is closed after the test, even when
    another's close fails."""
    with contextlib.ExitStack() as stack:

        def start(script: Callable[[Conn], None], **kwargs: Any) -> ScriptedServer:
            server = ScriptedServer(script, **kwargs)
            stack.callback(server.close)
            return server

        yield start


#: One recipient as zeep takes it (a dict of the element's fields).
ZEEP_RECIPIENT = {
    "RecipFaxNumber": "+1 555 0100",
    "RecipCompany": "",
    "RecipTitle": "",
    "RecipName": "",
    "RecipSecureCSID": "",
}


# -- the send journal's stores under one suite ------------------------------------------------
# ``store`` is each store in turn (SQLite in a fresh file, PostgreSQL in a fresh schema of a
# server the tests start: tests/journal/postgres_server.py), on a test clock. Here, not in a
# conftest of tests/journal: test folders share the module name "conftest".

JOURNAL_STORES = ["sqlite", "postgres"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


#: Opens one more handle on the store under test (another worker of the same journal).
OpenStore = Callable[..., JournalStore]


@pytest.fixture(params=JOURNAL_STORES)
def open_store(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[OpenStore]:
    """Opens handles on one fresh journal of the store ``request.param``; all are closed
    after the test. Keyword arguments go to the store's constructor (``clock`` by default
    the test's)."""
    opened: list[JournalStore] = []
    if request.param == "sqlite":
        from faxws.journal import SqliteJournal

        def make(**kwargs: object) -> JournalStore:
            kwargs.setdefault("clock", clock)
            store = SqliteJournal(tmp_path / "journal.db", **kwargs)  # type: ignore[arg-type]
            opened.append(store)
            return store

    else:
        from postgres_server import fresh_database

        dsn = fresh_database(request)

        def make(**kwargs: object) -> JournalStore:
            from faxws.journal._postgres import PostgresJournal

            kwargs.setdefault("clock", clock)
            store = PostgresJournal(dsn, **kwargs)  # type: ignore[arg-type]
            opened.append(store)
            return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: OpenStore) -> JournalStore:
    return open_store()
