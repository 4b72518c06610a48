"""Jobs kept across restarts (``faxws serve --db PATH``): SQLite for what a job is, its
documents as files in ``PATH.files/`` beside the database.

The simulator still serves from memory; this store is written as each job is accepted and
read once at start. Documents arrive in ``PATH.files/spool/`` (the same file system, so that
adopting one is a rename), and the spool is emptied at start and at stop.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from dataclasses import astuple
from pathlib import Path
from typing import Any

from faxws.bindings import FaxJobRecipient
from faxws.testing._records import ReceivedFile, SimulatedJob

__all__ = ["InUseError", "JobStore"]


class InUseError(Exception):
    """Another simulator holds the database."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (number INTEGER PRIMARY KEY, job TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class JobStore:
    """One simulator's durable jobs. Not thread-safe: the state calls it under its lock."""

    def __init__(self, path: Path) -> None:
        """Raises OSError, sqlite3.Error, or InUseError when another simulator has it."""
        self.path = path.resolve()  # documents are found again from any working directory
        self.documents = self.path.with_name(self.path.name + ".files")
        self.documents.mkdir(parents=True, exist_ok=True)
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

    def load(self) -> tuple[list[SimulatedJob], dict[str, int]]:
        """The jobs kept, oldest first, and the counters that number new ones. Raises
        ValueError for a database that does not hold what this module wrote."""
        try:
            jobs = [
                _job(json.loads(text))
                for (text,) in self._db.execute("SELECT job FROM jobs ORDER BY number")
            ]
            counters = dict(self._db.execute("SELECT name, value FROM counters").fetchall())
        except (ValueError, KeyError, TypeError, sqlite3.Error) as exc:
            raise ValueError(f"holds jobs it cannot read ({type(exc).__name__})") from None
        return jobs, counters

    def adopt(self, source: Path, job_id: str, position: int) -> Path:
        """Move a spooled document to its place beside the database (named by its position
        in the job: FileIndex values need not be unique)."""
        target = self.documents / f"job-{job_id}-file-{position}.bin"
        os.replace(source, target)
        return target

    def add(self, job: SimulatedJob, counters: dict[str, int]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO jobs (number, job) VALUES (?, ?)", (int(job.id), _json(job))
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)", counters.items()
            )

    def remove(self, jobs: list[SimulatedJob]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany(
                "DELETE FROM jobs WHERE number = ?", [(int(job.id),) for job in jobs]
            )

    def clear(self, counters: dict[str, int]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM jobs")
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
    )
