"""A journal in PostgreSQL (psycopg 3), shared by workers on many machines.

Every move is one ``UPDATE`` whose ``WHERE`` names the states (and lease) it moves from, so it
is a compare-and-set, committed when the server answers (the connection is in autocommit; the
few moves of several statements run in an explicit transaction). A claim is one ``UPDATE`` of
rows picked ``FOR UPDATE SKIP LOCKED``: claimers never wait behind each other and no lock
outlives the call. Times are the store's clock's (never the server's ``now()``), so leases
behave alike on every store and under a test clock.

Durability: the move to SENDING (of several rows at once) and the mark that a row's send starts
commit as the server is set to (``synchronous_commit``, on by default: the WAL flushed to disk
before the send's first byte), and that flush carries every earlier commit of the server with
it; the mark records the answer of the send before in the same statement. Adds, resends, a
cancel, the shared limits and values commit so too. The other moves commit with
``synchronous_commit`` off, set for their own transaction in their own statement (a server
crash may undo the last of them, never a corruption): undoing any of them never sends a fax
twice, because a send needs its row's start mark, whose flush would have kept them. A claim or
a heartbeat undone is a lease shorter than its worker thinks: its moves check the lease and are
refused. A release undone leaves the row CLAIMED or SENDING without a start mark (both back to
PENDING once expired) or SENDING started (expired: looked up by its ReferenceId). A move from
SENDING undone (SUBMITTED, FAILED, UNCERTAIN) leaves the row SENDING: once its lease expires it
is looked up by its ReferenceId. A look-up's or a tracking round's moves undone (RESOLVED, due,
scheduled, DELIVERED, FAILED, NEEDS_REVIEW) are made again by the next look-up or round; a
recovery undone is made again by the next. A cancel stays synced: one undone would leave a row
the caller cancelled pending, to be sent.

A connection the server dropped (a restart) is replaced before the next call; a move whose
connection broke while it was in flight raises :class:`~faxws.journal.JournalError` saying
whether it was committed is unknown (its answer was lost). A password in the DSN is never in a
message or a ``repr``.
"""

from __future__ import annotations

import re
import select
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import suppress
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar
from urllib.parse import unquote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

from faxws._protocol.assumptions import new_reference_id
from faxws._protocol.redact import redact
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

__all__ = ["SCHEMA_VERSION", "PostgresJournal"]

