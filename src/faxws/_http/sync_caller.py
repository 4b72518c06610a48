"""The synchronous exchange shared by the sync faces (:class:`faxws.FaxClient` and
:mod:`faxws.zeep`): the token fetched per attempt, one retry after a 401 for token providers,
retries only as :func:`faxws._protocol.soap.may_retry` allows (the decisions are
:class:`faxws._http.shared.Attempts`, shared with the asynchronous caller), and the size limit
of answers, whatever the transport below."""

from __future__ import annotations

import time
from collections.abc import Iterable
from inspect import iscoroutinefunction
from typing import cast

from faxws._http.options import ClientOptions
from faxws._http.shared import Attempts, Request, Response, SyncTransport, refuse_plain_proxy
from faxws._http.sync_transport import HttpTransport
from faxws._protocol.soap import request_headers
from faxws._version import __version__
from faxws.auth import Credentials
from faxws.errors import BadInputError, FaxWSError

__all__ = ["SyncCaller"]


class SyncCaller:
    """Posts request bodies to one service URL with one set of credentials, through
    ``options.transport`` or faxws's own."""

    #: How the caller waits between attempts.
    wait = staticmethod(time.sleep)

    def __init__(self, url: str, credentials: Credentials, options: ClientOptions) -> None:
        refuse_plain_proxy(url, options.proxies, allow_insecure_http=options.allow_insecure_http)
        self.url = url
        self.credentials = credentials
        self.options = options
        given = options.transport
        if given is None:
            given = HttpTransport(
                url, options, user_agent=f"faxws/{__version__}", redact=credentials.redact
            )
        elif not callable(post := getattr(given, "post", None)) or iscoroutinefunction(post):
            raise BadInputError(
                "transport",
                "FaxClient and make_client need a SyncTransport (a post() returning the "
                f"answer), not {type(given).__name__}",
            )
        self.transport = cast(SyncTransport, given)

    def close(self) -> None:
        self.transport.close()

    def call(
        self,
        name: str,
        body: bytes | Iterable[bytes],
        size: int,
        rid: str,
        soap_action: str,
        *,
        idempotent: bool,
    ) -> Response:
        """The final answer to ``body`` (``size`` bytes), after the retries that are safe."""
        credentials = self.credentials
        attempts = Attempts(
            name, idempotent=idempotent, options=self.options, redact=credentials.redact
        )
        while True:
            token = credentials.bearer_token(rid)
            attempts.sending(rid, self.url, size)
            request = Request(self.url, request_headers(rid, token, soap_action), body, size, rid)
            try:
                raw = self.transport.post(request)
            except FaxWSError as exc:
                delay = attempts.after_error(rid, exc, written=request.written)
                if delay is None:
                    raise
                self.wait(delay)
                continue
            raw = attempts.answered(rid, raw)
            if attempts.wants_refresh(raw, credentials.refreshable) and credentials.refresh():
                continue
            delay = attempts.after_answer(rid, raw)
            if delay is None:
                return raw
            self.wait(delay)
