"""The simulator's REST API, JSON on the service's port, for tests in any language. Every
route is in :data:`ROUTES` (what is served) and in ``/api/openapi.json`` (what is described,
:mod:`faxws.testing._openapi`); the tests hold the two to each other.

    GET    /api/jobs[?min=N&timeout=S&limit=L&q=TEXT]  newest first; waits for N jobs
    DELETE /api/jobs                            forget every job (requests and faults stay)
    GET    /api/jobs/{id}                       by the job's number or one of its job ids
    DELETE /api/jobs/{id}                       forget that job
    GET    /api/jobs/{id}/timeline              each recipient's life, moment by moment
    GET    /api/jobs/{id}/request               the request that sent it, secrets masked
    PUT    /api/jobs/{id}/outcome               {"outcome": name[, "pages": N]}
    GET    /api/jobs/{id}/files/{index}         the document's bytes
    GET    /api/jobs/{id}/files/{index}/preview a TIFF's page as PNG (with Pillow)
    GET    /api/requests[?limit=L]              newest first, secrets masked
    DELETE /api/requests                        forget every request record
    GET    /api/requests/{id}                   one request
    GET    /api/faults                          the injected faults still pending
    POST   /api/faults                          {"fault": kind, ..., "operation", "times"}
    DELETE /api/faults                          forget the pending faults
    POST   /api/reset                           forget everything (sim.reset())
    GET    /api/events                          server-sent events: something changed
    GET    /api/openapi.json                    this API, described

HEAD is served wherever GET is. A query parameter a route does not take is refused (400,
naming it); ``token`` (the API token) is taken everywhere. A POST, PUT or DELETE must carry
``Content-Type: application/json`` or an ``X-FaxWS-Client`` header: a page on another origin
can send neither without a CORS preflight, which the simulator never grants, so it cannot
clear the inbox or inject faults; one whose Origin or Sec-Fetch-Site says it came from
another site is refused whatever it carries (by the server, for every route: only a link
followed from another site to a page is let in).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from faxws.errors import BadInputError
from faxws.testing import _events, _openapi, _preview
from faxws.testing._answers import RejectError
from faxws.testing._durable import StoreError
from faxws.testing._faults import KINDS
from faxws.testing._life import Plan
from faxws.testing._progress import make_plan, timeline
from faxws.testing._records import ReceivedFile, SimulatedJob
from faxws.testing._state import forget_files
from faxws.testing._views import (
    fault_json,
    file_kind,
    job_json,
    moment_json,
    request_json,
)

if TYPE_CHECKING:
    from faxws.testing._http import Handler

__all__ = ["EVENTS", "INBOX_CLIENT", "MAX_WAIT", "PREFIX", "ROUTES", "Route", "handle", "send_json"]

PREFIX = "/api/"
#: The event stream's path.
EVENTS = "/api/events"
#: The longest ``?timeout=`` a request may wait for jobs.
MAX_WAIT = 300.0
#: The X-FaxWS-Client value the inbox's own calls carry: they are not logged.
INBOX_CLIENT = "inbox"
_DEFAULT_LIMIT = 100
_MAX_LIMIT = 100_000
_MAX_JSON = 64 * 1024
_MAX_QUERY = 200  # characters of a search
# A number as a query gives it (nan and infinity pass, to be refused as out of range).
_DECIMAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?|nan|inf|infinity)",
    re.ASCII | re.IGNORECASE,
)


class ClientGoneError(Exception):
    """The client went away while its request waited: nothing to answer."""


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status, self.message = status, message
        self.headers = dict(headers or {})


Action = Callable[["Handler", dict[str, str], dict[str, str]], None]


@dataclass(frozen=True)
class Route:
    """A path (``{name}`` stands for one segment) and what each method does there: an
    action taking the handler, the path's values and the query's, and the query parameters
    it takes."""

    path: str
    methods: Mapping[str, tuple[Action, tuple[str, ...]]]

    def match(self, parts: list[str]) -> dict[str, str] | None:
        mine = self.path.split("/")
        if len(mine) != len(parts):
            return None
        values = {}
        for pattern, part in zip(mine, parts, strict=True):
            if pattern.startswith("{"):
                if not part:
                    return None
                values[pattern[1:-1]] = part
            elif pattern != part:
                return None
        return values

    def allowed(self) -> str:
        """The Allow header's value: HEAD wherever GET is."""
        names = list(self.methods)
        if "GET" in names:
            names.insert(names.index("GET") + 1, "HEAD")
        return ", ".join(names)


