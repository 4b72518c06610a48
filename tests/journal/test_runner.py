"""The batch runner against the simulator (real HTTP, in-process) on each store: every row sent
once and followed to its end; telephone failures sent again only under a policy; a send whose
answer was lost looked up by its ReferenceId, never sent twice; an authentication failure ends
the run with nothing failed; the account's call rate and concurrent sends kept by every
worker; tracking that asks about many jobs per call; a stop that lets calls in flight finish
and records them; two runs on one journal sending each key once.

Time is :class:`FakeTime`: the workers' sleeps move it (and the simulator's clock), only when
every worker sleeps, so lives of minutes and back-offs take no real time."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from runner_support import (
    BUSY,
    NEVER_ENDS,
    ORDINARY,
    PDF,
    REJECTED,
    Delegate,
    FakeTime,
    batch_for,
    calls,
    client_for,
    document,
    sends_by_reference,
    simulator,
    spec,
    spied_client,
)

from faxws import FaxClient, FaxWSError, Notify
from faxws.errors import AuthenticationError, ConnectError, HTTPStatusError
from faxws.journal import (
    Batch,
    FaxSpec,
    FileSpec,
    JournalError,
    JournalStore,
    ResendPolicy,
    State,
    Stop,
    _runner,
)
from faxws.journal._runner import LOOKUPS, _Tracker
from faxws.status import RealTimeFaxStatus
from faxws.testing import Account, Fault, FaxWSSimulator
from faxws.transport import Request, Response

OpenStore = Any


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()


@pytest.fixture
def sim(fake: FakeTime) -> Iterator[FaxWSSimulator]:
    with simulator(fake) as started:
        yield started


@pytest.fixture
def store(open_store: OpenStore, fake: FakeTime) -> JournalStore:
    made: JournalStore = open_store(clock=fake)
    return made


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    return document(tmp_path)


def add(batch: Batch, pdf: Path, count: int, *numbers: str, prefix: str = "fax") -> list[str]:
    keys = [f"{prefix}-{n:04d}" for n in range(count)]
    for key in keys:
        batch.add(key, spec(pdf, *numbers))
    return keys


def runs_made(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[Any], object] | None = None
) -> list[Any]:
    """Each run a Batch makes from now on (its private ``_Run``), ``then`` called on it as it
    is made."""
    runs: list[Any] = []
    made = _runner._Run.__init__

    def init(run: Any, *args: Any, **kwargs: Any) -> None:
        made(run, *args, **kwargs)
        runs.append(run)
        if then is not None:
            then(run)

    monkeypatch.setattr(_runner._Run, "__init__", init)
    return runs


def states(batch: Batch) -> dict[State, int]:
    return {s: n for s, n in batch.counts().items() if n}


def references(batch: Batch) -> dict[str, str]:
    return {o.key: o.reference_id for o in batch.outcomes()}


# -- every row once, to its end --------------------------------------------------------------


def test_200_rows_are_each_sent_once_and_followed_to_their_end(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    keys = add(batch, pdf, 200)
    seen: list[dict[State, int]] = []
    threads: set[threading.Thread] = set()

    def progress(counts: dict[State, int]) -> None:
        threads.add(threading.current_thread())
        seen.append(counts)

    summary = batch.run(workers=4, on_progress=progress)
    assert summary.stopped is False
    assert {s: n for s, n in summary.counts.items() if n} == {State.DELIVERED: 200}
    sent = sends_by_reference(sim)
    assert calls(sim, "SendFaxEx") == 200
    assert sorted(sent) == sorted(references(batch).values())
    assert set(sent.values()) == {1}
    outcomes = list(batch.outcomes())
    assert [o.key for o in outcomes] == keys
    # a row's attempt counts its claims: one released unsent (behind a send that took long
    # on a loaded machine) is claimed again, and still sent once
    assert all(len(o.job_ids) == 1 for o in outcomes)
    assert all(o.recipients == (ORDINARY,) for o in outcomes)
    assert seen[-1] == summary.counts
    assert threads == {threading.current_thread()}  # the run's own thread
    client.close()


def test_the_runs_thread_is_woken_for_each_row_only_to_report_progress(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    wakes: list[int] = []

    class Counted(threading.Event):
        def set(self) -> None:
            wakes.append(1)
            super().set()

    runs_made(monkeypatch, lambda run: setattr(run, "changed", Counted()))
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 40)
    assert batch.run(workers=2, wait=False).counts[State.SUBMITTED] == 40
    assert len(wakes) <= 2  # each worker as it ends
    add(batch, pdf, 40, prefix="reported")
    reports: list[dict[State, int]] = []
    before = len(wakes)
    batch.run(workers=2, wait=False, on_progress=reports.append)
    assert len(wakes) - before >= 40
    assert reports[-1][State.SUBMITTED] == 80
    client.close()


def test_a_second_run_sends_nothing_again(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 5)
    batch.run(workers=2)
    again = batch_for(store, client, fake)
    add(again, pdf, 5)  # the same keys and specs: the rows as they are
    assert again.run(workers=2).counts[State.DELIVERED] == 5
    assert calls(sim, "SendFaxEx") == 5
    client.close()


def test_tracking_asks_about_at_least_50_jobs_per_status_call_per_round(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 180)
    add(batch, pdf, 20, BUSY, prefix="busy")  # tracked for minutes after the others end
    batch.run(workers=4)
    rounds: dict[float, list[int]] = {}
    for request in sim.requests_for("GetRealTimeFaxStatusEx2"):
        asked = request.body.count(b"JobId>") // 2
        rounds.setdefault(request.received_at, []).append(asked)
    assert len(rounds) >= 3
    for asked in rounds.values():
        assert len(asked) <= max(1, math.ceil(sum(asked) / 100)), asked
        assert len(asked) * 50 <= max(sum(asked), 50), asked
    client.close()


# -- failures at the telephone level -----------------------------------------------------------


def test_telephone_failures_are_not_sent_again_by_default(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 3, BUSY)
    summary = batch.run(workers=2)
    assert {s: n for s, n in summary.counts.items() if n} == {State.FAILED: 3}
    assert calls(sim, "SendFaxEx") == 3
    for outcome in batch.outcomes():
        assert outcome.reason is not None
        assert "busy" in outcome.reason
        assert outcome.job_ids[0] in outcome.reason
    client.close()


def test_a_resend_policy_sends_telephone_failures_again_as_linked_rows(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake, resend=ResendPolicy(max_resends=2))
    batch.add("busy", spec(pdf, BUSY))
    batch.add("rejected", spec(pdf, REJECTED))
    batch.add("fine", spec(pdf))
    summary = batch.run(workers=3)
    assert summary.counts[State.FAILED] == 6
    assert summary.counts[State.DELIVERED] == 1
    chain = {o.key: o for o in batch.outcomes()}
    for first in ("busy", "rejected"):
        assert chain[f"{first}/resend-1"].resend_of == first
        assert chain[f"{first}/resend-2"].resend_of == f"{first}/resend-1"
        assert f"{first}/resend-3" not in chain
        refs = {chain[k].reference_id for k in (first, f"{first}/resend-1", f"{first}/resend-2")}
        assert len(refs) == 3
    assert "fine/resend-1" not in chain
    assert calls(sim, "SendFaxEx") == 7
    assert set(sends_by_reference(sim).values()) == {1}
    client.close()


def test_a_fax_delivered_to_some_recipients_is_never_sent_again(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake, resend=ResendPolicy(max_resends=3))
    batch.add("both", spec(pdf, ORDINARY, BUSY))
    summary = batch.run()
    assert summary.counts[State.FAILED] == 1
    (outcome,) = batch.outcomes()
    assert outcome.reason is not None
    assert outcome.reason.startswith("delivered to 1 of 2 recipients")
    assert calls(sim, "SendFaxEx") == 1
    client.close()


# -- sends without an answer -------------------------------------------------------------------


def test_an_answer_lost_after_the_job_was_made_is_resolved_by_reference(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    sim.inject(Fault.reset_mid_response(), operation="SendFaxEx")
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    batch.add("lost", spec(pdf))
    summary = batch.run()
    assert summary.counts[State.DELIVERED] == 1
    assert calls(sim, "SendFaxEx") == 1
    assert calls(sim, "SimpleGetFaxStatus") >= 1
    client.close()


@pytest.mark.parametrize(
    "fault", [Fault.http_status(503), Fault.html_500()], ids=["503", "500 page"]
)
def test_a_send_the_service_may_have_taken_is_never_sent_twice(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path, fault: Fault
) -> None:
    """The simulator made no job: the look-ups find none, and the row goes to review."""
    sim.inject(fault, operation="SendFaxEx")
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    batch.add("maybe", spec(pdf))
    summary = batch.run()
    assert {s: n for s, n in summary.counts.items() if n} == {State.NEEDS_REVIEW: 1}
    (outcome,) = batch.review()
    assert outcome.reason is not None
    assert outcome.reason.startswith(
        f"the service has no job with reference JRI-{outcome.reference_id}; it may or may not "
        "have been sent"
    )
    assert calls(sim, "SendFaxEx") == 1
    assert calls(sim, "SimpleGetFaxStatus") == LOOKUPS
    client.close()


def test_a_send_that_timed_out_is_never_sent_twice(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    sim.inject(Fault.delay_response(60), operation="SendFaxEx")  # ended by the sim's stop
    client = client_for(sim, timeout=(5, 0.3))
    batch = batch_for(store, client, fake)
    batch.add("slow", spec(pdf))
    summary = batch.run()
    assert summary.counts[State.NEEDS_REVIEW] == 1
    (outcome,) = batch.review()
    assert outcome.reason is not None
    assert "time" in outcome.reason  # the send's own error is kept with what is known
    assert calls(sim, "SendFaxEx") == 1
    client.close()


def test_a_refused_connection_sends_the_row_later_after_a_back_off(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client, spy = spied_client(sim, fake, retries=0)  # the client's own retries: none
    refused = []

    def refuse(operation: str, request: Request) -> None:
        if operation == "SendFaxEx" and len(refused) < 2:
            refused.append(fake())
            raise ConnectError("connection refused", request_id=request.request_id)

    spy.hook = refuse
    batch = batch_for(store, client, fake)
    batch.add("refused", spec(pdf))
    summary = batch.run(wait=False)
    assert summary.counts[State.SUBMITTED] == 1
    (outcome,) = batch.outcomes()
    assert outcome.attempt == 3
    assert calls(sim, "SendFaxEx") == 1
    sends = [at for op, at in spy.posts if op == "SendFaxEx"]
    assert sends[1] - sends[0] >= timedelta(seconds=1)
    assert sends[2] - sends[1] >= timedelta(seconds=2)
    client.close()


def test_a_service_never_reached_ends_the_run_with_the_rows_pending(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    """Every send refused before a byte was written, for longer than unreachable_after: the
    run ends with the last such error, nothing failed, nothing sent (not a run forever)."""
    client, spy = spied_client(sim, fake, retries=0)

    def refuse(operation: str, request: Request) -> None:
        if operation == "SendFaxEx":
            raise ConnectError("connection refused", request_id=request.request_id)

    spy.hook = refuse
    batch = batch_for(store, client, fake, unreachable_after=120)
    add(batch, pdf, 3)
    with pytest.raises(ConnectError):
        batch.run(workers=2)
    assert states(batch) == {State.PENDING: 3}
    sends = [at for op, at in spy.posts if op == "SendFaxEx"]
    assert sends[-1] - sends[0] >= timedelta(seconds=120)
    assert calls(sim, "SendFaxEx") == 0
    client.close()


@pytest.mark.parametrize("status", [404, 405, 400])
def test_an_http_refusal_without_a_soap_answer_ends_the_run_with_nothing_failed(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path, status: int
) -> None:
    """A wrong endpoint (404) or another HTTP refusal is about the service, not a fax: the
    row waits for the next run instead of being failed for ever."""
    sim.inject(Fault.http_status(status), operation="SendFaxEx")
    client = client_for(sim, retries=0)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 3)
    with pytest.raises(HTTPStatusError):
        batch.run(workers=1)
    assert states(batch) == {State.PENDING: 3}
    client.close()


def test_an_answer_after_the_row_was_settled_by_its_reference_ends_nothing(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    """The lease ran out during the send, another worker found the job by its ReferenceId
    and settled the row; the late answer is one send, not a worker's crash."""
    client, spy = spied_client(sim, fake)
    batch = batch_for(store, client, fake)

    def settle_meanwhile(operation: str, request: Request, response: Response) -> Response:
        if operation == "SendFaxEx":
            (row,) = store.rows_in(State.SENDING)
            fake.advance(batch.lease_seconds + 1)
            store.recover()
            store.resolve_uncertain(row.key, [], fake())
        return response

    spy.after = settle_meanwhile
    batch.add("late", spec(pdf))
    summary = batch.run()
    assert summary.counts[State.DELIVERED] == 1
    assert calls(sim, "SendFaxEx") == 1
    client.close()


