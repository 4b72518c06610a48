"""Which of the new calls are sent again after a failure: the status calls are idempotent and
retried as such; a SendFaxEx or a CancelFax is never sent again once a byte of it may have
reached the service, and its error says so (``maybe_delivered``), a send's with the
ReferenceId to look the job up by before sending again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lifecycle_support import Service, document, field, mock_client

from conftest import Face
from faxws import (
    ConnectError,
    HTTPStatusError,
    JobOptions,
    JobStatus,
    TransportError,
)
from faxws._protocol import assumptions as vendor
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator, ManualClock
from faxws.transport import Response

ORDINARY = "+1 555 0100"


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator(clock=ManualClock(), time_scale=1.0) as started:
        yield started


def sim_client(sim: FaxWSSimulator, face: Face) -> Any:
    return face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, retry_backoff=0)


STATUS_CALLS = {
    "GetFaxStatus": lambda c, job, ref: c.get_fax_status([job], request_id="again"),
    "GetRealTimeFaxStatusEx2": lambda c, job, ref: c.get_real_time_fax_status(
        [job], request_id="again"
    ),
    "SimpleGetFaxStatus": lambda c, job, ref: [c.get_status_by_reference(ref, request_id="again")],
}


@pytest.mark.parametrize("operation", sorted(STATUS_CALLS))
def test_a_status_call_answered_503_then_200_is_retried_and_succeeds(
    sim: FaxWSSimulator, face: Face, operation: str
) -> None:
    client = sim_client(sim, face)
    sent = client.send_fax([ORDINARY], [document()], options=JobOptions())
    sim.inject(Fault.http_status(503), operation=operation)
    (status,) = STATUS_CALLS[operation](client, sent.job_ids[0], sent.reference_id)
    assert status.status is JobStatus.IN_PROGRESS
    asked = sim.requests_for(operation)
    assert [(r.status, r.header("x-ch-request-id")) for r in asked] == [
        (503, "again"),
        (200, "again"),
    ]


@pytest.mark.parametrize("operation", sorted(STATUS_CALLS))
def test_a_status_call_whose_connection_drops_after_writing_is_retried(
    face: Face, operation: str
) -> None:
    service = Service({"J1": 3}, reference_status=3)
    service.script = [TransportError("connection reset by peer", maybe_delivered=True)]
    client = mock_client(face, service)
    (status,) = STATUS_CALLS[operation](client, "J1", "ref-1")
    assert status.status is JobStatus.IN_PROGRESS
    assert len(service.requests) == 2
    assert service.bodies()[0] == service.bodies()[1]


def test_a_status_call_gives_up_after_its_retries_with_the_last_answer(face: Face) -> None:
    service = Service({"J1": 3})
    service.script = [Response(503, {}, b"busy")] * 3
    with pytest.raises(HTTPStatusError) as caught:
        mock_client(face, service, retries=2).get_fax_status(["J1"], request_id="gives-up")
    assert (caught.value.status_code, caught.value.request_id) == (503, "gives-up")
    assert len(service.requests) == 3


@pytest.mark.parametrize("given", ["order-7", None], ids=["given", "generated"])
def test_a_send_fax_ex_whose_answer_is_lost_is_not_sent_again_and_can_be_looked_up(
    sim: FaxWSSimulator, face: Face, given: str | None
) -> None:
    client = sim_client(sim, face)
    # The service takes the job, then the connection is reset in the middle of the answer.
    sim.inject(Fault.reset_mid_response(), operation="SendFaxEx", times=3)
    with pytest.raises(TransportError) as caught:
        client.send_fax([ORDINARY], [document()], "send-1", options=JobOptions(reference_id=given))
    error = caught.value
    assert (error.maybe_delivered, error.request_id) == (True, "send-1")
    (request,) = sim.requests_for("SendFaxEx")
    assert error.reference_id == field(request.body, "ReferenceId")
    if given is not None:
        assert error.reference_id == given
    assert len(sim.jobs) == 1
    found = client.get_status_by_reference(error.reference_id)
    assert (found.found, found.status) == (True, JobStatus.IN_PROGRESS)


def test_a_send_fax_ex_cut_off_before_the_service_took_it_is_not_found(
    sim: FaxWSSimulator, face: Face
) -> None:
    client = sim_client(sim, face)
    sim.inject(Fault.close_after_read(), operation="SendFaxEx", times=3)
    with pytest.raises(TransportError) as caught:
        client.send_fax([ORDINARY], [document()], options=JobOptions())
    assert caught.value.maybe_delivered is True
    assert len(sim.requests_for("SendFaxEx")) == 1
    assert sim.jobs == []
    assert client.get_status_by_reference(caught.value.reference_id).found is False


def test_a_send_fax_ex_answered_503_is_not_sent_again(face: Face) -> None:
    service = Service()
    service.script = [Response(503, {}, b"busy"), Response(503, {}, b"busy")]
    with pytest.raises(HTTPStatusError) as caught:
        mock_client(face, service).send_fax(
            [ORDINARY], [document()], options=JobOptions(reference_id="r-503")
        )
    assert (caught.value.maybe_delivered, caught.value.reference_id) == (True, "r-503")
    assert len(service.requests) == 1


def test_a_send_fax_ex_that_could_not_connect_is_sent_again_with_the_same_reference(
    face: Face,
) -> None:
    service = Service()
    service.script = [ConnectError("cannot connect: Connection refused; nothing was sent")]
    sent = mock_client(face, service).send_fax([ORDINARY], [document()], options=JobOptions())
    first, second = service.bodies()
    assert first == second
    assert field(second, "ReferenceId") == sent.reference_id


def test_a_cancel_that_could_not_connect_is_sent_again(face: Face) -> None:
    service = Service()
    service.script = [ConnectError("cannot connect: Connection refused; nothing was sent")]
    cancelled = mock_client(face, service).cancel_fax("J1", request_id="cancel-again")
    assert cancelled.job_id == "J1"
    assert [r.headers["x-ch-request-id"] for r in service.requests] == ["cancel-again"] * 2


def test_a_cancel_whose_answer_is_lost_is_not_sent_again(sim: FaxWSSimulator, face: Face) -> None:
    client = sim_client(sim, face)
    (job,) = client.send_fax([ORDINARY], [document()]).job_ids
    sim.inject(Fault.reset_mid_response(), operation="CancelFax", times=3)
    with pytest.raises(TransportError) as caught:
        client.cancel_fax(job, request_id="cancel-lost")
    assert (caught.value.maybe_delivered, caught.value.request_id) == (True, "cancel-lost")
    assert caught.value.reference_id is None
    assert len(sim.requests_for("CancelFax")) == 1
    (status,) = client.get_fax_status([job])  # the service did cancel it
    assert (status.status, status.description) == (
        JobStatus.FAILED,
        vendor.CANCELLED_DESCRIPTION,
    )


WRITTEN_CALLS = {
    "send": lambda c: c.send_fax([ORDINARY], [document()], options=JobOptions(reference_id="w-1")),
    "cancel": lambda c: c.cancel_fax("J1"),
}


@pytest.mark.parametrize("call", sorted(WRITTEN_CALLS))
def test_a_request_that_may_have_been_written_is_never_repeated(face: Face, call: str) -> None:
    service = Service()
    service.script = [TransportError("connection reset by peer", maybe_delivered=True)]
    client = mock_client(face, service, retries=5)
    with pytest.raises(TransportError) as caught:
        WRITTEN_CALLS[call](client)
    assert caught.value.maybe_delivered is True
    assert caught.value.reference_id == ("w-1" if call == "send" else None)
    assert len(service.requests) == 1