def handle(handler: Handler, path: str, query: str) -> None:
    """Answer one request under :data:`PREFIX`."""
    try:
        _dispatch(handler, path, query)
    except ApiError as error:
        send_json(handler, error.status, {"error": error.message}, error.headers)
    except RejectError as reject:  # the body could not be read (too large, bad length)
        send_json(handler, reject.status, {"error": reject.reason})
    except ClientGoneError:
        handler.log_request("no answer: the client went away")
        handler.close_connection = True


def _dispatch(handler: Handler, path: str, query: str) -> None:
    parts = path.split("/")
    for route in ROUTES:
        values = route.match(parts)
        if values is None:
            continue
        method = "GET" if handler.command == "HEAD" else handler.command
        if method not in route.methods:
            raise ApiError(405, "method not allowed", {"Allow": route.allowed()})
        action, takes = route.methods[method]
        params = _params(query)
        unknown = sorted(set(params) - {*takes, "token"})
        if unknown:
            named = ", ".join(name or '""' for name in unknown)  # "?=1" names no parameter
            known = ", ".join(takes) if takes else "no query parameters"
            raise ApiError(
                400,
                f"unknown query parameter{'s' if len(unknown) > 1 else ''} {named}: "
                f"{method} {route.path} takes {known}",
            )
        action(handler, values, params)
        return
    raise ApiError(404, f"no such resource: {path}")


# -- jobs -------------------------------------------------------------------------------------


def _list_jobs(handler: Handler, _: dict[str, str], params: dict[str, str]) -> None:
    state = handler.server.sim._state
    count = _int(params, "min", 0, 0, _MAX_LIMIT)
    wait = _seconds(params, "timeout")
    limit = _int(params, "limit", _DEFAULT_LIMIT, 1, _MAX_LIMIT)
    wanted = params.get("q")
    if wanted is not None and len(wanted) > _MAX_QUERY:
        raise ApiError(400, f"q must be at most {_MAX_QUERY} characters")
    if count:
        _wait_for_jobs(handler, count, wait)
    total, newest = state.recent_jobs(limit) if wanted is None else state.search_jobs(wanted, limit)
    send_json(handler, 200, {"total": total, "jobs": [job_json(state, j) for j in newest]})


def _wait_for_jobs(handler: Handler, count: int, wait: float) -> None:
    """Wait for ``count`` jobs, at most ``wait`` seconds, and no longer than the client is
    there: a client gone does not hold its thread for the rest of the time-out."""
    state = handler.server.sim._state
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or state.wait_for_jobs(count, min(left, _events.CHECK)):
            return
        if _events.client_gone(handler.connection):
            raise ClientGoneError


