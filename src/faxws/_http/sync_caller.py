"""The synchronous exchange of :class:`faxws.FaxClient` and :mod:`faxws.zeep`: the decisions of
:class:`~faxws._http.shared.Attempts` with blocking waits and posts."""

from __future__ import annotations

import time
from collections.abc import Iterable

from faxws._http.shared import Attempts, Caller, Response, SyncTransport
from faxws._http.sync_transport import HttpTransport
from faxws.errors import FaxWSError

__all__ = ["SyncCaller"]


class SyncCaller(Caller[SyncTransport]):
    own = HttpTransport
    needs = "FaxClient and make_client need a SyncTransport (a post() returning the answer)"
    awaits = False
    #: How the caller waits between attempts.
    wait = staticmethod(time.sleep)

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
        attempts = Attempts(self, name, rid, soap_action, idempotent=idempotent)
        while True:
            request = attempts.request(self.credentials.bearer_token(rid), body, size)
            try:
                raw = self.transport.post(request)
            except FaxWSError as exc:
                delay = attempts.after_error(exc, request)
                if delay is None:
                    raise
            else:
                raw = attempts.answered(raw)
                if attempts.wants_refresh(raw) and self.credentials.refresh():
                    continue
                delay = attempts.after_answer(raw)
                if delay is None:
                    return raw
            self.wait(delay)
