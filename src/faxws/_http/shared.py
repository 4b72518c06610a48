"""What both HTTP stacks share, with no I/O: the seam's request and answer, the checks of
options, how a failed exchange is reported (each stack maps its exceptions with one
:class:`Failures`; whether a byte was written alone decides ``maybe_delivered``), the bounds
of an answer's body, forks, and the decisions of a call's attempts (:class:`Caller` and
:class:`Attempts`), so that each stack's caller only waits and posts its own way."""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import email.utils
import inspect
import logging
import math
import os
import random
import socket
import ssl
import struct
import time
import weakref
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast
from urllib.parse import urlsplit

from faxws._log import call_mask, logger
from faxws._protocol.checks import is_loopback
from faxws._protocol.soap import may_retry, request_headers
from faxws._version import __version__
from faxws.errors import (
    BadInputError,
    ConnectError,
    FaxWSError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
    excerpt,
    mask_error,
)

if TYPE_CHECKING:
    from faxws._http.options import ClientOptions
    from faxws.auth import Credentials

__all__ = [
    "DEFAULT_TIMEOUT",
    "HEADERS",
    "MAX_INTERIM_RESPONSES",
    "AsyncTransport",
    "Attempts",
    "BodyLimit",
    "Caller",
    "Failures",
    "Request",
    "Response",
    "SyncTransport",
    "Timeout",
    "after_fork_in_child",
    "call_boundary",
    "check_timeout",
    "check_verify",
    "declared_length",
    "early_success",
    "endpoint",
    "forks",
    "reset_on_close",
    "retry_after",
    "transport_error",
    "trust_of",
]

#: The headers faxws's own transports add to every request.
HEADERS = {"User-Agent": f"faxws/{__version__}", "Accept-Encoding": "gzip, deflate"}
#: (connect, read) seconds.
Timeout = float | tuple[float, float]
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 60.0)
#: Longest time-out accepted: sockets cannot wait much longer, and nobody wants to.
MAX_TIMEOUT = 7 * 24 * 3600.0
#: Interim responses read past before a final one; more is a hostile or broken server.
MAX_INTERIM_RESPONSES = 32
#: Longest wait between two attempts (unless retry_backoff is longer), whatever Retry-After
#: asks: a call that waits minutes looks hung, and its caller can still try again later.
MAX_RETRY_DELAY = 60.0


@dataclass(frozen=True, slots=True)
class Response:
    """An answer as a transport hands it to the client: the final (not interim) HTTP status,
    the headers (looked up in any case), the whole body (decoded, as sent before any
    ``Content-Encoding``) and the seconds the attempt took."""

    status: int
    headers: Mapping[str, str]
    content: bytes
    elapsed: float = 0.0

    def __repr__(self) -> str:
        # An answer may echo a secret back: its body is not shown.
        return (
            f"Response(status={self.status}, "
            f"headers={sorted(self.headers) if isinstance(self.headers, Mapping) else '?'}, "
            f"content=<{len(self.content) if isinstance(self.content, bytes) else '?'} bytes>, "
            f"elapsed={self.elapsed})"
        )


@dataclass(eq=False, slots=True)
class Request:
    """One attempt of a call, as a transport is given it: the service ``url``; the contract's
    ``headers`` (``Content-Type``, ``SOAPAction``, ``x-ch-request-id``, ``Authorization`` in
    OAuth 2.0 mode), to which the transport adds its framing (``Content-Length``: ``size``);
    the SOAP envelope as ``body``, bytes or, for large documents, chunks read afresh each
    time it is iterated (asynchronously for an :class:`AsyncTransport`); the call's
    ``request_id``, for the errors the transport raises; and ``written``, set by the
    transport once any byte of the request was written (or handed on): whether the request
    may have been delivered, whatever its error says."""

    url: str
    headers: Mapping[str, str]
    body: bytes | Iterable[bytes] | AsyncIterable[bytes]
    size: int
    request_id: str
    written: bool = False

    def __repr__(self) -> str:
        # The headers carry the token and the body the PIN: neither is shown.
        return (
            f"Request(url={self.url!r}, request_id={self.request_id!r}, size={self.size}, "
            f"written={self.written})"
        )


