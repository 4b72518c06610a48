"""What the simulator holds: the accounts and the tokens it issued, the requests it received
(bodies within a budget), the jobs it accepted and their documents, what changed for each
recipient's job since (its track: plan, cancel, push), the pending faults.

Every lookup a call makes is by key (job id, user and ReferenceId, token), so a call costs the
same with many jobs as with few; the lock is held only for those lookups and for changes.
"""

from __future__ import annotations

import base64
import contextlib
import io
import itertools
import math
import re
import secrets
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from faxws._protocol import assumptions as vendor
from faxws._protocol.redact import MASK
from faxws.bindings import SendFax, SendFaxEx, WSError
from faxws.testing._accounts import PUBLIC, Account, same
from faxws.testing._documents import Document
from faxws.testing._durable import JobStore, StoreError
from faxws.testing._faults import Faults
from faxws.testing._life import Plan, plan_for_number
from faxws.testing._pages import count_pages
from faxws.testing._progress import JobProgress, PushRecord, Track, progress
from faxws.testing._pushes import first_push
from faxws.testing._records import ReceivedFile, ReceivedRequest, SimulatedJob

__all__ = [
    "DOCUMENT_MEMORY",
    "INVALID_JOB_ID",
    "MAX_JOBS",
    "MAX_REQUESTS",
    "NO_ERROR",
    "State",
    "StoreError",
    "forget_files",
]


#: Small documents stay in memory while all of them together fit in this; beyond it, they go
#: to disk too.
DOCUMENT_MEMORY = 16 * 1024 * 1024
#: Records kept by default: beyond these, the oldest requests and jobs are forgotten.
MAX_REQUESTS = 100_000
MAX_JOBS = 100_000

NO_ERROR = WSError(0, "")
INVALID_JOB_ID = WSError(vendor.JOB_NOT_FOUND, vendor.JOB_NOT_FOUND_TEXT)
_JOB_ENDED = WSError(vendor.JOB_ENDED, vendor.JOB_ENDED_TEXT)


def _nothing() -> None:
    pass


