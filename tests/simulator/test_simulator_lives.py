"""A fax takes time and may fail: each job the simulator accepts lives through queue, dial,
pages and retries on the simulator's clock (``time_scale`` simulated seconds per clock
second), and every status operation reports where it is. The clock here is a ManualClock:
each test steps it, nothing waits."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from lxml import etree
from simulated_calls import (
    ENDED,
    HEADERS,
    INVALID,
    OK,
    PDF,
    START,
    call,
    cancel,
    details,
    job_ids,
    move_to,
    pdf,
    real_time,
    send,
    send_ex,
    simple_status,
    statuses,
    vendor_time,
)

from faxws import BadInputError
from faxws._protocol import assumptions as vendor
from faxws._protocol.writer import envelope
from faxws.bindings import (
    CancelFaxResponse,
    FaxJobFile,
    FaxJobFiles,
    FaxJobRecipient,
    FaxJobRecipients,
    FaxStatus,
    SendFaxEx,
    SimpleGetFaxStatus,
    WSError,
)
from faxws.testing import (
    DEMO_PIN,
    DEMO_USER_ID,
    OUTCOMES,
    TEST_NUMBERS,
    Account,
    Fault,
    FaxWSSimulator,
    ManualClock,
)

HOUR, DAY = 3600.0, 86400.0
OTHER = Account("mbx-other", pin="4321")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def sim(clock: ManualClock) -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator([*FaxWSSimulator().accounts, OTHER], clock=clock) as started:
        yield started


def one(sim: FaxWSSimulator, job_id: str) -> Any:
    (item,) = real_time(sim, job_id)
    return item


# -- time ----------------------------------------------------------------------------------


def test_at_the_default_scale_a_one_page_fax_is_delivered_4_25_seconds_after_it_was_sent(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    answer = send(sim, "+1 555 0100")
    assert (answer.return_, answer.ttfp) == (True, 1)  # queue 2 s / 4, rounded up
    (job_id,) = job_ids(answer)
    seen = []
    for at in (0, 0.5, 2.0, 4.2, 4.25):  # queue 2, dial 5, a page 10: 17 simulated s / 4
        move_to(clock, at)
        item = one(sim, job_id)
        seen.append((item.fax_job_status_id, item.recipient_state, item.status_description))
    assert seen == [
        (3, vendor.RECIPIENT_QUEUED, "In progress: queued"),
        (3, vendor.RECIPIENT_DIALING, "In progress: dialing"),
        (3, vendor.RECIPIENT_SENDING, "In progress: sending"),
        (3, vendor.RECIPIENT_SENDING, "In progress: sending"),
        (1, vendor.RECIPIENT_DELIVERED, "Delivered"),
    ]
    done = one(sim, job_id)
    assert done.fax_delivery_date_time == vendor_time(4.25)  # received + 17 s / 4
    assert (done.fax_delivery_duration, done.remote_fax_csid) == (15, "+15550100")
    assert (done.recipient_current_page_count, done.recipient_total_page_count) == (1, 1)
    assert done.error == OK


def test_a_large_scale_makes_a_whole_life_take_milliseconds(clock: ManualClock) -> None:
    with FaxWSSimulator(clock=clock, time_scale=1000) as sim:
        (job_id,) = job_ids(send(sim, "+1 555 0100"))
        clock.advance(0.016)  # 16 of its 17 simulated seconds
        assert simple_status(sim, job_id) == 3
        clock.advance(0.002)
        assert simple_status(sim, job_id) == 1


def test_ttfp_counts_clock_seconds_to_the_first_dial_unless_fixed(clock: ManualClock) -> None:
    with FaxWSSimulator(clock=clock) as sim:
        later = send_ex(sim, "+1 555 0100", job_schedule_start_date=vendor_time(HOUR))
        assert later.ttfp == math.ceil((HOUR + 2) / 4)
    with FaxWSSimulator(clock=clock, time_scale=1000) as sim:
        assert send(sim, "+1 555 0100").ttfp == 1  # 0.002 s, rounded up
    with FaxWSSimulator(clock=clock, ttfp=30) as sim:
        assert send_ex(sim, "+1 555 0100", job_schedule_start_date=vendor_time(HOUR)).ttfp == 30


def test_a_job_keeps_the_clocks_time_and_a_pdf_or_tiff_its_pages(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    tiff = b"II*\0" + (8).to_bytes(4, "little")
    tiff += (0).to_bytes(2, "little") + (14).to_bytes(4, "little")  # directory 1, then 2
    tiff += (0).to_bytes(2, "little") + (0).to_bytes(4, "little")
    (job_id,) = job_ids(send(sim, "+1 555 0100", documents=(pdf(3), tiff, b"plain text")))
    job = sim.job(job_id)
    assert job is not None
    assert (job.received_at, job.pages) == (START, 3 + 2 + 1)
    assert one(sim, job_id).recipient_total_page_count == 6
    clock.advance((2 + 5 + 6 * 10) / 4)
    assert one(sim, job_id).fax_delivery_date_time == vendor_time(67 / 4)


# -- SendFaxEx -----------------------------------------------------------------------------


def test_sendfaxex_answers_a_job_id_per_recipient_and_keeps_its_details(
    sim: FaxWSSimulator,
) -> None:
    answer = send_ex(
        sim,
        "+1 555 0100",
        "+1 555 0101",
        reference_id="order-7",
        sender_name="Ann",
        sender_csid="+1 555 0199",
        cover_name="Standard",
        cover_subject="Invoice",
        cover_text="Two pages",
        notify_type=vendor.NOTIFY_TYPES["email"],
        notify_destination="ops@example.test",
    )
    assert (answer.return_, answer.ttfp, answer.ws_error) == (True, 1, OK)
    ids = job_ids(answer)
    assert ids == ["SIM00000001", "SIM00000002"]
    job = sim.job(ids[1])
    assert job is not None
    assert job.details is not None
    assert (job.operation, job.reference_id) == ("SendFaxEx", "order-7")
    assert (job.details.sender_name, job.details.cover_subject) == ("Ann", "Invoice")
    assert (job.details.notify_destination, job.details.notify_type) == ("ops@example.test", 1)
    assert [i.reference_id for i in real_time(sim, *ids)] == ["order-7", "order-7"]


@pytest.mark.parametrize(
    ("start", "accepted"),
    [(4 * DAY, True), (4 * DAY + 1, False), (30 * DAY, False)],
    ids=["exactly-4-days", "a-second-more", "a-month"],
)
def test_a_start_more_than_4_days_ahead_is_refused_with_5040(
    sim: FaxWSSimulator, start: float, accepted: bool
) -> None:
    answer = send_ex(
        sim, "+1 555 0100", job_schedule_start_type=1, job_schedule_start_date=vendor_time(start)
    )
    if accepted:
        assert answer.return_ is True
        return
    assert answer.return_ is False
    assert answer.ws_error == WSError(
        -5040, "Scheduled DateTime specified exceeds maximum allowed defer time"
    )
    assert (job_ids(answer), answer.ttfp, sim.jobs) == ([], 0, [])


def test_a_scheduled_job_waits_in_simulated_time_and_a_past_start_starts_at_once(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (later,) = job_ids(send_ex(sim, "+1 555 0100", job_schedule_start_date=vendor_time(HOUR)))
    (past,) = job_ids(send_ex(sim, "+1 555 0101", job_schedule_start_date=vendor_time(-DAY)))
    move_to(clock, 17 / 4)
    assert [i.fax_job_status_id for i in real_time(sim, later, past)] == [3, 1]
    move_to(clock, (HOUR + 2) / 4 - 0.01)  # an hour's offset runs in simulated time
    assert one(sim, later).recipient_state == vendor.RECIPIENT_QUEUED
    move_to(clock, (HOUR + 2) / 4 + 0.01)
    assert one(sim, later).recipient_state == vendor.RECIPIENT_DIALING
    move_to(clock, (HOUR + 17) / 4)
    assert one(sim, later).fax_delivery_date_time == vendor_time((HOUR + 17) / 4)


@pytest.mark.parametrize(
    ("start", "expiry", "expires_after"),
    [
        (0, "", 2 * DAY),
        (0, -HOUR, 2 * DAY),  # in the past
        (HOUR, HOUR / 2, HOUR + 2 * DAY),  # before the start
        (HOUR, HOUR, HOUR + 2 * DAY),  # not after the start
        (HOUR, HOUR + 3 * DAY, HOUR + 2 * DAY),  # more than 2 days: cut
        (HOUR, 5 * HOUR, 5 * HOUR),
    ],
    ids=["empty", "past", "before-start", "at-start", "cut-to-2-days", "kept"],
)
def test_the_expiry_rules(
    sim: FaxWSSimulator, start: float, expiry: float | str, expires_after: float
) -> None:
    answer = send_ex(
        sim,
        "+1 555 0100",
        job_schedule_start_date=vendor_time(start) if start else "",
        job_expiry_date=expiry if isinstance(expiry, str) else vendor_time(expiry),
    )
    job = sim.job(job_ids(answer)[0])
    assert job is not None
    assert (job.start_after, job.expires_after) == (start, expires_after)


def test_a_job_that_never_ends_expires_at_its_expiry(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send_ex(sim, "+1 500 555 0007", job_expiry_date=vendor_time(HOUR)))
    clock.advance(HOUR / 4 - 0.01)
    assert one(sim, job_id).recipient_state == vendor.RECIPIENT_DIALING
    clock.advance(0.01)
    expired = one(sim, job_id)
    assert (expired.fax_job_status_id, expired.status_description) == (2, "Expired")
    assert expired.fax_delivery_date_time == ""


@pytest.mark.parametrize("field", ["JobScheduleStartDate", "JobExpiryDate"])
def test_a_date_not_in_the_vendors_form_is_a_client_fault_naming_it(
    sim: FaxWSSimulator, field: str
) -> None:
    name = "job_schedule_start_date" if field == "JobScheduleStartDate" else "job_expiry_date"
    request = SendFaxEx(
        DEMO_USER_ID,
        DEMO_PIN,
        FaxJobRecipients((FaxJobRecipient("+1 555 0100", "", "", "", ""),)),
        FaxJobFiles((FaxJobFile(1, 101, PDF),)),
        details(**{name: "2030-01-02 03:04:05"}),
    )
    answer = requests.post(
        f"{sim.url}/fax/v5", data=b"".join(envelope(request)), headers=HEADERS, timeout=30
    )
    assert answer.status_code == 500
    fault = etree.fromstring(answer.content).findtext(".//faultstring")
    assert fault == (
        f"{field}: '2030-01-02 03:04:05' is not a date and time as YYYY-MM-DDTHH:MM:SS+HH:MM"
    )
    assert sim.jobs == []


# -- status --------------------------------------------------------------------------------


def test_simple_status_by_job_id_and_minus_5019_for_an_unknown_or_anothers_job(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100"))
    assert simple_status(sim, job_id) == 3
    clock.advance(5)
    assert simple_status(sim, job_id) == 1
    assert simple_status(sim, "SIM99999999") == -5019
    assert simple_status(sim, job_id, user=(OTHER.user_id, "4321")) == -5019


def test_jri_lookups_combine_every_job_under_the_reference(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    busy, fine = job_ids(send_ex(sim, "+1 500 555 0001", "+1 555 0100", reference_id="R-1"))
    send_ex(sim, "+1 555 0101", reference_id="R-2")
    assert simple_status(sim, "JRI-R-1") == 3
    clock.advance(5)  # the ordinary one is delivered, the busy line waits to retry
    assert [simple_status(sim, i) for i in (busy, fine)] == [3, 1]
    assert simple_status(sim, "JRI-R-1") == 3  # any in progress
    clock.advance(DAY)
    assert [simple_status(sim, i) for i in (busy, fine)] == [2, 1]
    assert simple_status(sim, "JRI-R-1") == 2  # else any failed
    assert simple_status(sim, "JRI-R-2") == 1  # else succeeded
    assert simple_status(sim, "JRI-R-3") == -5019
    assert simple_status(sim, "JRI-") == -5019
    assert simple_status(sim, "JRI-R-2", user=(OTHER.user_id, "4321")) == -5019
    assert statuses(sim, "JRI-R-2").fax_status_list.item[0].error == INVALID  # SimpleGet's alone


def test_getfaxstatus_answers_each_id_in_order_with_its_own_error(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    first, second = job_ids(send(sim, "+1 555 0100", "+1 500 555 0006"))
    clock.advance(5)
    answer = statuses(sim, second, "SIM99999999", first)
    assert (answer.return_, answer.ws_error) == (True, OK)
    assert list(answer.fax_status_list.item) == [
        FaxStatus(second, 2, "Failed: the number is not a fax machine", OK),
        FaxStatus("SIM99999999", vendor.UNKNOWN_JOB_STATUS, "", INVALID),
        FaxStatus(first, 1, "Delivered", OK),
    ]
    empty = statuses(sim)
    assert (empty.return_, empty.fax_status_list.item, empty.ws_error) == (True, (), OK)


def test_real_time_status_shows_progress_page_by_page_and_unknown_ids_empty(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send_ex(sim, "+1 555 0100", documents=(pdf(3),), reference_id="R"))
    clock.advance((2 + 5 + 15) / 4)  # halfway through the second page
    item, unknown = real_time(sim, job_id, "nope")
    assert (item.recipient_state, item.recipient_current_page_count) == (
        vendor.RECIPIENT_SENDING,
        1,
    )
    assert (item.recipient_total_page_count, item.reference_id) == (3, "R")
    assert (item.fax_delivery_date_time, item.fax_delivery_duration, item.error) == ("", 0, OK)
    assert (unknown.fax_job_id, unknown.fax_job_status_id, unknown.error) == ("nope", 0, INVALID)
    assert (unknown.recipient_total_page_count, unknown.reference_id) == (0, "")


FINAL = {
    "busy": (2, "Failed: the line was busy", 3),
    "no-answer": (2, "Failed: no answer", 3),
    "busy-then-delivered": (1, "Delivered", 2),
    "fails-after-pages": (2, "Failed: the call dropped during transmission", 3),
    "slow": (1, "Delivered", 1),
    "rejected": (2, "Failed: the number is not a fax machine", 1),
    "never-ends": (2, "Expired", 1),
}


@pytest.mark.parametrize(("digits", "outcome"), sorted(TEST_NUMBERS.items()))
def test_each_test_number_ends_as_planned_in_the_soap_answers(
    sim: FaxWSSimulator, clock: ManualClock, digits: str, outcome: str
) -> None:
    (job_id,) = job_ids(send(sim, "+" + digits, documents=(pdf(2),)))
    assert one(sim, job_id).fax_job_status_id == 3
    clock.advance(2 * DAY / 4)
    item = one(sim, job_id)
    status, description, attempts = FINAL[outcome]
    assert (item.fax_job_status_id, item.status_description) == (status, description)
    assert simple_status(sim, job_id) == status
    progress = sim.progress(job_id)
    assert progress is not None
    assert (progress.outcome, progress.attempts) == (outcome, attempts)
    assert set(FINAL) | {"delivered"} == set(OUTCOMES)


# -- cancel --------------------------------------------------------------------------------


def test_cancel_ends_a_job_in_progress_at_once_as_failed(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100", documents=(pdf(3),)))
    clock.advance(3)
    assert cancel(sim, job_id) == CancelFaxResponse(True, OK)
    item = one(sim, job_id)
    assert (item.fax_job_status_id, item.status_description) == (2, vendor.CANCELLED_DESCRIPTION)
    assert item.fax_delivery_date_time == ""
    progress = sim.progress(job_id)
    assert progress is not None
    assert (progress.ended_at, progress.cancelled_at) == (START + 3, START + 3)
    clock.advance(DAY)
    assert simple_status(sim, job_id) == 2  # and it stays so
    assert cancel(sim, job_id) == CancelFaxResponse(False, ENDED)


def test_cancel_of_a_job_that_ended_or_is_unknown_is_refused(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100"))
    (scheduled,) = job_ids(send_ex(sim, "+1 555 0101", job_schedule_start_date=vendor_time(DAY)))
    clock.advance(5)
    assert cancel(sim, job_id) == CancelFaxResponse(False, ENDED)
    assert simple_status(sim, job_id) == 1
    assert cancel(sim, "SIM99999999") == CancelFaxResponse(False, INVALID)
    assert cancel(sim, scheduled) == CancelFaxResponse(True, OK)  # waiting for its start
    assert simple_status(sim, scheduled) == 2


# -- injected faults -----------------------------------------------------------------------


def test_injected_errors_apply_to_the_new_operations(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100"))
    error = WSError(-42, "quota")
    for operation in ("GetFaxStatus", "CancelFax", "SendFaxEx", "SimpleGetFaxStatus"):
        sim.inject(Fault.ws_error(-42, "quota"), operation=operation)
    answer = statuses(sim, job_id)
    assert (answer.return_, answer.fax_status_list.item, answer.ws_error) == (False, (), error)
    assert cancel(sim, job_id) == CancelFaxResponse(False, error)
    refused = send_ex(sim, "+1 555 0100")
    assert (refused.return_, job_ids(refused), refused.ws_error) == (False, [], error)
    assert call(sim, SimpleGetFaxStatus(DEMO_USER_ID, DEMO_PIN, job_id)).return_ == -42
    assert simple_status(sim, job_id) == 3  # not cancelled
    assert len(sim.jobs) == 1


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"time_scale": 0}, "time_scale"),
        ({"time_scale": float("inf")}, "time_scale"),
        ({"time_scale": True}, "time_scale"),
        ({"clock": 5.0}, "clock"),
    ],
)
def test_a_bad_scale_or_clock_is_bad_input(options: dict[str, Any], field: str) -> None:
    with pytest.raises(BadInputError) as info:
        FaxWSSimulator(**options)
    assert info.value.field == field


def test_a_manual_clock_moves_only_forward_and_only_when_told() -> None:
    clock = ManualClock(100)
    assert (clock(), clock.now()) == (100.0, 100.0)
    assert clock.advance(2.5) == 102.5
    for bad in (-1, float("nan"), "1"):
        with pytest.raises(BadInputError):
            clock.advance(bad)  # type: ignore[arg-type]
    assert clock.now() == 102.5
