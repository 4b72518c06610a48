"""OAuth 2.0 token providers for the client credentials grant (RFC 6749, section 4.4).

Pass an instance as ``token=`` to :class:`~faxws.FaxClient`: the client calls it for every
request; it answers from its cache until shortly before the token expires, and fetches a new
token after the client reports an HTTP 401 (through :meth:`ClientCredentials.invalidate`).
:class:`AsyncClientCredentials` is the same for :class:`~faxws.AsyncFaxClient`.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from urllib.parse import urlsplit

import requests

from faxws._checks import check_header_token, check_text, is_loopback
from faxws._log import logger
from faxws._redact import redact
from faxws._transport import (
    DEFAULT_TIMEOUT,
    Timeout,
    _Adapter,
    check_timeout,
    check_verify,
    describe_failure,
)
from faxws.errors import (
    AuthenticationError,
    BadInputError,
    ConnectError,
    ProtocolError,
    RequestTimeoutError,
)

__all__ = ["DEFAULT_SCOPE", "AsyncClientCredentials", "ClientCredentials"]


DEFAULT_SCOPE = "FaxWS offline_access"
#: Largest token response read; a token endpoint has no reason to send more.
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024


class ClientCredentials:
    """Fetches, caches and refreshes access tokens with the client credentials grant.

    Thread-safe: concurrent callers share one fetch. The secret and the tokens never appear
    in ``repr``, logs or error messages.

    Args:
        token_url: the token endpoint (https, or http to a loopback host).
        client_id, client_secret: the client's credentials (sent in the form body).
        scope: the scope asked for; default ``"FaxWS offline_access"``.
        leeway: seconds before expiry at which a cached token is renewed.
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
        self._session = requests.Session()
        # The faxws adapter: interim answers read past, the answer's head within the read
        # time-out, unparseable header lines refused.
        adapter = _Adapter(pool_connections=1, pool_maxsize=4, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.trust_env = False
        self._session.verify = check_verify("verify", verify)
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at = 0.0
        self.fetches = 0
        """How many tokens were fetched (for monitoring and tests)."""

    def __repr__(self) -> str:
        return (
            f"ClientCredentials(token_url={self._url!r}, client_id={self._client_id!r}, "
            "client_secret=<hidden>)"
        )

    def __call__(self) -> str:
        with self._lock:
            if self._token is None or time.monotonic() >= self._expires_at - self._leeway:
                self._token, self._expires_at = self._fetch()
            return self._token

    def invalidate(self) -> None:
        """Forget the cached token: the next call fetches a new one."""
        with self._lock:
            self._token = None

    def close(self) -> None:
        self._session.close()

    def _fetch(self) -> tuple[str, float]:
        form = {
            "grant_type": "client_credentials",
            "client_id": self._client_id,
            "client_secret": self._secret,
        }
        if self._scope:
            form["scope"] = self._scope
        started = time.monotonic()
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
            kind, cause = describe_failure(exc)
            cause = redact(cause, (self._secret,))
            if kind == "timeout":
                raise RequestTimeoutError(
                    f"{self._where} did not answer in time ({cause})", maybe_delivered=False
                ) from None  # not chained: the original may quote the endpoint's answer
            raise ConnectError(f"cannot get a token from {self._where}: {cause}") from None
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
        try:
            data = json.loads(body)
        except ValueError:
            raise ProtocolError("the token endpoint did not answer JSON") from None
        token = data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str):
            raise ProtocolError("the token response has no access_token")
        token_type = data.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise ProtocolError("the token response's token_type is not Bearer")
        try:
            check_header_token("access_token", token)
        except BadInputError:
            raise ProtocolError("the token endpoint returned a malformed access_token") from None
        expires_in = data.get("expires_in", 3600)
        if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)):
            expires_in = 0  # unknown lifetime: use it once, ask again next time
        return token, started + float(expires_in)


class AsyncClientCredentials:
    """:class:`ClientCredentials` for :class:`~faxws.AsyncFaxClient`: awaited for every
    request, it answers from its cache until ``leeway`` seconds before the token expires.

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
        self._leeway = float(leeway)
        self._token: str | None = None
        self._expires_at = 0.0
        self._fetching: asyncio.Task[tuple[str, float]] | None = None

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
        if cached is not None and time.monotonic() < self._expires_at - self._leeway:
            return cached
        fetching = self._fetching
        if fetching is None or fetching.get_loop() is not asyncio.get_running_loop():
            fetching = self._fetching = asyncio.ensure_future(self._fetch())
            # Its waiters may all have been cancelled: its failure is theirs to see, not
            # asyncio's to log.
            fetching.add_done_callback(lambda done: done.cancelled() or done.exception())
        # Shielded: one waiter's cancellation must not cancel the fetch the others wait for.
        token, _ = await asyncio.shield(fetching)
        return token

    def invalidate(self) -> None:
        """Forget the cached token: the next call fetches a new one."""
        self._token = None

    def close(self) -> None:
        self._grant.close()

    async def _fetch(self) -> tuple[str, float]:
        try:
            token, expires_at = await asyncio.get_running_loop().run_in_executor(
                None, self._grant._fetch
            )
        finally:
            self._fetching = None
        self._token, self._expires_at = token, expires_at
        return token, expires_at


def _read_capped(response: requests.Response, read_timeout: float) -> bytes:
    """The body, at most MAX_TOKEN_RESPONSE_BYTES, within the read time-out as a whole."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_TOKEN_RESPONSE_BYTES:
        raise ProtocolError(
            f"the token response is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes",
            status_code=response.status_code,
        )
    deadline = time.monotonic() + read_timeout
    pieces: list[bytes] = []
    total = 0
    while chunk := response.raw.read1(16384, decode_content=True):
        total += len(chunk)
        if total > MAX_TOKEN_RESPONSE_BYTES:
            raise ProtocolError(
                f"the token response is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes",
                status_code=response.status_code,
            )
        if time.monotonic() > deadline:
            raise RequestTimeoutError(
                f"the token response took longer than {read_timeout} s to arrive",
                maybe_delivered=False,
            )
        pieces.append(chunk)
    return b"".join(pieces)


def _json_field(body: bytes, name: str) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
