"""Waiting for jobs to end: which ids each poll asks about, how long between polls, when to
give up. Driven by a clock the test steps; no sleeping."""

from __future__ import annotations

from dataclasses import dataclass

from faxws._protocol.waiting import MAX_INTERVAL, MIN_INTERVAL, Waiting


@dataclass(frozen=True)
class St:
    job_id: str
    final: bool


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def waiting(
    ids: list[str], *, timeout: float = 600, first: float = 0, batch: int = 2, rng: float = 1.0
) -> tuple[Waiting[St], Clock]:
    clock = Clock()
    return Waiting(
        ids, timeout=timeout, first=first, batch_size=batch, clock=clock, rng=lambda: rng
    ), clock


def test_ids_are_asked_in_batches_and_finished_ones_dropped() -> None:
    w, _ = waiting(["a", "b", "c", "a"], batch=2)
    assert w.batches() == [["a", "b"], ["c"]]
    w.record([St("a", True), St("b", False), St("c", False)])
    assert w.batches() == [["b", "c"]]
    assert not w.done
    w.record([St("b", True), St("c", True)])
    assert w.done
    assert [s.job_id for s in w.results()] == ["a", "b", "c"]


def test_answers_for_ids_not_asked_about_are_ignored() -> None:
    w, _ = waiting(["a"])
    w.record([St("zz", True), St("a", False)])
    assert [s.job_id for s in w.results()] == ["a"]
    assert w.batches() == [["a"]]


def test_an_id_left_out_of_an_answer_stays_pending() -> None:
    w, _ = waiting(["a", "b"])
    w.record([St("a", True)])
    assert w.batches() == [["b"]]
    assert [s.job_id for s in w.results()] == ["a"]


def test_the_first_poll_waits_for_the_ttfp_then_intervals_double_up_to_the_cap() -> None:
    w, clock = waiting(["a"], first=7, timeout=10_000)
    delays = []
    for _ in range(12):
        delay = w.next_delay()
        assert delay is not None
        delays.append(delay)
        clock.now += delay
    assert delays[0] == 7
    assert delays[1:5] == [14, 28, 56, MAX_INTERVAL]
    assert set(delays[5:]) == {MAX_INTERVAL}


def test_no_ttfp_polls_at_once_then_from_the_minimum_interval() -> None:
    w, _ = waiting(["a"])
    assert w.next_delay() == 0
    assert w.next_delay() == 2 * MIN_INTERVAL


def test_jitter_draws_from_the_upper_half_of_the_interval() -> None:
    w, _ = waiting(["a"], first=10, rng=0.0)
    assert w.next_delay() == 10
    assert w.next_delay() == 10  # half of 20


def test_the_last_poll_is_at_the_deadline_then_the_wait_ends() -> None:
    w, clock = waiting(["a"], first=30, timeout=45)
    assert w.next_delay() == 30
    clock.now += 30
    assert w.next_delay() == 15  # not 60: only what is left
    clock.now += 15
    assert w.next_delay() is None