class State:
    """The simulator's state, safe to use from every connection's thread."""

    def __init__(
        self,
        accounts: tuple[Account, ...],
        retained_body_bytes: int,
        max_requests: int = MAX_REQUESTS,
        max_jobs: int = MAX_JOBS,
        *,
        clock: Callable[[], float] = time.time,
        time_scale: float = 4.0,
    ) -> None:
        self.accounts = accounts
        self.retained_body_bytes = retained_body_bytes
        self.max_requests = max_requests
        self.max_jobs = max_jobs
        self.lock = threading.Lock()
        # Notified at every change (see version), and at stop: the API's ?min= and the
        # event stream wait on it.
        self.changed = threading.Condition(self.lock)
        #: Counted up by every change anything shows: a request, a job, a recipient's track,
        #: a pending fault, a reset, the manual clock moving on.
        self.version = 0
        #: Tells this simulator's versions from another's (one started after it, say).
        self.instance = secrets.token_hex(4)
        self.stopping = False
        self.faults = Faults(self.touch)
        self.issued: dict[str, tuple[str, float]] = {}  # token -> (user id, expiry)
        # The accounts and extra secrets _account_secrets and _known were found for.
        self._secrets_for: tuple[tuple[Account, ...], frozenset[str]] | None = None
        self._known: frozenset[str] = frozenset()
        #: Secrets that are not an account's (the API token).
        self.extra_secrets: frozenset[str] = frozenset()
        self._account_secrets: frozenset[str] = frozenset()
        self.requests: deque[ReceivedRequest] = deque()  # the records, oldest first
        self.jobs: deque[SimulatedJob] = deque()
        self.by_job_id: dict[str, SimulatedJob] = {}
        self.by_id: dict[str, SimulatedJob] = {}
        self.clock = clock
        self.time_scale = time_scale
        # What changed for each recipient's job since its submission, by job id; the job ids
        # under each (user id, ReferenceId), oldest first; the job ids whose push is pending.
        self.tracks: dict[str, Track] = {}
        self.by_reference: dict[tuple[str, str], list[str]] = {}
        self.pending_pushes: set[str] = set()
        #: Called, outside the lock, when a push may be due sooner (set by the simulator).
        self.on_change: Callable[[], None] = _nothing
        self.connections = 0
        self.token_requests = 0
        self._retained: deque[int] = deque()  # numbers of the requests that hold a body
        # The number of requests[0]: older records were forgotten. Numbers are never reused,
        # so that a link to a request shows that one or none.
        self._first = 1
        self._retained_bytes = 0
        self._document_bytes = 0  # of documents kept in memory
        self._job_counter = 0
        self._last_id = 0  # job numbers are never reused, whatever was pruned or reset
        self.store: JobStore | None = None
        self._generation = 0  # of the records, counted up by reset()

    def touch(self) -> None:
        """Tell whoever waits for changes that something changed."""
        with self.lock:
            self._touched()

    def _touched(self) -> None:
        """Under the lock."""
        self.version += 1
        self.changed.notify_all()

    def reset(self) -> list[SimulatedJob]:
        """Forget requests, jobs, counters and pending faults; the jobs forgotten."""
        with self.lock:
            self._forget_requests()
            forgotten = self._forget_jobs()
            self.connections = 0
            self.token_requests = 0
        self.faults.clear()
        return forgotten

    def clear_jobs(self) -> list[SimulatedJob]:
        """Forget every job (their job ids are given out again from the first); the jobs
        forgotten, whose files the caller removes."""
        with self.lock:
            return self._forget_jobs()

    def clear_requests(self) -> int:
        """Forget every request record; how many there were."""
        with self.lock:
            return self._forget_requests()

    def _forget_jobs(self) -> list[SimulatedJob]:
        """Under the lock."""
        forgotten = list(self.jobs)
        self.jobs = deque()
        self.by_job_id = {}
        self.by_id = {}
        self.tracks = {}
        self.by_reference = {}
        self.pending_pushes = set()
        self._document_bytes = 0
        self._job_counter = 0
        if self.store is not None:
            self.store.clear(self._counters())
        self._touched()
        return forgotten

    def _forget_requests(self) -> int:
        """Under the lock."""
        count = len(self.requests)
        self._generation += 1
        self._first += count
        self.requests = deque()
        self._retained = deque()
        self._retained_bytes = 0
        self._touched()
        return count

    def delete_job(self, number: str) -> SimulatedJob | None:
        """Forget the job numbered ``number`` (its job ids are then unknown to every
        operation); the job, whose files the caller removes, or None if there is none."""
        with self.lock:
            job = self.by_id.get(number)
            if job is None:
                return None
            if self.store is not None:
                self.store.remove([job])
            self.jobs.remove(job)  # a walk, but only here: no operation deletes a job
            self._unindex(job)
            self._touched()
        return job

    # -- requests --

    def record(self, request: ReceivedRequest) -> tuple[int, int]:
        """Keep ``request``; the ticket that :meth:`settle` takes to complete its record."""
        with self.lock:
            self.requests.append(request)
            number = self._first + len(self.requests) - 1
            if request.body:
                self._retained.append(number)
                self._retained_bytes += len(request.body)
                while self._retained_bytes > self.retained_body_bytes:
                    self._drop_body(self._retained.popleft())
            while len(self.requests) > self.max_requests:
                if self._retained and self._retained[0] == self._first:
                    self._drop_body(self._retained.popleft())
                self.requests.popleft()
                self._first += 1
            self._touched()
            return self._generation, number

    def _drop_body(self, number: int) -> None:
        index = number - self._first
        old = self.requests[index]
        self._retained_bytes -= len(old.body)
        self.requests[index] = replace(old, body=b"", body_retained=False)

    def records(self) -> list[ReceivedRequest]:
        """The records, oldest first (a copy). Under the lock."""
        return list(self.requests)

    def settle(
        self,
        ticket: tuple[int, int],
        *,
        status: int | None = None,
        refusal: str | None = None,
        fault: str | None = None,
    ) -> None:
        """Add how a recorded request was answered (the values given), unless the record
        was forgotten in between."""
        generation, number = ticket
        with self.lock:
            index = number - self._first
            if generation != self._generation or index < 0:
                return
            old = self.requests[index]
            self.requests[index] = replace(
                old,
                status=old.status if status is None else status,
                refusal=old.refusal if refusal is None else refusal,
                fault=old.fault if fault is None else fault,
            )
            self._touched()

    def request(self, number: int) -> ReceivedRequest | None:
        """The record numbered ``number``, while it is kept."""
        with self.lock:
            index = number - self._first
            return self.requests[index] if 0 <= index < len(self.requests) else None

    def secrets_of(self, fields: Mapping[str, str]) -> frozenset[str]:
        """What a record of a request with header ``fields`` (by lower-case name) must
        never show: the accounts' secrets (the demo account's are public) and the request's
        own credential."""
        if self._secrets_for != (self.accounts, self.extra_secrets):
            self._account_secrets = frozenset(
                s
                for a in self.accounts
                for s in (a.pin, a.client_secret, *a.tokens)
                if s and s not in PUBLIC
            )
            self._known = self._account_secrets | self.extra_secrets
            self._secrets_for = (self.accounts, self.extra_secrets)
        authorization = fields.get("authorization", "")
        if not authorization:
            return self._known  # the same set each time: nothing new kept per record
        found = set(self._account_secrets) | self.extra_secrets
        scheme, _, credential = authorization.strip().partition(" ")
        credential = credential.strip() or scheme
        if credential:
            found.add(credential)
        if scheme.lower() == "basic":
            with contextlib.suppress(ValueError):  # binascii.Error, UnicodeDecodeError
                decoded = base64.b64decode(credential, validate=True).decode()
                found |= {decoded, decoded.partition(":")[2]}
        return frozenset(s for s in found if s)

    # -- credentials --

    def issue_token(self, user_id: str, lifetime: float) -> str:
        token = secrets.token_urlsafe(24)
        expiry = time.monotonic() + lifetime
        with self.lock:
            self.issued[token] = (user_id, expiry)
        return token

    def expire_tokens(self) -> None:
        with self.lock:
            self.issued = {t: (u, 0.0) for t, (u, _) in self.issued.items()}

    def user_for_token(self, token: str) -> str | None:
        now = time.monotonic()
        with self.lock:
            issued = self.issued.get(token)
        if issued is not None:
            return issued[0] if issued[1] > now else None
        for account in self.accounts:
            if any(same(t, token) for t in account.tokens):
                return account.user_id
        return None

    def pin_matches(self, user_id: str, pin: str) -> bool:
        for a in self.accounts:
            if a.user_id == user_id and a.pin is not None and same(a.pin, pin):
                return True
        return False

    def client(self, client_id: str, client_secret: str) -> Account | None:
        for a in self.accounts:
            if (
                a.client_id is not None
                and a.client_secret is not None
                and same(a.client_id, client_id)
                and same(a.client_secret, client_secret)
            ):
                return a
        return None

    # -- jobs --

    def new_job(
        self,
        request: SendFax | SendFaxEx,
        auth_mode: str,
        request_id: str | None,
        documents: list[Document],
        deviations: tuple[str, ...] = (),
        received_at: float = 0.0,
        *,
        start_after: float = 0.0,
        expires_after: float = vendor.DEFAULT_EXPIRY.total_seconds(),
        request_number: int | None = None,
    ) -> SimulatedJob:
        # Small documents stay in memory while DOCUMENT_MEMORY lasts (concurrent jobs may
        # overshoot it by a few small documents); the others go to disk, and all of them do
        # when the jobs are durable.
        with self.lock:
            room = -1 if self.store is not None else DOCUMENT_MEMORY - self._document_bytes
        in_memory = []
        for document in documents:
            fits = document.path is None and document.size <= room
            room -= document.size if fits else 0
            in_memory.append(fits)
            if not fits:
                document.to_file()
        pages = sum(map(_pages_of, documents))
        details = request.job_details if isinstance(request, SendFaxEx) else None
        password = "" if details is None else details.notify_auth_password
        if details is not None:
            details = replace(details, notify_auth_password=MASK if password else "")
        push = first_push(details)
        items = request.fax_job_files.item
        with self.lock:
            number = str(self._last_id + 1)
            files = tuple(
                ReceivedFile(
                    f.file_index,
                    f.file_type_id,
                    d.data if fits else None,
                    path=None if fits else self._adopt(d, number, position),
                    size=d.size,
                    sha256=d.sha256,
                )
                for position, (f, d, fits) in enumerate(
                    zip(items, documents, in_memory, strict=True), 1
                )
            )
            first = self._job_counter + 1
            ids = [f"SIM{first + n:08d}" for n in range(len(request.recipients.item))]
            job = SimulatedJob(
                job_ids=tuple(ids),
                user_id=request.user_id,
                auth_mode=auth_mode,
                request_id=request_id,
                recipients=request.recipients.item,
                files=files,
                deviations=deviations,
                id=number,
                received_at=received_at,
                operation="SendFaxEx" if details is not None else "SendFax",
                details=details,
                pages=pages,
                start_after=start_after,
                expires_after=expires_after,
                _notify_password=password,
                _request=request_number,
            )
            tracks = {
                job_id: Track(n, plan_for_number(r.recip_fax_number), push=push)
                for n, (job_id, r) in enumerate(zip(ids, job.recipients, strict=True))
            }
            if self.store is not None:
                counters = {"last_id": int(number), "job_counter": self._job_counter + len(ids)}
                try:
                    self.store.add(job, counters, tracks)
                except (sqlite3.Error, OSError) as exc:
                    forget_files([job])
                    raise StoreError(f"{type(exc).__name__}: {exc}") from None
            self._last_id = int(number)
            self._job_counter += len(ids)
            self._document_bytes += sum(f.size for f in files if f.path is None)
            self._keep(job, tracks)
            pruned = self._prune_jobs()
            if self.store is not None and pruned:
                self.store.remove(pruned)
            self._touched()
        forget_files(pruned)
        if push is not None and push.state == "pending":
            self.on_change()
        return job

    def _keep(self, job: SimulatedJob, tracks: Mapping[str, Track]) -> None:
        """Serve ``job`` (oldest first). Under the lock."""
        self.jobs.append(job)
        self.by_id[job.id] = job
        for job_id, track in tracks.items():
            self.by_job_id[job_id] = job
            self.tracks[job_id] = track
            if track.push is not None and track.push.state == "pending":
                self.pending_pushes.add(job_id)
        if job.reference_id:
            self.by_reference.setdefault((job.user_id, job.reference_id), []).extend(job.job_ids)

    def _adopt(self, document: Document, number: str, position: int) -> Path | None:
        if self.store is None or document.path is None:
            return document.path
        return self.store.adopt(document.path, number, position)

    def _counters(self) -> dict[str, int]:
        return {"last_id": self._last_id, "job_counter": self._job_counter}

    def open_store(self, store: JobStore) -> None:
        """Serve the jobs ``store`` kept, and keep new ones there."""
        jobs, counters, tracks = store.load()
        with self.lock:
            self.store = store
            self.jobs = deque()
            self.by_id, self.by_job_id, self.tracks = {}, {}, {}
            self.by_reference, self.pending_pushes = {}, set()
            for job in jobs:
                self._keep(
                    job, {i: tracks.get(i) or _track(job, n) for n, i in enumerate(job.job_ids)}
                )
            self._last_id = max(self._last_id, counters.get("last_id", 0))
            self._job_counter = max(self._job_counter, counters.get("job_counter", 0))
            pruned = self._prune_jobs()  # a smaller max_jobs than the last run's
            if pruned:
                store.remove(pruned)
            self._touched()
        forget_files(pruned)
        self.on_change()

    def close_store(self) -> None:
        with self.lock:
            store, self.store = self.store, None
        if store is not None:
            store.close()

    def _prune_jobs(self) -> list[SimulatedJob]:
        """Drop the oldest jobs beyond ``max_jobs``. Under the lock; the caller removes
        their files."""
        pruned = []
        while len(self.jobs) > self.max_jobs:
            job = self.jobs.popleft()
            pruned.append(job)
            self._unindex(job)
        return pruned

    def _unindex(self, job: SimulatedJob) -> None:
        """Drop a job taken out of ``jobs`` from every lookup. Under the lock."""
        del self.by_id[job.id]
        for job_id in job.job_ids:
            self.by_job_id.pop(job_id, None)
            self.tracks.pop(job_id, None)
            self.pending_pushes.discard(job_id)
        key = (job.user_id, job.reference_id)
        ids = self.by_reference.get(key) if job.reference_id else None
        if ids is not None:
            count = len(job.job_ids)
            if tuple(ids[:count]) == job.job_ids:
                del ids[:count]  # the oldest job's, as pruning finds them: at once
            else:
                ids[:] = [i for i in ids if i not in job.job_ids]
            if not ids:
                del self.by_reference[key]
        self._document_bytes -= sum(f.size for f in job.files if f.path is None)

    def recent_jobs(self, limit: int) -> tuple[int, list[SimulatedJob]]:
        """How many jobs there are, and the newest ``limit`` of them, newest first."""
        with self.lock:
            return len(self.jobs), list(itertools.islice(reversed(self.jobs), limit))

    def search_jobs(self, wanted: str, limit: int) -> tuple[int, list[SimulatedJob]]:
        """How many jobs match ``wanted`` (see :func:`matches`), and the newest ``limit`` of
        them, newest first. Walks every job: for people searching, never for a call."""
        with self.lock:
            jobs = list(reversed(self.jobs))
        found = [job for job in jobs if matches(job, wanted)]
        return len(found), found[:limit]

    def recent_requests(self, limit: int) -> tuple[int, list[tuple[int, ReceivedRequest]]]:
        """How many request records there are, and the newest ``limit`` with their numbers,
        newest first."""
        with self.lock:
            last = self._first + len(self.requests) - 1
            newest = itertools.islice(reversed(self.requests), limit)
            return len(self.requests), [(last - n, r) for n, r in enumerate(newest)]

    def recent_refusals(self, limit: int, within: int) -> list[tuple[int, ReceivedRequest]]:
        """The newest ``limit`` requests refused or given an injected fault, with their
        numbers, among the newest ``within`` records."""
        with self.lock:
            last = self._first + len(self.requests) - 1
            newest = enumerate(itertools.islice(reversed(self.requests), within))
            refused = (
                (last - n, r) for n, r in newest if r.refusal is not None or r.fault is not None
            )
            return list(itertools.islice(refused, limit))

    def wait_for_jobs(self, count: int, timeout: float) -> bool:
        """Return once there are at least ``count`` jobs (True), or at stop (True), or
        ``timeout`` has passed (False)."""
        with self.changed:
            return self.changed.wait_for(lambda: len(self.jobs) >= count or self.stopping, timeout)

    def wait_for_change(self, version: int, timeout: float) -> int:
        """The version once it differs from ``version``, or after ``timeout`` seconds, or
        at stop (see :attr:`stopping`)."""
        with self.changed:
            self.changed.wait_for(lambda: self.version != version or self.stopping, timeout)
            return self.version

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()

    def job(self, job_id: str) -> SimulatedJob | None:
        with self.lock:
            return self.by_job_id.get(job_id)

    def known_job(self, user_id: str, job_id: str) -> bool:
        job = self.job(job_id)
        return job is not None and job.user_id == user_id

    # -- lives --

    def progress(self, job_id: str, user_id: str | None = None) -> JobProgress | None:
        """Where the job ``job_id`` is now; None if there is none (of ``user_id``, if given)."""
        with self.lock:
            job, track = self.by_job_id.get(job_id), self.tracks.get(job_id)
        if job is None or track is None or user_id not in (None, job.user_id):
            return None
        return progress(job, track, self.clock(), self.time_scale)

    def progresses(self, job: SimulatedJob, limit: int | None = None) -> list[JobProgress]:
        """Where each recipient's job of ``job`` is now, in the recipients' order (the first
        ``limit`` of them, if given)."""
        tracks = self.tracks_of(job, limit)
        now = self.clock()
        return [progress(job, track, now, self.time_scale) for track in tracks]

    def by_reference_progress(self, user_id: str, reference_id: str) -> list[JobProgress]:
        """Where each of ``user_id``'s jobs sent with ``reference_id`` is now."""
        with self.lock:
            ids = self.by_reference.get((user_id, reference_id), ())
            found = [(self.by_job_id[i], self.tracks[i]) for i in ids]
        now = self.clock()
        return [progress(job, track, now, self.time_scale) for job, track in found]

    def cancel(self, user_id: str, job_id: str) -> WSError:
        """End ``user_id``'s job ``job_id`` now if it is in progress; the error, if not."""
        with self.lock:
            job, track = self.by_job_id.get(job_id), self.tracks.get(job_id)
            if job is None or track is None or job.user_id != user_id:
                return INVALID_JOB_ID
            now = self.clock()
            if progress(job, track, now, self.time_scale).final:
                return _JOB_ENDED
            self._put(job, replace(track, cancelled_at=now))
        self.on_change()
        return NO_ERROR

    def set_outcome(self, key: str, plan: Plan) -> SimulatedJob:
        """Plan ``plan`` for the job id ``key``, or for every recipient of the job numbered
        ``key``, from now on. Raises KeyError for neither, ValueError for a job that ended."""
        with self.lock:
            job = self.by_job_id.get(key) or self.by_id.get(key)
            if job is None:
                raise KeyError(key)
            ids = [key] if key in self.by_job_id else list(job.job_ids)
            now = self.clock()
            tracks = [self.tracks[i] for i in ids]
            for job_id, track in zip(ids, tracks, strict=True):
                if progress(job, track, now, self.time_scale).final:
                    raise ValueError(f"job {job_id} has ended: its outcome cannot change")
            for track in tracks:
                self._put(job, replace(track, plan=plan, replanned_at=now))
        self.on_change()
        return job

    def due_pushes(self, now: float) -> tuple[list[tuple[SimulatedJob, JobProgress]], float]:
        """The pending pushes due at clock time ``now``, each with how its job ended, oldest
        first; and when the next one falls due (``math.inf``: none is pending)."""
        due: list[tuple[float, SimulatedJob, JobProgress]] = []
        soonest = math.inf
        with self.lock:
            for job_id in self.pending_pushes:
                job, track = self.by_job_id[job_id], self.tracks[job_id]
                ended = progress(job, track, math.inf, self.time_scale)
                assert ended.ended_at is not None  # every life ends
                assert track.push is not None
                at = max(ended.ended_at, track.push.next_at or 0.0)
                if at <= now:
                    due.append((at, job, ended))
                else:
                    soonest = min(soonest, at)
        due.sort(key=lambda d: (d[0], d[2].job_id))
        return [(job, ended) for _, job, ended in due], soonest

    def record_push(self, job_id: str, record: PushRecord) -> None:
        """Keep what the last attempt of ``job_id``'s push gave (unless the job was
        forgotten meanwhile)."""
        with self.lock:
            job, track = self.by_job_id.get(job_id), self.tracks.get(job_id)
            if job is None or track is None:
                return
            self._put(job, replace(track, push=record))
            if record.state != "pending":
                self.pending_pushes.discard(job_id)

    def tracks_of(self, job: SimulatedJob, limit: int | None = None) -> list[Track]:
        """What changed for each recipient of ``job``, in the recipients' order (the first
        ``limit`` of them, if given)."""
        ids = job.job_ids if limit is None else job.job_ids[:limit]
        with self.lock:
            return [self.tracks.get(i) or _track(job, n) for n, i in enumerate(ids)]

    def _put(self, job: SimulatedJob, track: Track) -> None:
        """Replace a track, in the database too. Under the lock."""
        job_id = job.job_ids[track.index]
        if self.store is not None:
            try:
                self.store.put_track(job_id, int(job.id), track)
            except (sqlite3.Error, OSError) as exc:
                raise StoreError(f"{type(exc).__name__}: {exc}") from None
        self.tracks[job_id] = track
        self._touched()


