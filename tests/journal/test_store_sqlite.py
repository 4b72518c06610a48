"""What only the SQLite journal does: its settings, a file reopened or moved on from the first
schema, several processes on one file, a `sending` row's durability across a killed process,
and a file that cannot be written (disk full, read-only) as a JournalError naming it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import selectors
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

import pytest

from faxws.journal._sqlite import SqliteJournal
from faxws.journal._store import JournalError, State

S = State
SHA = hashlib.sha256(b"the fax").hexdigest()


class Clock(Protocol):
    """conftest's ``clock``: the store's clock, moved by hand."""

    now: datetime

    def __call__(self) -> datetime: ...

    def advance(self, seconds: float) -> None: ...


def test_the_file_is_reopened_and_its_settings_hold(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "j.db"
    with SqliteJournal(path, clock=clock, busy_timeout=7.5) as first:
        first.add("k", SHA)
        assert first._db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        assert first._db.execute("PRAGMA busy_timeout").fetchone() == (7500,)
    with SqliteJournal(path, clock=clock) as second:
        assert second.get("k") is not None
        assert second.add("k", SHA).seq == 1
        assert second.add("k2", SHA).seq == 2
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
        db.execute("PRAGMA user_version = 4")
        db.commit()
    finally:
        db.close()
    with pytest.raises(JournalError, match=f"{path}.*version 4"):
        SqliteJournal(path, clock=clock)


def test_a_file_with_a_lease_and_a_call_slot_no_time_can_hold_is_read_and_mended(
    tmp_path: Path, clock: Clock
) -> None:
    # What a version that took any lease and rate wrote: a lease ending in 1e300 seconds, and
    # a call slot reserved 2e300 seconds ahead.
    path = tmp_path / "j.db"
    with SqliteJournal(path, clock=clock) as store:
        store.add("k", SHA)
        store.claim("w1", 60, 1)
        store.next_call_at("acct", 1)
    db = sqlite3.connect(path)
    try:
        db.execute("UPDATE faxes SET lease_expires_at = 1e300")
        db.execute("UPDATE limits SET last_call_at = 2e300")
        db.commit()
    finally:
        db.close()
    with SqliteJournal(path, clock=clock) as store:
        row = store.get("k")
        assert row is not None
        assert row.state is S.CLAIMED
        assert row.lease_expires_at == datetime.max.replace(tzinfo=timezone.utc)
        assert [r.key for r in store.rows(None, limit=10)] == ["k"]
        assert [r.key for r in store.recover()] == ["k"]
        assert store.claim("w2", 60, 1)[0].key == "k"
        assert store.next_call_at("acct", 1) == clock.now


def test_a_move_is_one_transaction_of_few_statements(tmp_path: Path, clock: Clock) -> None:
    with SqliteJournal(tmp_path / "j.db", clock=clock) as store:
        store.add("k", SHA)
        store.claim("w1", 60, 1)
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        store.mark_sending("k", "w1")
        store.mark_submitted("k", "w1", ["J1"])
        store._db.set_trace_callback(None)
    words = [statement.split()[0] for statement in statements]
    # The move to sending alone commits with synchronous=FULL: synced before the send.
    assert statements[0] == "PRAGMA synchronous = FULL"
    # Each move's row comes back from its UPDATE (RETURNING): the row is not read again.
    assert words[1:4] == ["BEGIN", "UPDATE", "COMMIT"]
    assert statements[4] == "PRAGMA synchronous = NORMAL"
    assert words[5:] == ["BEGIN", "UPDATE", "INSERT", "COMMIT"]
    assert statements[1] == "BEGIN IMMEDIATE"
    assert all(" RETURNING " in statements[i] for i in (2, 6))


def test_many_rows_are_added_a_transaction_per_chunk(tmp_path: Path, clock: Clock) -> None:
    from faxws.journal._store import ADD_CHUNK

    with SqliteJournal(tmp_path / "j.db", clock=clock) as store:
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        rows = store.add_many((f"k{n}", SHA, "") for n in range(2 * ADD_CHUNK + 1))
        store._db.set_trace_callback(None)
        assert len(rows) == 2 * ADD_CHUNK + 1
    assert statements.count("BEGIN IMMEDIATE") == statements.count("COMMIT") == 3


#: The first schema, as the first release wrote it.
V1_SCHEMA = """
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
PRAGMA user_version = 1;
"""


def test_a_first_version_file_is_moved_on_in_place(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "v1.db"
    t0 = clock.now.timestamp()
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(V1_SCHEMA)
    db.executemany(
        "INSERT INTO faxes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            ("z-first", SHA, "R1", "delivered", 1, '["J0"]', None, None, None, t0 - 10, t0 - 5),
            ("b", SHA, "R2", "submitted", 1, '["J1", "J2"]', None, None, None, t0, t0),
            ("a", SHA, "R3", "pending", 0, "[]", None, None, None, t0, t0),
            ("c", SHA, "R4", "uncertain", 1, "[]", None, None, "no answer", t0 + 1, t0 + 1),
            ("d", SHA, "R5", "sending", 1, "[]", "w9", t0 + 30, None, t0 + 2, t0 + 2),
        ],
    )
    db.commit()
    db.close()
    clock.advance(60)
    with SqliteJournal(path, clock=clock) as store:
        assert [(r.key, r.seq) for r in store.rows()] == [
            ("z-first", 1),
            ("a", 2),
            ("b", 3),
            ("c", 4),
            ("d", 5),
        ]
        b = store.get("b")
        assert b is not None
        assert (b.state, b.job_ids, b.reference_id, b.payload, b.checks, b.resend_of) == (
            S.SUBMITTED,
            ("J1", "J2"),
            "R2",
            "",
            0,
            None,
        )
        assert b.created_at == clock.now - timedelta(seconds=60)
        assert store.by_job_id("J2") == b
        assert store.by_job_id("J0") == store.get("z-first")
        assert store.by_reference("R4") == store.get("c")
        # rows being tracked are looked up at once; a row SENDING before counts as started
        assert [r.key for r in store.due(S.SUBMITTED, 30, 10)] == ["b"]
        assert [r.key for r in store.due(S.UNCERTAIN, 30, 10)] == ["c"]
        assert [(r.key, r.state) for r in store.recover()] == [("d", S.UNCERTAIN)]
        assert store.add("new", SHA).seq == 6
        assert [r.key for r in store.claim("w1", 60, 10)] == ["a", "new"]
        assert store.meta("batch", "x") == "x"
        assert store.next_call_at("acct", 1) == clock.now
        assert store.acquire_send_slot("acct", "a", 1, 60)
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    with SqliteJournal(path, clock=clock) as again:
        assert again.get("new") is not None
        assert again.meta("batch", "y") == "x"


def fill(path: Path, count: int) -> set[str]:
    with SqliteJournal(path) as store:
        for i in range(count):
            store.add(f"k{i:04d}", SHA)
    return {f"k{i:04d}" for i in range(count)}


CLAIMER = """
import json, sys
from faxws.journal._sqlite import SqliteJournal
store = SqliteJournal(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
claimed = []
while rows := store.claim(sys.argv[2], 600, 1):
    claimed += [row.key for row in rows]
    store.mark_sending(rows[0].key, sys.argv[2])
print(json.dumps(claimed), flush=True)
"""


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        assert selector.select(timeout), "no line in time"
    return proc.stdout.readline().strip()


def test_several_processes_never_claim_one_row(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    keys = fill(path, 300)
    owners = ("a", "b", "c")
    stack = contextlib.ExitStack()
    procs = [
        stack.enter_context(
            subprocess.Popen(
                [sys.executable, "-c", CLAIMER, str(path), owner],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        for owner in owners
    ]
    try:
        for proc in procs:
            assert read_line(proc, 60) == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [json.loads(read_line(proc, 120)) for proc in procs]
        for proc in procs:
            assert proc.wait(timeout=60) == 0
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=60)
        stack.close()
    assert sorted(key for result in results for key in result) == sorted(keys)
    with SqliteJournal(path) as store:
        assert store.counts_by_state()[S.SENDING] == 300


KILLED_AFTER_SENDING = """
import os, signal, sys
from faxws.journal._sqlite import SqliteJournal
store = SqliteJournal(sys.argv[1])
store.add("k", sys.argv[2])
store.claim("w1", 600, 1)
store.mark_sending("k", "w1")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sending_row_survives_its_writer_killed(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "j.db"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_SENDING, str(path), SHA],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    clock.now = datetime.now(timezone.utc)
    with SqliteJournal(path, clock=clock) as store:
        row = store.get("k")
        assert row is not None
        assert (row.state, row.lease_owner) == (S.SENDING, "w1")
        assert store.claim("w2", 600, 10) == []
        clock.advance(601)
        assert [r.state for r in store.recover()] == [S.UNCERTAIN]


# -- a file that cannot be written ---------------------------------------------------------


class Failing:
    """A connection whose statements starting with ``word`` fail as a full disk fails."""

    def __init__(self, db: sqlite3.Connection, word: str) -> None:
        self.db, self.word = db, word

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith(self.word):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


@pytest.mark.parametrize("word", ["INSERT", "COMMIT", "BEGIN"])
def test_a_failing_write_is_a_journal_error_naming_the_file(
    tmp_path: Path, clock: Clock, word: str
) -> None:
    path = tmp_path / "j.db"
    with SqliteJournal(path, clock=clock) as store:
        store.add("before", SHA)
        db = store._db
        store._db = Failing(db, word)  # type: ignore[assignment]
        with pytest.raises(JournalError) as caught:
            store.add("k", SHA)
        assert str(caught.value) == f"journal {path}: database or disk is full"
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        store._db = db
        # nothing half done, and the handle goes on once the disk has room
        assert not db.in_transaction
        assert store.get("k") is None
        assert store.add("k", SHA).seq == 2


@contextlib.contextmanager
def tiny_tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"no tmpfs can be mounted here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, timeout=60)


def test_a_full_disk_is_a_journal_error_naming_the_file(tmp_path: Path, clock: Clock) -> None:
    with tiny_tmpfs(tmp_path, "512k") as mount:
        path = mount / "j.db"
        (mount / "ballast").write_bytes(b"\0" * 128 * 1024)
        with SqliteJournal(path, clock=clock) as store:
            added = 0
            with pytest.raises(JournalError) as caught:  # noqa: PT012 - fills the disk
                while True:
                    store.add(f"k{added}", SHA, "x" * 10_000)
                    added += 1
            assert str(caught.value).startswith(f"journal {path}: ")
            assert "full" in str(caught.value)
            assert added > 1
            assert len(store.rows(limit=2000)) == added
            # room made, the same handle writes again
            (mount / "ballast").unlink()
            store.add("after", SHA, "x" * 10_000)
        with SqliteJournal(path, clock=clock) as again:
            assert len(again.rows(limit=2000)) == added + 1
            assert again._db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_read_only_file_is_a_journal_error_naming_it(tmp_path: Path, clock: Clock) -> None:
    if os.geteuid() != 0:
        path = tmp_path / "j.db"
        fill(path, 1)
        path.chmod(0o444)
        tmp_path.chmod(0o555)
        try:
            with pytest.raises(JournalError) as caught:
                SqliteJournal(path, clock=clock)
        finally:
            tmp_path.chmod(0o755)
    else:  # root writes any file: a file system mounted read-only
        with tiny_tmpfs(tmp_path, "1m") as mount:
            path = mount / "j.db"
            fill(path, 1)
            subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True, timeout=60)
            with pytest.raises(JournalError) as caught:
                SqliteJournal(path, clock=clock)
    assert str(caught.value).startswith(f"journal {path}: ")
    assert str(caught.value).endswith(" (the file or its folder is read-only)")


