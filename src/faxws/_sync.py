"""The synchronous exchange shared by the sync faces (:class:`faxws.FaxClient` and
:mod:`faxws.zeep`): their options checked once, the token fetched per attempt, one retry after
a 401 for token providers, and retries only as :func:`faxws._soap.may_retry` allows."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from faxws._checks import check_int, is_loopback
from faxws._log import logger
from faxws._soap import may_retry, request_headers
from faxws._transport import (
    HttpTransport,
    RawResponse,
    Timeout,
    check_proxies,
    check_timeout,
    check_verify,
)
from faxws._version import __version__
from faxws.auth import Credentials
from faxws.errors import BadInputError, TransportError

__all__ = ["SyncCaller"]


def _refuse_plain_proxy(proxies: Mapping[str, str]) -> None:
    """Plain http to a loopback service still crosses the network when a proxy elsewhere
    carries it: the proxy would see the PIN or token."""
    for key, proxy in proxies.items():
        if key in ("http", "all") or key.startswith(("http://", "all://")):
            host = urlsplit(proxy).hostname or ""
            if not is_loopback(host):
                raise BadInputError(
                    f"proxies[{key!r}]",
                    f"plain http through the proxy {host} would expose the credentials; use "
                    "https (or pass allow_insecure_http=True)",
                )


class SyncCaller:
    """Posts request bodies to one service URL with one set of credentials."""

    def __init__(
        self,
        url: str,
        credentials: Credentials,
        *,
        timeout: Timeout,
        verify: bool | str,
        proxies: Mapping[str, str] | None,
        allow_insecure_http: bool,
        retries: int,
        retry_backoff: float,
        max_connections: int,
        max_response_bytes: int,
    ) -> None:
        self.url = url
        self.credentials = credentials
        self.retries = check_int("retries", retries, 0, 10)
        if (
            isinstance(retry_backoff, bool)
            or not isinstance(retry_backoff, (int, float))
            or not 0 <= retry_backoff <= 3600
        ):
            raise BadInputError("retry_backoff", "must be a number of seconds from 0 to 3600")
        self.retry_backoff = float(retry_backoff)
        checked_proxies = check_proxies("proxies", proxies)
        if url.startswith("http:") and not allow_insecure_http:
            _refuse_plain_proxy(checked_proxies)
        self.http = HttpTransport(
            url,
            timeout=check_timeout("timeout", timeout),
            verify=check_verify("verify", verify),
            proxies=checked_proxies,
            max_connections=check_int("max_connections", max_connections, 1, 1024),
            max_response_bytes=check_int("max_response_bytes", max_response_bytes, 1024, 2**40),
            user_agent=f"faxws/{__version__}",
            redact=credentials.redact,
        )

    def close(self) -> None:
        self.http.close()

    def call(
        self,
        name: str,
        body: bytes | Iterable[bytes],
        size: int,
        rid: str,
        soap_action: str,
        *,
        idempotent: bool,
    ) -> RawResponse:
        """The final answer to ``body`` (``size`` bytes), after the retries that are safe."""
        attempt = 0
        refreshed = False
        while True:
            token = self.credentials.bearer_token(rid)
            logger.debug(
                "%s request_id=%s POST %s (%d bytes, attempt %d)",
                name,
                rid,
                self.url,
                size,
                attempt + 1,
            )
            try:
                raw = self.http.post(body, request_headers(rid, token, soap_action), rid)
            except TransportError as exc:
                # No byte written: always safe to repeat. Any byte: only an idempotent call.
                if may_retry(idempotent=idempotent, error=exc) and attempt < self.retries:
                    attempt = self._back_off(name, rid, attempt, type(exc).__name__)
                    continue
                logger.debug("%s request_id=%s failed: %s", name, rid, type(exc).__name__)
                raise
            if logger.isEnabledFor(logging.DEBUG):
                activity = raw.headers.get("x-ch-activity-id")
                logger.debug(
                    "%s request_id=%s HTTP %d, %d bytes in %.3fs (activity id %s)",
                    name,
                    rid,
                    raw.status,
                    len(raw.content),
                    raw.elapsed,
                    None if activity is None else self.credentials.redact(activity),
                )
            if raw.status == 401 and not refreshed and self.credentials.refresh():
                refreshed = True
                continue
            if may_retry(idempotent=idempotent, status=raw.status) and attempt < self.retries:
                attempt = self._back_off(name, rid, attempt, f"HTTP {raw.status}")
                continue
            return raw

    def _back_off(self, name: str, rid: str, attempt: int, why: str) -> int:
        delay = self.retry_backoff * (2**attempt)
        logger.info("%s request_id=%s: %s, retrying in %.2fs", name, rid, why, delay)
        time.sleep(delay)
        return attempt + 1
