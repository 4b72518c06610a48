"""The simulator's web inbox, for a developer to keep open: ``/`` lists the jobs received,
newest first (searchable by number, name, job id or reference), the pending faults and the
requests refused or given a fault; ``/jobs/{id}`` shows one job (each recipient's timeline,
its details, the request that sent it with every secret masked, its documents with previews);
``/requests/{n}`` one request. A job can be deleted, and everything cleared, from the pages.

The pages are served whole and stay current without reloading: their one script (served from
``/static/``, as is everything they use: they work offline) listens to ``/api/events`` and
fetches the page again when something changed, or when the page says its jobs move on. Their
Content-Security-Policy allows that script and forbids everything else; everything shown is
escaped. The inbox's own requests are neither recorded nor logged.
"""

from __future__ import annotations

import functools
import html
import importlib.resources
import math
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote

from faxws._protocol.redact import redact
from faxws.testing import _preview
from faxws.testing._clock import ManualClock
from faxws.testing._pages import count_pages
from faxws.testing._progress import JobProgress, clock_time, next_change, timeline
from faxws.testing._records import ReceivedFile, ReceivedRequest, SimulatedJob
from faxws.testing._views import (
    fault_json,
    file_kind,
    shown_body,
    timestamp,
    type_name,
)

if TYPE_CHECKING:
    from faxws.testing._http import Handler
    from faxws.testing._state import State

__all__ = [
    "PAGE_RECIPIENTS",
    "ROW_RECIPIENTS",
    "SHOWN_JOBS",
    "handle",
    "is_inbox_path",
    "is_public",
]

#: Jobs a list shows, newest first.
SHOWN_JOBS = 200
#: Recipients a job's row in the list shows, and a job's page (a fax to thousands would
#: make a page of megabytes, drawn again at every change); the JSON has them all.
ROW_RECIPIENTS = 10
PAGE_RECIPIENTS = 500
_SHOWN_REFUSALS = 100
_SCANNED_REQUESTS = 10_000  # the newest records searched for refusals
_SHOWN_PAGES = 20  # pages of a TIFF drawn on its job's page
_POLICY = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
    "img-src 'self'; object-src 'self'; frame-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
_STATIC = {
    "/static/inbox.js": ("inbox.js", "text/javascript; charset=utf-8"),
    "/static/inbox.css": ("inbox.css", "text/css; charset=utf-8"),
    "/static/favicon.svg": ("favicon.svg", "image/svg+xml"),
    "/favicon.ico": ("favicon.svg", "image/svg+xml"),
}


def is_inbox_path(path: str) -> bool:
    return path == "/" or path in _STATIC or path.startswith(("/jobs/", "/requests/"))


def is_public(path: str) -> bool:
    """Whether ``path`` is a file every page uses, which holds nothing of the simulator's
    (served without the API token, so that a page asks for it plainly)."""
    return path in _STATIC


def handle(handler: Handler, path: str, query: str, token: str | None) -> None:
    """Answer one request for the inbox."""
    if handler.command not in ("GET", "HEAD"):
        text = b"method not allowed: the inbox only shows pages\n"
        handler.send(405, {"Content-Type": "text/plain", "Allow": "GET, HEAD"}, text)
        return
    if path in _STATIC:
        _static(handler, path)
        return
    state = handler.server.sim._state
    page = _Page(state, token)
    if path == "/":
        wanted = _query(query).get("q", "")[:200]
        page.inbox(wanted)
    elif path.startswith("/jobs/"):
        number = path[len("/jobs/") :]
        job = state.by_id.get(number)
        if job is None:
            page.missing(f"No job {number}", "It was deleted, or never existed.")
        else:
            page.job(job)
    else:
        number = path[len("/requests/") :]
        valid = number.isascii() and number.isdigit() and len(number) <= 18
        record = state.request(int(number)) if valid else None
        if record is None:
            page.missing(f"No request {number}", "It is no longer kept, or never existed.")
        else:
            page.request(int(number), record)
    _send_page(handler, page)


def _query(query: str) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, max_num_fields=20)
    except ValueError:
        return {}
    return {k: v[-1] for k, v in parsed.items()}


@functools.cache
def _static_bytes(name: str) -> bytes:
    return importlib.resources.files(__package__).joinpath("_static").joinpath(name).read_bytes()


def _static(handler: Handler, path: str) -> None:
    name, media = _STATIC[path]
    handler.send(
        200,
        {
            "Content-Type": media,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
            "Content-Security-Policy": "default-src 'none'",  # an SVG opened alone
        },
        _static_bytes(name),
    )


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f'<time datetime="{_e(timestamp(seconds))}">{_e(timestamp(seconds))}</time>'


