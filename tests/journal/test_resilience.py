"""The batch runner when what it depends on misbehaves, in real time against the simulator:
the service slow (answers within the client's time-out, and past it), answering 5xx, refusing
connections until it starts; PostgreSQL restarted in the middle of a run; the SQLite file's
folder full (a small tmpfs when it can be mounted, else the error raised at the sqlite3
layer).

Whatever happens, the simulator accepts at most one SendFaxEx per key, a run either goes on
or ends with a clear error, and after a rerun every row is final or in review with a reason;
a send the service accepted is always recorded as sending (or beyond) before it went out.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from runner_support import Spy, document, spec

from faxws import ClientOptions, FaxClient
from faxws.journal import (
    Batch,
    JournalError,
    JournalStore,
    Row,
    RunSummary,
    State,
    _runner,
    open_journal,
)
from faxws.testing import (
    DEMO_PIN,
    DEMO_USER_ID,
    DelayResponse,
    FaxWSSimulator,
    Html500,
    HttpStatus,
    SoapFault,
    WsError,
)
from faxws.transport import Request, Response

OpenStore = Callable[..., JournalStore]
#: Seconds of a worker's lease.
LEASE = 1.5
#: Simulated seconds per real second: a fax's life takes milliseconds.
TIME_SCALE = 1000.0
#: Real seconds any wait may take before the test fails.
WAIT = 60.0
POLL = 0.02
SETTLED = frozenset({State.DELIVERED, State.FAILED, State.CANCELLED, State.NEEDS_REVIEW})


def _now() -> datetime:
    return datetime.now(timezone.utc)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up after {timeout:g} s waiting for {what}"
        time.sleep(POLL)


@pytest.fixture(autouse=True)
def quick_look_ups(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first look-up of an uncertain row 0.05 s after it (not 5 s): a row the service
    # never got reaches review in about 1.5 s.
    monkeypatch.setattr(_runner, "LOOKUP_DELAY", 0.05)


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator(time_scale=TIME_SCALE) as started:
        yield started


def client_for(url: str, **options: Any) -> FaxClient:
    options.setdefault("retry_backoff", 0)
    return FaxClient(url, user_id=DEMO_USER_ID, pin=DEMO_PIN, options=ClientOptions(**options))


def add(store: JournalStore, directory: Path, count: int) -> list[str]:
    pdf = document(directory)
    batch = Batch(store, None)
    keys = [f"fax-{n:04d}" for n in range(count)]
    for key in keys:
        batch.add(key, spec(pdf))
    return keys


def accepted(sim: FaxWSSimulator) -> Counter[str]:
    """SendFaxEx the simulator accepted, by ReferenceId."""
    return Counter(job.reference_id for job in sim.jobs if job.operation == "SendFaxEx")


def rows_of(store: JournalStore) -> dict[str, Row]:
    return {row.key: row for row in store.rows(limit=10_000)}


def check(store: JournalStore, sim: FaxWSSimulator, *, refused: int = 0) -> dict[str, Row]:
    """At most one accepted SendFaxEx per key; every row final or in review with a reason;
    an accepted row delivered; a row the service never got in review saying so, or (the
    ``refused`` of them) failed with the service's refusal."""
    rows = rows_of(store)
    sent = accepted(sim)
    twice = {ref: n for ref, n in sent.items() if n > 1}
    assert not twice, f"sent more than once: {twice}"
    assert set(sent) <= {row.reference_id for row in rows.values()}
    failed = 0
    for row in rows.values():
        assert row.state in SETTLED, f"{row.key} ended {row.state.value}: {row}"
        if sent[row.reference_id]:
            assert row.state is State.DELIVERED, f"{row.key} accepted but {row}"
        elif row.state is State.FAILED:
            failed += 1
            assert row.reason, row
        else:
            assert row.state is State.NEEDS_REVIEW, f"{row.key} never sent: {row}"
            assert f"no job with reference JRI-{row.reference_id}" in (row.reason or ""), row
    assert failed == refused
    return rows


class Running:
    """A :meth:`Batch.run` in a thread: its summary or its error once joined."""

    def __init__(self, batch: Batch, workers: int = 2) -> None:
        self.summary: RunSummary | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(batch, workers), daemon=True)
        self._thread.start()

    def _run(self, batch: Batch, workers: int) -> None:
        try:
            self.summary = batch.run(workers=workers)
        except BaseException as exc:
            self.error = exc

    def join(self) -> Running:
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), f"the run did not end within {WAIT:g} s"
        return self


