"""The ranges of the batch journal's numeric settings: one table, read by the library's checks
(:class:`~faxws.journal.Batch`, the stores' lease and call-interval arguments) and by the
command line's flags, so that the two never disagree.

Standard library only: the command line builds its parser from it at start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The largest xs:int, the most a count may be.
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Range:
    """The values a setting may take, from ``low`` to ``high`` (both included)."""

    low: float
    high: float
    unit: str  #: what a value counts, for messages: "seconds", "calls a second"
    whole: bool = False  #: a whole number (an int, never a bool)
    about: str = ""  #: the range in words, when its numbers alone say little ("1 day")

    def words(self) -> str:
        """``a number of seconds from 1 to 86400 (1 day)``."""
        kind = "a whole number" if self.whole else "a number"
        about = f" ({self.about})" if self.about else ""
        return f"{kind} of {self.unit} from {self.span()}{about}"

    def span(self) -> str:
        """``1 to 86400``."""
        if self.whole:
            return f"{int(self.low)} to {int(self.high)}"
        return f"{self.low:g} to {self.high:g}"

    def holds(self, value: object) -> bool:
        """Whether ``value`` is a number (an int when whole; not NaN) in the range."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.whole and not isinstance(value, int):
            return False
        return math.isfinite(value) and self.low <= value <= self.high

    def check(self, name: str, value: object) -> float:
        """``value`` as a float (an int when whole), or BadInputError naming ``name``."""
        from faxws.errors import BadInputError

        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadInputError(name, f"must be {self.words()}, not a {type(value).__name__}")
        if not self.holds(value):
            raise BadInputError(name, f"must be {self.words()}, not {value!r}")
        return int(value) if self.whole else float(value)


#: Heartbeats renew a lease every third of it: below a second they would outrun a busy
#: journal's commits and rows would be taken for dead; above a day the rows in flight of a run
#: that ended abruptly would wait longer than any pause needs before they are looked up.
LEASE_SECONDS = Range(1, 86_400, "seconds", about="1 day")
#: Calls a second for an account. Below one call every 100 seconds a batch could not keep up
#: with its own status calls; above 1,000 a second a limit limits nothing (each call slot is a
#: write to the journal).
RATE = Range(0.01, 1_000, "calls a second")
#: Threads of one run.
WORKERS = Range(1, 1_024, "workers", whole=True)
#: Sends in flight for an account, across every run sharing the journal.
MAX_CONCURRENT = Range(1, _INT_MAX, "sends", whole=True)
#: The store's spacing of an account's calls: one over a rate.
CALL_INTERVAL = Range(1 / RATE.high, 1 / RATE.low, "seconds")

#: A call slot is reserved when a call waits for it, so the slots reserved ahead are at most
#: one for every waiting call, each an interval apart: 1,024 workers at the lowest rate reach
#: 28 hours. A reservation further ahead than this was written with an out-of-range rate (by
#: an older version): it is taken as no reservation, never waited for.
MAX_RESERVED_AHEAD = 7 * 86_400.0
#: A lease is written at most LEASE_SECONDS.high ahead; one ending further ahead than this (the
#: margin covers clocks that disagree) was written by an older version from an out-of-range
#: lease, and is taken as expired: its row is recovered as any row whose worker died.
MAX_LEASE_AHEAD = 2 * LEASE_SECONDS.high
