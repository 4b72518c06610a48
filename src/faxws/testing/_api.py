"""The simulator's REST API, JSON on the service's port, for tests in any language.

    GET    /api/jobs[?min=N&timeout=S&limit=L]   newest first; waits for at least N jobs
    GET    /api/jobs/{id}                       by the job's number or one of its job ids
    GET    /api/jobs/{id}/files/{index}         the document's bytes
    PUT    /api/jobs/{id}/outcome               {"outcome": name[, "pages": N]}: what happens
                                                to a job id, or to every recipient of a job
    DELETE /api/jobs                            forget jobs, requests and pending faults
    GET    /api/requests[?limit=L]              newest first, secrets masked
    POST   /api/faults                          {"fault": kind, ..., "operation", "times"}

A POST, PUT or DELETE must carry ``Content-Type: application/json`` or an ``X-FaxWS-Client``
header: a page on another origin can send neither without a CORS preflight, which the
simulator never grants, so it cannot clear the inbox or inject faults.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from faxws._protocol.redact import redact
from faxws.errors import BadInputError
from faxws.testing._answers import RejectError
from faxws.testing._durable import StoreError
from faxws.testing._faults import KINDS
from faxws.testing._life import Plan
from faxws.testing._progress import JobProgress, PushRecord, clock_time, make_plan
from faxws.testing._records import (
    ReceivedFile,
    ReceivedRequest,
    SimulatedJob,
    body_secrets,
    masked,
    text_of,
)

if TYPE_CHECKING:
    from faxws.testing._http import Handler
    from faxws.testing._state import State

__all__ = ["MAX_WAIT", "PREFIX", "file_type_of", "handle", "job_json", "timestamp"]

PREFIX = "/api/"
#: The longest ``?timeout=`` a request may wait for jobs.
MAX_WAIT = 300.0
_DEFAULT_LIMIT = 100
_MAX_LIMIT = 100_000
_BODY_SHOWN = 64 * 1024  # characters of a request body the API shows
_MAX_JSON = 64 * 1024
#: What a browser can show, by the first bytes of a document.
_MAGIC = (
    (b"%PDF-", "application/pdf", "pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
)


class _ApiError(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status, self.message = status, message
        self.headers = dict(headers or {})


def timestamp(seconds: float) -> str:
    """ISO 8601 in UTC, to the millisecond; the number of seconds itself for a moment no
    date can show (beyond the year 9999, with a slow time scale), rather than no answer."""
    try:
        moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return repr(seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_type_of(received: ReceivedFile) -> tuple[str, str]:
    """The media type and file name extension of a document, by its first bytes."""
    with received.open() as f:
        head = f.read(16)
    for magic, media, extension in _MAGIC:
        if head.startswith(magic):
            return media, extension
    return "application/octet-stream", "bin"


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


def _moment(seconds: float | None) -> str | None:
    return None if seconds is None else timestamp(seconds)


def request_json(request: ReceivedRequest) -> dict[str, Any]:
    """A request with every credential masked: the Authorization value, strPIN, and the
    accounts' secrets in any spelling."""

    text = text_of(request.body) if request.body_retained else None
    # The body's own secrets (a push's password) may be quoted by its deviations.
    secrets = request._secrets | (body_secrets(text) if text is not None else set())

    def clean(text: str | None) -> str | None:
        return None if text is None else redact(text, secrets)

    body = None if text is None else masked(text, secrets)
    return {
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
        "body": None if body is None else body[:_BODY_SHOWN],
        "body_truncated": body is not None and len(body) > _BODY_SHOWN,
    }


def handle(handler: Handler, path: str, query: str) -> None:
    """Answer one request under :data:`PREFIX`."""
    try:
        _route(handler, path, _params(query))
    except _ApiError as error:
        _send_json(handler, error.status, {"error": error.message}, error.headers)
    except RejectError as reject:  # the body could not be read (too large, bad length)
        _send_json(handler, reject.status, {"error": reject.reason})


