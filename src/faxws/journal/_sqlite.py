"""A journal in one SQLite file, safe for several processes (and threads) of one machine: WAL,
every write in a ``BEGIN IMMEDIATE`` transaction whose ``UPDATE`` names the states (and lease)
it moves from, so a move is a compare-and-set.

Durability: the move to SENDING commits with ``synchronous=FULL`` (the WAL synced to disk before
the send's first byte), and that sync carries every earlier commit of the file with it; a
worker moves several rows in that one commit. The other moves commit with
``synchronous=NORMAL``: safe against a killed process (the commit is in the operating
system's hands), undone only by a crash of the machine, and undoing any of them never sends a
fax twice (a claim undone was never used; a row added is added again; a submitted row undone is
SENDING, looked up by its ReferenceId). That spares an fsync per move, the journal's largest
cost per fax.

The mark that a SENDING row's send starts (:meth:`SqliteJournal.start_send`) commits so too,
and the row keeps the machine's boot id from its move to SENDING: a row found not started
after its worker died goes back to PENDING only while the machine has the same boot id (no
crash of the machine since, so no start mark was undone); after a reboot it is UNCERTAIN, as
a started row is. Where there is no boot id to read (not Linux), start marks are synced."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from typing import Any

from faxws._protocol.assumptions import new_reference_id
from faxws._ranges import MAX_LEASE_AHEAD, MAX_RESERVED_AHEAD
from faxws.errors import BadInputError
from faxws.journal._store import (
    REVIEW_SOURCES,
    TRANSITIONS,
    Clock,
    IllegalTransitionError,
    JournalError,
    KeyReusedError,
    LeaseLostError,
    Row,
    State,
    Submission,
    UnknownKeyError,
    added_by_key,
    check_added,
    check_interval,
    check_lease,
    chunks,
    final_sources,
    resend_key,
)

SCHEMA_VERSION = 3
_COLUMNS = (
    "key, payload_sha256, reference_id, state, attempt, job_ids, lease_owner,"
    " lease_expires_at, reason, created_at, updated_at, payload, resend_of, next_check_at,"
    " checks, seq"
)
_SELECT = f"SELECT {_COLUMNS} FROM faxes"  # noqa: S608 - our own column names
#: A new file is made as the first version was, then moved on by the same steps as an old
#: file, so both have one shape.
_SCHEMA_V1 = (
    """CREATE TABLE faxes (
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
    )""",
    "CREATE INDEX faxes_by_state ON faxes (state, created_at)",
)
_V1_TO_V2 = (
    "ALTER TABLE faxes ADD COLUMN payload TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE faxes ADD COLUMN resend_of TEXT",
    "ALTER TABLE faxes ADD COLUMN next_check_at REAL",
    "ALTER TABLE faxes ADD COLUMN checks INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE faxes ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",
    # rows being tracked are looked up at once
    "UPDATE faxes SET next_check_at = updated_at WHERE state IN ('submitted', 'uncertain')",
    "DROP INDEX faxes_by_state",
    "CREATE TABLE jobs (job_id TEXT PRIMARY KEY, key TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE limits (account TEXT PRIMARY KEY, last_call_at REAL NOT NULL)",
    """CREATE TABLE send_slots (
        account TEXT NOT NULL,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL,
        PRIMARY KEY (account, holder)
    ) WITHOUT ROWID""",
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)
_V2_INDEXES = (
    "CREATE UNIQUE INDEX faxes_by_seq ON faxes (seq)",
    "CREATE INDEX faxes_by_state ON faxes (state, seq)",
    "CREATE INDEX faxes_by_check ON faxes (state, next_check_at)",
    "CREATE UNIQUE INDEX faxes_by_resend_of ON faxes (resend_of)",
)


def _to_v2(db: sqlite3.Connection) -> None:
    _running(_V1_TO_V2)(db)
    # the first version ordered rows by (created_at, key): seq keeps that order
    found = db.execute("SELECT key, job_ids FROM faxes ORDER BY created_at, key").fetchall()
    db.executemany(
        "UPDATE faxes SET seq = ? WHERE key = ?",
        [(seq, key) for seq, (key, _) in enumerate(found, start=1)],
    )
    db.executemany(
        _INSERT_JOB,
        [(str(job_id), key) for key, ids in found for job_id in json.loads(ids)],
    )
    for statement in _V2_INDEXES:
        db.execute(statement)


#: ``started_at``: when a SENDING row's send started (NULL: not yet); ``sending_epoch``: the
#: boot id its start mark commits under (or ``synced``); ``reserved_attempt``: the attempt
#: that mark_sending_many moved to SENDING (a row is "not started" only in that attempt: a
#: process of the version before, still running, moves rows without these columns, and every
#: claim counts an attempt). A row SENDING before counts as started.
_V2_TO_V3 = (
    "ALTER TABLE faxes ADD COLUMN started_at REAL",
    "ALTER TABLE faxes ADD COLUMN sending_epoch TEXT",
    "ALTER TABLE faxes ADD COLUMN reserved_attempt INTEGER",
    "UPDATE faxes SET started_at = updated_at WHERE state = 'sending'",
)


def _running(statements: Sequence[str]) -> Callable[[sqlite3.Connection], None]:
    """A migration made of ``statements`` alone."""

    def migrate(db: sqlite3.Connection) -> None:
        for statement in statements:
            db.execute(statement)

    return migrate


_MIGRATIONS = {0: _running(_SCHEMA_V1), 1: _to_v2, 2: _running(_V2_TO_V3)}
#: A row's ``sending_epoch`` when its start mark is synced, not tied to a boot.
_SYNCED = "synced"
#: A SENDING row that mark_sending_many moved and no start mark marked since.
_NOT_STARTED = "started_at IS NULL AND reserved_attempt = attempt"


def _boot_id() -> str | None:
    """This machine's boot id (new at every boot: Linux's), or None where there is none."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            found = fh.read().strip()
    except OSError:
        return None
    return found or None


