"""What every journal store does, run against each (``store`` / ``open_store`` in conftest):
the moves of TRANSITIONS made or refused from every state, key reuse, resends, leases,
releases, checks due, look-ups, paging, counts, recovery, and the limits and values every
worker of one journal shares."""

from __future__ import annotations

import hashlib
import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Protocol

import pytest

from faxws.errors import BadInputError, FaxWSError
from faxws.journal._store import (
    RESEND_SUFFIX,
    TRANSITIONS,
    IllegalTransitionError,
    JournalError,
    JournalStore,
    KeyReusedError,
    LeaseLostError,
    Row,
    State,
    Submission,
    UnknownKeyError,
)

S = State
SHA = hashlib.sha256(b"the fax").hexdigest()
OTHER_SHA = hashlib.sha256(b"another fax").hexdigest()

Op = Callable[[JournalStore, str], Row]
#: conftest's ``open_store``: one more handle on the journal under test.
OpenStore = Callable[..., JournalStore]


class Clock(Protocol):
    """conftest's ``clock``: the stores' clock, moved by hand."""

    now: datetime

    def advance(self, seconds: float) -> None: ...


class Move:
    """A keyed move: how it is made, where it goes (None: the row keeps its state) and the
    states the protocol lets it start from."""

    def __init__(self, call: Op, target: State | None, sources: set[State]) -> None:
        self.call, self.target, self.sources = call, target, frozenset(sources)


MOVES: dict[str, Move] = {
    "heartbeat": Move(lambda j, k: j.heartbeat(k, "w1", 60), None, {S.CLAIMED, S.SENDING}),
    "release": Move(lambda j, k: j.release(k, "w1", "not used"), S.PENDING, {S.CLAIMED, S.SENDING}),
    "mark_sending": Move(lambda j, k: j.mark_sending(k, "w1"), S.SENDING, {S.CLAIMED}),
    "mark_submitted": Move(
        lambda j, k: j.mark_submitted(k, "w1", ["J1", "J2"]), S.SUBMITTED, {S.SENDING}
    ),
    "mark_failed": Move(lambda j, k: j.mark_failed(k, "w1", "refused"), S.FAILED, {S.SENDING}),
    "mark_uncertain": Move(
        lambda j, k: j.mark_uncertain(k, "w1", "no answer"), S.UNCERTAIN, {S.SENDING}
    ),
    "resolve_uncertain": Move(
        lambda j, k: j.resolve_uncertain(k, ["J3"]), S.SUBMITTED, {S.UNCERTAIN}
    ),
    "mark_needs_review": Move(
        lambda j, k: j.mark_needs_review(k, "not found by reference"),
        S.NEEDS_REVIEW,
        {S.CLAIMED, S.UNCERTAIN, S.SUBMITTED},
    ),
    "record_late_answer": Move(
        lambda j, k: j.record_late_answer(k, ["J4"], "sent after all"), None, {S.NEEDS_REVIEW}
    ),
    "delivered": Move(lambda j, k: j.mark_final(k, S.DELIVERED), S.DELIVERED, {S.SUBMITTED}),
    "final_failed": Move(
        lambda j, k: j.mark_final(k, S.FAILED, "job failed"), S.FAILED, {S.SUBMITTED}
    ),
    "cancelled": Move(
        lambda j, k: j.mark_final(k, S.CANCELLED), S.CANCELLED, {S.PENDING, S.CLAIMED, S.SUBMITTED}
    ),
}
# how a fresh row reaches each state, by legal moves
PATHS: dict[State, list[str]] = {
    S.PENDING: [],
    S.CLAIMED: ["claim"],
    S.SENDING: ["claim", "mark_sending"],
    S.SUBMITTED: ["claim", "mark_sending", "mark_submitted"],
    S.FAILED: ["claim", "mark_sending", "mark_failed"],
    S.UNCERTAIN: ["claim", "mark_sending", "mark_uncertain"],
    S.NEEDS_REVIEW: ["claim", "mark_needs_review"],
    S.DELIVERED: ["claim", "mark_sending", "mark_submitted", "delivered"],
    S.CANCELLED: ["cancelled"],
}


def reach(store: JournalStore, key: str, state: State, sha: str = SHA) -> Row:
    store.add(key, sha, f"payload of {key}")
    for step in PATHS[state]:
        if step == "claim":
            assert [r.key for r in store.claim("w1", 60, 1)] == [key]
        else:
            MOVES[step].call(store, key)
    row = store.get(key)
    assert row is not None
    assert row.state is state
    return row


def got(store: JournalStore, key: str) -> Row:
    row = store.get(key)
    assert row is not None
    return row


def test_the_moves_are_the_edges_of_the_transition_table() -> None:
    made = {(source, move.target) for move in MOVES.values() for source in move.sources}
    made -= {(source, None) for source in State}
    made |= {(S.PENDING, S.CLAIMED), (S.CLAIMED, S.CLAIMED)}  # claim, and claim once expired
    edges = {(source, target) for source, targets in TRANSITIONS.items() for target in targets}
    assert made == edges
    assert {state for state in State if state.final} == {
        S.DELIVERED,
        S.FAILED,
        S.CANCELLED,
        S.NEEDS_REVIEW,
    }


@pytest.mark.parametrize("op", sorted(MOVES))
@pytest.mark.parametrize("state", list(State))
def test_every_move_from_every_state_is_made_or_refused(
    store: JournalStore, clock: Clock, state: State, op: str
) -> None:
    move = MOVES[op]
    before = reach(store, "k", state)
    clock.advance(1)
    legal = state in move.sources and (move.target is None or move.target in TRANSITIONS[state])
    if not legal:
        with pytest.raises(IllegalTransitionError) as caught:
            move.call(store, "k")
        assert caught.value.current is state
        assert caught.value.key == "k"
        assert isinstance(caught.value, JournalError)
        assert isinstance(caught.value, FaxWSError)
        assert store.get("k") == before
        return
    row = move.call(store, "k")
    assert row == store.get("k")
    assert row.state is (move.target or state)
    assert row.updated_at == clock.now
    assert (row.key, row.reference_id, row.payload, row.seq) == (
        before.key,
        before.reference_id,
        before.payload,
        before.seq,
    )
    if row.state in (S.CLAIMED, S.SENDING):
        assert row.lease_owner == "w1"
    else:
        assert (row.lease_owner, row.lease_expires_at) == (None, None)
    if row.state not in (S.SUBMITTED, S.UNCERTAIN):
        assert row.next_check_at is None


