"""``faxws batch``: many faxes through a durable journal, each sent at most once across
crashes and runs (``send``), and what the journal holds (``status``, ``review``, ``export``);
``receive`` applies the service's push notifications to it."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faxws.cli import _client
from faxws.cli._output import (
    EXIT_CODES_HELP,
    EXIT_FAX_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NEEDS_REVIEW,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WAIT_TIMEOUT,
    Outcome,
    UsageError,
    one_line,
)

if TYPE_CHECKING:
    from faxws.cli._manifest import Entry, ManifestError
    from faxws.journal import JournalStore, State

SUMMARY = "send many faxes through a journal, at most once each (batch send|status|...)"
DESCRIPTION = """\
Send the faxes of a manifest through a journal (an SQLite file, or PostgreSQL) that records
each one's state, so that no fax is sent twice: not when the command is run again after a
crash or Ctrl-C, and not by several runs sharing the journal."""
EPILOG = """\
example:
  faxws batch send faxes.csv --journal batch.db --workers 8 --rate 5
  faxws batch status --journal batch.db
  faxws batch review --journal batch.db
  faxws batch export --journal batch.db --format jsonl --output outcome.jsonl
"""

_SEND_DESCRIPTION = """\
Send every row of MANIFEST, a fax each, through the journal: each row is added once (by its
key, which is never used again for another fax), sent by one of the workers, then followed
until its fax ends. Every row is checked before anything is sent: a bad row is named by its
line and field, and nothing is sent (exit 2).

Run the same command again to go on after a stop, a crash or Ctrl-C: the rows already in the
journal are not added again, and a fax already sent is never sent again. A send that ended
without an answer is looked up by its reference id; one that cannot be told apart (sent or not)
is left for review (faxws batch review), never sent again by itself.

The manifest, CSV with a header row or JSON Lines (an object a line), has a row per fax:
  key           the row's own key, unique for ever (required)
  to            a fax number (required); name, company: that recipient's
  file          a document (required), relative to the manifest's folder
  file-type, start-at, expires-at, sender-name, sender-company, sender-phone, sender-fax,
  sender-csid, cover-name, cover-subject, cover-text, resolution: as faxws send's options
Several recipients or files for one fax: the column repeated in CSV (to,to,file,file), a
list in JSON Lines ("file": ["a.pdf", "b.pdf"]); the n-th name and company go with the
n-th to.
A field may be spelled with _ (cover_subject); an empty CSV cell is a field not given, and
the option given to this command applies (--cover-subject, ...).

On a terminal the progress is a bar (with the progress extra: pip install 'faxws[progress]');
otherwise a line when the counts change (at most one a second) and a summary. Ctrl-C once
stops starting sends, lets the sends in flight finish and be recorded, and exits 7 when rows
are left; Ctrl-C again exits at once (130): its sends in flight are looked up by the next run
(after --lease)."""
_SEND_EPILOG = (
    """\
example:
  export FAXWS_BASE_URL=https://fax.example.com FAXWS_USER_ID=mbx1234567890
  export FAXWS_TOKEN=...            # or FAXWS_PIN=..., or the FAXWS_CLIENT_* settings
  faxws batch send faxes.csv --journal batch.db --workers 8 --rate 5
  faxws batch send faxes.jsonl --journal postgresql://faxws@db/faxws --no-wait

faxes.csv:
  key,to,name,file,file,cover-subject
  invoice-2041,+1 555 0100,Bob,invoice-2041.pdf,terms.pdf,Your invoice
  invoice-2042,+1 555 0101,Ann,invoice-2042.pdf,,Your invoice

faxes.jsonl:
  {"key": "invoice-2041", "to": "+1 555 0100", "file": ["invoice-2041.pdf", "terms.pdf"]}