_TRACKED = (State.SUBMITTED, State.UNCERTAIN)
_INSERT = (
    "INSERT INTO faxes (key, payload_sha256, reference_id, state, attempt, job_ids, created_at,"  # noqa: S608
    " updated_at, payload, resend_of, checks, seq) VALUES (?, ?, ?, 'pending', 0, '[]', ?, ?, ?,"
    " ?, 0, (SELECT coalesce(max(seq), 0) + 1 FROM faxes)) ON CONFLICT (key) DO NOTHING"
    f" RETURNING {_COLUMNS}"
)
#: Two ordered, limited scans of the (state, seq) index, not a sort of every pending row.
_CLAIMABLE = (
    f"SELECT * FROM ({_SELECT} WHERE state = 'pending' ORDER BY seq LIMIT ?1)"  # noqa: S608
    f" UNION ALL SELECT * FROM ({_SELECT} WHERE state = 'claimed'"
    " AND lease_expires_at <= ?2 ORDER BY seq LIMIT ?1) ORDER BY seq LIMIT ?1"
)
#: The claim itself: ?1 the limit, ?2 now, ?3 the owner, ?4 the lease's expiry.
_CLAIM = (
    "UPDATE faxes SET state = 'claimed', attempt = attempt + 1, lease_owner = ?3,"  # noqa: S608
    f" lease_expires_at = ?4, updated_at = ?2 WHERE key IN (SELECT key FROM ({_CLAIMABLE}))"
    f" RETURNING {_COLUMNS}"
)
_INSERT_JOB = "INSERT INTO jobs (job_id, key) VALUES (?, ?) ON CONFLICT (job_id) DO NOTHING"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


#: A time no datetime can hold read as the last one that can.
_LAST = datetime.max.replace(tzinfo=timezone.utc)


def _time(value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, timezone.utc)
    except (OverflowError, OSError, ValueError):
        # Only a lease or check time an older version wrote from an out-of-range setting;
        # the row stays readable, and recover() ends such a lease.
        return _LAST


def _stamp(value: datetime, field: str) -> float:
    if value.utcoffset() is None:
        raise BadInputError(field, "a datetime without a time zone")
    return value.timestamp()


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
        payload=values[11],
        resend_of=values[12],
        next_check_at=_time(values[13]),
        checks=values[14],
        seq=values[15],
    )


def _limit(limit: int) -> int:
    # SQLite reads a negative LIMIT as none at all
    if limit < 0:
        raise BadInputError("limit", f"{limit} is below 0")
    return limit


def _marks(count: int) -> str:
    return ", ".join("?" * count)


#: Keys one statement names in its IN list at most (SQLite limits a statement's parameters).
_KEYS_AT_ONCE = 500


