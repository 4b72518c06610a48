"""faxws's own asynchronous transport, over aiohttp: one pooled session per client, bound to
the event loop it is first used in. faxws's own sockets record whether any byte of a request
was written (:class:`_RecordingSocket`, :class:`Sent`); where a loop does not write through
them (uvloop, the Windows proactor), every attempt that got a connection counts as written:
never a wrong "not delivered". Each attempt has the sync client's time limits, kept by one
timer per connection; the protocol (:class:`_Handler`) bounds interim answers and spoils a
connection on which bytes arrive that no request written there asked for.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import os
import socket
import ssl
import sys
import time
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

try:
    import aiohttp
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "AsyncFaxClient needs aiohttp: install the async extra (pip install 'faxws[async]')"
    ) from exc

from aiohttp.client_proto import ResponseHandler
from requests.utils import DEFAULT_CA_BUNDLE_PATH, get_auth_from_url, select_proxy
from urllib3.util.wait import wait_for_read

from faxws._http.options import ClientOptions
from faxws._http.shared import (
    HEADERS,
    MAX_INTERIM_RESPONSES,
    BodyLimit,
    Failures,
    Request,
    Response,
    client_closed,
    early_success,
    endpoint,
    forks,
    reset_on_close,
    transport_error,
    trust_of,
)
from faxws.errors import BadInputError, DocumentError, FaxWSError, excerpt

__all__ = ["AsyncBody", "AsyncHttpTransport", "Sent", "counts_at_socket"]

#: A request body: bytes, or chunks that start afresh each time they are iterated.
AsyncBody = bytes | AsyncIterable[bytes]


# -- the fact: was any byte of the request written? -----------------------------------------


class Sent:
    """One attempt on the wire: whether any byte of the request was written, and the time
    limit of its phase (``pool``, ``connect``, ``send``, ``head``, ``body``, ``done``). A limit
    that passes records the phase in ``expired`` and aborts the connection.

    One timer serves every phase (a later deadline is only recorded; a timer firing early
    sets itself again), once connected the connection's, kept from attempt to attempt: about
    one timer per read time-out on a connection in steady use, not one per call."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        timeout: tuple[float, float],
        used: weakref.WeakSet[asyncio.Transport],
    ) -> None:
        self._loop = loop
        self._used = used
        self._connect_timeout, self._read_timeout = timeout
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._phase = "pool"
        self._response: aiohttp.ClientResponse | None = None
        self._sockets: list[socket.socket] = []
        self.precise = False
        self.streamed = False
        self.armed = False
        self.written = False
        self.handed = 0  # bytes of a streamed body given to aiohttp to write
        self.expired: str | None = None
        self.closed = False  # ended by the client's close()
        self.document_error: DocumentError | None = None
        self.transport: asyncio.Transport | None = None
        self.protocol: Any = None

    # -- phases --

    def connecting(self, sock: socket.socket) -> None:
        """A new connection's set-up (TCP, CONNECT, TLS) has the connect time-out as a whole."""
        self._sockets.append(sock)
        if self._phase == "pool":
            self._phase = "connect"
            self._limit(self._connect_timeout)

    def sending(self, transport: asyncio.Transport, protocol: Any) -> None:
        # Bytes written from here on are the request's (not a handshake's or CONNECT's).
        self._phase = "send"
        self._limit(None)
        if self._handle is not None:  # the set-up's timer: the connection's takes over
            self._handle.cancel()
            self._handle = None
        self.transport = transport
        if self._sockets:  # a new connection (a reused one is known already)
            self._used.add(transport)
        self.protocol = protocol
        self.armed = True
        if not self.precise:
            self.written = True  # cannot count: say what is safe

    def writing(self) -> None:
        if self._phase == "send":
            self._limit(self._read_timeout)

    def wrote(self) -> None:
        if self._phase == "send":
            self._limit(None)

    def body_done(self) -> None:
        if self._phase == "send":
            self._phase = "head"
            self._limit(self._read_timeout)

    def unfinished(self, size: int) -> bool:
        """Whether part of the request's body was not yet handed to the connection, or is
        still in its buffer: nothing can answer that request yet."""
        if self.streamed and self.handed < size:
            return True
        transport = self.transport
        return transport is not None and transport.get_write_buffer_size() > 0

    def head_done(self, response: aiohttp.ClientResponse) -> None:
        self._phase = "body"
        self._response = response
        self._limit(self._read_timeout)

    def reset_for_retry(self) -> None:
        """A stale pooled connection was dropped before anything was written to it."""
        self._phase = "pool"
        self._limit(None)
        self.armed = False
        self.written = False
        self.handed = 0
        self.transport = None
        self._let_go()
        self.protocol = None  # the next connection's times are its own

    # -- the time limit --

    def _limit(self, seconds: float | None) -> None:
        if seconds is None:
            self._deadline = 0.0
            return
        self._deadline = self._loop.time() + seconds
        self._arm()

    def _arm(self) -> None:
        protocol = self.protocol
        if isinstance(protocol, _Handler) and protocol.transport is not None:
            # The connection's timer, shared with later attempts (while it has a connection).
            protocol.watched = self
            handle = protocol.watch
            if handle is None or handle.when() > self._deadline:
                if handle is not None:
                    handle.cancel()
                protocol.watch = self._loop.call_at(self._deadline, protocol.watch_fired)
            return
        handle = self._handle
        if handle is None or handle.when() > self._deadline:
            if handle is not None:
                handle.cancel()
            self._handle = self._loop.call_at(self._deadline, self._own_fired)

    def _own_fired(self) -> None:
        self._handle = None
        self._expire()

    def _expire(self) -> None:
        deadline = self._deadline
        if not deadline or self._phase in ("pool", "done"):
            return
        phase = self._phase
        if phase == "body" and self._response is not None and self._response.connection is None:
            # The whole answer is in: the pooled connection (and timer) may be another's.
            return
        if self._loop.time() < deadline:  # moved later since the timer was set
            self._arm()
            return
        self.expired = phase
        self._end(phase, "timed out")

    def client_closed(self) -> None:
        """The client is being closed: the attempt ends now, whatever its phase (one that
        waits for a connection from the pool is woken by the pool's close)."""
        phase = self._phase
        if phase == "done":
            return
        self.closed = True
        self._end(phase, "the client was closed")

    def _end(self, phase: str, why: str) -> None:
        if self.transport is not None:
            self.transport.abort()
            # Whatever waits for the answer wakes now, even if nothing was left to abort.
            if phase == "body" and self._response is not None:
                _fail_body(self._response.content, why)
            elif isinstance(self.protocol, _Handler) and self.protocol.exception() is None:
                self.protocol.set_exception(TimeoutError(why))
            return
        for sock in self._sockets:  # still connecting: its reads and writes end at once
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def lost_connection(self) -> None:
        """The connection and its timer are gone: the attempt's deadline gets its own."""
        if self._deadline and self._phase not in ("pool", "done"):
            self._arm()

    def close(self, *, failed: bool = False) -> None:
        """No timer outlives the attempt, and a failed one's connection is ended (aiohttp may
        leave a lost TLS connection unclosed; no failed connection may be used again)."""
        self._phase = "done"
        self._deadline = 0.0
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._let_go()
        if failed and self.transport is not None:
            self.transport.abort()

    def _let_go(self) -> None:
        """The connection no longer times this attempt, and what arrives on it from now on
        answers no request of this one."""
        protocol = self.protocol
        if isinstance(protocol, _Handler):
            if protocol.watched is self:
                protocol.watched = None
            if protocol.owner is self:
                protocol.owner = None


