"""Where the vendor publishes nothing, faxws decides here, once, for the clients and the
simulator alike (docs/assumptions.md lists each with its reason)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone

__all__ = [
    "CANCELLED_DESCRIPTION",
    "DEFAULT_EXPIRY",
    "EXPIRED_DESCRIPTION",
    "JOB_ENDED",
    "JOB_ENDED_TEXT",
    "JOB_NOT_FOUND",
    "JOB_NOT_FOUND_TEXT",
    "MAX_EXPIRY",
    "MAX_SCHEDULE_AHEAD",
    "NOTIFY_TYPES",
    "RECIPIENT_DELIVERED",
    "RECIPIENT_DIALING",
    "RECIPIENT_FAILED",
    "RECIPIENT_QUEUED",
    "RECIPIENT_RETRY_WAIT",
    "RECIPIENT_SENDING",
    "REFERENCE_PREFIX",
    "SCHEDULE_AT",
    "SCHEDULE_IMMEDIATE",
    "SCHEDULE_TOO_FAR",
    "SCHEDULE_TOO_FAR_TEXT",
    "STATUS_BATCH_SIZE",
    "UNKNOWN_JOB_STATUS",
    "format_datetime",
    "new_reference_id",
    "parse_datetime",
]

#: JobScheduleStartType: one public client's numbers (another sends 1 for an immediate job;
#: with no start date both readings start at once).
SCHEDULE_IMMEDIATE = 0
SCHEDULE_AT = 1

#: NotifyType, by the names faxws's options use (one public client's numbers).
NOTIFY_TYPES = {"none": 0, "email": 1, "get": 2, "post": 3}

#: Documented error codes: an unknown job id; a start more than 4 days ahead.
JOB_NOT_FOUND = -5019
SCHEDULE_TOO_FAR = -5040
#: Their texts, as the vendor gives them.
JOB_NOT_FOUND_TEXT = "Invalid Job ID"
SCHEDULE_TOO_FAR_TEXT = "Scheduled DateTime specified exceeds maximum allowed defer time"

#: Not published (the vendor publishes no code for it): what CancelFax answers, with return
#: false, for a job that has already ended. Outside the -50xx range of the documented codes,
#: so that it is never taken for one of the vendor's.
JOB_ENDED = -9001
JOB_ENDED_TEXT = "The job has already ended"

#: Not published: the FaxJobStatusId of a status item whose job id is unknown (its Error
#: holds -5019). 0 is none of the documented ids, so it is never read as an outcome.
UNKNOWN_JOB_STATUS = 0

#: Documented limits: a start at most 4 days ahead, an expiry at most 2 days after the start.
MAX_SCHEDULE_AHEAD = timedelta(days=4)
MAX_EXPIRY = DEFAULT_EXPIRY = timedelta(days=2)

#: Not published: the status of a cancelled or expired job. Both read as failed (2), told
#: apart by the description, so that code treating 1 and 2 as final stops waiting.
CANCELLED_DESCRIPTION = "Cancelled"
EXPIRED_DESCRIPTION = "Expired"

#: RecipientState (values not published): the simulator's numbering.
RECIPIENT_QUEUED = 0
RECIPIENT_DIALING = 1
RECIPIENT_SENDING = 2
RECIPIENT_RETRY_WAIT = 3
RECIPIENT_DELIVERED = 4
RECIPIENT_FAILED = 5

#: Job ids per status call (not published; the vendor's clients send lists of this order).
STATUS_BATCH_SIZE = 100

#: What SimpleGetFaxStatus takes in place of a job id to look a job up by its ReferenceId.
REFERENCE_PREFIX = "JRI-"

_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}\Z", re.ASCII)


def new_reference_id() -> str:
    """A ReferenceId for a send whose caller gave none: 32 hex digits, unique in practice
    (the vendor publishes no length or character limit; this is short and plain)."""
    return uuid.uuid4().hex


def format_datetime(value: datetime) -> str:
    """The vendor's form, ``YYYY-MM-DDTHH:MM:SS+HH:MM``, of an aware datetime (fractions of a
    second dropped; an offset with seconds, which the form cannot hold, becomes UTC)."""
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("a datetime without a time zone")
    if offset.total_seconds() % 60:
        value = value.astimezone(timezone.utc)
    return value.isoformat(timespec="seconds")


def parse_datetime(text: str) -> datetime | None:
    """An aware datetime from the vendor's form, or None for any other text (empty too)."""
    if not _DATETIME.match(text):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:  # digits in the form that are no date, such as month 13
        return None
