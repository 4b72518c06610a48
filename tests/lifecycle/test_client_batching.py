"""Status calls in batches: ids asked once each, in the order given, as many per call as
``batch_size``, each call with a request id of its own; and every bad argument of the new
calls refused as BadInputError naming it, before any byte is sent."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from lifecycle_support import Service, asked_ids, document, mock_client, operation_of

from conftest import Face
from faxws import BadInputError, JobOptions
from faxws._protocol import assumptions as vendor

STATUS_CALLS = ["get_fax_status", "get_real_time_fax_status"]
IDS = ["J1", "J2", "J3", "J4", "J5"]


@pytest.mark.parametrize("call", STATUS_CALLS)
def test_five_ids_in_batches_of_two_make_three_calls_in_order(face: Face, call: str) -> None:
    service = Service(dict.fromkeys(IDS, 3))
    statuses = getattr(mock_client(face, service), call)(IDS, batch_size=2)
    assert [asked_ids(body) for body in service.bodies()] == [["J1", "J2"], ["J3", "J4"], ["J5"]]
    assert [s.job_id for s in statuses] == IDS
    request_ids = [r.headers["x-ch-request-id"] for r in service.requests]
    assert len(set(request_ids)) == 3
    assert all(uuid.UUID(rid).version == 4 for rid in request_ids)


@pytest.mark.parametrize("call", STATUS_CALLS)
def test_an_id_given_twice_is_asked_about_once(face: Face, call: str) -> None:
    service = Service(dict.fromkeys(IDS, 1))
    statuses = getattr(mock_client(face, service), call)(["J2", "J1", "J2", "J3", "J1"])
    assert [asked_ids(body) for body in service.bodies()] == [["J2", "J1", "J3"]]
    assert [s.job_id for s in statuses] == ["J2", "J1", "J3"]


@pytest.mark.parametrize("call", STATUS_CALLS)
def test_the_default_batch_is_the_vendors_list_size(face: Face, call: str) -> None:
    ids = [f"J{i}" for i in range(vendor.STATUS_BATCH_SIZE + 1)]
    service = Service(dict.fromkeys(ids, 3))
    getattr(mock_client(face, service), call)(ids)
    assert [len(asked_ids(body)) for body in service.bodies()] == [vendor.STATUS_BATCH_SIZE, 1]


@pytest.mark.parametrize("call", STATUS_CALLS)
def test_a_request_id_names_one_call_only(face: Face, call: str) -> None:
    service = Service(dict.fromkeys(IDS, 3))
    client = mock_client(face, service)
    getattr(client, call)(IDS[:2], batch_size=2, request_id="status-1")
    assert [r.headers["x-ch-request-id"] for r in service.requests] == ["status-1"]
    with pytest.raises(BadInputError) as caught:
        getattr(client, call)(IDS, batch_size=2, request_id="status-2")
    assert caught.value.field == "request_id"
    assert "5 job ids make 3 calls" in str(caught.value)
    assert len(service.requests) == 1  # nothing more was sent


NOW = datetime.now(timezone.utc)

#: (what is called, the field the error names).
BAD: list[tuple[str, Callable[[Any], Any], str]] = [
    ("ids as a str", lambda c: c.get_fax_status("J1"), "job_ids"),
    ("ids as None", lambda c: c.get_fax_status(None), "job_ids"),
    ("no ids", lambda c: c.get_fax_status([]), "job_ids"),
    ("an int id", lambda c: c.get_fax_status(["J1", 5]), "job_ids[1]"),
    ("an empty id", lambda c: c.get_real_time_fax_status(["J1", " "]), "job_ids[1]"),
    ("a line break", lambda c: c.get_real_time_fax_status(["J\n1"]), "job_ids[0]"),
    ("batch 0", lambda c: c.get_fax_status(["J1"], batch_size=0), "batch_size"),
    ("batch -1", lambda c: c.get_real_time_fax_status(["J1"], batch_size=-1), "batch_size"),
    ("batch too big", lambda c: c.get_fax_status(["J1"], batch_size=10_001), "batch_size"),
    ("batch True", lambda c: c.get_fax_status(["J1"], batch_size=True), "batch_size"),
    ("batch 2.0", lambda c: c.get_fax_status(["J1"], batch_size=2.0), "batch_size"),
    ("batch '2'", lambda c: c.get_real_time_fax_status(["J1"], batch_size="2"), "batch_size"),
    ("bad request id", lambda c: c.get_fax_status(["J1"], request_id="a b"), "request_id"),
    ("timeout 0", lambda c: c.wait_for_delivery(["J1"], timeout=0), "timeout"),
    ("timeout -1", lambda c: c.wait_for_delivery(["J1"], timeout=-1), "timeout"),
    ("timeout inf", lambda c: c.wait_for_delivery(["J1"], timeout=math.inf), "timeout"),
    ("timeout nan", lambda c: c.wait_for_delivery(["J1"], timeout=math.nan), "timeout"),
    ("timeout True", lambda c: c.wait_for_delivery(["J1"], timeout=True), "timeout"),
    ("timeout '5'", lambda c: c.wait_for_delivery(["J1"], timeout="5"), "timeout"),
    ("timeout None", lambda c: c.wait_for_delivery(["J1"], timeout=None), "timeout"),
    ("wait for a str", lambda c: c.wait_for_delivery("J1", timeout=5), "job_ids"),
    ("wait for none", lambda c: c.wait_for_delivery([], timeout=5), "job_ids"),
    ("wait batch 0", lambda c: c.wait_for_delivery(["J1"], timeout=5, batch_size=0), "batch_size"),
    ("empty reference", lambda c: c.get_status_by_reference(""), "reference_id"),
    ("reference None", lambda c: c.get_status_by_reference(None), "reference_id"),
    ("cancel ''", lambda c: c.cancel_fax(""), "job_id"),
    ("cancel 7", lambda c: c.cancel_fax(7), "job_id"),
    ("cancel request id", lambda c: c.cancel_fax("J1", request_id="x" * 201), "request_id"),
    ("options", lambda c: c.send_fax(["+1 555 0100"], [document()], options={}), "options"),
    (
        "start too far",
        lambda c: c.send_fax(
            ["+1 555 0100"], [document()], options=JobOptions(start_at=NOW + timedelta(days=5))
        ),
        "start_at",
    ),
    (
        "expiry too far",
        lambda c: c.send_fax(
            ["+1 555 0100"], [document()], options=JobOptions(expires_at=NOW + timedelta(days=3))
        ),
        "expires_at",
    ),
]


@pytest.mark.parametrize(("call", "field"), [(c, f) for _, c, f in BAD], ids=[n for n, _, _ in BAD])
def test_a_bad_argument_is_refused_naming_it_before_any_byte(
    face: Face, call: Callable[[Any], Any], field: str
) -> None:
    service = Service({"J1": 1})
    with pytest.raises(BadInputError) as caught:
        call(mock_client(face, service))
    assert caught.value.field == field
    assert caught.value.maybe_delivered is False
    assert service.requests == []


def test_the_status_calls_ask_with_their_own_operation(face: Face) -> None:
    service = Service({"J1": 1})
    client = mock_client(face, service)
    client.get_fax_status(["J1"])
    client.get_real_time_fax_status(["J1"])
    assert [operation_of(b) for b in service.bodies()] == [
        "GetFaxStatus",
        "GetRealTimeFaxStatusEx2",
    ]
