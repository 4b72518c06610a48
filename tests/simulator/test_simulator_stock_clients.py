"""A stock client built from the vendor's WSDL follows a fax's life against the simulator:
send with SendFaxEx, look the job up by job id and by JRI-<ReferenceId>, read its real-time
status and cancel it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import zeep
from simulated_calls import PDF, START, pdf, vendor_time

from faxws._protocol import assumptions as vendor
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator, ManualClock

VENDOR = Path(__file__).parents[1] / "fixtures" / "vendor" / "FaxWS.wsdl"
AUTH = {"UserID": DEMO_USER_ID, "strPIN": DEMO_PIN}
RECIPIENT = dict.fromkeys(("RecipCompany", "RecipTitle", "RecipName", "RecipSecureCSID"), "")
JOB = {
    **dict.fromkeys(
        (
            "JobScheduleStartDate",
            "JobExpiryDate",
            "SenderCSID",
            "SenderName",
            "SenderCompany",
            "SenderPhone",
            "CoverText",
            "CoverName",
            "CoverSubject",
            "ReferenceId",
            "Resolution",
            "SenderFax",
            "SoftwareClient",
            "NotifyDestination",
            "NotifyAuthUser",
            "NotifyAuthPassword",
        ),
        "",
    ),
    **dict.fromkeys(("JobScheduleStartType", "NotifyType", "NotifyIncludeDeliveredImage"), 0),
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def service(clock: ManualClock) -> Iterator[tuple[FaxWSSimulator, Any]]:
    """The simulator and zeep's own client from the vendor's WSDL, as any team builds it."""
    with FaxWSSimulator(clock=clock) as sim, requests.Session() as session:
        session.trust_env = False
        client = zeep.Client(str(VENDOR), transport=zeep.Transport(session=session))
        yield (
            sim,
            client.create_service(
                "{https://ws.concordfax.com/fax/v5/FaxWS.wsdl}FaxWS", f"{sim.url}/fax/v5"
            ),
        )


def send_ex(service: Any, numbers: list[str], document: bytes = PDF, **job: Any) -> Any:
    return service.SendFaxEx(
        **AUTH,
        Recipients={"item": [{"RecipFaxNumber": n, **RECIPIENT} for n in numbers]},
        FaxJobFiles={"item": [{"FileIndex": 1, "FileTypeId": 101, "FileData": document}]},
        JobDetails={**JOB, **job},
    )


def ids(*job_ids: str) -> dict[str, Any]:
    return {"item": [{"JobId": j} for j in job_ids]}


def test_zeep_follows_a_fax_from_sendfaxex_to_delivery(
    service: tuple[FaxWSSimulator, Any], clock: ManualClock
) -> None:
    sim, zeep_service = service
    answer = send_ex(zeep_service, ["+1 555 0100", "+1 555 0101"], pdf(2), ReferenceId="Z-1")
    assert (answer["return"], answer.TTFP, answer.WSError.ErrorCode) == (True, 1, 0)
    first, second = (item.JobId for item in answer.FaxJobIds.item)
    assert zeep_service.SimpleGetFaxStatus(**AUTH, JobId=first) == 3
    assert zeep_service.SimpleGetFaxStatus(**AUTH, JobId="JRI-Z-1") == 3
    clock.advance((2 + 5 + 15) / 4)
    (sending,) = zeep_service.GetRealTimeFaxStatusEx2(
        **AUTH, FaxJobIds=ids(first)
    ).FaxStatusList.item
    assert (sending.RecipientState, sending.RecipientCurrentPageCount) == (
        vendor.RECIPIENT_SENDING,
        1,
    )
    assert (sending.RecipientTotalPageCount, sending.ReferenceId) == (2, "Z-1")
    clock.advance(15 / 4)  # both delivered: 2 + 5 + 2 * 10 simulated seconds
    answer = zeep_service.GetRealTimeFaxStatusEx2(**AUTH, FaxJobIds=ids(first, "SIM99999999"))
    delivered, unknown = answer.FaxStatusList.item
    assert (delivered.FaxJobStatusId, delivered.StatusDescription) == (1, "Delivered")
    assert delivered.FaxDeliveryDateTime == vendor_time(27 / 4)
    assert (delivered.FaxDeliveryDuration, delivered.RemoteFaxCSID) == (25, "+15550100")
    assert (unknown.Error.ErrorCode, unknown.Error.ErrorString) == (-5019, "Invalid Job ID")
    statuses = zeep_service.GetFaxStatus(**AUTH, FaxJobIds=ids(second)).FaxStatusList.item
    assert [(s.FaxJobId, s.FaxJobStatusId) for s in statuses] == [(second, 1)]
    assert zeep_service.SimpleGetFaxStatus(**AUTH, JobId="JRI-Z-1") == 1
    assert sim.jobs[0].deviations  # a stock client is served, its differences recorded


def test_zeep_cancels_a_scheduled_fax_and_is_told_when_it_is_too_late(
    service: tuple[FaxWSSimulator, Any], clock: ManualClock
) -> None:
    _, zeep_service = service
    answer = send_ex(
        zeep_service,
        ["+1 555 0100"],
        JobScheduleStartType=1,
        JobScheduleStartDate=vendor_time(3600),
        ReferenceId="Z-2",
    )
    (job_id,) = (item.JobId for item in answer.FaxJobIds.item)
    cancelled = zeep_service.CancelFax(**AUTH, JobId=job_id)
    assert (cancelled["return"], cancelled.WSError.ErrorCode) == (True, 0)
    assert zeep_service.SimpleGetFaxStatus(**AUTH, JobId="JRI-Z-2") == 2
    (item,) = zeep_service.GetFaxStatus(**AUTH, FaxJobIds=ids(job_id)).FaxStatusList.item
    assert item.StatusDescription == "Cancelled"
    again = zeep_service.CancelFax(**AUTH, JobId=job_id)
    assert (again["return"], again.WSError.ErrorCode) == (False, vendor.JOB_ENDED)
    unknown = zeep_service.CancelFax(**AUTH, JobId="SIM99999999")
    assert (unknown["return"], unknown.WSError.ErrorCode) == (False, -5019)
    too_far = send_ex(zeep_service, ["+1 555 0100"], JobScheduleStartDate=vendor_time(5 * 86400))
    assert (too_far["return"], too_far.WSError.ErrorCode) == (False, -5040)
