"""What the service says about a job after submission: its status, as a value and as results.

The vendor documents three job status ids (1 succeeded, 2 failed, 3 in progress) for
SimpleGetFaxStatus; the list-based status calls and push notifications are read with the same
values. Any other value is kept as its number with no :class:`JobStatus`, and counts as not
final, as the vendor's public clients treat it.
"""

from __future__ import annotations

import enum

__all__ = ["JobStatus", "job_status"]


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