@pytest.mark.parametrize("op", sorted(MOVES))
def test_a_move_of_an_unknown_key_is_refused(store: JournalStore, op: str) -> None:
    with pytest.raises(UnknownKeyError) as caught:
        MOVES[op].call(store, "nope")
    assert caught.value.key == "nope"
    assert store.get("nope") is None


@pytest.mark.parametrize("state", list(State))
def test_only_pending_rows_and_expired_claims_are_claimed(
    store: JournalStore, clock: Clock, state: State
) -> None:
    reach(store, "k", state)
    assert [r.key for r in store.claim("w2", 60, 10)] == (["k"] if state is S.PENDING else [])
    clock.advance(61)
    claimable = state in (S.PENDING, S.CLAIMED)
    claimed = store.claim("w3", 60, 10)
    assert [r.key for r in claimed] == (["k"] if claimable else [])
    if claimable:
        assert claimed == [store.get("k")]
        assert (claimed[0].state, claimed[0].lease_owner) == (S.CLAIMED, "w3")


@pytest.mark.parametrize("state", list(State))
def test_recover_moves_only_expired_leases(store: JournalStore, clock: Clock, state: State) -> None:
    before = reach(store, "k", state)
    clock.advance(60)
    moved = store.recover()
    after = got(store, "k")
    if state is S.CLAIMED:
        assert moved == [after]
        assert (after.state, after.lease_owner, after.lease_expires_at) == (S.PENDING, None, None)
        assert after.attempt == 1
    elif state is S.SENDING:
        assert moved == [after]
        assert (after.state, after.lease_owner, after.lease_expires_at) == (
            S.UNCERTAIN,
            None,
            None,
        )
        assert after.reason
        assert after.next_check_at == clock.now  # looked up at once
    else:
        assert moved == []
        assert after == before
    assert store.recover() == []


def test_a_move_records_what_it_learnt(store: JournalStore, clock: Clock) -> None:
    sending = reach(store, "a", S.SENDING)
    assert (sending.lease_owner, sending.attempt) == ("w1", 1)
    submitted = store.mark_submitted("a", "w1", ["J1", "J2"])
    assert submitted.job_ids == ("J1", "J2")
    assert (submitted.lease_owner, submitted.lease_expires_at) == (None, None)
    assert submitted.reference_id == sending.reference_id
    assert submitted.next_check_at == clock.now
    reach(store, "b", S.UNCERTAIN)
    assert got(store, "b").reason == "no answer"
    assert store.resolve_uncertain("b", ["J9"]).job_ids == ("J9",)
    reach(store, "c", S.NEEDS_REVIEW)
    assert got(store, "c").reason == "not found by reference"
    reach(store, "d", S.FAILED)
    assert got(store, "d").reason == "refused"
    reach(store, "e", S.SUBMITTED)
    assert store.mark_final("e", S.FAILED, "line busy").reason == "line busy"
    released = reach(store, "f", S.CLAIMED)
    assert store.release("f", "w1", "rate limited").reason == "rate limited"
    assert got(store, "f").attempt == released.attempt


def test_final_takes_only_a_final_state(store: JournalStore) -> None:
    reach(store, "k", S.SUBMITTED)
    for state in (S.PENDING, S.CLAIMED, S.SENDING, S.SUBMITTED, S.UNCERTAIN, S.NEEDS_REVIEW):
        with pytest.raises(BadInputError):
            store.mark_final("k", state)
    assert got(store, "k").state is S.SUBMITTED


# -- adding rows ---------------------------------------------------------------------------


def test_a_row_is_added_pending_with_its_payload_and_a_reference(
    store: JournalStore, clock: Clock
) -> None:
    row = store.add("k", SHA, '{"to": "+15550100"}')
    assert row == store.get("k")
    assert (row.key, row.payload_sha256, row.payload, row.state) == (
        "k",
        SHA,
        '{"to": "+15550100"}',
        S.PENDING,
    )
    assert (row.attempt, row.job_ids, row.lease_owner, row.reason) == (0, (), None, None)
    assert (row.created_at, row.updated_at) == (clock.now, clock.now)
    assert (row.resend_of, row.next_check_at, row.checks) == (None, None, 0)
    assert len(row.reference_id) == 32
    assert store.by_reference(row.reference_id) == row
    assert store.add("empty", SHA).payload == ""


def test_the_same_key_and_payload_again_return_the_row(store: JournalStore) -> None:
    first = store.add("k", SHA, "first")
    store.claim("w1", 60, 1)
    again = store.add("k", SHA, "second")
    assert again == store.get("k")
    assert (again.reference_id, again.payload, again.state) == (
        first.reference_id,
        "first",
        S.CLAIMED,
    )
    assert store.counts_by_state()[S.PENDING] == 0
    assert len(store.rows()) == 1


def test_a_key_reused_with_another_payload_is_refused(store: JournalStore) -> None:
    reach(store, "done", S.DELIVERED)
    store.add("k", SHA)
    for key in ("k", "done"):
        with pytest.raises(KeyReusedError) as caught:
            store.add(key, OTHER_SHA)
        assert caught.value.key == key
        assert isinstance(caught.value, JournalError)
        assert got(store, key).payload_sha256 == SHA
    for bad in ("not a digest", SHA.upper(), SHA[:-1]):
        with pytest.raises(BadInputError):
            store.add("x", bad)
    assert store.get("x") is None


def test_reference_ids_are_made_once_per_row(store: JournalStore) -> None:
    refs = {store.add(f"k{i}", SHA).reference_id for i in range(5)}
    assert len(refs) == 5


@pytest.mark.parametrize("key", ["a/resend-1", "a/resend-0", f"x{RESEND_SUFFIX}123"])
def test_a_key_in_the_form_of_a_resend_is_refused(store: JournalStore, key: str) -> None:
    with pytest.raises(BadInputError) as caught:
        store.add(key, SHA)
    assert caught.value.field == "key"
    assert store.get(key) is None


