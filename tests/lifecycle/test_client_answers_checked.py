"""Status answers are checked against the ids asked, and waiting keeps its deadline: what an
outside attack found, as a specification."""

from __future__ import annotations

import re
from typing import Any

import pytest
from lifecycle_support import FakeTime, Service, answer, mock_client

from conftest import Face
from faxws import BadInputError, ProtocolError, WaitTimeoutError
from faxws.bindings import (
    FaxStatus,
    FaxStatusList,
    FaxStatusResponse,
    RealTimeFaxStatusEx2,
    RealTimeFaxStatusEx2List,
    RealTimeFaxStatusEx2Response,
    WSError,
)

OK = WSError(0, "")


def real_time(job_id: str, status: int, error: WSError = OK) -> RealTimeFaxStatusEx2:
    return RealTimeFaxStatusEx2(job_id, status, "", 0, 0, 1, "", 0, "", "", error)


@pytest.mark.parametrize(
    ("answered", "problem"),
    [
        (["B", "X"], "names job 'X' though it was not asked for"),
        (["A", "A", "B"], "names job 'A' twice"),
        (["B"], "has no status for 1 of the 2 jobs asked (first: 'A')"),
        ([], "has no status for 2 of the 2 jobs asked"),
    ],
)
@pytest.mark.parametrize("real_time_form", [False, True], ids=["GetFaxStatus", "real-time"])
def test_a_status_answer_that_does_not_match_the_ids_asked_is_a_protocol_error(
    face: Face, answered: list[str], problem: str, real_time_form: bool
) -> None:
    service = Service()
    if real_time_form:
        rows = tuple(real_time(i, 1) for i in answered)
        service.script.append(
            answer(RealTimeFaxStatusEx2Response(True, RealTimeFaxStatusEx2List(rows), OK))
        )
    else:
        items = tuple(FaxStatus(i, 1, "", OK) for i in answered)
        service.script.append(answer(FaxStatusResponse(True, FaxStatusList(items), OK)))
    client = mock_client(face, service)
    call = client.get_real_time_fax_status if real_time_form else client.get_fax_status
    with pytest.raises(ProtocolError, match=re.escape(problem)) as caught:
        call(["A", "B"])
    assert caught.value.request_id


def test_statuses_come_back_in_the_order_asked(face: Face) -> None:
    client = mock_client(face, Service({"A": 1, "B": 3}, reverse=True))
    assert [s.job_id for s in client.get_real_time_fax_status(["A", "B"])] == ["A", "B"]


def test_an_item_with_an_error_has_no_status_and_is_not_final(face: Face) -> None:
    service = Service()
    unknown = WSError(-5019, "Invalid Job ID")
    rows = (real_time("A", 1, unknown),)
    service.script.append(
        answer(RealTimeFaxStatusEx2Response(True, RealTimeFaxStatusEx2List(rows), OK))
    )
    (status,) = mock_client(face, service).get_real_time_fax_status(["A"])
    assert (status.status_id, status.status, status.final, status.error_code) == (
        1,
        None,
        False,
        -5019,
    )


@pytest.mark.parametrize("timeout", [10**400, -(10**400), "5", None, float("nan"), True])
def test_an_impossible_timeout_is_bad_input(face: Face, timeout: Any) -> None:
    service = Service({"A": 3})
    with pytest.raises(BadInputError) as caught:
        mock_client(face, service).wait_for_delivery(["A"], timeout=timeout)
    assert caught.value.field == "timeout"
    assert service.requests == []


def test_no_poll_starts_after_the_deadline(face: Face, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each poll takes 4 s of the test's clock; five batches, a 1 s time-out: one poll only."""
    fake = FakeTime().install(monkeypatch)
    service = Service(dict.fromkeys("ABCDE", 3))
    answer_of = service.answer

    def slow(body: bytes) -> Any:
        fake.now += 4
        return answer_of(body)

    service.answer = slow  # type: ignore[method-assign]
    client = mock_client(face, service)
    with pytest.raises(WaitTimeoutError) as caught:
        client.wait_for_delivery(list("ABCDE"), timeout=1, batch_size=1)
    assert len(service.requests) == 1
    assert caught.value.pending == ("A", "B", "C", "D", "E")


def test_the_time_out_says_when_the_service_answered_errors(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeTime().install(monkeypatch)
    client = mock_client(face, Service({"A": 3}))  # B is unknown: -5019 item by item
    with pytest.raises(WaitTimeoutError, match="answered an error for 1 of them") as caught:
        client.wait_for_delivery(["A", "B"], timeout=30)
    assert [s.error_code for s in caught.value.statuses] == [0, -5019]


def test_on_progress_gets_every_status_seen_after_each_round(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeTime().install(monkeypatch)
    rounds = iter([3, 3, 1])
    service = Service(lambda job_id: next(rounds))
    seen: list[list[tuple[str, int]]] = []
    final = mock_client(face, service).wait_for_delivery(
        ["A"], timeout=600, on_progress=lambda s: seen.append([(x.job_id, x.status_id) for x in s])
    )
    assert seen == [[("A", 3)], [("A", 3)], [("A", 1)]]
    assert [(s.job_id, s.status_id) for s in final] == [("A", 1)]