def _route(handler: Handler, path: str, params: dict[str, str]) -> None:
    sim = handler.server.sim
    state = sim._state
    parts = path[len(PREFIX) :].split("/")
    method = handler.command
    if parts == ["jobs"]:
        if method == "GET":
            count = _int(params, "min", 0, 0, _MAX_LIMIT)
            wait = _seconds(params, "timeout")
            limit = _int(params, "limit", _DEFAULT_LIMIT, 1, _MAX_LIMIT)
            if count:
                state.wait_for_jobs(count, wait)
            total, newest = state.recent_jobs(limit)
            jobs = [job_json(state, j) for j in newest]
            _send_json(handler, 200, {"total": total, "jobs": jobs})
            return
        if method == "DELETE":
            _read_body(handler, json_required=False)
            sim.reset()
            _send_json(handler, 200, {"cleared": True})
            return
        raise _not_allowed("GET, DELETE")
    if len(parts) == 2 and parts[0] == "jobs":
        _only(method, "GET")
        job = _job(state.by_id.get(parts[1]) or state.job(parts[1]), parts[1])
        _send_json(handler, 200, job_json(state, job))
        return
    if len(parts) == 3 and parts[0] == "jobs" and parts[2] == "outcome":
        _only(method, "PUT")
        plan = _plan(_read_body(handler, json_required=True))
        try:
            changed = state.set_outcome(parts[1], plan)
        except KeyError:
            raise _ApiError(404, f"no job {parts[1]}") from None
        except ValueError as exc:  # the job has ended
            raise _ApiError(409, str(exc)) from None
        except StoreError as exc:
            raise _ApiError(500, f"the simulator cannot keep the outcome: {exc}") from None
        _send_json(handler, 200, job_json(state, changed))
        return
    if len(parts) == 4 and parts[0] == "jobs" and parts[2] == "files":
        _only(method, "GET")
        job = _job(state.by_id.get(parts[1]), parts[1])
        found = next((f for f in job.files if str(f.index) == parts[3]), None)
        if found is None:
            raise _ApiError(404, f"job {parts[1]} has no file {parts[3]}")
        _send_file(handler, job, found, download=params.get("download") == "1")
        return
    if parts == ["requests"]:
        _only(method, "GET")
        limit = _int(params, "limit", _DEFAULT_LIMIT, 1, _MAX_LIMIT)
        total, recent = state.recent_requests(limit)
        _send_json(handler, 200, {"total": total, "requests": [request_json(r) for r in recent]})
        return
    if parts == ["faults"]:
        _only(method, "POST")
        spec = _read_body(handler, json_required=True)
        fault, operation, times = _fault(spec)
        try:
            sim.inject(fault, operation=operation, times=times)
        except ValueError as exc:
            raise _ApiError(400, str(exc)) from None
        _send_json(handler, 201, {"fault": fault.kind, "operation": operation, "times": times})
        return
    raise _ApiError(404, f"no such resource: {path}")


def _plan(spec: Any) -> Plan:
    if not isinstance(spec, dict):
        raise _ApiError(400, "the body must be a JSON object")
    unknown = sorted(set(spec) - {"outcome", "pages"})
    if unknown:
        raise _ApiError(400, f"unknown field {unknown[0]!r}: the fields are outcome and pages")
    try:
        return make_plan(spec.get("outcome"), spec.get("pages"))
    except ValueError as exc:
        raise _ApiError(400, str(exc)) from None


