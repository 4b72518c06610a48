"""Failures the simulator can inject, one type each, and the queue of pending ones.

Each fault acts at one stage of an exchange: :class:`CloseBeforeRead` before the body is
read (so it cannot target an operation: the operation is in the body), the connection
faults after it is read, the answer faults in place of the answer, and the delivery faults
while the answer is written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from faxws._protocol.checks import check_int, check_text, check_xml_text
from faxws.bindings import OPERATIONS
from faxws.testing._accounts import seconds

__all__ = [
    "KINDS",
    "MAX_SECONDS",
    "CloseAfterRead",
    "CloseBeforeRead",
    "DelayResponse",
    "Fault",
    "Faults",
    "Html500",
    "HttpStatus",
    "ResetMidResponse",
    "SlowDrip",
    "SoapFault",
    "WsError",
]


#: The longest delay or slow drip, a day: beyond any test's patience, and within the longest
#: wait a thread can make (``threading.TIMEOUT_MAX``, which is platform-dependent).
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class Fault:
    """A failure to inject: one of the subclasses, each also built by the class method of its
    kind (``Fault.http_status(503)`` is ``HttpStatus(503)``). Each is checked when built
    (BadInputError naming the field) so that whatever it later puts on the wire is valid:
    its answer is never one the simulator fails to write."""

    kind: ClassVar[str] = ""

    @classmethod
    def delay_response(cls, seconds: float) -> DelayResponse:
        return DelayResponse(seconds)

    @classmethod
    def html_500(cls) -> Html500:
        return Html500()

    @classmethod
    def http_status(cls, status: int) -> HttpStatus:
        return HttpStatus(status)

    @classmethod
    def soap_fault(cls, code: str = "soap:Server", text: str = "simulated fault") -> SoapFault:
        return SoapFault(code, text)

    @classmethod
    def ws_error(cls, code: int, text: str = "simulated error") -> WsError:
        return WsError(code, text)

    @classmethod
    def close_before_read(cls) -> CloseBeforeRead:
        return CloseBeforeRead()

    @classmethod
    def close_after_read(cls) -> CloseAfterRead:
        return CloseAfterRead()

    @classmethod
    def reset_mid_response(cls) -> ResetMidResponse:
        return ResetMidResponse()

    @classmethod
    def slow_drip(cls, seconds: float) -> SlowDrip:
        return SlowDrip(seconds)


@dataclass(frozen=True)
class DelayResponse(Fault):
    """Answer normally, after ``seconds`` (``stop()`` ends the wait)."""

    seconds: float
    kind: ClassVar[str] = "delay_response"

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", seconds("seconds", self.seconds, MAX_SECONDS))


@dataclass(frozen=True)
class Html500(Fault):
    """HTTP 500 with an HTML error page."""

    kind: ClassVar[str] = "html_500"


@dataclass(frozen=True)
class HttpStatus(Fault):
    """HTTP ``status`` (e.g. 502, 503, 504) with a short plain-text body."""

    status: int
    kind: ClassVar[str] = "http_status"

    def __post_init__(self) -> None:
        if isinstance(self.status, bool) or not isinstance(self.status, int):
            raise TypeError("status must be an int")
        if not 200 <= self.status <= 599:
            raise ValueError(f"status must be from 200 to 599, not {self.status}")


@dataclass(frozen=True)
class SoapFault(Fault):
    """A SOAP fault with HTTP 500."""

    code: str = "soap:Server"
    text: str = "simulated fault"
    kind: ClassVar[str] = "soap_fault"

    def __post_init__(self) -> None:
        check_text("code", self.code, required=True)
        check_xml_text("text", self.text)


@dataclass(frozen=True)
class WsError(Fault):
    """A normal response with ``return`` false and the given WSError."""

    code: int
    text: str = "simulated error"
    kind: ClassVar[str] = "ws_error"

    def __post_init__(self) -> None:
        check_int("code", self.code)  # ErrorCode is an xs:int
        check_xml_text("text", self.text)


@dataclass(frozen=True)
class CloseBeforeRead(Fault):
    """Close the connection after the request headers, without reading the body. The body
    holds the operation, so this fault cannot be limited to one operation."""

    kind: ClassVar[str] = "close_before_read"


@dataclass(frozen=True)
class CloseAfterRead(Fault):
    """Read the whole request, then close the connection without answering."""

    kind: ClassVar[str] = "close_after_read"


@dataclass(frozen=True)
class ResetMidResponse(Fault):
    """Send the status line, the headers and half of the body, then reset the connection."""

    kind: ClassVar[str] = "reset_mid_response"


@dataclass(frozen=True)
class SlowDrip(Fault):
    """Send a normal response one byte at a time, spread over about ``seconds``."""

    seconds: float
    kind: ClassVar[str] = "slow_drip"

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", seconds("seconds", self.seconds, MAX_SECONDS))


#: Each fault type by its kind, as the REST API names them.
KINDS: dict[str, type[Fault]] = {
    cls.kind: cls
    for cls in (
        DelayResponse,
        Html500,
        HttpStatus,
        SoapFault,
        WsError,
        CloseBeforeRead,
        CloseAfterRead,
        ResetMidResponse,
        SlowDrip,
    )
}


@dataclass
class _Injection:
    fault: Fault
    operation: str | None
    remaining: int


class Faults:
    """The pending faults, each for the next ``times`` requests (of one operation, or any).
    ``on_change`` is called, outside the lock, whenever the list changes."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Injection] = []
        self._on_change = on_change

    def add(self, fault: Fault, operation: str | None, times: int) -> None:
        if not isinstance(fault, Fault) or type(fault) is Fault:
            raise TypeError("fault must be built with one of Fault's class methods")
        if operation is not None and operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}")
        if operation is not None and isinstance(fault, CloseBeforeRead):
            raise ValueError("close_before_read cannot be limited to one operation")
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise ValueError(f"times must be a whole number of at least 1, not {times!r}")
        with self._lock:
            self._pending.append(_Injection(fault, operation, times))
        self._changed()

    def clear(self) -> int:
        """Forget every pending fault; how many there were."""
        with self._lock:
            count, self._pending = len(self._pending), []
        self._changed()
        return count

    def pending(self) -> list[tuple[Fault, str | None, int]]:
        """Each pending fault, in the order they apply, with its operation and the requests
        it is still for."""
        with self._lock:
            return [(i.fault, i.operation, i.remaining) for i in self._pending]

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def take(self, operation: str | None, *, before_read: bool) -> Fault | None:
        """The first pending fault for this stage and operation, counted as used."""
        if not self._pending:
            return None  # none injected: the common case, without the lock
        with self._lock:
            taken = self._take(operation, before_read)
        if taken is not None:
            self._changed()
        return taken

    def _take(self, operation: str | None, before_read: bool) -> Fault | None:
        for injection in self._pending:
            if injection.remaining <= 0:
                continue
            if before_read != isinstance(injection.fault, CloseBeforeRead):
                continue
            if injection.operation is not None and injection.operation != operation:
                continue
            injection.remaining -= 1
            if injection.remaining == 0:
                self._pending.remove(injection)  # so a lookup never grows with use
            return injection.fault
        return None
