"""OAuth 2.0 token providers for the client credentials grant (RFC 6749, section 4.4): pass
one as ``token=`` to :class:`~faxws.FaxClient` (:class:`ClientCredentials`) or to
:class:`~faxws.AsyncFaxClient` (:class:`AsyncClientCredentials`)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import threading
import time
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

import requests

from faxws._http.shared import (
    DEFAULT_TIMEOUT,
    BodyLimit,
    Timeout,
    after_fork_in_child,
    check_timeout,
    check_verify,
)
from faxws._http.sync_transport import failure, forget_connections, new_session, read_body
from faxws._log import logger
from faxws._protocol.checks import check_header_token, check_text, is_loopback
from faxws._protocol.redact import mask_forms, masked_forms
from faxws.errors import (
    AuthenticationError,
    BadInputError,
    FaxWSError,
    ProtocolError,
    RequestTimeoutError,
)

__all__ = ["DEFAULT_SCOPE", "AsyncClientCredentials", "ClientCredentials"]


DEFAULT_SCOPE = "FaxWS offline_access"
#: Largest token response read; a token endpoint has no reason to send more.
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024
#: Seconds after a failed renewal before the next one starts, while the current token is
#: still used: an endpoint that is down is not asked again on every call.
RENEWAL_RETRY_SECONDS = 5.0


class _Token(NamedTuple):
    value: str
    expires_at: float
    """When the token stops being valid (the provider's clock)."""
    renew_at: float
    """From when a caller fetches the next one."""


class _Flight:
    """One token fetch in progress; when ``done`` is set, exactly one of ``token`` and
    ``error`` is not None."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.token: _Token | None = None
        self.error: FaxWSError | None = None


class ClientCredentials:
    """Fetches, caches and refreshes access tokens with the client credentials grant (the id
    and secret sent in the form body to ``token_url``: https, or http to a loopback host).
    Safe to share between threads; docs/authentication.md says when a token is renewed and
    who waits (nobody while the current token is valid: a thread renews it). The secret and
    the tokens never appear in ``repr``, logs or error messages.

    ``leeway``: seconds before expiry at which a cached token is renewed, or halfway through
    its lifetime when that is later (else a short-lived token would be renewed on arrival).
    ``timeout``: seconds, or (connect, read) seconds, for the token request.
    """

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str = DEFAULT_SCOPE,
        leeway: float = 30.0,
        timeout: Timeout = DEFAULT_TIMEOUT,
        verify: bool | str = True,
        allow_insecure_http: bool = False,
    ) -> None:
        parts = _token_url_parts(token_url)
        host = parts.hostname or ""  # never empty: checked
        if not isinstance(allow_insecure_http, bool):
            raise BadInputError(
                "allow_insecure_http",
                f"must be True or False, not {type(allow_insecure_http).__name__}",
            )
        if parts.scheme == "http" and not allow_insecure_http and not is_loopback(host):
            raise BadInputError("token_url", "plain http would expose the client secret")
        self._url = token_url
        self._client_id = check_text("client_id", client_id, required=True)
        self._secret = check_text("client_secret", client_secret, required=True)
        self._secret_forms = frozenset().union(*map(masked_forms, self._secrets()))
        self._scope = check_text("scope", scope)
        if (
            isinstance(leeway, bool)
            or not isinstance(leeway, (int, float))
            or not 0 <= leeway <= 86400
        ):
            raise BadInputError("leeway", "must be a number of seconds from 0 to 86400")
        self._leeway = float(leeway)
        self._timeout = check_timeout("timeout", timeout)
        self._where = f"the token endpoint {host}"
        self._verify = check_verify("verify", verify)
        self._session = self._new_session()
        # Guards the cached token and the fetch in progress; never held while fetching.
        self._lock = threading.Lock()
        self._token: _Token | None = None  # replaced whole, so one read sees a consistent one
        self._flight: _Flight | None = None
        # The token last handed to each thread: after a 401 the client invalidates from the
        # thread that sent it, and only that token may be forgotten (see invalidate).
        self._handed = threading.local()
        self._clock: Callable[[], float] = time.monotonic
        # No renewal starts before then: the last one failed (see RENEWAL_RETRY_SECONDS).
        self._renew_after = -math.inf
        # Runs a renewal away from the caller, who goes on with the current token.
        self._in_background: Callable[[Callable[[], None]], None] = _in_thread
        self.fetches = 0
        """How many tokens were fetched (for monitoring and tests)."""
        after_fork_in_child(self, ClientCredentials._after_fork_in_child)

    def _new_session(self) -> requests.Session:
        return new_session(self._verify, max_connections=4)

    def _secrets(self) -> tuple[str, str]:
        """The client secret, and ``id:secret`` as HTTP Basic carries it (an endpoint or a
        service may echo either); clients given this provider mask them too."""
        return self._secret, f"{self._client_id}:{self._secret}"

    def _redact(self, text: str) -> str:
        return mask_forms(text, self._secret_forms)

    def _after_fork_in_child(self) -> None:
        """The cached token stays valid in a forked child; the pooled connections (written
        into by two processes, they would interleave requests), the lock and a fetch in
        progress (held by a parent thread the child does not have) are the parent's."""
        forget_connections(self._session)
        self._session = self._new_session()
        self._lock = threading.Lock()
        self._flight = None

    def __repr__(self) -> str:
        return (
            f"ClientCredentials(token_url={self._url!r}, client_id={self._client_id!r}, "
            "client_secret=<hidden>)"
        )

    def __call__(self) -> str:
        token = self._token
        if token is not None and self._clock() < token.renew_at:
            return self._hand(token)
        return self._renew()

    def invalidate(self) -> None:
        """After an HTTP 401: forget the token last handed to this thread (the refused one)
        if it is still cached, so that concurrent 401s for one token lead to one fetch; from
        a thread never handed one, whatever is cached."""
        refused = getattr(self._handed, "value", None)
        with self._lock:
            if self._token is not None and refused in (None, self._token.value):
                self._token = None

    def _hand(self, token: _Token) -> str:
        self._handed.value = token.value
        return token.value

    def _renew(self) -> str:
        with self._lock:
            now = self._clock()
            token = self._token
            if token is not None and now < token.renew_at:
                return self._hand(token)  # another caller renewed it meanwhile
            usable = token is not None and now < token.expires_at
            flight = self._flight
            fetching = flight is None and (not usable or now >= self._renew_after)
            if fetching:
                flight = self._flight = _Flight()
        if usable:
            assert token is not None
            if fetching:
                assert flight is not None
                # Renewed away from this caller, which goes on with the current token.
                self._in_background(lambda: self._renew_quietly(flight, token))
            return self._hand(token)
        assert flight is not None
        if not fetching:
            # That fetch's outcome is this caller's too, a failure included: a fetch per waiter
            # would hit the endpoint once per waiter. The next call asks again.
            flight.done.wait()
            if flight.token is not None:
                return self._hand(flight.token)
            assert flight.error is not None
            raise _copy_error(flight.error)
        try:
            new = self._fetch()
        except BaseException as exc:
            error = _as_error(exc)
            # A copy for the waiting callers: the client writes its call's request id into
            # the error it raises.
            self._land(flight, None, _copy_error(error))
            if error is exc or not isinstance(exc, Exception):
                raise  # KeyboardInterrupt and the like stay this thread's own
            raise error from None  # not chained: the original may quote the answer
        self._land(flight, new, None)
        return self._hand(new)

    def _renew_quietly(self, flight: _Flight, current: _Token) -> None:
        """Fetch the next token while ``current`` is still valid: a failure fails no call
        (callers go on with ``current``); it is logged, and the renewal tried again later."""
        try:
            new = self._fetch()
        except BaseException as exc:
            # Landed whatever broke: callers that find the token expired meanwhile wait for
            # this fetch, and get its error.
            error = _as_error(exc)
            retry_at = _renewal_failed(error, current, self._clock())
            with self._lock:
                self._renew_after = retry_at
            self._land(flight, None, error)
            if not isinstance(exc, Exception):
                raise
            return
        self._land(flight, new, None)

    def _land(self, flight: _Flight, token: _Token | None, error: FaxWSError | None) -> None:
        with self._lock:
            if token is not None:
                self._token = token
                self._renew_after = -math.inf
            self._flight = None
        flight.token = token
        flight.error = error
        flight.done.set()

    def close(self) -> None:
        self._session.close()

    def _fetch(self) -> _Token:
        form = {
            "grant_type": "client_credentials",
            "client_id": self._client_id,
            "client_secret": self._secret,
        }
        if self._scope:
            form["scope"] = self._scope
        started = self._clock()
        read_timeout = self._timeout[1]
        # No fax request has been written while a token is fetched: whatever fails here,
        # the call it serves was not delivered (maybe_delivered stays False).
        try:
            with self._session.post(
                self._url,
                data=form,
                headers={"Accept": "application/json"},
                timeout=self._timeout,
                allow_redirects=False,
                stream=True,
            ) as response:
                status = response.status_code
                limit = BodyLimit(
                    MAX_TOKEN_RESPONSE_BYTES, status, what="token response", quote_declared=False
                )
                limit.declared(response.headers.get("Content-Length", ""))
                body = read_body(
                    response.raw,
                    limit,
                    read_timeout=read_timeout,
                    too_slow=lambda: RequestTimeoutError(
                        f"the token response took longer than {read_timeout} s to arrive",
                        maybe_delivered=False,
                    ),
                    chunk_size=16384,
                )
        except (ProtocolError, RequestTimeoutError):
            raise
        except Exception as exc:
            failed = failure(
                exc,
                written=False,
                request_id=None,
                where=self._where,
                redact=self._redact,
                token_endpoint=True,
            )
            raise failed from None  # not chained: the original may quote the endpoint's answer
        self.fetches += 1
        logger.debug("token endpoint answered HTTP %d", status)
        data = _parse_json(body)
        if status in (400, 401, 403):
            error = data.get("error") if isinstance(data, dict) else None
            text = error if isinstance(error, str) and error else f"HTTP {status}"
            raise AuthenticationError(
                f"the token endpoint refused the client credentials: {self._redact(text)[:200]}",
                status_code=status,
            )
        if status != 200:
            raise ProtocolError(f"the token endpoint answered HTTP {status}", status_code=status)
        if data is _NOT_JSON:
            raise ProtocolError("the token endpoint did not answer JSON")
        token = data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(token, str):
            raise ProtocolError("the token response has no access_token")
        token_type = data.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise ProtocolError("the token response's token_type is not Bearer")
        try:
            check_header_token("access_token", token)
        except BadInputError:
            raise ProtocolError("the token endpoint returned a malformed access_token") from None
        lifetime = _lifetime(data.get("expires_in", 3600))
        expires_at = started + lifetime
        return _Token(token, expires_at, expires_at - min(self._leeway, lifetime / 2))


def _token_url_parts(token_url: object) -> SplitResult:
    """``token_url`` split, once checked as the base URL is: none of it is quoted (it is no
    place for a secret, but one put there must not be shown), and no user information,
    query or fragment, which would carry credentials outside the form body and show them in
    ``repr``."""
    if not isinstance(token_url, str) or any(c.isspace() or ord(c) < 0x20 for c in token_url):
        raise BadInputError("token_url", "must be an http(s) URL with a host")
    try:
        parts = urlsplit(token_url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise BadInputError("token_url", "must be an http(s) URL with a host") from None
    if "@" in parts.netloc:
        raise BadInputError(
            "token_url",
            "must not contain user information (user@host); the client id and secret are "
            "separate arguments",
        )
    if "?" in token_url or parts.query:
        raise BadInputError("token_url", "must not contain a query (?...)")
    if "#" in token_url or parts.fragment:
        raise BadInputError("token_url", "must not contain a fragment (#...)")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInputError("token_url", "must be an http(s) URL with a host")
    return parts


def _in_thread(renew: Callable[[], None]) -> None:
    """Run ``renew`` in a thread of its own (a daemon: a renewal never keeps a program alive);
    in the caller's thread when no thread can be started (as the interpreter shuts down)."""
    try:
        threading.Thread(target=renew, name="faxws-token-renewal", daemon=True).start()
    except RuntimeError:
        renew()


def _renewal_failed(error: FaxWSError, current: _Token, now: float) -> float:
    """Log a failed renewal (its class and masked message: no secret, no token) and return
    when the next one may start."""
    logger.warning(
        "renewing the access token failed (%s: %s); the current one, valid for %.0f s more, "
        "is used meanwhile, and renewal is tried again in %.0f s",
        type(error).__name__,
        error.message,
        max(current.expires_at - now, 0.0),
        RENEWAL_RETRY_SECONDS,
    )
    return now + RENEWAL_RETRY_SECONDS


def _lifetime(expires_in: object) -> float:
    """Seconds from ``expires_in``; 0 (use the token once, ask again next time) when it is
    not a finite number of seconds >= 0."""
    if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)):
        return 0.0
    try:
        seconds = float(expires_in)
    except OverflowError:  # an int too large for a float
        return 0.0
    return seconds if math.isfinite(seconds) and seconds >= 0 else 0.0