"""
    + EXIT_CODES_HELP
)
_STATUS_DESCRIPTION = "How many rows of the journal are in each state."
_REVIEW_DESCRIPTION = """\
The rows that need review: a send whose outcome could not be told (the service has no job
with its reference id, yet it may have been sent), a fax that never ended, or a document that
changed after its row was added. They are never sent again by themselves: look each one up
(faxws status --reference REF) and send it again under a new key if it did not go out."""
_EXPORT_DESCRIPTION = """\
Every row of the journal, one a line, in the order they were added: key, state, to (the fax
numbers, separated by ;), job ids (separated by ;), reference id, attempt, resend_of (the key of
the failed row it sends again), reason, updated_at (ISO 8601, UTC)."""
_RECEIVE_DESCRIPTION = """\
Receive the service's push notifications of the batch's faxes (faxws batch send --notify-url
http://HOST:PORT/ --notify-user USER) and apply each to its row of the journal, until
interrupted: a row ends as soon as its push comes, without waiting for the next status round.
Each push must carry the credentials the batch was sent with, as HTTP Basic: --notify-user
and the variable FAXWS_NOTIFY_PASSWORD; others are refused (401). Put it behind HTTPS when the
service reaches it over the internet."""
_STORE_EPILOG = """\
example:
  faxws batch {} --journal batch.db
"""

#: The columns of ``batch export``, in order.
EXPORT_FIELDS = (
    "key",
    "state",
    "to",
    "job_ids",
    "reference_id",
    "attempt",
    "resend_of",
    "reason",
    "updated_at",
)
#: A line of progress at most this often (seconds), without a terminal.
PROGRESS_INTERVAL = 1.0


def run(args: argparse.Namespace, out: Outcome) -> int:
    raise UsageError("give a batch command: send, status, review, export or receive")


# -- batch send ------------------------------------------------------------------------------


def run_send(args: argparse.Namespace, out: Outcome) -> int:
    from faxws.cli import _send
    from faxws.cli._manifest import ManifestError, format_of, read_manifest

    out.prog = "faxws batch send"
    out.faxing = True
    _journal_secrets(args, out)
    manifest_format = format_of(args.manifest, args.format)
    defaults, notify = _defaults(args, _send.job_options(args))
    with ExitStack() as stack:
        if args.verbose:
            _log_to_stderr(out, stack)
        client = stack.enter_context(_client.make_client(args))
        try:
            entries = read_manifest(args.manifest, manifest_format, defaults)
            journal = _open(args, stack)
            specs = _specs(args.manifest, entries, journal)
        except ManifestError as exc:
            return _bad_manifest(out, exc)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise UsageError(f"MANIFEST: cannot read {args.manifest}: {reason}") from None
        from faxws.journal import Batch

        batch = Batch(
            journal,
            client,
            account=_client.setting(args, "user_id") or "default",
            rate=args.rate,
            max_concurrent=args.max_concurrent,
            notify=notify,
            lease_seconds=args.lease,
        )
        added = len(batch.add_many((entry.key, spec) for entry, spec in specs if spec is not None))
        return _send_all(args, out, batch, added, len(specs))


def _defaults(args: argparse.Namespace, options: Any) -> tuple[dict[str, Any], Any]:
    """The flags' job options (for every row) and the batch's Notify, as ``faxws send`` reads
    and checks them."""
    import dataclasses

    defaults: dict[str, Any] = {}
    if options is not None:
        skip = ("reference_id", "notify")
        defaults = {
            f.name: getattr(options, f.name)
            for f in dataclasses.fields(options)
            if f.name not in skip
        }
    if args.file_type is not None:
        from faxws.models import file_type_from_name

        defaults["file_type"] = file_type_from_name(args.file_type)
    return defaults, None if options is None else options.notify


def _specs(path: str, entries: list[Entry], journal: JournalStore) -> list[tuple[Entry, Any]]:
    """Each entry with what its row sends, or None when the journal has the row already;
    :class:`ManifestError` for a row whose key the journal has with another payload."""
    from faxws.cli._manifest import ManifestError, Problem
    from faxws.errors import BadInputError
    from faxws.journal import FaxSpec, FileSpec

    problems: list[Problem] = []
    specs: list[tuple[Entry, Any]] = []
    for entry in entries:
        try:
            spec = FaxSpec(
                entry.recipients,
                [FileSpec(path, file_type) for path, file_type in entry.files],
                entry.options,
            )
            digest = spec.digest()
        except BadInputError as exc:
            problems.append(Problem(entry.line, "file", exc.problem))
            continue
        row = journal.get(entry.key)
        if row is None:
            specs.append((entry, spec))
        elif row.payload_sha256 == digest:
            specs.append((entry, None))
        else:
            problems.append(
                Problem(
                    entry.line,
                    "key",
                    f"{entry.key!r} is in the journal with another fax (other recipients, "
                    "files or options, or a document changed since): a key is never reused",
                )
            )
    if problems:
        raise ManifestError(path, problems)
    return specs


def _bad_manifest(out: Outcome, exc: ManifestError) -> int:
    from faxws.cli._manifest import SHOWN_PROBLEMS

    problems = exc.problems
    # The manifest's path and the problems are the program's own words about the user's input
    # (keys, lines, paths): shown as they are, never masked.
    head = f"{out.prog}: {exc}; nothing was sent:"
    lines = [f"  {p}" for p in problems[:SHOWN_PROBLEMS]]
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"  and {len(problems) - SHOWN_PROBLEMS} more")
    error = {
        "type": "ManifestError",
        "message": f"{exc}; nothing was sent",
        "request_id": None,
        "status_code": None,
        "maybe_delivered": False,
        "problems": [{"line": p.line, "field": p.field, "problem": p.problem} for p in problems],
    }
    return out.fail(EXIT_USAGE, "\n".join([head, *lines]), error, str(exc))


class _Quit(BaseException):
    """Ctrl-C pressed again: the command ends at once. Not an Exception, as KeyboardInterrupt
    is not: no handler of failures (a stream's write, say) may take it for one."""


def _send_all(args: argparse.Namespace, out: Outcome, batch: Any, added: int, rows: int) -> int:
    """Run the batch's workers until the journal's work is done (or stopped), showing the
    progress, then say how it ended."""
    import signal

    from faxws.journal import State, Stop

    wait = not args.no_wait
    stop = Stop()
    progress = _progress(out, wait, batch.counts)
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["summary"] = batch.run(
                workers=args.workers, stop=stop, on_progress=progress.seen, wait=wait
            )
        except BaseException as exc:
            result["error"] = exc

    presses = 0

    def interrupted(signum: int, frame: object) -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            raise _Quit
        stop.request()
        flying = progress.in_flight()
        out.stderr.write(
            f"{out.prog}: stopping: no more faxes are started; the {flying} send(s) in flight "
            "finish and are recorded (Ctrl-C again quits at once)\n"
        )
        out.stderr.flush()

    thread = threading.Thread(target=work, name="faxws-batch")
    if not out.as_json:
        how = "sent and followed to their end" if wait else "sent"
        out.stdout.write(
            f"{rows} fax(es) in {os.path.basename(args.manifest)}, {added} added to the "
            f"journal; {args.workers} worker(s), faxes {how} (Ctrl-C stops)\n"
        )
        out.stdout.flush()
    try:
        previous = signal.signal(signal.SIGINT, interrupted)
    except ValueError:  # not the main thread (embedded): Ctrl-C is not this run's
        previous = None
    try:
        try:
            progress.start()
            thread.start()
            while thread.is_alive():
                thread.join(0.1)
                progress.tick()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            progress.end()
    except _Quit:
        return _quit(out, progress)
    if "error" in result:
        raise result["error"]
    summary = result["summary"]
    counts: dict[State, int] = {s: summary.counts.get(s, 0) for s in State}
    return _concluded(args, out, counts, bool(summary.stopped), wait, added)


def _quit(out: Outcome, progress: _Progress) -> int:
    """The second Ctrl-C: say what is left, and end the process now (the workers' threads are
    not waited for: their rows are looked up by the next run)."""
    flying = progress.in_flight()
    message = (
        f"interrupted: {flying} send(s) in flight are left as they are; the next run of "
        "this batch looks them up (never sends them again)"
    )
    out.sending = flying > 0  # their faxes may have been delivered
    out.failed(EXIT_INTERRUPTED, "Interrupted", message)
    code = out.finish(EXIT_INTERRUPTED)
    os._exit(code)


def _concluded(
    args: argparse.Namespace,
    out: Outcome,
    counts: dict[State, int],
    stopped: bool,
    wait: bool,
    added: int,
) -> int:
    from faxws.journal import State

    total = sum(counts.values())
    left_states = [State.PENDING, State.CLAIMED, State.SENDING, State.UNCERTAIN]
    if wait:
        left_states.append(State.SUBMITTED)
    left = {s: counts[s] for s in left_states if counts[s]}
    review = counts[State.NEEDS_REVIEW]
    failed = counts[State.FAILED] + counts[State.CANCELLED]
    journal = _shown_journal(args)
    outcome = (
        "stopped"
        if left
        else "needs_review"
        if review
        else "failed"
        if failed
        else "delivered"
        if wait
        else "submitted"
    )
    data = {
        "outcome": outcome,
        "stopped": stopped,
        "rows": total,
        "added": added,
        "counts": {s.value: counts[s] for s in State},
    }
    text = f"Batch: {total} fax(es) in the journal: {_counted(counts) or 'none'}."
    out.answer("the batch ran", data, text, [])
    if left:
        line = (
            f"{out.prog}: stopped with {sum(left.values())} of {total} fax(es) not yet "
            f"{'ended' if wait else 'sent'} ({_counted(left)}); run the same command again "
            "to go on"
        )
        return out.concluded(EXIT_WAIT_TIMEOUT, line)
    if review:
        line = (
            f"{out.prog}: {review} fax(es) need review (whether they were sent cannot be told, "
            f"or they never ended); see faxws batch review --journal {journal}"
        )
        return out.concluded(EXIT_NEEDS_REVIEW, line)
    if failed:
        line = (
            f"{out.prog}: {failed} of {total} fax(es) failed; see faxws batch export "
            f"--journal {journal}"
        )
        return out.concluded(EXIT_FAX_FAILED, line)
    return EXIT_OK


def _counted(counts: Mapping[State, int]) -> str:
    """``12 delivered, 3 submitted, 1 needs review``: the states with rows, in their order."""
    return ", ".join(f"{n} {s.value.replace('_', ' ')}" for s, n in counts.items() if n)


def _log_to_stderr(out: Outcome, stack: ExitStack) -> None:
    """--verbose: the faxws logger's records on stderr (masked by the client), put back after."""
    import logging

    handler = logging.StreamHandler(out.stderr.as_text())
    handler.setFormatter(logging.Formatter("faxws: %(levelname)s: %(message)s"))
    logger = logging.getLogger("faxws")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    stack.callback(logger.setLevel, level)
    stack.callback(logger.removeHandler, handler)


# -- progress --------------------------------------------------------------------------------


class _Progress:
    """The counts by state as they change: :meth:`seen` from the run's thread, :meth:`tick`
    from the main thread, which shows them. Without a terminal, a line per change, at most one
    every :data:`PROGRESS_INTERVAL` seconds (the latest counts are never lost: they are shown
    once the interval has passed); nothing with --json.

    The run reports after the changes it makes; a row's move to SENDING, and the work of other
    processes sharing the journal, are seen by reading the counts (``read``) when the run has
    said nothing for an interval."""

    def __init__(self, out: Outcome, wait: bool, read: Callable[[], Mapping[State, int]]) -> None:
        self._out = out
        self._wait = wait
        self._read = read
        self._lock = threading.Lock()
        self._counts: dict[State, int] = {}
        self._fresh = float("-inf")  # when the counts were last reported or read
        self._shown: dict[State, int] | None = None
        self._at = float("-inf")

    def seen(self, counts: Mapping[State, int]) -> None:
        import time

        with self._lock:
            self._counts = dict(counts)
            self._fresh = time.monotonic()

    def current(self) -> dict[State, int]:
        """The latest counts (states with rows), read again when they are an interval old."""
        import contextlib
        import time

        from faxws.errors import FaxWSError

        with self._lock:
            stale = time.monotonic() - self._fresh >= PROGRESS_INTERVAL
        if stale:
            # A journal busy now: the run's own reports go on.
            with contextlib.suppress(FaxWSError):
                self.seen(self._read())
        with self._lock:
            return {s: n for s, n in self._counts.items() if n}

    def in_flight(self) -> int:
        from faxws.journal import State

        with self._lock:
            return self._counts.get(State.CLAIMED, 0) + self._counts.get(State.SENDING, 0)

    def done(self, counts: Mapping[State, int]) -> int:
        from faxws.journal import State

        ended = [s for s in State if s.final]
        if not self._wait:
            ended.append(State.SUBMITTED)
        return sum(counts.get(s, 0) for s in ended)

    def start(self) -> None:
        self.tick()

    def tick(self) -> None:
        import time

        if self._out.as_json:
            return
        now = time.monotonic()
        if now - self._at < PROGRESS_INTERVAL:
            return
        counts = self.current()
        if counts != self._shown:
            self._at, self._shown = now, counts
            self.show(counts)

    def show(self, counts: dict[State, int]) -> None:
        total = sum(counts.values())
        self._out.stdout.write(f"{self.done(counts)} of {total} done: {_counted(counts)}\n")
        self._out.stdout.flush()

    def end(self) -> None:
        pass


class _Bar(_Progress):
    """On a terminal: a rich progress bar with the counts by state."""

    def __init__(self, out: Outcome, wait: bool, read: Callable[[], Mapping[State, int]]) -> None:
        super().__init__(out, wait, read)
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(file=out.stdout.as_text())
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[states]}"),
            console=console,
        )
        self._task = self._bar.add_task("faxes", total=None, states="")
        self._started = False

    def start(self) -> None:
        self._bar.start()
        self._started = True
        super().start()

    def tick(self) -> None:
        counts = self.current()
        if counts != self._shown:
            self._shown = counts
            self.show(counts)

    def show(self, counts: dict[State, int]) -> None:
        total = sum(counts.values())
        self._bar.update(
            self._task, total=total, completed=self.done(counts), states=_counted(counts)
        )

    def end(self) -> None:
        if self._started:
            self._started = False
            self._bar.stop()