def _clear_jobs(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    _read_body(handler, json_required=False)
    forgotten = handler.server.sim._state.clear_jobs()
    forget_files(forgotten)
    send_json(handler, 200, {"cleared": True, "jobs": len(forgotten)})


def _get_job(handler: Handler, values: dict[str, str], _: dict[str, str]) -> None:
    send_json(handler, 200, job_json(handler.server.sim._state, _job(handler, values["id"])))


def _delete_job(handler: Handler, values: dict[str, str], _: dict[str, str]) -> None:
    _read_body(handler, json_required=False)
    state = handler.server.sim._state
    try:
        job = state.delete_job(_job(handler, values["id"]).id)
    except StoreError as exc:
        raise ApiError(500, f"the simulator cannot forget the job: {exc}") from None
    if job is None:  # deleted by another request in between
        raise ApiError(404, f"no job {values['id']}")
    forget_files([job])
    send_json(handler, 200, {"deleted": True, "id": job.id, "job_ids": list(job.job_ids)})


def _timeline(handler: Handler, values: dict[str, str], _: dict[str, str]) -> None:
    state = handler.server.sim._state
    job = _job(handler, values["id"])
    now, scale = state.clock(), state.time_scale
    recipients = [
        {
            "job_id": job_id,
            "fax_number": recipient.recip_fax_number,
            "moments": [moment_json(m) for m in timeline(job, track, now, scale)],
        }
        for job_id, recipient, track in zip(
            job.job_ids, job.recipients, state.tracks_of(job), strict=True
        )
    ]
    send_json(handler, 200, {"id": job.id, "recipients": recipients})


def _job_request(handler: Handler, values: dict[str, str], _: dict[str, str]) -> None:
    job = _job(handler, values["id"])
    number = job._request
    record = None if number is None else handler.server.sim._state.request(number)
    if number is None or record is None:
        raise ApiError(404, f"the request of job {job.id} is no longer kept")
    send_json(handler, 200, request_json(number, record))


def _set_outcome(handler: Handler, values: dict[str, str], _: dict[str, str]) -> None:
    state = handler.server.sim._state
    plan = _plan(_read_body(handler, json_required=True))
    key = values["id"]
    try:
        changed = state.set_outcome(key, plan)
    except KeyError:
        raise ApiError(404, f"no job {key}") from None
    except ValueError as exc:  # the job has ended
        raise ApiError(409, str(exc)) from None
    except StoreError as exc:
        raise ApiError(500, f"the simulator cannot keep the outcome: {exc}") from None
    send_json(handler, 200, job_json(state, changed))


def _get_file(handler: Handler, values: dict[str, str], params: dict[str, str]) -> None:
    job, found = _file(handler, values)
    download = params.get("download", "0")
    if download not in ("0", "1"):
        raise ApiError(400, "download must be 0 or 1")
    try:
        kind = file_kind(found)
        stream = found.open()
    except FileNotFoundError:
        raise ApiError(404, f"job {job.id} file {found.index} is gone") from None
    name = f"job-{job.id}-file-{found.index}.{kind.extension}"
    disposition = "inline" if kind.shown and download == "0" else "attachment"
    headers = {
        "Content-Type": kind.media,
        "Content-Disposition": f'{disposition}; filename="{name}"',
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }
    if kind.media != "application/pdf":
        # A document is shown, never run: nothing in it acts on this origin. (A sandboxed
        # PDF would not be shown at all: the browser's viewer is refused in a sandbox.)
        headers["Content-Security-Policy"] = "sandbox"
    with stream:
        handler.send_stream(200, headers, stream, found.size)


def _get_preview(handler: Handler, values: dict[str, str], params: dict[str, str]) -> None:
    job, found = _file(handler, values)
    page = _int(params, "page", 1, 1, _preview.MAX_PAGES)
    try:
        png = _preview.png(found, page)
    except _preview.PreviewError as exc:
        raise ApiError(exc.status, f"job {job.id} file {found.index}: {exc}") from None
    headers = {
        "Content-Type": "image/png",
        "Content-Disposition": f'inline; filename="job-{job.id}-file-{found.index}-{page}.png"',
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Content-Security-Policy": "sandbox",
    }
    handler.send(200, headers, png)


# -- requests, faults, everything ---------------------------------------------------------------


def _list_requests(handler: Handler, _: dict[str, str], params: dict[str, str]) -> None:
    limit = _int(params, "limit", _DEFAULT_LIMIT, 1, _MAX_LIMIT)
    total, recent = handler.server.sim._state.recent_requests(limit)
    listed = [request_json(number, r) for number, r in recent]
    send_json(handler, 200, {"total": total, "requests": listed})


def _clear_requests(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    _read_body(handler, json_required=False)
    count = handler.server.sim._state.clear_requests()
    send_json(handler, 200, {"cleared": True, "requests": count})


def _get_request(handler: Handler, values: dict[str, str], _: dict[str, str]) -> None:
    wanted = values["id"]
    number = int(wanted) if wanted.isascii() and wanted.isdigit() and len(wanted) < 19 else 0
    record = handler.server.sim._state.request(number)
    if record is None:
        raise ApiError(404, f"no request {wanted} (or no longer kept)")
    send_json(handler, 200, request_json(number, record))


def _list_faults(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    pending = handler.server.sim._state.faults.pending()
    send_json(handler, 200, {"faults": [fault_json(*p) for p in pending]})


def _add_fault(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    fault, operation, times = _fault(_read_body(handler, json_required=True))
    try:
        handler.server.sim.inject(fault, operation=operation, times=times)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    send_json(handler, 201, {"fault": fault.kind, "operation": operation, "times": times})


def _clear_faults(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    _read_body(handler, json_required=False)
    send_json(handler, 200, {"cleared": True, "faults": handler.server.sim._state.faults.clear()})


def _reset(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    _read_body(handler, json_required=False)
    state = handler.server.sim._state
    with state.lock:
        requests = len(state.requests)
    faults = len(state.faults.pending())
    jobs = state.reset()
    forget_files(jobs)
    cleared = {"cleared": True, "jobs": len(jobs), "requests": requests, "faults": faults}
    send_json(handler, 200, cleared)


def _events_stream(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    try:
        _events.stream(handler)
    except _events.TooManyStreamsError as exc:
        raise ApiError(503, str(exc), {"Retry-After": "5"}) from None


def _openapi_document(handler: Handler, _: dict[str, str], __: dict[str, str]) -> None:
    send_json(handler, 200, _openapi.document())


ROUTES: tuple[Route, ...] = (
    Route(
        "/api/jobs",
        {"GET": (_list_jobs, ("min", "timeout", "limit", "q")), "DELETE": (_clear_jobs, ())},
    ),
    Route("/api/jobs/{id}", {"GET": (_get_job, ()), "DELETE": (_delete_job, ())}),
    Route("/api/jobs/{id}/timeline", {"GET": (_timeline, ())}),
    Route("/api/jobs/{id}/request", {"GET": (_job_request, ())}),
    Route("/api/jobs/{id}/outcome", {"PUT": (_set_outcome, ())}),
    Route("/api/jobs/{id}/files/{index}", {"GET": (_get_file, ("download",))}),
    Route("/api/jobs/{id}/files/{index}/preview", {"GET": (_get_preview, ("page",))}),
    Route(
        "/api/requests",
        {"GET": (_list_requests, ("limit",)), "DELETE": (_clear_requests, ())},
    ),
    Route("/api/requests/{id}", {"GET": (_get_request, ())}),
    Route(
        "/api/faults",
        {"GET": (_list_faults, ()), "POST": (_add_fault, ()), "DELETE": (_clear_faults, ())},
    ),
    Route("/api/reset", {"POST": (_reset, ())}),
    Route(EVENTS, {"GET": (_events_stream, ())}),
    Route("/api/openapi.json", {"GET": (_openapi_document, ())}),
)


# -- helpers ----------------------------------------------------------------------------------


def _job(handler: Handler, wanted: str) -> SimulatedJob:
    state = handler.server.sim._state
    job = state.by_id.get(wanted) or state.job(wanted)
    if job is None:
        raise ApiError(404, f"no job {wanted}")
    return job


def _file(handler: Handler, values: dict[str, str]) -> tuple[SimulatedJob, ReceivedFile]:
    job = _job(handler, values["id"])
    found = next((f for f in job.files if str(f.index) == values["index"]), None)
    if found is None:
        raise ApiError(404, f"job {values['id']} has no file {values['index']}")
    return job, found


def _plan(spec: Any) -> Plan:
    if not isinstance(spec, dict):
        raise ApiError(400, "the body must be a JSON object")
    unknown = sorted(set(spec) - {"outcome", "pages"})
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0]!r}: the fields are outcome and pages")
    try:
        return make_plan(spec.get("outcome"), spec.get("pages"))
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


def _fault(spec: Any) -> tuple[Any, str | None, int]:
    if not isinstance(spec, dict):
        raise ApiError(400, "the body must be a JSON object")
    spec = dict(spec)
    kind = spec.pop("fault", None)
    operation = spec.pop("operation", None)
    times = spec.pop("times", 1)
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ApiError(400, f"fault must be one of {', '.join(sorted(KINDS))}")
    if operation is not None and not isinstance(operation, str):
        raise ApiError(400, "operation must be a string")
    if isinstance(times, bool) or not isinstance(times, int):
        raise ApiError(400, "times must be a whole number")
    try:
        fault = cls(**spec)
    except TypeError:
        fields = ", ".join(f.name for f in dataclasses.fields(cls)) or "no other fields"
        raise ApiError(400, f"{kind} takes {fields}") from None
    except (ValueError, BadInputError) as exc:
        raise ApiError(400, str(exc)) from None
    return fault, operation, times


def _read_body(handler: Handler, *, json_required: bool) -> Any:
    content_type = handler.fields.get("content-type", "")
    is_json = content_type.split(";", 1)[0].strip().lower() == "application/json"
    if not is_json and (json_required or handler.fields.get("x-faxws-client") is None):
        # A page on another origin can send neither without a preflight.
        needed = "a JSON body" if json_required else "a JSON body or an X-FaxWS-Client header"
        raise ApiError(403, f"{handler.command} needs {needed}")
    received = handler.receive(parse=False, limit=_MAX_JSON, whole=True)
    if not received.complete:
        handler.close_connection = True
        raise ApiError(400, "the body ended early")
    if not is_json:
        return None
    try:
        return json.loads(received.body or b"null")
    except (ValueError, RecursionError):
        raise ApiError(400, "the body is not valid JSON") from None


def _params(query: str) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=20)
    except ValueError:
        raise ApiError(400, "too many query parameters") from None
    return {k: v[-1] for k, v in parsed.items()}


def _int(params: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    text = params.get(name)
    if text is None:
        return default
    # ASCII digits only: int() also takes "1_0", " 3" and other scripts' digits.
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 9:
        raise ApiError(400, f"{name} must be a whole number")
    value = int(text)
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be from {low} to {high}")
    return value


def _seconds(params: dict[str, str], name: str) -> float:
    text = params.get(name, "0")
    # Digits as written: float() also takes "1_0", " 3" and other scripts' digits.
    if not _DECIMAL.fullmatch(text):
        raise ApiError(400, f"{name} must be a number of seconds")
    value = float(text)
    if not math.isfinite(value) or not 0 <= value <= MAX_WAIT:
        raise ApiError(400, f"{name} must be from 0 to {MAX_WAIT:g} seconds")
    return value


def send_json(
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
