"""The synchronous exchange shared by the sync faces (:class:`faxws.FaxClient` and
:mod:`faxws.zeep`): the token fetched per attempt, one retry after
a 401 for token providers, and retries only as :func:`faxws._protocol.soap.may_retry` allows (the
decisions are :class:`faxws._http.shared.Attempts`, shared with the asynchronous caller)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from faxws._http.options import ClientOptions
from faxws._http.shared import DEFAULT_MAX_CONNECTIONS, Attempts, refuse_plain_proxy
from faxws._http.sync_transport import HttpTransport, RawResponse
from faxws._protocol.soap import request_headers
from faxws._version import __version__
from faxws.auth import Credentials
from faxws.errors import TransportError

__all__ = ["SyncCaller"]


class SyncCaller:
    """Posts request bodies to one service URL with one set of credentials."""

    def __init__(
        self,
        url: str,
        credentials: Credentials,
        options: ClientOptions,
    ) -> None:
        refuse_plain_proxy(url, options.proxies, allow_insecure_http=options.allow_insecure_http)
        self.url = url
        self.credentials = credentials
        self.options = options
        self.retries = options.retries
        self.retry_backoff = options.retry_backoff
        self.http = HttpTransport(
            url,
            timeout=options.timeout,
            verify=options.verify,
            proxies=options.proxies,
            max_connections=options.max_connections or DEFAULT_MAX_CONNECTIONS,
            max_response_bytes=options.max_response_bytes,
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
        credentials = self.credentials
        attempts = Attempts(
            name,
            idempotent=idempotent,
            retries=self.retries,
            backoff=self.retry_backoff,
            redact=credentials.redact,
        )
        while True:
            token = credentials.bearer_token(rid)
            attempts.sending(rid, self.url, size)
            try:
                raw = self.http.post(body, request_headers(rid, token, soap_action), rid)
            except TransportError as exc:
                delay = attempts.after_error(rid, exc)
                if delay is None:
                    raise
                time.sleep(delay)
                continue
            attempts.answered(rid, raw)
            if attempts.wants_refresh(raw, credentials.refreshable) and credentials.refresh():
                continue
            delay = attempts.after_answer(rid, raw)
            if delay is None:
                return raw
            time.sleep(delay)