def _progress(out: Outcome, wait: bool, read: Callable[[], Mapping[State, int]]) -> _Progress:
    """A bar on a terminal when rich is installed, else plain lines."""
    if not out.as_json and out.stdout.isatty():
        try:
            return _Bar(out, wait, read)
        except ImportError:
            pass
    return _Progress(out, wait, read)


# -- the journal's commands ------------------------------------------------------------------


def _journal_secrets(args: argparse.Namespace, out: Outcome) -> None:
    """A PostgreSQL URL's password (or a libpq string's) is masked in every message."""
    out.secrets |= _passwords(args.journal)


def _shown_journal(args: argparse.Namespace) -> str:
    """The journal as the user gave it, quoted for a shell, its password masked: a path is
    the user's own name for it, shown whole even where it holds a secret's characters (a PIN
    of 0000 in batch-0000.db)."""
    import shlex

    from faxws._protocol.redact import redact

    shown = shlex.quote(args.journal)
    passwords = _passwords(args.journal)
    return redact(shown, passwords) if passwords else shown


def _passwords(target: str) -> set[str]:
    """The passwords of a PostgreSQL URL or libpq string, in each spelling."""
    import re
    from urllib.parse import unquote, urlsplit

    found: set[str] = set()
    if re.match(r"postgres(ql)?://", target):
        try:
            password = urlsplit(target).password
        except ValueError:
            password = None
        if password:
            found |= {password, unquote(password)}
        for value in re.findall(r"[?&]password=([^&#]*)", target):
            found |= {value, unquote(value)}
    else:
        for quoted, plain in re.findall(r"\bpassword\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S+))", target):
            found.add(quoted or plain)
    return {s for s in found if s}


