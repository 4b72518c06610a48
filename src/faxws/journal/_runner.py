"""The batch runner: :class:`Batch` adds rows to a journal and sends them with worker threads,
each row at most once, then tracks them to their outcome.

A worker claims a row under a lease, checks its documents against the row's digest, waits for
the account's send slot and call slot (both kept in the store, so every worker of every
process shares them), marks the row SENDING durably, sends it with the row's ReferenceId and
records what the send proved. Rows whose send ended without an answer are looked up by their
ReferenceId; submitted rows are polled in batches of job ids until their jobs end.

Tracking rounds are aligned: a row's next look-up is rounded up to a grid of its interval
(powers of two seconds, a minute at most), so rows polled together stay together and a round
asks about many jobs per status call, whichever worker or process makes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import json
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from faxws import _telemetry
from faxws._log import logger
from faxws._protocol import assumptions as vendor
from faxws._protocol.checks import check_int, check_text
from faxws._protocol.redact import redact
from faxws._ranges import LEASE_SECONDS, MAX_CONCURRENT, RATE, WORKERS
from faxws.errors import (
    AuthenticationError,
    BadInputError,
    FaxWSError,
    HTTPStatusError,
    TransportError,
)
from faxws.jobs import Notify
from faxws.journal._payload import FaxSpec, OpenDocuments, check_key, payload_digest
from faxws.journal._store import (
    IllegalTransitionError,
    JournalError,
    JournalStore,
    LeaseLostError,
    Row,
    State,
    Submission,
    UnknownKeyError,
    added_by_key,
    check_added,
    resend_number,
)
from faxws.models import FaxFile, SendFaxResult
from faxws.notifications import DeliveryNotification
from faxws.status import JobStatus, RealTimeFaxStatus

__all__ = ["Batch", "Outcome", "ResendPolicy", "RunSummary", "Stop"]

Progress = Callable[[dict[State, int]], object]

#: Job ids per status call.
TRACK_BATCH = vendor.STATUS_BATCH_SIZE
#: Uncertain rows looked up per pass of a worker.
LOOKUP_BATCH = 10
#: Look-ups of an uncertain row that find nothing before it goes to review.
LOOKUPS = 5
#: Seconds before the first look-up of an uncertain row, doubled after each (to a minute).
LOOKUP_DELAY = 5.0
#: Tracking intervals: from this, doubling to MAX_INTERVAL seconds.
MIN_INTERVAL = 2.0
MAX_INTERVAL = 60.0
#: A worker that could not connect waits this long, doubling to MAX_INTERVAL.
FIRST_BACKOFF = 1.0
#: Longest an idle worker waits before looking for work again (another process's rows).
MAX_IDLE = 2.0
MIN_IDLE = 0.05
#: A worker claims as many rows as it sends in about CLAIM_SECONDS (one at first, at most
#: MAX_CLAIM) and moves them to SENDING in one synced commit: the sends of a fast service share
#: it, while a slow service's rows are left to the other workers.
CLAIM_SECONDS = 0.03
MAX_CLAIM = 32
#: Once a claim's sends have taken this long (a service that slowed down), its rows not yet
#: sent go back to the other workers.
HOLD_SECONDS = 1.0
#: Seconds between tries for a send slot while all are held.
SLOT_POLL = 0.05
#: Seconds between look-ups of due rows while there is still something to send.
POLL_WHILE_SENDING = 1.0
#: on_progress at most this often (seconds of real time).
PROGRESS_EVERY = 0.1
DEFAULT_GIVE_UP = 3 * 86400.0
DEFAULT_UNREACHABLE = 600.0

_SENDING = frozenset({State.PENDING, State.CLAIMED, State.SENDING, State.UNCERTAIN})
_TRACKING = _SENDING | {State.SUBMITTED}
#: Status descriptions of jobs that ended without a telephone failure (never sent again).
_NOT_TELEPHONE = frozenset({vendor.CANCELLED_DESCRIPTION, vendor.EXPIRED_DESCRIPTION})


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class ResendPolicy:
    """When a row whose fax failed at the telephone level (every job status 2 after the
    service's own retries: busy, no answer, a dropped call; not a cancel or an expiry) is sent
    again, as a new row linked to it: at most ``max_resends`` times per first row (default 0:
    never)."""

    max_resends: int = 0

    def __post_init__(self) -> None:
        check_int("resend.max_resends", self.max_resends, 0, 1000)


@dataclass(frozen=True)
class RunSummary:
    """What :meth:`Batch.run` left: rows by state, and whether it stopped on request."""

    counts: dict[State, int]
    stopped: bool


@dataclass(frozen=True)
class Outcome:
    """One row as the caller sees it: ``recipients`` are the fax numbers it sends to."""

    key: str
    state: State
    job_ids: tuple[str, ...]
    reference_id: str
    reason: str | None
    attempt: int
    resend_of: str | None
    recipients: tuple[str, ...]
    updated_at: datetime


class Stop:
    """Asks a run to stop: no row is claimed after :meth:`request`, calls in flight finish
    and are recorded, and :meth:`Batch.run` returns soon after. ``request`` only sets a flag,
    so a signal handler may call it."""

    def __init__(self) -> None:
        self._requested = False

    def request(self) -> None:
        self._requested = True

    @property
    def requested(self) -> bool:
        return self._requested

    def __repr__(self) -> str:
        return f"Stop(requested={self._requested})"


class _Final(Protocol):
    """A job's final status, from a status call or a push."""

    @property
    def job_id(self) -> str: ...

    @property
    def status(self) -> JobStatus | None: ...

    @property
    def description(self) -> str: ...


def _seconds(name: str, value: object, *, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInputError(name, f"must be a number of seconds, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number <= low:
        raise BadInputError(name, f"must be a finite number above {low:g}, not {value!r}")
    return number


def _numbers(payload: str) -> tuple[str, ...]:
    """The fax numbers of a payload (none for one that cannot be read)."""
    try:
        found = json.loads(payload)["recipients"]
        return tuple(str(r["fax_number"]) for r in found)
    except (TypeError, ValueError, KeyError):
        return ()


def _outcome(row: Row) -> Outcome:
    return Outcome(
        key=row.key,
        state=row.state,
        job_ids=row.job_ids,
        reference_id=row.reference_id,
        reason=row.reason,
        attempt=row.attempt,
        resend_of=row.resend_of,
        recipients=_numbers(row.payload),
        updated_at=row.updated_at,
    )


def _grid(delay: float) -> float:
    """The grid a look-up ``delay`` seconds ahead is rounded up to."""
    if delay >= MAX_INTERVAL:
        return MAX_INTERVAL
    return float(2 ** max(0, math.floor(math.log2(max(delay, 1.0)))))


def _aligned(now: datetime, delay: float) -> datetime:
    """``now + delay`` rounded up to the grid of ``delay``: rows looked up in one round are
    due together again, whichever worker or process scheduled them."""
    step = _grid(delay)
    at = now.timestamp() + delay
    return datetime.fromtimestamp(math.ceil(at / step) * step, timezone.utc)


def _first_look(ttfp: float) -> float:
    """Seconds from a send's answer to its first status call: its TTFP, within a second and an
    hour (whatever number the service sent)."""
    seconds = float(ttfp)
    return min(max(seconds, 1.0), 3600.0) if math.isfinite(seconds) else 1.0


def _interval(checks: int) -> float:
    return min(MIN_INTERVAL * 2.0 ** min(checks, 16), MAX_INTERVAL)


def _tracked_for(checks: int) -> float:
    """The least time a submitted row has been tracked after ``checks`` rounds."""
    return sum(_interval(n) for n in range(checks))


def _plain_reference(text: str) -> str:
    """A ReferenceId as compared: how the service echoes one is not published (its case, a
    ``JRI-`` prefix), and a false mismatch would send a good row to review."""
    text = text.strip().casefold()
    prefix = vendor.REFERENCE_PREFIX.casefold()
    return text[len(prefix) :] if text.startswith(prefix) else text


class Batch:
    """Sends the rows of a journal ``store`` with ``client`` (a :class:`~faxws.FaxClient`,
    shared by the workers), each at most once, and tracks them to their outcome.

    Args:
        account: the name the rate limits are kept under in the store (one per service
            account: every batch of it shares them).
        rate: most calls per second (sends, status calls, look-ups), from 0.01 to 1,000, or
            None.
        max_concurrent: most sends in flight for the account (1 or more), or None.
        notify: a :class:`~faxws.Notify` every send asks for (never stored).
        resend: when a fax that failed at the telephone level is sent again.
        lease_seconds: how long a worker's claim lasts without a heartbeat: 1 to 86,400 (a
            day).
        give_up_after: seconds a row may stay submitted (or uncertain) without an outcome
            before it goes to review.
        unreachable_after: seconds every send may fail without reaching the service (refused
            connections, 429) before the run ends with the last such error; the rows stay
            pending, for the next run.
        clock, sleep: the time seams (the store's clock; ``sleep(seconds)``): by default the
            real time and a sleep that a stop cuts short.
    """

    def __init__(
        self,
        store: JournalStore,
        client: Any,
        *,
        account: str = "default",
        rate: float | None = None,
        max_concurrent: int | None = None,
        notify: Notify | None = None,
        resend: ResendPolicy | None = None,
        lease_seconds: float = 60.0,
        give_up_after: float = DEFAULT_GIVE_UP,
        unreachable_after: float = DEFAULT_UNREACHABLE,
        clock: Callable[[], datetime] | None = None,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self.store = store
        self.client = client
        self.account = check_text("account", account, required=True)
        self.rate = None if rate is None else RATE.check("rate", rate)
        self.max_concurrent = (
            None
            if max_concurrent is None
            else int(MAX_CONCURRENT.check("max_concurrent", max_concurrent))
        )
        if notify is not None and not isinstance(notify, Notify):
            raise BadInputError("notify", f"must be a Notify, not {type(notify).__name__}")
        self.notify = notify
        if resend is None:
            resend = ResendPolicy()
        if not isinstance(resend, ResendPolicy):
            raise BadInputError("resend", f"must be a ResendPolicy, not {type(resend).__name__}")
        self.resend = resend
        self.lease_seconds = LEASE_SECONDS.check("lease_seconds", lease_seconds)
        self.give_up_after = _seconds("give_up_after", give_up_after)
        self.unreachable_after = _seconds("unreachable_after", unreachable_after)
        for name, seam in (("clock", clock), ("sleep", sleep)):
            if seam is not None and not callable(seam):
                raise BadInputError(name, "must be callable")
        self._clock = clock or _utc_now
        self._sleep = sleep
        self._lock = threading.Lock()
        # Held from a row's final state to its resend's row, and while a run asks whether
        # anything is left: no run ends between the two.
        self._finishing = threading.Lock()
        self._traceparent_saved = False
        self._trace: tuple[str, Any] | None = None

    def __repr__(self) -> str:
        return f"Batch(account={self.account!r}, rate={self.rate!r})"

    # -- rows ----------------------------------------------------------------------------------

    def add(self, key: str, spec: FaxSpec) -> Row:
        """Add a pending row sending ``spec`` under ``key`` (reads its documents for the
        digest). The same key with the same spec and documents again returns the row as it
        is; with anything else, :class:`~faxws.journal.KeyReusedError`."""
        return self._add(((key, spec),), named=False)[0]

    def add_many(self, items: Iterable[tuple[str, FaxSpec]]) -> list[Row]:
        """:meth:`add` of each ``(key, spec)`` of ``items`` in turn, many rows a transaction
        (far cheaper than an add each); the rows, in order. A row refused raises its error
        naming its key once the rows before it are added; those after it are not."""
        return self._add(items, named=True)

    def _add(self, items: Iterable[tuple[str, FaxSpec]], named: bool) -> list[Row]:
        rows = self.store.add_many(self._payloads(items, named))
        if rows and not self._traceparent_saved:
            # The first row of the journal decides: its batch's attempts link to that span.
            self.store.meta("traceparent", _current_traceparent())
            self._traceparent_saved = True
        return rows

    @staticmethod
    def _payloads(
        items: Iterable[tuple[str, FaxSpec]], named: bool
    ) -> Iterator[tuple[str, str, str]]:
        """Each item's key, digest and payload (its documents read), as the store adds them."""
        for key, spec in items:
            try:
                check_key(key)
                if not isinstance(spec, FaxSpec):
                    raise BadInputError("spec", f"must be a FaxSpec, not {type(spec).__name__}")
                payload = spec.payload()
                digest = payload_digest(payload, spec.files)
                check_added(key, digest, None)  # as the store would, named here or not
                yield key, digest, payload
            except BadInputError as exc:
                if not named:
                    raise
                raise added_by_key(exc, str(key)) from None

    def counts(self) -> dict[State, int]:
        return self.store.counts_by_state()

    def outcomes(self, states: Collection[State] | None = None) -> Iterator[Outcome]:
        """Every row (in ``states``, or all) as an :class:`Outcome`, in the order added."""
        after = 0
        while True:
            rows = self.store.rows(states, after=after, limit=500)
            for row in rows:
                yield _outcome(row)
            if len(rows) < 500:
                return
            after = rows[-1].seq

    def review(self) -> list[Outcome]:
        """The rows that need a person: each one's reason says what is known."""
        return list(self.outcomes({State.NEEDS_REVIEW}))

    def apply(self, notification: DeliveryNotification) -> Outcome | None:
        """Apply a parsed push (:func:`faxws.notifications.parse_notification`) to the row of
        its job id (or ReferenceId); the row's outcome afterwards, or None for a job that is
        not in this journal. A row whose other jobs have not ended is looked up at once. A
        final push that may belong to a row still sending raises JournalError (a receiver
        answers 500, and the service pushes it again)."""
        row = self.store.by_job_id(notification.job_id)
        if row is None and notification.reference_id:
            row = self.store.by_reference(notification.reference_id)
        # A final push may overtake its send's answer: for a row still sending (or a job not
        # recorded while some row is sending) it is asked for again, not dropped.
        if notification.final and (
            (row is not None and row.state is State.SENDING)
            or (row is None and self.store.counts_by_state()[State.SENDING])
        ):
            raise JournalError(
                f"the push for job {notification.job_id} came before its send was recorded"
            )
        if row is None:
            return None
        if notification.final:
            row = self._pushed(row, notification)
        return _outcome(row)

    def _pushed(self, row: Row, event: DeliveryNotification) -> Row:
        now = self._clock()
        single = len(_numbers(row.payload)) == 1
        try:
            if row.state is State.UNCERTAIN:
                # The push proves the send reached the service.
                row = self.store.resolve_uncertain(row.key, (event.job_id,) if single else (), now)
            if row.state is State.SUBMITTED:
                if row.job_ids == (event.job_id,) or (not row.job_ids and single):
                    _Tracker(self).finish(row, [event])
                else:
                    self.store.schedule([row.key], now)  # the other jobs are asked at once
        except (IllegalTransitionError, LeaseLostError):
            pass  # a worker moved it meanwhile
        return self.store.get(row.key) or row

    # -- running -------------------------------------------------------------------------------

    def run(
        self,
        workers: int = 1,
        stop: Stop | None = None,
        on_progress: Progress | None = None,
        wait: bool = True,
    ) -> RunSummary:
        """Send the journal's pending rows with ``workers`` threads (1 to 1,024); with
        ``wait``, track them until none is pending, claimed, sending, uncertain or submitted;
        without, until
        every row is sent and the uncertain ones looked up. ``stop`` ends the run early (calls
        in flight finish and are recorded); ``on_progress(counts)`` is called from this
        thread after changes, at most about ten times a second. A worker's failure ends the
        run and is raised (an AuthenticationError as it is, anything else as a FaxWSError)
        once the other workers have stopped."""
        WORKERS.check("workers", workers)
        if stop is None:
            stop = Stop()
        if not isinstance(stop, Stop):
            raise BadInputError("stop", f"must be a Stop, not {type(stop).__name__}")
        if on_progress is not None and not callable(on_progress):
            raise BadInputError("on_progress", "must be callable")
        return _Run(self, workers, stop, on_progress, bool(wait)).execute()

    # -- tracing -------------------------------------------------------------------------------

    def _trace_context(self) -> tuple[str, Any]:
        """The batch id and the span context a send attempt links to (None without one)."""
        with self._lock:
            if self._trace is None:
                batch_id = self.store.meta("batch_id", uuid.uuid4().hex)
                parent = self.store.meta("traceparent", "")
                self._trace = (batch_id, _span_context(parent))
            return self._trace


def _current_traceparent() -> str:
    """The W3C traceparent of the recording span now current, or ``""``."""
    if _telemetry._get_tracer() is None:
        return ""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not trace.get_current_span().is_recording():
        return ""
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent", "")


def _span_context(traceparent: str) -> Any:
    if not traceparent or _telemetry._get_tracer() is None:
        return None
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    found = trace.get_current_span(context).get_span_context()
    return found if found.is_valid else None


class _Failure:
    """The first unexpected failure of a run, raised once every thread has stopped."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self._lock = threading.Lock()

    def set(self, error: BaseException) -> None:
        with self._lock:
            if self.error is None:
                self.error = error


class _Run:
    """One :meth:`Batch.run`: its workers, the thread keeping their leases, and what they
    share (the owner name of their claims, the rows held, the wake-up times)."""

    def __init__(
        self, batch: Batch, workers: int, stop: Stop, on_progress: Progress | None, wait: bool
    ) -> None:
        self.batch = batch
        self.store = batch.store
        self.workers = workers
        self.stop = stop
        self.on_progress = on_progress
        self.wait = wait
        self.owner = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"
        self.halt = threading.Event()
        #: Every worker has stopped: the keeper stops too (not at the halt: sends still in
        #: flight then keep their leases until they are recorded).
        self.ended = threading.Event()
        self.changed = threading.Event()
        self.failure = _Failure()
        self.tracker = _Tracker(batch, self)
        self._held: dict[str, bool] = {}  # key -> holds a send slot
        #: When the sends of this run began to fail without reaching the service (None: the
        #: last one reached it).
        self.unreachable_since: datetime | None = None
        self._wakes: list[datetime] = []  # a heap
        self._lock = threading.Lock()
        self._track_lock = threading.Lock()

    # -- the run's own thread ------------------------------------------------------------------

    def execute(self) -> RunSummary:
        if self.store.recover():
            self.changed.set()
        threads = [
            threading.Thread(target=self._worker, name=f"faxws-batch-worker-{n}", daemon=True)
            for n in range(self.workers)
        ]
        keeper = threading.Thread(target=self._keeper, name="faxws-batch-leases", daemon=True)
        for thread in (*threads, keeper):
            thread.start()
        try:
            self._watch(threads)
        except BaseException as exc:  # on_progress's, or an interrupt of this thread
            self.failure.set(exc)
        finally:
            self.halt.set()
            for thread in threads:
                thread.join()
            self.ended.set()
            keeper.join()
        if self.failure.error is not None:
            raise self.failure.error
        counts = self.store.counts_by_state()
        return RunSummary(counts=counts, stopped=self.stop.requested)

    def _watch(self, threads: list[threading.Thread]) -> None:
        last = -math.inf
        dirty = True
        while True:
            if self.stop.requested:
                self.halt.set()
            alive = any(t.is_alive() for t in threads)
            if self.changed.is_set():
                self.changed.clear()
                dirty = True
            due = not alive or time.monotonic() - last >= PROGRESS_EVERY
            if dirty and due and self.on_progress is not None and self.failure.error is None:
                self.on_progress(self.store.counts_by_state())
                last, dirty = time.monotonic(), False
            if not alive:
                return
            self.changed.wait(PROGRESS_EVERY)

    # -- shared by the workers -----------------------------------------------------------------

    @property
    def halted(self) -> bool:
        return self.halt.is_set() or self.stop.requested

    def fail(self, error: BaseException) -> None:
        if not isinstance(error, FaxWSError):
            wrapped = FaxWSError(f"a batch worker stopped on an unexpected {type(error).__name__}")
            wrapped.__cause__ = error
            error = wrapped
        self.failure.set(error)
        self.halt.set()
        self.changed.set()

    def moved(self) -> None:
        """A row moved: the watcher reports it to on_progress (without one, nothing is woken
        for it)."""
        if self.on_progress is not None:
            self.changed.set()

    def pause(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self.batch._sleep is not None:
            self.batch._sleep(seconds)
        else:
            self.halt.wait(seconds)

    def now(self) -> datetime:
        return self.batch._clock()

    def wake_at(self, at: datetime) -> None:
        """Remember that a row of this run is next due at ``at`` (an idle worker wakes then)."""
        with self._lock:
            heapq.heappush(self._wakes, at)

    def idle(self) -> None:
        now = self.now()
        with self._lock:
            while self._wakes and self._wakes[0] <= now:
                heapq.heappop(self._wakes)
            soonest = self._wakes[0] if self._wakes else None
        delay = MAX_IDLE if soonest is None else (soonest - now).total_seconds()
        self.pause(min(max(delay, MIN_IDLE), MAX_IDLE))

    def call_slot(self) -> bool:
        """Wait for the account's next call slot; False if the run was halted meanwhile."""
        rate = self.batch.rate
        if rate is None:
            return not self.halted
        at = self.store.next_call_at(self.batch.account, 1.0 / rate)
        while (delay := (at - self.now()).total_seconds()) > 0:
            if self.halted:
                return False
            self.pause(delay)
        return not self.halted

    def hold(self, key: str, slot: bool = False) -> None:
        with self._lock:
            self._held[key] = slot

    def drop(self, key: str) -> None:
        with self._lock:
            self._held.pop(key, None)

    def finished(self) -> bool:
        with self.batch._finishing:
            counts = self.store.counts_by_state()
        active = _TRACKING if self.wait else _SENDING
        return not any(counts.get(state, 0) for state in active)

    # -- the threads ---------------------------------------------------------------------------

    def _worker(self) -> None:
        try:
            _Worker(self).work()
        except BaseException as exc:
            self.fail(exc)
        finally:
            self.changed.set()

    def _keeper(self) -> None:
        """Extends the leases (and send slots) of the rows this run holds until its last
        worker stopped (a stopped run's sends in flight may outlast a lease), and returns rows
        whose holders died to the others (every half lease)."""
        lease = self.batch.lease_seconds
        next_recover = time.monotonic() + lease / 2
        try:
            while not self.ended.wait(lease / 3):
                with self._lock:
                    held = list(self._held.items())
                for key, slot in held:
                    with contextlib.suppress(LeaseLostError, IllegalTransitionError):
                        self.store.heartbeat(key, self.owner, lease)
                    if slot:
                        self.renew_slot(key, lease)
                if time.monotonic() >= next_recover:
                    next_recover = time.monotonic() + lease / 2
                    if self.store.recover():
                        self.changed.set()
        except BaseException as exc:
            self.fail(exc)

    def renew_slot(self, key: str, lease: float) -> None:
        """Renew row ``key``'s send slot if it still holds it: its worker gives it back under
        the same lock, so a slot given back is never taken again here."""
        with self._lock:
            if self._held.get(key):
                self.store.acquire_send_slot(
                    self.batch.account, key, self.batch.max_concurrent or 1, lease
                )

    def give_back_slot(self, key: str) -> None:
        """Give back row ``key``'s send slot; the row's lease is still kept."""
        with self._lock:
            self.store.release_send_slot(self.batch.account, key)
            if key in self._held:
                self._held[key] = False

    def look_up_and_track(self) -> bool:
        """One pass over the rows due for a look-up (and, when waiting, for tracking)."""
        did = self.tracker.look_up()
        if self.wait and not self.halted and self._track_lock.acquire(blocking=False):
            try:
                did = self.tracker.track() or did
            finally:
                self._track_lock.release()
        return did


class _Worker:
    """One worker thread's loop: look-ups and tracking when due, else the next send."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.batch = run.batch
        self.store = run.store
        self.backoff = 0.0
        self.released = False
        #: Seconds a send takes here (a moving average; None before the first).
        self.per_send: float | None = None
        #: The last send's answer, not yet recorded (with the next row's start mark, or on its
        #: own as the claim ends or before a wait): (row, result, first look-up).
        self.answered: tuple[Row, SendFaxResult, datetime] | None = None

    def work(self) -> None:
        run = self.run
        last_look: datetime | None = None
        sent = False
        while not run.halted:
            did = False
            now = run.now()
            if (
                not sent
                or last_look is None
                or (now - last_look).total_seconds() >= POLL_WHILE_SENDING
            ):
                last_look = now
                did = run.look_up_and_track()
            if run.halted:
                return
            sent = self.send_some()
            if sent or did:
                run.moved()
                if self.released:  # nothing reached the service: wait before the next try
                    self.released = False
                    run.pause(self.backoff)
            elif run.finished():
                run.halt.set()
                return
            else:
                run.idle()

    def claim_size(self) -> int:
        """How many rows to claim: as many as this worker sends in about CLAIM_SECONDS."""
        per_send = self.per_send
        if per_send is None:
            return 1
        return max(1, min(MAX_CLAIM, int(CLAIM_SECONDS / max(per_send, 1e-6))))

    def send_some(self) -> bool:
        """Claim rows and send them; False when none was pending."""
        run = self.run
        if run.halted:
            return False
        rows = self.store.claim(run.owner, self.batch.lease_seconds, self.claim_size())
        if not rows:
            return False
        for row in rows:
            run.hold(row.key)
        try:
            self.send(rows)
        finally:
            for row in rows:
                run.drop(row.key)
        return True

    def send(self, rows: list[Row]) -> None:
        """Check the rows' documents, move those that may go to SENDING in one synced commit,
        then send them one by one, each marked started first (with the answer of the send
        before); rows not started when the run halts go back to PENDING."""
        run, batch = self.run, self.batch
        ready: dict[str, FaxSpec] = {}
        for row in rows:
            try:
                spec = FaxSpec.from_payload(row.payload)
                unchanged = self.unchanged(spec, row)
            except BadInputError as exc:
                self.review(row, f"not sent: {exc}")
                continue
            if not unchanged:
                self.review(row, self.changed_text(spec))
                continue
            ready[row.key] = spec
        if not ready:
            return
        began = time.perf_counter()
        # rows left out lost their claim meanwhile: another worker has them
        moved = set(self.store.mark_sending_many(list(ready), run.owner, batch.lease_seconds))
        queue = [row for row in rows if row.key in moved]
        # rows of the queue dealt with; those after it may not have started (the store releases
        # only those that did not: a start is the store's fact, not this loop's)
        done = 0
        try:
            for row in queue:
                if run.halted or self.released:
                    break
                if time.perf_counter() - began > HOLD_SECONDS and done:
                    break  # the sends got slower: the rest go back to the other workers
                sent = time.perf_counter()
                if not self.send_row(row, ready[row.key]):
                    break
                done += 1
                run.moved()
                took = time.perf_counter() - sent
                self.per_send = took if self.per_send is None else 0.8 * self.per_send + 0.2 * took
        except BaseException:
            self.finish_claim(queue[done:], quiet=True)
            raise
        self.finish_claim(queue[done:], quiet=False)

    def finish_claim(self, rest: list[Row], *, quiet: bool) -> None:
        """Record the last answer and release those of ``rest`` never started. ``quiet`` while
        the store's failure (or the service's refusal) is on its way to the caller: what this
        cannot record is looked up, what it cannot release is recovered (never started)."""
        guard: contextlib.AbstractContextManager[object] = (
            contextlib.suppress(Exception) if quiet else contextlib.nullcontext()
        )
        try:
            with guard:
                self.flush()
        finally:
            with guard:
                self.release_rest(rest)

    def release_rest(self, rest: list[Row]) -> None:
        """Release those of ``rest`` never started: nothing of them was sent."""
        if rest:
            self.store.release_unstarted([row.key for row in rest], self.run.owner)

    def send_row(self, row: Row, spec: FaxSpec) -> bool:
        """Send one row of this worker's SENDING rows, once it has the account's slots and its
        documents are still what it was added with; False (the row not started) when the run
        halted meanwhile."""
        run, batch = self.run, self.batch
        limited = batch.max_concurrent is not None or batch.rate is not None
        if limited:
            self.flush()  # a wait for a slot must not hold back the answer before
        slot = False
        try:
            if batch.max_concurrent is not None:
                while not self.store.acquire_send_slot(
                    batch.account, row.key, batch.max_concurrent, batch.lease_seconds
                ):
                    if run.halted:
                        return False
                    run.pause(SLOT_POLL)
                slot = True
                run.hold(row.key, slot=True)
            if not run.call_slot():
                return False
            # checked again at the last moment: a document changed since the claim's check
            # is never sent (the row goes back, and the next claim sends it to review)
            try:
                opened = self.documents(spec, row)
            except BadInputError:
                opened = None
            if opened is None:
                self.release_rest([row])
                return True
            try:
                if self.start(row):
                    self.attempt(row, spec, opened.fax_files())
                    changed = opened.changed()
                    if changed:
                        self.changed_while_sent(row, changed)
            finally:
                opened.close()
            return True
        finally:
            if slot:
                run.give_back_slot(row.key)

    def start(self, row: Row) -> bool:
        """Mark ``row`` started, recording the answer of the send before in the same commit;
        False when the row is no longer this worker's."""
        answered, self.answered = self.answered, None
        submission = None
        if answered is not None:
            done, result, check_at = answered
            submission = Submission(done.key, tuple(result.job_ids), check_at)
        try:
            self.store.start_send(row.key, self.run.owner, submission)
        except (LeaseLostError, IllegalTransitionError, UnknownKeyError) as exc:
            if answered is None or exc.key != answered[0].key:
                if answered is not None:  # recorded all the same
                    self.run.wake_at(answered[2])
                return False  # the lease ran out and another worker has the row
            self.submitted(*answered)  # that answer's move refused: settled on its own
            return self.start(row)
        except BaseException:
            self.answered = answered  # not recorded (or not known to be): the flush tries
            raise
        if answered is not None:
            self.run.wake_at(answered[2])
        return True

    def flush(self) -> None:
        """Record the answer not yet recorded, if any."""
        answered, self.answered = self.answered, None
        if answered is not None:
            self.submitted(*answered)

    @staticmethod
    def unchanged(spec: FaxSpec, row: Row) -> bool:
        """Whether the row's documents are what it was added with (BadInputError naming one
        that cannot be read)."""
        return payload_digest(row.payload, spec.files) == row.payload_sha256

    @staticmethod
    def documents(spec: FaxSpec, row: Row) -> OpenDocuments | None:
        """The documents to send, open (sent from the files checked), or None when they are
        not what the row was added with."""
        opened = spec.open_documents()
        if opened.digest(row.payload) == row.payload_sha256:
            return opened
        opened.close()
        return None

    def changed_while_sent(self, row: Row, paths: list[str]) -> None:
        """A document was written to between its check and the end of its send: the fax may
        carry what was written. Sent all the same, its row goes to review saying so."""
        self.flush()
        what = "the document" if len(paths) == 1 else "the documents"
        self.review(
            row,
            f"{what} {', '.join(paths)} changed while its send was under way: what the"
            " service got may be the changed content (a key never sends another document);"
            " check it",
        )

    @staticmethod
    def changed_text(spec: FaxSpec) -> str:
        paths = [f.path for f in spec.files]
        if len(paths) == 1:
            what = f"the document {paths[0]} changed"
        else:
            what = f"one of the documents {', '.join(paths)} changed"
        return f"not sent: {what} since the row was added (a key never sends another document)"

    def attempt(self, row: Row, spec: FaxSpec, files: list[FaxFile]) -> None:
        """The send itself, with what it proved recorded."""
        options = dataclasses.replace(
            spec.options, reference_id=row.reference_id, notify=self.batch.notify
        )
        with self.span(row) as span:
            try:
                result = self.batch.client.send_fax(list(spec.recipients), files, options=options)
            except AuthenticationError:
                self.release(row, "the service refused the credentials")
                _outcome_on(span, "released", "AuthenticationError")
                raise
            except FaxWSError as exc:
                _outcome_on(span, self.failed(row, exc), type(exc).__name__)
                return
            except Exception as exc:
                self.uncertain(row, f"the send ended with an unexpected {type(exc).__name__}")
                _outcome_on(span, "uncertain", type(exc).__name__)
                return
            self.backoff = 0.0
            self.run.unreachable_since = None
            # recorded with the next row's start mark, or on its own (flush)
            check_at = _aligned(self.run.now(), _first_look(result.ttfp))
            self.answered = (row, result, check_at)
            _outcome_on(span, "submitted", None)

    def failed(self, row: Row, exc: FaxWSError) -> str:
        """Record a send that raised ``exc``; what the row became."""
        text = self.text(exc)
        if exc.maybe_delivered:
            self.run.unreachable_since = None
            self.uncertain(row, text)
            return "uncertain"
        if isinstance(exc, TransportError) or (
            isinstance(exc, HTTPStatusError) and exc.status_code == 429
        ):
            # Nothing reached the service (or it asked to be called later): the row may go
            # again, after a pause of this worker; the run ends if none has gone for long.
            self.release(row, text)
            self.backoff = min(max(self.backoff * 2, FIRST_BACKOFF), MAX_INTERVAL)
            self.released = True
            now = self.run.now()
            since = self.run.unreachable_since
            if since is None:
                self.run.unreachable_since = now
            elif (now - since).total_seconds() >= self.batch.unreachable_after:
                raise exc
            return "released"
        if isinstance(exc, HTTPStatusError):
            # An HTTP refusal without a SOAP answer (404, 405, 400...) is about the endpoint
            # or the account, not this fax: the row waits for a run that can reach it.
            self.release(row, text)
            raise exc
        with contextlib.suppress(LeaseLostError, IllegalTransitionError):
            self.store.mark_failed(row.key, self.run.owner, text)
        return "failed"

    def text(self, exc: FaxWSError) -> str:
        # The client masks its own secrets and the call's; the notify password again here,
        # whatever the error's text quotes.
        notify = self.batch.notify
        return redact(str(exc), [notify.password] if notify is not None else [])

    def submitted(self, row: Row, result: SendFaxResult, check_at: datetime) -> None:
        run = self.run
        try:
            self.store.mark_submitted(row.key, run.owner, result.job_ids, check_at)
        except (LeaseLostError, IllegalTransitionError):
            # The lease ran out during the send and the row was made uncertain: the answer
            # settles it.
            current = self.store.get(row.key)
            if current is None:
                raise
            if current.state is State.NEEDS_REVIEW and not current.job_ids:
                # Looked up in vain while this send was on its way (its worker stalled past
                # the lease): the answer is the fact a person needs, or they may send again.
                ids = ", ".join(result.job_ids) or "no job id"
                self.store.record_late_answer(
                    row.key,
                    result.job_ids,
                    f"sent: the service accepted it ({ids}) after it was put in review"
                    f" ({current.reason}); do not send it again",
                )
                logger.warning(
                    "journal row %s in review was sent after all (%s)", row.reference_id, ids
                )
                return
            if current.state is not State.UNCERTAIN:
                # Another worker already settled it by its ReferenceId (the send is one, its
                # fax tracked by that reference): nothing to undo, nothing to send.
                logger.info(
                    "journal row %s was settled (%s) before its send's answer came",
                    row.reference_id,
                    current.state.value,
                )
                return
            self.store.resolve_uncertain(row.key, result.job_ids, check_at)
        run.wake_at(check_at)

    def uncertain(self, row: Row, reason: str) -> None:
        check_at = self.run.now() + timedelta(seconds=LOOKUP_DELAY)
        with contextlib.suppress(LeaseLostError, IllegalTransitionError):
            self.store.mark_uncertain(row.key, self.run.owner, reason, check_at)
        self.run.wake_at(check_at)

    def release(self, row: Row, reason: str | None) -> None:
        with contextlib.suppress(LeaseLostError, IllegalTransitionError):
            self.store.release(row.key, self.run.owner, reason)

    def review(self, row: Row, reason: str) -> None:
        with contextlib.suppress(IllegalTransitionError):
            self.store.mark_needs_review(row.key, reason)

    @contextlib.contextmanager
    def span(self, row: Row) -> Iterator[Any]:
        """The span of one send attempt (when opentelemetry is installed), linked to the
        span the journal's first row was added under; the client's span nests in it."""
        tracer = _telemetry._get_tracer()
        if tracer is None:
            yield None
            return
        from opentelemetry.trace import Link, SpanKind

        batch_id, parent = self.batch._trace_context()
        attributes = {
            "faxws.reference_id": row.reference_id,
            "faxws.attempt": row.attempt,
            "faxws.batch_id": batch_id,
        }
        with tracer.start_as_current_span(
            "faxws.journal.send",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=[Link(parent)] if parent is not None else [],
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span


def _outcome_on(span: Any, outcome: str, error: str | None) -> None:
    if span is None or not span.is_recording():
        return
    span.set_attribute("faxws.journal.outcome", outcome)
    if error is not None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error)
        if outcome != "submitted":
            span.set_status(Status(StatusCode.ERROR, error))


class _Tracker:
    """Look-ups of uncertain rows and tracking of submitted ones (with a run), and the
    recording of a row's final statuses (pushes too)."""

    def __init__(self, batch: Batch, run: _Run | None = None) -> None:
        self.batch = batch
        self.store = batch.store
        self.run = run

    def now(self) -> datetime:
        return self.batch._clock()

    def schedule(self, keys: Sequence[str], at: datetime) -> None:
        if keys:
            self.store.schedule(keys, at)
            if self.run is not None:
                self.run.wake_at(at)

    def given_up(self, row: Row, now: datetime) -> bool:
        # updated_at is when the row was submitted (or made uncertain); the rounds counted
        # bound it from below should a store move updated_at when it schedules.
        waited = max((now - row.updated_at).total_seconds(), _tracked_for(row.checks))
        return waited >= self.batch.give_up_after

    # -- uncertain rows ------------------------------------------------------------------------

    def look_up(self) -> bool:
        run = self.run
        assert run is not None
        rows = self.store.due(State.UNCERTAIN, self.batch.lease_seconds, LOOKUP_BATCH)
        for row in rows:
            if run.halted or not run.call_slot():
                break
            self.look_up_one(row)
        return bool(rows)

    def look_up_one(self, row: Row) -> None:
        reference = f"{vendor.REFERENCE_PREFIX}{row.reference_id}"
        try:
            found = self.batch.client.get_status_by_reference(row.reference_id)
        except AuthenticationError:
            raise
        except FaxWSError as exc:
            logger.warning("journal look-up of %s failed: %s", reference, type(exc).__name__)
            found = None
        now = self.now()
        known = f" ({row.reason})" if row.reason else ""
        with contextlib.suppress(IllegalTransitionError):
            if found is not None and found.found:
                final = found.status is not None and found.status.final
                at = None if final else _aligned(now, MIN_INTERVAL)
                resolved = self.store.resolve_uncertain(row.key, (), at)
                if final:
                    self.finish_by_reference(resolved, found.status)
                elif at is not None and self.run is not None:
                    self.run.wake_at(at)
            elif found is not None and row.checks + 1 >= LOOKUPS:
                self.store.mark_needs_review(
                    row.key,
                    f"the service has no job with reference {reference}; it may or may not have "
                    f"been sent{known}",
                )
            elif self.given_up(row, now):
                self.store.mark_needs_review(
                    row.key,
                    f"the job with reference {reference} could not be looked up for "
                    f"{self.batch.give_up_after:g} s; it may or may not have been sent{known}",
                )
            else:
                delay = min(LOOKUP_DELAY * 2 ** min(row.checks + 1, 16), MAX_INTERVAL)
                self.schedule([row.key], now + timedelta(seconds=delay))

    # -- submitted rows ------------------------------------------------------------------------

    def track(self) -> bool:
        """Poll the submitted rows that are due, in calls of up to TRACK_BATCH job ids."""
        run = self.run
        assert run is not None
        did = False
        while not run.halted:
            rows = self.store.due(State.SUBMITTED, self.batch.lease_seconds, TRACK_BATCH)
            if not rows:
                break
            did = True
            self.track_rows(rows)
            if len(rows) < TRACK_BATCH:
                break
        return did

    def track_rows(self, rows: list[Row]) -> None:
        run = self.run
        assert run is not None
        statuses = self.statuses([job_id for row in rows for job_id in row.job_ids])
        later: dict[datetime, list[str]] = {}
        now = self.now()
        for row in rows:
            with contextlib.suppress(IllegalTransitionError):
                if row.job_ids:
                    found = [statuses.get(job_id) for job_id in row.job_ids]
                    other = self.not_this_rows(row, found)
                    if other is not None:
                        self.store.mark_needs_review(row.key, other)
                        continue
                    if all(s is not None and s.final for s in found):
                        self.finish(row, [s for s in found if s is not None])
                        continue
                else:
                    if not run.call_slot():
                        continue  # halted: due again after the lease
                    status = self.reference_status(row)
                    if status is not None and status.final:
                        self.finish_by_reference(row, status)
                        continue
                if self.given_up(row, now):
                    self.store.mark_needs_review(row.key, self.no_outcome(row))
                else:
                    at = _aligned(now, _interval(row.checks))
                    later.setdefault(at, []).append(row.key)
        for at, keys in later.items():
            self.schedule(keys, at)

    @staticmethod
    def not_this_rows(row: Row, found: list[RealTimeFaxStatus | None]) -> str | None:
        """Why the jobs recorded are not the row's send, or None: a status naming another
        ReferenceId means the send's answer belonged to another request."""
        mine = _plain_reference(row.reference_id)
        for status in found:
            if status is not None and _plain_reference(status.reference_id) not in ("", mine):
                return (
                    f"the service reports job {status.job_id} under reference "
                    f"{status.reference_id}, not this row's {row.reference_id}: the send's "
                    "answer was another request's; the fax may or may not have been sent"
                )
        return None

    def statuses(self, ids: list[str]) -> dict[str, RealTimeFaxStatus]:
        """The status of each job id that a call answered for (no call starts once the run
        is halted: the answers so far are recorded)."""
        run = self.run
        assert run is not None
        statuses: dict[str, RealTimeFaxStatus] = {}
        for start in range(0, len(ids), TRACK_BATCH):
            if not run.call_slot():
                break
            chunk = ids[start : start + TRACK_BATCH]
            try:
                answered = self.batch.client.get_real_time_fax_status(chunk, batch_size=TRACK_BATCH)
            except AuthenticationError:
                raise
            except FaxWSError as exc:
                logger.warning("journal status call failed: %s", type(exc).__name__)
                continue
            statuses.update((s.job_id, s) for s in answered)
        return statuses

    def reference_status(self, row: Row) -> JobStatus | None:
        try:
            found = self.batch.client.get_status_by_reference(row.reference_id)
        except AuthenticationError:
            raise
        except FaxWSError as exc:
            logger.warning(
                "journal look-up of reference %s failed: %s", row.reference_id, type(exc).__name__
            )
            return None
        return found.status if found.found else None

    def no_outcome(self, row: Row) -> str:
        jobs = ", ".join(row.job_ids) or f"reference {vendor.REFERENCE_PREFIX}{row.reference_id}"
        return (
            f"no final status after {self.batch.give_up_after:g} s ({jobs}); the fax may still "
            "be delivered"
        )

    # -- final statuses ------------------------------------------------------------------------

    def finish(self, row: Row, statuses: Sequence[_Final]) -> None:
        """Record the final statuses of every job of ``row`` (SUBMITTED)."""
        with self.batch._finishing:
            self._finish(row, statuses)

    def _finish(self, row: Row, statuses: Sequence[_Final]) -> None:
        failed = [s for s in statuses if s.status is not JobStatus.SUCCEEDED]
        if not failed:
            self.store.mark_final(row.key, State.DELIVERED)
            return
        cancelled = [s for s in failed if s.description == vendor.CANCELLED_DESCRIPTION]
        if len(cancelled) == len(statuses):
            self.store.mark_final(row.key, State.CANCELLED, "cancelled")
            return
        reason = "; ".join(f"job {s.job_id}: {s.description or 'failed'}" for s in failed)
        delivered = len(statuses) - len(failed)
        if delivered:
            reason = f"delivered to {delivered} of {len(statuses)} recipients; {reason}"
        self.store.mark_final(row.key, State.FAILED, reason)
        telephone = not delivered and not any(s.description in _NOT_TELEPHONE for s in failed)
        self.resend_if_allowed(row, telephone)

    def finish_by_reference(self, row: Row, status: JobStatus | None) -> None:
        """Record the one status a ReferenceId look-up gives for every job of ``row``. It
        does not tell a telephone failure from a cancel or an expiry: never sent again."""
        reference = f"{vendor.REFERENCE_PREFIX}{row.reference_id}"
        if status is JobStatus.SUCCEEDED:
            self.store.mark_final(row.key, State.DELIVERED)
        else:
            self.store.mark_final(
                row.key, State.FAILED, f"the service reports {reference} failed (status 2)"
            )

    def resend_if_allowed(self, row: Row, telephone: bool) -> None:
        if telephone and resend_number(row) < self.batch.resend.max_resends:
            with contextlib.suppress(JournalError):
                self.store.add_resend(row.key)
                if self.run is not None:
                    self.run.changed.set()