# -- start marks: lazy under this boot's id, synced without one ----------------------------------


def reserved(store: SqliteJournal, keys: list[str]) -> None:
    for key in keys:
        store.add(key, SHA)
    store.claim("w1", 60, len(keys))
    assert len(store.mark_sending_many(keys, "w1", 60)) == len(keys)


def statements(store: SqliteJournal) -> list[str]:
    """What ``store`` executes from now on, statement by statement."""
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    return seen


@pytest.mark.parametrize("boot_id", ["boot-1", None])
def test_start_marks_are_synced_only_without_a_boot_id(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, boot_id: str | None
) -> None:
    monkeypatch.setattr("faxws.journal._sqlite._boot_id", lambda: boot_id)
    with SqliteJournal(tmp_path / "j.db", clock=clock) as store:
        for key in ("a", "b"):
            store.add(key, SHA)
        store.claim("w1", 60, 2)
        seen = statements(store)
        store.mark_sending_many(["a", "b"], "w1", 60)
        assert seen[0] == "PRAGMA synchronous = FULL"
        assert seen[-1] == "PRAGMA synchronous = NORMAL"
        seen.clear()
        store.start_send("a", "w1")
        assert ("PRAGMA synchronous = FULL" in seen) is (boot_id is None)
        assert store._db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL again
        epoch = store._db.execute("SELECT sending_epoch FROM faxes WHERE key = 'b'").fetchone()
        assert epoch == (boot_id or "synced",)