def run(batch: Batch, workers: int = 2) -> Running:
    return Running(batch, workers).join()


def leases_expired(store: JournalStore) -> bool:
    now = _now()
    held = store.rows({State.CLAIMED, State.SENDING}, limit=10_000)
    return all(row.lease_expires_at is None or row.lease_expires_at <= now for row in held)


# -- the service ---------------------------------------------------------------------------------


def test_a_slow_service_answering_within_the_time_out_delays_nothing_else(
    open_store: OpenStore, sim: FaxWSSimulator, tmp_path: Path
) -> None:
    store = open_store(clock=_now)
    add(store, tmp_path, 4)
    # Each answer takes longer than a lease: the heartbeats keep the rows while they wait.
    sim.inject(DelayResponse(2.0), operation="SendFaxEx", times=4)
    done = run(Batch(store, client_for(sim.url, timeout=(5, 5)), lease_seconds=LEASE), 4)
    assert done.error is None
    rows = check(store, sim)
    assert {row.state for row in rows.values()} == {State.DELIVERED}
    assert all(row.job_ids and row.attempt == 1 for row in rows.values())
    assert not sim.requests_for("SimpleGetFaxStatus")  # no row was ever uncertain


def test_a_send_answered_after_the_time_out_is_found_by_its_reference_not_sent_again(
    open_store: OpenStore, sim: FaxWSSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Look-ups 0.5, 1, 2, 4 and 8 s apart: the service answers within them.
    monkeypatch.setattr(_runner, "LOOKUP_DELAY", 0.5)
    store = open_store(clock=_now)
    add(store, tmp_path, 4)
    # The first two sends are answered after 1.5 s, the client gives up after 0.3 s: the
    # service has them, the rows do not know it. The first look-up, 0.5 s later, finds none.
    sim.inject(DelayResponse(1.5), operation="SendFaxEx", times=2)
    done = run(Batch(store, client_for(sim.url, timeout=(5, 0.3)), lease_seconds=LEASE), 1)
    assert done.error is None
    rows = check(store, sim)
    assert {row.state for row in rows.values()} == {State.DELIVERED}
    by_reference = [row for row in rows.values() if not row.job_ids]
    assert len(by_reference) == 2, rows
    assert len(sim.requests_for("SendFaxEx")) == 4


def test_a_service_answering_5xx_leaves_each_row_sent_at_most_once(
    open_store: OpenStore, sim: FaxWSSimulator, tmp_path: Path
) -> None:
    store = open_store(clock=_now)
    add(store, tmp_path, 6)
    # In turn: a gateway's 503, an HTML 500, a SOAP server fault (none of them says whether
    # the service took the fax: looked up, then review), a refusal with its reason (failed).
    for fault in (HttpStatus(503), Html500(), SoapFault(), WsError(-10, "simulated refusal")):
        sim.inject(fault, operation="SendFaxEx")
    done = run(Batch(store, client_for(sim.url), lease_seconds=LEASE), 1)
    assert done.error is None
    rows = check(store, sim, refused=1)
    states = Counter(row.state for row in rows.values())
    assert states == {State.NEEDS_REVIEW: 3, State.FAILED: 1, State.DELIVERED: 2}
    assert len(sim.requests_for("SendFaxEx")) == 6


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_refused_connection_returns_the_row_to_pending_until_the_service_starts(
    open_store: OpenStore, tmp_path: Path
) -> None:
    store = open_store(clock=_now)
    keys = add(store, tmp_path, 4)
    port = free_port()  # nothing listens on it yet
    watcher = open_store(clock=_now)
    running = Running(Batch(store, client_for(f"http://127.0.0.1:{port}"), lease_seconds=LEASE), 2)

    def released() -> bool:
        return any(r.state is State.PENDING and r.attempt >= 1 for r in watcher.rows(limit=100))

    wait_until(released, "a send that could not connect to be released")
    with FaxWSSimulator(port=port, time_scale=TIME_SCALE) as sim:
        running.join()
        assert running.error is None
        rows = check(store, sim)
    assert set(rows) == set(keys)
    assert {row.state for row in rows.values()} == {State.DELIVERED}
    assert max(row.attempt for row in rows.values()) >= 2  # claimed again after the release


# -- PostgreSQL restarted ------------------------------------------------------------------------


def spied_client(url: str, hook: Callable[[str, Request], Response | None]) -> FaxClient:
    spy = Spy(url)
    spy.hook = hook
    return client_for(url, transport=spy)


@pytest.mark.parametrize("when", ["while_sending", "restart_during_a_send", "down_at_an_answer"])
def test_postgres_restarted_in_the_middle_of_a_run(
    request: pytest.FixtureRequest, sim: FaxWSSimulator, tmp_path: Path, when: str
) -> None:
    """``while_sending``: restarted from outside once two rows are submitted (the run goes on
    or ends with a JournalError, whichever call meets the restart); ``restart_during_a_send``:
    restarted before the third send is written (every connection dropped; each handle
    connects again and the run goes on); ``down_at_an_answer``: stopped before the third send
    is written and started again only after the run ended (recording the answer fails: the
    run ends with a JournalError; the rerun finds that send by its reference)."""
    from postgres_server import fresh_database, restart_server, server

    dsn = fresh_database(request)
    store = open_journal(dsn)
    watcher = open_journal(dsn)
    sends = Counter[str]()

    def hook(operation: str, request_: Request) -> Response | None:
        sends[operation] += 1
        if operation == "SendFaxEx" and sends[operation] == 3:
            if when == "restart_during_a_send":
                restart_server(request)
            elif when == "down_at_an_answer":
                server(request).halt()
        return None

    try:
        keys = add(store, tmp_path, 8)
        if when == "while_sending":
            sim.inject(DelayResponse(0.3), operation="SendFaxEx", times=8)
        # Restarted in a send: leases long enough that no heartbeat falls in the restart (it
        # would fail, ending the run).
        lease = 30.0 if when == "restart_during_a_send" else LEASE
        batch = Batch(store, spied_client(sim.url, hook), lease_seconds=lease)
        running = Running(batch, 2 if when == "while_sending" else 1)
        if when == "while_sending":
            wait_until(
                lambda: watcher.counts_by_state().get(State.SUBMITTED, 0) >= 2,
                "two rows to be submitted",
            )
            restart_server(request)
        running.join()
        if when == "down_at_an_answer":
            assert isinstance(running.error, JournalError), repr(running.error)
            assert "could not connect" in str(running.error)
            server(request).start()
        elif when == "restart_during_a_send":
            assert running.error is None, repr(running.error)
        elif running.error is not None:
            # The run ended with the journal's error (not psycopg's, not a hang).
            assert isinstance(running.error, JournalError), repr(running.error)
        rerun_store = open_journal(dsn)
        try:
            if when == "down_at_an_answer":
                # The third row was sent and its answer not recorded.
                assert rows_of(rerun_store)["fax-0002"].state is State.SENDING
            wait_until(lambda: leases_expired(rerun_store), "the first run's leases to expire")
            again = run(Batch(rerun_store, client_for(sim.url), lease_seconds=LEASE), 2)
            assert again.error is None, repr(again.error)
            rows = check(rerun_store, sim)
        finally:
            rerun_store.close()
        assert set(rows) == set(keys)
        assert {row.state for row in rows.values()} == {State.DELIVERED}
        if when == "down_at_an_answer":
            assert rows["fax-0002"].job_ids == ()  # found by its reference
        print(
            f"{when}: first run {running.summary or repr(running.error)}; "
            f"after the rerun: {Counter(row.state.value for row in rows.values())}"
        )
    finally:
        if not server(request).running:
            server(request).start()  # for the tests after this one
        store.close()
        watcher.close()


# -- the SQLite file's folder full ---------------------------------------------------------------


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until its filesystem has no byte left; the file."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        size = 1 << 20
        while size:
            try:
                fh.write(b"\0" * size)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                size //= 2
    return filler


class Full:
    """A folder whose filesystem can be filled: a tmpfs of a few MiB mounted on it, or, where
    that cannot be mounted, an SQLite store whose writes fail as a full disk makes them."""

    def __init__(self, folder: Path, how: str) -> None:
        self.folder = folder
        self.how = how
        self.filler: Path | None = None
        self._stores: list[Any] = []
        folder.mkdir()
        if how == "tmpfs":
            mounted = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)],
                capture_output=True,
                text=True,
                timeout=WAIT,
                check=False,
            )
            if mounted.returncode != 0:
                pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()})")

    def store(self) -> JournalStore:
        store = open_journal(self.folder / "journal.db")
        if self.how == "sqlite3":
            inner = store._db  # type: ignore[attr-defined]
            store._db = _FullDisk(inner, self)  # type: ignore[attr-defined]
        self._stores.append(store)
        return store

    @property
    def full(self) -> bool:
        return self.filler is not None

    def fill(self) -> None:
        self.filler = fill(self.folder) if self.how == "tmpfs" else self.folder / "filler"

    def free(self) -> None:
        if self.how == "tmpfs" and self.filler is not None:
            self.filler.unlink()
        self.filler = None

    def close(self) -> None:
        for store in self._stores:
            with contextlib.suppress(Exception):
                store.close()
        if self.how == "tmpfs":
            done = subprocess.run(["umount", str(self.folder)], timeout=WAIT, check=False)
            if done.returncode != 0:  # still busy (a failed test's thread): detached instead
                subprocess.run(["umount", "-l", str(self.folder)], timeout=WAIT, check=True)


