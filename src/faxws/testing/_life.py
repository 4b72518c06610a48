"""A simulated fax's life, as a pure function of time: where a job is, given what is planned
for its recipient, how long it has existed (in simulated seconds) and whether it was cancelled.

Nothing is stored but the plan and the times, so a job's life goes on across a restart and a
test can step the clock. Outcomes come from test numbers (:data:`TEST_NUMBERS`) or are set per
job through the REST API; any other number is delivered on the first attempt.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from faxws._protocol import assumptions as vendor
from faxws.status import JobStatus

__all__ = [
    "OUTCOMES",
    "TEST_NUMBERS",
    "Life",
    "Plan",
    "Step",
    "Timing",
    "next_change",
    "plan_for_number",
    "state_at",
    "steps",
]

#: What can happen to a job (the REST API takes these names).
OUTCOMES = (
    "delivered",
    "busy",
    "no-answer",
    "busy-then-delivered",
    "fails-after-pages",
    "slow",
    "rejected",
    "never-ends",
)

#: Test numbers, by their digits, and the outcome each one plans (documented in the README).
TEST_NUMBERS = {
    "15005550001": "busy",
    "15005550002": "no-answer",
    "15005550003": "busy-then-delivered",
    "15005550004": "fails-after-pages",
    "15005550005": "slow",
    "15005550006": "rejected",
    "15005550007": "never-ends",
}

_NOT_DIGITS = re.compile(r"\D")


@dataclass(frozen=True, slots=True)
class Plan:
    outcome: str = "delivered"
    #: For ``fails-after-pages``: the pages that go through before the line drops.
    pages_before_failure: int = 1


@dataclass(frozen=True, slots=True)
class Timing:
    """Simulated seconds; the defaults follow a reseller's published retry policy
    (3 attempts, 5 minutes apart)."""

    queue: float = 2.0
    dial: float = 5.0
    ring: float = 30.0
    page: float = 10.0
    slow_factor: float = 10.0
    attempts: int = 3
    retry_interval: float = 300.0


@dataclass(frozen=True, slots=True)
class Life:
    """Where a job is at one moment."""

    status: JobStatus
    description: str
    recipient_state: int
    pages_sent: int
    pages_total: int
    attempts: int
    #: Simulated seconds from submission to the end; None while in progress.
    ended_after: float | None = None
    #: Length of the call that delivered the fax (whole seconds), 0 otherwise.
    duration: int = 0
    remote_csid: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """A moment of a life told in words: ``after`` simulated seconds from submission."""

    after: float
    #: queued, dialing, sending, ringing, busy, no-answer, rejected, dropped, delivered,
    #: failed, cancelled or expired.
    kind: str
    text: str
    #: The attempt it belongs to (0: none).
    attempt: int = 0
    #: Whether the life ends here.
    final: bool = False


def plan_for_number(fax_number: str) -> Plan:
    return Plan(TEST_NUMBERS.get(_NOT_DIGITS.sub("", fax_number), "delivered"))


def _attempt(plan: Plan, index: int, pages: int, t: Timing) -> tuple[str, int, float]:
    """One attempt: how it ends (``delivered``, ``busy``, ``no-answer``, ``dropped``,
    ``rejected``, ``open``), the pages it sends and how long it takes."""
    outcome = plan.outcome
    if outcome == "busy-then-delivered":
        outcome = "busy" if index == 0 else "delivered"
    if outcome == "busy":
        return "busy", 0, t.dial
    if outcome == "no-answer":
        return "no-answer", 0, t.dial + t.ring
    if outcome == "rejected":
        return "rejected", 0, t.dial
    if outcome == "never-ends":
        return "open", 0, float("inf")
    page = t.page * (t.slow_factor if outcome == "slow" else 1.0)
    if outcome == "fails-after-pages" and plan.pages_before_failure < pages:
        sent = max(plan.pages_before_failure, 0)
        return "dropped", sent, t.dial + (sent + 0.5) * page
    return "delivered", pages, t.dial + pages * page


_FAILED = {
    "busy": "Failed: the line was busy",
    "no-answer": "Failed: no answer",
    "dropped": "Failed: the call dropped during transmission",
    "rejected": "Failed: the number is not a fax machine",
}


def state_at(
    plan: Plan,
    pages: int,
    elapsed: float,
    *,
    fax_number: str = "",
    start_after: float = 0.0,
    expires_after: float | None = None,
    cancelled_after: float | None = None,
    timing: Timing = Timing(),
) -> Life:
    """The job ``elapsed`` simulated seconds after submission. ``start_after``: a scheduled
    start; ``expires_after``: when an undelivered job gives up (default 2 days after the
    start); ``cancelled_after``: when a cancel was accepted."""
    stop_at, stop_why = _stop(start_after, expires_after, cancelled_after)
    now = min(elapsed, stop_at)
    begin = start_after + timing.queue
    sent = attempts = 0
    state = vendor.RECIPIENT_QUEUED
    for index in range(timing.attempts):
        if now < begin:
            break
        attempts = index + 1
        how, pages_sent, took = _attempt(plan, index, pages, timing)
        if now < begin + took:  # this attempt is under way
            # From the moment the call connects, as steps() and next_change() tell it: the
            # difference now - begin - dial can round below 0 at that very moment.
            connect = begin + timing.dial
            into = now - connect
            if now < connect or how == "open":
                state = vendor.RECIPIENT_DIALING
            else:
                state = vendor.RECIPIENT_SENDING
                page = timing.page * (timing.slow_factor if plan.outcome == "slow" else 1.0)
                sent = min(int(into // page), pages_sent if how != "delivered" else pages)
            break
        end = begin + took
        if how == "delivered":
            return Life(
                JobStatus.SUCCEEDED,
                "Delivered",
                vendor.RECIPIENT_DELIVERED,
                pages,
                pages,
                attempts,
                ended_after=end,
                duration=int(took),
                remote_csid=_csid(fax_number),
            )
        sent = pages_sent
        if how == "rejected" or index + 1 == timing.attempts:
            return Life(
                JobStatus.FAILED,
                _FAILED[how],
                vendor.RECIPIENT_FAILED,
                sent,
                pages,
                attempts,
                ended_after=end,
            )
        state = vendor.RECIPIENT_RETRY_WAIT
        begin = end + timing.retry_interval
    if elapsed >= stop_at:
        return Life(
            JobStatus.FAILED,
            stop_why,
            vendor.RECIPIENT_FAILED,
            sent,
            pages,
            attempts,
            ended_after=stop_at,
        )
    return Life(JobStatus.IN_PROGRESS, _IN_PROGRESS[state], state, sent, pages, attempts)


_IN_PROGRESS = {
    vendor.RECIPIENT_QUEUED: "In progress: queued",
    vendor.RECIPIENT_DIALING: "In progress: dialing",
    vendor.RECIPIENT_SENDING: "In progress: sending",
    vendor.RECIPIENT_RETRY_WAIT: "In progress: waiting to retry",
}


def _stop(
    start_after: float, expires_after: float | None, cancelled_after: float | None
) -> tuple[float, str]:
    """When a life is cut short (expiry or cancel, whichever is first), and its description."""
    expiry = (
        start_after + vendor.DEFAULT_EXPIRY.total_seconds()
        if expires_after is None
        else expires_after
    )
    stops = [(expiry, vendor.EXPIRED_DESCRIPTION)]
    if cancelled_after is not None:
        stops.append((cancelled_after, vendor.CANCELLED_DESCRIPTION))
    return min(stops)


_TOLD = {
    "busy": "the line was busy",
    "no-answer": "no answer",
    "rejected": "the number is not a fax machine",
}


def steps(
    plan: Plan,
    pages: int,
    *,
    start_after: float = 0.0,
    expires_after: float | None = None,
    cancelled_after: float | None = None,
    timing: Timing = Timing(),
) -> list[Step]:
    """The whole life in words, as :func:`state_at` lives it, from submission to its end
    (the moments to come too): queued, each attempt dialing, connecting or ringing and how
    it ended, then delivered, failed, cancelled or expired. Pages are told by their count,
    not one step each."""
    stop_at, stop_why = _stop(start_after, expires_after, cancelled_after)
    queued = "Queued" if not start_after else "Queued, scheduled to start later"
    out = [Step(0.0, "queued", queued)]
    begin = start_after + timing.queue
    for index in range(timing.attempts):
        if begin >= stop_at:
            break
        number = index + 1
        how, sent, took = _attempt(plan, index, pages, timing)
        out.append(Step(begin, "dialing", f"Attempt {number}: dialing", number))
        connect, end = begin + timing.dial, begin + took
        if connect < min(end, stop_at):
            if how == "no-answer":
                out.append(Step(connect, "ringing", f"Attempt {number}: ringing", number))
            elif how != "open":
                told = f"connected, sending {_pages(pages)}"
                out.append(Step(connect, "sending", f"Attempt {number}: {told}", number))
        if end > stop_at:
            break
        if how == "delivered":
            out.append(Step(end, "delivered", f"Delivered: {_pages(pages)}", number, True))
            return out
        told = _TOLD.get(how) or f"the call dropped after {_pages(sent)}"
        if how == "rejected" or number == timing.attempts:
            out.append(Step(end, "failed", f"Attempt {number}: {told}; failed", number, True))
            return out
        wait = f"next attempt in {timing.retry_interval:g} s"
        out.append(Step(end, how, f"Attempt {number}: {told}; {wait}", number))
        begin = end + timing.retry_interval
    kind = "cancelled" if stop_why == vendor.CANCELLED_DESCRIPTION else "expired"
    out.append(Step(stop_at, kind, stop_why, final=True))
    return out


def next_change(
    plan: Plan,
    pages: int,
    elapsed: float,
    *,
    start_after: float = 0.0,
    expires_after: float | None = None,
    cancelled_after: float | None = None,
    timing: Timing = Timing(),
) -> float | None:
    """The first moment after ``elapsed`` at which :func:`state_at` may tell something else
    (a new state, one more page sent, the end), so that a view is refreshed then and not
    before; None once the life has ended."""
    stop_at, _ = _stop(start_after, expires_after, cancelled_after)
    if elapsed >= stop_at:
        return None
    begin = start_after + timing.queue
    for index in range(timing.attempts):
        if elapsed < begin:
            return min(begin, stop_at)
        how, sent, took = _attempt(plan, index, pages, timing)
        end = begin + took
        if elapsed < end:
            if how == "open":
                return stop_at
            connect = begin + timing.dial
            into = elapsed - connect
            if elapsed < connect:
                return min(connect, stop_at)
            if how in ("delivered", "dropped"):
                page = timing.page * (timing.slow_factor if plan.outcome == "slow" else 1.0)
                done = int(into // page)
                if done < (pages if how == "delivered" else sent):
                    # As state_at counts pages, so that rounding never leaves it behind.
                    due = connect + (done + 1) * page
                    due = due if due > elapsed else math.nextafter(elapsed, math.inf)
                    return min(due, end, stop_at)
            return min(end, stop_at)
        if how in ("delivered", "rejected") or index + 1 == timing.attempts:
            return None
        begin = end + timing.retry_interval
    return None


def _pages(count: int) -> str:
    return f"{count} page{'' if count == 1 else 's'}"


def _csid(fax_number: str) -> str:
    digits = _NOT_DIGITS.sub("", fax_number)
    return f"+{digits}"[:20] if digits else ""
