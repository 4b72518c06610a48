"""Where a job is now: the one place that turns a stored job, what changed for one of its
recipients since (:class:`Track`) and the clock into the status that the SOAP answers, the
REST API, the inbox and the pushes all show (:func:`progress`).

Times are stored as the clock's seconds; a life runs ``time_scale`` simulated seconds per
clock second from the job's ``received_at``, so it goes on across a restart. A scheduled start
and an expiry are offsets from receipt taken as simulated seconds (scaled like the rest of the
life), and the dates reported are ``received_at`` plus the offset divided by the scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

from faxws._protocol import assumptions as vendor
from faxws.bindings import FaxJob
from faxws.status import JobStatus
from faxws.testing._life import OUTCOMES, Plan, Timing, state_at, steps
from faxws.testing._life import next_change as next_life_change
from faxws.testing._pages import MAX_PAGES
from faxws.testing._records import SimulatedJob

__all__ = [
    "TIMING",
    "JobProgress",
    "Moment",
    "PushRecord",
    "Track",
    "clock_time",
    "make_plan",
    "next_change",
    "progress",
    "schedule",
    "timeline",
    "ttfp",
]

TIMING = Timing()
_DATE_FORM = "a date and time as YYYY-MM-DDTHH:MM:SS+HH:MM"


@dataclass(frozen=True, slots=True)
class PushRecord:
    """A recipient's completion push: ``pending`` (to go out when the job ends, or again at
    ``next_at``), ``delivered``, ``failed`` (every attempt was refused or failed) or
    ``skipped`` (``result`` says why)."""

    state: str
    attempts: int = 0
    #: The last attempt's outcome (``HTTP 204``, or the error), or why the push is skipped.
    result: str = ""
    #: When the last attempt was made (clock seconds).
    at: float | None = None
    #: No new attempt before this (clock seconds).
    next_at: float | None = None


@dataclass(frozen=True, slots=True)
class Track:
    """What may change for one recipient's job after its submission (replaced whole)."""

    #: The recipient's place in the job.
    index: int
    plan: Plan
    #: When the plan was last set through the API (clock seconds).
    replanned_at: float | None = None
    #: When a cancel was accepted (clock seconds).
    cancelled_at: float | None = None
    push: PushRecord | None = None


@dataclass(frozen=True, slots=True)
class JobProgress:
    """One recipient's job at one moment, as every view of the simulator shows it."""

    job_id: str
    status: JobStatus
    description: str
    recipient_state: int
    pages_sent: int
    pages_total: int
    attempts: int
    #: The planned outcome (one of ``OUTCOMES``) and, for ``fails-after-pages``, the pages
    #: that go through.
    outcome: str
    pages_before_failure: int
    reference_id: str
    #: When the job ended (clock seconds), None while in progress.
    ended_at: float | None
    #: Length of the delivering call in seconds (0 unless delivered).
    duration: int
    remote_csid: str
    cancelled_at: float | None
    push: PushRecord | None

    @property
    def final(self) -> bool:
        return self.status.final

    @property
    def delivered_at(self) -> datetime | None:
        """When the fax was delivered; None unless it was."""
        if self.status is not JobStatus.SUCCEEDED or self.ended_at is None:
            return None
        return datetime.fromtimestamp(self.ended_at, timezone.utc)

    @property
    def delivered_at_text(self) -> str:
        """:attr:`delivered_at` in the vendor's form, or empty."""
        delivered = self.delivered_at
        return "" if delivered is None else vendor.format_datetime(delivered)


def clock_time(job: SimulatedJob, offset: float, scale: float) -> float:
    """The clock's time ``offset`` simulated seconds after ``job`` was received."""
    return job.received_at + offset / scale


def progress(
    job: SimulatedJob, track: Track, now: float, scale: float, timing: Timing = TIMING
) -> JobProgress:
    """Where ``job``'s recipient ``track.index`` is at clock time ``now`` (``math.inf``: how
    it will end, unless something changes)."""

    def simulated(at: float) -> float:
        return (at - job.received_at) * scale

    life = state_at(
        track.plan,
        job.pages,
        simulated(now),
        fax_number=job.recipients[track.index].recip_fax_number,
        start_after=job.start_after,
        expires_after=job.expires_after,
        cancelled_after=_cancelled_after(job, track, scale),
        timing=timing,
    )
    ended = life.ended_after
    if ended is not None and track.replanned_at is not None:
        # A plan set during the life applies to all of it, but the job cannot have ended
        # before the plan was set.
        ended = max(ended, simulated(track.replanned_at))
    return JobProgress(
        job_id=job.job_ids[track.index],
        status=life.status,
        description=life.description,
        recipient_state=life.recipient_state,
        pages_sent=life.pages_sent,
        pages_total=life.pages_total,
        attempts=life.attempts,
        outcome=track.plan.outcome,
        pages_before_failure=track.plan.pages_before_failure,
        reference_id=job.reference_id,
        ended_at=None if ended is None else clock_time(job, ended, scale),
        duration=life.duration,
        remote_csid=life.remote_csid,
        cancelled_at=track.cancelled_at,
        push=track.push,
    )


