"""faxws's own synchronous transport, over requests and urllib3: one pooled session whose
connections record whether any byte of the request was written (which alone decides
``maybe_delivered``), read past interim answers within the read time-out, reset themselves on
a document that changed mid-send, and never carry an answer no request of theirs asked for.
The session takes nothing from the environment and follows no redirects.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import queue
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, cast

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.exceptions
from urllib3.util.wait import wait_for_read

from faxws._http.options import ClientOptions
from faxws._http.shared import (
    HEADERS,
    MAX_INTERIM_RESPONSES,
    BodyLimit,
    Failures,
    Request,
    Response,
    early_success,
    endpoint,
    forks,
    reset_on_close,
)
from faxws.errors import DocumentError, FaxWSError, RequestTimeoutError, TransportError, excerpt

__all__ = ["HttpTransport", "failure", "forget_connections", "new_session", "read_body"]

# -- the fact: was any byte of the request written? -----------------------------------------


class _Progress:
    """What one send did on the wire."""

    __slots__ = ("early", "received", "written")

    def __init__(self) -> None:
        self.written = False
        #: A final answer (or a close) arrived before the whole request was written.
        self.early = False
        #: Bytes of the answer read while the request was being written, read again first.
        self.received = b""


def _arrived(sock: socket.socket) -> bytes | None:
    """What the peer sent that is there to read now, without waiting: application bytes
    (one read's worth), ``b""`` for none, None for a close or a reset. TLS records that carry
    none (session tickets, which a TLS 1.3 server sends after the handshake) are taken in
    and are nothing, where a readable socket alone would be something."""
    if not wait_for_read(sock, timeout=0.0):
        return b""
    timeout = sock.gettimeout()
    sock.settimeout(0.0)
    try:
        return sock.recv(65536) or None
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
        return b""
    except OSError:
        return None
    finally:
        sock.settimeout(timeout)


_INTERIM_STATUS = re.compile(rb"HTTP/\d\.\d 1(?!01)\d\d[ \r]")


def _interim_only(received: bytes) -> bool:
    """Whether ``received`` is interim (1xx) answers alone, the last perhaps not whole yet:
    a server may send them while the request's body is still arriving."""
    rest = received
    while rest:
        if len(rest) < 13:  # "HTTP/1.1 100 " cannot tell yet: a status line may be coming
            return b"HTTP/".startswith(rest[:5])
        if not _INTERIM_STATUS.match(rest):
            return False
        end = rest.find(b"\r\n\r\n")
        if end < 0:
            return True
        rest = rest[end + 4 :]
    return True


_progress: ContextVar[_Progress | None] = ContextVar("faxws_progress", default=None)
#: When the connection being set up must be ready (TCP, a proxy's CONNECT, TLS as a whole).
_setup_deadline: ContextVar[float | None] = ContextVar("faxws_setup_deadline", default=None)


def _time_left(sock: socket.socket | None) -> None:
    """Gives ``sock``'s next operations what is left of the set-up's time: each phase has
    its own socket time-out, and a peer answering a byte at a time never lets one expire."""
    deadline = _setup_deadline.get()
    if sock is None or deadline is None:
        return
    # Never 0, which would make the socket non-blocking: the next wait ends at once.
    sock.settimeout(max(deadline - time.monotonic(), 1e-3))


class _AnswerDeadline(io.RawIOBase):
    """The raw stream under a response's buffered file: the head, then the body (chunk
    lines and trailers included), each within the read time-out of its first read, so that no
    drip of bytes or lines holds a call longer. A phase's first read has the socket's own
    time-out; only later ones set what is left (each ``settimeout`` is a system call that
    lets go of the GIL)."""

    def __init__(self, fp: io.BufferedReader, sock: socket.socket, first: bytes = b"") -> None:
        # http.client's file, closed with this one: the socket counts its open files.
        self._fp = fp
        self._first = first  # read while the request was written: the answer starts with it
        self._raw = cast(socket.SocketIO, fp.raw)
        self._sock = sock
        self._timeout: float | None = None
        self._deadline: float | None = None
        self._changed = False
        self._ended = False

    def start(self) -> None:
        self._timeout = self._sock.gettimeout()
        self._deadline = None
        self._changed = False

    def until(self, deadline: float) -> None:
        """Every read, the first included, within what is left until ``deadline`` (a proxy's
        answer to CONNECT, within the set-up's time)."""
        self.start()
        self._deadline = deadline

    def next_phase(self) -> None:
        self._deadline = None
        self._restore()

    def _restore(self) -> None:
        if self._changed:
            self._changed = False
            self._sock.settimeout(self._timeout)

    def leftover(self, buffered: io.BufferedReader) -> bool:
        """Whether anything but empty lines (which HTTP parsers skip between answers) was
        received past the answer's end, in ``buffered`` or TLS's buffer; reads no more."""
        self._ended = True
        if self._first.strip(b"\r\n") or buffered.peek(1).strip(b"\r\n"):
            return True
        return isinstance(self._sock, ssl.SSLSocket) and self._sock.pending() > 0

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, buffer: Any) -> int | None:
        if self._ended:
            return 0
        if self._first:
            size = min(len(buffer), len(self._first))
            buffer[:size] = self._first[:size]
            self._first = self._first[size:]
            return size
        if self._timeout is not None:
            now = time.monotonic()
            if self._deadline is None:
                # The socket already waits at most the read time-out: the deadline starts here.
                self._deadline = now + self._timeout
            else:
                left = self._deadline - now
                if left <= 0:
                    raise TimeoutError("the answer took longer than the read time-out")
                self._sock.settimeout(left)
                self._changed = True
        n: int | None = self._raw.readinto(buffer)
        return n

    def close(self) -> None:
        if not self.closed:
            super().close()
            self._fp.close()
            with contextlib.suppress(OSError):
                self._restore()  # the connection's next request starts from its own time-outs


