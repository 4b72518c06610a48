"""What only the PostgreSQL journal does: claims by many connections at once that never
overlap nor wait for each other (SKIP LOCKED), no lock or open transaction left behind by any
call, tables made once by handles opening together, a connection dropped by a restart replaced,
a move whose connection broke said to be of unknown outcome, the DSN's password masked, the
schema's version checked. The behaviour both stores share is tested in test_store.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import postgres_server
import psycopg
import pytest
from postgres_server import PostgresServer, fresh_schema, restart_server
from psycopg import sql

from faxws.journal._postgres import PostgresJournal
from faxws.journal._store import JournalError, State

S = State
SHA = hashlib.sha256(b"the fax").hexdigest()
SECRET = "s3cret-Pw"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Journal:
    """A fresh schema on the session's server, and handles on it closed after the test."""

    def __init__(self, server: PostgresServer, schema: str) -> None:
        self.server = server
        self.schema = schema
        self.clock = Clock()
        self.opened: list[PostgresJournal] = []

    def dsn(self, **settings: str) -> str:
        """The schema's DSN, with server settings for its sessions: by default no wait for a
        lock outlasts a test (a test that fails does not hang)."""
        settings = {"search_path": self.schema, "lock_timeout": "20s", **settings}
        options = " ".join(f"-c{name}={value}" for name, value in settings.items())
        return f"{self.server.dsn()} options='{options}'"

    def open(self, dsn: str | None = None, **kwargs: Any) -> PostgresJournal:
        kwargs.setdefault("clock", self.clock)
        store = PostgresJournal(self.dsn() if dsn is None else dsn, **kwargs)
        self.opened.append(store)
        return store

    def admin(self) -> psycopg.Connection[tuple[Any, ...]]:
        """A connection of the test's own to the journal's schema (not in autocommit)."""
        return psycopg.connect(self.dsn(statement_timeout="60s"), connect_timeout=30)

    def run(self, query: str | sql.Composed, params: Any = None) -> list[tuple[Any, ...]]:
        dsn = self.dsn(statement_timeout="60s")
        with psycopg.connect(dsn, autocommit=True, connect_timeout=30) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []


@pytest.fixture
def journal(request: pytest.FixtureRequest) -> Iterator[Journal]:
    server, schema = fresh_schema(request)
    found = Journal(server, schema)
    yield found
    for store in found.opened:
        store.close()


@pytest.fixture
def restarts(journal: Journal) -> Iterator[PostgresServer]:
    """The session's server, to be stopped or restarted by the test: running again after."""
    yield journal.server
    if not journal.server.running:
        journal.server.start()


def run_threads(work: Callable[..., None], args: list[tuple[Any, ...]]) -> None:
    errors: list[BaseException] = []

    def guarded(*arguments: Any) -> None:
        try:
            work(*arguments)
        except BaseException as error:  # reported by the test's thread
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=a) for a in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert errors == []