def _key_lists(keys: Sequence[str]) -> Iterator[list[str]]:
    """``keys``, each once and in order, in lists of at most :data:`_KEYS_AT_ONCE`."""
    wanted = list(dict.fromkeys(keys))
    for at in range(0, len(wanted), _KEYS_AT_ONCE):
        yield wanted[at : at + _KEYS_AT_ONCE]


class SqliteJournal:
    """A :class:`~faxws.journal.JournalStore` in the SQLite file ``path`` (created with its
    schema if missing; a file of the first schema is moved on in place). ``clock`` returns an
    aware datetime; ``busy_timeout`` is how long, in seconds, a write waits for another
    process's. A failure of the file (disk full, read-only, not a database) raises
    :class:`~faxws.journal.JournalError` naming the file and the cause."""

    def __init__(
        self, path: str | os.PathLike[str], *, clock: Clock = _utc_now, busy_timeout: float = 30.0
    ) -> None:
        self._clock = clock
        self._path = os.fspath(path)
        self._lock = threading.RLock()
        #: The boot id start marks commit lazily under; None: they are synced.
        self._epoch = _boot_id()
        with self._failures():
            self._db = sqlite3.connect(
                self._path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        try:
            with self._failures():
                self._setup(busy_timeout)
        except BaseException:
            self._db.close()
            raise

    def _setup(self, busy_timeout: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        with self._write():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise JournalError(
                    f"journal {self._path}: schema version {version} is newer than this faxws"
                )
            while version < SCHEMA_VERSION:
                _MIGRATIONS[version](self._db)
                version += 1
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
    def _failures(self) -> Iterator[None]:
        """The file's failures (disk full, read-only, locked past the busy time-out) as a
        JournalError naming the file; other errors pass unchanged."""
        try:
            yield
        except sqlite3.Error as error:
            raise JournalError(f"journal {self._path}: {error}{self._read_only()}") from error

    def _read_only(self) -> str:
        """A hint when the file, or the folder its WAL files go in, cannot be written."""
        folder = os.path.dirname(os.path.abspath(self._path))
        if not os.path.isdir(folder):
            return f" (the folder {folder} does not exist)"
        if not os.access(folder, os.W_OK) or (
            os.path.exists(self._path) and not os.access(self._path, os.W_OK)
        ):
            return " (the file or its folder is read-only)"
        return ""

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._failures():
            yield self._db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._failures():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                # a failed statement or COMMIT (disk full) may have ended the transaction
                if self._db.in_transaction:
                    with suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise

    def _select(self, key: str) -> Row | None:
        found = self._db.execute(f"{_SELECT} WHERE key = ?", (key,)).fetchone()
        return None if found is None else _row(found)

    def _selected(self, key: str) -> Row:
        row = self._select(key)
        assert row is not None
        return row

    def _move(
        self,
        key: str,
        target: State | None,
        sources: Iterable[State],
        owner: str | None = None,
        lease_seconds: float | None = None,
        **values: Any,
    ) -> Row:
        """Move ``key`` from one of ``sources`` to ``target`` (None: keep its state) if it is
        leased to ``owner`` (when given) unexpired, writing ``values`` too and, with
        ``lease_seconds``, a new lease expiry: one UPDATE whose WHERE is the check."""
        with self._write():
            return self._moved(key, target, sources, owner, lease_seconds, **values)

    def _moved(
        self,
        key: str,
        target: State | None,
        sources: Iterable[State],
        owner: str | None,
        lease_seconds: float | None,
        now: float | None = None,
        **values: Any,
    ) -> Row:
        """:meth:`_move` in the caller's transaction (at ``now``, by default the clock's)."""
        return _row(
            self._changed(key, target, sources, owner, lease_seconds, now, values, _COLUMNS)
        )

    def _changed(
        self,
        key: str,
        target: State | None,
        sources: Iterable[State],
        owner: str | None,
        lease_seconds: float | None,
        now: float | None,
        values: dict[str, Any],
        returning: str,
    ) -> Sequence[Any]:
        """:meth:`_moved`, answering the ``returning`` columns of the row as moved."""
        allowed = [s for s in sources if target is None or target in TRANSITIONS[s]]
        if now is None:
            now = self._now()
        if target is not None:
            values["state"] = target.value
            if target not in (State.CLAIMED, State.SENDING):
                values.update(lease_owner=None, lease_expires_at=None)
            if target not in _TRACKED:
                values["next_check_at"] = None
        if lease_seconds is not None:
            values["lease_expires_at"] = now + lease_seconds
        values["updated_at"] = now
        names = ", ".join(f"{name} = ?" for name in values)
        marks = _marks(len(allowed))
        query = f"UPDATE faxes SET {names} WHERE key = ? AND state IN ({marks})"  # noqa: S608
        params = [*values.values(), key, *(s.value for s in allowed)]
        if owner is not None:
            query += " AND lease_owner = ? AND lease_expires_at > ?"
            params += [owner, now]
        # the row as moved, from the statement that moved it (fetched to its end: a statement
        # still running would keep the transaction from committing)
        found = self._db.execute(f"{query} RETURNING {returning}", params).fetchall()
        if not found:
            raise self._refusal(key, target, allowed, owner)
        moved: Sequence[Any] = found[0]
        return moved

    def _refusal(
        self, key: str, target: State | None, allowed: Collection[State], owner: str | None
    ) -> JournalError:
        """Why a move of ``key`` that changed no row was refused."""
        row = self._select(key)
        if row is None:
            return UnknownKeyError(key)
        if row.state not in allowed:
            return IllegalTransitionError(key, row.state, target or row.state)
        return LeaseLostError(key, owner or "")

    # -- rows added ---------------------------------------------------------------------------

    def add(
        self, key: str, payload_sha256: str, payload: str = "", *, resend_of: str | None = None
    ) -> Row:
        check_added(key, payload_sha256, resend_of)
        with self._write():
            if resend_of is not None:
                if self._select(resend_of) is None:
                    raise UnknownKeyError(resend_of)
                self._check_not_resent(resend_of, key)
            return self._insert(key, payload_sha256, payload, resend_of)

    def add_many(self, rows: Iterable[tuple[str, str, str]]) -> list[Row]:
        added: list[Row] = []
        for chunk, error in chunks(rows):
            refused: Exception | None = None
            with self._write():
                for key, payload_sha256, payload in chunk:  # none: an empty transaction
                    try:
                        check_added(key, payload_sha256, None)
                        added.append(self._insert(key, payload_sha256, payload, None))
                    except BadInputError as exc:
                        refused = added_by_key(exc, key)
                    except JournalError as exc:
                        refused = exc
                    if refused is not None:
                        break  # the rows before it are committed
            if refused is not None:
                raise refused
            if error is not None:
                raise error
        return added

    def _check_not_resent(self, resend_of: str, key: str) -> None:
        found = self._db.execute("SELECT key FROM faxes WHERE resend_of = ?", (resend_of,))
        other = found.fetchone()
        if other is not None and other[0] != key:
            raise JournalError(f"journal row {resend_of!r} is already sent again as {other[0]!r}")

    def _insert(self, key: str, payload_sha256: str, payload: str, resend_of: str | None) -> Row:
        now = self._now()
        params = (key, payload_sha256, new_reference_id(), now, now, payload, resend_of)
        found = self._db.execute(_INSERT, params).fetchall()
        if found:
            return _row(found[0])
        row = self._selected(key)
        if row.payload_sha256 != payload_sha256:
            raise KeyReusedError(key)
        return row

    def add_resend(self, key: str) -> Row:
        with self._write():
            failed = self._select(key)
            if failed is None:
                raise UnknownKeyError(key)
            found = self._db.execute(f"{_SELECT} WHERE resend_of = ?", (key,)).fetchone()
            if found is not None:
                return _row(found)
            if failed.state is not State.FAILED:
                raise IllegalTransitionError(key, failed.state, State.PENDING)
            new_key = resend_key(failed)
            row = self._insert(new_key, failed.payload_sha256, failed.payload, key)
            if row.resend_of != key:
                raise JournalError(f"journal key {new_key!r} is taken by another row")
            return row

    # -- look-ups -----------------------------------------------------------------------------

    def get(self, key: str) -> Row | None:
        with self._read():
            return self._select(key)

    def by_job_id(self, job_id: str) -> Row | None:
        with self._read() as db:
            found = db.execute(
                f"{_SELECT} WHERE key = (SELECT key FROM jobs WHERE job_id = ?)",  # noqa: S608
                (job_id,),
            ).fetchone()
        return None if found is None else _row(found)

    def by_reference(self, reference_id: str) -> Row | None:
        with self._read() as db:
            found = db.execute(f"{_SELECT} WHERE reference_id = ?", (reference_id,)).fetchone()
        return None if found is None else _row(found)

    def counts_by_state(self) -> dict[State, int]:
        with self._read() as db:
            found = dict(db.execute("SELECT state, count(*) FROM faxes GROUP BY state").fetchall())
        return {state: found.get(state.value, 0) for state in State}

    def rows_in(self, state: State, limit: int | None = None) -> list[Row]:
        with self._read() as db:
            found = db.execute(
                f"{_SELECT} WHERE state = ? ORDER BY seq LIMIT ?",
                (state.value, -1 if limit is None else _limit(limit)),
            ).fetchall()
        return [_row(values) for values in found]

    def rows(
        self, states: Collection[State] | None = None, *, after: int = 0, limit: int = 500
    ) -> list[Row]:
        query = f"{_SELECT} WHERE seq > ?"
        params: list[object] = [after]
        if states is not None:
            query += f" AND state IN ({_marks(len(states))})"
            params += [State(s).value for s in states]
        with self._read() as db:
            found = db.execute(f"{query} ORDER BY seq LIMIT ?", [*params, _limit(limit)]).fetchall()
        return [_row(values) for values in found]

    # -- claims and sends ---------------------------------------------------------------------

    def claim(self, owner: str, lease_seconds: float, limit: int) -> list[Row]:
        check_lease(lease_seconds)
        with self._write() as db:
            now = self._now()
            found = db.execute(_CLAIM, (_limit(limit), now, owner, now + lease_seconds)).fetchall()
        return sorted((_row(values) for values in found), key=lambda row: row.seq)

    def heartbeat(self, key: str, owner: str, lease_seconds: float) -> Row:
        check_lease(lease_seconds)
        return self._move(key, None, (State.CLAIMED, State.SENDING), owner, lease_seconds)

    def release(self, key: str, owner: str, reason: str | None = None) -> Row:
        return self._move(key, State.PENDING, (State.CLAIMED, State.SENDING), owner, reason=reason)

    @contextmanager
    def _synced(self, synced: bool = True) -> Iterator[None]:
        """Commits within synced to disk (``synchronous=FULL``), when ``synced``."""
        with self._lock:
            if not synced:
                yield
                return
            self._db.execute("PRAGMA synchronous = FULL")
            try:
                yield
            finally:
                self._db.execute("PRAGMA synchronous = NORMAL")

    def mark_sending(self, key: str, owner: str, lease_seconds: float | None = None) -> Row:
        check_lease(lease_seconds)
        # The one commit a send waits for on disk (see the module's docstring).
        with self._synced(), self._write():
            now = self._now()
            return self._moved(
                key, State.SENDING, (State.CLAIMED,), owner, lease_seconds, now, started_at=now
            )

    def mark_sending_many(
        self, keys: Sequence[str], owner: str, lease_seconds: float | None = None
    ) -> list[str]:
        check_lease(lease_seconds)
        wanted = list(dict.fromkeys(keys))
        moved: set[str] = set()
        # One commit synced to disk for them all (see the module's docstring).
        with self._synced(), self._write() as db:
            now = self._now()
            sets = (
                "state = 'sending', started_at = NULL, reserved_attempt = attempt,"
                " sending_epoch = ?, updated_at = ?"
            )
            values: list[object] = [self._epoch or _SYNCED, now]
            if lease_seconds is not None:
                sets += ", lease_expires_at = ?"
                values.append(now + lease_seconds)
            for some in _key_lists(wanted):
                moved.update(
                    key
                    for (key,) in db.execute(
                        f"UPDATE faxes SET {sets} WHERE key IN ({_marks(len(some))})"  # noqa: S608
                        " AND state = 'claimed' AND lease_owner = ? AND lease_expires_at > ?"
                        " RETURNING key",
                        [*values, *some, owner, now],
                    ).fetchall()
                )
        return [key for key in wanted if key in moved]

    def start_send(self, key: str, owner: str, submitted: Submission | None = None) -> None:
        refused: JournalError | None = None
        # Lazy when the row keeps a boot id (see the module's docstring).
        with self._synced(self._epoch is None), self._write() as db:
            now = self._now()
            if submitted is not None:
                # the answer before, recorded without reading its row back
                self._submit(db, submitted, (State.SENDING,), owner, now, "key")
            started = db.execute(
                "UPDATE faxes SET started_at = ?, updated_at = ? WHERE key = ?"  # noqa: S608
                f" AND state = 'sending' AND {_NOT_STARTED}"
                " AND lease_owner = ? AND lease_expires_at > ?",
                (now, now, key, owner, now),
            ).rowcount
            if started != 1:
                refused = self._refusal(key, State.SENDING, (State.SENDING,), owner)
                if isinstance(refused, LeaseLostError) and self._started(key):
                    refused = IllegalTransitionError(key, State.SENDING, State.SENDING)
        if refused is not None:
            raise refused

    def release_unstarted(self, keys: Sequence[str], owner: str) -> None:
        with self._write() as db:
            now = self._now()
            for some in _key_lists(keys):
                db.execute(
                    "UPDATE faxes SET state = 'pending', reason = NULL, lease_owner = NULL,"  # noqa: S608
                    f" lease_expires_at = NULL, updated_at = ? WHERE key IN ({_marks(len(some))})"
                    f" AND state = 'sending' AND {_NOT_STARTED}"
                    " AND lease_owner = ? AND lease_expires_at > ?",
                    [now, *some, owner, now],
                )

    def _started(self, key: str) -> bool:
        found = self._db.execute("SELECT started_at FROM faxes WHERE key = ?", (key,)).fetchone()
        return found is not None and found[0] is not None

    def mark_submitted(
        self, key: str, owner: str, job_ids: Sequence[str], check_at: datetime | None = None
    ) -> Row:
        return self._submitted(key, (State.SENDING,), owner, job_ids, check_at)

    def _submitted(
        self,
        key: str,
        sources: Sequence[State],
        owner: str | None,
        job_ids: Sequence[str],
        check_at: datetime | None,
    ) -> Row:
        submitted = Submission(key, tuple(job_ids), check_at)
        with self._write() as db:
            return _row(self._submit(db, submitted, sources, owner, self._now(), _COLUMNS))

    def _submit(
        self,
        db: sqlite3.Connection,
        submitted: Submission,
        sources: Sequence[State],
        owner: str | None,
        now: float,
        returning: str,
    ) -> Sequence[Any]:
        """The move of ``submitted`` to SUBMITTED, its job ids made findable, in the caller's
        transaction; the ``returning`` columns of the row as moved."""
        key, check_at = submitted.key, submitted.check_at
        ids = [str(job_id) for job_id in submitted.job_ids]
        when = now if check_at is None else _stamp(check_at, "check_at")
        values = {"job_ids": json.dumps(ids), "next_check_at": when, "checks": 0}
        found = self._changed(key, State.SUBMITTED, sources, owner, None, now, values, returning)
        db.executemany(_INSERT_JOB, [(job_id, key) for job_id in ids])
        return found

    def mark_failed(self, key: str, owner: str, reason: str) -> Row:
        return self._move(key, State.FAILED, (State.SENDING,), owner, reason=reason)

    def mark_uncertain(
        self, key: str, owner: str, reason: str, check_at: datetime | None = None
    ) -> Row:
        when = None if check_at is None else _stamp(check_at, "check_at")
        with self._write():
            now = self._now()
            return self._moved(
                key,
                State.UNCERTAIN,
                (State.SENDING,),
                owner,
                None,
                now,
                reason=reason,
                next_check_at=now if when is None else when,
                checks=0,
            )

    def resolve_uncertain(
        self, key: str, job_ids: Sequence[str], check_at: datetime | None = None
    ) -> Row:
        return self._submitted(key, (State.UNCERTAIN,), None, job_ids, check_at)

    def mark_needs_review(self, key: str, reason: str) -> Row:
        return self._move(key, State.NEEDS_REVIEW, REVIEW_SOURCES, reason=reason)

    def record_late_answer(self, key: str, job_ids: Sequence[str], reason: str) -> Row:
        ids = [str(job_id) for job_id in job_ids]
        with self._synced(), self._write() as db:
            row = self._moved(
                key, None, (State.NEEDS_REVIEW,), None, None, job_ids=json.dumps(ids), reason=reason
            )
            db.executemany(_INSERT_JOB, [(job_id, key) for job_id in ids])
        return row

    def mark_final(self, key: str, state: State, reason: str | None = None) -> Row:
        return self._move(key, state, final_sources(state), reason=reason)

    # -- tracking -----------------------------------------------------------------------------

    def due(self, state: State, lease_seconds: float, limit: int) -> list[Row]:
        if state not in _TRACKED:
            raise BadInputError("state", f"{state.value} rows are not looked up")
        check_lease(lease_seconds)
        with self._write() as db:
            now = self._now()
            found = db.execute(
                f"{_SELECT} WHERE state = ? AND next_check_at <= ?"
                " ORDER BY next_check_at, seq LIMIT ?",
                (state.value, now, _limit(limit)),
            ).fetchall()
            if not found:
                return []
            rows = [_row(values) for values in found]
            later = now + lease_seconds
            db.executemany(
                "UPDATE faxes SET next_check_at = ? WHERE key = ?",
                [(later, row.key) for row in rows],
            )
            return [dataclasses.replace(row, next_check_at=_time(later)) for row in rows]

    def schedule(self, keys: Sequence[str], check_at: datetime) -> None:
        when = _stamp(check_at, "check_at")
        with self._write() as db:
            db.executemany(
                "UPDATE faxes SET next_check_at = ?, checks = checks + 1"
                " WHERE key = ? AND state IN ('submitted', 'uncertain')",
                [(when, key) for key in keys],
            )

    def recover(self) -> list[Row]:
        with self._write() as db:
            now = self._now()
            found = db.execute(
                f"SELECT key, state, {_NOT_STARTED}, sending_epoch FROM faxes"  # noqa: S608
                " WHERE state IN ('claimed', 'sending')"
                " AND (lease_expires_at <= ? OR lease_expires_at > ?) ORDER BY seq",
                (now, now + MAX_LEASE_AHEAD),
            ).fetchall()
            # a row never started whose start mark could not have been undone: nothing sent
            unsent = {_SYNCED} if self._epoch is None else {_SYNCED, self._epoch}
            for key, state, not_started, epoch in found:
                if state == State.CLAIMED.value or (not_started and epoch in unsent):
                    db.execute(
                        "UPDATE faxes SET state = 'pending', reason = NULL, lease_owner = NULL,"
                        " lease_expires_at = NULL, updated_at = ? WHERE key = ?",
                        (now, key),
                    )
                else:
                    db.execute(
                        "UPDATE faxes SET state = 'uncertain', reason = ?, lease_owner = NULL,"
                        " lease_expires_at = NULL, next_check_at = ?, checks = 0, updated_at = ?"
                        " WHERE key = ?",
                        ("the lease expired while sending", now, now, key),
                    )
            return [self._selected(key) for key, *_ in found]

    # -- limits shared by every worker --------------------------------------------------------

    def next_call_at(self, account: str, interval: float) -> datetime:
        check_interval(interval)
        with self._write() as db:
            now = self._now()
            found = db.execute(
                "SELECT last_call_at FROM limits WHERE account = ?", (account,)
            ).fetchone()
            reserved = None if found is None else found[0]
            if reserved is None or not reserved <= now + MAX_RESERVED_AHEAD:
                at = now  # none, or one no valid rate reserves (see MAX_RESERVED_AHEAD)
            else:
                at = max(now, reserved + interval)
            db.execute(
                "INSERT INTO limits (account, last_call_at) VALUES (?, ?)"
                " ON CONFLICT (account) DO UPDATE SET last_call_at = excluded.last_call_at",
                (account, at),
            )
        return datetime.fromtimestamp(at, timezone.utc)

    def acquire_send_slot(
        self, account: str, holder: str, limit: int, lease_seconds: float
    ) -> bool:
        check_lease(lease_seconds)
        with self._write() as db:
            now = self._now()
            db.execute(
                "DELETE FROM send_slots WHERE account = ? AND expires_at <= ?", (account, now)
            )
            if (
                db.execute(
                    "UPDATE send_slots SET expires_at = ? WHERE account = ? AND holder = ?",
                    (now + lease_seconds, account, holder),
                ).rowcount
                == 1
            ):
                return True
            held = db.execute(
                "SELECT count(*) FROM send_slots WHERE account = ?", (account,)
            ).fetchone()[0]
            if held >= limit:
                return False
            db.execute(
                "INSERT INTO send_slots (account, holder, expires_at) VALUES (?, ?, ?)",
                (account, holder, now + lease_seconds),
            )
            return True

    def release_send_slot(self, account: str, holder: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM send_slots WHERE account = ? AND holder = ?", (account, holder))

    def meta(self, name: str, default: str) -> str:
        with self._write() as db:
            db.execute(
                "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                (name, default),
            )
            value: str = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()[0]
            return value
