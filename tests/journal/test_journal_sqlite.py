"""The SQLite send journal: its transitions, key reuse, leases, claims by concurrent threads
and processes, and a `sending` row's durability across a killed process."""

from __future__ import annotations

import contextlib
import hashlib
import json
import selectors
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from faxws.errors import BadInputError, FaxWSError
from faxws.journal import (
    IllegalTransitionError,
    JournalError,
    KeyReusedError,
    LeaseLostError,
    SqliteJournal,
    State,
    UnknownKeyError,
)

S = State
SHA = hashlib.sha256(b"the fax").hexdigest()
OTHER_SHA = hashlib.sha256(b"another fax").hexdigest()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def journal(tmp_path: Path, clock: Clock) -> Iterator[SqliteJournal]:
    with SqliteJournal(tmp_path / "journal.db", clock=clock) as store:
        yield store


Op = Callable[[SqliteJournal, str], object]
OPS: dict[str, Op] = {
    "mark_sending": lambda j, k: j.mark_sending(k, "w1"),
    "mark_submitted": lambda j, k: j.mark_submitted(k, "w1", ["J1", "J2"]),
    "mark_failed": lambda j, k: j.mark_failed(k, "w1", "refused"),
    "mark_uncertain": lambda j, k: j.mark_uncertain(k, "w1", "no answer"),
    "resolve_uncertain": lambda j, k: j.resolve_uncertain(k, ["J3"]),
    "mark_needs_review": lambda j, k: j.mark_needs_review(k, "not found by reference"),
    "delivered": lambda j, k: j.mark_final(k, S.DELIVERED),
    "final_failed": lambda j, k: j.mark_final(k, S.FAILED, "job failed"),
    "cancelled": lambda j, k: j.mark_final(k, S.CANCELLED),
}
LEGAL = {
    (S.CLAIMED, "mark_sending"): S.SENDING,
    (S.CLAIMED, "cancelled"): S.CANCELLED,
    (S.PENDING, "cancelled"): S.CANCELLED,
    (S.SENDING, "mark_submitted"): S.SUBMITTED,
    (S.SENDING, "mark_failed"): S.FAILED,
    (S.SENDING, "mark_uncertain"): S.UNCERTAIN,
    (S.UNCERTAIN, "resolve_uncertain"): S.SUBMITTED,
    (S.UNCERTAIN, "mark_needs_review"): S.NEEDS_REVIEW,
    (S.CLAIMED, "mark_needs_review"): S.NEEDS_REVIEW,
    (S.SUBMITTED, "mark_needs_review"): S.NEEDS_REVIEW,
    (S.SUBMITTED, "delivered"): S.DELIVERED,
    (S.SUBMITTED, "final_failed"): S.FAILED,
    (S.SUBMITTED, "cancelled"): S.CANCELLED,
}
# how a fresh row reaches each state, by legal moves
PATHS: dict[State, list[str]] = {
    S.PENDING: [],
    S.CLAIMED: ["claim"],
    S.SENDING: ["claim", "mark_sending"],
    S.SUBMITTED: ["claim", "mark_sending", "mark_submitted"],
    S.FAILED: ["claim", "mark_sending", "mark_failed"],
    S.UNCERTAIN: ["claim", "mark_sending", "mark_uncertain"],
    S.NEEDS_REVIEW: ["claim", "mark_sending", "mark_uncertain", "mark_needs_review"],
    S.DELIVERED: ["claim", "mark_sending", "mark_submitted", "delivered"],
    S.CANCELLED: ["cancelled"],
}


def reach(journal: SqliteJournal, key: str, state: State) -> None:
    journal.add(key, SHA)
    for step in PATHS[state]:
        if step == "claim":
            assert [r.key for r in journal.claim("w1", 60, 1)] == [key]
        else:
            OPS[step](journal, key)
    row = journal.get(key)
    assert row is not None
    assert row.state is state


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("state", list(State))
def test_every_move_from_every_state_is_made_or_refused(
    journal: SqliteJournal, clock: Clock, state: State, op: str
) -> None:
    reach(journal, "k", state)
    before = journal.get("k")
    clock.advance(1)
    target = LEGAL.get((state, op))
    if target is None:
        with pytest.raises(IllegalTransitionError) as caught:
            OPS[op](journal, "k")
        assert caught.value.current is state
        assert isinstance(caught.value, JournalError)
        assert isinstance(caught.value, FaxWSError)
        assert journal.get("k") == before
        return
    row = OPS[op](journal, "k")
    assert row == journal.get("k")
    assert row.state is target  # type: ignore[attr-defined]
    assert row.updated_at == clock.now  # type: ignore[attr-defined]


