"""A clock a test moves by hand, so that a fax's life is stepped, never waited for."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from faxws.errors import BadInputError

__all__ = ["ManualClock"]


class ManualClock:
    """Seconds since the epoch that change only through :meth:`advance`. Give it to
    ``FaxWSSimulator(clock=...)``: jobs then move on only when the test advances it, and the
    simulator's pushes go out as soon as an advance makes them due.

    Args:
        start: the first reading; by default the real time now, so that dates a client
            computes from its own clock (a scheduled start) mean the same to the simulator.
    """

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else _finite("start", start)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now(self) -> float:
        return self._now

    __call__ = now

    def advance(self, seconds: float) -> float:
        """Move on by ``seconds`` (0 or more); the new reading."""
        step = _finite("seconds", seconds)
        if step < 0:
            raise BadInputError("seconds", f"must not be negative, not {seconds!r}")
        with self._lock:
            self._now += step
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
        return self._now

    def _listen(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def _forget(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def __repr__(self) -> str:
        return f"ManualClock({self._now!r})"


def _finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInputError(name, f"must be a finite number of seconds, not {value!r}")
    return float(value)