def _track(job: SimulatedJob, index: int) -> Track:
    """The track of a recipient whose job has none kept (a database of an earlier version)."""
    return Track(index, plan_for_number(job.recipients[index].recip_fax_number))


_NOT_DIGITS = re.compile(r"\D")
_DIAL_MARKS = re.compile(r"[\s()+./-]")


def matches(job: SimulatedJob, wanted: str) -> bool:
    """Whether ``wanted`` is found, ignoring case, in the job's number, its job ids, its
    reference or request id, or a recipient's fax number, name, company or title; a number
    is also found by its digits alone (``5550100`` finds ``+1 555 0100``)."""
    wanted = wanted.strip().casefold()
    texts = [job.id, *job.job_ids, job.reference_id, job.request_id or ""]
    for r in job.recipients:
        texts += [r.recip_fax_number, r.recip_name, r.recip_company, r.recip_title]
    if any(wanted in text.casefold() for text in texts):
        return True
    digits = _DIAL_MARKS.sub("", wanted)
    return (
        digits.isascii()
        and digits.isdigit()
        and any(digits in _NOT_DIGITS.sub("", r.recip_fax_number) for r in job.recipients)
    )


def _pages_of(document: Document) -> int:
    data = document.data
    if data is not None:
        return count_pages(io.BytesIO(data))
    assert document.path is not None
    with document.path.open("rb") as stream:
        return count_pages(stream)


def forget_files(jobs: Iterable[SimulatedJob]) -> None:
    """Remove the documents of ``jobs`` that are on disk."""
    for job in jobs:
        for f in job.files:
            if f.path is not None:
                f.path.unlink(missing_ok=True)
