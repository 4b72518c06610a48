"""A journal in one SQLite file, safe for several processes (and threads) of one machine: WAL,
``synchronous=FULL``, and every write in a ``BEGIN IMMEDIATE`` transaction that reads the row
it moves, so a move is a compare-and-set."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from faxws._protocol.assumptions import new_reference_id
from faxws.errors import BadInputError
from faxws.journal._store import (
    TRANSITIONS,
    Clock,
    IllegalTransitionError,
    JournalError,
    KeyReusedError,
    LeaseLostError,
    Row,
    State,
    UnknownKeyError,
)

SCHEMA_VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COLUMNS = (
    "key, payload_sha256, reference_id, state, attempt, job_ids, lease_owner,"
    " lease_expires_at, reason, created_at, updated_at"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS faxes (
    key TEXT PRIMARY KEY,
    payload_sha256 TEXT NOT NULL,
    reference_id TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    job_ids TEXT NOT NULL,
    lease_owner TEXT,
    lease_expires_at REAL,
    reason TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS faxes_by_state ON faxes (state, created_at);
"""


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, timezone.utc)


def _row(values: Sequence[Any]) -> Row:
    return Row(
        key=values[0],
        payload_sha256=values[1],
        reference_id=values[2],
        state=State(values[3]),
        attempt=values[4],
        job_ids=tuple(json.loads(values[5])),
        lease_owner=values[6],
        lease_expires_at=_time(values[7]),
        reason=values[8],
        created_at=datetime.fromtimestamp(values[9], timezone.utc),
        updated_at=datetime.fromtimestamp(values[10], timezone.utc),
    )