def _as_error(exc: BaseException) -> FaxWSError:
    """``exc`` as the FaxWSError a caller of a provider gets: itself when it is one, else an
    error naming only its type (its text may quote what the endpoint sent)."""
    if isinstance(exc, FaxWSError):
        return exc
    if isinstance(exc, Exception):
        return AuthenticationError(f"the token request failed with {type(exc).__name__}")
    return AuthenticationError(f"the token request was interrupted ({type(exc).__name__})")


def _copy_error(error: FaxWSError) -> FaxWSError:
    """A new exception equal to ``error``, for one more caller to raise as its own."""
    copy = type(error).__new__(type(error))
    copy.__dict__.update(error.__dict__)
    copy.args = error.args
    copy.__cause__ = error.__cause__
    copy.__suppress_context__ = error.__suppress_context__
    return copy


class AsyncClientCredentials:
    """:class:`ClientCredentials` for :class:`~faxws.AsyncFaxClient`, awaited for every
    request: the same arguments, checks, renewal and token request (made by a
    :class:`ClientCredentials` in a worker thread, once per token). Concurrent tasks share one
    fetch; a task cancelled while it waits leaves the fetch to the others; a token due for
    renewal but still valid is renewed by a task of its own that no caller awaits."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str = DEFAULT_SCOPE,
        leeway: float = 30.0,
        timeout: Timeout = DEFAULT_TIMEOUT,
        verify: bool | str = True,
        allow_insecure_http: bool = False,
    ) -> None:
        self._grant = ClientCredentials(
            token_url,
            client_id,
            client_secret,
            scope=scope,
            leeway=leeway,
            timeout=timeout,
            verify=verify,
            allow_insecure_http=allow_insecure_http,
        )
        self._token: _Token | None = None
        self._fetching: asyncio.Task[_Token] | None = None
        # No renewal starts before then: the last one failed (see RENEWAL_RETRY_SECONDS).
        self._renew_after = -math.inf
        # The token handed to the current task, so that its 401 forgets only that one.
        self._handed: contextvars.ContextVar[str] = contextvars.ContextVar("faxws_token")
        after_fork_in_child(self, AsyncClientCredentials._after_fork_in_child)

    @property
    def fetches(self) -> int:
        """How many tokens were fetched (for monitoring and tests)."""
        return self._grant.fetches

    def __repr__(self) -> str:
        return f"Async{self._grant!r}"

    def _secrets(self) -> tuple[str, str]:
        return self._grant._secrets()

    async def __call__(self) -> str:
        token = self._token
        now = self._grant._clock()
        fetching = self._fetching
        if fetching is not None and fetching.get_loop() is not asyncio.get_running_loop():
            fetching = None  # another loop's, which this one cannot await
        if token is not None and now < token.expires_at:
            # Past renew_at, the next token is fetched by a task of its own while callers go
            # on with this one, which is still valid.
            if now >= token.renew_at and fetching is None and now >= self._renew_after:
                self._start(renewing=token)
            self._handed.set(token.value)
            return token.value
        if fetching is None:
            fetching = self._start(renewing=None)
        # Shielded: one waiter's cancellation must not cancel the fetch the others await.
        try:
            token = await asyncio.shield(fetching)
        except FaxWSError as exc:
            raise _copy_error(exc) from None  # each waiter's own, for its own request id
        self._handed.set(token.value)
        return token.value

    def _start(self, *, renewing: _Token | None) -> asyncio.Task[_Token]:
        fetching = self._fetching = asyncio.ensure_future(self._fetch(renewing))
        # Its waiters may all be cancelled, or it may have none: its failure is not asyncio's
        # to log.
        fetching.add_done_callback(lambda done: done.cancelled() or done.exception())
        return fetching

    def _after_fork_in_child(self) -> None:
        # A fetch in progress at the fork runs in a parent thread the child does not have.
        self._fetching = None

    def invalidate(self) -> None:
        """Forget the token this task was handed, if it is still the cached one (after a
        401): a token another task fetched since is kept."""
        cached = self._token
        if cached is not None and cached.value == self._handed.get(None):
            self._token = None

    def close(self) -> None:
        self._grant.close()

    async def _fetch(self, renewing: _Token | None) -> _Token:
        """The next token; ``renewing``: the still valid one callers use meanwhile, whose
        renewal fails no call (the failure is logged, and renewal tried again later)."""
        try:
            token = await asyncio.get_running_loop().run_in_executor(None, self._grant._fetch)
        except Exception as exc:
            # Every waiter gets this outcome: a FaxWSError, whatever broke.
            error = _as_error(exc)
            if renewing is not None:
                self._renew_after = _renewal_failed(error, renewing, self._grant._clock())
            if error is exc:
                raise
            raise error from None
        finally:
            self._fetching = None
        self._token = token
        self._renew_after = -math.inf
        return token


_NOT_JSON = object()


def _parse_json(body: bytes) -> object:
    """The JSON document in ``body``, or _NOT_JSON. Integers are read as floats: one of
    thousands of digits is then infinite (no usable lifetime), not an error on some Python
    versions and a slow conversion on others; nesting past the recursion limit is not JSON."""
    try:
        return json.loads(body, parse_int=float)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return _NOT_JSON
