"""What the service says about a job after submission: its status, as a value and as results.

The vendor documents three job status ids (1 succeeded, 2 failed, 3 in progress) for
SimpleGetFaxStatus; the list-based status calls and push notifications are read with the same
values. Any other value is kept as its number with no :class:`JobStatus`, and counts as not
final, as the vendor's public clients treat it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from faxws import bindings
from faxws._protocol.assumptions import parse_datetime

__all__ = [
    "CancelResult",
    "FaxStatus",
    "JobStatus",
    "RealTimeFaxStatus",
    "ReferenceStatus",
    "job_status",
]


class JobStatus(enum.IntEnum):
    """A job's status id as the service reports it."""

    SUCCEEDED = 1
    FAILED = 2
    IN_PROGRESS = 3

    @property
    def final(self) -> bool:
        """True once the job has ended (succeeded or failed)."""
        return self is not JobStatus.IN_PROGRESS


def job_status(status_id: int) -> JobStatus | None:
    """The :class:`JobStatus` of a status id, or None for a value the vendor gives no meaning."""
    try:
        return JobStatus(status_id)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class FaxStatus:
    """One job's status, as GetFaxStatus reports it."""

    job_id: str
    status_id: int
    """The number the service sent (see :class:`JobStatus`)."""
    status: JobStatus | None
    """The documented meaning of ``status_id``; None for another value, or when the item
    carries an error (then ``status_id`` means nothing)."""
    description: str
    """The status in the service's words."""
    error_code: int = 0
    """The item's own error code: 0 when the job was found (-5019: unknown job id)."""
    error_string: str = ""

    @property
    def final(self) -> bool:
        """True once the job has ended; an unknown status id is not final."""
        return self.status is not None and self.status.final


@dataclass(frozen=True, slots=True)
class RealTimeFaxStatus(FaxStatus):
    """One job's status with its delivery progress, as GetRealTimeFaxStatusEx2 reports it."""

    recipient_state: int = 0
    """The service's state of the delivery to the recipient (values not published)."""
    pages_sent: int = 0
    pages_total: int = 0
    delivered_at: datetime | None = None
    """When the fax was delivered; None before, or when the service's text is not a date
    and time with an offset (the text is kept in ``delivered_at_text``)."""
    delivered_at_text: str = ""
    duration_seconds: int = 0
    """Duration of the delivering call."""
    remote_csid: str = ""
    """Identification the receiving machine gave."""
    reference_id: str = ""
    """The ReferenceId the job was sent with."""


@dataclass(frozen=True, slots=True)
class ReferenceStatus:
    """The status SimpleGetFaxStatus gives for ``JRI-<reference_id>``.

    ``found`` False (the service's -5019) right after a send whose answer was lost does not
    prove that nothing was sent: the vendor does not say how soon a job becomes visible.
    """

    reference_id: str
    found: bool
    status_id: int
    status: JobStatus | None


@dataclass(frozen=True, slots=True)
class CancelResult:
    """The service accepted a request to cancel a job (it may still end otherwise)."""

    job_id: str
    request_id: str
    activity_id: str | None = None


def _common(item: bindings.FaxStatus | bindings.RealTimeFaxStatusEx2) -> dict[str, Any]:
    """The fields every status item has, as :class:`FaxStatus` names them."""
    error = item.error.error_code
    return {
        "job_id": item.fax_job_id,
        "status_id": item.fax_job_status_id,
        "status": None if error else job_status(item.fax_job_status_id),
        "description": item.status_description,
        "error_code": error,
        "error_string": item.error.error_string,
    }


def _fax_status(item: bindings.FaxStatus) -> FaxStatus:
    return FaxStatus(**_common(item))


def _real_time_status(item: bindings.RealTimeFaxStatusEx2) -> RealTimeFaxStatus:
    return RealTimeFaxStatus(
        **_common(item),
        recipient_state=item.recipient_state,
        pages_sent=item.recipient_current_page_count,
        pages_total=item.recipient_total_page_count,
        delivered_at=parse_datetime(item.fax_delivery_date_time),
        delivered_at_text=item.fax_delivery_date_time,
        duration_seconds=item.fax_delivery_duration,
        remote_csid=item.remote_fax_csid,
        reference_id=item.reference_id,
    )