class SqliteJournal:
    """A :class:`~faxws.journal.JournalStore` in the SQLite file ``path`` (created with its
    schema if missing). ``clock`` returns an aware datetime; ``busy_timeout`` is how long, in
    seconds, a write waits for another process's."""

    def __init__(
        self, path: str | os.PathLike[str], *, clock: Clock = _utc_now, busy_timeout: float = 30.0
    ) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            os.fspath(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._setup(busy_timeout)
        except BaseException:
            self._db.close()
            raise

    def _setup(self, busy_timeout: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        with self._write():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise JournalError(f"journal schema version {version} is newer than this faxws")
            if version < SCHEMA_VERSION:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SqliteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> float:
        now = self._clock()
        if now.utcoffset() is None:
            raise ValueError("the journal's clock returned a datetime without a time zone")
        return now.timestamp()

    @contextmanager
    def _write(self) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _select(self, key: str) -> Row | None:
        query = f"SELECT {_COLUMNS} FROM faxes WHERE key = ?"  # noqa: S608 - our own columns
        found = self._db.execute(query, (key,)).fetchone()
        return None if found is None else _row(found)

    def _update(self, key: str, **values: Any) -> Row:
        if values:
            names = ", ".join(f"{name} = ?" for name in values)
            query = f"UPDATE faxes SET {names} WHERE key = ?"  # noqa: S608 - our own columns
            self._db.execute(query, (*values.values(), key))
        row = self._select(key)
        assert row is not None
        return row

    def _move(
        self,
        key: str,
        target: State | None,
        sources: set[State],
        owner: str | None = None,
        lease_seconds: float | None = None,
        **values: Any,
    ) -> Row:
        """Move ``key`` from one of ``sources`` to ``target`` (None: keep its state) if it is
        leased to ``owner`` (when given) unexpired, writing ``values`` too and, with
        ``lease_seconds``, a new lease expiry."""
        with self._write():
            row = self._select(key)
            if row is None:
                raise UnknownKeyError(key)
            if row.state not in sources or (
                target is not None and target not in TRANSITIONS[row.state]
            ):
                raise IllegalTransitionError(key, row.state, target or row.state)
            now = self._now()
            if owner is not None and (
                row.lease_owner != owner
                or row.lease_expires_at is None
                or row.lease_expires_at.timestamp() <= now
            ):
                raise LeaseLostError(key, owner)
            state = row.state if target is None else target
            if lease_seconds is not None:
                values["lease_expires_at"] = now + lease_seconds
            if state not in (State.CLAIMED, State.SENDING):
                values.update(lease_owner=None, lease_expires_at=None)
            return self._update(key, state=state.value, updated_at=now, **values)

    def add(self, key: str, payload_sha256: str) -> Row:
        if not _SHA256.fullmatch(payload_sha256):
            raise BadInputError("payload_sha256", "not 64 lowercase hex digits")
        with self._write():
            row = self._select(key)
            if row is not None:
                if row.payload_sha256 != payload_sha256:
                    raise KeyReusedError(key)
                return row
            now = self._now()
            self._db.execute(
                f"INSERT INTO faxes ({_COLUMNS})"  # noqa: S608 - our own column names
                " VALUES (?, ?, ?, ?, 0, '[]', NULL, NULL, NULL, ?, ?)",
                (key, payload_sha256, new_reference_id(), State.PENDING.value, now, now),
            )
            return self._update(key)

    def get(self, key: str) -> Row | None:
        with self._lock:
            return self._select(key)

    def claim(self, owner: str, lease_seconds: float, limit: int) -> list[Row]:
        with self._write():
            now = self._now()
            keys = self._db.execute(
                "SELECT key FROM faxes WHERE state = ? OR (state = ? AND lease_expires_at <= ?)"
                " ORDER BY created_at, key LIMIT ?",
                (State.PENDING.value, State.CLAIMED.value, now, limit),
            ).fetchall()
            claimed = []
            for (key,) in keys:
                self._db.execute("UPDATE faxes SET attempt = attempt + 1 WHERE key = ?", (key,))
                claimed.append(
                    self._update(
                        key,
                        state=State.CLAIMED.value,
                        lease_owner=owner,
                        lease_expires_at=now + lease_seconds,
                        updated_at=now,
                    )
                )
            return claimed

    def heartbeat(self, key: str, owner: str, lease_seconds: float) -> Row:
        """Extend ``owner``'s lease of a claimed or sending row."""
        return self._move(key, None, {State.CLAIMED, State.SENDING}, owner, lease_seconds)

    def mark_sending(self, key: str, owner: str, lease_seconds: float | None = None) -> Row:
        return self._move(key, State.SENDING, {State.CLAIMED}, owner, lease_seconds)

    def mark_submitted(self, key: str, owner: str, job_ids: Sequence[str]) -> Row:
        return self._move(
            key, State.SUBMITTED, {State.SENDING}, owner, job_ids=json.dumps(list(job_ids))
        )

    def mark_failed(self, key: str, owner: str, reason: str) -> Row:
        return self._move(key, State.FAILED, {State.SENDING}, owner, reason=reason)

    def mark_uncertain(self, key: str, owner: str, reason: str) -> Row:
        return self._move(key, State.UNCERTAIN, {State.SENDING}, owner, reason=reason)

    def resolve_uncertain(self, key: str, job_ids: Sequence[str]) -> Row:
        return self._move(
            key, State.SUBMITTED, {State.UNCERTAIN}, job_ids=json.dumps(list(job_ids))
        )

    def mark_needs_review(self, key: str, reason: str) -> Row:
        return self._move(key, State.NEEDS_REVIEW, {State.UNCERTAIN}, reason=reason)

    def mark_final(self, key: str, state: State, reason: str | None = None) -> Row:
        sources = {State.SUBMITTED}
        if state is State.CANCELLED:
            sources |= {State.PENDING, State.CLAIMED}
        elif state not in (State.DELIVERED, State.FAILED):
            raise BadInputError("state", f"{state.value} is not a final state")
        return self._move(key, state, sources, reason=reason)

    def counts_by_state(self) -> dict[State, int]:
        with self._lock:
            found = dict(
                self._db.execute("SELECT state, count(*) FROM faxes GROUP BY state").fetchall()
            )
        return {state: found.get(state.value, 0) for state in State}

    def rows_in(self, state: State, limit: int | None = None) -> list[Row]:
        with self._lock:
            found = self._db.execute(
                f"SELECT {_COLUMNS} FROM faxes WHERE state = ?"  # noqa: S608 - our own columns
                " ORDER BY created_at, key LIMIT ?",
                (state.value, -1 if limit is None else limit),
            ).fetchall()
        return [_row(values) for values in found]

    def recover(self) -> list[Row]:
        with self._write():
            now = self._now()
            keys = self._db.execute(
                "SELECT key, state FROM faxes WHERE state IN (?, ?) AND lease_expires_at <= ?"
                " ORDER BY created_at, key",
                (State.CLAIMED.value, State.SENDING.value, now),
            ).fetchall()
            moved = []
            for key, state in keys:
                if state == State.CLAIMED.value:
                    values = {"state": State.PENDING.value, "reason": None}
                else:
                    values = {
                        "state": State.UNCERTAIN.value,
                        "reason": "the lease expired while sending",
                    }
                moved.append(
                    self._update(
                        key, lease_owner=None, lease_expires_at=None, updated_at=now, **values
                    )
                )
            return moved
