"""The decisions of waiting for jobs to end, without I/O: both clients drive one :class:`Waiting`
(which ids to ask about next, how long to sleep, when to give up) and do only the calls and
the sleeping themselves."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

__all__ = ["Waiting"]


class _Status(Protocol):
    @property
    def job_id(self) -> str: ...

    @property
    def final(self) -> bool: ...


S = TypeVar("S", bound=_Status)

#: The first poll after ``first`` seconds (the service's TTFP; 0 polls at once), then
#: intervals doubling from it (at least MIN) up to MAX, each drawn from its upper half so that
#: many waiters do not poll in step.
MIN_INTERVAL = 1.0
MAX_INTERVAL = 60.0


class Waiting(Generic[S]):
    def __init__(
        self,
        job_ids: Sequence[str],
        *,
        timeout: float,
        first: float,
        batch_size: int,
        clock: Callable[[], float],
        rng: Callable[[], float] = random.random,
        min_interval: float = MIN_INTERVAL,
        max_interval: float = MAX_INTERVAL,
    ) -> None:
        self._order = list(dict.fromkeys(job_ids))
        self._pending = list(self._order)
        self.latest: dict[str, S] = {}
        self._batch = batch_size
        self._clock = clock
        self._rng = rng
        self._deadline = clock() + timeout
        # Not capped as the intervals are: a poll before the TTFP asks about a job not started.
        self._first = max(first, 0.0)
        self._interval = max(self._first, min_interval)
        self._min = min_interval
        self._max = max_interval
        self._polled = False

    def left(self) -> float:
        """Seconds until the deadline (0 or less once it has passed)."""
        return self._deadline - self._clock()

    @property
    def done(self) -> bool:
        return not self._pending

    def batches(self) -> list[list[str]]:
        """The ids still to ask about, in calls of at most ``batch_size``."""
        return [
            self._pending[i : i + self._batch] for i in range(0, len(self._pending), self._batch)
        ]

    def record(self, statuses: Iterable[S]) -> None:
        """Take a poll's answers; ids the answers leave out stay pending."""
        for status in statuses:
            if status.job_id in self.latest or status.job_id in self._pending:
                self.latest[status.job_id] = status
        self._pending = [
            i for i in self._pending if not (i in self.latest and self.latest[i].final)
        ]

    def results(self) -> list[S]:
        """The last status of every id, in the order asked (ids never answered left out)."""
        return [self.latest[i] for i in self._order if i in self.latest]

    def next_delay(self) -> float | None:
        """Seconds to sleep before the next poll, or None when the time is up."""
        left = self._deadline - self._clock()
        if left <= 0:
            return None
        if not self._polled:
            self._polled = True
            return min(self._first, left)
        self._interval = min(self._interval * 2, self._max)
        delay = self._interval * (0.5 + 0.5 * self._rng())
        return min(max(delay, self._min), left)