def backend_pid(store: PostgresJournal) -> int:
    assert store._conn is not None
    return store._conn.info.backend_pid


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Poll ``check`` (a query of the server's state) until it holds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


# -- claims ---------------------------------------------------------------------------------


def test_claims_by_eight_connections_at_once_never_overlap(journal: Journal) -> None:
    filler = journal.open()
    keys = [f"k{i:04d}" for i in range(400)]
    for key in keys:
        filler.add(key, SHA)
    stores = [journal.open() for _ in range(8)]
    start = threading.Barrier(len(stores), timeout=30)
    claimed: dict[str, list[str]] = {f"w{i}": [] for i in range(len(stores))}

    def work(owner: str, store: PostgresJournal) -> None:
        start.wait()
        while rows := store.claim(owner, 600, 3):
            claimed[owner] += [row.key for row in rows]

    run_threads(work, [(owner, store) for owner, store in zip(claimed, stores, strict=True)])
    everything = [key for keys_of_one in claimed.values() for key in keys_of_one]
    assert sorted(everything) == keys
    rows = filler.rows(limit=1000)
    assert {row.attempt for row in rows} == {1}
    assert {row.key: row.lease_owner for row in rows} == {
        key: owner for owner, keys_of_one in claimed.items() for key in keys_of_one
    }


def test_a_claim_skips_a_row_locked_by_another_transaction(journal: Journal) -> None:
    store = journal.open(journal.dsn(lock_timeout="2s"))
    for key in ("a", "b", "c"):
        store.add(key, SHA)
    with journal.admin() as other:
        # another session holds row a (as a claim or a move in flight would)
        other.execute("SELECT key FROM faxws_faxes WHERE key = 'a' FOR UPDATE")
        started = time.monotonic()
        assert [row.key for row in store.claim("w1", 60, 10)] == ["b", "c"]
        assert time.monotonic() - started < 2  # no wait for the lock
    assert [row.key for row in store.claim("w1", 60, 10)] == ["a"]


def held_by(journal: Journal, pid: int) -> tuple[str, list[str]]:
    """The backend's activity state and the locks it holds."""
    (state,) = journal.run("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,))
    locks = journal.run(
        "SELECT locktype || ' ' || mode FROM pg_locks WHERE pid = %s AND granted", (pid,)
    )
    return state[0], sorted(lock for (lock,) in locks)


def refused(call: Callable[[], object]) -> None:
    with pytest.raises(JournalError):
        call()


def test_no_call_leaves_a_transaction_or_a_lock_behind(journal: Journal) -> None:
    store = journal.open()
    calls: list[tuple[str, Callable[[], object]]] = [
        ("add", lambda: store.add("k", SHA)),
        ("add again", lambda: store.add("k", SHA)),
        ("claim", lambda: store.claim("w1", 60, 10)),
        ("heartbeat", lambda: store.heartbeat("k", "w1", 60)),
        ("mark_sending", lambda: store.mark_sending("k", "w1")),
        ("mark_failed", lambda: store.mark_failed("k", "w1", "refused")),
        ("add_resend", lambda: store.add_resend("k")),
        ("add_resend again", lambda: store.add_resend("k")),
        ("claim resend", lambda: store.claim("w1", 60, 10)),
        ("mark_sending", lambda: store.mark_sending("k/resend-1", "w1")),
        ("mark_submitted", lambda: store.mark_submitted("k/resend-1", "w1", ["J1"])),
        ("due", lambda: store.due(S.SUBMITTED, 30, 10)),
        ("schedule", lambda: store.schedule(["k/resend-1"], journal.clock.now)),
        ("refused move", lambda: refused(lambda: store.mark_sending("k", "w1"))),
        ("recover", lambda: store.recover()),
        ("next_call_at", lambda: store.next_call_at("acct", 0.5)),
        ("acquire_send_slot", lambda: store.acquire_send_slot("acct", "k", 2, 60)),
        ("release_send_slot", lambda: store.release_send_slot("acct", "k")),
        ("meta", lambda: store.meta("batch", "b1")),
        ("get", lambda: store.get("k")),
        ("by_job_id", lambda: store.by_job_id("J1")),
        ("rows", lambda: store.rows()),
        ("counts_by_state", lambda: store.counts_by_state()),
    ]
    pid = backend_pid(store)
    for name, call in calls:
        call()
        assert held_by(journal, pid) == ("idle", []), name
    assert backend_pid(store) == pid


def wal_writes(store: PostgresJournal) -> int:
    """The server's writes of its WAL so far, this connection's own counted (its statistics
    are flushed when it goes idle after the first statement)."""

    def read(cursor: Any) -> int:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        found = cursor.connection.execute("SELECT wal_write FROM pg_stat_wal").fetchone()
        assert found is not None
        return int(found[0])

    store._run(lambda cursor: cursor.execute("SELECT pg_stat_force_next_flush()"), None)
    return store._run(read, None)


def test_only_the_move_to_sending_waits_for_its_wal_to_be_written(journal: Journal) -> None:
    # A commit that waits writes (and, with fsync on, flushes) the WAL itself; the others
    # leave it to the server's WAL writer, a few times a second.
    store = journal.open()
    count = 40
    keys = [row.key for row in store.add_many((f"k{n}", SHA, "") for n in range(count))]
    store.claim("w1", 600, count)
    moves: list[tuple[str, Callable[[str], object], bool]] = [
        ("heartbeat", lambda key: store.heartbeat(key, "w1", 600), False),
        ("mark_sending", lambda key: store.mark_sending(key, "w1"), True),
        ("mark_submitted", lambda key: store.mark_submitted(key, "w1", [f"J-{key}"]), False),
        ("delivered", lambda key: store.mark_final(key, S.DELIVERED), False),
    ]
    for name, move, waits in moves:
        before = wal_writes(store)
        for key in keys:
            move(key)
        written = wal_writes(store) - before
        if waits:
            assert written >= count, name
        else:
            assert written < count / 2, f"{name}: {written} writes of the WAL for {count} moves"
        # the setting was the moves' own transactions': the session's is the server's
        assert store._run(lambda c: c.execute("SHOW synchronous_commit").fetchone(), None) == (
            "on",
        )


# -- the schema -----------------------------------------------------------------------------


def test_handles_opening_together_make_the_tables_once(journal: Journal) -> None:
    start = threading.Barrier(6, timeout=30)
    opened: list[PostgresJournal] = []

    def work() -> None:
        start.wait()
        opened.append(PostgresJournal(journal.dsn(), schema="made_together"))

    try:
        run_threads(work, [()] * 6)
    finally:
        for store in opened:
            store.close()
    tables = journal.run(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'made_together' ORDER BY 1"
    )
    assert [name for (name,) in tables] == [
        "faxws_faxes",
        "faxws_jobs",
        "faxws_limits",
        "faxws_meta",
        "faxws_send_slots",
    ]
    assert journal.run("SELECT value FROM made_together.faxws_meta") == [("2",)]
    journal.run("DROP SCHEMA made_together CASCADE")


def test_the_tables_are_in_the_search_path_schema_or_the_one_named(journal: Journal) -> None:
    journal.open().add("in-search-path", SHA)
    other = f"{journal.schema}_named"
    named = journal.open(schema=other)
    named.add("in-named", SHA)
    keys = sql.SQL("SELECT key FROM {}.faxws_faxes")
    assert journal.run(keys.format(sql.Identifier(journal.schema))) == [("in-search-path",)]
    assert journal.run(keys.format(sql.Identifier(other))) == [("in-named",)]
    assert named.get("in-search-path") is None
    journal.run(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(other)))


def test_a_newer_schema_version_is_refused(journal: Journal) -> None:
    journal.open().add("k", SHA)
    journal.open().close()  # the current version opens again
    journal.run("UPDATE faxws_meta SET value = '3' WHERE name = 'faxws.schema_version'")
    with pytest.raises(JournalError, match="schema version 3 is newer than this faxws"):
        journal.open()


def test_a_schema_version_that_is_no_number_is_refused(journal: Journal) -> None:
    journal.open().add("k", SHA)
    journal.run("UPDATE faxws_meta SET value = '2.1' WHERE name = 'faxws.schema_version'")
    with pytest.raises(JournalError, match=r"schema version '2\.1' is not a version of faxws's"):
        journal.open()


def test_a_send_moved_by_a_process_of_the_version_before_counts_as_started(
    journal: Journal,
) -> None:
    store = journal.open()
    store.add("k", SHA)
    store.claim("w1", 60, 1)
    store.mark_sending_many(["k"], "w1", 60)
    store.release_unstarted(["k"], "w1")
    store.claim("w2", 60, 1)
    # what a process of version 1, opened before the schema moved on, writes
    journal.run("UPDATE faxws_faxes SET state = 'sending' WHERE key = 'k'")
    journal.clock.advance(61)
    assert [(r.key, r.state) for r in store.recover()] == [("k", State.UNCERTAIN)]


def test_a_first_version_journal_is_moved_on_and_its_sends_count_as_started(
    journal: Journal,
) -> None:
    store = journal.open()
    for key in ("sending", "claimed"):
        store.add(key, SHA)
    store.claim("w1", 60, 2)
    store.close()
    # the first version: no start marks, a row SENDING with its lease
    journal.run("UPDATE faxws_faxes SET state = 'sending' WHERE key = 'sending'")
    journal.run("ALTER TABLE faxws_faxes DROP COLUMN started_at")
    journal.run("UPDATE faxws_meta SET value = '1' WHERE name = 'faxws.schema_version'")
    moved_on = journal.open()
    assert journal.run("SELECT value FROM faxws_meta WHERE name = 'faxws.schema_version'") == [
        ("2",)
    ]
    journal.clock.advance(61)
    assert sorted((r.key, r.state) for r in moved_on.recover()) == [
        ("claimed", State.PENDING),
        ("sending", State.UNCERTAIN),
    ]


def test_a_search_path_naming_no_schema_is_refused(journal: Journal) -> None:
    dsn = journal.dsn(search_path="no_such_schema")
    with pytest.raises(JournalError, match="search_path names no schema"):
        journal.open(dsn)


# -- a lost connection ------------------------------------------------------------------------


def test_a_handle_carries_on_after_the_server_restarts(
    request: pytest.FixtureRequest, journal: Journal, restarts: PostgresServer
) -> None:
    store = journal.open()
    store.add("a", SHA)
    store.add("b", SHA)
    pid = backend_pid(store)
    restart_server(request)
    # the first call after the restart, a move, is made on a new connection
    assert [row.key for row in store.claim("w1", 60, 1)] == ["a"]
    assert backend_pid(store) != pid
    assert store.mark_sending("a", "w1").state is S.SENDING
    restarts.restart()
    assert store.get("a").state is S.SENDING  # type: ignore[union-attr]


def test_a_server_down_is_a_journal_error_until_it_is_back(
    journal: Journal, restarts: PostgresServer
) -> None:
    store = journal.open(connect_timeout=5)
    store.add("a", SHA)
    restarts.halt()
    with pytest.raises(JournalError, match="could not connect"):
        store.claim("w1", 60, 1)
    with pytest.raises(JournalError, match="could not connect"):
        store.get("a")
    restarts.start()
    assert [row.key for row in store.claim("w1", 60, 1)] == ["a"]


def test_keepalives_end_a_wait_on_a_silent_server_unless_the_dsn_sets_them(
    journal: Journal,
) -> None:
    store = journal.open(connect_timeout=7)
    assert store._conn is not None
    wanted = {
        "connect_timeout": "7",
        "keepalives": "1",
        "keepalives_idle": "30",
        "keepalives_interval": "10",
        "keepalives_count": "3",
    }
    found = store._conn.info.get_parameters()
    assert {name: found.get(name) for name in wanted} == wanted
    store = journal.open(f"{journal.dsn()} keepalives_idle=5")
    assert store._conn is not None
    assert store._conn.info.get_parameters()["keepalives_idle"] == "5"


def blocked_move(journal: Journal, store: PostgresJournal) -> tuple[threading.Thread, list[Any]]:
    """mark_sending of row k in a thread, waiting for the row's lock held by another session."""
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(store.mark_sending("k", "w1"))
        except JournalError as error:
            outcome.append(error)

    pid = backend_pid(store)
    thread = threading.Thread(target=work)
    thread.start()
    wait_until(
        lambda: (
            journal.run("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,))
            == [("Lock",)]
        ),
        "the move waits for the row's lock",
    )
    return thread, outcome


def test_a_move_whose_connection_broke_may_have_committed(journal: Journal) -> None:
    store = journal.open()
    store.add("k", SHA)
    store.claim("w1", 60, 1)
    pid = backend_pid(store)
    with journal.admin() as other:
        other.execute("SELECT key FROM faxws_faxes WHERE key = 'k' FOR UPDATE")
        thread, outcome = blocked_move(journal, store)
        journal.run("SELECT pg_terminate_backend(%s)", (pid,))
        thread.join(timeout=60)
        assert not thread.is_alive()
    (error,) = outcome
    assert isinstance(error, JournalError)
    assert "whether it was committed is unknown" in str(error)
    assert "the move of row 'k' to sending" in str(error)
    # the next call is made on a new connection; the move was not made, this time
    assert store.get("k").state is S.CLAIMED  # type: ignore[union-attr]
    assert backend_pid(store) != pid
    assert store.mark_sending("k", "w1").state is S.SENDING


def test_a_move_the_server_refused_was_not_committed(journal: Journal) -> None:
    store = journal.open(journal.dsn(lock_timeout="200ms"))
    store.add("k", SHA)
    store.claim("w1", 60, 1)
    with journal.admin() as other:
        other.execute("SELECT key FROM faxws_faxes WHERE key = 'k' FOR UPDATE")
        with pytest.raises(JournalError, match="failed and was not committed") as caught:
            store.mark_sending("k", "w1")
    assert "lock timeout" in str(caught.value)
    assert store.mark_sending("k", "w1").state is S.SENDING


KILLED_AFTER_SENDING = """
import os, signal, sys
from faxws.journal._postgres import PostgresJournal
store = PostgresJournal(sys.argv[1])
store.add("k", sys.argv[2])
store.claim("w1", 600, 1)
store.mark_sending("k", "w1")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sending_row_survives_its_writer_killed(journal: Journal) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_SENDING, journal.dsn(), SHA],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    clock = journal.clock
    clock.now = datetime.now(timezone.utc)
    store = journal.open()
    row = store.get("k")
    assert row is not None
    assert (row.state, row.lease_owner) == (S.SENDING, "w1")
    assert store.claim("w2", 600, 10) == []
    clock.advance(601)
    assert [r.state for r in store.recover()] == [S.UNCERTAIN]


# -- the DSN's password -----------------------------------------------------------------------


def everything_said(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


@pytest.mark.parametrize(
    "dsn",
    [
        # libpq quotes the whole URL in its complaint
        f"postgresql://faxws:{SECRET}@[::1/faxws",
        # and a bad percent escape with what surrounds it
        f"postgresql://faxws:{SECRET}%ZZ@localhost/faxws",
        f"postgresql://faxws@[::1/faxws?password={SECRET}&sslmode=disable",
        f"host=/nonexistent password='{SECRET}' port={SECRET}",
    ],
    ids=["url", "escape", "query", "key-value"],
)
def test_the_password_of_a_dsn_is_never_said(journal: Journal, dsn: str) -> None:
    with pytest.raises(JournalError) as caught:
        PostgresJournal(dsn, connect_timeout=5)
    said = everything_said(caught.value) + repr(caught.value)
    assert "***" in said
    assert SECRET not in said
    assert SECRET.lower() not in said.lower()


def test_the_password_is_masked_in_the_repr_and_in_errors(
    journal: Journal, restarts: PostgresServer
) -> None:
    # trust authentication takes any password
    store = journal.open(
        f"{journal.dsn()} password={SECRET} sslpassword='{SECRET}-ssl'", connect_timeout=5
    )
    store.add("k", SHA)
    assert SECRET not in repr(store)
    assert "password=*** sslpassword=***" in repr(store)
    restarts.halt()
    with pytest.raises(JournalError) as caught:
        store.claim("w1", 60, 1)
    assert SECRET not in everything_said(caught.value)
    assert "password=***" in str(caught.value)


# -- the test server ----------------------------------------------------------------------------


def test_the_highest_server_version_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for version in ("9.6", "15", "13", "16"):
        bindir = tmp_path / version / "bin"
        bindir.mkdir(parents=True)
        for name in ("initdb", "pg_ctl", "postgres"):
            if version != "16":  # 16's is incomplete
                (bindir / name).write_text("#!/bin/sh\n")
                (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "no-pg-config"))
    assert postgres_server.find_bindir(tmp_path) == tmp_path / "15" / "bin"
    assert postgres_server.find_bindir(tmp_path / "nothing") is None


@pytest.mark.parametrize("required", [None, "CI", "FAXWS_REQUIRE_POSTGRES"])
def test_without_a_server_the_tests_skip_unless_required(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, required: str | None
) -> None:
    monkeypatch.setattr(postgres_server, "_server", None)
    monkeypatch.setattr(postgres_server, "find_bindir", lambda: None)
    for name in ("CI", "FAXWS_REQUIRE_POSTGRES"):
        monkeypatch.delenv(name, raising=False)
    if required is not None:
        monkeypatch.setenv(required, "1")
    try:
        postgres_server.server(request)
    except BaseException as error:  # a skip or a failure: which is the point
        outcome = error
    else:
        raise AssertionError("neither skipped nor failed")
    if required is None:
        assert type(outcome) is pytest.skip.Exception
        assert "apt-get install postgresql" in str(outcome)
    else:
        assert type(outcome) is pytest.fail.Exception
        assert f"{required} set: required here" in str(outcome)


KILLED_WITH_A_SERVER = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from postgres_server import PostgresServer, find_bindir
server = PostgresServer(find_bindir())
server.start()
pid = int((server.data / "postmaster.pid").read_text().split()[0])
print(server.root, pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_session_killed_leaves_no_server_behind(journal: Journal) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WITH_A_SERVER, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    root, pid = done.stdout.split()

    def gone() -> bool:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return not Path(root).exists()
        return False

    wait_until(gone, "the killed session's server stopped and its directory deleted", 60)
