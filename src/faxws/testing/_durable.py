"""Jobs kept across restarts (``faxws serve --db PATH``): SQLite for what a job is and what
changed for each recipient since (its plan, cancel, push), its documents as files in
``PATH.files/`` beside the database. A push's password is kept too (in the database only):
a pending push still goes out after a restart.

The simulator still serves from memory; this store is written as each job is accepted and
read once at start. Documents arrive in ``PATH.files/spool/`` (the same file system, so that
adopting one is a rename), and the spool is emptied at start and at stop.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Mapping
from dataclasses import astuple
from pathlib import Path
from typing import Any

from faxws._protocol.assumptions import DEFAULT_EXPIRY
from faxws.bindings import FaxJob, FaxJobRecipient
from faxws.testing._life import Plan
from faxws.testing._progress import PushRecord, Track
from faxws.testing._records import ReceivedFile, SimulatedJob

__all__ = ["InUseError", "JobStore", "StoreError"]


class InUseError(Exception):
    """Another simulator holds the database."""


class StoreError(Exception):
    """The database would not take a change: it is not made in memory either."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (number INTEGER PRIMARY KEY, job TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tracks (
    job_id TEXT PRIMARY KEY, number INTEGER NOT NULL, track TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tracks_by_number ON tracks (number);
"""


class JobStore:
    """One simulator's durable jobs. Not thread-safe: the state calls it under its lock."""

    def __init__(self, path: Path) -> None:
        """Raises OSError, sqlite3.Error, or InUseError when another simulator has it."""
        self.path = path.resolve()  # documents are found again from any working directory
        self.documents = self.path.with_name(self.path.name + ".files")
        self.documents.mkdir(exist_ok=True)  # beside the database: its folder exists
        # One simulator per database: two would number jobs alike and overwrite each
        # other's documents. The lock ends with the process, however it ends.
        self._lock = open(self.documents / "lock", "a+b")  # noqa: SIM115 - held until close
        try:
            import fcntl  # POSIX; elsewhere the database is not guarded
        except ImportError:
            pass
        else:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._lock.close()
                raise InUseError(f"{path} is in use by another simulator") from None
        try:
            self.spool = self.documents / "spool"
            shutil.rmtree(self.spool, ignore_errors=True)  # what a crash left half-received
            self.spool.mkdir()
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except BaseException:
            self._lock.close()
            raise
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except BaseException:
            self._db.close()
            self._lock.close()
            raise

    def close(self) -> None:
        self._db.close()
        shutil.rmtree(self.spool, ignore_errors=True)
        self._lock.close()

    def load(self) -> tuple[list[SimulatedJob], dict[str, int], dict[str, Track]]:
        """The jobs kept, oldest first, the counters that number new ones, and the tracks by
        job id. Raises ValueError for a database that does not hold what this module wrote."""
        try:
            jobs = [
                _job(json.loads(text))
                for (text,) in self._db.execute("SELECT job FROM jobs ORDER BY number")
            ]
            counters = dict(self._db.execute("SELECT name, value FROM counters").fetchall())
            tracks = {
                job_id: _track(json.loads(text))
                for job_id, text in self._db.execute("SELECT job_id, track FROM tracks")
            }
        except (ValueError, KeyError, TypeError, sqlite3.Error) as exc:
            raise ValueError(f"holds jobs it cannot read ({type(exc).__name__})") from None
        return jobs, counters, tracks

    def adopt(self, source: Path, job_id: str, position: int) -> Path:
        """Move a spooled document to its place beside the database (named by its position
        in the job: FileIndex values need not be unique)."""
        target = self.documents / f"job-{job_id}-file-{position}.bin"
        os.replace(source, target)
        return target

    def add(self, job: SimulatedJob, counters: dict[str, int], tracks: Mapping[str, Track]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO jobs (number, job) VALUES (?, ?)", (int(job.id), _json(job))
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO tracks (job_id, number, track) VALUES (?, ?, ?)",
                [(job_id, int(job.id), _track_json(t)) for job_id, t in tracks.items()],
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)", counters.items()
            )

    def put_track(self, job_id: str, number: int, track: Track) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO tracks (job_id, number, track) VALUES (?, ?, ?)",
                (job_id, number, _track_json(track)),
            )

    def remove(self, jobs: list[SimulatedJob]) -> None:
        numbers = [(int(job.id),) for job in jobs]
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM jobs WHERE number = ?", numbers)
            self._db.executemany("DELETE FROM tracks WHERE number = ?", numbers)

    def clear(self, counters: dict[str, int]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM jobs")
            self._db.execute("DELETE FROM tracks")
            self._db.executemany(
                "INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)", counters.items()
            )


def _json(job: SimulatedJob) -> str:
    return json.dumps(
        {
            "id": job.id,
            "job_ids": list(job.job_ids),
            "user_id": job.user_id,
            "auth_mode": job.auth_mode,
            "request_id": job.request_id,
            "received_at": job.received_at,
            "recipients": [list(astuple(r)) for r in job.recipients],
            "files": [[f.index, f.file_type, str(f.path), f.size, f.sha256] for f in job.files],
            "deviations": list(job.deviations),
            "operation": job.operation,
            "details": None if job.details is None else list(astuple(job.details)),
            "notify_password": job._notify_password,
            "pages": job.pages,
            "start_after": job.start_after,
            "expires_after": job.expires_after,
        }
    )


def _job(data: dict[str, Any]) -> SimulatedJob:
    return SimulatedJob(
        job_ids=tuple(data["job_ids"]),
        user_id=data["user_id"],
        auth_mode=data["auth_mode"],
        request_id=data["request_id"],
        recipients=tuple(FaxJobRecipient(*r) for r in data["recipients"]),
        files=tuple(
            ReceivedFile(index, file_type, path=Path(path), size=size, sha256=sha256)
            for index, file_type, path, size, sha256 in data["files"]
        ),
        deviations=tuple(data["deviations"]),
        id=data["id"],
        received_at=data["received_at"],
        # A database of an earlier version has jobs sent with SendFax, at once.
        operation=data.get("operation", "SendFax"),
        details=None if data.get("details") is None else FaxJob(*data["details"]),
        pages=data.get("pages", max(len(data["files"]), 1)),
        start_after=data.get("start_after", 0.0),
        expires_after=data.get("expires_after", DEFAULT_EXPIRY.total_seconds()),
        _notify_password=data.get("notify_password", ""),
    )


def _track_json(track: Track) -> str:
    push = track.push
    return json.dumps(
        {
            "index": track.index,
            "plan": [track.plan.outcome, track.plan.pages_before_failure],
            "replanned_at": track.replanned_at,
            "cancelled_at": track.cancelled_at,
            "push": None if push is None else list(astuple(push)),
        }
    )


def _track(data: dict[str, Any]) -> Track:
    push = data["push"]
    return Track(
        index=data["index"],
        plan=Plan(*data["plan"]),
        replanned_at=data["replanned_at"],
        cancelled_at=data["cancelled_at"],
        push=None if push is None else PushRecord(*push),
    )
