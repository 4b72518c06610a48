"""`faxws batch`: a manifest's faxes sent through a journal, each at most once, against the
simulator; the journal's status, review and export; Ctrl-C once (stop claiming, record what
is in flight) and twice (exit at once), in real subprocesses; exit codes; no secret shown."""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from faxws.journal import Batch, FaxSpec, FileSpec, Row, SqliteJournal, State
from faxws.pytest_plugin import SimulatorFactory
from faxws.testing import DEMO_PIN, DEMO_TOKEN, DEMO_USER_ID, Fault, FaxWSSimulator

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
REFERENCE = re.compile(rb"<(?:\w+:)?ReferenceId>([^<]*)</(?:\w+:)?ReferenceId>")
FAILING = "+1 500 555 0006"  # the simulator's test number of a fax that fails (rejected)


def pin_env(sim: FaxWSSimulator) -> dict[str, str]:
    return {"FAXWS_BASE_URL": sim.url, "FAXWS_USER_ID": DEMO_USER_ID, "FAXWS_PIN": DEMO_PIN}


def faxws(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faxws", *args],
        env={**CLEAN_ENV, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def sim(faxws_simulator_factory: SimulatorFactory) -> FaxWSSimulator:
    """A simulator living a fax's life in milliseconds."""
    return faxws_simulator_factory(time_scale=1000)


def documents(folder: Path, count: int) -> list[str]:
    """``count`` distinct PDF documents in ``folder``, by name."""
    folder.mkdir(exist_ok=True)
    names = []
    for i in range(count):
        name = f"doc-{i:03}.pdf"
        (folder / name).write_bytes(b"%%PDF-1.4 document %d" % i)
        names.append(name)
    return names


def number(i: int) -> str:
    return f"+1 555 01{i:02}"


def csv_manifest(folder: Path, count: int, *, failing: Collection[int] = ()) -> Path:
    names = documents(folder / "docs", count)
    path = folder / "faxes.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["key", "to", "name", "file", "cover-subject"])
        for i, name in enumerate(names):
            to = FAILING if i in failing else number(i)
            writer.writerow([f"fax-{i:03}", to, f"Name {i}", f"docs/{name}", f"Subject {i}"])
    return path


def sends_by_reference(sim: FaxWSSimulator) -> Counter[str]:
    """How many SendFaxEx requests the simulator received for each ReferenceId."""
    found: Counter[str] = Counter()
    for request in sim.requests_for("SendFaxEx"):
        match = REFERENCE.search(request.body)
        assert match is not None, "a SendFaxEx without a ReferenceId"
        found[match.group(1).decode()] += 1
    return found


def rows(journal: Path) -> dict[str, Row]:
    """The journal's rows by key."""
    store = SqliteJournal(journal)
    try:
        return {row.key: row for row in store.rows(None, limit=10_000)}
    finally:
        store.close()


def counts(journal: Path) -> dict[State, int]:
    store = SqliteJournal(journal)
    try:
        return {s: n for s, n in store.counts_by_state().items() if n}
    finally:
        store.close()


# -- batch send ------------------------------------------------------------------------------


def test_a_csv_manifest_of_50_faxes_is_sent_once_each_and_followed_to_the_end(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    manifest = csv_manifest(tmp_path, 50)
    journal = tmp_path / "batch.db"
    args = ("batch", "send", str(manifest), "--journal", str(journal), "--workers", "8")
    done = faxws(*args, env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "50 fax(es) in faxes.csv, 50 added to the journal; 8 worker(s), faxes sent and "
        "followed to their end (Ctrl-C stops)"
    )
    assert lines[-1] == "Batch: 50 fax(es) in the journal: 50 delivered."
    # Without a terminal: plain lines of the counts by state.
    assert all(re.fullmatch(r"\d+ of 50 done: .+", line) for line in lines[1:-1]), lines
    found = rows(journal)
    assert sorted(found) == [f"fax-{i:03}" for i in range(50)]
    sent = sends_by_reference(sim)
    assert sorted(sent.values()) == [1] * 50
    by_reference = {job.details.reference_id: job for job in sim.jobs if job.details}
    for i in range(50):
        row = found[f"fax-{i:03}"]
        assert row.state is State.DELIVERED
        job = by_reference[row.reference_id]
        assert job.job_ids == row.job_ids
        assert job.recipients[0].recip_fax_number == number(i)
        assert job.recipients[0].recip_name == f"Name {i}"
        assert job.files[0].data == b"%%PDF-1.4 document %d" % i
        assert job.details is not None
        assert job.details.cover_subject == f"Subject {i}"

    # The same command again: nothing added, nothing sent.
    again = faxws(*args, env=pin_env(sim))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].startswith("50 fax(es) in faxes.csv, 0 added")
    assert sends_by_reference(sim) == sent


def test_a_manifests_rows_are_added_together_not_one_by_one(
    sim: FaxWSSimulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from faxws.cli import main

    manifest = csv_manifest(tmp_path, 30)
    journal = tmp_path / "batch.db"
    added: list[list[str]] = []
    many = SqliteJournal.add_many

    def add_many(self: SqliteJournal, rows: Iterator[tuple[str, str, str]]) -> list[Row]:
        given = list(rows)
        added.append([key for key, _, _ in given])
        return many(self, given)

    def add(self: SqliteJournal, key: str, *args: object, **kwargs: object) -> Row:
        raise AssertionError(f"row {key} added by itself")

    monkeypatch.setattr(SqliteJournal, "add_many", add_many)
    monkeypatch.setattr(SqliteJournal, "add", add)
    for name in [name for name in os.environ if name.startswith("FAXWS_")]:
        monkeypatch.delenv(name)
    for name, value in pin_env(sim).items():
        monkeypatch.setenv(name, value)
    assert main(["batch", "send", str(manifest), "--journal", str(journal), "--no-wait"]) == 0
    # one call for every row (the store adds them 500 a transaction)
    assert added == [[f"fax-{i:03}" for i in range(30)]]
    assert (
        capsys.readouterr()
        .out.splitlines()[0]
        .startswith("30 fax(es) in faxes.csv, 30 added to the journal")
    )
    assert sorted(sends_by_reference(sim).values()) == [1] * 30


def test_a_jsonl_manifest_of_50_faxes_with_no_wait_and_json(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    names = documents(tmp_path, 50)
    manifest = tmp_path / "faxes.jsonl"
    manifest.write_text(
        "".join(
            json.dumps(
                {"key": f"j{i}", "to": number(i), "file": [name, names[0]], "sender_name": "Ops"}
            )
            + "\n"
            for i, name in enumerate(names)
        ),
        encoding="utf-8",
    )
    journal = tmp_path / "batch.db"
    done = faxws(
        "batch",
        "send",
        str(manifest),
        "--journal",
        str(journal),
        "--no-wait",
        "--json",
        "--cover-subject",
        "For every row",
        env=pin_env(sim),
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)  # one object, no progress lines
    assert (answer["outcome"], answer["rows"], answer["added"]) == ("submitted", 50, 50)
    assert answer["stopped"] is False
    assert sum(answer["counts"][s] for s in ("submitted", "delivered")) == 50
    assert sorted(sends_by_reference(sim).values()) == [1] * 50
    for job in sim.jobs:
        assert [f.data for f in job.files][1] == b"%PDF-1.4 document 0"
        assert job.details is not None
        assert (job.details.sender_name, job.details.cover_subject) == ("Ops", "For every row")


def test_exit_6_when_a_fax_failed(sim: FaxWSSimulator, tmp_path: Path) -> None:
    manifest = csv_manifest(tmp_path, 4, failing={2})
    journal = tmp_path / "batch.db"
    done = faxws("batch", "send", str(manifest), "--journal", str(journal), env=pin_env(sim))
    assert done.returncode == 6, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "Batch: 4 fax(es) in the journal: 3 delivered, 1 failed."
    )
    assert done.stderr.splitlines() == [
        f"faxws batch send: 1 of 4 fax(es) failed; see faxws batch export --journal {journal}"
    ]


def changed_row(journal: Path, folder: Path, key: str) -> Path:
    """A row added by the Python API whose document then changed: it is never sent, and
    goes to review."""
    document = folder / f"{key}.pdf"
    document.write_bytes(b"%PDF-1.4 as added")
    store = SqliteJournal(journal)
    try:
        Batch(store, None).add(key, FaxSpec([number(99)], [FileSpec(document)]))
    finally:
        store.close()
    document.write_bytes(b"%PDF-1.4 changed since")
    return document


def test_exit_8_when_a_fax_needs_review_and_it_goes_before_6(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    journal = tmp_path / "batch.db"
    document = changed_row(journal, tmp_path, "changed")
    manifest = csv_manifest(tmp_path, 3, failing={1})
    done = faxws("batch", "send", str(manifest), "--journal", str(journal), env=pin_env(sim))
    assert done.returncode == 8, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "Batch: 4 fax(es) in the journal: 2 delivered, 1 failed, 1 needs review."
    )
    assert done.stderr.splitlines() == [
        "faxws batch send: 1 fax(es) need review (whether they were sent cannot be told, or "
        f"they never ended); see faxws batch review --journal {journal}"
    ]
    assert len(sim.requests_for("SendFaxEx")) == 3  # the changed document was never sent

    # batch review: the row, its reference id, no job ids, why.
    row = rows(journal)["changed"]
    reason = (
        f"not sent: the document {document} changed since the row was added (a key never "
        "sends another document)"
    )
    assert row.reason == reason
    done = faxws("batch", "review", "--journal", str(journal), env={})
    assert done.returncode == 0, done.stderr
    reference = row.reference_id
    width = len(reference)
    assert done.stdout.splitlines() == [
        "1 row(s) need review:",
        f"KEY      {'REFERENCE':<{width}}  JOB IDS  REASON",
        f"changed  {reference}  -        {reason}",
    ]
    done = faxws("batch", "review", "--journal", str(journal), "--json", env={})
    assert json.loads(done.stdout) == {
        "rows": [
            {
                "key": "changed",
                "reference_id": reference,
                "job_ids": [],
                "reason": reason,
                "updated_at": row.updated_at.isoformat(),
            }
        ]
    }


def test_status_and_export(sim: FaxWSSimulator, tmp_path: Path) -> None:
    journal = tmp_path / "batch.db"
    changed_row(journal, tmp_path, "changed")
    manifest = csv_manifest(tmp_path, 3, failing={1})
    sent = faxws("batch", "send", str(manifest), "--journal", str(journal), env=pin_env(sim))
    assert sent.returncode == 8, sent.stderr

    done = faxws("batch", "status", "--journal", str(journal), env={})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "4 row(s) in the journal:",
        "  pending       0",
        "  claimed       0",
        "  sending       0",
        "  submitted     0",
        "  delivered     2",
        "  failed        1",
        "  cancelled     0",
        "  uncertain     0",
        "  needs review  1",
    ]
    done = faxws("batch", "status", "--journal", str(journal), "--json", env={})
    assert json.loads(done.stdout) == {
        "rows": 4,
        "counts": {
            "pending": 0,
            "claimed": 0,
            "sending": 0,
            "submitted": 0,
            "delivered": 2,
            "failed": 1,
            "cancelled": 0,
            "uncertain": 0,
            "needs_review": 1,
        },
    }

    found = rows(journal)
    expected = []
    numbers = {"changed": number(99), "fax-000": number(0), "fax-001": FAILING}
    numbers["fax-002"] = number(2)
    for key, to in numbers.items():
        row = found[key]
        expected.append(
            {
                "key": key,
                "state": row.state.value,
                "to": [to],
                "job_ids": list(row.job_ids),
                "reference_id": row.reference_id,
                "attempt": row.attempt,
                "resend_of": None,
                "reason": row.reason,
                "updated_at": row.updated_at.isoformat(),
            }
        )
    assert [e["state"] for e in expected] == ["needs_review", "delivered", "failed", "delivered"]
    assert expected[2]["reason"]  # says why it failed
    done = faxws("batch", "export", "--journal", str(journal), "--format", "jsonl", env={})
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == expected

    output = tmp_path / "export.csv"
    done = faxws("batch", "export", "--journal", str(journal), "--output", str(output), env={})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    table = list(csv.reader(io.StringIO(output.read_text(encoding="utf-8"))))
    assert table[0] == [
        "key",
        "state",
        "to",
        "job_ids",
        "reference_id",
        "attempt",
        "resend_of",
        "reason",
        "updated_at",
    ]
    assert table[1:] == [
        [
            e["key"],
            e["state"],
            ";".join(e["to"]),
            ";".join(e["job_ids"]),
            e["reference_id"],
            str(e["attempt"]),
            "",
            e["reason"] or "",
            e["updated_at"],
        ]
        for e in expected
    ]
    # stdout is the same CSV
    done = faxws("batch", "export", "--journal", str(journal), env={})
    assert done.stdout == output.read_text(encoding="utf-8")


def test_an_export_that_cannot_be_written_leaves_no_file(tmp_path: Path) -> None:
    journal = tmp_path / "batch.db"
    SqliteJournal(journal).close()
    target = tmp_path / "missing" / "rows.csv"
    done = faxws("batch", "export", "--journal", str(journal), "--output", str(target), env={})
    assert done.returncode == 2
    assert done.stderr.startswith(f"faxws batch export: error: --output: cannot write {target}")
    assert not target.parent.exists()


# -- Ctrl-C ----------------------------------------------------------------------------------


class Lines:
    """A stream read line by line by a thread, so that waiting for a line has a time-out."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, pattern: str, timeout: float = 60.0) -> str:
        """The first line (from here on) matching ``pattern``; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(f"no line like {pattern!r}; so far: {self.seen}") from None
            if line is None:
                self._queue.put(None)
                raise AssertionError(f"the stream ended; so far: {self.seen}")
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def rest(self, timeout: float = 60.0) -> list[str]:
        """Every line from here to the end of the stream."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the stream did not end"
        while (line := self._queue.get_nowait()) is not None:
            self.seen.append(line)
        self._queue.put(None)
        return [line.rstrip("\n") for line in self.seen]


@contextmanager
def running(
    *args: str, env: dict[str, str]
) -> Iterator[tuple[subprocess.Popen[str], Lines, Lines]]:
    """``faxws ARGS`` in a subprocess, its output read by threads; killed and reaped at the
    end whatever happened."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "faxws", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**CLEAN_ENV, **env},
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        yield proc, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()


STOPPING = (
    r"^faxws batch send: stopping: no more faxes are started; the [12] send\(s\) in flight "
    r"finish and are recorded \(Ctrl-C again quits at once\)$"
)


def test_ctrl_c_once_stops_claiming_records_what_was_in_flight_and_the_next_run_goes_on(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    manifest = csv_manifest(tmp_path, 10)
    journal = tmp_path / "batch.db"
    # The first sends held: in flight when Ctrl-C comes (progress shows it within a second).
    sim.inject(Fault.delay_response(5), operation="SendFaxEx", times=2)
    args = ("batch", "send", str(manifest), "--journal", str(journal), "--workers", "2")
    with running(*args, env=pin_env(sim)) as (proc, out, err):
        out.until(r"\d sending")
        proc.send_signal(signal.SIGINT)
        err.until(STOPPING)
        assert proc.wait(60) == 7
        stdout, stderr = out.rest(), err.rest()
    assert re.fullmatch(
        r"faxws batch send: stopped with \d+ of 10 fax\(es\) not yet ended \(.*\); run the "
        r"same command again to go on",
        stderr[-1],
    ), stderr
    assert stdout[-1].startswith("Batch: 10 fax(es) in the journal: ")
    state = counts(journal)
    # What was in flight finished and was recorded; nothing is left claimed or sending.
    assert not {State.CLAIMED, State.SENDING, State.UNCERTAIN} & set(state)
    sent = sends_by_reference(sim)
    assert 1 <= sum(sent.values()) < 10
    assert sum(sent.values()) == 10 - state[State.PENDING]
    assert set(sent.values()) == {1}

    done = faxws(*args, env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    assert sorted(sends_by_reference(sim).values()) == [1] * 10
    assert counts(journal) == {State.DELIVERED: 10}


def test_ctrl_c_twice_exits_at_once_and_the_next_run_looks_up_the_send_in_flight(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    manifest = csv_manifest(tmp_path, 3)
    journal = tmp_path / "batch.db"
    hold = 10.0  # the second Ctrl-C comes well within it
    sim.inject(Fault.delay_response(hold), operation="SendFaxEx")
    args = ("batch", "send", str(manifest), "--journal", str(journal), "--workers", "1")
    with running(*args, "--lease", "1", env=pin_env(sim)) as (proc, out, err):
        out.until(r"1 sending")
        proc.send_signal(signal.SIGINT)
        err.until(STOPPING)
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        assert proc.wait(60) == 130
        assert time.monotonic() - started < hold / 2  # not after the send in flight
        stderr = err.rest()
    assert stderr[-1] == (
        "faxws batch send: interrupted: 1 send(s) in flight are left as they are; the next "
        "run of this batch looks them up (never sends them again)"
    )
    assert counts(journal) == {State.SENDING: 1, State.PENDING: 2}
    [in_flight] = [r for r in rows(journal).values() if r.state is State.SENDING]

    # The held send reaches the service once its hold ends.
    deadline = time.monotonic() + 60
    while not sim.jobs:
        assert time.monotonic() < deadline, "the held send never became a job"
        time.sleep(0.05)
    done = faxws(*args, "--lease", "1", env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    assert counts(journal) == {State.DELIVERED: 3}
    sent = sends_by_reference(sim)
    assert sorted(sent.values()) == [1] * 3
    assert sent[in_flight.reference_id] == 1
    row = rows(journal)[in_flight.key]
    assert row.attempt == 1


# -- credentials, secrets, exit codes -------------------------------------------------------


def test_authentication_failure_exits_3_and_sends_nothing(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    manifest = csv_manifest(tmp_path, 3)
    journal = tmp_path / "batch.db"
    env = {**pin_env(sim), "FAXWS_PIN": "PIN-NOT-RIGHT-77"}
    done = faxws("batch", "send", str(manifest), "--journal", str(journal), env=env)
    assert done.returncode == 3
    assert "AuthenticationError" in done.stderr
    assert "PIN-NOT-RIGHT-77" not in done.stdout + done.stderr
    assert sim.jobs == []
    assert State.DELIVERED not in counts(journal)
    assert not {State.SENDING, State.UNCERTAIN, State.CLAIMED} & set(counts(journal))


def test_secrets_are_never_shown(sim: FaxWSSimulator, tmp_path: Path) -> None:
    manifest = csv_manifest(tmp_path, 3, failing={0})
    journal = tmp_path / "batch.db"
    password = "NOTIFY-PASSWORD-SECRET-91"
    env = {
        "FAXWS_BASE_URL": sim.url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_TOKEN": DEMO_TOKEN,
        "FAXWS_NOTIFY_PASSWORD": password,
    }
    sim.inject(Fault.ws_error(-5001, f"refused {password}"), operation="SendFaxEx")
    outputs = []
    for extra in ([], ["--json"]):
        done = faxws(
            "batch",
            "send",
            str(manifest),
            "--journal",
            str(journal),
            "--notify-url",
            f"https://hooks.example.com/fax?key={password}",
            "--notify-user",
            "hook",
            "-v",
            *extra,
            env=env,
        )
        assert done.returncode == 6, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert sim.jobs[0].details is not None
    assert sim.jobs[0].details.notify_auth_user == "hook"
    assert "SendFaxEx" in outputs[0]  # -v logged the exchanges
    for what in ("status", "review", "export"):
        done = faxws("batch", what, "--journal", str(journal), env=env)
        outputs.append(done.stdout + done.stderr)
    # A PIN given as a flag, and the password of a PostgreSQL URL.
    done = faxws(
        "batch",
        "send",
        str(manifest),
        "--journal",
        "postgresql://faxws:DSN-PASSWORD-SECRET-92@127.0.0.1:1/faxws",
        "--pin",
        "PIN-SECRET-93",
        env={"FAXWS_BASE_URL": sim.url, "FAXWS_USER_ID": DEMO_USER_ID},
        cwd=tmp_path,
    )
    assert done.returncode != 0
    outputs.append(done.stdout + done.stderr)
    done = faxws(
        "batch",
        "status",
        "--journal",
        "host=127.0.0.1 port=1 dbname=faxws password='DSN-PASSWORD-SECRET-94'",
        "--json",
        env={},
        cwd=tmp_path,
    )
    assert done.returncode != 0
    outputs.append(done.stdout + done.stderr)
    text = "\n".join(outputs)
    for secret in (password, DEMO_TOKEN, "DSN-PASSWORD-SECRET", "PIN-SECRET-93"):
        assert secret not in text


def test_a_bad_manifest_exits_2_before_anything_is_sent(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    manifest = csv_manifest(tmp_path, 3)
    manifest.write_text(manifest.read_text() + "fax-000,+1 555 0100,,docs/doc-000.pdf,\n")
    done = faxws(
        "batch", "send", str(manifest), "--journal", str(tmp_path / "b.db"), env=pin_env(sim)
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"faxws batch send: {manifest}: 1 bad row(s); nothing was sent:",
        "  line 5, key: 'fax-000' is also the key of line 2",
    ]
    assert sim.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["batch"], "the following arguments are required: COMMAND"),
        (["batch", "send", "m.csv"], "the following arguments are required: --journal"),
        (["batch", "send", "m.txt", "--journal", "j.db"], "pass --format csv or --format jsonl"),
        (["batch", "send", "m.csv", "--journal", "j.db", "--workers", "0"], "whole number"),
        (
            ["batch", "send", "m.csv", "--journal", "j.db", "--rate", "-1"],
            "argument --rate: must be a number of calls a second from 0.01 to 1000",
        ),
        (["batch", "receive", "--journal", "j.db"], "required: --port"),
        (
            ["batch", "receive", "--journal", "j.db", "--port", "0"],
            "give the pushes' credentials: --notify-user and the variable FAXWS_NOTIFY_PASSWORD",
        ),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    done = faxws(
        *args, env={"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", "FAXWS_PIN": "1"}
    )
    assert done.returncode == 2
    assert message in done.stderr


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--lease", "1e300", "a number of seconds from 1 to 86400 (1 day)"),
        ("--lease", "1e-300", "a number of seconds from 1 to 86400 (1 day)"),
        ("--lease", "0.5", "a number of seconds from 1 to 86400 (1 day)"),
        ("--lease", "86401", "a number of seconds from 1 to 86400 (1 day)"),
        ("--lease", "nan", "a number of seconds from 1 to 86400 (1 day)"),
        ("--rate", "1e-300", "a number of calls a second from 0.01 to 1000"),
        ("--rate", "1001", "a number of calls a second from 0.01 to 1000"),
        ("--workers", "5000", "a whole number of workers from 1 to 1024"),
        ("--max-concurrent", "2147483648", "a whole number of sends from 1 to 2147483647"),
    ],
)
def test_a_setting_out_of_its_range_is_a_usage_error_naming_the_flag_before_anything_is_written(
    sim: FaxWSSimulator, tmp_path: Path, flag: str, value: str, words: str
) -> None:
    manifest = csv_manifest(tmp_path, 2)
    journal = tmp_path / "batch.db"
    done = faxws(
        "batch", "send", str(manifest), "--journal", str(journal), flag, value, env=pin_env(sim)
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"faxws batch send: error: argument {flag}: must be {words}"
    )
    assert not journal.exists()
    assert sim.requests == []


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--lease", "1"), ("--lease", "86400"), ("--rate", "0.01"), ("--rate", "1000")],
)
def test_the_ends_of_each_range_are_taken_and_the_help_says_them(
    sim: FaxWSSimulator, tmp_path: Path, flag: str, value: str
) -> None:
    help_text = " ".join(faxws("batch", "send", "--help", env={}).stdout.split())
    ranges = {"--lease": "1 to 86400", "--rate": "0.01 to 1000"}
    assert re.search(rf"{flag} \S+ [^-]*\b{re.escape(ranges[flag])}\b", help_text)
    manifest = csv_manifest(tmp_path, 1)
    journal = tmp_path / "batch.db"
    args = ("batch", "send", str(manifest), "--journal", str(journal), "--no-wait")
    done = faxws(*args, flag, value, env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    assert counts(journal) == {State.SUBMITTED: 1}


@pytest.mark.parametrize("command", ["send", "status", "review", "export"])
def test_a_journal_in_a_missing_folder_is_a_usage_error(
    sim: FaxWSSimulator, tmp_path: Path, command: str
) -> None:
    journal = tmp_path / "nope" / "batch.db"
    args = [str(csv_manifest(tmp_path, 1))] if command == "send" else []
    done = faxws("batch", command, *args, "--journal", str(journal), env=pin_env(sim))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"faxws batch {command}: error: --journal: {journal}: the folder "
        f"{tmp_path / 'nope'} does not exist (create it first)"
    )
    assert not (tmp_path / "nope").exists()
    assert sim.requests == []


@pytest.mark.parametrize("command", ["status", "review", "export"])
def test_a_command_that_reads_the_journal_refuses_one_that_does_not_exist_and_creates_none(
    tmp_path: Path, command: str
) -> None:
    done = faxws("batch", command, "--journal", "batch-typo.db", env={}, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"faxws batch {command}: error: --journal: batch-typo.db: no such journal (this "
        "command does not create one; faxws batch send does)"
    )
    assert list(tmp_path.iterdir()) == []


def test_keys_reference_ids_job_ids_and_paths_are_shown_whole_and_reasons_masked(
    sim: FaxWSSimulator, tmp_path: Path
) -> None:
    # The demo PIN 0000, in keys made as the guide makes them (letter-0000), a job id, the
    # journal's file name and a manifest's problem; a reason quoting the PIN is masked.
    journal = tmp_path / "batch-0000.db"
    document = tmp_path / "letter-0000.pdf"
    document.write_bytes(b"%PDF-1.4 letter")
    store = SqliteJournal(journal)
    try:
        Batch(store, None).add("letter-0000", FaxSpec([number(0)], [FileSpec(document)]))
        store.claim("w", 60, 1)
        store.mark_sending("letter-0000", "w")
        store.mark_submitted("letter-0000", "w", ["JOB-0000-1"])
        store.mark_needs_review("letter-0000", "the service said: PIN 0000 refused")
    finally:
        store.close()
    reference = rows(journal)["letter-0000"].reference_id
    env = pin_env(sim)
    assert env["FAXWS_PIN"] == "0000"

    done = faxws("batch", "review", "--journal", str(journal), env=env)
    assert done.returncode == 0, done.stderr
    width = len(reference)
    assert done.stdout.splitlines() == [
        "1 row(s) need review:",
        f"KEY          {'REFERENCE':<{width}}  JOB IDS     REASON",
        f"letter-0000  {reference}  JOB-0000-1  the service said: PIN *** refused",
    ]
    done = faxws("batch", "review", "--journal", str(journal), "--json", env=env)
    (row,) = json.loads(done.stdout)["rows"]
    assert (row["key"], row["job_ids"]) == ("letter-0000", ["JOB-0000-1"])
    assert row["reason"] == "the service said: PIN *** refused"

    done = faxws("batch", "export", "--journal", str(journal), "--format", "jsonl", env=env)
    exported = json.loads(done.stdout)
    assert (exported["key"], exported["job_ids"]) == ("letter-0000", ["JOB-0000-1"])
    assert exported["reason"] == "the service said: PIN *** refused"

    # batch send names the journal as given, and a manifest's problems as the library says
    manifest = tmp_path / "faxes-0000.jsonl"
    manifest.write_text(
        json.dumps({"key": "letter-0000", "to": number(0), "file": "letter-0000.pdf"})
        + "\n"
        + json.dumps({"key": "letter-0001", "to": number(1), "file": "l.pdf\u0000.pdf"})
        + "\n"
    )
    done = faxws("batch", "send", str(manifest), "--journal", str(journal), env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"faxws batch send: {manifest}: 1 bad row(s); nothing was sent:",
        "  line 2, file: contains U+0000, which XML cannot carry",
    ]
    document.write_bytes(b"%PDF-1.4 changed")  # the row in the journal holds another document
    manifest.write_text(
        json.dumps({"key": "letter-0002", "to": number(2), "file": "letter-0000.pdf"}) + "\n"
    )
    done = faxws("batch", "send", str(manifest), "--journal", str(journal), "--no-wait", env=env)
    assert done.returncode == 8, done.stderr
    assert done.stderr.splitlines()[-1].endswith(f"see faxws batch review --journal {journal}")


@pytest.mark.parametrize("format_", ["jsonl", "csv"])
def test_a_nul_in_a_documents_path_is_named_by_line_and_field_with_the_other_problems(
    sim: FaxWSSimulator, tmp_path: Path, format_: str
) -> None:
    (tmp_path / "l.pdf").write_bytes(b"%PDF-1.4 l")
    manifest = tmp_path / f"m.{format_}"
    if format_ == "jsonl":
        lines = [
            {"key": "a", "to": number(0), "file": "l.pdf"},
            {"key": "b", "to": number(0), "file": "l.pdf\u0000.pdf"},
            {"key": "c", "to": number(0), "file": "missing.pdf"},
        ]
        manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
        first = 2
    else:
        manifest.write_bytes(
            b"key,to,file\na,+1 555 0100,l.pdf\nb,+1 555 0100,l.pdf\x00x\n"
            b"c,+1 555 0100,missing.pdf\n"
        )
        first = 3
    journal = tmp_path / "j.db"
    done = faxws("batch", "send", str(manifest), "--journal", str(journal), env=pin_env(sim))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"faxws batch send: {manifest}: 2 bad row(s); nothing was sent:",
        f"  line {first}, file: contains U+0000, which XML cannot carry",
        f"  line {first + 1}, file: not found: {tmp_path / 'missing.pdf'}",
    ]
    assert sim.requests == []


@pytest.mark.parametrize("command", ["send", "status", "review", "export", "receive"])
def test_help_with_an_example(command: str) -> None:
    done = faxws("batch", command, "--help", env={})
    assert done.returncode == 0
    assert "example:" in done.stdout
    assert f"usage: faxws batch {command}" in done.stdout


def test_the_help_of_batch_send_documents_the_manifest_and_exit_codes() -> None:
    text = faxws("batch", "send", "--help", env={}).stdout
    for words in (
        "the column repeated in CSV (to,to,file,file)",
        '"file": ["a.pdf", "b.pdf"]',
        "relative to the manifest's folder",
        "8    batch send: a fax needs review",
        "--base-url",
        "--cover-subject",
        "--notify-url",
        "--max-concurrent",
    ):
        assert words in text


# -- progress --------------------------------------------------------------------------------

#: ``faxws ARGS`` that says at the end whether rich was imported.
RUN_AND_TELL = (
    "import sys; from faxws.cli import main; code = main(sys.argv[1:]); "
    "sys.stderr.write(f'rich imported: {\"rich\" in sys.modules}\\n'); sys.exit(code)"
)


def test_on_a_terminal_a_progress_bar(sim: FaxWSSimulator, tmp_path: Path) -> None:
    import pty

    manifest = csv_manifest(tmp_path, 3)
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUN_AND_TELL,
            "batch",
            "send",
            str(manifest),
            "--journal",
            str(tmp_path / "batch.db"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.PIPE,
        text=True,
        env={**CLEAN_ENV, **pin_env(sim), "COLUMNS": "120", "TERM": "xterm"},
    ) as proc:
        os.close(terminal)
        chunks: list[bytes] = []

        def read() -> None:
            while True:
                try:
                    data = os.read(controller, 4096)
                except OSError:  # EIO: the process closed the terminal
                    return
                if not data:
                    return
                chunks.append(data)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            reader.join(30)
            os.close(controller)
    assert proc.returncode == 0, err
    assert err.splitlines() == ["rich imported: True"]
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode())
    assert "faxes" in screen
    assert "3/3" in screen
    assert "3 delivered" in screen
    assert "Batch: 3 fax(es) in the journal: 3 delivered." in screen


def test_without_a_terminal_rich_is_not_imported(sim: FaxWSSimulator, tmp_path: Path) -> None:
    manifest = csv_manifest(tmp_path, 2)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            RUN_AND_TELL,
            "batch",
            "send",
            str(manifest),
            "--journal",
            str(tmp_path / "batch.db"),
        ],
        env={**CLEAN_ENV, **pin_env(sim)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["rich imported: False"]


def test_without_rich_a_terminal_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from faxws.cli import _batch
    from faxws.cli._output import Outcome

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    out = Outcome([], set())
    monkeypatch.setitem(sys.modules, "rich", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "rich.console", None)
    progress = _batch._progress(out, True, lambda: {State.PENDING: 2})
    assert type(progress) is _batch._Progress
    progress.start()
    assert screen.getvalue() == "0 of 2 done: 2 pending\n"


def test_plain_lines_at_most_one_a_second_and_the_latest_counts_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from faxws.cli import _batch
    from faxws.cli._output import Outcome

    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    screen = io.StringIO()
    monkeypatch.setattr(sys, "stdout", screen)
    progress = _batch._progress(Outcome([], set()), True, lambda: {State.PENDING: 3})
    progress.start()  # the journal's counts, read
    progress.seen({State.PENDING: 2, State.SENDING: 1})
    progress.tick()  # within the second: not shown yet
    now[0] += 0.5
    progress.seen({State.PENDING: 1, State.SENDING: 1, State.SUBMITTED: 1})
    progress.tick()
    now[0] += 0.5
    progress.tick()  # a second on: the latest counts
    progress.tick()  # no change: nothing
    now[0] += 0.9
    progress.seen({State.SENDING: 1, State.DELIVERED: 2})
    now[0] += 0.2
    progress.tick()
    assert screen.getvalue().splitlines() == [
        "0 of 3 done: 3 pending",
        "0 of 3 done: 1 pending, 1 sending, 1 submitted",
        "2 of 3 done: 1 sending, 2 delivered",
    ]


# -- PostgreSQL ------------------------------------------------------------------------------


def postgres_dsn(request: pytest.FixtureRequest) -> str:
    """A fresh schema on the journal tests' PostgreSQL server (skipped without its binaries,
    failed instead where CI is set)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "journal"))
    try:
        from postgres_server import fresh_database
    finally:
        sys.path.pop(0)
    return fresh_database(request)


def test_a_postgresql_journal_and_its_password_never_shown(
    sim: FaxWSSimulator, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The server trusts its socket: the password is sent nowhere, but is the caller's secret.
    dsn = postgres_dsn(request) + " password='PG-PASSWORD-SECRET-95'"
    manifest = csv_manifest(tmp_path, 5, failing={3})
    args = ("batch", "send", str(manifest), "--journal", dsn, "--workers", "3")
    done = faxws(*args, env=pin_env(sim))
    assert done.returncode == 6, done.stderr
    assert done.stderr.splitlines() == [
        "faxws batch send: 1 of 5 fax(es) failed; see faxws batch export --journal "
        + shlex.quote(dsn).replace("PG-PASSWORD-SECRET-95", "***")
    ]
    again = faxws(*args, env=pin_env(sim))
    assert again.returncode == 6, again.stderr
    assert sorted(sends_by_reference(sim).values()) == [1] * 5, (
        done.stdout,
        again.stdout,
        sends_by_reference(sim),
    )
    status = faxws("batch", "status", "--journal", dsn, "--json", env={})
    assert json.loads(status.stdout)["counts"] | {} == {
        **{s.value: 0 for s in State},
        "delivered": 4,
        "failed": 1,
    }
    export = faxws("batch", "export", "--journal", dsn, env={})
    assert len(export.stdout.splitlines()) == 6
    for ran in (done, again, status, export):
        assert "PG-PASSWORD-SECRET" not in ran.stdout + ran.stderr


@pytest.mark.parametrize(
    ("journal", "secrets"),
    [
        ("postgresql://faxws:pa%40ss@db.example.com/faxws", {"pa%40ss", "pa@ss"}),
        ("postgres://db.example.com/faxws?user=u&password=p%20w", {"p%20w", "p w"}),
        ("host=db dbname=faxws password=plain", {"plain"}),
        ("host=db dbname=faxws password = 'qu oted'", {"qu oted"}),
        ("batch.db", set()),
    ],
)
def test_the_password_of_a_journal_is_a_secret(journal: str, secrets: set[str]) -> None:
    import argparse

    from faxws.cli._batch import _journal_secrets
    from faxws.cli._output import Outcome

    out = Outcome([], set())
    _journal_secrets(argparse.Namespace(journal=journal), out)
    assert out.secrets == secrets


# -- batch receive ---------------------------------------------------------------------------


def test_receive_ends_the_rows_by_the_services_pushes(
    faxws_simulator_factory: SimulatorFactory, tmp_path: Path
) -> None:
    import requests

    # A fax's life in about a second: its row is submitted well before its push comes.
    sim = faxws_simulator_factory(time_scale=20)
    journal = tmp_path / "batch.db"
    password = "PUSH-PASSWORD-SECRET-96"
    secret_env = {"FAXWS_NOTIFY_PASSWORD": password}
    receive = ("batch", "receive", "--journal", str(journal), "--port", "0")
    with running(*receive, "--notify-user", "hook", env=secret_env) as (proc, out, err):
        started = out.until(r"^Receiving pushes")
        found = re.search(r"http://127\.0\.0\.1:\d+/", started)
        assert found is not None, started
        url = found.group(0)
        assert started == f"Receiving pushes for the journal on {url} (user hook); Ctrl-C stops\n"
        manifest = csv_manifest(tmp_path, 5, failing={4})
        sent = faxws(
            "batch",
            "send",
            str(manifest),
            "--journal",
            str(journal),
            "--no-wait",
            "--notify-url",
            url + "fax-done",
            "--notify-user",
            "hook",
            env={**pin_env(sim), **secret_env},
        )
        assert sent.returncode == 0, sent.stderr
        deadline = time.monotonic() + 60
        while counts(journal) != {State.DELIVERED: 4, State.FAILED: 1}:
            assert time.monotonic() < deadline, counts(journal)
            time.sleep(0.05)
        refused = requests.post(
            url + "fax-done?key=" + password,
            data={"FaxJobId": "SIM00000001", "FaxJobStatusId": "1"},
            auth=("hook", "not the password"),
            timeout=30,
        )
        assert refused.status_code == 401
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        stdout, stderr = out.rest(), err.rest()
    # No status call: the pushes ended the rows.
    assert sim.requests_for("GetRealTimeFaxStatusEx2") == []
    assert [line.split(" ", 2)[2] for line in stderr[:-1]] == ["POST /fax-done 204"] * 5 + [
        "POST /fax-done 401"
    ]
    assert stderr[-1] == "faxws batch receive: stopped; 6 request(s), 5 push(es) taken"
    assert password not in "\n".join(stdout + stderr)
    assert rows(journal)["fax-004"].reason


def test_receive_on_a_port_in_use_exits_2(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = faxws(
            "batch",
            "receive",
            "--journal",
            str(tmp_path / "batch.db"),
            "--port",
            str(port),
            "--notify-user",
            "hook",
            env={"FAXWS_NOTIFY_PASSWORD": "x"},
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"faxws batch receive: cannot listen on 127.0.0.1:{port}: ")