def test_an_answer_after_the_row_went_to_review_is_recorded_there(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    """The worker stalled past its lease with its send on the way; the look-ups found no job
    and the row went to review. The answer that comes after all is what a person needs: the
    row keeps it (job ids, a reason saying it was sent), so that nobody sends it again."""
    client, spy = spied_client(sim, fake)
    batch = batch_for(store, client, fake)

    def review_meanwhile(operation: str, request: Request, response: Response) -> Response:
        if operation == "SendFaxEx":
            (row,) = store.rows_in(State.SENDING)
            fake.advance(batch.lease_seconds + 1)
            store.recover()
            store.mark_needs_review(row.key, "the service has no job with its reference")
        return response

    spy.after = review_meanwhile
    batch.add("late", spec(pdf))
    batch.run(wait=False)
    (row,) = store.rows_in(State.NEEDS_REVIEW)
    ((job_id,),) = [job.job_ids for job in sim.jobs]
    assert row.job_ids == (job_id,)
    assert row.reason == (
        f"sent: the service accepted it ({job_id}) after it was put in review (the service"
        " has no job with its reference); do not send it again"
    )
    assert store.by_job_id(job_id) == row
    assert calls(sim, "SendFaxEx") == 1
    client.close()


def test_an_answer_to_another_request_makes_the_row_uncertain(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    """The service got the send (the job exists) but the answer is a status answer: the row
    is looked up by its reference and tracked, not sent again."""
    client, spy = spied_client(sim, fake)
    stale: list[Response] = []

    def replay(operation: str, request: Request, response: Response) -> Response:
        if operation == "SimpleGetFaxStatus" and not stale:
            stale.append(response)
        if operation == "SendFaxEx" and stale:
            return stale[0]
        return response

    spy.after = replay
    batch = batch_for(store, client, fake)
    client.get_status_by_reference("nothing")  # the answer replayed later
    batch.add("stale", spec(pdf))
    summary = batch.run()
    assert summary.counts[State.DELIVERED] == 1
    assert calls(sim, "SendFaxEx") == 1
    client.close()


def test_a_stale_send_answer_naming_another_job_goes_to_review(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    """A well-formed answer of an earlier send: its job is not the row's (the status says
    another ReferenceId), so the row is neither tracked as that job nor sent again."""
    client, spy = spied_client(sim, fake)
    answers: list[Response] = []

    def replay(operation: str, request: Request, response: Response) -> Response:
        if operation == "SendFaxEx":
            answers.append(response)
            return answers[0]
        return response

    spy.after = replay
    batch = batch_for(store, client, fake)
    batch.add("first", spec(pdf))
    batch.add("second", spec(pdf))
    summary = batch.run(workers=1)
    assert summary.counts[State.NEEDS_REVIEW] == 1
    assert summary.counts[State.DELIVERED] == 1
    (outcome,) = batch.review()
    assert outcome.key == "second"
    assert outcome.reason is not None
    assert "reference" in outcome.reason
    assert calls(sim, "SendFaxEx") == 2
    client.close()


# -- authentication ----------------------------------------------------------------------------


def test_an_authentication_failure_ends_the_run_with_nothing_failed(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim, pin="wrong-pin")
    batch = batch_for(store, client, fake)
    add(batch, pdf, 10)
    with pytest.raises(AuthenticationError):
        batch.run(workers=3)
    assert states(batch) == {State.PENDING: 10}
    assert sim.jobs == []
    assert "wrong-pin" not in repr(list(batch.outcomes()))
    client.close()


# -- limits ------------------------------------------------------------------------------------


def test_the_call_rate_holds_for_every_call_of_every_worker(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client, spy = spied_client(sim, fake)
    batch = batch_for(store, client, fake, rate=4.0)
    add(batch, pdf, 12)
    batch.run(workers=4)
    times = sorted(at for _, at in spy.posts if at is not None)
    operations = Counter(op for op, _ in spy.posts)
    assert operations["SendFaxEx"] == 12
    assert operations["GetRealTimeFaxStatusEx2"] >= 1
    for n, at in enumerate(times):
        assert (at - times[0]).total_seconds() >= n / 4.0 - 1e-6, (n, times)
    client.close()


def test_max_concurrent_sends_are_never_exceeded(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client, spy = spied_client(sim, fake)
    flying = [0, 0]  # now, most
    cond = threading.Condition()

    def gate(operation: str, request: Request) -> None:
        if operation != "SendFaxEx":
            return
        with cond:
            flying[0] += 1
            flying[1] = max(flying[1], flying[0])
            cond.notify_all()
            # Held until a third send arrives (which it must not) or a moment passes.
            cond.wait_for(lambda: flying[0] > 2, timeout=0.1)

    def done(operation: str, request: Request, response: Response) -> Response:
        if operation == "SendFaxEx":
            with cond:
                flying[0] -= 1
        return response

    spy.hook, spy.after = gate, done
    batch = batch_for(store, client, fake, max_concurrent=2)
    add(batch, pdf, 10)
    batch.run(workers=6, wait=False)
    assert flying == [0, 2]
    assert calls(sim, "SendFaxEx") == 10
    client.close()


# -- stopping ----------------------------------------------------------------------------------


def test_a_stop_lets_calls_in_flight_finish_and_records_them(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client, spy = spied_client(sim, fake)
    stop = Stop()

    def stop_now(operation: str, request: Request) -> None:
        if operation == "SendFaxEx":
            stop.request()

    spy.hook = stop_now
    batch = batch_for(store, client, fake)
    add(batch, pdf, 30)
    summary = batch.run(workers=3, stop=stop)
    assert summary.stopped is True
    counts = {s: n for s, n in summary.counts.items() if n}
    assert set(counts) == {State.PENDING, State.SUBMITTED}
    assert 1 <= counts[State.SUBMITTED] <= 3
    assert calls(sim, "SendFaxEx") == counts[State.SUBMITTED]
    # The rest go in a later run.
    assert batch.run(workers=3).counts[State.DELIVERED] == 30
    assert set(sends_by_reference(sim).values()) == {1}
    client.close()


def test_a_stop_requested_before_the_run_sends_nothing(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 3)
    stop = Stop()
    stop.request()
    assert batch.run(workers=2, stop=stop) == batch.run(workers=2, stop=stop)
    assert states(batch) == {State.PENDING: 3}
    assert sim.requests == []
    client.close()


# -- one journal, two runs ---------------------------------------------------------------------


def test_two_runs_on_two_handles_of_one_journal_send_each_key_once(
    sim: FaxWSSimulator, open_store: OpenStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    first = batch_for(open_store(clock=fake), client, fake)
    second = batch_for(open_store(clock=fake), client, fake)
    add(first, pdf, 120)
    results: list[Any] = []

    def run(batch: Batch) -> None:
        results.append(batch.run(workers=3))

    threads = [threading.Thread(target=run, args=(b,)) for b in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 2
    assert calls(sim, "SendFaxEx") == 120
    assert set(sends_by_reference(sim).values()) == {1}
    assert states(first) == {State.DELIVERED: 120}
    client.close()


# -- what a row holds --------------------------------------------------------------------------


def test_a_document_changed_since_the_row_was_added_is_never_sent(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, tmp_path: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    path = document(tmp_path, "changed.pdf")
    batch.add("changed", spec(path))
    path.write_bytes(path.read_bytes() + b"% edited\n")
    gone = document(tmp_path, "gone.pdf")
    batch.add("gone", spec(gone))
    gone.unlink()
    summary = batch.run()
    assert summary.counts[State.NEEDS_REVIEW] == 2
    reasons = {o.key: o.reason or "" for o in batch.review()}
    assert str(path) in reasons["changed"]
    assert "changed since the row was added" in reasons["changed"]
    assert str(gone) in reasons["gone"]
    assert sim.requests == []
    client.close()


def test_a_document_rewritten_in_place_to_the_same_size_is_never_sent(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The digest the row was added with is remembered (the file long settled, for the
    # digests' clock); the rewrite keeps inode, size and modification time: the worker reads
    # the file again all the same, and sees it changed.
    import os
    import time

    from faxws.journal import _payload

    ahead = _payload._Digests(clock=lambda: time.time_ns() + 3600 * 10**9)
    monkeypatch.setattr(_payload, "_DIGESTS", ahead)
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    path = document(tmp_path, "rewritten.pdf")
    batch.add("rewritten", spec(path))
    before = os.stat(path)
    edited = bytes(path.read_bytes()).replace(b"%PDF-1.4", b"%PDF-1.5")
    deadline = time.monotonic() + 10
    while os.stat(path).st_ctime_ns == before.st_ctime_ns:
        assert time.monotonic() < deadline, "the change time never moved on"
        with open(path, "r+b") as fh:
            fh.write(edited)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    summary = batch.run()
    assert summary.counts[State.NEEDS_REVIEW] == 1
    assert "changed since the row was added" in (batch.review()[0].reason or "")
    assert sim.requests == []
    client.close()


def test_a_fax_with_no_outcome_goes_to_review_after_give_up(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake, give_up_after=600)
    batch.add("forever", spec(pdf, NEVER_ENDS))
    start = fake()
    summary = batch.run()
    assert summary.counts[State.NEEDS_REVIEW] == 1
    (outcome,) = batch.review()
    assert outcome.reason is not None
    assert outcome.reason.startswith(f"no final status after 600 s ({outcome.job_ids[0]})")
    assert 600 <= (fake() - start).total_seconds() <= 600 + 2 * 60
    client.close()


def test_without_wait_the_run_ends_once_every_row_is_sent(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 10)
    summary = batch.run(workers=2, wait=False)
    assert {s: n for s, n in summary.counts.items() if n} == {State.SUBMITTED: 10}
    assert calls(sim, "GetRealTimeFaxStatusEx2") == 0
    client.close()


def test_a_workers_unexpected_failure_ends_the_run_as_a_faxws_error(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    class BrokenError(Exception):
        pass

    class BrokenStore(Delegate):
        def mark_submitted(self, *args: Any, **kwargs: Any) -> Any:
            raise BrokenError("disk on fire")

    client = client_for(sim)
    batch = batch_for(BrokenStore(store), client, fake)  # type: ignore[arg-type]
    add(batch, pdf, 4)
    with pytest.raises(FaxWSError) as caught:
        batch.run(workers=2)
    assert isinstance(caught.value.__cause__, BrokenError)
    assert "BrokenError" in str(caught.value)
    # Each row that was sent stays SENDING: found by its lease's end, never sent again.
    assert calls(sim, "SendFaxEx") == store.counts_by_state()[State.SENDING] >= 1
    client.close()


def test_spec_and_keys_are_checked(store: JournalStore, fake: FakeTime, pdf: Path) -> None:
    batch = batch_for(store, object(), fake)
    from faxws.errors import BadInputError

    with pytest.raises(BadInputError):
        batch.add("", spec(pdf))
    with pytest.raises(BadInputError):
        batch.add("k", "not a spec")  # type: ignore[arg-type]
    with pytest.raises(BadInputError):
        Batch(store, object(), rate=0)
    with pytest.raises(BadInputError):
        Batch(store, object(), max_concurrent=0)
    with pytest.raises(BadInputError):
        ResendPolicy(max_resends=-1)
    other = FaxSpec([ORDINARY], [FileSpec(pdf)], None)
    batch.add("k", other)
    from faxws.journal import KeyReusedError

    with pytest.raises(KeyReusedError):
        batch.add("k", spec(pdf, BUSY))


@pytest.mark.parametrize(
    ("argument", "value", "words"),
    [
        ("lease_seconds", 0.5, "a number of seconds from 1 to 86400 (1 day)"),
        ("lease_seconds", 86_401, "a number of seconds from 1 to 86400 (1 day)"),
        ("lease_seconds", 1e300, "a number of seconds from 1 to 86400 (1 day)"),
        ("lease_seconds", float("nan"), "a number of seconds from 1 to 86400 (1 day)"),
        ("rate", 1e-300, "a number of calls a second from 0.01 to 1000"),
        ("rate", 0.009, "a number of calls a second from 0.01 to 1000"),
        ("rate", 1001, "a number of calls a second from 0.01 to 1000"),
        ("rate", True, "a number of calls a second from 0.01 to 1000"),
        ("max_concurrent", 0, "a whole number of sends from 1 to 2147483647"),
        ("max_concurrent", 2**31, "a whole number of sends from 1 to 2147483647"),
        ("max_concurrent", 2.0, "a whole number of sends from 1 to 2147483647"),
    ],
)
def test_a_batch_refuses_settings_out_of_their_range_naming_them(
    store: JournalStore, argument: str, value: object, words: str
) -> None:
    from faxws.errors import BadInputError

    with pytest.raises(BadInputError) as refused:
        Batch(store, object(), **{argument: value})  # type: ignore[arg-type]
    assert refused.value.field == argument
    assert refused.value.problem.startswith(f"must be {words}, not ")
    ends = {"lease_seconds": (1, 86_400), "rate": (0.01, 1000), "max_concurrent": (1, 2**31 - 1)}
    for end in ends[argument]:
        assert getattr(Batch(store, object(), **{argument: end}), argument) == end


@pytest.mark.parametrize("workers", [0, 1025, 2.0, True])
def test_a_run_refuses_workers_out_of_1_to_1024_before_claiming(
    store: JournalStore, fake: FakeTime, pdf: Path, workers: object
) -> None:
    from faxws.errors import BadInputError

    batch = batch_for(store, object(), fake)
    batch.add("k", spec(pdf))
    with pytest.raises(BadInputError) as refused:
        batch.run(workers=workers)  # type: ignore[arg-type]
    assert refused.value.field == "workers"
    assert "a whole number of workers from 1 to 1024" in refused.value.problem
    assert batch.counts()[State.PENDING] == 1 == sum(batch.counts().values())


def test_many_rows_are_added_as_add_adds_each(
    store: JournalStore, fake: FakeTime, pdf: Path, tmp_path: Path
) -> None:
    from faxws.errors import BadInputError
    from faxws.journal import KeyReusedError

    batch = batch_for(store, object(), fake)
    first = batch.add("fax-0001", spec(pdf))
    rows = batch.add_many((f"fax-{n:04d}", spec(pdf)) for n in range(1200))
    assert [row.key for row in rows] == [f"fax-{n:04d}" for n in range(1200)]
    assert rows[1] == first
    assert rows == [store.get(row.key) for row in rows]
    assert all(row.payload == spec(pdf).payload() for row in rows)
    assert {row.payload_sha256 for row in rows} == {spec(pdf).digest()}
    # A row refused names its key; the rows before it are added, those after it not.
    gone = tmp_path / "gone.pdf"
    cases: list[tuple[tuple[str, Any], type[Exception], str]] = [
        (("", spec(pdf)), BadInputError, "key: must not be empty (row '')"),
        (("spaced ", spec(pdf)), BadInputError, "(row 'spaced ')"),
        (("a/resend-1", spec(pdf)), BadInputError, "(row 'a/resend-1')"),
        (("not a spec", "+1 555 0100"), BadInputError, "spec: must be a FaxSpec, not str (row"),
        (("no file", spec(gone)), BadInputError, f"cannot read {gone}"),
        (("fax-0001", spec(pdf, BUSY)), KeyReusedError, "'fax-0001'"),
    ]
    for n, (bad, error, named) in enumerate(cases):
        before, after = f"before-{n}", f"after-{n}"
        with pytest.raises(error) as caught:
            batch.add_many([(before, spec(pdf)), bad, (after, spec(pdf))])
        assert named in str(caught.value)
        if error is BadInputError:
            assert f"(row {bad[0]!r})" in str(caught.value)
        assert store.get(before) is not None
        assert store.get(after) is None
    # add raises the same errors as it did, without the key beside them
    for key, added in (("", spec(pdf)), ("k", "+1 555 0100"), ("spaced ", spec(pdf))):
        with pytest.raises(BadInputError) as single:
            batch.add(key, added)
        assert "(row" not in str(single.value)
    with pytest.raises(BadInputError, match=r"^key: a key ending in /resend-<digits> is"):
        batch.add("a/resend-1", spec(pdf))


# -- tracing -----------------------------------------------------------------------------------

#: Run in a fresh interpreter: the global tracer provider of this one belongs to other tests.
TRACED = """
import json, sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from faxws import FaxClient, Recipient
from faxws.journal import Batch, FaxSpec, FileSpec, SqliteJournal
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator

pdf = Path("a.pdf")
pdf.write_bytes(b"%PDF-1.4\\n1 0 obj << /Type /Page >> endobj\\n%%EOF\\n")
spec = FaxSpec([Recipient("+1 555 0142", name="NAMEMARK")], [FileSpec(pdf)])
class Clock:  # one worker: its sleeps move the clock
    now = datetime.now(timezone.utc)

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += timedelta(seconds=seconds)

clock = Clock()
with FaxWSSimulator() as sim, FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
    store = SqliteJournal("journal.db", clock=clock)
    batch = Batch(store, client, clock=clock, sleep=clock.sleep)
    with trace.get_tracer("app").start_as_current_span("import the manifest") as parent:
        batch.add("KEYMARK-1", spec)
        batch.add("KEYMARK-2", spec)
    sim.inject(Fault.http_status(503), operation="SendFaxEx", times=1)
    batch.run(workers=1, wait=False)
    rows = {o.key: o.reference_id for o in batch.outcomes()}
    meta = store.meta("batch_id", "")
    store.close()

def ids(context):
    return [format(context.trace_id, "032x"), format(context.span_id, "016x")]

spans = [
    {
        "name": s.name,
        "context": ids(s.context),
        "parent": None if s.parent is None else ids(s.parent),
        "links": [ids(link.context) for link in s.links],
        "attributes": dict(s.attributes),
        "status": s.status.status_code.name,
    }
    for s in exporter.get_finished_spans()
]
parent_ids = ids(parent.get_span_context())
print(json.dumps({"spans": spans, "rows": rows, "batch_id": meta, "parent": parent_ids}))
"""

UNTRACED = """
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from pathlib import Path
from faxws import FaxClient
from faxws import _telemetry
from faxws.journal import Batch, FaxSpec, FileSpec, SqliteJournal, State
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

pdf = Path("a.pdf")
pdf.write_bytes(b"%PDF-1.4\\n1 0 obj << /Type /Page >> endobj\\n%%EOF\\n")
with FaxWSSimulator() as sim, FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
    store = SqliteJournal("journal.db")
    batch = Batch(store, client)
    batch.add("one", FaxSpec(["+1 555 0100"], [FileSpec(pdf)]))
    summary = batch.run(wait=False)
    assert summary.counts[State.SUBMITTED] == 1, summary
    assert store.meta("traceparent", "-") == "", "no span, no link"
    store.close()
assert _telemetry._tracer is None
loaded = [m for m, v in sys.modules.items() if m.startswith("opentelemetry") and v]
assert loaded == [], loaded
print("ok")
"""


def run_script(script: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_send_attempt_is_a_span_linked_to_its_batch(tmp_path: Path) -> None:
    found = json.loads(run_script(TRACED, tmp_path))
    spans, rows = found["spans"], found["rows"]
    sends = [s for s in spans if s["name"] == "faxws.journal.send"]
    assert len(sends) == 2
    assert sorted(s["attributes"]["faxws.reference_id"] for s in sends) == sorted(rows.values())
    for send in sends:
        assert send["attributes"]["faxws.attempt"] == 1
        assert send["attributes"]["faxws.batch_id"] == found["batch_id"] != ""
        assert send["links"] == [found["parent"]]
        (client,) = [
            s for s in spans if s["name"] == "SendFaxEx" and s["parent"] == send["context"]
        ]
        assert client["context"][0] == send["context"][0]
    outcomes = {s["attributes"]["faxws.journal.outcome"]: s["status"] for s in sends}
    assert outcomes == {"uncertain": "ERROR", "submitted": "UNSET"}
    shown = json.dumps(sends)
    assert "KEYMARK" not in shown
    assert "NAMEMARK" not in shown
    # the fax number in any spelling ("555" alone is in random span ids now and then)
    for spelled in ("555 0142", "5550142", "555-0142"):
        assert spelled not in shown


def test_without_opentelemetry_a_batch_runs_and_imports_none_of_it(tmp_path: Path) -> None:
    assert run_script(UNTRACED, tmp_path).split() == ["ok"]


# -- leases ------------------------------------------------------------------------------------


def test_rows_of_a_dead_worker_are_recovered_and_a_sending_one_never_sent_again(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    add(batch, pdf, 2)
    (sending,) = store.claim("dead-worker", 30, 1)
    store.mark_sending(sending.key, "dead-worker", 30)
    (claimed,) = store.claim("dead-worker", 30, 1)
    fake.advance(31)
    summary = batch.run()
    assert {s: n for s, n in summary.counts.items() if n} == {
        State.NEEDS_REVIEW: 1,
        State.DELIVERED: 1,
    }
    (review,) = batch.review()
    assert review.key == sending.key
    assert review.reason is not None
    assert "the lease expired while sending" in review.reason
    assert sends_by_reference(sim) == Counter({claimed.reference_id: 1})
    client.close()


@pytest.mark.parametrize("stopped", [False, True], ids=["running", "stopped meanwhile"])
def test_a_long_send_keeps_its_lease(
    open_store: OpenStore, tmp_path: Path, pdf: Path, stopped: bool
) -> None:
    """Real time: the send takes longer than the lease; the heartbeats keep it, so the run's
    own recovery never takes the row for a dead worker's, and its answer is recorded, also
    when the run was asked to stop while the send was on its way (Ctrl-C)."""
    recovered: list[str] = []

    class Watched:
        def __init__(self, inner: JournalStore) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def recover(self) -> Any:
            rows = self.inner.recover()
            recovered.extend(row.key for row in rows)
            return rows

    store = open_store(clock=lambda: datetime.now(timezone.utc))
    with FaxWSSimulator() as sim:
        sim.inject(Fault.delay_response(2.0), operation="SendFaxEx")
        client = Slow(client_for(sim), set(), 0.0)
        stop = Stop()
        if stopped:
            client.before = lambda names: stop.request()
        batch = Batch(Watched(store), client, lease_seconds=1.2)  # type: ignore[arg-type]
        batch.add("long", spec(pdf))
        summary = batch.run(wait=False, stop=stop)
        client.inner.close()
    assert summary.stopped is stopped
    assert summary.counts[State.SUBMITTED] == 1
    (row,) = store.rows_in(State.SUBMITTED)
    assert len(row.job_ids) == 1
    assert recovered == []


def test_a_reference_echoed_in_another_spelling_is_the_rows_own(
    store: JournalStore, fake: FakeTime, pdf: Path
) -> None:
    """How the service echoes a ReferenceId is not published: case and the JRI- prefix aside,
    a status naming the row's own reference keeps the row tracked."""
    row = batch_for(store, object(), fake).add("row", spec(pdf))

    def status(reference: str) -> RealTimeFaxStatus:
        return RealTimeFaxStatus("J1", 3, None, "In progress", reference_id=reference)

    mine = row.reference_id
    for echoed in ("", mine, mine.upper(), f"JRI-{mine}", f" jri-{mine.upper()} "):
        assert _Tracker.not_this_rows(row, [status(echoed), None]) is None
    other = _Tracker.not_this_rows(row, [status("0" * 32)])
    assert other is not None
    assert other.startswith(f"the service reports job J1 under reference {'0' * 32}")


def test_the_journal_imports_psycopg_only_for_the_postgresql_store(tmp_path: Path) -> None:
    script = (
        "import sys, faxws.journal as journal\n"
        "assert 'psycopg' not in sys.modules\n"
        "assert set(journal.__all__) <= set(dir(journal)) | {'PostgresJournal'}\n"
        "assert journal.PostgresJournal.__name__ == 'PostgresJournal'\n"
        "assert 'psycopg' in sys.modules\n"
        "print('ok')\n"
    )
    assert run_script(script, tmp_path).split() == ["ok"]


def test_a_refused_send_is_failed_with_the_services_text_secrets_masked(
    fake: FakeTime, store: JournalStore, pdf: Path
) -> None:
    pin, password = "PINMARK-77x", "PWMARK-4k&é"
    notify = Notify("https://hooks.example.com/fax", user="hook", password=password)
    with simulator(fake, accounts=[Account("mbx-journal", pin=pin)]) as sim:
        sim.inject(Fault.ws_error(-5000, f"refused {pin} {password}"), operation="SendFaxEx")
        client = FaxClient(sim.url, user_id="mbx-journal", pin=pin, retry_backoff=0)
        batch = batch_for(store, client, fake, notify=notify)
        batch.add("refused", spec(pdf))
        summary = batch.run(wait=False)
        client.close()
    assert summary.counts[State.FAILED] == 1
    (outcome,) = batch.outcomes()
    assert outcome.reason is not None
    assert outcome.reason.startswith("service error -5000: refused *** ***")
    shown = repr([store.get("refused"), *batch.outcomes()])
    assert pin not in shown
    assert password not in shown
    assert "PWMARK" not in shown


@pytest.mark.parametrize("failing", ["mark_submitted", "start_send", "mark_uncertain"])
def test_a_store_failure_recording_a_sends_outcome_never_sends_it_again(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, pdf: Path, failing: str
) -> None:
    """The send reached the service; recording what it proved fails (the disk, the server):
    the run ends with the store's error, and the row stays SENDING, never sent again."""

    class FailingOnce:
        def __init__(self, inner: JournalStore) -> None:
            self.inner = inner
            self.failed = False

        def __getattr__(self, name: str) -> Any:
            found = getattr(self.inner, name)
            if name != failing:
                return found

            def call(*args: Any, **kwargs: Any) -> Any:
                # start_send fails only when it records an answer (the send before went out)
                recording = name != "start_send" or (len(args) > 2 and args[2] is not None)
                if not self.failed and recording:
                    self.failed = True
                    raise JournalError("the journal's disk is full")
                return found(*args, **kwargs)

            return call

    class AnswerLost(Delegate):
        """A client whose sends reach the service and then raise (an unexpected failure)."""

        def send_fax(self, *args: Any, **kwargs: Any) -> Any:
            self.inner.send_fax(*args, **kwargs)
            raise RuntimeError("the answer was lost")

    client = client_for(sim)
    sender: Any = AnswerLost(client) if failing == "mark_uncertain" else client
    batch = batch_for(FailingOnce(store), sender, fake)  # type: ignore[arg-type]
    add(batch, pdf, 6)
    with pytest.raises(JournalError, match="disk is full"):
        batch.run(workers=1, wait=False)
    sent = sends_by_reference(sim)
    assert sent, "nothing was sent before the failure"
    for row in store.rows(limit=100):
        if sent[row.reference_id]:
            assert row.state in (State.SENDING, State.SUBMITTED), row
    # what another worker may take: none of the rows the service has
    assert not [row for row in store.claim("another", 60, 100) if sent[row.reference_id]]
    client.close()


# -- a claim of several rows -----------------------------------------------------------------


class Slow(Delegate):
    """A client whose sends of the documents in ``slow`` take ``seconds`` more (a slow
    service), and which runs ``before`` ahead of each send."""

    def __init__(self, inner: FaxClient, slow: set[str], seconds: float) -> None:
        super().__init__(inner)
        self.slow, self.seconds = slow, seconds
        self.before: Any = None

    def send_fax(self, recipients: Any, files: Any, **kwargs: Any) -> Any:
        names = {Path(f.name).name for f in files}
        if self.before is not None:
            self.before(names)
        result = self.inner.send_fax(recipients, files, **kwargs)
        if names & self.slow:
            time.sleep(self.seconds)  # the service's own slowness, not a synchronisation
        return result


def test_a_document_changed_after_the_claims_check_is_never_sent(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_runner, "CLAIM_SECONDS", 3600.0)  # every claim after the first: all
    paths = [document(tmp_path, f"doc-{n}.pdf", PDF + bytes([n])) for n in range(3)]
    client = Slow(client_for(sim), set(), 0.0)
    batch = batch_for(store, client, fake)  # type: ignore[arg-type]
    for n, path in enumerate(paths):
        batch.add(f"row-{n}", spec(path))

    def rewrite_the_last(names: set[str]) -> None:
        if "doc-1.pdf" in names:  # sent in one claim with doc-2's row, after its check
            paths[2].write_bytes(PDF + b"\xff")  # the same size, other bytes

    client.before = rewrite_the_last
    batch.run(workers=1, wait=False)
    changed = store.get("row-2")
    assert changed is not None
    assert changed.state is State.NEEDS_REVIEW
    assert "doc-2.pdf changed since the row was added" in (changed.reason or "")
    assert sends_by_reference(sim)[changed.reference_id] == 0
    assert calls(sim, "SendFaxEx") == 2
    client.inner.close()


def link_in_place(path: Path, other: Path) -> None:
    path.unlink()
    path.symlink_to(other)


#: What another program may do to a row's document between the worker's last check and its
#: send: how, and whether the send can still carry the checked bytes.
SWAPS: dict[str, tuple[Callable[[Path, Path], None], bool]] = {
    "renamed over": (lambda path, other: os.replace(other, path), True),
    "a link put in its place": (lambda path, other: link_in_place(path, other), True),
    "deleted": (lambda path, other: path.unlink(), True),
    "rewritten in place, the same size": (
        lambda path, other: path.write_bytes(other.read_bytes()[: path.stat().st_size]),
        False,
    ),
    "rewritten in place, larger": (
        lambda path, other: path.write_bytes(other.read_bytes() + b"more"),
        False,
    ),
}


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_a_document_changed_after_the_last_check_is_never_sent_as_changed_unnoticed(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, tmp_path: Path, swap: str
) -> None:
    """The send reads the files its check read: a file replaced by another (renamed over,
    a link, deleted) sends what was checked; one written to in place meanwhile may send what
    was written, so its row goes to review saying so, whatever came of the send."""
    change, checked_bytes_sent = SWAPS[swap]
    path = document(tmp_path, "letter.pdf", PDF + b"the letter checked")
    other = document(tmp_path, "other.pdf", PDF + b"another letter")
    client = Slow(client_for(sim), set(), 0.0)
    batch = batch_for(store, client, fake)  # type: ignore[arg-type]
    batch.add("letter", spec(path))
    checked = hashlib.sha256(path.read_bytes()).hexdigest()

    def swap_it(names: set[str]) -> None:
        change(path, other)

    client.before = swap_it
    batch.run(workers=1, wait=False)
    row = store.get("letter")
    assert row is not None
    sent = [f.sha256 for job in sim.jobs for f in job.files]
    if checked_bytes_sent:
        assert sent == [checked]
        assert row.state is State.SUBMITTED
    else:
        assert row.state is State.NEEDS_REVIEW
        assert "letter.pdf changed while its send was under way" in (row.reason or "")
        assert sent in ([], [checked], [hashlib.sha256(path.read_bytes()).hexdigest()])
    assert sends_by_reference(sim)[row.reference_id] <= 1
    client.inner.close()


def test_rows_claimed_behind_a_send_that_got_slow_go_back_to_the_others(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # a claim after a send of a few milliseconds takes all five rows left; a send of 0.3 s
    # outlasts the time a claim's rows are held (0.2 s here)
    monkeypatch.setattr(_runner, "CLAIM_SECONDS", 0.1)
    monkeypatch.setattr(_runner, "HOLD_SECONDS", 0.2)
    slow = document(tmp_path, "slow.pdf")
    client = Slow(client_for(sim), {"slow.pdf"}, 0.3)
    batch = batch_for(store, client, fake)  # type: ignore[arg-type]
    batch.add("fast", spec(pdf))  # the first claim: one row, sent at once
    batch.add("slow", spec(slow))  # the next claim takes the rest: this one and four more
    keys = add(batch, pdf, 4, prefix="behind")
    batch.run(workers=1, wait=False)
    attempts = {row.key: row.attempt for row in store.rows(limit=100)}
    # after the slow send the claim's time was over: its other rows were released, claimed again
    assert attempts == {"fast": 1, "slow": 1, **dict.fromkeys(keys, 2)}
    assert max(sends_by_reference(sim).values()) == 1
    client.inner.close()


def test_a_send_slot_given_back_is_not_kept_by_the_leases_keeper(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_runner, "CLAIM_SECONDS", 3600.0)
    runs = runs_made(monkeypatch)

    class Checking(Delegate):
        """The store, checking as each send starts that no other row holds a slot."""

        def start_send(self, key: str, owner: str, submitted: Any = None) -> None:
            with runs[0]._lock:
                slots = {k for k, slot in runs[0]._held.items() if slot and k != key}
            assert not slots, f"{slots} still held as send slots while {key} starts"
            self.inner.start_send(key, owner, submitted)

    client = client_for(sim)
    batch = batch_for(Checking(store), client, fake, max_concurrent=1)  # type: ignore[arg-type]
    add(batch, pdf, 6)
    assert batch.run(workers=1, wait=False).counts[State.SUBMITTED] == 6
    client.close()


def test_a_slot_given_back_is_never_renewed_from_an_older_list_of_held_rows(
    store: JournalStore, fake: FakeTime
) -> None:
    """The leases' keeper renews the slots of the rows it listed a moment ago; a row that gave
    its slot back meanwhile is not given it again (every other process of the account would
    wait for it until its lease ran out)."""
    batch = batch_for(store, None, fake, max_concurrent=1)
    run = _runner._Run(batch, 1, Stop(), None, False)
    assert store.acquire_send_slot(batch.account, "sent", 1, 60)
    run.hold("sent", slot=True)
    listed = [key for key, slot in run._held.items() if slot]  # the keeper's list
    run.give_back_slot("sent")
    for key in listed:
        run.renew_slot(key, 60)
    assert store.acquire_send_slot(batch.account, "next", 1, 60)  # the slot is free