def _fault(spec: Any) -> tuple[Any, str | None, int]:
    if not isinstance(spec, dict):
        raise _ApiError(400, "the body must be a JSON object")
    spec = dict(spec)
    kind = spec.pop("fault", None)
    operation = spec.pop("operation", None)
    times = spec.pop("times", 1)
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise _ApiError(400, f"fault must be one of {', '.join(sorted(KINDS))}")
    if operation is not None and not isinstance(operation, str):
        raise _ApiError(400, "operation must be a string")
    if isinstance(times, bool) or not isinstance(times, int):
        raise _ApiError(400, "times must be a whole number")
    try:
        fault = cls(**spec)
    except TypeError:
        fields = ", ".join(f.name for f in dataclasses.fields(cls)) or "no other fields"
        raise _ApiError(400, f"{kind} takes {fields}") from None
    except (ValueError, BadInputError) as exc:
        raise _ApiError(400, str(exc)) from None
    return fault, operation, times


def _read_body(handler: Handler, *, json_required: bool) -> Any:
    content_type = handler.fields.get("content-type", "")
    is_json = content_type.split(";", 1)[0].strip().lower() == "application/json"
    if not is_json and (json_required or handler.fields.get("x-faxws-client") is None):
        # A page on another origin can send neither without a preflight.
        needed = "a JSON body" if json_required else "a JSON body or an X-FaxWS-Client header"
        raise _ApiError(403, f"{handler.command} needs {needed}")
    received = handler.receive(parse=False, limit=_MAX_JSON, whole=True)
    if not received.complete:
        handler.close_connection = True
        raise _ApiError(400, "the body ended early")
    if not is_json:
        return None
    try:
        return json.loads(received.body or b"null")
    except (ValueError, RecursionError):
        raise _ApiError(400, "the body is not valid JSON") from None


def _params(query: str) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=20)
    except ValueError:
        raise _ApiError(400, "too many query parameters") from None
    return {k: v[-1] for k, v in parsed.items()}


def _int(params: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    text = params.get(name)
    if text is None:
        return default
    # ASCII digits only: int() also takes "1_0", " 3" and other scripts' digits.
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 9:
        raise _ApiError(400, f"{name} must be a whole number")
    value = int(text)
    if not low <= value <= high:
        raise _ApiError(400, f"{name} must be from {low} to {high}")
    return value


def _seconds(params: dict[str, str], name: str) -> float:
    text = params.get(name, "0")
    try:
        value = float(text)
    except ValueError:
        raise _ApiError(400, f"{name} must be a number of seconds") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_WAIT:
        raise _ApiError(400, f"{name} must be from 0 to {MAX_WAIT:g} seconds")
    return value


def _job(job: SimulatedJob | None, wanted: str) -> SimulatedJob:
    if job is None:
        raise _ApiError(404, f"no job {wanted}")
    return job


def _only(method: str, allowed: str) -> None:
    if method != allowed:
        raise _not_allowed(allowed)


def _not_allowed(allowed: str) -> _ApiError:
    return _ApiError(405, "method not allowed", {"Allow": allowed})


def _send_json(
    handler: Handler, status: int, data: Any, headers: Mapping[str, str] | None = None
) -> None:
    body = json.dumps(data, ensure_ascii=False).encode()
    handler.send(
        status,
        {
            "Content-Type": "application/json; charset=utf-8",
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            **(headers or {}),
        },
        body,
    )


def _send_file(handler: Handler, job: SimulatedJob, received: ReceivedFile, download: bool) -> None:
    try:
        media, extension = file_type_of(received)
        stream = received.open()
    except FileNotFoundError:
        raise _ApiError(404, f"job {job.id} file {received.index} is gone") from None
    name = f"job-{job.id}-file-{received.index}.{extension}"
    disposition = "attachment" if download or media == "application/octet-stream" else "inline"
    headers = {
        "Content-Type": media,
        "Content-Disposition": f'{disposition}; filename="{name}"',
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }
    if media != "application/pdf":
        # A document is shown, never run: nothing in it acts on this origin. (A sandboxed
        # PDF would not be shown at all: the browser's viewer is refused in a sandbox.)
        headers["Content-Security-Policy"] = "sandbox"
    with stream:
        handler.send_stream(200, headers, stream, received.size)
