"""``faxws send --wait``: after the send, poll every job's real-time status until each has
ended, showing each recipient's progress, then one final line per job.

The client's ``wait_for_delivery`` polls (first after the TTFP, then intervals doubling up to
a minute, with jitter) and reports each round to :class:`_Progress`. On a terminal the
progress is one line rewritten in place; otherwise a line per change, for logs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from faxws.cli._output import (
    EXIT_FAX_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_WAIT_TIMEOUT,
    Failure,
    Outcome,
    check_later,
    one_line,
)
from faxws.cli._status import cells, status_data

if TYPE_CHECKING:
    from faxws.client import FaxClient
    from faxws.models import SendFaxResult
    from faxws.status import RealTimeFaxStatus

#: Seconds ``send --wait`` waits by default: a busy line is tried again minutes later.
DEFAULT_TIMEOUT = 3600.0


def wait(
    client: FaxClient,
    out: Outcome,
    sent: SendFaxResult,
    numbers: Sequence[str],
    timeout: float,
    data: dict[str, Any],
) -> int:
    """Wait for the jobs of ``sent`` (to ``numbers``, in order); ``data`` is the send's JSON
    answer, which gains the wait's outcome. The exit code says how the faxes ended. A poll
    that fails ends the wait as a time-out does: the fax was sent, and how each job ends is
    for a later ``faxws status`` to tell."""
    from faxws.errors import FaxWSError, WaitTimeoutError
    from faxws.status import JobStatus

    job_ids = list(dict.fromkeys(sent.job_ids))
    progress = _Progress(out, dict(zip(sent.job_ids, numbers, strict=False)))
    results: list[RealTimeFaxStatus] = []

    def seen_now(statuses: list[RealTimeFaxStatus]) -> None:
        results[:] = statuses
        progress.update(statuses)

    outcome = ""
    pending: list[str] = []
    error: FaxWSError | None = None
    try:
        out.show()  # the job ids first: the wait may be long
        progress.start(len(job_ids), timeout)
        try:
            results = client.wait_for_delivery(sent, timeout=timeout, on_progress=seen_now)
        except WaitTimeoutError as exc:
            results, pending = cast("list[RealTimeFaxStatus]", exc.statuses), list(exc.pending)
        except FaxWSError as exc:
            outcome, error = "error", exc
    except KeyboardInterrupt:
        outcome = "interrupted"
    if outcome:
        final = {s.job_id for s in results if s.final}
        pending = [i for i in job_ids if i not in final]
    progress.end()
    failed = [s for s in results if s.final and s.status is not JobStatus.SUCCEEDED]
    if not outcome:
        outcome = "timed_out" if pending else "failed" if failed else "delivered"
    data["wait"] = {
        "outcome": outcome,
        "statuses": [status_data(s) for s in results],
        "pending": pending,
        "failed": [s.job_id for s in failed],
    }
    if error is not None:
        data["wait"]["error"] = {
            "type": type(error).__name__,
            # A status query's "may have been delivered" is no news about the fax.
            "message": one_line(out.mask(error.message)).removesuffix(
                "; the request may have been delivered"
            ),
            "request_id": error.request_id,
            "status_code": error.status_code,
        }
    seen = {s.job_id: s for s in results}
    lines = ["Final status:" if not pending else "Last status seen:"]
    lines += [progress.line(seen[i]) if i in seen else f"  {i}  no status yet" for i in job_ids]
    out.answer("the fax was sent", data, "\n".join(lines), sent.job_ids)
    prog = out.prog
    if outcome == "interrupted":
        line = f"{prog}: interrupted while waiting: the fax was sent; check it later with: "
        return out.concluded(EXIT_INTERRUPTED, line + check_later(job_ids))
    if error is not None:
        said = data["wait"]["error"]
        failure = Failure(
            EXIT_WAIT_TIMEOUT,
            said["type"],
            said["message"],
            request_id=said["request_id"],
            status_code=said["status_code"],
            headline=f"the fax was sent, but waiting failed: {said['type']}: {said['message']}",
            outcome=f"{len(pending)} of {len(job_ids)} job(s) had not ended",
            next_step=f"check later with: {check_later(pending)}",
        )
        return out.concluded(EXIT_WAIT_TIMEOUT, failure.text(prog))
    if pending:
        line = (
            f"{prog}: the fax was sent, but {len(pending)} of {len(job_ids)} job(s) had not ended "
            f"after {timeout:g} s; check later with: {check_later(pending)}"
        )
        return out.concluded(EXIT_WAIT_TIMEOUT, line)
    if failed:
        why = ", ".join(f"{s.job_id} ({one_line(s.description) or 'failed'})" for s in failed)
        line = f"{prog}: the fax was sent, but {len(failed)} of {len(job_ids)} job(s) failed: {why}"
        return out.concluded(EXIT_FAX_FAILED, line)
    return EXIT_OK


class _Progress:
    """Each recipient's progress as it changes: nothing with --json (stdout is one object)."""

    def __init__(self, out: Outcome, numbers: dict[str, str]) -> None:
        self._out = out
        self._numbers = numbers
        self._width = max((len(n) for n in numbers.values()), default=0)
        self._shown = not out.as_json
        self._live = self._shown and out.stdout.isatty()
        self._last: dict[str, tuple[object, ...]] = {}
        self._drawn = 0  # characters of the live line on screen

    def line(self, status: RealTimeFaxStatus) -> str:
        job, state, pages, description, delivered = cells(status)
        number = self._numbers.get(job, "").ljust(self._width)
        at = f"  at {delivered}" if delivered != "-" else ""
        return f"  {job}  {number}  {state:<11}  {pages} pages  {description}{at}"

    def start(self, jobs: int, timeout: float) -> None:
        if self._shown:
            self._write(
                f"Waiting up to {timeout:g} s for {jobs} job(s) to end "
                "(Ctrl-C stops waiting, not the fax)...\n"
            )

    def update(self, statuses: Sequence[RealTimeFaxStatus]) -> None:
        if not self._shown:
            return
        changed = []
        for s in statuses:
            key = (s.status_id, s.error_code, s.pages_sent, s.pages_total, s.description)
            if self._last.get(s.job_id) != key:
                self._last[s.job_id] = key
                changed.append(s)
        if not changed:
            return
        if not self._live:
            self._write("".join(self.line(s) + "\n" for s in changed))
            return
        import shutil

        parts = []
        for s in statuses:
            job, state, pages, _, _ = cells(s)
            parts.append(f"{self._numbers.get(job, job)}: {state} {pages}")
        text = "; ".join(parts)[: max(shutil.get_terminal_size().columns - 1, 20)]
        self._write("\r" + text.ljust(self._drawn))
        self._drawn = len(text)

    def end(self) -> None:
        if self._live and self._drawn:  # the final lines say it all: the live line goes
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _write(self, text: str) -> None:
        self._out.stdout.write(text)
        self._out.stdout.flush()
