"""The simulator's web inbox: ``/`` lists the jobs received, newest first, each recipient's
job with where it is now, and the requests it refused; ``/jobs/{id}`` shows one job with its
details and its documents inline where a browser can, and ``/jobs/{id}/progress`` (framed in
it) where each recipient's job is.

Pages are self-contained (no external asset: they work offline), escape everything they show,
and forbid every script by their Content-Security-Policy. The list and the progress refresh
themselves; the job page does not (its documents would load again), its progress frame does.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING
from urllib.parse import quote

from faxws._protocol.redact import redact
from faxws.testing._progress import JobProgress, clock_time
from faxws.testing._records import ReceivedRequest, SimulatedJob
from faxws.testing._views import file_kind, timestamp

if TYPE_CHECKING:
    from faxws.testing._http import Handler
    from faxws.testing._state import State

__all__ = ["handle", "is_inbox_path"]

_SHOWN_JOBS = 200
_SHOWN_REFUSALS = 100
_SCANNED_REQUESTS = 10_000  # the newest records searched for refusals
_REFRESH_SECONDS = 2
_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
    "object-src 'self'; frame-src 'self'; form-action 'none'; base-uri 'none'"
)
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #ddd; }
th { background: #f4f4f4; } code { font-size: 0.9em; } .muted { color: #777; }
.deviation { color: #8a5300; } .refusal { color: #a00; } .when { white-space: nowrap; }
.document { margin: 1em 0; } embed, img { max-width: 100%; border: 1px solid #ccc; }
.s1 { color: #060; } .s2 { color: #a00; } .s3 { color: #05a; } /* by status id */
iframe { width: 100%; height: 16em; border: 0; }
"""


def is_inbox_path(path: str) -> bool:
    return path == "/" or path.startswith("/jobs/")


def handle(handler: Handler, path: str, query: str, token: str | None) -> None:
    """Answer one request for an inbox page."""
    if handler.command not in ("GET", "HEAD"):
        text = b"method not allowed: the inbox only shows pages\n"
        handler.send(405, {"Content-Type": "text/plain", "Allow": "GET, HEAD"}, text)
        return
    state = handler.server.sim._state
    if path == "/":
        total, jobs = state.recent_jobs(_SHOWN_JOBS)
        refused = state.recent_refusals(_SHOWN_REFUSALS, within=_SCANNED_REQUESTS)
        content = _inbox(state, total, jobs, refused, token)
        _page(handler, 200, "FaxWS simulator inbox", content, token)
        return
    number, _, rest = path[len("/jobs/") :].partition("/")
    job = state.by_id.get(number)
    if job is None or rest not in ("", "progress"):
        _page(
            handler, 404, "No such job", f"<p>{_link('/', 'Back to the inbox', token)}</p>", token
        )
        return
    if rest:
        _page(handler, 200, f"Job {job.id}: progress", _progress(state, job), token)
        return
    _page(handler, 200, f"Job {job.id}", _job(state, job, token), token, refresh=False)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _url(path: str, token: str | None, **params: str) -> str:
    if token is not None:
        params["token"] = token
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
    return f"{path}?{query}" if query else path


def _link(path: str, text: str, token: str | None, **params: str) -> str:
    return f'<a href="{_e(_url(path, token, **params))}">{_e(text)}</a>'


def _status(p: JobProgress) -> str:
    """One recipient's job in a line: where it is (coloured by its status), pages, attempts,
    push."""
    push = ""
    if p.push is not None:
        push = f" &middot; push {_e(p.push.state)}"
        push += f" ({_e(p.push.result)})" if p.push.result else ""
    return (
        f"<code>{_e(p.job_id)}</code> <span class=s{int(p.status)}>{_e(p.description)}</span>"
        f" &middot; pages {p.pages_sent}/{p.pages_total} &middot; "
        f"attempts {p.attempts}{push}"
    )


def _schedule(state: State, job: SimulatedJob) -> str:
    scale = state.time_scale
    starts = clock_time(job, job.start_after, scale)
    expires = clock_time(job, job.expires_after, scale)
    start = f"starts {_e(timestamp(starts))}<br>" if job.start_after else ""
    return f"{start}<span class=muted>expires {_e(timestamp(expires))}</span>"