class SyncTransport(Protocol):
    """How :class:`~faxws.FaxClient` and :func:`faxws.zeep.make_client` exchange one
    attempt with the service: everything between the request's bytes and the answer's."""

    def post(self, request: Request) -> Response:
        """The final answer to ``request``, whatever its status. A failed exchange raises
        :class:`~faxws.TransportError` (:class:`~faxws.ConnectError` when nothing was
        written, so that the request is safe to send again), with ``maybe_delivered`` True
        once any byte of the request was written."""
        ...

    def close(self) -> None:
        """Release what the transport holds; called when the client is closed."""
        ...


class AsyncTransport(Protocol):
    """:class:`SyncTransport` for :class:`~faxws.AsyncFaxClient`: the same contract, with
    coroutines."""

    async def post_async(self, request: Request) -> Response:
        """The final answer to ``request`` (see :meth:`SyncTransport.post`)."""
        ...

    async def aclose(self) -> None:
        """Release what the transport holds; awaited when the client is closed."""
        ...


# -- arguments --------------------------------------------------------------------------------


def check_timeout(field: str, timeout: object) -> tuple[float, float]:
    """``timeout`` as (connect, read) seconds: finite, > 0 and at most a week."""
    values = timeout if isinstance(timeout, tuple) else (timeout, timeout)
    if len(values) != 2 or any(
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or not 0 < v <= MAX_TIMEOUT
        for v in values
    ):
        raise BadInputError(
            field,
            f"must be seconds (finite, > 0, at most {MAX_TIMEOUT:.0f}), or a (connect, read) "
            "pair of them",
        )
    return float(values[0]), float(values[1])


def check_verify(field: str, verify: object) -> bool | str:
    """True, False, or a CA bundle file or directory that loads: checked now, not per call."""
    if isinstance(verify, bool):
        return verify
    if not isinstance(verify, (str, os.PathLike)):
        raise BadInputError(field, f"must be True, False or a CA bundle path, not {type(verify)}")
    path = os.fspath(verify)
    if not isinstance(path, str) or not os.path.exists(path):
        raise BadInputError(field, f"no CA bundle at {path!r}")
    if not (os.path.isfile(path) or os.path.isdir(path)):
        raise BadInputError(field, f"{path!r} is not a file or a directory of CA certificates")
    try:
        trust_of(path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise BadInputError(field, f"{path!r} is not a usable CA bundle: {exc}") from None
    return path


def trust_of(path: str) -> ssl.SSLContext:
    """A client TLS context trusting the CA bundle at ``path`` (a file, or a directory of
    certificates) alone. Not create_default_context(): it also loads the system's bundle,
    which SSL_CERT_FILE and SSL_CERT_DIR can name."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if os.path.isdir(path):
        context.load_verify_locations(capath=path)
    else:
        context.load_verify_locations(cafile=path)
    return context


# -- processes ---------------------------------------------------------------------------------

_forks = 0
T = TypeVar("T")
#: Owners of state a forked child must not share with its parent, and what resets it (weakly).
_resets: weakref.WeakKeyDictionary[Any, Callable[[Any], None]] = weakref.WeakKeyDictionary()


def _forked() -> None:
    global _forks
    _forks += 1
    for owner, reset in list(_resets.items()):
        reset(owner)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def forks() -> int:
    """How many forks made this process: a connection pool made under another count belongs
    to another process (a counter, not the pid: reading it is no system call)."""
    return _forks


def after_fork_in_child(owner: T, reset: Callable[[T], None]) -> None:
    """Have ``reset(owner)`` run in the child of every fork, before any other thread exists
    there: for state (locks a parent thread may hold) that cannot wait for the next use."""
    _resets[owner] = reset


# -- answers and failures ------------------------------------------------------------------------


def declared_length(value: str) -> int | None:
    """A Content-Length header's number, or None when it is not one (only ASCII digits are:
    ``str.isdigit`` also takes digits such as "²" that ``int`` refuses)."""
    return int(value) if value.isascii() and value.isdigit() else None


class BodyLimit:
    """The size bound of one answer's body: its declared length, then the bytes that arrive,
    refused past ``limit`` with a ProtocolError naming the answer (``what``) and, when
    ``quote_declared``, the declared length."""

    __slots__ = ("_quote", "_request_id", "_status", "_what", "limit", "total")

    def __init__(
        self,
        limit: int,
        status: int,
        *,
        request_id: str | None = None,
        what: str = "response",
        quote_declared: bool = True,
    ) -> None:
        self.limit = limit
        self.total = 0
        self._status = status
        self._request_id = request_id
        self._what = what
        self._quote = quote_declared

    def declared(self, value: str) -> int | None:
        """:func:`declared_length`, refused over the limit: nothing of such a body is read."""
        length = declared_length(value)
        if length is not None and length > self.limit:
            raise self._error(f" (Content-Length {value})" if self._quote else "")
        return length

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.total > self.limit:
            raise self._error("")

    def _error(self, detail: str) -> ProtocolError:
        return ProtocolError(
            f"the {self._what} is larger than {self.limit} bytes{detail}",
            request_id=self._request_id,
            status_code=self._status,
        )


def endpoint(url: str) -> str:
    """``host:port`` of ``url``, as transport errors name it."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


