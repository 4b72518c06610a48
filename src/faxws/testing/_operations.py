"""The operations the simulator serves, keyed by name: each takes an authenticated, valid
request and returns its answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from faxws.bindings import (
    FaxJobId,
    FaxJobIds,
    FaxSendResponse,
    GetFaxBroadcastReport,
    GetFaxBroadcastReportResponse,
    SendFax,
    WSError,
)
from faxws.testing._answers import client_fault, server_fault
from faxws.testing._documents import Received
from faxws.testing._state import State, StoreError

__all__ = ["HANDLERS", "Call"]

#: The error the service answers for a job id it does not know (public, from the vendor).
INVALID_JOB_ID = WSError(-5019, "Invalid Job ID")


@dataclass
class Call:
    """One request being served."""

    state: State
    request: Any
    auth_mode: str
    request_id: str | None
    received: Received
    ttfp: int
    #: A WSError to answer with (an injected fault), or error code 0.
    error: WSError
    #: When the request arrived (seconds since the epoch).
    arrived: float


def send_fax(call: Call) -> FaxSendResponse:
    request: SendFax = call.request
    ok = call.error.error_code == 0
    job_ids: tuple[str, ...] = ()
    indexes = [f.file_index for f in request.fax_job_files.item]
    repeated = next((i for i in indexes if indexes.count(i) > 1), None)
    if repeated is not None:
        # FileIndex is each file's place in the job: two alike leave one unreachable.
        raise client_fault(f"FileIndex {repeated} is given to more than one file")
    if ok:
        documents = call.received.take_documents()
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
            )
        except StoreError as exc:
            raise server_fault(f"the simulator cannot keep the job: {exc}") from None
        job_ids = job.job_ids
    return FaxSendResponse(
        return_=ok,
        fax_job_ids=FaxJobIds(item=tuple(FaxJobId(j) for j in job_ids)),
        ttfp=call.ttfp if ok else 0,
        ws_error=call.error,
    )


def get_fax_broadcast_report(call: Call) -> GetFaxBroadcastReportResponse:
    request: GetFaxBroadcastReport = call.request
    if call.error.error_code != 0:
        return GetFaxBroadcastReportResponse(return_=False, ws_error=call.error)
    known = call.state.known_job(request.user_id, request.job_id)
    error = WSError(0, "") if known else INVALID_JOB_ID
    return GetFaxBroadcastReportResponse(return_=known, ws_error=error)


HANDLERS: Mapping[str, Callable[[Call], object]] = {
    "SendFax": send_fax,
    "GetFaxBroadcastReport": get_fax_broadcast_report,
}