class _FullDisk:
    """An sqlite3 connection whose commits of a change fail as SQLite's do on a full disk (it
    writes a transaction's pages to the WAL when it commits) while ``full.full``: the
    fallback where no small filesystem can be mounted."""

    def __init__(self, inner: sqlite3.Connection, full: Full) -> None:
        self._inner = inner
        self._full = full
        self._changes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def execute(self, sql: str, *args: Any) -> Any:
        head = sql.lstrip().split(None, 1)[0].upper()
        if head == "BEGIN":
            self._changes = self._inner.total_changes
        elif head == "COMMIT" and self._full.full and self._inner.total_changes != self._changes:
            raise sqlite3.OperationalError("database or disk is full")
        return self._inner.execute(sql, *args)


@pytest.fixture(params=["tmpfs", "sqlite3"])
def full(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Full]:
    made = Full(tmp_path / "journal", request.param)
    try:
        yield made
    finally:
        made.close()


def test_a_full_disk_before_the_run_ends_it_with_a_journal_error_and_nothing_sent(
    full: Full, sim: FaxWSSimulator, tmp_path: Path
) -> None:
    store = full.store()
    add(store, tmp_path, 4)
    full.fill()
    done = run(Batch(store, client_for(sim.url), lease_seconds=LEASE), 2)
    assert isinstance(done.error, JournalError), repr(done.error)
    message = str(done.error)
    assert str(full.folder / "journal.db") in message
    assert "full" in message
    assert not sim.requests_for("SendFaxEx")
    full.free()
    assert {row.state for row in rows_of(full.store()).values()} == {State.PENDING}