@dataclass(frozen=True, slots=True)
class Failures:
    """How one HTTP stack's exceptions are reported: ``table`` maps classes onto a kind, most
    specific first (it shapes the message and the class, never ``maybe_delivered``); what
    an exception wraps is in its attributes ``wraps`` (and ``args`` when ``in_args``);
    ``says`` gives the stack's own causes, else the cause is the masked text (``quote``) or
    the class name. ``foreign`` classes subclass ssl's errors without their attributes.
    ``is_timeout``, where classes do not say it alone, must hold for a ``"timeout"`` row,
    and makes a connection failure it caused a ``"timeout"``."""

    table: tuple[tuple[type[BaseException], str], ...]
    says: Callable[[BaseException, Callable[[str], str]], str | None]
    wraps: tuple[str, ...]
    in_args: bool = False
    quote: bool = False
    foreign: tuple[type[BaseException], ...] = ()
    is_timeout: Callable[[BaseException], bool] | None = None

    def chain(self, exc: BaseException) -> list[BaseException]:
        """``exc`` and every exception it wraps, nearest first, each once."""
        out: list[BaseException] = []
        stack: list[object] = [exc]
        while stack:
            cur = stack.pop(0)
            if not isinstance(cur, BaseException) or any(cur is e for e in out):
                continue
            out.append(cur)
            stack.extend(getattr(cur, name, None) for name in self.wraps)
            if self.in_args:
                stack.extend(cur.args)
            stack.extend((cur.__cause__, cur.__context__))
        return out

    def kind(self, exc: BaseException) -> str:
        """The first matching row's kind, else ``"unexpected"``; a connection failure caused
        by TLS is ``"tls"``."""
        is_timeout = self.is_timeout
        for cls, kind in self.table:
            if not isinstance(exc, cls):
                continue
            if kind == "timeout" and is_timeout is not None and not is_timeout(exc):
                continue
            if kind == "connection":
                wrapped = self.chain(exc)
                if any(isinstance(e, ssl.SSLError) for e in wrapped):
                    return "tls"
                if is_timeout is not None and any(is_timeout(e) for e in wrapped):
                    return "timeout"
            return kind
        return "unexpected"

    def cause(self, exc: BaseException, redact: Callable[[str], str]) -> str:
        """The root cause in a few words ("Connection refused"), not the stack's text."""
        chain = self.chain(exc)
        own = [e for e in chain if not isinstance(e, self.foreign)]
        for e in own:
            if isinstance(e, ssl.SSLCertVerificationError):
                return f"TLS certificate verification failed: {e.verify_message}"
        for e in chain:
            if isinstance(e, ssl.SSLError) and e in own:
                return f"TLS error: {e.reason or e.strerror or type(e).__name__}"
            if isinstance(e, socket.gaierror):
                return f"cannot resolve the host name ({e.strerror})"
            said = self.says(e, redact)
            if said is not None:
                return said
        return (excerpt(redact(str(exc)), 200) if self.quote else "") or type(exc).__name__

    def error(
        self,
        exc: BaseException,
        *,
        written: bool,
        request_id: str | None,
        where: str,
        redact: Callable[[str], str],
        token_endpoint: bool = False,
    ) -> TransportError:
        """The faxws error for ``exc`` (:func:`transport_error`), its cause masked."""
        return transport_error(
            self.kind(exc),
            redact(self.cause(exc, redact)),
            written=written,
            request_id=request_id,
            where=where,
            token_endpoint=token_endpoint,
        )