def _open(args: argparse.Namespace, stack: ExitStack, *, existing: bool = False) -> JournalStore:
    """The journal of ``--journal``. An SQLite file in a folder that does not exist is a
    usage error (exit 2); with ``existing`` (the commands that only read the journal), so is
    a file that does not exist: a mistyped path must not become an empty journal that
    reports no rows."""
    from faxws.journal import open_journal
    from faxws.journal._open import sqlite_path

    path = sqlite_path(args.journal)
    if path is not None:
        folder = os.path.dirname(path) or os.curdir
        if not os.path.isdir(folder):
            raise UsageError(
                f"--journal: {path}: the folder {folder} does not exist (create it first)"
            )
        if existing and not os.path.exists(path):
            raise UsageError(
                f"--journal: {path}: no such journal (this command does not create one; "
                "faxws batch send does)"
            )
    journal: JournalStore = open_journal(args.journal)
    stack.callback(journal.close)
    return journal


def run_status(args: argparse.Namespace, out: Outcome) -> int:
    from faxws.journal import State

    out.prog = "faxws batch status"
    _journal_secrets(args, out)
    with ExitStack() as stack:
        counts = _open(args, stack, existing=True).counts_by_state()
    counts = {s: counts.get(s, 0) for s in State}
    total = sum(counts.values())
    data = {"rows": total, "counts": {s.value: n for s, n in counts.items()}}
    width = max(len(s.value) for s in State)
    lines = [f"{total} row(s) in the journal:"]
    lines += [f"  {s.value.replace('_', ' '):<{width}}  {n}" for s, n in counts.items()]
    out.answer("the journal was read", data, "\n".join(lines), [])
    return EXIT_OK