SCHEMA_VERSION = 2
#: The key of the advisory lock that makes concurrent first opens create the tables once.
_SETUP_LOCK = 0x6661_7877_735F_6A31  # "faxws_j1"
_VERSION_NAME = "faxws.schema_version"
_TRACKED = (State.SUBMITTED, State.UNCERTAIN)
_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
_FIELDS = (
    "key",
    "payload_sha256",
    "reference_id",
    "state",
    "attempt",
    "job_ids",
    "lease_owner",
    "lease_expires_at",
    "reason",
    "created_at",
    "updated_at",
    "payload",
    "resend_of",
    "next_check_at",
    "checks",
    "seq",
)
_COLUMNS = ", ".join(_FIELDS)
_SEQ = _FIELDS.index("seq")
#: Where ``due`` returns a row's check time before it moved it (after the row's columns).
_WAS = len(_FIELDS)
_TABLES = ("faxes", "jobs", "limits", "send_slots", "meta")
#: Statements as templates: ``{faxes}`` and the other tables' names (schema-qualified when the
#: journal has a schema), ``{columns}`` a Row's columns (``{f_columns}`` of table alias f).
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {meta} (name text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {faxes} (
        key text PRIMARY KEY,
        payload_sha256 text NOT NULL,
        reference_id text NOT NULL UNIQUE,
        state text NOT NULL,
        attempt integer NOT NULL DEFAULT 0,
        job_ids text[] NOT NULL DEFAULT '{{}}',
        lease_owner text,
        lease_expires_at timestamptz,
        reason text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        payload text NOT NULL DEFAULT '',
        resend_of text,
        next_check_at timestamptz,
        checks integer NOT NULL DEFAULT 0,
        seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE
    )""",
    # Every move writes a new version of its row into each index it fits: partial indexes
    # keep that to few. A claim scans only the rows that can be claimed, in seq order.
    """CREATE INDEX IF NOT EXISTS faxws_faxes_claimable ON {faxes} (seq)
        WHERE state IN ('pending', 'claimed')""",
    """CREATE UNIQUE INDEX IF NOT EXISTS faxws_faxes_resend_of ON {faxes} (resend_of)
        WHERE resend_of IS NOT NULL""",
    """CREATE INDEX IF NOT EXISTS faxws_faxes_due ON {faxes} (state, next_check_at, seq)
        WHERE state IN ('submitted', 'uncertain')""",
    """CREATE INDEX IF NOT EXISTS faxws_faxes_leased ON {faxes} (lease_expires_at)
        WHERE state IN ('claimed', 'sending')""",
    "CREATE TABLE IF NOT EXISTS {jobs} (job_id text PRIMARY KEY, key text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {limits} (
        account text PRIMARY KEY,
        last_call_at timestamptz NOT NULL
    )""",
    # a row per slot: taking one is a claim (SKIP LOCKED), not a count under a lock
    """CREATE TABLE IF NOT EXISTS {send_slots} (
        account text NOT NULL,
        slot integer NOT NULL,
        holder text,
        expires_at timestamptz,
        PRIMARY KEY (account, slot)
    )""",
    # version 2: when a SENDING row's send started (NULL: not yet), and the attempt that
    # mark_sending_many moved to SENDING (a row is "not started" only in that attempt: a
    # process of version 1, still running, moves rows without these columns, and every claim
    # counts an attempt); a row SENDING before counts as started
    "ALTER TABLE {faxes} ADD COLUMN IF NOT EXISTS started_at timestamptz",
    "ALTER TABLE {faxes} ADD COLUMN IF NOT EXISTS reserved_attempt integer",
    "UPDATE {faxes} SET started_at = updated_at WHERE state = 'sending' AND started_at IS NULL",
)
_QUERIES = {
    "get": "SELECT {columns} FROM {faxes} WHERE key = %s",
    "lock": "SELECT {columns} FROM {faxes} WHERE key = %s FOR UPDATE",
    "resent": "SELECT {columns} FROM {faxes} WHERE resend_of = %s",
    "by_job_id": (
        "SELECT {columns} FROM {faxes} WHERE key = (SELECT key FROM {jobs} WHERE job_id = %s)"
    ),
    "by_reference": "SELECT {columns} FROM {faxes} WHERE reference_id = %s",
    "counts": "SELECT state, count(*) FROM {faxes} GROUP BY state",
    "rows_in": "SELECT {columns} FROM {faxes} WHERE state = %s ORDER BY seq LIMIT %s",
    "rows": (
        "SELECT {columns} FROM {faxes} WHERE seq > %(after)s"
        " AND (%(states)s::text[] IS NULL OR state = ANY(%(states)s::text[]))"
        " ORDER BY seq LIMIT %(limit)s"
    ),
    "insert": (
        "INSERT INTO {faxes} (key, payload_sha256, reference_id, state, created_at, updated_at,"
        " payload, resend_of) VALUES (%s, %s, %s, 'pending', %s, %s, %s, %s)"
        " ON CONFLICT (key) DO NOTHING RETURNING {columns}"
    ),
    # FOR UPDATE SKIP LOCKED: claimers never wait for each other nor take one row twice (a
    # row locked meanwhile is read again and its state checked again)
    "claim": (
        "UPDATE {faxes} SET state = 'claimed', attempt = attempt + 1, lease_owner = %s,"
        " lease_expires_at = %s, updated_at = %s"
        " WHERE key IN (SELECT key FROM {faxes} WHERE state = 'pending'"
        " OR (state = 'claimed' AND lease_expires_at <= %s)"
        " ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED)"
        " RETURNING {columns}, {lazy}"
    ),
    "due": (
        "UPDATE {faxes} f SET next_check_at = %(later)s FROM (SELECT key, next_check_at AS was"
        " FROM {faxes} WHERE state = %(state)s AND next_check_at <= %(now)s"
        " ORDER BY next_check_at, seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED) d"
        " WHERE f.key = d.key RETURNING {f_columns}, d.was, {lazy}"
    ),
    # a key named twice is counted twice, as two schedules one after the other would
    "schedule": (
        "UPDATE {faxes} f SET next_check_at = %s, checks = f.checks + n.times"
        " FROM (SELECT key, count(*) AS times FROM unnest(%s::text[]) AS key GROUP BY key) n"
        " WHERE f.key = n.key AND f.state IN ('submitted', 'uncertain') RETURNING {lazy}"
    ),
    # a row claimed, or SENDING but never started (its start mark is synced: none was lost),
    # goes back to pending; a started one is looked up (each SET reads the row as it was); a
    # lease ending beyond any this version writes (MAX_LEASE_AHEAD) counts as expired
    "recover": (
        "UPDATE {faxes} SET"
        " state = CASE WHEN {unsent} THEN 'pending' ELSE 'uncertain' END,"
        " reason = CASE WHEN {unsent} THEN NULL ELSE %(reason)s END,"
        " next_check_at = CASE WHEN {unsent} THEN NULL ELSE %(now)s END,"
        " checks = CASE WHEN {unsent} THEN checks ELSE 0 END,"
        " lease_owner = NULL, lease_expires_at = NULL, updated_at = %(now)s"
        " WHERE state IN ('claimed', 'sending')"
        " AND (lease_expires_at <= %(now)s OR lease_expires_at > %(beyond)s)"
        " RETURNING {columns}, {lazy}"
    ),
    "release_unstarted": (
        "UPDATE {faxes} SET state = 'pending', reason = NULL, lease_owner = NULL,"
        " lease_expires_at = NULL, updated_at = %(now)s WHERE key = ANY(%(keys)s::text[])"
        " AND state = 'sending' AND {not_started} AND lease_owner = %(owner)s"
        " AND lease_expires_at > %(now)s RETURNING {lazy}"
    ),
    "sending_many": (
        "UPDATE {faxes} SET state = 'sending', started_at = NULL, reserved_attempt = attempt,"
        " lease_expires_at = coalesce(%(expires)s::timestamptz, lease_expires_at),"
        " updated_at = %(now)s"
        " WHERE key = ANY(%(keys)s::text[]) AND state = 'claimed' AND lease_owner = %(owner)s"
        " AND lease_expires_at > %(now)s RETURNING key"
    ),
    # the send before's answer (when there is one) and this row's start mark, in one
    # statement; the mark only once the answer is recorded
    "start": (
        "WITH done AS (UPDATE {faxes} SET state = 'submitted', job_ids = %(jobs)s::text[],"
        " next_check_at = %(check_at)s::timestamptz, checks = 0, lease_owner = NULL,"
        " lease_expires_at = NULL, updated_at = %(now)s WHERE key = %(done)s AND state = 'sending'"
        " AND lease_owner = %(owner)s AND lease_expires_at > %(now)s RETURNING key, job_ids),"
        " recorded AS (INSERT INTO {jobs} (job_id, key) SELECT DISTINCT unnest(done.job_ids),"
        " done.key FROM done ON CONFLICT (job_id) DO NOTHING),"
        " started AS (UPDATE {faxes} SET started_at = %(now)s, updated_at = %(now)s"
        " WHERE key = %(key)s AND state = 'sending' AND {not_started}"
        " AND lease_owner = %(owner)s AND lease_expires_at > %(now)s"
        " AND (%(done)s::text IS NULL OR EXISTS (SELECT FROM done)) RETURNING key)"
        " SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM started)"
    ),
    "next_call": (
        "INSERT INTO {limits} AS l (account, last_call_at) VALUES (%(account)s, %(now)s)"
        " ON CONFLICT (account) DO UPDATE"
        " SET last_call_at = CASE WHEN l.last_call_at > %(beyond)s THEN %(now)s"
        " ELSE greatest(%(now)s, l.last_call_at + %(interval)s) END"
        " RETURNING last_call_at"
    ),
    # the holder's own slot first (taken again: its lease renewed), else the lowest free one
    "take_slot": (
        "UPDATE {send_slots} s SET holder = %(holder)s, expires_at = %(expires)s"
        " FROM (SELECT slot FROM {send_slots} WHERE account = %(account)s"
        " AND slot < %(limit)s"
        " AND (holder IS NULL OR holder = %(holder)s OR expires_at <= %(now)s)"
        " ORDER BY holder IS NOT DISTINCT FROM %(holder)s DESC, slot LIMIT 1"
        " FOR UPDATE SKIP LOCKED) free"
        " WHERE s.account = %(account)s AND s.slot = free.slot RETURNING s.slot"
    ),
    "make_slots": (
        "INSERT INTO {send_slots} (account, slot) SELECT %(account)s, n"
        " FROM generate_series(0, %(limit)s - 1) AS n ON CONFLICT DO NOTHING RETURNING slot"
    ),
    "release_slot": (
        "UPDATE {send_slots} SET holder = NULL, expires_at = NULL"
        " WHERE account = %s AND holder = %s"
    ),
    "meta": "SELECT value FROM {meta} WHERE name = %s",
    "set_meta": (
        "INSERT INTO {meta} (name, value) VALUES (%s, %s)"
        " ON CONFLICT (name) DO NOTHING RETURNING value"
    ),
    "version": (
        "INSERT INTO {meta} (name, value) VALUES (%s, %s)"
        " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
    ),
}

