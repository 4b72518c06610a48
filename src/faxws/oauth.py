"""OAuth 2.0 token providers for the client credentials grant (RFC 6749, section 4.4).

Pass an instance as ``token=`` to :class:`~faxws.FaxClient`: the client calls it for every
request; it answers from its cache until shortly before the token expires, and fetches a new
token after the client reports an HTTP 401 (through :meth:`ClientCredentials.invalidate`).
:class:`AsyncClientCredentials` is the same for :class:`~faxws.AsyncFaxClient`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import threading
import time
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

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
from faxws._protocol.redact import redact
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


class _Token(NamedTuple):
    value: str
    expires_at: float
    """When the token stops being valid (the provider's clock)."""
    renew_at: float
    """From when a caller fetches the next one."""


class _Flight:
    """One token fetch in progress, and its outcome for the callers waiting for it: when
    ``done`` is set, exactly one of ``token`` and ``error`` is not None."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.token: _Token | None = None
        self.error: FaxWSError | None = None


class ClientCredentials:
    """Fetches, caches and refreshes access tokens with the client credentials grant.

    Thread-safe without making callers wait for each other: a cached token is read without a
    lock; when it is due for renewal one caller fetches the next while the others go on
    using it until it really expires; callers without a usable token wait for that one fetch
    (and share its failure) instead of fetching one each. The secret and the tokens never
    appear in ``repr``, logs or error messages.

    Args:
        token_url: the token endpoint (https, or http to a loopback host).
        client_id, client_secret: the client's credentials (sent in the form body).
        scope: the scope asked for; default ``"FaxWS offline_access"``.
        leeway: seconds before expiry at which a cached token is renewed. A token whose
            lifetime is shorter than twice the leeway is renewed halfway through its life
            instead: with a fixed leeway, a token living 30 s or less would be renewed as
            soon as it arrived, so every call would fetch one. Half keeps a margin that
            grows with the lifetime and still reuses each token for half of it.
        timeout: seconds, or (connect, read) seconds, for the token request.
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
        try:
            parts = urlsplit(token_url) if isinstance(token_url, str) else None
            if parts is not None:
                parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInputError("token_url", "must be an http(s) URL with a host")
        if not isinstance(allow_insecure_http, bool):
            raise BadInputError(
                "allow_insecure_http",
                f"must be True or False, not {type(allow_insecure_http).__name__}",
            )
        if parts.scheme == "http" and not allow_insecure_http and not is_loopback(parts.hostname):
            raise BadInputError("token_url", "plain http would expose the client secret")
        self._url = token_url
        self._client_id = check_text("client_id", client_id, required=True)
        self._secret = check_text("client_secret", client_secret, required=True)
        self._scope = check_text("scope", scope)
        if (
            isinstance(leeway, bool)
            or not isinstance(leeway, (int, float))
            or not 0 <= leeway <= 86400
        ):
            raise BadInputError("leeway", "must be a number of seconds from 0 to 86400")
        self._leeway = float(leeway)
        self._timeout = check_timeout("timeout", timeout)
        self._where = f"the token endpoint {parts.hostname}"
        self._verify = check_verify("verify", verify)
        self._session = self._new_session()
        # Held only to look at or replace the cached token and the fetch in progress; never
        # while fetching.
        self._lock = threading.Lock()
        self._token: _Token | None = None  # replaced whole, so one read sees a consistent one
        self._flight: _Flight | None = None
        # The token last handed to each thread: after a 401 the client invalidates from the
        # thread that sent it, and only that token may be forgotten (see invalidate).
        self._handed = threading.local()
        self._clock: Callable[[], float] = time.monotonic
        self.fetches = 0
        """How many tokens were fetched (for monitoring and tests)."""
        after_fork_in_child(self, ClientCredentials._after_fork_in_child)

    def _new_session(self) -> requests.Session:
        # No proxy, CA bundle or .netrc from the environment: the trust given (the system's,
        # or the bundle in `verify`, alone) is the only trust used.
        return new_session(self._verify, max_connections=4)

    def _redact(self, text: str) -> str:
        return redact(text, (self._secret,))

    def _after_fork_in_child(self) -> None:
        """In a forked child: the cached token stays (it is valid here too); the pooled
        connections, the lock and a fetch in progress belong to the parent. Written into by
        two processes, a connection would carry their requests and answers interleaved; a
        lock or fetch held by a parent thread would never be released here (that thread does
        not exist in the child)."""
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
        """Forget the cached token, which the service refused (HTTP 401): the next call
        fetches a new one.

        The token forgotten is the one last handed to the calling thread, the one its
        request carried; if another thread has replaced it already, the new token is kept,
        so that concurrent 401s for one token lead to one fetch. From a thread that was
        never handed a token, whatever token is cached is forgotten.
        """
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
            flight = self._flight
            fetching = flight is None
            if flight is None:
                flight = self._flight = _Flight()
        if not fetching:
            if token is not None and now < token.expires_at:
                return self._hand(token)  # still valid while another caller fetches
            # Whatever that fetch's outcome, it is this caller's too: a failure is not a
            # reason for each waiter to fetch again (the endpoint would get one request per
            # waiter); the next call after it asks again.
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

    def _land(self, flight: _Flight, token: _Token | None, error: FaxWSError | None) -> None:
        with self._lock:
            if token is not None:
                self._token = token
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
        # No fax request has been written while a token is fetched: whatever fails here,
        # the call it serves was not delivered (maybe_delivered stays False).
        try:
            response = self._session.post(
                self._url,
                data=form,
                headers={"Accept": "application/json"},
                timeout=self._timeout,
                allow_redirects=False,
                stream=True,
            )
            try:
                body = _read_capped(response, self._timeout[1])
            finally:
                response.close()
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
        logger.debug("token endpoint answered HTTP %d", response.status_code)
        if response.status_code in (400, 401, 403):
            error = _json_field(body, "error") or f"HTTP {response.status_code}"
            error = redact(error, (self._secret,))[:200]
            raise AuthenticationError(
                f"the token endpoint refused the client credentials: {error}",
                status_code=response.status_code,
            )
        if response.status_code != 200:
            raise ProtocolError(
                f"the token endpoint answered HTTP {response.status_code}",
                status_code=response.status_code,
            )
        data = _parse_json(body)
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
    """:class:`ClientCredentials` for :class:`~faxws.AsyncFaxClient`: awaited for every
    request, it answers from its cache until the token is due for renewal (as
    :class:`ClientCredentials` decides: ``leeway`` before expiry, or halfway through a short
    life), and while one task renews it, the others keep the token still valid.

    Concurrent tasks share one fetch; a task cancelled while it waits leaves the fetch to the
    others (and to the cache). The arguments, their checks, the token request and every
    check of its answer (bounded body, errors without the secret) are
    :class:`ClientCredentials`' own: the request is made by one of its instances, in a
    worker thread, once per token (not once per call). The client passes it the call's
    request id through its errors, as for the sync provider.
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
        self._url = token_url
        self._client_id = client_id
        self._token: _Token | None = None
        self._fetching: asyncio.Task[_Token] | None = None
        # The token handed to the current task, so that its 401 forgets only that one.
        self._handed: contextvars.ContextVar[str] = contextvars.ContextVar("faxws_token")
        after_fork_in_child(self, AsyncClientCredentials._after_fork_in_child)

    @property
    def fetches(self) -> int:
        """How many tokens were fetched (for monitoring and tests)."""
        return self._grant.fetches

    def __repr__(self) -> str:
        return (
            f"AsyncClientCredentials(token_url={self._url!r}, client_id={self._client_id!r}, "
            "client_secret=<hidden>)"
        )

    async def __call__(self) -> str:
        cached = self._token
        now = self._grant._clock()
        if cached is not None and now < cached.renew_at:
            self._handed.set(cached.value)
            return cached.value
        fetching = self._fetching
        if (
            cached is not None
            and now < cached.expires_at
            and fetching is not None
            and fetching.get_loop() is asyncio.get_running_loop()
        ):
            self._handed.set(cached.value)
            return cached.value  # still valid while another task renews it
        if fetching is None or fetching.get_loop() is not asyncio.get_running_loop():
            fetching = self._fetching = asyncio.ensure_future(self._fetch())
            # Its waiters may all have been cancelled: its failure is theirs to see, not
            # asyncio's to log.
            fetching.add_done_callback(lambda done: done.cancelled() or done.exception())
        # Shielded: one waiter's cancellation must not cancel the fetch the others wait for.
        try:
            token = await asyncio.shield(fetching)
        except FaxWSError as exc:
            raise _copy_error(exc) from None  # each waiter's own, for its own request id
        self._handed.set(token.value)
        return token.value

    def _after_fork_in_child(self) -> None:
        # A fetch in progress at the fork runs in a parent thread that the child does not
        # have; the ClientCredentials making the requests forgets its own state.
        self._fetching = None

    def invalidate(self) -> None:
        """Forget the token this task was handed, if it is still the cached one (after a
        401): a token another task fetched since is kept."""
        cached = self._token
        if cached is not None and cached.value == self._handed.get(None):
            self._token = None

    def close(self) -> None:
        self._grant.close()

    async def _fetch(self) -> _Token:
        try:
            token = await asyncio.get_running_loop().run_in_executor(None, self._grant._fetch)
        except FaxWSError:
            raise
        except Exception as exc:
            # Every waiter gets this outcome: a FaxWSError, whatever broke.
            raise _as_error(exc) from None
        finally:
            self._fetching = None
        self._token = token
        return token


def _read_capped(response: requests.Response, read_timeout: float) -> bytes:
    """The body, at most MAX_TOKEN_RESPONSE_BYTES, within the read time-out as a whole."""
    limit = BodyLimit(
        MAX_TOKEN_RESPONSE_BYTES,
        response.status_code,
        what="token response",
        quote_declared=False,
    )
    limit.declared(response.headers.get("Content-Length", ""))
    return read_body(
        response.raw,
        limit,
        read_timeout=read_timeout,
        too_slow=lambda: RequestTimeoutError(
            f"the token response took longer than {read_timeout} s to arrive",
            maybe_delivered=False,
        ),
        chunk_size=16384,
    )


_NOT_JSON = object()


def _parse_json(body: bytes) -> object:
    """The JSON document in ``body``, or _NOT_JSON.

    Numbers are read as floats: an integer of thousands of digits is then infinite (a
    lifetime not usable as one) rather than an error on some Python versions and a slow
    conversion on others. Nesting deeper than the interpreter's recursion limit raises
    RecursionError in the parser, which is as much "not JSON" as a syntax error.
    """
    try:
        return json.loads(body, parse_int=float)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return _NOT_JSON


def _json_field(body: bytes, name: str) -> str | None:
    data = _parse_json(body)
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
