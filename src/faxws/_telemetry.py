"""OpenTelemetry: one CLIENT span per operation call (its retries inside it), when the
``otel`` extra (opentelemetry-api) is installed; without it nothing is imported and a call
pays one attribute lookup.

A span carries the operation, the server's address, the request and activity ids, the
WSError code and whether the request may have been delivered: never a fax number, a name, a
PIN, a token, a document or an error message (messages may quote what the service echoed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from faxws._version import __version__
from faxws.errors import FaxWSError

__all__ = ["Traced", "traced"]

_UNSET: Any = object()
_tracer: Any = _UNSET


def _get_tracer() -> Any:
    global _tracer
    if _tracer is _UNSET:
        try:
            from opentelemetry import trace
        except ImportError:
            _tracer = None
        else:
            # A proxy: spans go to whichever provider the application sets, even later.
            _tracer = trace.get_tracer("faxws", __version__)
    return _tracer


class Traced:
    """What a call adds to its span once it has an answer."""

    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:
        self.span = span

    def answered(self, activity_id: Callable[[], str | None]) -> None:
        """``activity_id`` is called only for a span that records (masking costs time)."""
        if self.span is not None and self.span.is_recording():
            found = activity_id()
            if found:
                self.span.set_attribute("faxws.activity_id", found)


_NOTHING = Traced(None)


@contextlib.contextmanager
def traced(operation: str, url: str, request_id: str) -> Iterator[Traced]:
    """The span of one operation call; a FaxWSError leaving it marks the span as failed."""
    tracer = _get_tracer()
    if tracer is None:
        yield _NOTHING
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    parts = urlsplit(url)
    attributes: dict[str, Any] = {
        "rpc.system": "soap",
        "rpc.service": "FaxWS",
        "rpc.method": operation,
        "server.address": parts.hostname or "",
        "faxws.request_id": request_id,
    }
    port = parts.port or (443 if parts.scheme == "https" else 80)
    attributes["server.port"] = port
    with tracer.start_as_current_span(
        operation,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield Traced(span)
        except FaxWSError as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_attribute("faxws.maybe_delivered", exc.maybe_delivered)
            code = getattr(exc, "code", None)
            if isinstance(code, int):
                span.set_attribute("faxws.ws_error_code", code)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