def _plural(count: int, what: str) -> str:
    return f"{count:,} {what}{'' if count == 1 else 's'}"


class _Page:
    """One page being written: its title, its main part, and what the script needs."""

    def __init__(self, state: State, token: str | None) -> None:
        self.state = state
        self.token = token
        # Read before anything shown, so that a change while the page is written makes
        # the script fetch it again.
        self.version = f"{state.instance}-{state.version}"
        self.status = 200
        self.title = "FaxWS simulator inbox"
        self.kind = "inbox"
        self.wanted = ""
        self.main = ""
        self.next_change: float | None = None  # clock seconds

    def url(self, path: str, **params: str) -> str:
        if self.token is not None:
            params["token"] = self.token
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
        return f"{path}?{query}" if query else path

    def link(self, path: str, text: str, **params: str) -> str:
        return f'<a href="{_e(self.url(path, **params))}">{_e(text)}</a>'

    def watch(self, job: SimulatedJob, shown: int) -> None:
        """Have the script look again when anything shown of ``job`` (its first ``shown``
        recipients) moves on by itself."""
        if isinstance(self.state.clock, ManualClock):
            return  # it moves when the test moves it: the event stream tells
        now = self.state.clock()
        for track in self.state.tracks_of(job, shown):
            due = next_change(job, track, now, self.state.time_scale)
            if due is not None and (self.next_change is None or due < self.next_change):
                self.next_change = due

    # -- pages --------------------------------------------------------------------------------

    def inbox(self, wanted: str) -> None:
        state = self.state
        self.wanted = wanted
        if wanted.strip():
            total, jobs = state.search_jobs(wanted, SHOWN_JOBS)
            count = f"{_plural(total, 'job')} found for “{_e(wanted.strip())}”"
        else:
            total, jobs = state.recent_jobs(SHOWN_JOBS)
            count = f"{_plural(total, 'job')} received"
        shown = f" (the newest {SHOWN_JOBS} shown)" if total > SHOWN_JOBS else ""
        refused = state.recent_refusals(_SHOWN_REFUSALS, within=_SCANNED_REQUESTS)
        for job in jobs:
            self.watch(job, ROW_RECIPIENTS)
        api = ", ".join(
            self.link(p, p) for p in ("/api/jobs", "/api/requests", "/api/openapi.json")
        )
        self.main = (
            f'<section id="summary" data-live><p>{count}{shown}. '
            f'<span class="muted">JSON: {api}.</span></p></section>'
            f'<section id="jobs" data-live>{self._jobs(jobs, bool(wanted.strip()))}</section>'
            f'<h2>Pending faults</h2><section id="faults" data-live>{self._faults()}</section>'
            "<h2>Refused requests and injected faults</h2>"
            f'<section id="refused" data-live>{self._refusals(refused)}</section>'
        )

    def job(self, job: SimulatedJob) -> None:
        self.title = f"Job {job.id}"
        self.kind = "job"
        self.watch(job, PAGE_RECIPIENTS)
        delete = (
            f'<button type="button" class="danger" data-delete="/api/jobs/{_e(job.id)}" '
            'data-then="/">Delete this job</button>'
        )
        self.main = (
            f"<p>{self.link('/', '← Inbox')} {delete}</p>"
            f'<section id="overview" data-live>{self._overview(job)}</section>'
            f'<h2>Recipients</h2><section id="recipients" data-live>{self._recipients(job)}'
            "</section>"
            f'<h2>Timeline</h2><section id="timeline" data-live>{self._timeline(job)}</section>'
            f"<h2>Job details ({_e(job.operation)})</h2>{self._details(job)}"
            f"<h2>Deviations from the contract</h2>{self._deviations(job.deviations)}"
            f'<h2>Request</h2><section id="request">{self._job_request(job)}</section>'
            f"<h2>Documents</h2>{''.join(self._document(job, f) for f in job.files)}"
        )

    def request(self, number: int, record: ReceivedRequest) -> None:
        self.title = f"Request {number}"
        self.kind = "request"
        self.main = f"<p>{self.link('/', '← Inbox')}</p>{self._request(number, record)}"

    def missing(self, title: str, text: str) -> None:
        self.status = 404
        self.title = title
        self.kind = "missing"
        self.main = f"<p>{_e(text)}</p><p>{self.link('/', '← Inbox')}</p>"

    # -- parts ----------------------------------------------------------------------------------

    def _status(self, p: JobProgress) -> str:
        """One recipient's job in a line: where it is (coloured by its status), pages,
        attempts, push."""
        push = ""
        if p.push is not None:
            push = f" · push {_e(p.push.state)}"
            push += f" ({_e(p.push.result)})" if p.push.result else ""
        return (
            f'<code>{_e(p.job_id)}</code> <span class="s{int(p.status)}">{_e(p.description)}'
            f"</span> · pages {p.pages_sent}/{p.pages_total} · "
            f"{_plural(p.attempts, 'attempt')}{push}"
        )

    def _files(self, job: SimulatedJob) -> str:
        return "<br>".join(f"{_e(type_name(f.file_type))}, {f.size:,} bytes" for f in job.files)

    def _jobs(self, jobs: list[SimulatedJob], searching: bool) -> str:
        if not jobs:
            empty = "No job matches." if searching else "No jobs yet: send one."
            return f'<p class="muted">{empty}</p>'
        rows = []
        for job in jobs:
            recipients = "<br>".join(
                _e(r.recip_fax_number)
                + (f' <span class="muted">{_e(r.recip_name)}</span>' if r.recip_name else "")
                for r in job.recipients[:ROW_RECIPIENTS]
            )
            more = len(job.recipients) - ROW_RECIPIENTS
            if more > 0:
                recipients += f"<br>{self.link(f'/jobs/{job.id}', f'and {more:,} more')}"
            statuses = "<br>".join(
                self._status(p) for p in self.state.progresses(job, ROW_RECIPIENTS)
            )
            references = "<br>".join(
                f"{label} <code>{_e(value)}</code>"
                for label, value in (("ref", job.reference_id), ("req", job.request_id or ""))
                if value
            )
            deviations = (
                f'<span class="deviation">{_plural(len(job.deviations), "deviation")}</span>'
                if job.deviations
                else ""
            )
            rows.append(
                f'<tr id="job-{_e(job.id)}">'
                f"<td>{self.link(f'/jobs/{job.id}', job.id)}</td>"
                f'<td class="when">{_when(job.received_at)}</td>'
                f'<td>{_e(job.user_id)}<br><span class="muted">{_e(job.auth_mode)}</span></td>'
                f"<td>{recipients}</td><td>{statuses}</td><td>{references}</td>"
                f"<td>{self._files(job)}</td><td>{deviations}</td>"
                f'<td><button type="button" data-delete="/api/jobs/{_e(job.id)}" '
                f'title="Delete job {_e(job.id)}">Delete</button></td>'
                "</tr>"
            )
        return (
            "<table><thead><tr><th>Job</th><th>Received</th><th>Account</th>"
            "<th>Recipients</th><th>Job ids and status</th><th>Reference</th><th>Files</th>"
            f"<th>Deviations</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )

    def _faults(self) -> str:
        pending = self.state.faults.pending()
        if not pending:
            return '<p class="muted">None.</p>'
        rows = []
        for fault, operation, times in pending:
            fields = fault_json(fault, operation, times)
            given = ", ".join(
                f"{k} {v}" for k, v in fields.items() if k not in ("fault", "operation", "times")
            )
            rows.append(
                f'<tr><td class="fault">{_e(fault.kind)}</td><td>{_e(given)}</td>'
                f"<td>{_e(operation or 'any operation')}</td>"
                f"<td>the next {_plural(times, 'request')}</td></tr>"
            )
        return (
            "<table><thead><tr><th>Fault</th><th>Given</th><th>For</th><th>Applies to</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )

    def _refusals(self, refused: list[tuple[int, ReceivedRequest]]) -> str:
        if not refused:
            return '<p class="muted">None.</p>'
        rows = []
        for number, r in refused:
            why = ""
            if r.fault is not None:
                why += f'<span class="fault">fault {_e(r.fault)}</span> '
            if r.refusal is not None:
                why += f'<span class="refusal">{_e(_masked(r, r.refusal))}</span>'
            rows.append(
                f"<tr><td>{self.link(f'/requests/{number}', str(number))}</td>"
                f'<td class="when">{_when(r.received_at)}</td>'
                f"<td>{_e(r.method)} {_e(_masked(r, r.path))}</td>"
                f"<td>{_e(r.operation or '')}</td>"
                f"<td>{_e('no answer' if r.status is None else r.status)}</td><td>{why}</td></tr>"
            )
        return (
            "<table><thead><tr><th>#</th><th>Received</th><th>Request</th><th>Operation</th>"
            f"<th>Status</th><th>Why</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )

    def _overview(self, job: SimulatedJob) -> str:
        scale = self.state.time_scale
        start = ""
        if job.start_after:
            start = f", scheduled to start {_when(clock_time(job, job.start_after, scale))}"
        record = None if job._request is None else self.state.request(job._request)
        fault = ""
        if record is not None and record.fault is not None:
            fault = (
                f' <span class="fault">Injected fault on its request: {_e(record.fault)}.</span>'
            )
        reference = f", reference <code>{_e(job.reference_id)}</code>" if job.reference_id else ""
        return (
            f"<p>Received {_when(job.received_at)} by {_e(job.operation)} from "
            f"<b>{_e(job.user_id)}</b> ({_e(job.auth_mode)}), request id "
            f"<code>{_e(job.request_id or '')}</code>{reference}; "
            f"{_plural(job.pages, 'page')} to each of {_plural(len(job.recipients), 'recipient')}"
            f"{start}; expires {_when(clock_time(job, job.expires_after, scale))}.{fault}</p>"
        )

    def _recipients(self, job: SimulatedJob) -> str:
        progresses = self.state.progresses(job, PAGE_RECIPIENTS)
        rows = "".join(
            f"<tr><td>{_e(r.recip_fax_number)}</td><td>{_e(r.recip_name)}</td>"
            f"<td>{_e(r.recip_company)}</td><td>{_e(r.recip_title)}</td>"
            f"<td>{_e(r.recip_secure_csid)}</td><td>{self._status(p)}</td>"
            f"<td>{_e(p.outcome)}</td><td>{_e(p.delivered_at_text)}</td></tr>"
            for r, p in zip(job.recipients, progresses, strict=False)
        )
        return (
            "<table><thead><tr><th>Fax number</th><th>Name</th><th>Company</th><th>Title</th>"
            "<th>Secure CSID</th><th>Job id and status</th><th>Planned outcome</th>"
            f"<th>Delivered</th></tr></thead><tbody>{rows}</tbody></table>{self._more(job)}"
        )

    def _more(self, job: SimulatedJob) -> str:
        """What a job's page says of the recipients it does not show."""
        if len(job.recipients) <= PAGE_RECIPIENTS:
            return ""
        return (
            f'<p class="muted">The first {PAGE_RECIPIENTS:,} of '
            f"{len(job.recipients):,} recipients are shown; all of them are in "
            f"{self.link(f'/api/jobs/{job.id}', 'the JSON')}.</p>"
        )

    def _timeline(self, job: SimulatedJob) -> str:
        state = self.state
        now = state.clock()
        parts = []
        tracks = state.tracks_of(job, PAGE_RECIPIENTS)
        for job_id, r, track in zip(job.job_ids, job.recipients, tracks, strict=False):
            items = "".join(
                f'<li class="{_e(m.kind)}{"" if m.done else " to-come"}">{_when(m.at)} '
                f"{_e(m.text)}{'' if m.done else ' (to come)'}</li>"
                for m in timeline(job, track, now, state.time_scale)
            )
            parts.append(
                f"<h3><code>{_e(job_id)}</code> to {_e(r.recip_fax_number)}</h3>"
                f'<ol class="timeline">{items}</ol>'
            )
        return "".join(parts) + self._more(job)

    def _details(self, job: SimulatedJob) -> str:
        """SendFaxEx's JobDetails, the password masked (in the destination too)."""
        details = job.shown_details()
        if details is None:
            return '<p class="muted">Sent with SendFax: no job details.</p>'
        rows = "".join(
            f"<tr><th>{_e(name)}</th><td>{_e(value)}</td></tr>"
            for name, value in details.items()
            if value not in ("", None)
        )
        return f"<table><tbody>{rows}</tbody></table>"

    def _deviations(self, deviations: tuple[str, ...]) -> str:
        if not deviations:
            return '<p class="muted">None.</p>'
        items = "".join(f'<li class="deviation">{_e(d)}</li>' for d in deviations)
        return f"<ul>{items}</ul>"

    def _job_request(self, job: SimulatedJob) -> str:
        number = job._request
        record = None if number is None else self.state.request(number)
        if number is None or record is None:
            return '<p class="muted">The request that sent it is no longer kept.</p>'
        return self._request(number, record)

    def _request(self, number: int, record: ReceivedRequest) -> str:
        headers = "".join(
            f"<tr><th>{_e(k)}</th><td><code>{_e(v)}</code></td></tr>"
            for k, v in record.masked_headers().items()
        )
        body = shown_body(record)
        raw = (
            f'<pre class="raw">{_e(body)}</pre>'
            if body is not None
            else f'<p class="muted">Its body ({record.body_size:,} bytes) was not kept.</p>'
        )
        deviations = ""
        if record.deviations:
            shown = tuple(_masked(record, d) for d in record.deviations)
            deviations = f"<p>How it differs from the contract:</p>{self._deviations(shown)}"
        outcome = _e("no answer" if record.status is None else f"HTTP {record.status}")
        why = ""
        if record.fault is not None:
            why += f' <span class="fault">Injected fault: {_e(record.fault)}.</span>'
        if record.refusal is not None:
            why += f' <span class="refusal">Refused: {_e(_masked(record, record.refusal))}</span>'
        return (
            f"<p>{self.link(f'/requests/{number}', f'Request {number}')}: "
            f"<code>{_e(record.method)} {_e(_masked(record, record.path))}</code> "
            f"({_e(record.operation or 'no operation')}), {_when(record.received_at)}, "
            f"answered {outcome}.{why} "
            f"{self.link(f'/api/requests/{number}', 'JSON')} (its body as it came)</p>"
            f"{deviations}<details><summary>Headers</summary><table><tbody>{headers}"
            f"</tbody></table></details>{raw}"
        )

    def _document(self, job: SimulatedJob, f: ReceivedFile) -> str:
        source = f"/api/jobs/{job.id}/files/{f.index}"
        download = self.link(source, "download", download="1")
        try:
            kind = file_kind(f)
        except FileNotFoundError:
            return f'<p class="muted">Document {f.index} is gone.</p>'
        if kind.media == "application/pdf":
            shown = (
                f'<embed src="{_e(self.url(source))}" type="application/pdf" '
                'width="100%" height="600">'
            )
        elif kind.shown:
            shown = f'<img src="{_e(self.url(source))}" alt="document {f.index}">'
        elif kind.media == "image/tiff":
            shown = self._tiff(job, f)
        else:
            shown = f'<p class="muted">No preview for this type: {download} it.</p>'
        return (
            f'<div class="document"><h3>Document {f.index}: {_e(type_name(f.file_type))}</h3>'
            f"<p>FileTypeId {f.file_type}, {f.size:,} bytes, its bytes {_e(kind.media)} · "
            f"sha256 <code>{_e(f.sha256)}</code> · {download}</p>{shown}</div>"
        )

    def _tiff(self, job: SimulatedJob, f: ReceivedFile) -> str:
        if not _preview.available():
            return (
                '<p class="note">TIFF previews need Pillow: '
                f"<code>{_e(_preview.INSTALL)}</code> (then restart the simulator).</p>"
            )
        with f.open() as stream:
            pages = count_pages(stream)
        shown = min(pages, _SHOWN_PAGES)
        source = f"/api/jobs/{job.id}/files/{f.index}/preview"
        images = "".join(
            f'<img class="page" src="{_e(self.url(source, page=str(n)))}" loading="lazy" '
            f'alt="document {f.index}, page {n}">'
            for n in range(1, shown + 1)
        )
        more = (
            f'<p class="muted">{_plural(pages - shown, "more page")} not drawn here.</p>'
            if pages > shown
            else ""
        )
        return images + more


def _masked(record: ReceivedRequest, text: str) -> str:
    return redact(text, record._secrets)


def _send_page(handler: Handler, page: _Page) -> None:
    token = page.token
    attributes = f' data-page="{_e(page.kind)}" data-version="{_e(page.version)}"'
    if page.next_change is not None:
        wait = max(page.next_change - page.state.clock(), 0.0)
        if math.isfinite(wait):
            attributes += f' data-next-change="{wait:.3f}"'
    if token is not None:
        attributes += f' data-token="{_e(token)}"'
    hidden = "" if token is None else f'<input type="hidden" name="token" value="{_e(token)}">'
    text = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(page.title)}</title>"
        '<link rel="stylesheet" href="/static/inbox.css">'
        '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
        '<script src="/static/inbox.js" defer></script></head>'
        f"<body{attributes}><header>"
        f'<a class="brand" href="{_e(page.url("/"))}">FaxWS simulator</a>'
        '<form role="search" action="/" method="get">'
        f'<input type="search" name="q" value="{_e(page.wanted)}" '
        'placeholder="Search: fax number, name, job id, reference" aria-label="Search jobs">'
        f"{hidden}</form>"
        '<span id="live-status" class="muted">not live (no script)</span>'
        '<button type="button" class="danger" data-reset>Clear all</button></header>'
        f'<main id="main"><h1>{_e(page.title)}</h1>{page.main}</main></body></html>'
    )
    handler.send(
        page.status,
        {
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": _POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        },
        text.encode(),
    )