#: Returned by a statement (after the rows it moved, so it never changes how the statement is
#: planned): its transaction, the statement's own in autocommit, commits without waiting for
#: the WAL's flush (see the module's docstring). The setting is that transaction's alone: the
#: connection's next statement commits as the server is set to. A statement that moves no row
#: writes nothing to wait for.
_LAZY = "set_config('synchronous_commit', 'off', true) AS lazy"

T = TypeVar("T")
Cursor = psycopg.Cursor[tuple[Any, ...]]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _aware(value: datetime, field: str) -> datetime:
    if value.utcoffset() is None:
        raise BadInputError(field, "a datetime without a time zone")
    return value


def _row(values: Sequence[Any]) -> Row:
    return Row(
        key=values[0],
        payload_sha256=values[1],
        reference_id=values[2],
        state=State(values[3]),
        attempt=values[4],
        job_ids=tuple(values[5]),
        lease_owner=values[6],
        lease_expires_at=values[7],
        reason=values[8],
        created_at=values[9],
        updated_at=values[10],
        payload=values[11],
        resend_of=values[12],
        next_check_at=values[13],
        checks=values[14],
        seq=values[15],
    )


def _limit(limit: int) -> int:
    if limit < 0:
        raise BadInputError("limit", f"{limit} is below 0")
    return limit


def _by_seq(found: Sequence[Sequence[Any]]) -> list[Row]:
    return sorted((_row(values) for values in found), key=lambda row: row.seq)