class _FinalResponse(http.client.HTTPResponse):
    """Skips every interim response, not only ``100 Continue`` (a 101 is final: nothing asks
    to switch protocols), reads the head within the read time-out, and refuses header lines
    it cannot parse (which urllib3 would log, secrets and all, and ignore)."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self._sock = sock
        progress, first = _progress.get(), b""
        if progress is not None:
            first, progress.received = progress.received, b""
        self._raw_in = _AnswerDeadline(self.fp, sock, first)
        self.fp = io.BufferedReader(self._raw_in)
        deadline = _setup_deadline.get()
        if deadline is not None:  # a proxy's answer to CONNECT, read while connecting
            self._raw_in.until(deadline)

    def begin(self) -> None:
        if self.headers is not None:
            return
        self._raw_in.start()
        super().begin()
        self._raw_in.next_phase()
        if self.msg.defects or self.msg.get_payload():
            raise http.client.HTTPException("the response has header lines that cannot be parsed")

    def _close_conn(self) -> None:
        # Anything received past the answer's end answers no request: shut down before
        # urllib3 pools the connection, so that its check finds it closed.
        fp = self.fp
        if isinstance(fp, io.BufferedReader) and not fp.closed:
            with contextlib.suppress(OSError, ValueError):
                if self._raw_in.leftover(fp):
                    self._sock.shutdown(socket.SHUT_RDWR)
        super()._close_conn()  # type: ignore[misc]

    def _read_status(self) -> tuple[str, int, str]:
        for _ in range(MAX_INTERIM_RESPONSES):
            version, status, reason = super()._read_status()  # type: ignore[misc]
            if not 100 <= status < 200 or status == 101:
                return version, status, reason
            for _ in range(http.client._MAXHEADERS + 1):  # type: ignore[attr-defined]
                line = self.fp.readline(65537)
                if len(line) > 65536:
                    raise http.client.LineTooLong("interim response header line")
                if line in (b"\r\n", b"\n", b""):
                    break
            else:
                raise http.client.HTTPException("an interim response has too many headers")
        raise http.client.HTTPException(f"more than {MAX_INTERIM_RESPONSES} interim responses")


#: A request's head and the start of its body up to this size go out in one write.
_JOIN_LIMIT = 64 * 1024


class _RecordingConnection(urllib3.connection.HTTPConnection):
    """Records in the current send's :class:`_Progress` when request bytes are written, and
    writes a request's head with the start of its body (one system call, one release of the
    GIL, fewer per call)."""

    response_class = _FinalResponse
    _connecting = False
    _holding_head = False
    _head: bytes | None = None
    _requests = 0

    def connect(self) -> None:
        # Bytes written while connecting (a proxy's CONNECT) are not the request's.
        self._connecting = True
        timeout = self.timeout  # the connect time-out, for the set-up as a whole
        seconds = timeout if isinstance(timeout, (int, float)) else None
        deadline = _setup_deadline.set(None if seconds is None else time.monotonic() + seconds)
        try:
            super().connect()
        finally:
            _setup_deadline.reset(deadline)
            self._connecting = False
        if self.sock is not None and seconds is not None:
            self.sock.settimeout(seconds)  # what urllib3 expects after connecting

    def _new_conn(self) -> socket.socket:
        # TCP had the whole time-out; what follows (TLS, or a tunnel) has what is left.
        sock = super()._new_conn()
        _time_left(sock)
        return sock

    def _tunnel(self) -> None:
        super()._tunnel()  # its answer is read within the set-up's time (_FinalResponse)
        _time_left(self.sock)  # and the TLS handshake through it has what is left

    def send(self, data: Any) -> None:
        if self.sock is None:
            self.connect()
        if self._connecting:
            super().send(data)
            return
        if self._holding_head:
            self._holding_head = False
            self._head = bytes(data)
            return
        head, self._head = self._head, None
        progress = _progress.get()
        if head is None:  # a later part of the body: has an answer come before its end?
            if progress is not None and progress.written and not progress.early:
                self._look_for_an_answer(progress)
        else:
            self._fresh_if_spoiled()
            if isinstance(data, (bytes, memoryview)) and memoryview(data).nbytes <= _JOIN_LIMIT:
                data = head + data
            else:
                self._write(head)
        if isinstance(data, (bytes, memoryview)):
            self._write(data)
            return
        if progress is not None:
            progress.written = True  # cannot count what the base class writes
        super().send(data)

    def _write(self, data: bytes | memoryview) -> None:
        sock = self.sock
        assert sock is not None
        progress = _progress.get()
        view = memoryview(data).cast("B")
        while view:
            n = sock.send(view)
            if n and progress is not None:
                progress.written = True
            view = view[n:]

    def _look_for_an_answer(self, progress: _Progress) -> None:
        """Takes in what arrived while the body is being written: interim answers may come
        at any time; a final answer (or a close) before the body's end answers no request."""
        sock = self.sock
        if sock is None:
            return
        arrived = _arrived(sock)
        if arrived is None:
            progress.early = True
        elif arrived:
            progress.received += arrived
            progress.early = not _interim_only(progress.received)

    def _fresh_if_spoiled(self) -> None:
        """Anything that arrived before the request's first byte (on a reused connection since
        urllib3 checked it, or on a new one right after its set-up) answers no request written
        here: the request goes on a new connection, and a second such one is an error."""
        for _ in range(2):
            sock = self.sock
            if sock is None or _arrived(sock) == b"":
                return
            self.sock = None
            sock.close()
            self.connect()
        raise ConnectionError("the server sent an answer before any request on two connections")

    def request(self, *args: Any, **kwargs: Any) -> None:
        self._requests += 1
        self._holding_head = True
        self._head = None
        try:
            super().request(*args, **kwargs)
            head, self._head = self._head, None
            if head is not None:  # no body followed
                self._fresh_if_spoiled()
                self._write(head)
        except DocumentError:
            reset_on_close(self.sock)
            self.close()
            raise
        except OSError:  # ssl.SSLError included
            # The server may have answered before the body was complete and closed (413, 401,
            # even a result): read that answer, as urllib3 does after a broken pipe; without
            # one, the read fails, reported as the write's failure would have been.
            progress = _progress.get()
            if progress is None or not progress.written or self.sock is None:
                raise
            progress.early = True
        finally:
            self._holding_head = False
            self._head = None