def transport_error(
    kind: str,
    cause: str,
    *,
    written: bool,
    request_id: str | None,
    where: str,
    token_endpoint: bool = False,
) -> TransportError:
    """The faxws error for a failed exchange: ``written`` (whether any byte of the request
    was written) alone decides ``maybe_delivered``. A token request (``token_endpoint``)
    wrote nothing of the call it serves."""
    if token_endpoint:
        if kind == "timeout":
            return RequestTimeoutError(
                f"{where} did not answer in time ({cause})", maybe_delivered=False
            )
        return ConnectError(f"cannot get a token from {where}: {cause}")
    if not written:
        if kind == "timeout":
            return RequestTimeoutError(
                f"connecting to {where} timed out ({cause}); nothing was sent",
                request_id=request_id,
                maybe_delivered=False,
            )
        return ConnectError(
            f"cannot connect to {where}: {cause}; nothing was sent", request_id=request_id
        )
    if kind == "timeout":
        return RequestTimeoutError(
            f"the service did not answer in time ({cause}); the request may have been delivered",
            request_id=request_id,
            maybe_delivered=True,
        )
    return TransportError(
        f"the connection failed after the request was sent: {cause}; the request may have "
        "been delivered",
        request_id=request_id,
        maybe_delivered=True,
    )


def reset_on_close(sock: socket.socket | None) -> None:
    """Have closing ``sock`` send a reset, not a FIN: a body left incomplete must read as
    broken."""
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def client_closed(request_id: str, *, written: bool) -> TransportError:
    """The error of a call the client's close() ended: ``written`` (whether any byte of its
    request was written) alone decides ``maybe_delivered``, as for any failed exchange."""
    if not written:
        return ConnectError(
            "the client was closed during the call; nothing was sent", request_id=request_id
        )
    return TransportError(
        "the client was closed during the call, after the request was sent; the request may "
        "have been delivered",
        request_id=request_id,
        maybe_delivered=True,
    )


def early_success(request_id: str, where: str) -> TransportError:
    """A success that arrived before the whole request was written answers no request of
    this call (a SOAP service answers an envelope it has read)."""
    return transport_error(
        "protocol",
        "a success answer arrived before the whole request was sent",
        written=True,
        request_id=request_id,
        where=where,
    )


# -- a call -----------------------------------------------------------------------------------


class call_boundary:  # noqa: N801 (used as a function: ``with call_boundary(rid, mask):``)
    """Everything a call raises is a FaxWSError carrying its request id; any other exception
    is a bug below, reported as one that may have been delivered (nothing tells otherwise).
    An error also says ``maybe_delivered`` when an earlier attempt of the call may have been
    delivered (:meth:`Attempts.may_have_delivered` records it here), whatever its own attempt
    says: the service may have acted on that one.

    The one way out of a call for its errors and its log records, so the one place they are
    masked: ``mask`` (the client's secrets and the call's own) is applied to every text of an
    error leaving it and, through :data:`~faxws._log.call_mask`, to every record the
    ``faxws`` logger writes meanwhile. A text cut short must still be masked before the cut,
    where it is made (a cut secret is no longer found).
    A class, not a contextlib generator: entered on every call, it costs a third as much."""

    __slots__ = ("_entered", "_mask", "_rid", "_token", "delivered")

    def __init__(self, rid: str, mask: Callable[[str], str]) -> None:
        self._rid = rid
        self._mask = mask
        self.delivered = False

    def __enter__(self) -> None:
        # Found by the call's Attempts through the context, so that no face has to hand it
        # down: each thread and each task has its own.
        self._entered = _CURRENT_CALL.set(self)
        self._token = call_mask.set(self._mask)

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        call_mask.reset(self._token)
        _CURRENT_CALL.reset(self._entered)
        if exc is None or not isinstance(exc, Exception):
            return  # a success, or KeyboardInterrupt, CancelledError and the like
        if isinstance(exc, FaxWSError):
            if exc.request_id is None:
                exc.request_id = self._rid
            if self.delivered and not exc.maybe_delivered:
                _after_delivery(exc)
            mask_error(exc, self._mask)
            return
        # Not chained: its arguments may hold the request, secrets included.
        import traceback

        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
        raise FaxWSError(
            f"unexpected {type(exc).__name__}{where} during the call; the request may have "
            "been delivered",
            request_id=self._rid,
            maybe_delivered=True,
        ) from None


