"""What the simulator holds: the accounts and the tokens it issued, the requests it received
(bodies within a budget), the jobs it accepted and their documents, the pending faults.

Every lookup a call makes is by key (job id, token), so a call costs the same with many jobs
as with few; the lock is held only for those lookups and for appending.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import secrets
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from faxws.bindings import SendFax
from faxws.testing._accounts import PUBLIC, Account, same
from faxws.testing._documents import Document
from faxws.testing._durable import JobStore
from faxws.testing._faults import Faults
from faxws.testing._records import ReceivedFile, ReceivedRequest, SimulatedJob

__all__ = ["DOCUMENT_MEMORY", "MAX_JOBS", "MAX_REQUESTS", "State", "StoreError", "forget_files"]


class StoreError(Exception):
    """The database would not take a job: the job is not kept either."""


#: Small documents stay in memory while all of them together fit in this; beyond it, they go
#: to disk too.
DOCUMENT_MEMORY = 16 * 1024 * 1024
#: Records kept by default: beyond these, the oldest requests and jobs are forgotten.
MAX_REQUESTS = 100_000
MAX_JOBS = 100_000


class State:
    """The simulator's state, safe to use from every connection's thread."""

    def __init__(
        self,
        accounts: tuple[Account, ...],
        retained_body_bytes: int,
        max_requests: int = MAX_REQUESTS,
        max_jobs: int = MAX_JOBS,
    ) -> None:
        self.accounts = accounts
        self.retained_body_bytes = retained_body_bytes
        self.max_requests = max_requests
        self.max_jobs = max_jobs
        self.lock = threading.Lock()
        # Notified when a job is added, and at stop: the API's ?min= waits on it.
        self.changed = threading.Condition(self.lock)
        self.stopping = False
        self.faults = Faults()
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
        self.connections = 0
        self.token_requests = 0
        self._retained: deque[int] = deque()  # numbers of the requests that hold a body
        self._first = 0  # the number of requests[0]: older records were forgotten
        self._retained_bytes = 0
        self._document_bytes = 0  # of documents kept in memory
        self._job_counter = 0
        self._last_id = 0  # job numbers are never reused, whatever was pruned or reset
        self.store: JobStore | None = None
        self._generation = 0  # of the records, counted up by reset()

    def reset(self) -> list[SimulatedJob]:
        """Forget requests, jobs, counters and pending faults; the jobs forgotten."""
        with self.lock:
            forgotten = list(self.jobs)
            self._generation += 1
            self.requests = deque()
            self._first = 0
            self._retained = deque()
            self._retained_bytes = 0
            self.jobs = deque()
            self.by_job_id = {}
            self.by_id = {}
            self._document_bytes = 0
            self.connections = 0
            self.token_requests = 0
            self._job_counter = 0
            if self.store is not None:
                self.store.clear(self._counters())
        self.faults.clear()
        return forgotten

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
        request: SendFax,
        auth_mode: str,
        request_id: str | None,
        documents: list[Document],
        deviations: tuple[str, ...] = (),
        received_at: float = 0.0,
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
            )
            if self.store is not None:
                counters = {"last_id": int(number), "job_counter": self._job_counter + len(ids)}
                try:
                    self.store.add(job, counters)
                except (sqlite3.Error, OSError) as exc:
                    forget_files([job])
                    raise StoreError(f"{type(exc).__name__}: {exc}") from None
            self._last_id = int(number)
            self._job_counter += len(ids)
            self._document_bytes += sum(f.size for f in files if f.path is None)
            self.jobs.append(job)
            self.by_id[job.id] = job
            for job_id in ids:
                self.by_job_id[job_id] = job
            pruned = self._prune_jobs()
            if self.store is not None and pruned:
                self.store.remove(pruned)
            self.changed.notify_all()
        forget_files(pruned)
        return job

    def _adopt(self, document: Document, number: str, position: int) -> Path | None:
        if self.store is None or document.path is None:
            return document.path
        return self.store.adopt(document.path, number, position)

    def _counters(self) -> dict[str, int]:
        return {"last_id": self._last_id, "job_counter": self._job_counter}

    def open_store(self, store: JobStore) -> None:
        """Serve the jobs ``store`` kept, and keep new ones there."""
        jobs, counters = store.load()
        with self.lock:
            self.store = store
            self.jobs = deque(jobs)
            self.by_id = {job.id: job for job in jobs}
            self.by_job_id = {job_id: job for job in jobs for job_id in job.job_ids}
            self._last_id = max(self._last_id, counters.get("last_id", 0))
            self._job_counter = max(self._job_counter, counters.get("job_counter", 0))
            pruned = self._prune_jobs()  # a smaller max_jobs than the last run's
            if pruned:
                store.remove(pruned)
        forget_files(pruned)

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
            del self.by_id[job.id]
            for job_id in job.job_ids:
                self.by_job_id.pop(job_id, None)
            self._document_bytes -= sum(f.size for f in job.files if f.path is None)
        return pruned

    def recent_jobs(self, limit: int) -> tuple[int, list[SimulatedJob]]:
        """How many jobs there are, and the newest ``limit`` of them, newest first."""
        with self.lock:
            return len(self.jobs), list(itertools.islice(reversed(self.jobs), limit))

    def recent_requests(self, limit: int) -> tuple[int, list[ReceivedRequest]]:
        """How many request records there are, and the newest ``limit``, newest first."""
        with self.lock:
            return len(self.requests), list(itertools.islice(reversed(self.requests), limit))

    def recent_refusals(self, limit: int, within: int) -> list[ReceivedRequest]:
        """The newest ``limit`` refused requests among the newest ``within`` records."""
        with self.lock:
            newest = itertools.islice(reversed(self.requests), within)
            refused = (r for r in newest if r.refusal is not None)
            return list(itertools.islice(refused, limit))

    def wait_for_jobs(self, count: int, timeout: float) -> None:
        """Return once there are at least ``count`` jobs, or ``timeout`` has passed."""
        with self.changed:
            self.changed.wait_for(lambda: len(self.jobs) >= count or self.stopping, timeout)

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


def forget_files(jobs: Iterable[SimulatedJob]) -> None:
    """Remove the documents of ``jobs`` that are on disk."""
    for job in jobs:
        for f in job.files:
            if f.path is not None:
                f.path.unlink(missing_ok=True)