def _inbox(
    state: State,
    total: int,
    jobs: list[SimulatedJob],
    refused: list[tuple[int, ReceivedRequest]],
    token: str | None,
) -> str:
    rows = []
    for job in jobs:
        recipients = "<br>".join(
            _e(r.recip_fax_number)
            + (f" <span class=muted>{_e(r.recip_name)}</span>" if r.recip_name else "")
            for r in job.recipients
        )
        statuses = "<br>".join(_status(p) for p in state.progresses(job))
        files = "<br>".join(
            f"{f.index}: type {f.file_type}, {f.size} bytes, <code>{_e(f.sha256[:12])}</code>"
            for f in job.files
        )
        deviations = "<br>".join(f"<span class=deviation>{_e(d)}</span>" for d in job.deviations)
        rows.append(
            "<tr>"
            f"<td>{_link(f'/jobs/{job.id}', job.id, token)}</td>"
            f"<td class=when>{_e(timestamp(job.received_at))}</td>"
            f"<td>{_e(job.user_id)}</td><td>{_e(job.auth_mode)}</td>"
            f"<td><code>{_e(job.request_id or '')}</code></td>"
            f"<td><code>{_e(job.reference_id)}</code></td>"
            f"<td>{recipients}</td><td>{statuses}</td><td>{_schedule(state, job)}</td>"
            f"<td>{files}</td><td>{deviations or '<span class=muted>none</span>'}</td>"
            "</tr>"
        )
    refusals = [
        "<tr>"
        f"<td>{_e(timestamp(r.received_at))}</td>"
        f"<td>{_e(r.method)} {_e(redact(r.path, r._secrets))}</td>"
        f"<td>{_e(r.operation or '')}</td><td>{_e(r.status)}</td>"
        f"<td class=refusal>{_e(redact(r.refusal or '', r._secrets))}</td>"
        "</tr>"
        for _, r in refused
    ]
    shown = f" (newest {_SHOWN_JOBS} shown)" if total > _SHOWN_JOBS else ""
    return (
        f"<p>{total} job(s) received{shown}. "
        f"JSON: {_link('/api/jobs', '/api/jobs', token)}, "
        f"{_link('/api/requests', '/api/requests', token)}.</p>"
        "<table><thead><tr><th>Job</th><th>Received</th><th>Account</th><th>Auth</th>"
        "<th>Request id</th><th>Reference</th><th>Recipients</th><th>Job ids and status</th>"
        "<th>Schedule</th><th>Files</th><th>Deviations from the contract</th></tr></thead>"
        "<tbody>"
        + ("".join(rows) or "<tr><td colspan=11 class=muted>No jobs yet.</td></tr>")
        + "</tbody></table>"
        "<h2>Refused requests</h2>"
        "<table><thead><tr><th>Received</th><th>Request</th><th>Operation</th><th>Status</th>"
        "<th>Reason</th></tr></thead><tbody>"
        + ("".join(refusals) or "<tr><td colspan=5 class=muted>None.</td></tr>")
        + "</tbody></table>"
    )


def _progress(state: State, job: SimulatedJob) -> str:
    rows = "".join(
        f"<tr><td>{_e(r.recip_fax_number)}</td><td>{_status(p)}</td>"
        f"<td>{_e(p.outcome)}</td><td>{_e(p.delivered_at_text)}</td></tr>"
        for r, p in zip(job.recipients, state.progresses(job), strict=True)
    )
    return (
        f"<p>Reference <code>{_e(job.reference_id)}</code>, {_schedule(state, job)}</p>"
        "<table><thead><tr><th>Fax number</th><th>Job id and status</th><th>Planned outcome</th>"
        f"<th>Delivered</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _details(job: SimulatedJob) -> str:
    """SendFaxEx's JobDetails, the password masked (in the destination too)."""
    details = job.shown_details()
    if details is None:
        return "<p class=muted>Sent with SendFax: no job details.</p>"
    rows = "".join(
        f"<tr><th>{_e(name)}</th><td>{_e(value)}</td></tr>"
        for name, value in details.items()
        if value not in ("", None)
    )
    return f"<table><tbody>{rows}</tbody></table>"


def _job(state: State, job: SimulatedJob, token: str | None) -> str:
    recipients = "".join(
        f"<tr><td>{_e(r.recip_fax_number)}</td><td>{_e(r.recip_company)}</td>"
        f"<td>{_e(r.recip_title)}</td><td>{_e(r.recip_name)}</td>"
        f"<td>{_e(r.recip_secure_csid)}</td><td><code>{_e(i)}</code></td></tr>"
        for r, i in zip(job.recipients, job.job_ids, strict=False)
    )
    documents = []
    for f in job.files:
        source = f"/api/jobs/{job.id}/files/{f.index}"
        try:
            media = file_kind(f).media
        except FileNotFoundError:
            documents.append(f"<p class=muted>Document {f.index} is gone.</p>")
            continue
        if media.startswith("image/") and media != "image/tiff":
            shown = f'<img src="{_e(_url(source, token))}" alt="document {f.index}">'
        elif media == "application/pdf":
            shown = (
                f'<embed src="{_e(_url(source, token))}" type="application/pdf" '
                'width="100%" height="600">'
            )
        else:
            shown = "<p class=muted>This type is not shown in a browser.</p>"
        documents.append(
            f"<div class=document><h3>Document {f.index}: type {f.file_type}, {_e(media)}, "
            f"{f.size} bytes</h3><p>sha256 <code>{_e(f.sha256)}</code> &middot; "
            f"{_link(source, 'download', token, download='1')}</p>{shown}</div>"
        )
    deviations = "".join(f"<li class=deviation>{_e(d)}</li>" for d in job.deviations)
    return (
        f"<p>{_link('/', 'Back to the inbox', token)}</p>"
        f"<p>Received {_e(timestamp(job.received_at))} from <b>{_e(job.user_id)}</b> "
        f"({_e(job.auth_mode)}), request id <code>{_e(job.request_id or '')}</code>.</p>"
        "<h2>Recipients</h2><table><thead><tr><th>Fax number</th><th>Company</th>"
        "<th>Title</th><th>Name</th><th>Secure CSID</th><th>Job id</th></tr></thead>"
        f"<tbody>{recipients}</tbody></table>"
        f'<h2>Progress</h2><iframe src="{_e(_url(f"/jobs/{job.id}/progress", token))}" '
        'title="progress"></iframe>'
        f"<h2>Job details ({_e(job.operation)})</h2>{_details(job)}"
        f"<h2>Deviations from the contract</h2>"
        f"{f'<ul>{deviations}</ul>' if deviations else '<p class=muted>None.</p>'}"
        f"<h2>Documents</h2>{''.join(documents)}"
    )


def _page(
    handler: Handler, status: int, title: str, content: str, token: str | None, refresh: bool = True
) -> None:
    meta = f'<meta http-equiv="refresh" content="{_REFRESH_SECONDS}">' if refresh else ""
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title>{meta}<style>{_STYLE}</style></head>"
        f"<body><h1>{_e(title)}</h1>{content}</body></html>"
    )
    handler.send(
        status,
        {
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": _POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        },
        page.encode(),
    )