class _RecordingTLSConnection(_RecordingConnection, urllib3.connection.HTTPSConnection):
    pass


class _Pool(urllib3.HTTPConnectionPool):
    ConnectionCls = _RecordingConnection


class _TLSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _RecordingTLSConnection


_POOLS = {"http": _Pool, "https": _TLSPool}


def _key_of(proxies: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """``proxies`` as part of a lookup key: the same settings, the same key."""
    return tuple(sorted(proxies.items())) if proxies else ()


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' adapter, keeping the pool and request target of each URL and settings
    (looking them up again parses the URL five times), and answering without a cookie jar
    or text encoding (faxws keeps no cookies and reads bytes)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pools: dict[tuple[Any, ...], urllib3.HTTPConnectionPool] = {}
        self._targets: dict[tuple[Any, ...], str] = {}
        super().__init__(*args, **kwargs)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled (or copied) without __init__: the kept lookups start empty.
        self._pools, self._targets = {}, {}
        super().__setstate__(state)  # type: ignore[misc]  # in requests, not its stubs

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def get_connection_with_tls_context(
        self,
        request: requests.PreparedRequest,
        verify: bool | str | None,
        proxies: Mapping[str, str] | None = None,
        cert: Any = None,
    ) -> urllib3.HTTPConnectionPool:
        key = (request.url, verify, cert, _key_of(proxies))
        pool = self._pools.get(key)
        if pool is None or pool.pool is None:  # first use, or closed (by close()) since
            pool = self._pools[key] = cast(
                urllib3.HTTPConnectionPool,
                super().get_connection_with_tls_context(request, verify, proxies, cert),
            )
        return pool

    def request_url(
        self, request: requests.PreparedRequest, proxies: Mapping[str, str] | None
    ) -> str:
        key = (request.url, _key_of(proxies))
        target = self._targets.get(key)
        if target is None:
            target = self._targets[key] = super().request_url(request, proxies)
        return target

    def build_response(self, req: requests.PreparedRequest, resp: Any) -> requests.Response:
        response = requests.Response()
        response.status_code = resp.status
        response.headers = requests.structures.CaseInsensitiveDict(resp.headers)
        response.raw = resp
        response.reason = resp.reason
        response.url = req.url if isinstance(req.url, str) else str(req.url)
        response.request = req
        response.connection = self
        return response

    def close(self) -> None:
        self._pools.clear()
        super().close()

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> urllib3.ProxyManager:
        manager: urllib3.ProxyManager = super().proxy_manager_for(proxy, **kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager


def new_session(
    verify: bool | str, *, max_connections: int, proxies: Mapping[str, str] | None = None
) -> requests.Session:
    """A session with faxws's adapter and an empty pool, made in (and for) this process. It
    takes nothing from the environment (``trust_env=False``): a ``~/.netrc`` entry would
    replace the Bearer header, proxy variables reroute credentials, a CA bundle named there
    be trusted."""
    session = requests.Session()
    session.trust_env = False
    session.verify = verify
    if proxies:
        session.proxies.update(proxies)
    adapter = _Adapter(pool_connections=1, pool_maxsize=max_connections, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def forget_connections(session: requests.Session) -> None:
    """In a forked child, close this process's descriptors of the connections ``session``
    pooled, leaving the connections to the parent (closing a shared descriptor sends
    nothing; shutdown() would). The pools' queues get fresh locks first: a parent thread may
    have held one at the fork."""
    for adapter in {id(a): a for a in session.adapters.values()}.values():
        pools: Mapping[object, Any] = getattr(adapter, "_pools", {})
        for pool in list(pools.values()):
            waiting = getattr(pool, "pool", None)
            if not isinstance(waiting, queue.Queue):
                continue
            mutex = threading.Lock()
            waiting.mutex = mutex
            waiting.not_empty = threading.Condition(mutex)
            waiting.not_full = threading.Condition(mutex)
            waiting.all_tasks_done = threading.Condition(mutex)
            idle, waiting.queue = list(waiting.queue), type(waiting.queue)()
            for conn in idle:
                if conn is not None:  # a free slot
                    conn.close()  # http.client: the socket's close(), the descriptor only


# -- one table: requests' and urllib3's failures -> what to say -------------------------------


def _is_timeout(exc: BaseException) -> bool:
    # urllib3's NewConnectionError subclasses its ConnectTimeoutError for old callers' sake;
    # a refused connection is not a time-out.
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return False
    return isinstance(exc, (TimeoutError, urllib3.exceptions.TimeoutError))


_TUNNEL = re.compile(r"Tunnel connection failed: ([0-9]{3})")


def _says(e: BaseException, redact: Callable[[str], str]) -> str | None:
    tunnel = _TUNNEL.match(str(e)) if type(e) is OSError else None
    if tunnel is not None:
        # http.client quotes the proxy's reason phrase, which may echo its credentials.
        return f"the proxy refused the tunnel (HTTP {tunnel.group(1)})"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    if isinstance(e, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(e, http.client.HTTPException):
        # Masked before it is cut: a cut secret would no longer be found.
        return f"malformed answer ({type(e).__name__}: {excerpt(redact(str(e)), 80)})"
    return "timed out" if _is_timeout(e) else None


_FAILURES = Failures(
    (
        (requests.exceptions.ConnectTimeout, "timeout"),
        (requests.exceptions.ReadTimeout, "timeout"),
        (urllib3.exceptions.TimeoutError, "timeout"),
        (TimeoutError, "timeout"),
        (requests.exceptions.ProxyError, "proxy"),
        (requests.exceptions.SSLError, "tls"),
        (urllib3.exceptions.SSLError, "tls"),
        (ssl.SSLError, "tls"),
        (requests.exceptions.ConnectionError, "connection"),
        (urllib3.exceptions.HTTPError, "connection"),
        (OSError, "connection"),
        (http.client.HTTPException, "protocol"),
        (requests.exceptions.RequestException, "protocol"),
    ),
    _says,
    wraps=("reason",),  # and args: requests and urllib3 nest reasons in both
    in_args=True,
    quote=True,
    is_timeout=_is_timeout,
)
#: The faxws error for a failed exchange (:meth:`Failures.error`).
failure = _FAILURES.error


def read_body(
    raw: Any,
    limit: BodyLimit,
    *,
    read_timeout: float,
    too_slow: Callable[[], FaxWSError],
    expected: int = -1,
    chunk_size: int = 65536,
) -> bytes:
    """The body of urllib3's response ``raw``, decoded, bounded by ``limit`` in size and by
    ``read_timeout`` as a whole (``too_slow`` is raised past it). With ``expected`` bytes to
    come (a plain body of a known length), it ends when they came: urllib3 pooled the
    connection with the last of them."""
    deadline = time.monotonic() + read_timeout
    chunks: list[bytes] = []
    while chunk := raw.read1(chunk_size, decode_content=True):
        limit.add(chunk)
        chunks.append(chunk)
        if limit.total == expected:
            break
        if time.monotonic() > deadline:
            raise too_slow()
    return b"".join(chunks)


# -- the transport ----------------------------------------------------------------------------


class HttpTransport:
    """faxws's own :class:`~faxws.transport.SyncTransport`: POSTs to one URL with
    ``options``' time-outs, TLS verification, proxies and pool size."""

    def __init__(self, url: str, options: ClientOptions, redact: Callable[[str], str]) -> None:
        self.url = url
        self.timeout = options.timeout
        self.max_response_bytes = options.max_response_bytes
        self._redact = redact
        self._where = endpoint(url)
        self._max_connections = options.max_connections or 32  # one per thread sharing it
        self._verify = options.verify
        self._proxies = dict(options.proxies)
        session = self._new_session()
        # requests' defaults otherwise (Connection: keep-alive, for HTTP/1.0 servers and
        # proxies); Accept-Encoding is the async client's, whatever decoders are installed.
        session.headers.update(HEADERS)
        # Prepared once and sent to the adapter itself: no per-call merging of settings, no
        # hooks, redirect check or cookie jar (shared by all threads, behind one lock).
        self._template = requests.Request("POST", url, headers=dict(session.headers)).prepare()

    def _new_session(self) -> requests.Session:
        session = new_session(
            self._verify, max_connections=self._max_connections, proxies=self._proxies
        )
        self._session = session
        self._adapter = cast(_Adapter, session.get_adapter(self.url))
        self._forks = forks()
        return session

    def _prepare(
        self, body: bytes | Iterable[bytes], headers: Mapping[str, str]
    ) -> requests.PreparedRequest:
        if body.__class__ is bytes and body:
            # What copy() and prepare_body() make of bytes, without their cost.
            request = requests.PreparedRequest()
            request.method = self._template.method
            request.url = self._template.url
            fields = self._template.headers.copy()
            fields.update(headers)
            fields["Content-Length"] = str(len(body))
            request.headers = fields
            request.body = body
            return request
        request = self._template.copy()
        if request.headers is not None:
            request.headers.update(headers)
        request.prepare_body(body, None)
        return request

    def close(self) -> None:
        self._session.close()

    def post(self, request: Request) -> Response:
        start = time.perf_counter()
        request_id = request.request_id
        if self._forks != forks():
            # A child process: the pooled connections are left to the parent, which may
            # still use them; nothing of theirs may be read or written here.
            self._new_session()
        progress = _Progress()
        reset = _progress.set(progress)
        failed: TransportError | None = None
        try:
            response = self._adapter.send(
                self._prepare(cast("bytes | Iterable[bytes]", request.body), request.headers),
                stream=True,
                timeout=self.timeout,
                verify=self._verify,
                proxies=self._proxies,
            )
        except DocumentError as exc:
            exc.request_id = request_id
            exc.maybe_delivered = progress.written
            raise
        except Exception as exc:
            # Raised outside the handler, not even chained as context: the original's text
            # may quote what the server sent, secrets included.
            failed = self._failure(exc, progress.written, request_id)
        finally:
            _progress.reset(reset)
            request.written = progress.written
        if failed is not None:
            raise failed
        if progress.early and 200 <= response.status_code < 300:
            response.close()
            raise early_success(request_id, self._where)
        try:
            content = self._read(response, request_id)
        except FaxWSError:
            raise
        except Exception as exc:
            failed = self._failure(exc, True, request_id)
        finally:
            response.close()
        if failed is not None:
            raise failed
        return Response(
            response.status_code, response.headers, content, time.perf_counter() - start
        )

    def _failure(self, exc: BaseException, written: bool, request_id: str) -> TransportError:
        return failure(
            exc, written=written, request_id=request_id, where=self._where, redact=self._redact
        )

    def _read(self, response: requests.Response, request_id: str) -> bytes:
        read_timeout = self.timeout[1]
        headers = response.headers
        limit = BodyLimit(self.max_response_bytes, response.status_code, request_id=request_id)
        length = limit.declared(headers.get("Content-Length", ""))
        plain = "Content-Encoding" not in headers and "Transfer-Encoding" not in headers

        def too_slow() -> RequestTimeoutError:
            return RequestTimeoutError(
                f"the response took longer than {read_timeout} s to arrive; the request may "
                "have been delivered",
                request_id=request_id,
                maybe_delivered=True,
            )

        try:
            return read_body(
                response.raw,
                limit,
                read_timeout=read_timeout,
                too_slow=too_slow,
                expected=length if plain and length is not None else -1,
            )
        except FaxWSError:
            raise
        except Exception as exc:
            # The socket's own reads keep the body's deadline (_AnswerDeadline).
            if any(_is_timeout(e) for e in _FAILURES.chain(exc)):
                raise too_slow() from None
            raise