@dataclass(frozen=True, slots=True)
class Moment:
    """A moment of one recipient's job, for people: when (clock seconds), what kind of
    moment (a step's kind, ``planned`` or ``push``), what happens, and whether it has."""

    at: float
    kind: str
    text: str
    done: bool


def _cancelled_after(job: SimulatedJob, track: Track, scale: float) -> float | None:
    if track.cancelled_at is None:
        return None
    return (track.cancelled_at - job.received_at) * scale


def timeline(
    job: SimulatedJob, track: Track, now: float, scale: float, timing: Timing = TIMING
) -> list[Moment]:
    """The life of ``job``'s recipient ``track.index`` as :func:`progress` lives it, from
    submission to its end (the moments to come too, not done yet at clock time ``now``),
    with the plan set through the API and the completion push, in order of time."""
    told = steps(
        track.plan,
        job.pages,
        start_after=job.start_after,
        expires_after=job.expires_after,
        cancelled_after=_cancelled_after(job, track, scale),
        timing=timing,
    )
    moments = []
    for step in told:
        at = clock_time(job, step.after, scale)
        if step.final and track.replanned_at is not None:
            at = max(at, track.replanned_at)  # as progress() ends it
        moments.append(Moment(at, step.kind, step.text, at <= now))
    ended = moments[-1].at
    if track.replanned_at is not None:
        plan = track.plan
        pages = (
            f" after {plan.pages_before_failure} page(s)"
            if plan.outcome == "fails-after-pages"
            else ""
        )
        moments.append(
            Moment(track.replanned_at, "planned", f"Outcome set to {plan.outcome}{pages}", True)
        )
    moments += _push_moments(track.push, ended, now)
    return sorted(moments, key=lambda m: m.at)


def _push_moments(push: PushRecord | None, ended: float, now: float) -> list[Moment]:
    if push is None:
        return []
    if push.state == "skipped":
        return [Moment(ended, "push", f"Push skipped: {push.result}", ended <= now)]
    moments = []
    if push.attempts and push.at is not None:
        how = {"delivered": "delivered", "failed": "failed"}.get(push.state, "refused")
        text = f"Push attempt {push.attempts}: {how} ({push.result})"
        moments.append(Moment(push.at, "push", text, True))
    if push.state == "pending":
        at = max(ended, push.next_at or 0.0)
        moments.append(Moment(at, "push", f"Push attempt {push.attempts + 1}", False))
    return moments


def next_change(job: SimulatedJob, track: Track, now: float, scale: float) -> float | None:
    """The clock time after ``now`` at which anything :func:`progress` tells of ``job``'s
    recipient ``track.index`` may change; None once its life has ended."""
    due = next_life_change(
        track.plan,
        job.pages,
        (now - job.received_at) * scale,
        start_after=job.start_after,
        expires_after=job.expires_after,
        cancelled_after=_cancelled_after(job, track, scale),
    )
    return None if due is None else max(clock_time(job, due, scale), now)


def make_plan(outcome: object, pages: object = None) -> Plan:
    """The plan for an outcome by name, with the pages that go through for
    ``fails-after-pages`` (default 1). Raises ValueError naming what is wrong."""
    if not isinstance(outcome, str) or outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}")
    if pages is None:
        return Plan(outcome)
    if outcome != "fails-after-pages":
        raise ValueError("pages applies only to fails-after-pages")
    if isinstance(pages, bool) or not isinstance(pages, int) or not 0 <= pages <= MAX_PAGES:
        raise ValueError(f"pages must be a whole number from 0 to {MAX_PAGES}")
    return Plan(outcome, pages)


def ttfp(start_after: float, scale: float, timing: Timing = TIMING) -> int:
    """Clock seconds until a job's first attempt dials, rounded up."""
    return math.ceil((start_after + timing.queue) / scale)


def schedule(details: FaxJob, received_at: float) -> tuple[float, float] | None:
    """A SendFaxEx's start and expiry, as simulated seconds after ``received_at``; None when
    the start is more than 4 days ahead (the vendor's -5040).

    The start date counts whenever one is given, whatever JobScheduleStartType says (public
    clients disagree on its numbers); a past one starts at once. An expiry that is empty, in
    the past or not after the start becomes the default, 2 days after the start; one more
    than 2 days after the start is cut to 2 days. Raises ValueError naming a date that is not
    in the vendor's form."""
    start = _offset("JobScheduleStartDate", details.job_schedule_start_date, received_at)
    if start is not None and start > vendor.MAX_SCHEDULE_AHEAD.total_seconds():
        return None
    start_after = max(start or 0.0, 0.0)
    expiry = _offset("JobExpiryDate", details.job_expiry_date, received_at)
    if expiry is None or expiry < 0 or expiry <= start_after:
        return start_after, start_after + vendor.DEFAULT_EXPIRY.total_seconds()
    return start_after, min(expiry, start_after + vendor.MAX_EXPIRY.total_seconds())


def _offset(name: str, text: str, received_at: float) -> float | None:
    if not text:
        return None
    moment = vendor.parse_datetime(text)
    if moment is None:
        raise ValueError(f"{name}: {text[:40]!r} is not {_DATE_FORM}")
    return moment.timestamp() - received_at