def _dsn_secrets(dsn: str) -> list[str]:
    """Every spelling of the DSN's passwords (``password``, ``sslpassword``) worth masking:
    libpq's reading, and what a malformed DSN's author meant (a quoted or URL-encoded value, a
    URL's user info up to its first or last ``@``; guesses shorter than 4 characters left
    out, or every such letter would be masked)."""
    try:
        given = conninfo_to_dict(dsn)
    except psycopg.Error:
        given = {}
    read = [str(given[name]) for name in ("password", "sslpassword") if given.get(name)]
    guesses: list[str] = []
    patterns = [r"password\s*=\s*('(?:\\.|[^'\\])*'?|\S+)"]
    url = re.match(r"\s*[A-Za-z][A-Za-z0-9+.-]*://([^:@/?#]*):(.*)@", dsn)
    if "://" in dsn:
        patterns.append(r"password=([^\s&#]+)")  # a query parameter, up to the next
    for pattern in patterns:
        for match in re.finditer(pattern, dsn):
            value = match.group(1)
            guesses += [value, value.strip("'"), re.sub(r"\\(.)", r"\1", value.strip("'"))]
    if url is not None:
        for value in (url.group(2), url.group(2).split("@")[0]):
            guesses += [value, unquote(value)]
        guesses += re.split(r"[@/:?#\[\]]", url.group(2))
    found = set(read) | {value for value in guesses if len(value) >= 4}
    return sorted(found, key=len, reverse=True)


