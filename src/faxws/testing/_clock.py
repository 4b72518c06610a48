"""A clock a test moves by hand, so that a fax's life is stepped, never waited for."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from faxws.errors import BadInputError

__all__ = ["LATEST", "ManualClock", "shown"]

#: The last second a clock may read (9999-12-31T23:59:59Z): beyond it no date can be written.
LATEST = 253402300799


class ManualClock:
    """Seconds since the epoch that change only through :meth:`advance`. Give it to
    ``FaxWSSimulator(clock=...)``: jobs then move on only when the test advances it, and the
    simulator's pushes go out as soon as an advance makes them due.

    Args:
        start: the first reading; by default the real time now, so that dates a client
            computes from its own clock (a scheduled start) mean the same to the simulator.
            It is a moment from 1970 to the year 9999 (0 to :data:`LATEST`), and no
            :meth:`advance` moves the clock beyond it: every reading can be written as a date.
    """

    def __init__(self, start: float | None = None) -> None:
        if start is not None:
            _finite("start", start)
            if not 0 <= start <= LATEST:
                raise BadInputError(
                    "start",
                    f"must be seconds since the epoch from 0 to {LATEST} (years 1970 to 9999),"
                    f" not {shown(start)}",
                )
        self._now = time.time() if start is None else float(start)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now(self) -> float:
        return self._now

    __call__ = now

    def advance(self, seconds: float) -> float:
        """Move on by ``seconds`` (0 or more); the new reading."""
        _finite("seconds", seconds)
        if seconds < 0:
            raise BadInputError("seconds", f"must not be negative, not {seconds!r}")
        with self._lock:
            if seconds > LATEST - self._now:
                raise BadInputError(
                    "seconds",
                    f"must not move the clock beyond the year 9999 (at most"
                    f" {LATEST - self._now!r} from {self._now!r}), not {shown(seconds)}",
                )
            self._now += float(seconds)
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


def _finite(name: str, value: object) -> None:
    # An int is finite, however large (and too large for a float, or for repr).
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or (isinstance(value, float) and not math.isfinite(value)):
        raise BadInputError(name, f"must be a finite number of seconds, not {shown(value)}")


def shown(value: object) -> str:
    """``value`` for a message: an int too long to read (or to repr at all) by its size."""
    if isinstance(value, int) and not -(10**30) < value < 10**30:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)