def test_a_disk_filling_up_during_the_run_ends_it_and_no_send_goes_unrecorded(
    full: Full, sim: FaxWSSimulator, tmp_path: Path
) -> None:
    store = full.store()
    keys = add(store, tmp_path, 5)
    spy = Spy(sim.url)
    posted = Counter[str]()

    def fill_before_the_third_send(operation: str, request: Request) -> Response | None:
        posted[operation] += 1
        if operation == "SendFaxEx" and posted[operation] == 3:
            full.fill()  # the send goes out; recording its job ids cannot be written
        return None

    spy.hook = fill_before_the_third_send
    client = FaxClient(
        sim.url,
        user_id=DEMO_USER_ID,
        pin=DEMO_PIN,
        options=ClientOptions(transport=spy, retry_backoff=0),
    )
    done = run(Batch(store, client, lease_seconds=LEASE), 1)
    assert isinstance(done.error, JournalError), repr(done.error)
    assert "full" in str(done.error)
    full.free()
    after = full.store()
    rows = rows_of(after)
    sent = accepted(sim)
    assert sum(sent.values()) == 3
    for row in rows.values():
        # Every send the service got was recorded as sending before it went out.
        if sent[row.reference_id]:
            assert row.state in (State.SENDING, State.SUBMITTED, State.DELIVERED), row
    # The third send (and any before it whose answer was not yet recorded) stays SENDING;
    # the rows moved to SENDING with them but never started wait for the next run.
    sending = [row for row in rows.values() if row.state is State.SENDING]
    assert any(sent[row.reference_id] for row in sending)
    # A rerun (the dead run's lease expired) finds the third send by its reference.
    wait_until(lambda: leases_expired(after), "the lease of the row being sent to expire")
    again = run(Batch(after, client_for(sim.url), lease_seconds=LEASE), 2)
    assert again.error is None, repr(again.error)
    rows = check(after, sim)
    assert set(rows) == set(keys)
    assert {row.state for row in rows.values()} == {State.DELIVERED}


def test_the_filler_fills_its_filesystem(tmp_path: Path) -> None:
    folder = tmp_path / "small"
    probe = Full(folder, "tmpfs")
    try:
        filler = fill(folder)
        with pytest.raises(OSError, match="No space") as raised:
            (folder / "more").write_bytes(b"x" * 4096)
        assert raised.value.errno == errno.ENOSPC
        assert os.path.getsize(filler) > 3 << 20
    finally:
        probe.close()
