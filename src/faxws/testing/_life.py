"""A simulated fax's life, as a pure function of time: where a job is, given what is planned
for its recipient, how long it has existed (in simulated seconds) and whether it was cancelled.

Nothing is stored but the plan and the times, so a job's life goes on across a restart and a
test can step the clock. Outcomes come from test numbers (:data:`TEST_NUMBERS`) or are set per
job through the REST API; any other number is delivered on the first attempt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from faxws._protocol import assumptions as vendor
from faxws.status import JobStatus

__all__ = [
    "OUTCOMES",
    "TEST_NUMBERS",
    "Life",
    "Plan",
    "Timing",
    "plan_for_number",
    "state_at",
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
    expiry = (
        start_after + vendor.DEFAULT_EXPIRY.total_seconds()
        if expires_after is None
        else expires_after
    )
    stops = [(expiry, vendor.EXPIRED_DESCRIPTION)]
    if cancelled_after is not None:
        stops.append((cancelled_after, vendor.CANCELLED_DESCRIPTION))
    stop_at, stop_why = min(stops)
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
            into = now - begin - timing.dial
            if into < 0 or how == "open":
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


def _csid(fax_number: str) -> str:
    digits = _NOT_DIGITS.sub("", fax_number)
    return f"+{digits}"[:20] if digits else ""
