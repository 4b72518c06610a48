"""Waiting for delivery: polls until every job has ended and gives the final statuses in the
order asked; the first poll after the send's TTFP; only the ids still pending asked again, in
batches; past the time-out a WaitTimeoutError with the pending ids, the last statuses and the
last poll's request id.

The client's sleeps are taken over by a clock the test owns (:class:`FakeTime`), which also
moves the simulator's ManualClock: a life of minutes is waited for in no time. One test
sleeps for real, for a fraction of a second."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from lifecycle_support import FakeTime, Service, asked_ids, document, mock_client

from conftest import Face
from faxws import JobOptions, JobStatus, WaitTimeoutError
from faxws._protocol.waiting import MAX_INTERVAL, MIN_INTERVAL
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator, ManualClock

ORDINARY = "+1 555 0100"
BUSY = "+1 500 555 0001"
REJECTED = "+1 500 555 0006"
NEVER_ENDS = "+1 500 555 0007"
BUSY_FAILED_AFTER = 2 + 5 + 300 + 5 + 300 + 5  # simulated seconds, as clock seconds here


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    return FakeTime(clock).install(monkeypatch)


def simulator(clock: ManualClock, **kwargs: Any) -> FaxWSSimulator:
    return FaxWSSimulator(clock=clock, time_scale=1.0, **kwargs)


@pytest.fixture
def sim(clock: ManualClock) -> Iterator[FaxWSSimulator]:
    with simulator(clock) as started:
        yield started


def polls(sim: FaxWSSimulator) -> list[Any]:
    return sim.requests_for("GetRealTimeFaxStatusEx2")


def test_waiting_gives_the_final_statuses_in_the_order_asked(
    sim: FaxWSSimulator, face: Face, fake: FakeTime
) -> None:
    client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
    ordinary, busy, rejected = client.send_fax(
        [ORDINARY, BUSY, REJECTED], [document()], options=JobOptions()
    ).job_ids
    asked = [busy, rejected, ordinary]
    statuses = client.wait_for_delivery(asked, timeout=3600)
    assert [s.job_id for s in statuses] == asked
    assert [(s.status, s.description) for s in statuses] == [
        (JobStatus.FAILED, "Failed: the line was busy"),
        (JobStatus.FAILED, "Failed: the number is not a fax machine"),
        (JobStatus.SUCCEEDED, "Delivered"),
    ]
    assert all(s.final for s in statuses)
    assert BUSY_FAILED_AFTER <= sum(fake.sleeps) < BUSY_FAILED_AFTER + MAX_INTERVAL
    assert fake.sleeps[0] == 0  # ids, not a send's result: the first poll at once
    assert all(MIN_INTERVAL <= s <= MAX_INTERVAL for s in fake.sleeps[1:])
    # The jobs that ended are not asked about again.
    assert asked_ids(polls(sim)[0].body) == asked
    assert asked_ids(polls(sim)[-1].body) == [busy]


def test_the_first_poll_waits_for_the_ttfp_of_the_send(
    clock: ManualClock, face: Face, fake: FakeTime
) -> None:
    with simulator(clock, ttfp=30) as sim:
        client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        sent = client.send_fax([ORDINARY], [document()])
        assert sent.ttfp == 30
        (status,) = client.wait_for_delivery(sent, timeout=600)
        assert status.status is JobStatus.SUCCEEDED
        (send,) = sim.requests_for("SendFax")
        (poll,) = polls(sim)
        assert poll.received_at - send.received_at >= 30
    assert fake.sleeps == [30]


def test_a_ttfp_longer_than_the_longest_interval_still_delays_the_first_poll(
    clock: ManualClock, face: Face, fake: FakeTime
) -> None:
    with simulator(clock, ttfp=150) as sim:
        client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        sent = client.send_fax([ORDINARY], [document()])
        client.wait_for_delivery(sent, timeout=600)
    assert sent.ttfp > MAX_INTERVAL
    assert fake.sleeps == [150]


def test_a_ttfp_beyond_the_timeout_polls_once_at_the_deadline(face: Face, fake: FakeTime) -> None:
    service = Service({"J1": 3}, ttfp=900)
    client = mock_client(face, service)
    sent = client.send_fax([ORDINARY], [document()])
    with pytest.raises(WaitTimeoutError):
        client.wait_for_delivery(sent, timeout=300)
    assert fake.sleeps == [300]
    assert service.operations() == ["SendFax", "GetRealTimeFaxStatusEx2"]


def test_no_poll_is_made_before_the_ttfp(face: Face, fake: FakeTime) -> None:
    started = fake.now
    asked_at: list[float] = []
    service = Service(lambda job_id: 1 if fake.now - started >= 45 else 3, ttfp=45)

    def recording(request: Any) -> Any:
        asked_at.append(fake.now - started)
        return service(request)

    service.transport.handler = recording
    client = mock_client(face, service)
    sent = client.send_fax([ORDINARY], [document()])
    (status,) = client.wait_for_delivery(sent, timeout=600)
    assert status.status is JobStatus.SUCCEEDED
    assert asked_at[0] == 0  # the send
    assert asked_at[1] >= 45
    assert asked_at[1:] == sorted(asked_at[1:])


def test_waiting_asks_only_about_pending_ids_in_batches(face: Face, fake: FakeTime) -> None:
    started = fake.now
    # J4 and J5 end before the second poll, which comes at least MIN_INTERVAL after the first.
    ended = {"J1": 0.0, "J2": 0.0, "J3": 0.0, "J4": MIN_INTERVAL, "J5": MIN_INTERVAL}
    service = Service(lambda job_id: 1 if fake.now - started >= ended[job_id] else 3)
    statuses = mock_client(face, service).wait_for_delivery(list(ended), timeout=60, batch_size=2)
    assert [asked_ids(body) for body in service.bodies()] == [
        ["J1", "J2"],
        ["J3", "J4"],
        ["J5"],
        ["J4", "J5"],
    ]
    assert [s.job_id for s in statuses] == list(ended)
    assert {s.status for s in statuses} == {JobStatus.SUCCEEDED}


def test_the_order_asked_is_kept_whatever_the_order_of_the_answers(
    face: Face, fake: FakeTime
) -> None:
    service = Service({"J1": 1, "J2": 2, "J3": 1}, reverse=True)
    statuses = mock_client(face, service).wait_for_delivery(["J2", "J3", "J1"], timeout=60)
    assert [s.job_id for s in statuses] == ["J2", "J3", "J1"]


def test_a_wait_that_times_out_tells_what_had_not_ended(
    sim: FaxWSSimulator, face: Face, fake: FakeTime
) -> None:
    client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
    ordinary, never = client.send_fax([ORDINARY, NEVER_ENDS], [document()]).job_ids
    with pytest.raises(WaitTimeoutError) as caught:
        client.wait_for_delivery([never, ordinary], timeout=300)
    error = caught.value
    assert error.pending == (never,)
    assert [(s.job_id, s.status) for s in error.statuses] == [
        (never, JobStatus.IN_PROGRESS),
        (ordinary, JobStatus.SUCCEEDED),
    ]
    assert error.request_id == polls(sim)[-1].header("x-ch-request-id")
    assert error.request_id in str(error)
    assert "1 of the jobs had not ended after 300 s" in str(error)
    assert error.maybe_delivered is False
    assert sum(fake.sleeps) == pytest.approx(300)  # the last poll at the deadline


def test_ids_never_answered_are_pending_without_a_status(face: Face, fake: FakeTime) -> None:
    service = Service({"J1": 1})
    with pytest.raises(WaitTimeoutError) as caught:
        mock_client(face, service).wait_for_delivery(["J1", "J404"], timeout=30)
    assert caught.value.pending == ("J404",)
    # An unknown id is answered with -5019 and no status, so it never ends.
    assert [(s.job_id, s.error_code) for s in caught.value.statuses] == [
        ("J1", 0),
        ("J404", -5019),
    ]


def test_a_short_wait_really_sleeps_and_times_out(face: Face) -> None:
    with FaxWSSimulator(time_scale=1000.0) as sim:
        client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        (never,) = client.send_fax([NEVER_ENDS], [document()]).job_ids
        started = time.monotonic()
        with pytest.raises(WaitTimeoutError) as caught:
            client.wait_for_delivery([never], timeout=0.3)
        took = time.monotonic() - started
    assert 0.3 <= took < 5
    assert caught.value.pending == (never,)
    # At once, then at the deadline (and once more if a sleep ended a hair early).
    assert 2 <= len(polls(sim)) <= 3