_CURRENT_CALL: contextvars.ContextVar[call_boundary | None] = contextvars.ContextVar(
    "faxws_call", default=None
)
#: What an error's message says when its own attempt sent nothing but an earlier one may
#: have been delivered.
EARLIER_ATTEMPT = "; an earlier attempt of this call may have been delivered"


def _after_delivery(exc: FaxWSError) -> None:
    """``exc``, raised by an attempt that sent nothing (or refused by the service) after an
    earlier attempt that may have been delivered, made to say so: ``maybe_delivered`` and a
    message that no longer says nothing was sent."""
    exc.maybe_delivered = True
    message = exc.message.replace("; nothing was sent", "") + EARLIER_ATTEMPT
    exc.message = message
    exc.args = (message, *exc.args[1:])


# -- the attempts of one call ------------------------------------------------------------------


def retry_after(
    value: str | None, cap: float, now: Callable[[], float] = time.time
) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (delta-seconds, or an HTTP date
    measured against ``now``), from 0 to ``cap``; None without a value that is either."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"
        # Past 15 digits it is more than any cap (and int() refuses 4,300 digits or more).
        return float(min(int(digits), cap)) if len(digits) <= 15 else cap
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, with no zone said
        when = when.replace(tzinfo=datetime.timezone.utc)
    try:
        seconds = when.timestamp() - now()
    except (OverflowError, OSError, ValueError):
        return None
    return min(max(seconds, 0.0), cap)


class Attempts:
    """The decisions between the attempts of one call, and what they log: whether to refresh
    the token (once, after a 401) and whether to try again (:func:`may_retry`, within the
    retry budget), after how long (see :class:`~faxws.ClientOptions`' ``retry_backoff``)."""

    def __init__(
        self, caller: Caller[Any], name: str, rid: str, soap_action: str, *, idempotent: bool
    ) -> None:
        self.name = name
        self.rid = rid
        self._caller = caller
        self._soap_action = soap_action
        self._idempotent = idempotent
        self._options = caller.options
        self._cap = max(MAX_RETRY_DELAY, caller.options.retry_backoff)
        self._random = caller.options.retry_random or random.random
        self.attempt = 0
        self.refreshed = False
        self.requests: list[Request] = []
        self._call = _CURRENT_CALL.get()

    @property
    def written(self) -> bool:
        """Whether a byte of any attempt's request was written (or handed on)."""
        return any(request.written for request in self.requests)

    def request(
        self, token: str | None, body: bytes | Iterable[bytes] | AsyncIterable[bytes], size: int
    ) -> Request:
        logger.debug(
            "%s request_id=%s POST %s (%d bytes, attempt %d)",
            self.name,
            self.rid,
            self._caller.url,
            size,
            self.attempt + 1,
        )
        headers = request_headers(self.rid, token, self._soap_action)
        request = Request(self._caller.url, headers, body, size, self.rid)
        self.requests.append(request)
        return request

    def after_error(self, exc: FaxWSError, request: Request, *, retry: bool = True) -> float | None:
        """Seconds to wait before trying again, or None: raise ``exc`` (always when not
        ``retry``). ``request.written`` decides ``maybe_delivered``, whatever the error
        says."""
        if request.written:
            exc.maybe_delivered = True
        if exc.maybe_delivered:
            self.may_have_delivered()
        # No byte written: always safe to repeat. Any byte: only an idempotent call.
        if (
            retry
            and isinstance(exc, TransportError)
            and may_retry(idempotent=self._idempotent, error=exc)
            and self.attempt < self._options.retries
        ):
            return self._back_off(type(exc).__name__)
        logger.debug("%s request_id=%s failed: %s", self.name, self.rid, type(exc).__name__)
        return None

    def may_have_delivered(self) -> None:
        """An attempt of the call may have been delivered: whatever ends the call says so."""
        if self._call is not None:
            self._call.delivered = True

    def answered(self, raw: object) -> Response:
        """The transport's answer, refused unless it is a Response of an HTTP status, a mapping
        of headers and bytes, and over the size limit (whatever the transport). Headers in a
        plain dict are made to be looked up in any case, as every HTTP stack's are."""
        rid = self.rid
        if not (
            isinstance(raw, Response)
            and type(raw.status) is int
            and 100 <= raw.status <= 599
            and isinstance(raw.headers, Mapping)
            and isinstance(raw.content, bytes)
        ):
            raise ProtocolError(
                "the transport's answer is not a Response of an HTTP status (100-599), a "
                f"mapping of headers and bytes: {type(raw).__name__}",
                request_id=rid,
            )
        if type(raw.headers) is dict:
            from requests.structures import CaseInsensitiveDict

            raw = Response(raw.status, CaseInsensitiveDict(raw.headers), raw.content, raw.elapsed)
        limit = self._options.max_response_bytes
        if len(raw.content) > limit:
            BodyLimit(limit, raw.status, request_id=rid).add(raw.content)
        if logger.isEnabledFor(logging.DEBUG):
            activity = raw.headers.get("x-ch-activity-id")
            logger.debug(
                "%s request_id=%s HTTP %d, %d bytes in %.3fs (activity id %s)",
                self.name,
                rid,
                raw.status,
                len(raw.content),
                raw.elapsed,
                None if activity is None else self._caller.credentials.redact(activity),
            )
        return raw

    def wants_refresh(self, raw: Response) -> bool:
        """After a 401, once per call, when a token provider can be asked again."""
        if raw.status == 401 and self._caller.credentials.refreshable and not self.refreshed:
            self.refreshed = True
            return True
        return False

    def after_answer(self, raw: Response) -> float | None:
        """Seconds to wait before trying again, or None: the answer is final."""
        if not may_retry(idempotent=self._idempotent, status=raw.status) or (
            self.attempt >= self._options.retries
        ):
            return None
        if not 300 <= raw.status < 500:
            # A 5xx is no refusal (only a 3xx or 4xx is): the service may have acted on it.
            self.may_have_delivered()
        # Only where a retry is allowed anyway: Retry-After never makes a call repeatable.
        asked = (
            retry_after(raw.headers.get("Retry-After"), self._cap) if raw.status == 503 else None
        )
        if asked is None:
            return self._back_off(f"HTTP {raw.status}")
        return self._back_off(f"HTTP {raw.status} with Retry-After", asked)

    def _back_off(self, why: str, delay: float | None = None) -> float:
        if delay is None:
            fraction = float(self._random())
            # Outside [0, 1] is the nearer end; NaN, which compares false, is 0.
            fraction = 1.0 if fraction > 1 else fraction if fraction >= 0 else 0.0
            delay = min(self._options.retry_backoff * 2.0**self.attempt, self._cap) * fraction
        logger.info("%s request_id=%s: %s, retrying in %.2fs", self.name, self.rid, why, delay)
        self.attempt += 1
        return delay


