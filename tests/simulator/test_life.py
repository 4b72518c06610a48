"""A simulated fax's life: a pure function of its plan and the simulated time since
submission (default timing: queue 2 s, dial 5 s, 10 s a page, 3 attempts 5 minutes apart)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from faxws._protocol import assumptions as vendor
from faxws.status import JobStatus
from faxws.testing._life import (
    OUTCOMES,
    TEST_NUMBERS,
    Life,
    Plan,
    Timing,
    next_change,
    plan_for_number,
    state_at,
    steps,
)

T = Timing()


def test_an_ordinary_number_is_queued_dialed_sent_page_by_page_and_delivered() -> None:
    plan = plan_for_number("+1 555 0100")
    assert plan == Plan("delivered")
    seen = [(t, state_at(plan, 2, t, fax_number="+1 555 0100")) for t in (0, 3, 8, 17, 26.9, 27)]
    assert [(s.status, s.recipient_state, s.pages_sent) for _, s in seen] == [
        (JobStatus.IN_PROGRESS, vendor.RECIPIENT_QUEUED, 0),
        (JobStatus.IN_PROGRESS, vendor.RECIPIENT_DIALING, 0),
        (JobStatus.IN_PROGRESS, vendor.RECIPIENT_SENDING, 0),
        (JobStatus.IN_PROGRESS, vendor.RECIPIENT_SENDING, 1),
        (JobStatus.IN_PROGRESS, vendor.RECIPIENT_SENDING, 1),
        (JobStatus.SUCCEEDED, vendor.RECIPIENT_DELIVERED, 2),
    ]
    done = seen[-1][1]
    assert (done.ended_after, done.duration, done.attempts) == (27, 25, 1)
    assert done.remote_csid == "+15550100"
    assert state_at(plan, 2, 10_000) == state_at(plan, 2, 27)


@pytest.mark.parametrize(
    ("number", "description", "attempts", "ended_after"),
    [
        ("+1 500 555 0001", "Failed: the line was busy", 3, 2 + 5 + 300 + 5 + 300 + 5),
        ("+1 500 555 0002", "Failed: no answer", 3, 2 + 35 + 300 + 35 + 300 + 35),
        ("+1 500 555 0004", "Failed: the call dropped during transmission", 3, 2 + 3 * 20 + 600),
        ("+1 500 555 0006", "Failed: the number is not a fax machine", 1, 2 + 5),
    ],
)
def test_failing_numbers_fail_after_their_attempts(
    number: str, description: str, attempts: int, ended_after: float
) -> None:
    life = state_at(plan_for_number(number), 3, 100_000)
    assert (life.status, life.description, life.attempts) == (
        JobStatus.FAILED,
        description,
        attempts,
    )
    assert life.ended_after == ended_after
    assert life.recipient_state == vendor.RECIPIENT_FAILED
    assert state_at(plan_for_number(number), 3, ended_after - 0.001).status is JobStatus.IN_PROGRESS


def test_a_busy_line_is_retried_after_the_interval_and_then_delivered() -> None:
    plan = plan_for_number("+1-500-555-0003")
    waiting = state_at(plan, 1, 100)
    assert (waiting.status, waiting.recipient_state, waiting.attempts) == (
        JobStatus.IN_PROGRESS,
        vendor.RECIPIENT_RETRY_WAIT,
        1,
    )
    done = state_at(plan, 1, 1000)
    assert (done.status, done.attempts, done.ended_after) == (
        JobStatus.SUCCEEDED,
        2,
        2 + 5 + 300 + 5 + 10,
    )


def test_a_dropped_call_reports_the_pages_that_went_through() -> None:
    life = state_at(Plan("fails-after-pages", pages_before_failure=2), 5, 100_000)
    assert (life.status, life.pages_sent, life.pages_total) == (JobStatus.FAILED, 2, 5)
    assert state_at(Plan("fails-after-pages", 9), 5, 100_000).status is JobStatus.SUCCEEDED


def test_a_slow_line_takes_ten_times_as_long_per_page() -> None:
    plan = plan_for_number("15005550005")
    assert state_at(plan, 1, 106).status is JobStatus.IN_PROGRESS
    assert state_at(plan, 1, 107).ended_after == 107


def test_a_job_that_never_ends_expires_two_days_after_its_start() -> None:
    plan = plan_for_number("+15005550007")
    two_days = vendor.DEFAULT_EXPIRY.total_seconds()
    assert state_at(plan, 1, two_days - 1).recipient_state == vendor.RECIPIENT_DIALING
    life = state_at(plan, 1, two_days + 59, start_after=60)
    assert (life.status, life.description) == (JobStatus.IN_PROGRESS, "In progress: dialing")
    life = state_at(plan, 1, two_days + 60, start_after=60)
    assert (life.status, life.description) == (JobStatus.FAILED, vendor.EXPIRED_DESCRIPTION)
    early = state_at(plan, 1, 500, expires_after=400)
    assert (early.status, early.description, early.ended_after) == (
        JobStatus.FAILED,
        vendor.EXPIRED_DESCRIPTION,
        400,
    )


def test_a_scheduled_job_waits_for_its_start() -> None:
    life = state_at(Plan(), 1, 3599, start_after=3600)
    assert (life.recipient_state, life.attempts) == (vendor.RECIPIENT_QUEUED, 0)
    assert state_at(Plan(), 1, 10_000, start_after=3600).ended_after == 3600 + 2 + 15


def test_a_cancel_ends_a_job_in_progress_but_not_one_that_ended() -> None:
    cancelled = state_at(Plan(), 3, 1000, cancelled_after=10)
    assert (cancelled.status, cancelled.description, cancelled.ended_after) == (
        JobStatus.FAILED,
        vendor.CANCELLED_DESCRIPTION,
        10,
    )
    assert state_at(Plan(), 3, 9, cancelled_after=10).status is JobStatus.IN_PROGRESS
    late = state_at(Plan(), 1, 1000, cancelled_after=500)
    assert late.status is JobStatus.SUCCEEDED


def test_every_outcome_ends_by_the_expiry_and_every_test_number_plans_one() -> None:
    assert set(TEST_NUMBERS.values()) <= set(OUTCOMES)
    for outcome in OUTCOMES:
        assert state_at(Plan(outcome), 2, 10**9, timing=T).status is not JobStatus.IN_PROGRESS


def _seen(life: Life) -> tuple[object, ...]:
    """What a view shows of a life at one moment."""
    return (life.status, life.description, life.recipient_state, life.pages_sent, life.attempts)


lives = st.fixed_dictionaries(
    {
        "plan": st.builds(Plan, st.sampled_from(OUTCOMES), st.integers(0, 6)),
        "pages": st.integers(1, 5),
        "start_after": st.one_of(st.just(0.0), st.floats(0, 1000)),
        "expires_after": st.one_of(st.none(), st.floats(0, 3000)),
        "cancelled_after": st.one_of(st.none(), st.floats(0, 2000)),
    }
)


# A start at which begin + dial - begin - dial rounds below 0: the moment the call connects.
_CONNECT_ROUNDS = {
    "plan": Plan("delivered", 0),
    "pages": 1,
    "start_after": 249.39730315042314,
    "expires_after": None,
    "cancelled_after": None,
}


@settings(max_examples=300, deadline=None)
@given(life=lives, elapsed=st.floats(0, 4000), fractions=st.lists(st.floats(0, 0.999), max_size=4))
@example(life=_CONNECT_ROUNDS, elapsed=249.39730315042314 + 2 + 5, fractions=[])
def test_nothing_shown_changes_before_the_next_change(
    life: dict[str, object], elapsed: float, fractions: list[float]
) -> None:
    plan, pages = life["plan"], life["pages"]
    times = {k: v for k, v in life.items() if k not in ("plan", "pages")}
    now = state_at(plan, pages, elapsed, **times)  # type: ignore[arg-type]
    due = next_change(plan, pages, elapsed, **times)  # type: ignore[arg-type]
    if now.status.final:
        assert due is None
        return
    assert due is not None
    assert due > elapsed
    for fraction in fractions:
        moment = elapsed + (due - elapsed) * fraction
        if moment >= due:  # rounded up to it: the smallest spans
            continue
        assert _seen(state_at(plan, pages, moment, **times)) == _seen(now)  # type: ignore[arg-type]


_STATES = {
    "queued": vendor.RECIPIENT_QUEUED,
    "dialing": vendor.RECIPIENT_DIALING,
    "sending": vendor.RECIPIENT_SENDING,
    "ringing": vendor.RECIPIENT_SENDING,
    "busy": vendor.RECIPIENT_RETRY_WAIT,
    "no-answer": vendor.RECIPIENT_RETRY_WAIT,
    "dropped": vendor.RECIPIENT_RETRY_WAIT,
    "delivered": vendor.RECIPIENT_DELIVERED,
    "failed": vendor.RECIPIENT_FAILED,
    "cancelled": vendor.RECIPIENT_FAILED,
    "expired": vendor.RECIPIENT_FAILED,
}


@settings(max_examples=300, deadline=None)
@given(life=lives)
@example(life=_CONNECT_ROUNDS)
def test_the_steps_tell_the_life_as_it_is_lived(life: dict[str, object]) -> None:
    plan, pages = life["plan"], life["pages"]
    times = {k: v for k, v in life.items() if k not in ("plan", "pages")}
    told = steps(plan, pages, **times)  # type: ignore[arg-type]
    assert [s.after for s in told] == sorted(s.after for s in told)
    assert [s.final for s in told] == [False] * (len(told) - 1) + [True]
    end = state_at(plan, pages, math.inf, **times)  # type: ignore[arg-type]
    assert told[-1].after == end.ended_after
    if told[-1].kind == "failed":
        assert told[-1].text.endswith("; failed")
    for step, following in itertools.pairwise(told):
        if step.after < following.after:  # a state that lasts: the life is in it then
            life_then = state_at(plan, pages, step.after, **times)  # type: ignore[arg-type]
            assert life_then.recipient_state == _STATES[step.kind], step
            assert life_then.attempts == step.attempt


def test_the_steps_of_a_busy_line_then_delivered() -> None:
    told = steps(plan_for_number("+1 500 555 0003"), 2)
    assert [(s.after, s.kind, s.text) for s in told] == [
        (0.0, "queued", "Queued"),
        (2.0, "dialing", "Attempt 1: dialing"),
        (7.0, "busy", "Attempt 1: the line was busy; next attempt in 300 s"),
        (307.0, "dialing", "Attempt 2: dialing"),
        (312.0, "sending", "Attempt 2: connected, sending 2 pages"),
        (332.0, "delivered", "Delivered: 2 pages"),
    ]
    cancelled = steps(plan_for_number("+1 500 555 0003"), 2, cancelled_after=100)
    assert [s.kind for s in cancelled] == ["queued", "dialing", "busy", "cancelled"]
    assert (cancelled[-1].after, cancelled[-1].text) == (100, "Cancelled")