def _readable(fd: int) -> bool:
    """Whether an idle connection's socket has something to read: the server sent it a
    farewell (a restart, a terminated backend) or closed it."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover - Windows


class PostgresJournal:
    """A :class:`~faxws.journal.JournalStore` in PostgreSQL, shared by every worker that
    opens the same database and schema (on any machine).

    ``dsn`` is a libpq URL (``postgresql://user@host/db``) or ``key=value`` string; its
    password never appears in an error or a ``repr``. The tables (``faxws_faxes`` and a few
    ``faxws_*`` more) are created if missing, in ``schema`` (created too) or, without one, in
    the connection's current schema (the first of its ``search_path``). ``clock`` returns an
    aware datetime: every lease and check time is the clock's. ``connect_timeout`` is in
    seconds. A handle has one connection; its threads take turns on it."""

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock = _utc_now,
        schema: str | None = None,
        connect_timeout: float = 10,
    ) -> None:
        self._dsn = dsn
        self._secrets = _dsn_secrets(dsn)
        self._clock = clock
        self._schema = schema
        self._connect_timeout = max(1, round(connect_timeout))
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._cursor: Cursor | None = None  # the connection's, used by every call
        self._closed = False
        self._moves: dict[tuple[tuple[str, ...], tuple[State, ...], bool, bool, bool], str] = {}
        self._names = {
            table: sql.Identifier(*((schema,) if schema else ()), f"faxws_{table}").as_string(None)
            for table in _TABLES
        }
        self._q = {name: self._sql(text) for name, text in _QUERIES.items()}
        try:
            self._run(self._setup, "opening the journal")
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        schema = "" if self._schema is None else f", schema={self._schema!r}"
        return f"PostgresJournal({self._where()!r}{schema})"

    def _where(self) -> str:
        return redact(self._dsn, self._secrets)

    def _sql(self, template: str) -> str:
        f_columns = ", ".join(f"f.{name}" for name in _FIELDS)
        return template.format(
            columns=_COLUMNS,
            f_columns=f_columns,
            lazy=_LAZY,
            unsent="(state = 'claimed' OR (started_at IS NULL AND reserved_attempt = attempt))",
            not_started="started_at IS NULL AND reserved_attempt = attempt",
            **self._names,
        )

    # -- the connection -----------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        conn = self._conn
        if conn is not None and (conn.closed or conn.broken or _readable(conn.fileno())):
            self._drop()
            conn = None
        if conn is None:
            try:
                conn = psycopg.connect(self._dsn, autocommit=True, **self._settings())
            except psycopg.Error as error:
                raise self._error(f"could not connect: {self._text(error)}") from None
            try:
                # times come back in UTC, whatever the server's or the role's TimeZone
                conn.execute("SET TIME ZONE 'UTC'")
            except psycopg.Error as error:
                conn.close()
                raise self._error(f"could not set up the connection: {self._text(error)}") from None
            self._conn, self._cursor = conn, conn.cursor()
        return conn

    def _settings(self) -> dict[str, Any]:
        """The connect time-out, and TCP keepalives (unless the DSN sets them) that end a call
        waiting on a server gone silent in about a minute, not hours."""
        try:
            given = conninfo_to_dict(self._dsn)
        except psycopg.Error:
            given = {}  # psycopg.connect says what is wrong with it
        settings = {name: value for name, value in _KEEPALIVES.items() if name not in given}
        return {**settings, "connect_timeout": self._connect_timeout}

    def _drop(self) -> None:
        conn, self._conn, self._cursor = self._conn, None, None
        if conn is not None:
            with suppress(psycopg.Error):
                conn.close()

    def _text(self, error: BaseException) -> str:
        text = " ".join(str(error).split()) or type(error).__name__
        return redact(text, self._secrets)

    def _error(self, text: str) -> JournalError:
        return JournalError(f"journal {self._where()}: {text}")

    def _run(self, work: Callable[[Cursor], T], what: str | None, *, read: bool = False) -> T:
        """``work`` on this handle's connection, under its lock. ``what`` names a move (its
        failure says whether it may have committed) or is None for a look-up; a ``read`` whose
        connection broke is tried once more on a new one."""
        with self._lock:
            if self._closed:
                raise self._error("the journal is closed")
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    cursor = self._cursor
                    assert cursor is not None
                    return work(cursor)
                except psycopg.Error as error:
                    lost = conn.closed or conn.broken
                    if lost:
                        self._drop()
                    if lost and read and attempt == 1:
                        continue
                    text = self._text(error)
                    if what is None:
                        raise self._error(text) from None
                    if lost:
                        raise self._error(
                            f"the connection was lost during {what}; whether it was committed"
                            f" is unknown: {text}"
                        ) from None
                    raise self._error(f"{what} failed and was not committed: {text}") from None
                except BaseException:
                    # interrupted mid-statement (or mid-transaction): start afresh next time
                    if conn.closed or conn.info.transaction_status != TransactionStatus.IDLE:
                        self._drop()
                    raise
            raise AssertionError("unreachable")  # pragma: no cover

    def _setup(self, cursor: Cursor) -> None:
        conn = cursor.connection
        with conn.transaction():
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
            if self._schema is None:
                cursor.execute("SELECT current_schema()")
                found = cursor.fetchone()
                if found is None or found[0] is None:
                    raise self._error(
                        "the connection's search_path names no schema to keep the journal in"
                    )
            else:
                schema = sql.Identifier(self._schema).as_string(None)
                cursor.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self._schema,))
                if cursor.fetchone() is None:
                    cursor.execute(f"CREATE SCHEMA {schema}")
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", (self._names["meta"],))
            found = cursor.fetchone()
            version = 0
            if found is not None and found[0]:
                cursor.execute(self._q["meta"], (_VERSION_NAME,))
                value = cursor.fetchone()
                text = "0" if value is None else str(value[0])
                if not (text.isascii() and text.isdigit()):
                    raise self._error(f"schema version {text[:20]!r} is not a version of faxws's")
                version = int(text)
            if version > SCHEMA_VERSION:
                raise self._error(f"schema version {version} is newer than this faxws")
            if version < SCHEMA_VERSION:
                for statement in _SCHEMA:
                    cursor.execute(self._sql(statement))
                cursor.execute(self._q["version"], (_VERSION_NAME, str(SCHEMA_VERSION)))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop()

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> datetime:
        now = self._clock()
        if now.utcoffset() is None:
            raise ValueError("the journal's clock returned a datetime without a time zone")
        return now

    # -- moves --------------------------------------------------------------------------------

    def _move(
        self,
        key: str,
        target: State | None,
        sources: Collection[State],
        owner: str | None = None,
        lease_seconds: float | None = None,
        *,
        jobs: Sequence[str] | None = None,
        check: bool = False,
        check_at: datetime | None = None,
        durable: bool = False,
        **values: Any,
    ) -> Row:
        """Move ``key`` from one of ``sources`` to ``target`` (None: keep its state) if it is
        leased to ``owner`` (when given) unexpired, writing ``values`` too and, with
        ``lease_seconds``, a new lease expiry; with ``jobs``, the job ids are recorded too;
        with ``check``, the row is next looked up at ``check_at`` (None: now) and its checks
        counted from 0. One statement whose WHERE is the check; only a refused move reads the
        row again. Only a ``durable`` move waits for the WAL's flush (see the module's
        docstring)."""
        check_lease(lease_seconds)
        allowed = [s for s in sources if target is None or target in TRANSITIONS[s]]
        if check_at is not None:
            _aware(check_at, "check_at")
        now = self._now()
        if check:
            values.update(next_check_at=now if check_at is None else check_at, checks=0)
        if target is not None:
            values["state"] = target.value
            if target not in (State.CLAIMED, State.SENDING):
                values.update(lease_owner=None, lease_expires_at=None)
            if target not in _TRACKED:
                values["next_check_at"] = None
        if lease_seconds is not None:
            values["lease_expires_at"] = now + timedelta(seconds=lease_seconds)
        values["updated_at"] = now
        if jobs is not None:
            values["job_ids"] = list(jobs)
        shape = (tuple(values), tuple(allowed), owner is not None, jobs is not None, durable)
        query = self._move_query(*shape)
        params = [*values.values(), key]
        if owner is not None:
            params += [owner, now]
        what = (
            f"the heartbeat of row {key!r}"
            if target is None
            else f"the move of row {key!r} to {target.value}"
        )

        def work(cursor: Cursor) -> Row:
            for _ in range(3):
                found = cursor.execute(query, params).fetchone()
                if found is not None:
                    return _row(found)
                refused = self._refusal(cursor, key, target, allowed, owner, now)
                if refused is not None:
                    raise refused
                # the row changed between the two statements: try the move on what it is now
            raise self._error(f"row {key!r} kept changing during {what}")

        return self._run(work, what)

    def _move_query(
        self,
        names: tuple[str, ...],
        sources: tuple[State, ...],
        owned: bool,
        jobs: bool,
        durable: bool,
    ) -> str:
        """The statement of a move of this shape: the values of ``names``, then the key, then
        (``owned``) the owner and the time, as parameters, in that order."""
        cache = (names, sources, owned, jobs, durable)
        query = self._moves.get(cache)
        if query is None:
            # our own column names and states only (as literals, the parameters fewer): every
            # value is a parameter
            sets = ", ".join(f"{name} = %s" for name in names)
            states = ", ".join(f"'{state.value}'" for state in sources) or "NULL"
            template = (
                "UPDATE {faxes} SET " + sets + " WHERE key = %s"  # noqa: S608
                " AND state IN (" + states + ")"
            )
            if owned:
                template += " AND lease_owner = %s AND lease_expires_at > %s"
            template += " RETURNING {columns}" + ("" if durable else ", {lazy}")
            if jobs:
                # the job ids made findable in the same statement; the first row given a job
                # id keeps it
                template = (
                    "WITH moved AS (" + template + "), recorded AS (INSERT INTO {jobs}"  # noqa: S608
                    " (job_id, key) SELECT DISTINCT unnest(moved.job_ids), moved.key FROM moved"
                    " ON CONFLICT (job_id) DO NOTHING) SELECT {columns}"
                    + ("" if durable else ", lazy")
                    + " FROM moved"
                )
            query = self._moves[cache] = self._sql(template)
        return query

    def _get(self, cursor: Cursor, key: str) -> Row | None:
        found = cursor.execute(self._q["get"], (key,)).fetchone()
        return None if found is None else _row(found)

    # -- rows added ---------------------------------------------------------------------------

    def add(
        self, key: str, payload_sha256: str, payload: str = "", *, resend_of: str | None = None
    ) -> Row:
        check_added(key, payload_sha256, resend_of)
        now = self._now()

        def work(cursor: Cursor) -> Row:
            if resend_of is None:
                return self._insert(cursor, key, payload_sha256, payload, None, now)
            with cursor.connection.transaction():
                # the first row locked: its resends are added one after the other
                if cursor.execute(self._q["lock"], (resend_of,)).fetchone() is None:
                    raise UnknownKeyError(resend_of)
                other = cursor.execute(self._q["resent"], (resend_of,)).fetchone()
                if other is not None and other[0] != key:
                    raise JournalError(
                        f"journal row {resend_of!r} is already sent again as {other[0]!r}"
                    )
                return self._insert(cursor, key, payload_sha256, payload, resend_of, now)

        return self._run(work, f"the addition of row {key!r}")

    def add_many(self, rows: Iterable[tuple[str, str, str]]) -> list[Row]:
        added: list[Row] = []
        for chunk, error in chunks(rows):
            what = f"the addition of rows {chunk[0][0]!r} to {chunk[-1][0]!r}" if chunk else None
            rows_added, refused = self._add_chunk(chunk, what) if chunk else ([], None)
            added += rows_added
            if refused is not None:
                raise refused
            if error is not None:
                raise error
        return added

    def _add_chunk(
        self, chunk: list[tuple[str, str, str]], what: str | None
    ) -> tuple[list[Row], Exception | None]:
        """The rows of ``chunk`` added in one transaction, up to the first one refused (its
        error beside them: the rows before it are committed)."""
        now = self._now()

        def work(cursor: Cursor) -> tuple[list[Row], Exception | None]:
            added: list[Row] = []
            with cursor.connection.transaction():
                for key, payload_sha256, payload in chunk:
                    try:
                        check_added(key, payload_sha256, None)
                        added.append(self._insert(cursor, key, payload_sha256, payload, None, now))
                    except BadInputError as exc:
                        return added, added_by_key(exc, key)
                    except KeyReusedError as exc:
                        return added, exc
            return added, None

        return self._run(work, what)

    def _insert(
        self,
        cursor: Cursor,
        key: str,
        payload_sha256: str,
        payload: str,
        resend_of: str | None,
        now: datetime,
    ) -> Row:
        params = (key, payload_sha256, new_reference_id(), now, now, payload, resend_of)
        found = cursor.execute(self._q["insert"], params).fetchone()
        if found is not None:
            return _row(found)
        row = self._get(cursor, key)
        if row is None:  # pragma: no cover - rows are never deleted
            raise self._error(f"row {key!r} was neither added nor found")
        if row.payload_sha256 != payload_sha256:
            raise KeyReusedError(key)
        return row

    def add_resend(self, key: str) -> Row:
        now = self._now()

        def work(cursor: Cursor) -> Row:
            with cursor.connection.transaction():
                # the failed row locked: it is sent again once, however many ask at once
                found = cursor.execute(self._q["lock"], (key,)).fetchone()
                if found is None:
                    raise UnknownKeyError(key)
                failed = _row(found)
                again = cursor.execute(self._q["resent"], (key,)).fetchone()
                if again is not None:
                    return _row(again)
                if failed.state is not State.FAILED:
                    raise IllegalTransitionError(key, failed.state, State.PENDING)
                new_key = resend_key(failed)
                row = self._insert(cursor, new_key, failed.payload_sha256, failed.payload, key, now)
                if row.resend_of != key:
                    raise JournalError(f"journal key {new_key!r} is taken by another row")
                return row

        return self._run(work, f"the resend of row {key!r}")

    # -- look-ups -----------------------------------------------------------------------------

    def _one(self, query: str, value: str) -> Row | None:
        def work(cursor: Cursor) -> Row | None:
            found = cursor.execute(self._q[query], (value,)).fetchone()
            return None if found is None else _row(found)

        return self._run(work, None, read=True)

    def get(self, key: str) -> Row | None:
        return self._one("get", key)

    def by_job_id(self, job_id: str) -> Row | None:
        return self._one("by_job_id", job_id)

    def by_reference(self, reference_id: str) -> Row | None:
        return self._one("by_reference", reference_id)

    def counts_by_state(self) -> dict[State, int]:
        def work(cursor: Cursor) -> dict[str, int]:
            return dict(cursor.execute(self._q["counts"]).fetchall())

        found = self._run(work, None, read=True)
        return {state: found.get(state.value, 0) for state in State}

    def _many(self, query: str, params: Any) -> list[Row]:
        return self._run(
            lambda cursor: [_row(values) for values in cursor.execute(self._q[query], params)],
            None,
            read=True,
        )

    def rows_in(self, state: State, limit: int | None = None) -> list[Row]:
        return self._many("rows_in", (state.value, None if limit is None else _limit(limit)))

    def rows(
        self, states: Collection[State] | None = None, *, after: int = 0, limit: int = 500
    ) -> list[Row]:
        wanted = None if states is None else [State(s).value for s in states]
        return self._many("rows", {"after": after, "states": wanted, "limit": _limit(limit)})

    # -- claims and sends ---------------------------------------------------------------------

    def claim(self, owner: str, lease_seconds: float, limit: int) -> list[Row]:
        check_lease(lease_seconds)
        now = self._now()
        params = (owner, now + timedelta(seconds=lease_seconds), now, now, _limit(limit))
        return self._run(
            lambda cursor: _by_seq(cursor.execute(self._q["claim"], params).fetchall()),
            f"a claim by {owner!r}",
        )

    def heartbeat(self, key: str, owner: str, lease_seconds: float) -> Row:
        return self._move(key, None, (State.CLAIMED, State.SENDING), owner, lease_seconds)

    def release(self, key: str, owner: str, reason: str | None = None) -> Row:
        return self._move(key, State.PENDING, (State.CLAIMED, State.SENDING), owner, reason=reason)

    def mark_sending(self, key: str, owner: str, lease_seconds: float | None = None) -> Row:
        return self._move(
            key,
            State.SENDING,
            (State.CLAIMED,),
            owner,
            lease_seconds,
            durable=True,
            started_at=self._now(),
        )

    def mark_sending_many(
        self, keys: Sequence[str], owner: str, lease_seconds: float | None = None
    ) -> list[str]:
        check_lease(lease_seconds)
        now = self._now()
        expires = None if lease_seconds is None else now + timedelta(seconds=lease_seconds)
        wanted = list(dict.fromkeys(keys))
        params = {"keys": wanted, "owner": owner, "now": now, "expires": expires}

        def work(cursor: Cursor) -> list[str]:
            moved = {key for (key,) in cursor.execute(self._q["sending_many"], params)}
            return [key for key in wanted if key in moved]

        return self._run(work, f"the move of rows of {owner!r} to sending")

    def release_unstarted(self, keys: Sequence[str], owner: str) -> None:
        params = {"keys": list(keys), "owner": owner, "now": self._now()}
        self._run(
            lambda cursor: cursor.execute(self._q["release_unstarted"], params),
            f"the release of rows of {owner!r} never started",
        )

    def start_send(self, key: str, owner: str, submitted: Submission | None = None) -> None:
        now = self._now()
        params: dict[str, Any] = {"key": key, "owner": owner, "now": now, "done": None}
        if submitted is not None:
            check_at = submitted.check_at
            params.update(
                done=submitted.key,
                jobs=[str(job_id) for job_id in submitted.job_ids],
                check_at=now if check_at is None else _aware(check_at, "check_at"),
            )
        else:
            params.update(jobs=[], check_at=None)

        def work(cursor: Cursor) -> None:
            found = cursor.execute(self._q["start"], params).fetchone()
            done, started = found if found is not None else (0, 0)
            sending = (State.SENDING,)
            if submitted is not None and done != 1:
                done_key = submitted.key
                raise self._refusal(
                    cursor, done_key, State.SUBMITTED, sending, owner, now
                ) or self._error(f"row {done_key!r} changed during the move to submitted")
            if started != 1:
                # SENDING and leased to the owner, yet not marked: started already
                raise self._refusal(
                    cursor, key, State.SENDING, sending, owner, now
                ) or IllegalTransitionError(key, State.SENDING, State.SENDING)

        self._run(work, f"the start of row {key!r}'s send")

    def _refusal(
        self,
        cursor: Cursor,
        key: str,
        target: State | None,
        allowed: Collection[State],
        owner: str | None,
        now: datetime,
    ) -> JournalError | None:
        """Why a move of ``key`` that changed no row was refused; None when the row as it is
        now refuses nothing (it changed since the move's statement)."""
        row = self._get(cursor, key)
        if row is None:
            return UnknownKeyError(key)
        if row.state not in allowed:
            return IllegalTransitionError(key, row.state, target or row.state)
        if owner is not None and (
            row.lease_owner != owner or row.lease_expires_at is None or row.lease_expires_at <= now
        ):
            return LeaseLostError(key, owner)
        return None

    def mark_submitted(
        self, key: str, owner: str, job_ids: Sequence[str], check_at: datetime | None = None
    ) -> Row:
        jobs = [str(job_id) for job_id in job_ids]
        return self._move(
            key, State.SUBMITTED, (State.SENDING,), owner, jobs=jobs, check=True, check_at=check_at
        )

    def mark_failed(self, key: str, owner: str, reason: str) -> Row:
        return self._move(key, State.FAILED, (State.SENDING,), owner, reason=reason)

    def mark_uncertain(
        self, key: str, owner: str, reason: str, check_at: datetime | None = None
    ) -> Row:
        return self._move(
            key,
            State.UNCERTAIN,
            (State.SENDING,),
            owner,
            check=True,
            check_at=check_at,
            reason=reason,
        )

    def resolve_uncertain(
        self, key: str, job_ids: Sequence[str], check_at: datetime | None = None
    ) -> Row:
        jobs = [str(job_id) for job_id in job_ids]
        return self._move(
            key, State.SUBMITTED, (State.UNCERTAIN,), jobs=jobs, check=True, check_at=check_at
        )

    def mark_needs_review(self, key: str, reason: str) -> Row:
        return self._move(key, State.NEEDS_REVIEW, REVIEW_SOURCES, reason=reason)

    def record_late_answer(self, key: str, job_ids: Sequence[str], reason: str) -> Row:
        jobs = [str(job_id) for job_id in job_ids]
        return self._move(key, None, (State.NEEDS_REVIEW,), jobs=jobs, durable=True, reason=reason)

    def mark_final(self, key: str, state: State, reason: str | None = None) -> Row:
        # a cancel undone would leave a row the caller cancelled to be sent: synced
        cancel = state is State.CANCELLED
        return self._move(key, state, final_sources(state), reason=reason, durable=cancel)

    # -- tracking -----------------------------------------------------------------------------

    def due(self, state: State, lease_seconds: float, limit: int) -> list[Row]:
        if state not in _TRACKED:
            raise BadInputError("state", f"{state.value} rows are not looked up")
        check_lease(lease_seconds)
        now = self._now()
        params = {
            "later": now + timedelta(seconds=lease_seconds),
            "state": state.value,
            "now": now,
            "limit": _limit(limit),
        }

        def work(cursor: Cursor) -> list[Row]:
            found = cursor.execute(self._q["due"], params).fetchall()
            # soonest first, as they were due (the statement gives them in no order)
            ordered = sorted(found, key=lambda v: (v[_WAS], v[_SEQ]))
            return [_row(values) for values in ordered]

        return self._run(work, f"taking due {state.value} rows")

    def schedule(self, keys: Sequence[str], check_at: datetime) -> None:
        params = (_aware(check_at, "check_at"), list(keys))
        self._run(lambda cursor: cursor.execute(self._q["schedule"], params), "a schedule")

    def recover(self) -> list[Row]:
        now = self._now()
        params = {
            "reason": "the lease expired while sending",
            "now": now,
            "beyond": now + timedelta(seconds=MAX_LEASE_AHEAD),
        }
        return self._run(
            lambda cursor: _by_seq(cursor.execute(self._q["recover"], params).fetchall()),
            "a recovery",
        )

    # -- limits shared by every worker --------------------------------------------------------

    def next_call_at(self, account: str, interval: float) -> datetime:
        check_interval(interval)
        now = self._now()
        params = {
            "account": account,
            "now": now,
            "interval": timedelta(seconds=interval),
            "beyond": now + timedelta(seconds=MAX_RESERVED_AHEAD),
        }

        def work(cursor: Cursor) -> datetime:
            found = cursor.execute(self._q["next_call"], params).fetchone()
            assert found is not None
            at: datetime = found[0]
            return at

        return self._run(work, f"reserving a call of {account!r}")

    def acquire_send_slot(
        self, account: str, holder: str, limit: int, lease_seconds: float
    ) -> bool:
        check_lease(lease_seconds)
        now = self._now()
        params = {
            "holder": holder,
            "expires": now + timedelta(seconds=lease_seconds),
            "account": account,
            "limit": limit,
            "now": now,
        }

        def work(cursor: Cursor) -> bool:
            if cursor.execute(self._q["take_slot"], params).fetchone() is not None:
                return True
            # the account's slots may not exist yet (or not up to this limit)
            if not cursor.execute(self._q["make_slots"], params).fetchall():
                return False
            return cursor.execute(self._q["take_slot"], params).fetchone() is not None

        return self._run(work, f"taking a send slot of {account!r}")

    def release_send_slot(self, account: str, holder: str) -> None:
        self._run(
            lambda cursor: cursor.execute(self._q["release_slot"], (account, holder)),
            f"releasing a send slot of {account!r}",
        )

    def meta(self, name: str, default: str) -> str:
        def work(cursor: Cursor) -> str:
            found = cursor.execute(self._q["meta"], (name,)).fetchone()
            if found is None:
                found = cursor.execute(self._q["set_meta"], (name, default)).fetchone()
            if found is None:  # set by another worker meanwhile
                found = cursor.execute(self._q["meta"], (name,)).fetchone()
            assert found is not None
            value: str = found[0]
            return value

        return self._run(work, f"the journal value {name!r}")