def run_review(args: argparse.Namespace, out: Outcome) -> int:
    from faxws.journal import State

    out.prog = "faxws batch review"
    _journal_secrets(args, out)
    with ExitStack() as stack:
        rows = list(_rows(_open(args, stack, existing=True), [State.NEEDS_REVIEW]))
    # Keys, reference ids and job ids are the user's or the journal's own names: shown as
    # they are. A reason may quote what the service or a server said: its secrets are masked.
    reasons = [None if row.reason is None else out.mask(row.reason) for row in rows]
    data = {
        "rows": [
            {
                "key": row.key,
                "reference_id": row.reference_id,
                "job_ids": list(row.job_ids),
                "reason": reason,
                "updated_at": row.updated_at.isoformat(),
            }
            for row, reason in zip(rows, reasons, strict=True)
        ]
    }
    if not rows:
        text = "No row needs review."
    else:
        table = [("KEY", "REFERENCE", "JOB IDS", "REASON")]
        table += [
            (
                one_line(row.key),
                row.reference_id,
                ",".join(row.job_ids) or "-",
                one_line(reason or "-"),
            )
            for row, reason in zip(rows, reasons, strict=True)
        ]
        widths = [max(len(r[i]) for r in table) for i in range(3)]
        lines = [f"{len(rows)} row(s) need review:"]
        lines += [
            "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
            for r in table
        ]
        text = "\n".join(lines)
    out.answer("the journal was read", data, text, [])
    return EXIT_OK