_sent: ContextVar[Sent | None] = ContextVar("faxws_sent", default=None)


class _RecordingSocket(socket.socket):
    """Marks the current attempt when bytes of its request are written. asyncio's transports
    write through ``send`` (and ``sendmsg`` from 3.12), in the writing task's context or in a
    callback that copied it; a TLS transport writes its records here too."""

    __slots__ = ()

    def send(self, data: Any, flags: int = 0, /) -> int:
        n = _send(self, data, flags)
        if n and (sent := _sent.get()) is not None and sent.armed:
            sent.written = True
        return n

    def sendmsg(self, *args: Any) -> int:
        n: int = super().sendmsg(*args)
        if n and (sent := _sent.get()) is not None and sent.armed:
            sent.written = True
        return n


_send = socket.socket.send


def counts_at_socket(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` writes through the socket objects (asyncio's selector loops do; uvloop
    and the Windows proactor loop do not)."""
    return isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop)


def _new_socket(addr_info: Any) -> socket.socket:
    family, type_, proto = addr_info[:3]
    sock = _RecordingSocket(family, type_, proto)
    sent = _sent.get()
    if sent is not None:
        sent.connecting(sock)
    return sock


# -- aiohttp's request, protocol and connector, each with one addition -----------------------


class _StaleConnectionError(Exception):
    """A pooled connection the server closed (or wrote to) while it was idle."""


def _has_input(transport: asyncio.BaseTransport) -> bool:
    """Whether an idle connection has anything to read (or is closed): only a close or a
    broken server can have put it there, so the request goes on a new connection."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        return wait_for_read(sock, timeout=0.0)
    except (OSError, ValueError):
        return True


class _Request(aiohttp.ClientRequest):
    """Starts the request's part of the attempt, on a connection that is set up."""

    async def send(self, conn: Any) -> aiohttp.ClientResponse:
        sent = _sent.get()
        if sent is not None:
            protocol = conn.protocol
            transport = conn.transport
            if (
                transport is None
                or protocol.spoiled
                or protocol.should_close  # an answer already waits: no request asked for it
                or (protocol.answered and _has_input(transport))
            ):
                raise _StaleConnectionError
            if not protocol.answered and _has_input(transport):
                # A new connection with input: two passes of the loop read it in (a TLS
                # server's session tickets are nothing; an answer or a close spoils it).
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                if transport.is_closing() or protocol.spoiled or protocol.should_close:
                    raise _StaleConnectionError
            protocol.interim = 0
            protocol.owner = sent  # from here, what arrives before the first byte is stale
            protocol.setup = None
            sent.sending(transport, protocol)
            response = await super().send(conn)
            if not sent.streamed:
                sent.body_done()  # bytes are handed to the connection at once
            return response
        return await super().send(conn)


def _cancelled_by_caller() -> bool:
    """Whether the current task was asked to cancel (Python 3.11 and later can tell): aiohttp
    also cancels what waits for a pooled connection when its pool is closed."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and bool(cancelling())


def _fail_body(payload: Any, why: str) -> None:
    """Ends the read of an answer's body that has not ended, with an error."""
    if (
        isinstance(payload, aiohttp.StreamReader)
        and not payload.is_eof()
        and payload.exception() is None
    ):
        payload.set_exception(aiohttp.ClientPayloadError(why))


class _TooManyInterimError(Exception):
    """More interim answers than any server sends on purpose."""


class _Handler(ResponseHandler):
    """aiohttp's protocol, which reads past every interim (1xx) answer: counted here, so that
    endless fast ones cannot hold a call (the head's time limit bounds slow ones)."""

    interim = 0
    answered = False  # has carried a whole answer (and may sit idle in the pool)
    #: Bytes arrived that no request written here asked for (while idle, or before the first
    #: byte of the request): no request goes on this connection again.
    spoiled = False
    owner: Sent | None = None  # the attempt whose request this connection carries
    watch: asyncio.TimerHandle | None = None  # the timer of the attempts on this connection
    watched: Sent | None = None  # the attempt it times, while there is one

    def watch_fired(self) -> None:
        self.watch = None
        sent = self.watched
        if sent is not None:
            sent._expire()  # expires it, or sets the timer again for its later deadline

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        # The attempt setting the connection up, which expects a proxy's answer to CONNECT.
        self.setup = _sent.get()

    def data_received(self, data: bytes) -> None:
        owner = self.owner
        if owner is None:
            setup = self.setup
            stale = self.answered or setup is None or setup._phase != "connect"
        else:
            stale = not owner.written
        if data and stale:
            # A stale or unsolicited answer, a 408 before an idle close, garbage: nothing
            # written here asked for it, so nothing of it may be read as an answer.
            self.spoiled = True
            if self.transport is not None:
                self.transport.abort()
            return
        super().data_received(data)

    def set_response_params(self, **kwargs: Any) -> None:
        # The parser of the last answer goes; one that has started reading another answer
        # after it (bytes that came with the end of the last one) spoils the connection.
        parser = self._parser
        if parser is not None and self.answered and not self.spoiled:
            try:
                self.spoiled = parser.feed_eof() is not None
            except Exception:
                self.spoiled = True
        super().set_response_params(**kwargs)

    def set_exception(self, exc: BaseException, *cause: BaseException) -> None:
        # aiohttp reports a malformed answer (a bad chunk size or trailer line) on the
        # protocol, not on the body being read: the body's reader must hear of it too.
        payload = self._payload
        super().set_exception(exc, *cause)
        _fail_body(payload, "the answer is malformed")

    def connection_lost(self, exc: BaseException | None) -> None:
        payload = self._payload
        watched = self.watched
        # No timer outlives its connection (and keeps it in memory); an attempt still under
        # way takes its deadline over.
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
        self.watched = None
        super().connection_lost(exc)
        _fail_body(payload, "the connection closed before the answer was complete")
        if watched is not None:
            watched.lost_connection()

    def feed_data(self, data: Any, *args: Any) -> None:
        if self.interim > MAX_INTERIM_RESPONSES:
            return  # the error is set: nothing after it may be read as the answer
        code = data[0].code
        if 100 <= code < 200 and code != 101:
            self.interim += 1
            if self.interim > MAX_INTERIM_RESPONSES:
                self.set_exception(
                    _TooManyInterimError(f"more than {MAX_INTERIM_RESPONSES} interim responses")
                )
                return
        super().feed_data(data, *args)


class _Connector(aiohttp.TCPConnector):
    """aiohttp's connector, making its connections with :class:`_Handler`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._factory = cast(
            "functools.partial[ResponseHandler]", functools.partial(_Handler, loop=self._loop)
        )


# -- one table: aiohttp's failures -> what to say ---------------------------------------------


def _says(e: BaseException, redact: Callable[[str], str]) -> str | None:
    # Never aiohttp's own text, which may quote what the server sent.
    if isinstance(e, aiohttp.ClientHttpProxyError):
        return f"the proxy refused the tunnel (HTTP {e.status})"
    if isinstance(e, OSError) and e.errno is not None and e.errno < 0:
        # aiohttp's resolver errors carry getaddrinfo's (negative) codes.
        return f"cannot resolve the host name ({e.strerror or e.errno})"
    if isinstance(e, OSError) and e.errno:
        return os.strerror(e.errno)
    if isinstance(e, aiohttp.ServerDisconnectedError):
        return "the server closed the connection without answering"
    if isinstance(e, aiohttp.ClientPayloadError):
        return "the answer ended before its announced length"
    if isinstance(e, aiohttp.ClientResponseError):
        # Masked before it is cut: a cut secret would no longer be found.
        return f"malformed answer ({excerpt(redact(str(e.message)), 80)})"
    if isinstance(e, _TooManyInterimError):
        return f"malformed answer ({e})"
    if isinstance(e, _StaleConnectionError):
        return "every pooled connection had been closed by the server"
    if isinstance(e, (aiohttp.ServerTimeoutError, asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    return None


_FAILURES = Failures(
    (
        (aiohttp.ServerTimeoutError, "timeout"),
        (asyncio.TimeoutError, "timeout"),
        (TimeoutError, "timeout"),
        (aiohttp.ClientHttpProxyError, "proxy"),
        (aiohttp.ClientProxyConnectionError, "proxy"),
        (aiohttp.ClientConnectorCertificateError, "tls"),
        (aiohttp.ClientSSLError, "tls"),
        (ssl.SSLError, "tls"),
        (aiohttp.ClientPayloadError, "protocol"),
        (aiohttp.ClientResponseError, "protocol"),
        (_TooManyInterimError, "protocol"),
        (_StaleConnectionError, "connection"),
        (aiohttp.ClientConnectionError, "connection"),
        (OSError, "connection"),
        (aiohttp.ClientError, "protocol"),
    ),
    _says,
    wraps=("certificate_error", "os_error", "_os_error"),
    # aiohttp's TLS errors subclass ssl's without their attributes; ssl's own carry them.
    foreign=(aiohttp.ClientError,),
)


# -- arguments --------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _ssl_context(verify: bool | str) -> ssl.SSLContext | bool:
    """The sync client's TLS settings: the bundle given, else requests' (certifi's)."""
    if verify is False:
        return False
    return trust_of(DEFAULT_CA_BUNDLE_PATH if verify is True else verify)


def _proxy_parts(proxy: str | None) -> tuple[str | None, str | None]:
    """The proxy's URL without credentials, and its Proxy-Authorization value, as requests
    makes them for the sync client."""
    if proxy is None or "@" not in urlsplit(proxy).netloc:
        return proxy, None
    parts = urlsplit(proxy)
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    user, password = get_auth_from_url(proxy)  # percent-decoded: either may hold a colon
    if not user:
        return bare, None  # requests sends credentials only with a user name and a password
    token = base64.b64encode(f"{user}:{password}".encode("latin-1", "replace")).decode()
    return bare, f"Basic {token}"


# -- the transport ----------------------------------------------------------------------------

#: Sessions a forked child inherited: never used, closed or collected there.
_INHERITED: list[aiohttp.ClientSession] = []


class AsyncHttpTransport:
    """faxws's own :class:`~faxws.transport.AsyncTransport`: POSTs to one URL with
    ``options``' time-outs, TLS verification, proxies and pool size, on one event loop."""

    def __init__(self, url: str, options: ClientOptions, redact: Callable[[str], str]) -> None:
        self.url = url
        self.timeout = options.timeout
        self.max_response_bytes = options.max_response_bytes
        self._max_connections = options.max_connections or 16
        self._redact = redact
        self._verify = options.verify
        proxies = options.proxies
        parts = urlsplit(url)
        self._where = endpoint(url)
        chosen = select_proxy(url, proxies)
        self._proxy, proxy_authorization = _proxy_parts(chosen)
        if (
            self._proxy is not None
            and self._proxy.startswith("https:")
            and parts.scheme == "https"
            and sys.version_info < (3, 11)
        ):
            key = next(k for k, v in proxies.items() if v == chosen)
            raise BadInputError(
                f"proxies[{key!r}]",
                "an https:// proxy for an https service needs TLS inside TLS, which asyncio "
                "has from Python 3.11; use an http:// proxy URL (the tunnel is still TLS)",
            )
        # Keep-alive as requests asks it, for HTTP/1.0 servers and proxies.
        self._headers = {**HEADERS, "Connection": "keep-alive"}
        # A proxy's credentials go to the proxy only: in a tunnel's CONNECT, or with each
        # request it forwards over plain http.
        self._proxy_headers: dict[str, str] | None = None
        if proxy_authorization is not None:
            if parts.scheme == "https":
                self._proxy_headers = {"Proxy-Authorization": proxy_authorization}
            else:
                self._headers["Proxy-Authorization"] = proxy_authorization
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._forks = forks()
        self._precise = False
        # Every connection a request went out on, until it is gone: close() ends them all.
        self._used: weakref.WeakSet[asyncio.Transport] = weakref.WeakSet()
        # The attempts in flight: close() ends them, each with the error saying so.
        self._calls: set[Sent] = set()

    def _session_here(self, request_id: str) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        forked = self._forks != forks()
        if self._session is not None and self._loop is loop and not forked:
            return self._session
        if forked:
            # The parent's session, kept for ever: closing it (or collecting it) would take
            # the parent's sockets off the epoll set both processes share.
            if self._session is not None:
                _INHERITED.append(self._session)
            self._session, self._loop, self._forks = None, None, forks()
            self._used.clear()
        if self._session is not None:
            raise FaxWSError(
                "this AsyncFaxClient belongs to another event loop (the one it was first "
                "used in); make one client per event loop; nothing was sent",
                request_id=request_id,
                maybe_delivered=False,
            )
        connector = _Connector(
            limit=self._max_connections,
            limit_per_host=0,
            ssl=_ssl_context(self._verify),
            socket_factory=_new_socket,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            headers=self._headers,
            request_class=_Request,
            # Sent bounds the answer's head and body as wholes, not only silences.
            timeout=aiohttp.ClientTimeout(
                total=None, connect=None, sock_connect=self.timeout[0], sock_read=None
            ),
            max_line_size=65536,
            max_field_size=65536,
        )
        self._loop = loop
        self._precise = counts_at_socket(loop)
        return self._session

    async def aclose(self) -> None:
        session, self._session = self._session, None
        loop, self._loop = self._loop, None
        # A later session (a call made after close()) starts with its own sets.
        calls, self._calls = self._calls, set()
        used, self._used = self._used, weakref.WeakSet()
        if session is None:
            return
        if loop is not asyncio.get_running_loop():
            session.detach()  # its loop's connections cannot be closed from here
            return
        # Ended before the pool is closed: each then fails as closed by the client, not as
        # a lost connection or a cancellation (the pool cancels those waiting for a slot).
        for sent in list(calls):
            sent.client_closed()
        await session.close()
        # A TLS connection aiohttp closed earlier may still wait for the server's
        # close_notify: ended now, or it would outlive the client.
        ended = list(used)
        used.clear()
        for transport in ended:
            transport.abort()
        if ended:
            await asyncio.sleep(0)  # the aborts close their sockets in the next loop pass

    async def post_async(self, request: Request) -> Response:
        # request.written is set also when the call is cancelled.
        sent = Sent(asyncio.get_running_loop(), self.timeout, self._used)
        calls = self._calls
        calls.add(sent)
        try:
            return await self._post(request, sent)
        finally:
            calls.discard(sent)
            request.written = sent.written

    async def _post(self, request: Request, sent: Sent) -> Response:
        request_id, size = request.request_id, request.size
        body = cast(AsyncBody, request.body)
        session = self._session_here(request_id)
        start = time.perf_counter()
        headers = dict(request.headers)
        headers["Content-Length"] = str(size)
        token = _sent.set(sent)
        failed: FaxWSError | None = None
        try:
            response = await self._request(session, body, headers, sent)
        except asyncio.CancelledError:
            sent.close(failed=True)
            if not sent.closed or _cancelled_by_caller():
                raise
            failed = client_closed(request_id, written=sent.written)
        except Exception as exc:
            sent.close(failed=True)
            failed = self._failure(exc, sent, request_id)
        finally:
            _sent.reset(token)
        if failed is not None:
            # Raised outside the handler, not even chained as context: aiohttp's text may
            # quote what the server sent.
            keep = sent.document_error is not None and failed is sent.document_error
            raise failed from (failed.__cause__ if keep else None)
        try:
            if 200 <= response.status < 300 and sent.unfinished(size):
                raise early_success(request_id, self._where)
            sent.head_done(response)
            content = await self._read(response, request_id)
            sent.protocol.answered = True  # from now on, checked before it is reused
        except BaseException as exc:
            response.close()
            sent.close(failed=True)
            closed = sent.closed and isinstance(exc, asyncio.CancelledError)
            if closed and not _cancelled_by_caller():
                failed = client_closed(request_id, written=sent.written)
            elif isinstance(exc, FaxWSError) or not isinstance(exc, Exception):
                raise
            else:
                failed = self._failure(exc, sent, request_id)
        if failed is not None:
            raise failed from None  # outside the handler: no context quoting the server
        sent.close()
        response.release()
        return Response(response.status, response.headers, content, time.perf_counter() - start)

    async def _request(
        self,
        session: aiohttp.ClientSession,
        body: AsyncBody,
        headers: Mapping[str, str],
        sent: Sent,
    ) -> aiohttp.ClientResponse:
        sent.precise = self._precise
        sent.streamed = not isinstance(body, bytes)
        # A pooled connection spoiled while idle is replaced, as often as the pool may hold
        # such connections (nothing was written to it).
        tries = 0
        while True:
            data = body if isinstance(body, bytes) else self._chunks(body, sent)
            try:
                return await session.post(
                    self.url,
                    data=data,
                    headers=headers,
                    allow_redirects=False,
                    proxy=self._proxy,
                    proxy_headers=self._proxy_headers,
                )
            except Exception as exc:
                protocol = sent.protocol
                stale = isinstance(exc, _StaleConnectionError) or (
                    isinstance(protocol, _Handler) and protocol.spoiled and not sent.written
                )
                tries += 1
                if not stale or tries > self._max_connections:
                    raise
                sent.reset_for_retry()

    async def _chunks(self, body: AsyncIterable[bytes], sent: Sent) -> AsyncIterator[bytes]:
        """A streamed body as aiohttp writes it, each part within the read time-out; a document
        that fails resets the connection before the body is complete."""
        try:
            async for chunk in body:
                sent.writing()
                sent.handed += len(chunk)  # aiohttp writes it before anything else runs
                yield chunk
                sent.wrote()
        except DocumentError as exc:
            sent.document_error = exc
            if sent.transport is not None:
                reset_on_close(sent.transport.get_extra_info("socket"))
                sent.transport.abort()
            raise
        sent.body_done()

    def _failure(self, exc: BaseException, sent: Sent, request_id: str) -> FaxWSError:
        document = sent.document_error
        if document is not None:
            document.request_id = request_id
            document.maybe_delivered = sent.written
            return document
        if sent.closed:
            return client_closed(request_id, written=sent.written)
        if sent.expired is None:
            return _FAILURES.error(
                exc,
                written=sent.written,
                request_id=request_id,
                where=self._where,
                redact=self._redact,
            )
        cause = _EXPIRED[sent.expired].format(self.timeout[1])
        return transport_error(
            "timeout", cause, written=sent.written, request_id=request_id, where=self._where
        )

    async def _read(self, response: aiohttp.ClientResponse, request_id: str) -> bytes:
        limit = BodyLimit(self.max_response_bytes, response.status, request_id=request_id)
        length = limit.declared(response.headers.get("Content-Length", ""))
        if length is not None and "Content-Encoding" not in response.headers:
            return await response.read()  # exactly the declared length, at most the limit
        chunks: list[bytes] = []
        content = response.content
        while chunk := await content.readany():
            limit.add(chunk)
            chunks.append(chunk)
        return b"".join(chunks)


_EXPIRED = {
    "connect": "setting up the connection took longer than the connect time-out",
    "send": "the service took no part of the request for longer than {} s",
    "head": "no answer within {} s",
    "body": "the answer took longer than {} s to arrive",
}
