"""The operations the simulator serves, keyed by name: each takes an authenticated, valid
request and returns its answer. An injected WSError is answered in place of the work, with
``return`` false (SimpleGetFaxStatus, which has no WSError, returns its code).

Decisions where the vendor is silent: only SimpleGetFaxStatus takes ``JRI-<ReferenceId>``
(the other operations answer -5019 for it); under a ReferenceId shared by several jobs it
answers 3 while any of them is in progress, else 2 if any failed, else 1; a status item of
an unknown job id has status 0 and its Error -5019; CancelFax ends a job in progress at once,
as failed with the description "Cancelled", and answers a job that has ended with
``return`` false and the error of ``assumptions.JOB_ENDED``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faxws._protocol import assumptions as vendor
from faxws.bindings import (
    CancelFax,
    CancelFaxResponse,
    FaxJobId,
    FaxJobIds,
    FaxSendExResponse,
    FaxSendResponse,
    FaxStatus,
    FaxStatusList,
    FaxStatusResponse,
    GetFaxBroadcastReport,
    GetFaxBroadcastReportResponse,
    GetFaxStatus,
    GetRealTimeFaxStatusEx2,
    RealTimeFaxStatusEx2,
    RealTimeFaxStatusEx2List,
    RealTimeFaxStatusEx2Response,
    SendFax,
    SendFaxEx,
    SimpleFaxStatusResponse,
    SimpleGetFaxStatus,
    WSError,
)
from faxws.status import JobStatus
from faxws.testing._answers import client_fault, server_fault
from faxws.testing._documents import Document, Received
from faxws.testing._progress import JobProgress, schedule, ttfp
from faxws.testing._state import INVALID_JOB_ID, NO_ERROR, State, StoreError

__all__ = ["HANDLERS", "Call"]

_TOO_FAR = WSError(vendor.SCHEDULE_TOO_FAR, vendor.SCHEDULE_TOO_FAR_TEXT)
_NO_JOB_IDS = FaxJobIds(())


@dataclass
class Call:
    """One request being served."""

    state: State
    request: Any
    auth_mode: str
    request_id: str | None
    received: Received
    #: The TTFP to answer with; None: the seconds until the job's first attempt dials.
    ttfp: int | None
    #: A WSError to answer with (an injected fault), or error code 0.
    error: WSError
    #: When the request arrived (the simulator's clock).
    arrived: float
    #: Where documents too large for memory go.
    spool: Path | None = None
    #: The number of the request's record.
    request_number: int | None = None


def send_fax(call: Call) -> FaxSendResponse:
    return FaxSendResponse(*_submit(call, 0.0, vendor.DEFAULT_EXPIRY.total_seconds()))


def send_fax_ex(call: Call) -> FaxSendExResponse:
    request: SendFaxEx = call.request
    try:
        when = schedule(request.job_details, call.arrived)
    except ValueError as exc:
        raise client_fault(str(exc)) from None
    if when is None and call.error.error_code == 0:
        return FaxSendExResponse(False, _NO_JOB_IDS, 0, _TOO_FAR)
    return FaxSendExResponse(*_submit(call, *(when or (0.0, 0.0))))


def _check_indexes(request: SendFax | SendFaxEx) -> None:
    indexes = [f.file_index for f in request.fax_job_files.item]
    repeated = next((i for i in indexes if indexes.count(i) > 1), None)
    if repeated is not None:
        # FileIndex is each file's place in the job: two alike leave one unreachable.
        raise client_fault(f"FileIndex {repeated} is given to more than one file")


def _submit(
    call: Call, start_after: float, expires_after: float
) -> tuple[bool, FaxJobIds, int, WSError]:
    """Keep the job (unless an error is injected): return, job ids, TTFP and WSError."""
    request: SendFax | SendFaxEx = call.request
    _check_indexes(request)
    if call.error.error_code != 0:
        return False, _NO_JOB_IDS, 0, call.error
    documents = _documents(call)
    if len(documents) != len(request.fax_job_files.item):
        for document in documents:
            document.discard()
        raise server_fault("documents out of step")
    try:
        job = call.state.new_job(
            request,
            call.auth_mode,
            call.request_id,
            documents,
            call.received.deviations,
            call.arrived,
            start_after=start_after,
            expires_after=expires_after,
            request_number=call.request_number,
        )
    except StoreError as exc:
        raise server_fault(f"the simulator cannot keep the job: {exc}") from None
    first = call.ttfp if call.ttfp is not None else ttfp(start_after, call.state.time_scale)
    return True, FaxJobIds(tuple(FaxJobId(j) for j in job.job_ids)), first, call.error


def _documents(call: Call) -> list[Document]:
    """The documents, decoded as the request arrived (SendFax's), or else from the request
    (the request reader streams SendFax's only)."""
    documents = call.received.take_documents()
    if documents or call.spool is None:
        return documents
    for item in call.request.fax_job_files.item:
        assert isinstance(item.file_data, bytes)  # as read from the request
        document = Document(call.spool)
        try:
            document.write(item.file_data)
            document.close()
        except BaseException:
            document.discard()
            for done in documents:
                done.discard()
            raise
        documents.append(document)
    return documents


def get_fax_broadcast_report(call: Call) -> GetFaxBroadcastReportResponse:
    request: GetFaxBroadcastReport = call.request
    if call.error.error_code != 0:
        return GetFaxBroadcastReportResponse(return_=False, ws_error=call.error)
    known = call.state.known_job(request.user_id, request.job_id)
    error = NO_ERROR if known else INVALID_JOB_ID
    return GetFaxBroadcastReportResponse(return_=known, ws_error=error)


def simple_get_fax_status(call: Call) -> SimpleFaxStatusResponse:
    request: SimpleGetFaxStatus = call.request
    if call.error.error_code != 0:
        return SimpleFaxStatusResponse(call.error.error_code)
    wanted = request.job_id
    if wanted.startswith(vendor.REFERENCE_PREFIX):
        reference = wanted[len(vendor.REFERENCE_PREFIX) :]
        found = call.state.by_reference_progress(request.user_id, reference)
    else:
        one = call.state.progress(wanted, request.user_id)
        found = [] if one is None else [one]
    statuses = {p.status for p in found}
    for status in (JobStatus.IN_PROGRESS, JobStatus.FAILED, JobStatus.SUCCEEDED):
        if status in statuses:
            return SimpleFaxStatusResponse(int(status))
    return SimpleFaxStatusResponse(vendor.JOB_NOT_FOUND)


def get_fax_status(call: Call) -> FaxStatusResponse:
    request: GetFaxStatus = call.request
    if call.error.error_code != 0:
        return FaxStatusResponse(False, FaxStatusList(()), call.error)
    items = []
    for asked in request.fax_job_ids.item:
        p = call.state.progress(asked.job_id, request.user_id)
        items.append(
            FaxStatus(asked.job_id, vendor.UNKNOWN_JOB_STATUS, "", INVALID_JOB_ID)
            if p is None
            else FaxStatus(asked.job_id, int(p.status), p.description, NO_ERROR)
        )
    return FaxStatusResponse(True, FaxStatusList(tuple(items)), NO_ERROR)


def get_real_time_fax_status_ex2(call: Call) -> RealTimeFaxStatusEx2Response:
    request: GetRealTimeFaxStatusEx2 = call.request
    if call.error.error_code != 0:
        return RealTimeFaxStatusEx2Response(False, RealTimeFaxStatusEx2List(()), call.error)
    items = tuple(
        _real_time(asked.job_id, call.state.progress(asked.job_id, request.user_id))
        for asked in request.fax_job_ids.item
    )
    return RealTimeFaxStatusEx2Response(True, RealTimeFaxStatusEx2List(items), NO_ERROR)


def _real_time(job_id: str, p: JobProgress | None) -> RealTimeFaxStatusEx2:
    if p is None:
        unknown = vendor.UNKNOWN_JOB_STATUS
        return RealTimeFaxStatusEx2(job_id, unknown, "", 0, 0, 0, "", 0, "", "", INVALID_JOB_ID)
    return RealTimeFaxStatusEx2(
        fax_job_id=job_id,
        fax_job_status_id=int(p.status),
        status_description=p.description,
        recipient_state=p.recipient_state,
        recipient_current_page_count=p.pages_sent,
        recipient_total_page_count=p.pages_total,
        fax_delivery_date_time=p.delivered_at_text,
        fax_delivery_duration=p.duration,
        remote_fax_csid=p.remote_csid,
        reference_id=p.reference_id,
        error=NO_ERROR,
    )


def cancel_fax(call: Call) -> CancelFaxResponse:
    request: CancelFax = call.request
    if call.error.error_code != 0:
        return CancelFaxResponse(False, call.error)
    try:
        error = call.state.cancel(request.user_id, request.job_id)
    except StoreError as exc:
        raise server_fault(f"the simulator cannot keep the cancel: {exc}") from None
    return CancelFaxResponse(error.error_code == 0, error)


HANDLERS: Mapping[str, Callable[[Call], object]] = {
    "SendFax": send_fax,
    "GetFaxBroadcastReport": get_fax_broadcast_report,
    "SendFaxEx": send_fax_ex,
    "SimpleGetFaxStatus": simple_get_fax_status,
    "GetFaxStatus": get_fax_status,
    "GetRealTimeFaxStatusEx2": get_real_time_fax_status_ex2,
    "CancelFax": cancel_fax,
}