def run_export(args: argparse.Namespace, out: Outcome) -> int:
    out.prog = "faxws batch export"
    _journal_secrets(args, out)
    with ExitStack() as stack:
        journal = _open(args, stack, existing=True)
        if args.output is None:
            _export(journal, args.format, out.stdout.write, out.mask)
            return EXIT_OK
        import tempfile

        # Written beside the file, then put in its place: never a half-written export.
        target = os.path.abspath(args.output)
        try:
            fd, temporary = tempfile.mkstemp(
                dir=os.path.dirname(target), prefix=".faxws-export-", suffix=".tmp"
            )
        except OSError as exc:
            raise UsageError(f"--output: cannot write {args.output}: {exc.strerror}") from None
        try:
            with open(fd, "w", encoding="utf-8", newline="") as fh:
                _export(journal, args.format, fh.write, out.mask)
            os.replace(temporary, target)
        except OSError as exc:
            raise UsageError(f"--output: cannot write {args.output}: {exc.strerror}") from None
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return EXIT_OK


def _export(
    journal: JournalStore, form: str, write: Callable[[str], Any], mask: Callable[[str], str]
) -> None:
    """Every row, a line each; a reason never shows a secret of this run (a journal never
    records one, but may be shared)."""
    import csv
    import io
    import json

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if form == "csv":
        writer.writerow(EXPORT_FIELDS)
    for row in _rows(journal, None):
        values: dict[str, Any] = {
            "key": row.key,
            "state": row.state.value,
            "to": _numbers(row.payload),
            "job_ids": list(row.job_ids),
            "reference_id": row.reference_id,
            "attempt": row.attempt,
            "resend_of": row.resend_of,
            "reason": None if row.reason is None else mask(row.reason),
            "updated_at": row.updated_at.isoformat(),
        }
        if form == "jsonl":
            write(json.dumps(values, ensure_ascii=False) + "\n")
            continue
        # One line a row: a reason's line breaks become spaces.
        cells = [
            ";".join(v) if isinstance(v, list) else "" if v is None else one_line(str(v))
            for v in values.values()
        ]
        writer.writerow(cells)
        write(buffer.getvalue())
        buffer.seek(0)
        buffer.truncate()
    if form == "csv" and buffer.getvalue():
        write(buffer.getvalue())


