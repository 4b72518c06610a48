"""The clients' calls after submission, against the simulator's lives: what each call gives
for a fax delivered, one that fails after its attempts, one cancelled, and for ids and
references the service does not know. The simulator runs on a ManualClock (one simulated
second per clock second) that each test steps: nothing waits."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from lifecycle_support import document

from conftest import Face
from faxws import JobOptions, JobStatus, ServiceError
from faxws._protocol import assumptions as vendor
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator, ManualClock

ORDINARY = "+1 555 0100"
BUSY = "+1 500 555 0001"  # busy on each of its 3 attempts, 5 minutes apart
REJECTED = "+1 500 555 0006"  # not a fax machine: fails on the first attempt
#: Simulated seconds: queue 2 s, dial 5 s, a page 10 s.
DELIVERED_AFTER = 2 + 5 + 10
BUSY_FAILED_AFTER = 2 + 5 + 300 + 5 + 300 + 5


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock) -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator(clock=clock, time_scale=1.0) as started:
        yield started


@pytest.fixture
def client(sim: FaxWSSimulator, face: Face) -> Any:
    return face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)


def send(client: Any, *numbers: str, **options: Any) -> Any:
    return client.send_fax(list(numbers), [document()], options=JobOptions(**options))


def test_an_ordinary_number_is_in_progress_then_delivered(client: Any, clock: ManualClock) -> None:
    sent = send(client, ORDINARY, reference_id="order-1")
    (job,) = sent.job_ids
    (now,) = client.get_real_time_fax_status([job])
    assert (now.status, now.final, now.error_code) == (JobStatus.IN_PROGRESS, False, 0)
    assert (now.pages_sent, now.pages_total, now.delivered_at) == (0, 1, None)

    clock.advance(DELIVERED_AFTER)
    (done,) = client.get_real_time_fax_status([job])
    assert (done.job_id, done.status_id, done.status, done.final) == (
        job,
        1,
        JobStatus.SUCCEEDED,
        True,
    )
    assert (done.description, done.pages_sent, done.pages_total) == ("Delivered", 1, 1)
    assert done.delivered_at is not None
    assert done.delivered_at_text == vendor.format_datetime(done.delivered_at)
    assert (done.duration_seconds, done.remote_csid, done.reference_id) == (
        15,
        "+15550100",
        "order-1",
    )
    (plain,) = client.get_fax_status([job])
    assert (plain.job_id, plain.status, plain.description, plain.error_code) == (
        job,
        JobStatus.SUCCEEDED,
        "Delivered",
        0,
    )
    assert client.get_status_by_reference("order-1").status is JobStatus.SUCCEEDED


def test_a_busy_number_fails_after_its_attempts(
    client: Any, clock: ManualClock, sim: FaxWSSimulator
) -> None:
    (job,) = send(client, BUSY).job_ids
    clock.advance(BUSY_FAILED_AFTER - 1)
    (waiting,) = client.get_real_time_fax_status([job])
    assert (waiting.status, waiting.description) == (
        JobStatus.IN_PROGRESS,
        "In progress: dialing",  # the third attempt
    )
    clock.advance(1)
    (failed,) = client.get_real_time_fax_status([job])
    assert (failed.status, failed.final, failed.description) == (
        JobStatus.FAILED,
        True,
        "Failed: the line was busy",
    )
    assert (failed.pages_sent, failed.delivered_at, failed.remote_csid) == (0, None, "")
    progress = sim.progress(job)
    assert progress is not None
    assert progress.attempts == 3
    (plain,) = client.get_fax_status([job])
    assert plain.status is JobStatus.FAILED


def test_a_job_cancelled_in_progress_ends_failed_as_cancelled(
    client: Any, clock: ManualClock
) -> None:
    sent = send(client, ORDINARY)
    (job,) = sent.job_ids
    cancelled = client.cancel_fax(job, request_id="cancel-1")
    assert (cancelled.job_id, cancelled.request_id) == (job, "cancel-1")
    assert cancelled.activity_id
    for status in (*client.get_real_time_fax_status([job]), *client.get_fax_status([job])):
        assert (status.status, status.final, status.description) == (
            JobStatus.FAILED,
            True,
            vendor.CANCELLED_DESCRIPTION,
        )
    clock.advance(3600)  # it stays cancelled: the fax is never sent
    (later,) = client.get_real_time_fax_status([job])
    assert (later.status, later.description) == (JobStatus.FAILED, "Cancelled")
    assert client.get_status_by_reference(sent.reference_id).status is JobStatus.FAILED


def test_cancelling_a_job_that_ended_is_a_service_error_with_the_request_id(
    client: Any, clock: ManualClock
) -> None:
    (job,) = send(client, ORDINARY).job_ids
    clock.advance(DELIVERED_AFTER)
    with pytest.raises(ServiceError) as caught:
        client.cancel_fax(job, request_id="cancel-late")
    error = caught.value
    assert (error.code, error.error_string) == (vendor.JOB_ENDED, vendor.JOB_ENDED_TEXT)
    assert error.request_id == "cancel-late"
    assert "cancel-late" in str(error)
    assert error.maybe_delivered is False
    (still,) = client.get_fax_status([job])
    assert still.status is JobStatus.SUCCEEDED


def test_cancelling_an_unknown_job_is_a_service_error(client: Any) -> None:
    with pytest.raises(ServiceError) as caught:
        client.cancel_fax("SIM99999999", request_id="cancel-unknown")
    assert (caught.value.code, caught.value.request_id) == (-5019, "cancel-unknown")


def test_unknown_job_ids_are_answered_item_by_item(client: Any) -> None:
    (job,) = send(client, ORDINARY).job_ids
    ids = ["SIM99999999", job, "JRI-anything"]
    for call in (client.get_fax_status, client.get_real_time_fax_status):
        unknown, known, by_reference = call(ids)
        assert [s.job_id for s in (unknown, known, by_reference)] == ids
        for status in (unknown, by_reference):  # only SimpleGetFaxStatus reads JRI-
            assert (status.error_code, status.error_string) == (-5019, "Invalid Job ID")
            assert (status.status_id, status.status, status.final) == (0, None, False)
        assert (known.error_code, known.status) == (0, JobStatus.IN_PROGRESS)


def test_an_unknown_reference_is_not_found(client: Any) -> None:
    send(client, ORDINARY, reference_id="known-ref")
    missing = client.get_status_by_reference("no-such-ref")
    assert (missing.reference_id, missing.found, missing.status_id, missing.status) == (
        "no-such-ref",
        False,
        -5019,
        None,
    )


@pytest.mark.parametrize("given", ["invoice-2026-0042", None], ids=["given", "generated"])
def test_a_send_is_found_by_its_reference_id(
    client: Any, clock: ManualClock, given: str | None
) -> None:
    sent = send(client, ORDINARY, reference_id=given)
    if given is None:
        assert re.fullmatch("[0-9a-f]{32}", sent.reference_id)
    else:
        assert sent.reference_id == given
    found = client.get_status_by_reference(sent.reference_id)
    assert (found.reference_id, found.found, found.status_id, found.status) == (
        sent.reference_id,
        True,
        3,
        JobStatus.IN_PROGRESS,
    )
    clock.advance(DELIVERED_AFTER)
    assert client.get_status_by_reference(sent.reference_id).status is JobStatus.SUCCEEDED
    (status,) = client.get_real_time_fax_status(list(sent.job_ids))
    assert status.reference_id == sent.reference_id


def test_a_send_without_options_has_no_reference_id(client: Any, sim: FaxWSSimulator) -> None:
    sent = client.send_fax([ORDINARY], [document()])
    assert sent.reference_id is None
    assert [r.operation for r in sim.requests] == ["SendFax"]


def test_each_recipient_of_one_send_has_a_status_of_its_own(
    client: Any, clock: ManualClock
) -> None:
    sent = send(client, ORDINARY, BUSY, REJECTED, reference_id="three")
    assert len(sent.job_ids) == len(set(sent.job_ids)) == 3
    clock.advance(DELIVERED_AFTER)
    statuses = client.get_real_time_fax_status(list(sent.job_ids))
    assert [s.job_id for s in statuses] == list(sent.job_ids)
    assert [(s.status, s.description) for s in statuses] == [
        (JobStatus.SUCCEEDED, "Delivered"),
        (JobStatus.IN_PROGRESS, "In progress: waiting to retry"),
        (JobStatus.FAILED, "Failed: the number is not a fax machine"),
    ]
    assert {s.reference_id for s in statuses} == {"three"}
    # The reference names all three: in progress while any one is.
    assert client.get_status_by_reference("three").status is JobStatus.IN_PROGRESS
    clock.advance(BUSY_FAILED_AFTER)
    assert [s.status for s in client.get_fax_status(list(sent.job_ids))] == [
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.FAILED,
    ]
    assert client.get_status_by_reference("three").status is JobStatus.FAILED


def test_a_reference_lookup_answered_with_another_error_code_is_a_service_error(
    client: Any, sim: FaxWSSimulator
) -> None:
    sim.inject(Fault.ws_error(-5001, "try later"), operation="SimpleGetFaxStatus")
    with pytest.raises(ServiceError) as caught:
        client.get_status_by_reference("any-ref", request_id="ref-err")
    assert (caught.value.code, caught.value.request_id) == (-5001, "ref-err")


def test_a_scheduled_send_starts_at_its_time(client: Any, clock: ManualClock) -> None:
    start = datetime.fromtimestamp(clock.now(), timezone.utc) + timedelta(hours=1)
    sent = send(client, ORDINARY, start_at=start)
    assert sent.ttfp >= 3600
    clock.advance(3600)
    (queued,) = client.get_real_time_fax_status(list(sent.job_ids))
    assert (queued.status, queued.description) == (JobStatus.IN_PROGRESS, "In progress: queued")
    clock.advance(DELIVERED_AFTER)
    (done,) = client.get_real_time_fax_status(list(sent.job_ids))
    assert done.status is JobStatus.SUCCEEDED


def test_a_send_the_service_refuses_carries_its_reference_id(face: Face) -> None:
    # The service's clock is a day behind: a start 3 days ahead is 4 days ahead to it.
    behind = ManualClock(datetime.now(timezone.utc).timestamp() - 86400)
    with FaxWSSimulator(clock=behind, time_scale=1.0) as sim:
        client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        start = datetime.now(timezone.utc) + timedelta(days=3, hours=12)
        with pytest.raises(ServiceError) as caught:
            send(client, ORDINARY, reference_id="too-far", start_at=start)
        assert sim.jobs == []
    error = caught.value
    assert (error.code, error.reference_id) == (vendor.SCHEDULE_TOO_FAR, "too-far")
    assert error.maybe_delivered is False