TransportT = TypeVar("TransportT")


class Caller(Generic[TransportT]):
    """Posts request bodies to one service URL with one set of credentials, through
    ``options.transport`` or the stack's own. Each stack's caller adds its loop of attempts:
    the decisions of :class:`Attempts`, with its own waits and posts."""

    #: The stack's own transport, made from the URL, the options and the secrets' mask.
    own: ClassVar[type[Any]]
    #: What a transport given in the options must be, as the error refusing one says.
    needs: ClassVar[str]
    #: Whether the caller awaits the transport's ``post_async()``, or calls its ``post()``.
    awaits: ClassVar[bool]

    def __init__(self, url: str, credentials: Credentials, options: ClientOptions) -> None:
        if url.startswith("http:") and not options.allow_insecure_http:
            _refuse_plain_proxy(options.proxies)
        self.url = url
        self.credentials = credentials
        self.options = options
        given = options.transport
        post = getattr(given, "post_async" if self.awaits else "post", None)
        if given is None:
            given = self.own(url, options, credentials.redact)
        elif not callable(post) or inspect.iscoroutinefunction(post) != self.awaits:
            raise BadInputError("transport", f"{self.needs}, not {type(given).__name__}")
        self.transport = cast(TransportT, given)


def _refuse_plain_proxy(proxies: Mapping[str, str]) -> None:
    # Plain http to a loopback service still crosses the network when a proxy elsewhere
    # carries it: the proxy would see the PIN or token.
    for key, proxy in proxies.items():
        if key in ("http", "all") or key.startswith(("http://", "all://")):
            host = urlsplit(proxy).hostname or ""
            if not is_loopback(host):
                raise BadInputError(
                    f"proxies[{key!r}]",
                    f"plain http through the proxy {host} would expose the credentials; use "
                    "https (or pass allow_insecure_http=True)",
                )