def test_a_send_never_started_is_looked_up_after_the_machine_restarted(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.db"
    monkeypatch.setattr("faxws.journal._sqlite._boot_id", lambda: "boot-1")
    with SqliteJournal(path, clock=clock) as store:
        reserved(store, ["a", "b"])
    clock.advance(61)
    with SqliteJournal(path, clock=clock) as same:
        # the same boot: every start mark made is still in the file, and none was made
        assert [(r.key, r.state) for r in same.recover()] == [("a", S.PENDING), ("b", S.PENDING)]
        same.claim("w2", 60, 2)
        same.mark_sending_many(["a", "b"], "w2", 30)
    clock.advance(31)
    # the machine restarted: a lazy start mark of either may have been lost with it
    monkeypatch.setattr("faxws.journal._sqlite._boot_id", lambda: "boot-2")
    with SqliteJournal(path, clock=clock) as rebooted:
        assert [(r.key, r.state, r.reason) for r in rebooted.recover()] == [
            ("a", S.UNCERTAIN, "the lease expired while sending"),
            ("b", S.UNCERTAIN, "the lease expired while sending"),
        ]


@pytest.mark.parametrize("now", ["boot-1", None])
def test_a_synced_start_mark_holds_across_restarts(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, now: str | None
) -> None:
    path = tmp_path / "j.db"
    monkeypatch.setattr("faxws.journal._sqlite._boot_id", lambda: None)
    with SqliteJournal(path, clock=clock) as store:
        reserved(store, ["k"])
    clock.advance(61)
    monkeypatch.setattr("faxws.journal._sqlite._boot_id", lambda: now)
    with SqliteJournal(path, clock=clock) as later:
        assert [(r.key, r.state) for r in later.recover()] == [("k", S.PENDING)]


def test_the_boot_id_is_read_from_the_system() -> None:
    from faxws.journal._sqlite import _boot_id

    found = _boot_id()
    if sys.platform.startswith("linux"):
        assert found is not None
        assert found == Path("/proc/sys/kernel/random/boot_id").read_text("ascii").strip()
    else:
        assert found is None


def test_a_send_moved_by_a_process_of_the_version_before_counts_as_started(
    tmp_path: Path, clock: Clock
) -> None:
    with SqliteJournal(tmp_path / "j.db", clock=clock) as store:
        reserved(store, ["k"])
        store.release_unstarted(["k"], "w1")
        store.claim("w2", 60, 1)
        # what a process of the version before, opened before the file moved on, writes
        store._db.execute("UPDATE faxes SET state = 'sending' WHERE key = 'k'")
        clock.advance(61)
        assert [(r.key, r.state) for r in store.recover()] == [("k", S.UNCERTAIN)]