def _numbers(payload: str) -> list[str]:
    """The fax numbers of a row's payload (none when it cannot be read)."""
    from faxws.errors import BadInputError
    from faxws.journal import FaxSpec

    try:
        return list(FaxSpec.from_payload(payload).fax_numbers())
    except BadInputError:
        return []


def _rows(journal: JournalStore, states: list[State] | None) -> Iterator[Any]:
    """Every row (in ``states``), in the order they were added, a page at a time."""
    after = 0
    while True:
        page = journal.rows(states, after=after, limit=500)
        yield from page
        if len(page) < 500:
            return
        after = page[-1].seq


#: Seconds a connection to the receiver may stay silent before it is closed.
RECEIVE_IDLE_TIMEOUT = 10.0


def run_receive(args: argparse.Namespace, out: Outcome) -> int:
    import signal

    from faxws.cli._client import NOTIFY_PASSWORD_ENV

    out.prog = "faxws batch receive"
    _journal_secrets(args, out)
    user, password = args.notify_user, os.environ.get(NOTIFY_PASSWORD_ENV, "")
    if user is None or not password:
        # Without them anyone who can reach the port could end the journal's rows.
        raise UsageError(
            f"give the pushes' credentials: --notify-user and the variable {NOTIFY_PASSWORD_ENV}"
        )
    with ExitStack() as stack:
        from faxws.journal import Batch
        from faxws.journal._receiver import notification_app

        # A push is applied to the journal alone: this Batch never calls the service.
        # Started before the batch's first run, so it may make the journal.
        batch = Batch(_open(args, stack), None)
        app = notification_app(batch, user=user, password=password)
        log = _RequestLog(out, args.quiet)
        try:
            server = _listen(args.host, args.port, app, log)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            message = f"cannot listen on {args.host}:{args.port}: {reason}"
            return out.failed(EXIT_USAGE, "OSError", out.mask(message))
        stack.callback(server.server_close)
        stop = threading.Event()
        previous = {
            signum: signal.signal(signum, lambda *_: stop.set())
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        for signum, handler in previous.items():
            stack.callback(signal.signal, signum, handler)
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="faxws-receive"
        )
        thread.start()
        try:
            host, port = server.server_address[:2]
            out.stdout.write(
                out.mask(
                    f"Receiving pushes for the journal on http://{host}:{port}/ (user {user}); "
                    "Ctrl-C stops\n"
                )
            )
            out.stdout.flush()
            while not stop.wait(0.2):
                pass
        finally:
            server.shutdown()
            thread.join()
    out.stderr.write(f"{out.prog}: stopped; {log.summary()}\n")
    return EXIT_OK