def test_a_move_records_what_it_learnt(journal: SqliteJournal) -> None:
    reach(journal, "a", S.SENDING)
    sending = journal.get("a")
    assert sending is not None
    assert sending.lease_owner == "w1"
    assert sending.attempt == 1
    submitted = journal.mark_submitted("a", "w1", ["J1", "J2"])
    assert submitted.job_ids == ("J1", "J2")
    assert (submitted.lease_owner, submitted.lease_expires_at) == (None, None)
    assert submitted.reference_id == sending.reference_id
    reach(journal, "b", S.UNCERTAIN)
    assert journal.resolve_uncertain("b", ["J9"]).job_ids == ("J9",)
    reach(journal, "c", S.NEEDS_REVIEW)
    assert journal.get("c").reason == "not found by reference"  # type: ignore[union-attr]


def test_a_move_of_an_unknown_key_is_refused(journal: SqliteJournal) -> None:
    with pytest.raises(UnknownKeyError):
        journal.mark_sending("nope", "w1")
    assert journal.get("nope") is None


def test_final_takes_only_a_final_state(journal: SqliteJournal) -> None:
    reach(journal, "k", S.SUBMITTED)
    with pytest.raises(BadInputError):
        journal.mark_final("k", S.PENDING)
    assert journal.get("k").state is S.SUBMITTED  # type: ignore[union-attr]


def test_the_same_key_and_payload_again_return_the_row(journal: SqliteJournal) -> None:
    first = journal.add("k", SHA)
    assert first.state is S.PENDING
    assert len(first.reference_id) == 32
    journal.claim("w1", 60, 1)
    again = journal.add("k", SHA)
    assert again.reference_id == first.reference_id
    assert again.state is S.CLAIMED
    assert journal.counts_by_state()[S.PENDING] == 0


def test_a_key_reused_with_another_payload_is_refused(journal: SqliteJournal) -> None:
    reach(journal, "done", S.DELIVERED)
    journal.add("k", SHA)
    for key in ("k", "done"):
        with pytest.raises(KeyReusedError):
            journal.add(key, OTHER_SHA)
        assert journal.get(key).payload_sha256 == SHA  # type: ignore[union-attr]
    with pytest.raises(BadInputError):
        journal.add("x", "not a digest")


def test_reference_ids_are_made_once_per_row(journal: SqliteJournal) -> None:
    refs = {journal.add(f"k{i}", SHA).reference_id for i in range(5)}
    assert len(refs) == 5


def test_a_claim_is_exclusive_until_its_lease_expires(journal: SqliteJournal, clock: Clock) -> None:
    journal.add("k", SHA)
    assert [r.lease_owner for r in journal.claim("w1", 30, 10)] == ["w1"]
    assert journal.claim("w2", 30, 10) == []
    with pytest.raises(LeaseLostError):
        journal.mark_sending("k", "w2")
    clock.advance(31)
    (row,) = journal.claim("w2", 30, 10)
    assert (row.lease_owner, row.attempt) == ("w2", 2)
    with pytest.raises(LeaseLostError):
        journal.mark_sending("k", "w1")
    assert journal.mark_sending("k", "w2").state is S.SENDING


def test_an_expired_lease_cannot_start_a_send(journal: SqliteJournal, clock: Clock) -> None:
    journal.add("k", SHA)
    journal.claim("w1", 30, 1)
    clock.advance(30)
    with pytest.raises(LeaseLostError):
        journal.mark_sending("k", "w1")
    assert journal.get("k").state is S.CLAIMED  # type: ignore[union-attr]


def test_a_heartbeat_keeps_the_lease(journal: SqliteJournal, clock: Clock) -> None:
    journal.add("k", SHA)
    journal.claim("w1", 30, 1)
    clock.advance(20)
    journal.heartbeat("k", "w1", 30)
    clock.advance(20)
    assert journal.claim("w2", 30, 1) == []
    with pytest.raises(LeaseLostError):
        journal.heartbeat("k", "w2", 30)
    journal.mark_sending("k", "w1", lease_seconds=30)
    clock.advance(20)
    journal.heartbeat("k", "w1", 30)
    clock.advance(20)
    assert journal.recover() == []
    assert journal.get("k").state is S.SENDING  # type: ignore[union-attr]


def test_an_expired_claim_is_claimed_again_but_never_an_expired_send(
    journal: SqliteJournal, clock: Clock
) -> None:
    reach(journal, "sent", S.SENDING)
    reach(journal, "held", S.CLAIMED)
    clock.advance(61)
    assert [r.key for r in journal.claim("w2", 60, 10)] == ["held"]
    assert journal.get("sent").state is S.SENDING  # type: ignore[union-attr]


