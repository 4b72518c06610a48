"""What the new calls write: a send with job options is a SendFaxEx whose JobDetails carry
the options in the vendor's forms and always a ReferenceId; a send without them is still the
SendFax of the golden file, byte for byte; and every request any of the calls writes is valid
against the vendor's own schema and against faxws's."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from lifecycle_support import (
    PIN,
    USER,
    Service,
    asked_ids,
    document,
    field,
    mock_client,
    operation_of,
    payload,
    schema_issues,
)

from conftest import GOLDEN, Face
from faxws import ClientOptions, FaxFile, FileType, JobOptions, Notify, Recipient
from faxws._protocol import assumptions as vendor

PACIFIC = timezone(timedelta(hours=-8))
START = datetime.now(PACIFIC).replace(microsecond=0) + timedelta(days=1)
NOTIFY = Notify(
    "https://hooks.example.test/fax?a=1&b=2",
    kind="post",
    user="hook-user",
    password="pw-&<'\"-9",
    include_image=True,
)
FULL = JobOptions(
    reference_id="order-42",
    start_at=START,
    expires_at=START + timedelta(hours=36),
    sender_csid="ACME FAX",
    sender_name="Ann & <Bob>",
    sender_company="ACME",
    sender_phone="+1 555 0199",
    sender_fax="+1 555 0198",
    cover_name="standard",
    cover_subject="Grüße",
    cover_text="two pages follow",
    resolution="fine",
    notify=NOTIFY,
)


def only_body(service: Service) -> bytes:
    (body,) = service.bodies()
    return body


def test_a_send_with_options_goes_as_send_fax_ex_with_its_job_details(face: Face) -> None:
    service = Service()
    client = mock_client(face, service)
    sent = client.send_fax(["+1 555 0100"], [document()], options=FULL)
    body = only_body(service)
    assert operation_of(body) == "SendFaxEx"
    assert service.requests[0].headers["SOAPAction"] == ""
    details = payload(body).find("{urn:FaxWS}JobDetails")
    assert details is not None
    written = {e.tag.rpartition("}")[2]: e.text or "" for e in details}
    assert written == {
        "JobScheduleStartType": str(vendor.SCHEDULE_AT),
        "JobScheduleStartDate": START.isoformat(timespec="seconds"),
        "JobExpiryDate": (START + timedelta(hours=36)).isoformat(timespec="seconds"),
        "SenderCSID": "ACME FAX",
        "SenderName": "Ann & <Bob>",
        "SenderCompany": "ACME",
        "SenderPhone": "+1 555 0199",
        "CoverText": "two pages follow",
        "CoverName": "standard",
        "CoverSubject": "Grüße",
        "ReferenceId": "order-42",
        "Resolution": "fine",
        "SenderFax": "+1 555 0198",
        "SoftwareClient": "faxws",
        "NotifyType": str(vendor.NOTIFY_TYPES["post"]),
        "NotifyIncludeDeliveredImage": "1",
        "NotifyDestination": "https://hooks.example.test/fax?a=1&b=2",
        "NotifyAuthUser": "hook-user",
        "NotifyAuthPassword": "pw-&<'\"-9",
    }
    # In the vendor's form: seconds, and the offset the caller gave.
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d-08:00", written["JobScheduleStartDate"]), (
        written
    )
    assert (sent.job_ids, sent.reference_id) == (("J1",), "order-42")


def test_empty_options_send_an_immediate_job_with_a_generated_reference_id(face: Face) -> None:
    service = Service()
    client = mock_client(face, service)
    first = client.send_fax(["+1 555 0100"], [document()], options=JobOptions())
    second = client.send_fax(["+1 555 0100"], [document()], options=JobOptions())
    bodies = service.bodies()
    assert [operation_of(b) for b in bodies] == ["SendFaxEx", "SendFaxEx"]
    for result, body in zip((first, second), bodies, strict=True):
        assert re.fullmatch("[0-9a-f]{32}", result.reference_id)
        assert field(body, "ReferenceId") == result.reference_id
        assert field(body, "JobScheduleStartType") == str(vendor.SCHEDULE_IMMEDIATE)
        assert field(body, "JobScheduleStartDate") == ""
        assert field(body, "JobExpiryDate") == ""
        assert field(body, "NotifyType") == str(vendor.NOTIFY_TYPES["none"])
        assert field(body, "NotifyAuthPassword") == ""
    assert first.reference_id != second.reference_id


@pytest.mark.parametrize("options", [{}, {"options": None}], ids=["no options", "None"])
def test_a_send_without_options_is_still_the_golden_send_fax(
    face: Face, options: dict[str, Any]
) -> None:
    service = Service(ttfp=45)
    settings = ClientOptions(transport=service.transport)
    client = face.client(
        "https://fax.example.com", user_id=USER, pin="s3cret-PIN", options=settings
    )
    client.send_fax(
        [
            Recipient("+1 555 0100", company="ACME & Sons", title="Dr", name="Bob <B>"),
            Recipient("+44 20 7946 0000", secure_csid="CSID-9"),
        ],
        [FaxFile(b"%PDF-1.4\n%golden\n", FileType.PDF), FaxFile(b"hello fax\n", FileType.TEXT)],
        request_id="req-golden-1",
        **options,
    )
    assert only_body(service) == (GOLDEN / "send_fax_pin.xml").read_bytes()


def every_call(client: Any, service: Service) -> None:
    """Each new call once (and a wait whose jobs have ended), all answered by ``service``."""
    client.send_fax(["+1 555 0100", "+1 555 0101"], [document()], options=FULL)
    client.send_fax(["+1 555 0100"], [document()], options=JobOptions())
    client.get_fax_status(["J1", "J2"])
    client.get_real_time_fax_status(["J1"])
    client.get_status_by_reference("order-42")
    client.cancel_fax("J1")
    client.wait_for_delivery(["J1", "J2"], timeout=5)


@pytest.mark.parametrize("auth", ["pin", "token"])
def test_every_request_of_the_new_calls_is_valid_against_both_schemas(
    face: Face, auth: str
) -> None:
    service = Service({"J1": 1, "J2": 2})
    credentials = {"pin": PIN} if auth == "pin" else {"token": "tok-1"}
    client = face.client(
        "https://fax.example.com",
        user_id=USER,
        options=ClientOptions(transport=service.transport),
        **credentials,
    )
    every_call(client, service)
    assert service.operations() == [
        "SendFaxEx",
        "SendFaxEx",
        "GetFaxStatus",
        "GetRealTimeFaxStatusEx2",
        "SimpleGetFaxStatus",
        "CancelFax",
        "GetRealTimeFaxStatusEx2",
    ]
    for body in service.bodies():
        assert schema_issues(body) == {"vendor": [], "faxws": []}


def test_the_schema_check_finds_a_request_the_vendor_would_refuse(face: Face) -> None:
    service = Service()
    mock_client(face, service).send_fax(["+1 555 0100"], [document()], options=JobOptions())
    body = only_body(service)
    broken = body.replace(b"<SoftwareClient>faxws</SoftwareClient>", b"")
    issues = schema_issues(broken)
    assert issues["vendor"]
    assert issues["faxws"]


def test_status_calls_name_their_job_ids_and_the_reference_its_prefix(face: Face) -> None:
    service = Service()
    client = mock_client(face, service)
    client.get_fax_status(["J1", "J2"])
    client.get_status_by_reference("order-42")
    client.cancel_fax("J7")
    status, reference, cancel = service.bodies()
    assert asked_ids(status) == ["J1", "J2"]
    assert field(reference, "JobId") == "JRI-order-42"
    assert field(cancel, "JobId") == "J7"