class _RequestLog:
    """A line on stderr for each request (method, path without its query, status), unless
    quiet; counts of what was answered."""

    def __init__(self, out: Outcome, quiet: bool) -> None:
        self._out = out
        self._quiet = quiet
        self._lock = threading.Lock()
        self.requests = 0
        self.taken = 0

    def request(self, method: str, path: str, status: str) -> None:
        with self._lock:
            self.requests += 1
            self.taken += status == "204"
        if not self._quiet:
            import time

            when = time.strftime("%Y-%m-%d %H:%M:%S")
            line = one_line(f"{when} {method} {path.split('?', 1)[0]} {status}")
            self._out.stderr.write(self._out.mask(line) + "\n")
            self._out.stderr.flush()

    def summary(self) -> str:
        with self._lock:
            return f"{self.requests} request(s), {self.taken} push(es) taken"


def _listen(host: str, port: int, app: Any, log: _RequestLog) -> Any:
    """A WSGI server for ``app``: a thread per connection (a silent sender holds back no
    other), each closed after :data:`RECEIVE_IDLE_TIMEOUT` silent seconds."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Handler(WSGIRequestHandler):
        timeout = RECEIVE_IDLE_TIMEOUT

        def handle(self) -> None:
            try:
                super().handle()
            except TimeoutError:  # the sender went silent: dropped, no traceback
                self.close_connection = True

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            log.request(self.command or "-", self.path or "-", str(code))

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (wsgiref's name)
            pass  # its other messages quote the request line, query and all

    return make_server(host, port, app, server_class=Server, handler_class=Handler)


@dataclass(frozen=True)
class _Words:
    summary: str
    description: str
    epilog: str
    run: Callable[[argparse.Namespace, Outcome], int]


#: Each ``faxws batch`` command's words and its ``run``.
COMMANDS = {
    "send": _Words(
        "add the rows of a manifest to the journal, send each once, follow each to its end",
        _SEND_DESCRIPTION,
        _SEND_EPILOG,
        run_send,
    ),
    "status": _Words(
        "how many rows are in each state",
        _STATUS_DESCRIPTION,
        _STORE_EPILOG.format("status") + "\n" + EXIT_CODES_HELP,
        run_status,
    ),
    "review": _Words(
        "the rows that need review",
        _REVIEW_DESCRIPTION,
        _STORE_EPILOG.format("review") + "\n" + EXIT_CODES_HELP,
        run_review,
    ),
    "export": _Words(
        "every row, as CSV or JSON Lines",
        _EXPORT_DESCRIPTION,
        _STORE_EPILOG.format("export --format jsonl --output rows.jsonl") + "\n" + EXIT_CODES_HELP,
        run_export,
    ),
    "receive": _Words(
        "apply the service's push notifications to the journal",
        _RECEIVE_DESCRIPTION,
        _STORE_EPILOG.format("receive --port 8000 --notify-user faxws").replace(
            "  faxws", "  FAXWS_NOTIFY_PASSWORD=... faxws"
        )
        + "\n"
        + EXIT_CODES_HELP,
        run_receive,
    ),
}