def test_keys_up_to_the_longest_are_taken_by_every_store_and_longer_ones_refused(
    store: JournalStore,
) -> None:
    from faxws.journal._store import MAX_KEY_BYTES

    longest = "\u00e9" * (MAX_KEY_BYTES // 2)  # two bytes each in UTF-8
    assert store.add(longest, SHA).key == longest
    assert store.add(longest + "/resend-1", SHA, resend_of=longest).resend_of == longest
    with pytest.raises(BadInputError) as caught:
        store.add(longest + "x", SHA)
    assert caught.value.field == "key"
    assert store.get(longest + "x") is None


@pytest.mark.parametrize("key", ["a/resend-", "a/resend-1x", "a/resend-1/b", "a/Resend-1"])
def test_a_key_like_a_resend_but_not_one_is_taken(store: JournalStore, key: str) -> None:
    assert store.add(key, SHA).key == key


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> int:
    """add_many's transactions of 3 rows: a few rows span several."""
    from faxws.journal import _store

    monkeypatch.setattr(_store, "ADD_CHUNK", 3)
    return 3


def test_many_rows_are_added_in_order_as_add_adds_each(
    store: JournalStore, clock: Clock, small_chunks: int
) -> None:
    first = store.add("k1", SHA, "first")
    items = [(f"k{n}", SHA, f"payload {n}") for n in range(8)]
    items.insert(4, ("k5", SHA, "the same key again in one call"))
    rows = store.add_many(items)
    assert [row.key for row in rows] == [key for key, _, _ in items]
    assert rows == [got(store, key) for key, _, _ in items]
    assert rows[1] == first  # added before: as it was, its payload untouched
    assert rows[4] == rows[6]
    assert rows[6].payload == "the same key again in one call"
    new = [row for key, row in zip(items, rows, strict=True) if key[0] != "k1"]
    assert all(row.state is S.PENDING and row.created_at == clock.now for row in new)
    seqs = [row.seq for n, row in enumerate(rows) if n not in (1, 6)]  # each new row once
    assert seqs == sorted(seqs)
    assert len({row.reference_id for row in rows}) == 8
    assert store.add_many([]) == []
    assert len(store.rows()) == 8


@pytest.mark.parametrize("at", [0, 2, 3, 4])
def test_a_row_refused_among_many_is_raised_once_the_rows_before_it_are_added(
    store: JournalStore, small_chunks: int, at: int
) -> None:
    store.add("taken", SHA)
    cases: list[tuple[tuple[str, str, str], type[Exception], str]] = [
        (("taken", OTHER_SHA, ""), KeyReusedError, "'taken'"),
        (("bad digest", SHA.upper(), ""), BadInputError, "(row 'bad digest')"),
        (("a/resend-1", SHA, ""), BadInputError, "(row 'a/resend-1')"),
    ]
    for bad, error, named in cases:
        keys = [f"{bad[0]}-before-{n}" for n in range(at)]
        items = [(key, SHA, "") for key in keys]
        with pytest.raises(error) as caught:
            store.add_many([*items, bad, (f"{bad[0]}-after", SHA, "")])
        assert named in str(caught.value)
        assert all(store.get(key) is not None for key in keys)
        assert store.get(f"{bad[0]}-after") is None
    assert got(store, "taken").payload_sha256 == SHA
    assert store.get("bad digest") is None
    assert store.get("a/resend-1") is None


def test_an_error_of_the_rows_given_is_raised_once_the_rows_before_it_are_added(
    store: JournalStore, small_chunks: int
) -> None:
    def rows() -> Iterator[tuple[str, str, str]]:
        for n in range(4):
            yield f"k{n}", SHA, ""
        raise OSError("the manifest could not be read further")

    with pytest.raises(OSError, match="further"):
        store.add_many(rows())
    assert [row.key for row in store.rows()] == ["k0", "k1", "k2", "k3"]


# -- resends -------------------------------------------------------------------------------


def test_a_failed_row_is_sent_again_once_as_a_linked_row(store: JournalStore, clock: Clock) -> None:
    first = reach(store, "inv-1", S.SUBMITTED)
    store.mark_final("inv-1", S.FAILED, "busy")
    store.add("later", SHA)
    clock.advance(5)
    resend = store.add_resend("inv-1")
    assert resend == store.get("inv-1/resend-1")
    assert (resend.key, resend.resend_of, resend.state) == ("inv-1/resend-1", "inv-1", S.PENDING)
    assert (resend.payload, resend.payload_sha256) == (first.payload, first.payload_sha256)
    assert resend.reference_id != first.reference_id
    assert (resend.attempt, resend.job_ids, resend.reason) == (0, (), None)
    assert resend.created_at == clock.now
    assert resend.seq > got(store, "later").seq
    assert store.by_reference(resend.reference_id) == resend
    assert got(store, "inv-1").state is S.FAILED  # the failed row stays as it was
    # asked again (by a worker that did not see the first answer): the same row, even moved on
    assert store.add_resend("inv-1") == resend
    store.claim("w1", 60, 10)
    assert store.add_resend("inv-1") == got(store, "inv-1/resend-1")
    assert [r.key for r in store.rows()] == ["inv-1", "later", "inv-1/resend-1"]


def test_a_failed_resend_is_sent_again_as_the_next_resend(store: JournalStore) -> None:
    reach(store, "k", S.FAILED)
    refs = {got(store, "k").reference_id}
    key = "k"
    for n in (1, 2, 3):
        resend = store.add_resend(key)
        assert (resend.key, resend.resend_of) == (f"k/resend-{n}", key)
        refs.add(resend.reference_id)
        assert [r.key for r in store.claim("w1", 60, 1)] == [resend.key]
        store.mark_sending(resend.key, "w1")
        store.mark_failed(resend.key, "w1", "busy")
        key = resend.key
    assert len(refs) == 4


def test_a_resend_may_be_added_by_key_with_its_link(store: JournalStore) -> None:
    reach(store, "k", S.FAILED)
    row = store.add("k/resend-1", SHA, "again", resend_of="k")
    assert (row.key, row.resend_of, row.payload) == ("k/resend-1", "k", "again")
    assert store.add_resend("k") == row
    with pytest.raises(UnknownKeyError):
        store.add("nope/resend-1", SHA, resend_of="nope")


@pytest.mark.parametrize("state", [s for s in State if s is not S.FAILED])
def test_only_a_failed_row_is_sent_again(store: JournalStore, state: State) -> None:
    before = reach(store, "k", state)
    with pytest.raises(IllegalTransitionError) as caught:
        store.add_resend("k")
    assert caught.value.current is state
    assert store.get("k") == before
    assert len(store.rows()) == 1


def test_an_unknown_row_is_not_sent_again(store: JournalStore) -> None:
    with pytest.raises(UnknownKeyError):
        store.add_resend("nope")
    assert store.rows() == []


def test_two_handles_sending_one_row_again_make_one_resend(open_store: OpenStore) -> None:
    first, second = open_store(), open_store()
    for i in range(20):
        reach(first, f"k{i}", S.FAILED)
    start = threading.Barrier(2, timeout=30)
    made: dict[int, list[Row]] = {0: [], 1: []}

    def work(index: int, store: JournalStore) -> None:
        start.wait()
        made[index] += [store.add_resend(f"k{i}") for i in range(20)]

    run_threads(work, [(0, first), (1, second)])
    assert made[0] == made[1]
    assert len(first.rows()) == 40


# -- leases --------------------------------------------------------------------------------


def test_a_claim_is_exclusive_until_its_lease_expires(store: JournalStore, clock: Clock) -> None:
    store.add("k", SHA)
    (row,) = store.claim("w1", 30, 10)
    assert (row.lease_owner, row.lease_expires_at, row.attempt) == (
        "w1",
        clock.now + timedelta(seconds=30),
        1,
    )
    assert store.claim("w2", 30, 10) == []
    with pytest.raises(LeaseLostError) as caught:
        store.mark_sending("k", "w2")
    assert (caught.value.key, caught.value.owner) == ("k", "w2")
    clock.advance(31)
    (row,) = store.claim("w2", 30, 10)
    assert (row.lease_owner, row.attempt) == ("w2", 2)
    with pytest.raises(LeaseLostError):
        store.mark_sending("k", "w1")
    assert store.mark_sending("k", "w2").state is S.SENDING


def test_claims_are_oldest_first_and_limited(store: JournalStore, clock: Clock) -> None:
    for key in ("c", "a", "b", "e", "d"):
        store.add(key, SHA)
    assert [r.key for r in store.claim("w1", 60, 2)] == ["c", "a"]
    assert [r.key for r in store.claim("w2", 60, 2)] == ["b", "e"]
    store.release("a", "w1")
    clock.advance(1)
    # "a" keeps its place: a released row goes before rows added after it
    assert [r.key for r in store.claim("w3", 60, 5)] == ["a", "d"]
    assert store.claim("w3", 60, 5) == []
    clock.advance(60)  # every lease has expired: by seq again
    assert [r.key for r in store.claim("w4", 60, 3)] == ["c", "a", "b"]


def test_an_expired_lease_cannot_start_a_send(store: JournalStore, clock: Clock) -> None:
    store.add("k", SHA)
    store.claim("w1", 30, 1)
    clock.advance(30)
    for move in (
        lambda: store.mark_sending("k", "w1"),
        lambda: store.heartbeat("k", "w1", 30),
        lambda: store.release("k", "w1"),
    ):
        with pytest.raises(LeaseLostError):
            move()
    assert got(store, "k").state is S.CLAIMED


def test_a_send_after_its_lease_expired_is_recorded_by_no_one(
    store: JournalStore, clock: Clock
) -> None:
    reach(store, "k", S.SENDING)
    clock.advance(61)
    for move in (
        lambda: store.mark_submitted("k", "w1", ["J1"]),
        lambda: store.mark_failed("k", "w1", "refused"),
        lambda: store.mark_uncertain("k", "w1", "no answer"),
        lambda: store.release("k", "w1"),
        lambda: store.mark_submitted("k", "w2", ["J1"]),
    ):
        with pytest.raises(LeaseLostError):
            move()
    assert got(store, "k").state is S.SENDING


def test_a_heartbeat_keeps_the_lease(store: JournalStore, clock: Clock) -> None:
    store.add("k", SHA)
    store.claim("w1", 30, 1)
    clock.advance(20)
    assert store.heartbeat("k", "w1", 30).lease_expires_at == clock.now + timedelta(seconds=30)
    clock.advance(20)
    assert store.claim("w2", 30, 1) == []
    with pytest.raises(LeaseLostError):
        store.heartbeat("k", "w2", 30)
    sending = store.mark_sending("k", "w1", lease_seconds=30)
    assert sending.lease_expires_at == clock.now + timedelta(seconds=30)
    clock.advance(20)
    store.heartbeat("k", "w1", 30)
    clock.advance(20)
    assert store.recover() == []
    assert got(store, "k").state is S.SENDING
    assert got(store, "k").attempt == 1


def test_mark_sending_without_a_lease_time_keeps_the_lease(
    store: JournalStore, clock: Clock
) -> None:
    claimed = reach(store, "k", S.CLAIMED)
    clock.advance(10)
    assert store.mark_sending("k", "w1").lease_expires_at == claimed.lease_expires_at


def test_an_expired_claim_is_claimed_again_but_never_an_expired_send(
    store: JournalStore, clock: Clock
) -> None:
    reach(store, "sent", S.SENDING)
    reach(store, "held", S.CLAIMED)
    clock.advance(61)
    assert [r.key for r in store.claim("w2", 60, 10)] == ["held"]
    assert got(store, "sent").state is S.SENDING


def test_recover_frees_expired_claims_and_makes_expired_sends_uncertain(
    store: JournalStore, clock: Clock
) -> None:
    reach(store, "sent", S.SENDING)
    reach(store, "held", S.CLAIMED)
    reach(store, "live", S.CLAIMED)
    clock.advance(30)
    store.heartbeat("live", "w1", 60)
    clock.advance(31)
    moved = {row.key: row for row in store.recover()}
    assert set(moved) == {"sent", "held"}
    assert moved["sent"].state is S.UNCERTAIN
    assert moved["held"].state is S.PENDING
    assert store.recover() == []
    assert [r.key for r in store.claim("w3", 60, 10)] == ["held"]
    assert got(store, "sent").state is S.UNCERTAIN
    assert [r.key for r in store.due(S.UNCERTAIN, 30, 10)] == ["sent"]


# -- several rows to SENDING in one commit, each started before its send ------------------------


def reserve(store: JournalStore, keys: list[str], owner: str = "w1") -> None:
    """``keys`` added, claimed by ``owner`` and moved to SENDING together, none started."""
    for key in keys:
        store.add(key, SHA, f"payload of {key}")
    assert sorted(r.key for r in store.claim(owner, 60, len(keys))) == sorted(keys)
    assert store.mark_sending_many(keys, owner, 60) == keys


def test_claimed_rows_move_to_sending_together_and_others_are_left_out(
    store: JournalStore, clock: Clock
) -> None:
    for key in ("a", "b", "c", "theirs", "done"):
        store.add(key, SHA)
    store.claim("w1", 60, 3)  # a, b, c
    store.claim("w2", 60, 1)  # theirs
    clock.advance(1)
    store.mark_sending("c", "w1")
    moved = store.mark_sending_many(["b", "nope", "theirs", "c", "done", "a", "b"], "w1", 30)
    assert moved == ["b", "a"]  # as given, each once
    for row in (got(store, key) for key in moved):
        assert (row.state, row.lease_owner, row.attempt) == (S.SENDING, "w1", 1)
        assert row.lease_expires_at == clock.now + timedelta(seconds=30)
        assert row.updated_at == clock.now
    assert (got(store, "theirs").state, got(store, "done").state) == (S.CLAIMED, S.PENDING)
    assert store.mark_sending_many([], "w1") == []
    clock.advance(60)
    assert store.mark_sending_many(["theirs"], "w2") == []  # its lease ran out


def test_a_send_is_started_once_by_the_rows_owner(store: JournalStore, clock: Clock) -> None:
    reserve(store, ["a"])
    before = got(store, "a")
    with pytest.raises(LeaseLostError) as lost:
        store.start_send("a", "w2")
    assert lost.value.key == "a"
    clock.advance(1)
    store.start_send("a", "w1")
    row = got(store, "a")
    assert (row.state, row.updated_at, row.lease_owner) == (S.SENDING, clock.now, "w1")
    assert row.lease_expires_at == before.lease_expires_at
    with pytest.raises(IllegalTransitionError) as again:
        store.start_send("a", "w1")
    assert again.value.key == "a"
    with pytest.raises(UnknownKeyError):
        store.start_send("nope", "w1")
    reach(store, "claimed", S.CLAIMED)
    with pytest.raises(IllegalTransitionError) as claimed:
        store.start_send("claimed", "w1")
    assert claimed.value.current is S.CLAIMED
    reach(store, "started", S.SENDING)  # mark_sending: started at once
    with pytest.raises(IllegalTransitionError):
        store.start_send("started", "w1")
    reserve(store, ["late"])
    clock.advance(61)
    with pytest.raises(LeaseLostError):
        store.start_send("late", "w1")


def test_a_start_records_the_answer_of_the_send_before_in_the_same_commit(
    store: JournalStore, clock: Clock
) -> None:
    reserve(store, ["a", "b", "c"])
    store.start_send("a", "w1")
    clock.advance(1)
    check_at = clock.now + timedelta(seconds=8)
    store.start_send("b", "w1", Submission("a", ("J1", "J2"), check_at))
    a = got(store, "a")
    assert (a.state, a.job_ids, a.next_check_at, a.checks) == (
        S.SUBMITTED,
        ("J1", "J2"),
        check_at,
        0,
    )
    assert (a.lease_owner, a.lease_expires_at, a.updated_at) == (None, None, clock.now)
    assert store.by_job_id("J2") == a
    with pytest.raises(IllegalTransitionError):
        store.start_send("b", "w1")  # started by the call before
    # an answer whose move is refused: its error, and nothing written (c not started)
    with pytest.raises(IllegalTransitionError) as refused:
        store.start_send("c", "w1", Submission("a", ("J9",)))
    assert (refused.value.key, refused.value.current) == ("a", S.SUBMITTED)
    assert store.by_job_id("J9") is None
    assert got(store, "a") == a
    store.start_send("c", "w1", Submission("b", ("J3",)))  # now: c was not started
    b = got(store, "b")
    assert (b.state, b.next_check_at) == (S.SUBMITTED, clock.now)  # no check time: now


def test_an_answer_stays_recorded_when_the_start_beside_it_is_refused(
    store: JournalStore, clock: Clock
) -> None:
    reserve(store, ["a"])
    store.start_send("a", "w1")
    reserve(store, ["b"], owner="w2")
    with pytest.raises(LeaseLostError) as lost:
        store.start_send("b", "w1", Submission("a", ("J1",)))
    assert lost.value.key == "b"
    assert got(store, "a").state is S.SUBMITTED
    assert store.by_job_id("J1") == got(store, "a")


def three_sends(store: JournalStore) -> None:
    """Three rows of one claim of w1: ``unsent`` never started, ``started``, and ``answered``
    (started, its job id J1 recorded)."""
    reserve(store, ["unsent", "started", "answered"])
    store.start_send("started", "w1")
    store.start_send("answered", "w1")
    store.mark_submitted("answered", "w1", ["J1"])


def test_recover_returns_sends_never_started_and_looks_up_started_ones(
    store: JournalStore, clock: Clock
) -> None:
    three_sends(store)
    reach(store, "single", S.SENDING)  # mark_sending: started at once
    clock.advance(61)
    moved = {row.key: row for row in store.recover()}
    assert set(moved) == {"unsent", "started", "single"}
    unsent = moved["unsent"]
    assert unsent == got(store, "unsent")
    assert (unsent.state, unsent.lease_owner, unsent.reason, unsent.next_check_at) == (
        S.PENDING,
        None,
        None,
        None,
    )
    assert (moved["started"].state, moved["single"].state) == (S.UNCERTAIN, S.UNCERTAIN)
    assert moved["started"].reason == "the lease expired while sending"
    # sent by the next claim, which starts it afresh
    (again,) = store.claim("w2", 60, 10)
    assert (again.key, again.attempt) == ("unsent", 2)
    assert store.mark_sending_many(["unsent"], "w2", 60) == ["unsent"]
    store.start_send("unsent", "w2")


def test_only_rows_never_started_are_released_as_unstarted(
    store: JournalStore, clock: Clock
) -> None:
    three_sends(store)
    reserve(store, ["theirs"], owner="w2")
    reach(store, "single", S.SENDING)  # mark_sending: started at once
    clock.advance(1)
    store.release_unstarted(["unsent", "started", "answered", "theirs", "single", "nope"], "w1")
    states = {key: got(store, key).state for key in ("unsent", "started", "answered", "theirs")}
    assert states == {
        "unsent": S.PENDING,
        "started": S.SENDING,
        "answered": S.SUBMITTED,
        "theirs": S.SENDING,
    }
    assert got(store, "single").state is S.SENDING
    unsent = got(store, "unsent")
    assert (unsent.lease_owner, unsent.reason, unsent.updated_at) == (None, None, clock.now)
    store.release_unstarted([], "w1")


def test_a_reserved_row_released_by_its_worker_is_pending(store: JournalStore) -> None:
    reserve(store, ["a"])
    row = store.release("a", "w1")
    assert (row.state, row.lease_owner, row.reason) == (S.PENDING, None, None)


# -- release -------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [S.CLAIMED, S.SENDING])
def test_a_released_row_is_pending_and_claimed_again(
    store: JournalStore, clock: Clock, state: State
) -> None:
    before = reach(store, "k", state)
    with pytest.raises(LeaseLostError):
        store.release("k", "w2")
    clock.advance(1)
    row = store.release("k", "w1", "connection refused")
    assert row == store.get("k")
    assert (row.state, row.lease_owner, row.lease_expires_at, row.reason) == (
        S.PENDING,
        None,
        None,
        "connection refused",
    )
    assert (row.attempt, row.reference_id) == (before.attempt, before.reference_id)
    (again,) = store.claim("w2", 60, 1)
    assert (again.key, again.attempt, again.lease_owner) == ("k", 2, "w2")
    assert store.recover() == []


# -- checks due ----------------------------------------------------------------------------


def test_rows_are_due_from_their_check_time_soonest_first(
    store: JournalStore, clock: Clock
) -> None:
    t0 = clock.now
    for key, after in (("a", 30), ("b", 10), ("c", 20), ("d", 10)):
        reach(store, key, S.SENDING)
        store.mark_submitted(key, "w1", [f"J-{key}"], check_at=t0 + timedelta(seconds=after))
    assert got(store, "a").next_check_at == t0 + timedelta(seconds=30)
    clock.advance(9)
    assert store.due(S.SUBMITTED, 60, 10) == []
    clock.advance(1)
    due = store.due(S.SUBMITTED, 60, 10)
    assert [r.key for r in due] == ["b", "d"]  # same time: by seq
    assert due == [store.get("b"), store.get("d")]
    assert due[0].next_check_at == clock.now + timedelta(seconds=60)
    clock.advance(20)
    assert [r.key for r in store.due(S.SUBMITTED, 60, 1)] == ["c"]
    assert [r.key for r in store.due(S.SUBMITTED, 60, 5)] == ["a"]
    assert store.due(S.UNCERTAIN, 60, 5) == []


def test_a_row_due_is_skipped_by_others_until_its_check_lease_ends(
    open_store: OpenStore, clock: Clock
) -> None:
    first, second = open_store(), open_store()
    for key in ("a", "b"):
        reach(first, key, S.SENDING)
        first.mark_submitted(key, "w1", [f"J-{key}"])
    assert [r.key for r in first.due(S.SUBMITTED, 30, 1)] == ["a"]
    assert [r.key for r in second.due(S.SUBMITTED, 30, 5)] == ["b"]
    assert first.due(S.SUBMITTED, 30, 5) == []
    clock.advance(30)
    assert [r.key for r in second.due(S.SUBMITTED, 30, 5)] == ["a", "b"]


def test_schedule_sets_the_next_check_and_counts_it(store: JournalStore, clock: Clock) -> None:
    reach(store, "s", S.SUBMITTED)
    reach(store, "u", S.UNCERTAIN)
    reach(store, "done", S.SUBMITTED)
    assert [r.key for r in store.due(S.SUBMITTED, 30, 5)] == ["s", "done"]
    store.mark_final("done", S.DELIVERED)
    later = clock.now + timedelta(seconds=120)
    store.schedule(["s", "u", "done", "nope", "s"], later)
    s, u, done = got(store, "s"), got(store, "u"), got(store, "done")
    assert (s.next_check_at, s.checks) == (later, 2)
    assert (u.next_check_at, u.checks) == (later, 1)
    # a row that moved on is left alone
    assert (done.state, done.next_check_at, done.checks) == (S.DELIVERED, None, 0)
    assert store.get("nope") is None
    clock.advance(119)
    assert store.due(S.SUBMITTED, 30, 5) == []
    clock.advance(1)
    assert [r.key for r in store.due(S.SUBMITTED, 30, 5)] == ["s"]
    assert [r.key for r in store.due(S.UNCERTAIN, 30, 5)] == ["u"]
    store.schedule([], later)


def test_an_uncertain_row_is_due_from_its_check_time(store: JournalStore, clock: Clock) -> None:
    reach(store, "k", S.SENDING)
    row = store.mark_uncertain("k", "w1", "time-out", check_at=clock.now + timedelta(seconds=5))
    assert row.next_check_at == clock.now + timedelta(seconds=5)
    assert store.due(S.UNCERTAIN, 30, 5) == []
    clock.advance(5)
    assert [r.key for r in store.due(S.UNCERTAIN, 30, 5)] == ["k"]
    assert store.due(S.SUBMITTED, 30, 5) == []
    resolved = store.resolve_uncertain("k", [], check_at=clock.now + timedelta(seconds=7))
    assert (resolved.state, resolved.job_ids) == (S.SUBMITTED, ())
    assert resolved.next_check_at == clock.now + timedelta(seconds=7)
    assert store.due(S.UNCERTAIN, 30, 5) == []
    clock.advance(7)
    assert [r.key for r in store.due(S.SUBMITTED, 30, 5)] == ["k"]


@pytest.mark.parametrize("state", [s for s in State if s not in (S.SUBMITTED, S.UNCERTAIN)])
def test_only_tracked_states_are_due(store: JournalStore, state: State) -> None:
    with pytest.raises(BadInputError):
        store.due(state, 30, 5)


# -- look-ups, paging, counts --------------------------------------------------------------


def test_rows_are_found_by_job_id_and_reference(store: JournalStore) -> None:
    reach(store, "a", S.SENDING)
    store.mark_submitted("a", "w1", ["J1", "J2"])
    reach(store, "b", S.UNCERTAIN)
    store.resolve_uncertain("b", ["J3"])
    reach(store, "c", S.SENDING)
    assert got(store, "a") == store.by_job_id("J1") == store.by_job_id("J2")
    assert store.by_job_id("J3") == got(store, "b")
    assert store.by_job_id("J4") is None
    store.mark_final("a", S.DELIVERED)
    assert store.by_job_id("J1") == got(store, "a")
    for key in ("a", "b", "c"):
        assert store.by_reference(got(store, key).reference_id) == got(store, key)
    assert store.by_reference("0" * 32) is None


def test_rows_are_paged_by_seq(store: JournalStore, clock: Clock) -> None:
    keys = [f"k{i}" for i in (5, 3, 9, 1, 7, 2, 8)]
    for key in keys:
        clock.advance(-1)  # the order is the order added, not the clock's
        store.add(key, SHA)
    store.claim("w1", 60, 2)
    rows = store.rows()
    assert [r.key for r in rows] == keys
    assert rows == [store.get(key) for key in keys]
    assert all(a.seq < b.seq for a, b in itertools.pairwise(rows))
    pages, after = [], 0
    for _ in range(5):  # bounded: a store ignoring ``after`` would page for ever
        page = store.rows(after=after, limit=3)
        pages.append([r.key for r in page])
        after = page[-1].seq if page else after
    assert pages == [keys[:3], keys[3:6], keys[6:], [], []]
    assert [r.key for r in store.rows([S.CLAIMED])] == keys[:2]
    assert [r.key for r in store.rows({S.PENDING}, after=rows[3].seq, limit=2)] == keys[4:6]
    assert [r.key for r in store.rows([S.PENDING, S.CLAIMED], limit=3)] == keys[:3]
    assert store.rows([]) == []
    assert store.rows([S.DELIVERED]) == []


def test_counts_and_rows_by_state(store: JournalStore, clock: Clock) -> None:
    reach(store, "s", S.SENDING)
    for i in range(3):
        clock.advance(1)
        store.add(f"p{i}", SHA)
    store.claim("w1", 60, 1)
    counts = store.counts_by_state()
    assert (counts[S.PENDING], counts[S.CLAIMED], counts[S.SENDING]) == (2, 1, 1)
    assert sum(counts.values()) == 4
    assert set(counts) == set(State)
    assert [r.key for r in store.rows_in(S.PENDING)] == ["p1", "p2"]
    assert [r.key for r in store.rows_in(S.PENDING, limit=1)] == ["p1"]
    assert store.rows_in(S.DELIVERED) == []


def test_a_limit_of_nothing_gives_nothing_and_below_is_refused(store: JournalStore) -> None:
    reach(store, "s", S.SUBMITTED)
    store.add("p", SHA)
    reads: list[Callable[[int], list[Row]]] = [
        lambda n: store.claim("w1", 60, n),
        lambda n: store.due(S.SUBMITTED, 60, n),
        lambda n: store.rows(limit=n),
        lambda n: store.rows_in(S.PENDING, limit=n),
    ]
    for read in reads:
        assert read(0) == []
        with pytest.raises(BadInputError):
            read(-1)
    assert got(store, "p").state is S.PENDING
    assert got(store, "s").next_check_at is not None
    assert [r.key for r in store.due(S.SUBMITTED, 60, 5)] == ["s"]


# -- limits and values shared by every worker ----------------------------------------------


def test_call_reservations_are_spaced_across_handles(open_store: OpenStore, clock: Clock) -> None:
    first, second = open_store(), open_store()
    t0 = clock.now
    times = [(first, second)[n % 2].next_call_at("acct", 0.5) for n in range(9)]
    assert times == [t0 + timedelta(seconds=0.5 * n) for n in range(9)]
    assert times[-1] - times[0] == timedelta(seconds=(9 - 1) * 0.5)
    # another account has its own spacing
    assert second.next_call_at("other", 0.5) == t0
    # a reservation is never in the past
    clock.advance(60)
    assert first.next_call_at("acct", 0.5) == clock.now
    assert second.next_call_at("acct", 0.5) == clock.now + timedelta(seconds=0.5)


def test_send_slots_are_limited_across_handles(open_store: OpenStore, clock: Clock) -> None:
    first, second = open_store(), open_store()
    assert first.acquire_send_slot("acct", "a", 2, 60)
    assert second.acquire_send_slot("acct", "b", 2, 60)
    assert not first.acquire_send_slot("acct", "c", 2, 60)
    assert not second.acquire_send_slot("acct", "c", 2, 60)
    assert second.acquire_send_slot("other", "c", 2, 60)  # per account
    # asked again by a holder: the slot it holds, no other
    assert first.acquire_send_slot("acct", "a", 2, 60)
    assert not second.acquire_send_slot("acct", "c", 2, 60)
    second.release_send_slot("acct", "a")
    assert first.acquire_send_slot("acct", "c", 2, 60)
    assert not first.acquire_send_slot("acct", "d", 2, 60)
    first.release_send_slot("acct", "nobody")
    assert not first.acquire_send_slot("acct", "d", 2, 60)


def test_an_expired_send_slot_is_free(open_store: OpenStore, clock: Clock) -> None:
    first, second = open_store(), open_store()
    assert first.acquire_send_slot("acct", "a", 1, 30)
    clock.advance(20)
    assert first.acquire_send_slot("acct", "a", 1, 30)  # renewed to 20 + 30
    clock.advance(29)
    assert not second.acquire_send_slot("acct", "b", 1, 30)
    clock.advance(1)
    assert second.acquire_send_slot("acct", "b", 1, 30)
    assert not first.acquire_send_slot("acct", "a", 1, 30)


def test_the_first_value_of_a_name_wins(open_store: OpenStore) -> None:
    first, second = open_store(), open_store()
    assert first.meta("batch_id", "A") == "A"
    assert second.meta("batch_id", "B") == "A"
    assert second.meta("trace", "T") == "T"
    assert first.meta("trace", "") == "T"
    assert first.meta("batch_id", "C") == "A"


# -- concurrent workers --------------------------------------------------------------------


def run_threads(work: Callable[..., None], args: list[tuple[object, ...]]) -> None:
    errors: list[BaseException] = []

    def guarded(*arguments: object) -> None:
        try:
            work(*arguments)
        except BaseException as error:  # reported by the test's thread
            errors.append(error)
            raise

    threads = [threading.Thread(target=guarded, args=a) for a in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert errors == []


@pytest.mark.parametrize("shared", [False, True], ids=["two handles", "one handle"])
def test_concurrent_claims_never_hand_out_one_row_twice(
    open_store: OpenStore, shared: bool
) -> None:
    filler = open_store()
    keys = [f"k{i:04d}" for i in range(400)]
    for key in keys:
        filler.add(key, SHA)
    stores = [filler] * 3 if shared else [open_store() for _ in range(3)]
    owners = ["a", "b", "c"]
    start = threading.Barrier(len(owners), timeout=30)
    claimed: dict[str, list[str]] = {owner: [] for owner in owners}

    def work(owner: str, store: JournalStore) -> None:
        start.wait()
        while rows := store.claim(owner, 600, 2):
            for row in rows:
                claimed[owner].append(row.key)
                store.mark_sending(row.key, owner)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads taking turns often, so their calls interleave
    try:
        run_threads(work, list(zip(owners, stores, strict=True)))
    finally:
        sys.setswitchinterval(switch)
    # a busy writer can starve the others: what counts is that no row is claimed twice
    assert sorted(key for keys_ in claimed.values() for key in keys_) == keys
    assert filler.counts_by_state()[S.SENDING] == len(keys)
    assert {row.attempt for row in filler.rows(limit=1000)} == {1}


# -- the ranges of leases and call spacing --------------------------------------------------

#: Leases no store takes: below a second, above a day, and numbers that are no duration.
BAD_LEASES = [0.5, 86_400.5, 1e300, 1e-300, 0, -60, float("inf"), float("nan")]


@pytest.mark.parametrize("lease", BAD_LEASES)
def test_a_lease_out_of_range_is_refused_before_anything_is_written(
    store: JournalStore, clock: Clock, lease: float
) -> None:
    claimed = reach(store, "c", S.CLAIMED)
    reach(store, "s", S.SUBMITTED)
    store.add("p", SHA)
    calls: list[Callable[[], object]] = [
        lambda: store.claim("w1", lease, 1),
        lambda: store.heartbeat("c", "w1", lease),
        lambda: store.mark_sending("c", "w1", lease),
        lambda: store.mark_sending_many(["c"], "w1", lease),
        lambda: store.due(S.SUBMITTED, lease, 5),
        lambda: store.acquire_send_slot("acct", "c", 1, lease),
    ]
    for call in calls:
        with pytest.raises(BadInputError) as refused:
            call()
        assert refused.value.field == "lease_seconds"
        assert "from 1 to 86400" in refused.value.problem
    assert got(store, "p").state is S.PENDING
    assert got(store, "c") == claimed
    assert got(store, "s").next_check_at is not None
    assert [r.key for r in store.due(S.SUBMITTED, 60, 5)] == ["s"]
    assert store.acquire_send_slot("acct", "other", 1, 60)  # no slot was taken
    # a second and a day are taken
    assert got(store, "c") == claimed
    assert store.heartbeat("c", "w1", 1).lease_expires_at == clock.now + timedelta(seconds=1)
    (row,) = store.claim("w1", 86_400, 1)
    assert row.lease_expires_at == clock.now + timedelta(days=1)


@pytest.mark.parametrize("interval", [1e-4, 100.5, 2e300, 0, float("inf"), float("nan")])
def test_a_call_spacing_out_of_range_is_refused_and_reserves_nothing(
    store: JournalStore, clock: Clock, interval: float
) -> None:
    with pytest.raises(BadInputError) as refused:
        store.next_call_at("acct", interval)
    assert refused.value.field == "interval"
    assert store.next_call_at("acct", 0.5) == clock.now


def test_a_lease_ending_beyond_any_allowed_is_taken_as_expired(
    store: JournalStore, clock: Clock
) -> None:
    # A lease more than two days ahead (here: the clock set back) cannot have been written
    # with an allowed lease: its row is recovered as any row whose worker died.
    store.add("claimed", SHA, "payload of claimed")
    store.claim("w1", 86_400, 1)
    store.add("sending", SHA, "payload of sending")
    store.claim("w2", 86_400, 1)
    store.mark_sending("sending", "w2")  # started: looked up, never sent again
    clock.advance(-86_400)  # the leases end two days ahead: the margin for clocks
    assert store.recover() == []
    clock.advance(-1)
    assert {row.key for row in store.recover()} == {"claimed", "sending"}
    assert got(store, "claimed").state is S.PENDING
    assert got(store, "sending").state is S.UNCERTAIN


def test_a_call_reserved_beyond_any_allowed_rate_is_not_waited_for(
    store: JournalStore, clock: Clock
) -> None:
    # Slots reserved a week ahead (here: the clock set back) cannot come from allowed rates
    # (1,024 workers at one call in 100 seconds reserve 28 hours): such a reservation no
    # longer holds the account's calls back.
    t0 = clock.now
    assert store.next_call_at("acct", 100) == t0
    clock.advance(-7 * 86_400)  # reserved a week ahead: still waited for
    assert store.next_call_at("acct", 100) == t0 + timedelta(seconds=100)
    clock.advance(-100.5)  # now more than a week ahead
    assert store.next_call_at("acct", 0.5) == clock.now
    assert store.next_call_at("acct", 0.5) == clock.now + timedelta(seconds=0.5)
