"""``faxws status``: how jobs are doing (GetRealTimeFaxStatusEx2), or whether the service
took a send by its reference id (SimpleGetFaxStatus with ``JRI-``); and how a status is
described, for this command and for ``send --wait``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from contextlib import ExitStack
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from faxws.cli import _client
from faxws.cli._output import EXIT_CODES_HELP, Outcome, UsageError, one_line

if TYPE_CHECKING:
    from faxws.status import JobStatus, RealTimeFaxStatus

SUMMARY = "show how jobs are doing (GetRealTimeFaxStatusEx2)"
DESCRIPTION = """\
Show each job's status, pages sent of total, description and delivery time; or, with
--reference, whether the service took a send with that reference id (JRI-REF).

The exit code says whether the service answered (0), not how the jobs are doing: read each
job's status from the output. A reference that is not found right after a send whose answer
was lost proves nothing yet: the job may not be visible at once, so ask again later."""
EXAMPLE = """\
example:
  faxws status SIM00000001 SIM00000002
  faxws status --reference invoice-2041 --json
"""
EPILOG = EXAMPLE + "\n" + EXIT_CODES_HELP

_HEADER = ("JOB ID", "STATUS", "PAGES", "DESCRIPTION", "DELIVERED AT")


def run(args: argparse.Namespace, out: Outcome) -> int:
    if args.reference is not None and args.job_ids:
        raise UsageError("give JOB_ID or --reference, not both")
    if args.reference is None and not args.job_ids:
        raise UsageError("give one or more JOB_ID, or --reference REF")
    if args.reference is not None:
        return _client.call(
            args, out, lambda stack: _by_reference(args, out, stack), "the status was read"
        )
    return _client.call(args, out, lambda stack: _by_job(args, out, stack), "the status was read")


def _by_job(args: argparse.Namespace, out: Outcome, stack: ExitStack) -> _client.Answer:
    from faxws._protocol.assumptions import STATUS_BATCH_SIZE

    client = stack.enter_context(_client.make_client(args))
    if len(set(args.job_ids)) > STATUS_BATCH_SIZE:
        out.request_id = None  # one call per batch, each with a request id of its own
    _client.sending(out, client)
    statuses = client.get_real_time_fax_status(args.job_ids, request_id=out.request_id)
    data = {"statuses": [status_data(s) for s in statuses]}
    result = SimpleNamespace(request_id=out.request_id, activity_id=None)
    return result, data, table(statuses)


def _by_reference(args: argparse.Namespace, out: Outcome, stack: ExitStack) -> _client.Answer:
    client = stack.enter_context(_client.make_client(args))
    _client.sending(out, client)
    found = client.get_status_by_reference(args.reference, request_id=out.request_id)
    data = {
        "reference_id": found.reference_id,
        "found": found.found,
        "status": status_word(found.status, found.status_id) if found.found else None,
        "status_id": found.status_id,
    }
    if found.found:
        line = f"Reference {found.reference_id}: found, {data['status']}."
    else:
        line = (
            f"Reference {found.reference_id}: not found. A job sent moments ago may not be "
            "visible yet: ask again later before sending it again."
        )
    result = SimpleNamespace(request_id=out.request_id, activity_id=None)
    return result, data, [line]


def status_word(status: JobStatus | None, status_id: int) -> str:
    """A status as the output names it (``in_progress`` in JSON is ``in progress`` here)."""
    if status is None:
        return f"status {status_id}"
    return status.name.lower().replace("_", " ")


def state(status: RealTimeFaxStatus) -> str:
    """The status word of one job's status item, or what the item's own error says."""
    from faxws._protocol.assumptions import JOB_NOT_FOUND

    if status.error_code == JOB_NOT_FOUND:
        return "not found"
    if status.error_code:
        return f"error {status.error_code}"
    return status_word(status.status, status.status_id)


def status_data(status: RealTimeFaxStatus) -> dict[str, Any]:
    """Every field of a job's status, for --json."""
    from dataclasses import fields

    data = {f.name: getattr(status, f.name) for f in fields(status)}
    data["status"] = None if status.status is None else status.status.name.lower()
    data["delivered_at"] = None if status.delivered_at is None else status.delivered_at.isoformat()
    data["final"] = status.final
    return data


def cells(status: RealTimeFaxStatus) -> tuple[str, str, str, str, str]:
    """A job's row: job id, status, pages sent/total, description, delivered at."""
    description = one_line(status.error_string if status.error_code else status.description)
    delivered = status.delivered_at.isoformat() if status.delivered_at else status.delivered_at_text
    return (
        status.job_id,
        state(status),
        f"{status.pages_sent}/{status.pages_total}",
        description or "-",
        one_line(delivered) or "-",
    )


def table(statuses: Sequence[RealTimeFaxStatus]) -> list[str]:
    rows = [_HEADER, *(cells(s) for s in statuses)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in rows
    ]
