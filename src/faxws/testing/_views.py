"""What the REST API and the inbox show of the simulator's records: jobs, each recipient's
progress and timeline, requests (every secret masked), pending faults, and documents' kinds."""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import TYPE_CHECKING, Any

from faxws._protocol.redact import redact
from faxws.models import FileType
from faxws.testing._faults import Fault
from faxws.testing._progress import JobProgress, Moment, PushRecord, clock_time
from faxws.testing._records import (
    ReceivedFile,
    ReceivedRequest,
    SimulatedJob,
    body_secrets,
    masked,
    text_of,
)

if TYPE_CHECKING:
    from faxws.testing._state import State

__all__ = [
    "BODY_SHOWN",
    "Kind",
    "fault_json",
    "file_kind",
    "job_json",
    "moment_json",
    "progress_json",
    "push_json",
    "request_json",
    "shown_body",
    "timestamp",
    "type_name",
]

#: Characters of a request body shown.
BODY_SHOWN = 64 * 1024
# A document's base64 is shown by its length: the document itself is a link away.
_FILE_DATA = re.compile(r"(<(?:[\w.-]+:)?FileData(?:\s[^>/]*)?>)([^<]{120,})(?=</)")
_TYPE_NAMES = {
    FileType.TIFF_G3: "TIFF G3",
    FileType.TIFF_G4: "TIFF G4",
    FileType.WORD: "Word",
    FileType.PDF: "PDF",
    FileType.RTF: "RTF",
    FileType.EXCEL: "Excel",
    FileType.POWERPOINT: "PowerPoint",
    FileType.TEXT: "Text",
    FileType.VISIO: "Visio",
    FileType.GIF: "GIF",
    FileType.JPEG: "JPEG",
    FileType.TIFF_COLOR: "TIFF colour",
    FileType.HTML: "HTML",
    FileType.PNG: "PNG",
}


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a document is by its first bytes: its media type, a file name extension, and
    whether a browser shows it as it is."""

    media: str
    extension: str
    shown: bool


_KINDS = (
    (b"%PDF-", Kind("application/pdf", "pdf", True)),
    (b"\x89PNG\r\n\x1a\n", Kind("image/png", "png", True)),
    (b"\xff\xd8\xff", Kind("image/jpeg", "jpg", True)),
    (b"GIF87a", Kind("image/gif", "gif", True)),
    (b"GIF89a", Kind("image/gif", "gif", True)),
    (b"II*\0", Kind("image/tiff", "tif", False)),
    (b"MM\0*", Kind("image/tiff", "tif", False)),
)
_UNKNOWN = Kind("application/octet-stream", "bin", False)


def timestamp(seconds: float) -> str:
    """ISO 8601 in UTC, to the millisecond; the number of seconds itself for a moment no
    date can show (beyond the year 9999, with a slow time scale), rather than no answer."""
    try:
        moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return repr(seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_kind(received: ReceivedFile) -> Kind:
    """What a document is, by its first bytes. Raises FileNotFoundError for one forgotten."""
    with received.open() as f:
        head = f.read(16)
    return next((kind for magic, kind in _KINDS if head.startswith(magic)), _UNKNOWN)


def type_name(file_type: int) -> str:
    """A FileTypeId by name (``PDF``, ``TIFF G3``), or ``type N`` for one not known."""
    try:
        return _TYPE_NAMES[FileType(file_type)]
    except (ValueError, KeyError):
        return f"type {file_type}"


def job_json(state: State, job: SimulatedJob) -> dict[str, Any]:
    """A job as received, each recipient with where its job is now (NotifyAuthPassword
    masked, in the NotifyDestination too, and the destination's user information)."""
    scale = state.time_scale
    return {
        "id": job.id,
        "job_ids": list(job.job_ids),
        "user_id": job.user_id,
        "auth_mode": job.auth_mode,
        "request_id": job.request_id,
        "received_at": timestamp(job.received_at),
        "operation": job.operation,
        "reference_id": job.reference_id,
        "pages": job.pages,
        "scheduled_start": timestamp(clock_time(job, job.start_after, scale)),
        "expires_at": timestamp(clock_time(job, job.expires_after, scale)),
        "details": job.shown_details(),
        "recipients": [
            {
                "fax_number": r.recip_fax_number,
                "company": r.recip_company,
                "title": r.recip_title,
                "name": r.recip_name,
                "secure_csid": r.recip_secure_csid,
                **progress_json(p),
            }
            for r, p in zip(job.recipients, state.progresses(job), strict=True)
        ],
        "files": [
            {"index": f.index, "file_type": f.file_type, "size": f.size, "sha256": f.sha256}
            for f in job.files
        ],
        "deviations": list(job.deviations),
    }


def progress_json(p: JobProgress) -> dict[str, Any]:
    return {
        "job_id": p.job_id,
        "status": int(p.status),
        "description": p.description,
        "recipient_state": p.recipient_state,
        "pages_sent": p.pages_sent,
        "pages_total": p.pages_total,
        "attempts": p.attempts,
        "outcome": p.outcome,
        "outcome_pages": p.pages_before_failure if p.outcome == "fails-after-pages" else None,
        "ended_at": _moment(p.ended_at),
        "delivery_date_time": p.delivered_at_text,
        "duration": p.duration,
        "remote_csid": p.remote_csid,
        "cancelled_at": _moment(p.cancelled_at),
        "push": None if p.push is None else push_json(p.push),
    }


def push_json(push: PushRecord) -> dict[str, Any]:
    return {
        "state": push.state,
        "attempts": push.attempts,
        "result": push.result,
        "at": _moment(push.at),
        "next_at": _moment(push.next_at) if push.state == "pending" else None,
    }


def moment_json(moment: Moment) -> dict[str, Any]:
    return {
        "at": timestamp(moment.at),
        "kind": moment.kind,
        "text": moment.text,
        "done": moment.done,
    }


def fault_json(fault: Fault, operation: str | None, times: int) -> dict[str, Any]:
    """A fault as ``POST /api/faults`` takes it: its kind, its own fields, the operation and
    the requests it is (still) for."""
    return {
        "fault": fault.kind,
        **dataclasses.asdict(fault),
        "operation": operation,
        "times": times,
    }


def _moment(seconds: float | None) -> str | None:
    return None if seconds is None else timestamp(seconds)


def _secrets_of(request: ReceivedRequest, text: str | None) -> frozenset[str]:
    # The body's own secrets (a push's password) may be quoted by its deviations.
    return request._secrets | (body_secrets(text) if text is not None else frozenset())


def request_json(number: int, request: ReceivedRequest) -> dict[str, Any]:
    """A request with every credential masked: the Authorization value, strPIN, and the
    accounts' secrets in any spelling."""

    text = text_of(request.body) if request.body_retained else None
    secrets = _secrets_of(request, text)

    def clean(text: str | None) -> str | None:
        return None if text is None else redact(text, secrets)

    body = None if text is None else masked(text, secrets)
    return {
        "id": number,
        "method": request.method,
        "path": clean(request.path),
        "operation": request.operation,
        "request_id": clean(request.header("x-ch-request-id")),
        "received_at": timestamp(request.received_at),
        "status": request.status,
        "refusal": clean(request.refusal),
        "fault": request.fault,
        "deviations": [clean(d) for d in request.deviations],
        "headers": request.masked_headers(),
        "body_size": request.body_size,
        "body": None if body is None else body[:BODY_SHOWN],
        "body_truncated": body is not None and len(body) > BODY_SHOWN,
    }


def shown_body(request: ReceivedRequest) -> str | None:
    """A request's body for people: every secret masked, each document's base64 told by its
    length, an element a line, at most :data:`BODY_SHOWN` characters; None when the body was
    not kept."""
    if not request.body_retained:
        return None
    text = text_of(request.body)
    body = masked(text, _secrets_of(request, text))
    body = _FILE_DATA.sub(
        lambda m: f"{m.group(1)}[{len(m.group(2)):,} characters of base64: the document]", body
    )
    body = body if len(body) <= BODY_SHOWN else body[:BODY_SHOWN] + "[cut here]"
    return _indented(body) if body.lstrip().startswith("<") else body


_TOKEN = re.compile(r"<[^>]*>?|[^<]+")


def _indented(text: str) -> str:
    """XML with an element a line, indented by depth (a leaf's text on its line); read as
    text, never parsed, so whatever came is shown, well-formed or not."""
    tokens = _TOKEN.findall(text)
    lines: list[str] = []
    depth, n = 0, 0
    while n < len(tokens):
        token = tokens[n]
        if token.startswith("</"):
            depth = max(depth - 1, 0)
            lines.append("  " * depth + token)
        elif token.startswith("<"):
            opens = not token.startswith(("<?", "<!")) and not token.endswith("/>")
            following = tokens[n + 1 : n + 3]
            if (
                opens
                and len(following) == 2
                and not following[0].startswith("<")
                and following[1].startswith("</")
            ):
                lines.append("  " * depth + "".join((token, *following)))
                n += 3
                continue
            lines.append("  " * depth + token)
            depth += 1 if opens else 0
        elif token.strip():
            lines.append("  " * depth + token.strip())
        n += 1
    return "\n".join(lines)
