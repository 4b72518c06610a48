"""How the simulator refuses a request: an HTTP status with a body, raised anywhere below
the HTTP handler and written by it."""

from __future__ import annotations

from collections.abc import Mapping

from faxws._protocol.soap import CONTENT_TYPE
from faxws._protocol.writer import fault_envelope

__all__ = ["RejectError", "client_fault", "not_allowed", "plain", "server_fault"]


class RejectError(Exception):
    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: str = CONTENT_TYPE,
        headers: Mapping[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(status)
        self.status, self.body, self.content_type = status, body, content_type
        self.headers = dict(headers or {})
        #: Why, in words, for the records (a plain-text body says it itself).
        self.reason = reason or body.decode("utf-8", "replace").strip()


def client_fault(text: str, status: int = 500) -> RejectError:
    """A SOAP Client fault: the request is wrong."""
    return RejectError(status, fault_envelope("soap:Client", text), reason=text)


def server_fault(text: str) -> RejectError:
    """A SOAP Server fault: the simulator could not serve a right request."""
    return RejectError(500, fault_envelope("soap:Server", text), reason=text)


def plain(status: int, text: str, headers: Mapping[str, str] | None = None) -> RejectError:
    """A refusal in plain text, one line."""
    return RejectError(status, f"{text}\n".encode(), "text/plain", headers)


def not_allowed() -> RejectError:
    return plain(405, "method not allowed", {"Allow": "POST"})