def test_recover_frees_expired_claims_and_makes_expired_sends_uncertain(
    journal: SqliteJournal, clock: Clock
) -> None:
    reach(journal, "sent", S.SENDING)
    reach(journal, "held", S.CLAIMED)
    reach(journal, "live", S.CLAIMED)
    clock.advance(30)
    journal.heartbeat("live", "w1", 60)
    clock.advance(31)
    moved = {row.key: row for row in journal.recover()}
    assert set(moved) == {"sent", "held"}
    assert moved["sent"].state is S.UNCERTAIN
    assert moved["sent"].reason
    assert moved["held"].state is S.PENDING
    assert (moved["held"].lease_owner, moved["held"].lease_expires_at) == (None, None)
    assert journal.recover() == []
    assert [r.key for r in journal.claim("w3", 60, 10)] == ["held"]
    assert journal.get("sent").state is S.UNCERTAIN  # type: ignore[union-attr]


def test_counts_and_rows_by_state(journal: SqliteJournal, clock: Clock) -> None:
    reach(journal, "s", S.SENDING)
    for i in range(3):
        clock.advance(1)
        journal.add(f"p{i}", SHA)
    journal.claim("w1", 60, 1)
    counts = journal.counts_by_state()
    assert (counts[S.PENDING], counts[S.CLAIMED], counts[S.SENDING]) == (2, 1, 1)
    assert sum(counts.values()) == 4
    assert set(counts) == set(State)
    assert [r.key for r in journal.rows_in(S.PENDING)] == ["p1", "p2"]
    assert [r.key for r in journal.rows_in(S.PENDING, limit=1)] == ["p1"]


def test_the_file_is_reopened_and_its_settings_hold(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "j.db"
    with SqliteJournal(path, clock=clock) as first:
        first.add("k", SHA)
        assert first._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    with SqliteJournal(path, clock=clock) as second:
        assert second.get("k") is not None
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
        db.execute("PRAGMA user_version = 3")
        db.commit()
    finally:
        db.close()
    with pytest.raises(JournalError, match="version 3"):
        SqliteJournal(path, clock=clock)


def fill(path: Path, count: int) -> set[str]:
    with SqliteJournal(path) as store:
        for i in range(count):
            store.add(f"k{i:04d}", SHA)
    return {f"k{i:04d}" for i in range(count)}


def test_two_threads_never_claim_one_row(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    keys = fill(path, 300)
    start = threading.Barrier(2, timeout=30)
    claimed: dict[str, list[str]] = {"a": [], "b": []}

    def work(owner: str) -> None:
        with SqliteJournal(path) as store:
            start.wait()
            while rows := store.claim(owner, 600, 2):
                claimed[owner] += [row.key for row in rows]

    threads = [threading.Thread(target=work, args=(owner,)) for owner in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    # a busy writer can starve the other: what counts is that no row is claimed twice
    assert sorted(claimed["a"] + claimed["b"]) == sorted(keys)


CLAIMER = """
import json, sys
from faxws.journal import SqliteJournal
store = SqliteJournal(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
claimed = []
while rows := store.claim(sys.argv[2], 600, 1):
    claimed += [row.key for row in rows]
print(json.dumps(claimed), flush=True)
"""


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        assert selector.select(timeout), "no line in time"
    return proc.stdout.readline().strip()


def test_two_processes_never_claim_one_row(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    keys = fill(path, 300)
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
        for owner in ("a", "b")
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
    assert sorted(results[0] + results[1]) == sorted(keys)


KILLED_AFTER_SENDING = """
import os, signal, sys
from faxws.journal import SqliteJournal
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
    db.executescript(V1_SCHEMA)
    db.executemany(
        "INSERT INTO faxes VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)",
        [
            ("z-first", SHA, "R1", "delivered", 1, '["J0"]', None, t0 - 10, t0 - 5),
            ("b", SHA, "R2", "submitted", 1, '["J1", "J2"]', None, t0, t0),
            ("a", SHA, "R3", "pending", 0, "[]", None, t0, t0),
            ("c", SHA, "R4", "uncertain", 1, "[]", "no answer", t0 + 1, t0 + 1),
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
        ]
        b = store.get("b")
        assert b is not None
        assert (b.state, b.job_ids, b.reference_id, b.payload, b.checks) == (
            S.SUBMITTED,
            ("J1", "J2"),
            "R2",
            "",
            0,
        )
        assert store.by_job_id("J2") == b
        assert store.by_job_id("J0").key == "z-first"  # type: ignore[union-attr]
        assert [r.key for r in store.due(S.SUBMITTED, 30, 10)] == ["b"]
        assert [r.key for r in store.due(S.UNCERTAIN, 30, 10)] == ["c"]
        assert store.add("new", SHA).seq == 5
        assert [r.key for r in store.claim("w1", 60, 10)] == ["a", "new"]
        assert store.meta("batch", "x") == "x"
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    with SqliteJournal(path, clock=clock) as again:
        assert again.get("new") is not None
