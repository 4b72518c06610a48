"""A journal's states, rows, errors and the store protocol (no I/O)."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from faxws._ranges import CALL_INTERVAL, LEASE_SECONDS
from faxws.errors import BadInputError, FaxWSError

if TYPE_CHECKING:
    from typing_extensions import Self

Clock = Callable[[], datetime]


class State(str, enum.Enum):
    """Where a fax is in its life; the values are what a store writes."""

    PENDING = "pending"
    CLAIMED = "claimed"
    SENDING = "sending"
    SUBMITTED = "submitted"
    DELIVERED = "delivered"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNCERTAIN = "uncertain"
    NEEDS_REVIEW = "needs_review"

    @property
    def final(self) -> bool:
        """True for the states a row never leaves."""
        return not TRANSITIONS[self]


#: Every move a store makes, from each state. A row that reached SENDING goes back to PENDING
#: only when its send is known to have written no byte (the client's ``maybe_delivered``
#: False for a failure before any byte); otherwise its fax may be at the service.
TRANSITIONS: dict[State, frozenset[State]] = {
    State.PENDING: frozenset({State.CLAIMED, State.CANCELLED}),
    State.CLAIMED: frozenset(
        {State.CLAIMED, State.PENDING, State.SENDING, State.CANCELLED, State.NEEDS_REVIEW}
    ),
    State.SENDING: frozenset({State.SUBMITTED, State.FAILED, State.UNCERTAIN, State.PENDING}),
    State.UNCERTAIN: frozenset({State.SUBMITTED, State.NEEDS_REVIEW}),
    State.SUBMITTED: frozenset(
        {State.DELIVERED, State.FAILED, State.CANCELLED, State.NEEDS_REVIEW}
    ),
    State.DELIVERED: frozenset(),
    State.FAILED: frozenset(),
    State.CANCELLED: frozenset(),
    State.NEEDS_REVIEW: frozenset(),
}

#: The states :meth:`JournalStore.mark_needs_review` moves a row from.
REVIEW_SOURCES = (State.CLAIMED, State.UNCERTAIN, State.SUBMITTED)


def final_sources(state: State) -> tuple[State, ...]:
    """The states :meth:`JournalStore.mark_final` moves a row to ``state`` from (a
    BadInputError for a state that is not final)."""
    if state is State.CANCELLED:
        return (State.SUBMITTED, State.PENDING, State.CLAIMED)
    if state not in (State.DELIVERED, State.FAILED):
        raise BadInputError("state", f"{state.value} is not a final state")
    return (State.SUBMITTED,)


#: The key of a row's n-th resend is its first row's key with this suffix and n; a key a
#: caller adds may not end so.
RESEND_SUFFIX = "/resend-"
_RESEND_KEY = re.compile(re.escape(RESEND_SUFFIX) + r"([0-9]+)\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}")


#: The longest key, in bytes of UTF-8: every store indexes keys (PostgreSQL's index entries
#: hold at most 2,704 bytes), and a resend's key is its first row's with a suffix.
MAX_KEY_BYTES = 1000


def check_lease(lease_seconds: float | None) -> float | None:
    """A lease argument of a store (None where the lease is kept): 1 to 86,400 seconds, or
    BadInputError naming ``lease_seconds``. Checked before anything is written, so that no row
    is left with a lease that never ends or ends at once."""
    return None if lease_seconds is None else LEASE_SECONDS.check("lease_seconds", lease_seconds)


def check_interval(interval: float) -> float:
    """The spacing of an account's calls (one over a rate), or BadInputError naming
    ``interval``: a slot reserved further ahead than a valid rate can would hold back every
    later run of the journal."""
    return CALL_INTERVAL.check("interval", interval)


def check_added(key: str, payload_sha256: str, resend_of: str | None) -> None:
    """What every store's :meth:`JournalStore.add` refuses before it writes: a key longer
    than :data:`MAX_KEY_BYTES`, a digest that is not 64 lowercase hex digits, a key in the
    form of a resend's that is not one."""
    first = key if resend_of is None else resend_of  # a resend's key has a suffix more
    if len(first.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise BadInputError("key", f"is longer than {MAX_KEY_BYTES} bytes in UTF-8")
    if not _SHA256.fullmatch(payload_sha256):
        raise BadInputError("payload_sha256", "not 64 lowercase hex digits")
    if resend_of is None and _RESEND_KEY.search(key):
        raise BadInputError(
            "key", f"a key ending in {RESEND_SUFFIX}<digits> is the form of a resend's key"
        )


#: Rows :meth:`JournalStore.add_many` adds per transaction.
ADD_CHUNK = 500


def chunks(
    items: Iterable[tuple[str, str, str]],
) -> Iterator[tuple[list[tuple[str, str, str]], Exception | None]]:
    """``items`` in lists of up to :data:`ADD_CHUNK`; an error raised by ``items`` itself
    ends the last list, beside it (the items before it are still added, as a loop of adds
    would)."""
    size = ADD_CHUNK
    source = iter(items)
    while True:
        chunk: list[tuple[str, str, str]] = []
        try:
            for item in source:
                key, payload_sha256, payload = item
                chunk.append((key, payload_sha256, payload))
                if len(chunk) == size:
                    break
        except Exception as error:  # given back, to be raised once the items before it are added
            yield chunk, error
            return
        if chunk:
            yield chunk, None
        if len(chunk) < size:
            return


def added_by_key(error: BadInputError, key: str) -> BadInputError:
    """``error`` of the row ``key`` among many, naming the key."""
    return BadInputError(error.field, f"{error.problem} (row {key!r})")


def resend_number(row: Row) -> int:
    """How many times the first row of ``row``'s chain was sent again up to ``row`` (0 for a
    first row)."""
    found = _RESEND_KEY.search(row.key)
    return int(found.group(1)) if row.resend_of is not None and found else 0


def resend_key(failed: Row) -> str:
    """The key of the row that sends ``failed`` again: its first row's key, the suffix, and
    the next number of the chain."""
    found = _RESEND_KEY.search(failed.key)
    if failed.resend_of is None or found is None:
        return f"{failed.key}{RESEND_SUFFIX}1"
    return f"{failed.key[: found.start()]}{RESEND_SUFFIX}{int(found.group(1)) + 1}"


@dataclass(frozen=True)
class Row:
    """One fax of the journal.

    ``reference_id`` is made once, when the row is added, and is the ReferenceId its SendFaxEx
    goes with; ``payload`` is what to send (the caller's text, JSON for the batch runner) and
    ``payload_sha256`` its digest with the documents'; ``attempt`` counts its claims;
    ``next_check_at`` is when a SUBMITTED or UNCERTAIN row is next looked up (None in other
    states), ``checks`` how many look-ups :meth:`JournalStore.schedule` counted since the row
    entered that state; ``resend_of`` is the key of the FAILED row this one sends again;
    ``seq`` orders rows as they were added."""

    key: str
    payload_sha256: str
    reference_id: str
    state: State
    attempt: int
    job_ids: tuple[str, ...]
    lease_owner: str | None
    lease_expires_at: datetime | None
    reason: str | None
    created_at: datetime
    updated_at: datetime
    payload: str = ""
    resend_of: str | None = None
    next_check_at: datetime | None = None
    checks: int = 0
    seq: int = 0


@dataclass(frozen=True)
class Submission:
    """A send's answer, to record: row ``key`` SUBMITTED with ``job_ids``, first looked up at
    ``check_at`` (None: now); see :meth:`JournalStore.start_send`."""

    key: str
    job_ids: tuple[str, ...]
    check_at: datetime | None = None


class JournalError(FaxWSError):
    """Base class of the journal's errors."""


class UnknownKeyError(JournalError):
    """No row has this key."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no journal row with key {key!r}")
        self.key = key


class KeyReusedError(JournalError):
    """The key was added before with another payload: a key is never released."""

    def __init__(self, key: str) -> None:
        super().__init__(f"journal key {key!r} was added with a different payload")
        self.key = key


class IllegalTransitionError(JournalError):
    """The row is not in a state this move starts from (another worker may have moved it)."""

    def __init__(self, key: str, current: State, target: State) -> None:
        super().__init__(f"journal row {key!r} cannot go from {current.value} to {target.value}")
        self.key = key
        self.current = current
        self.target = target


class LeaseLostError(JournalError):
    """The caller no longer holds the row's lease (it expired, or another owner has it)."""

    def __init__(self, key: str, owner: str) -> None:
        super().__init__(f"journal row {key!r} is not leased to {owner!r}")
        self.key = key
        self.owner = owner


class JournalStore(Protocol):
    """What a journal store does. Every move checks the row's current state in the same
    transaction that writes it, so two workers never both move one row; a move a row's state
    does not allow raises :class:`IllegalTransitionError`, one of an unknown key
    :class:`UnknownKeyError`. Times are aware datetimes from the store's clock."""

    def add(
        self, key: str, payload_sha256: str, payload: str = "", *, resend_of: str | None = None
    ) -> Row:
        """Add a pending row; the same key and digest again return the existing row (its
        payload untouched), the same key with another digest raises :class:`KeyReusedError`.
        A key ending in :data:`RESEND_SUFFIX` and digits is refused (BadInputError naming
        ``key``) unless ``resend_of`` is given (see :meth:`add_resend`): the key of an existing
        row (else UnknownKeyError) that no other row sends again (else JournalError)."""
        ...

    def add_many(self, rows: Iterable[tuple[str, str, str]]) -> list[Row]:
        """:meth:`add` of each ``(key, payload_sha256, payload)`` in turn, :data:`ADD_CHUNK`
        rows a transaction; the rows, in order. A row :meth:`add` refuses raises its error
        (a BadInputError names the key) once the rows before it are added; those after it are
        not. An error ``rows`` itself raises is raised the same way."""
        ...

    def add_resend(self, key: str) -> Row:
        """A new pending row that sends FAILED row ``key``'s payload again, linked to it by
        ``resend_of``: key ``<first key>/resend-<n>`` (n counts the resends of the first row),
        a new ReferenceId. Once per failed row: asked again, the same new row (whatever its
        state now). A row not FAILED raises :class:`IllegalTransitionError` (target PENDING)."""
        ...

    def get(self, key: str) -> Row | None: ...

    def by_job_id(self, job_id: str) -> Row | None:
        """The row whose send was given job id ``job_id``."""
        ...

    def by_reference(self, reference_id: str) -> Row | None: ...

    def claim(self, owner: str, lease_seconds: float, limit: int) -> list[Row]:
        """Lease up to ``limit`` pending rows (or claimed ones whose lease expired) to
        ``owner``, oldest first (by ``seq``); each claim adds one to ``attempt``."""
        ...

    def heartbeat(self, key: str, owner: str, lease_seconds: float) -> Row:
        """Extend ``owner``'s lease of a claimed or sending row (LeaseLostError if it is not
        ``owner``'s unexpired lease; IllegalTransitionError, target its own state, if the row
        is in neither state)."""
        ...

    def release(self, key: str, owner: str, reason: str | None = None) -> Row:
        """CLAIMED or SENDING -> PENDING, the lease dropped (``owner``'s unexpired lease, else
        LeaseLostError), ``attempt`` kept: a claim not used, or a send known to have written no
        byte (the caller's fact, never a guess)."""
        ...

    def mark_sending(self, key: str, owner: str, lease_seconds: float | None = None) -> Row:
        """CLAIMED -> SENDING, durably, before the first byte of the send is written; the row
        counts as started (see :meth:`start_send`)."""
        ...

    def mark_sending_many(
        self, keys: Sequence[str], owner: str, lease_seconds: float | None = None
    ) -> list[str]:
        """CLAIMED -> SENDING for the rows ``keys`` leased to ``owner``, in one durable commit,
        none of them started: each is sent only after :meth:`start_send` marked it. The keys
        moved, in the order given (each once); a row not moved (its lease lost, another state,
        unknown) is left out. A row not started when its lease expires goes back to PENDING (see
        :meth:`recover`)."""
        ...

    def release_unstarted(self, keys: Sequence[str], owner: str) -> None:
        """SENDING -> PENDING for the rows ``keys`` that :meth:`mark_sending_many` moved for
        ``owner`` (its unexpired lease) and no :meth:`start_send` marked since: nothing of them
        was sent. Any other row is left as it is."""
        ...

    def start_send(self, key: str, owner: str, submitted: Submission | None = None) -> None:
        """Mark SENDING row ``key`` (``owner``'s unexpired lease, not started yet) started: the
        first byte of its send may be written once this returns. The mark commits so that no
        crash can undo it unseen: synced, or (SQLite) lazily with the machine's boot id in the
        row, a crash of the machine being what could undo it. ``submitted``, the answer of the
        send before, is recorded in the same transaction first, as :meth:`mark_submitted`
        records it; if that move is refused its error is raised and nothing is written. If the
        mark is refused (LeaseLostError, IllegalTransitionError naming ``key``), ``submitted``
        stays recorded."""
        ...

    def mark_submitted(
        self, key: str, owner: str, job_ids: Sequence[str], check_at: datetime | None = None
    ) -> Row:
        """SENDING -> SUBMITTED with the job ids (findable by :meth:`by_job_id`), first looked
        up at ``check_at`` (None: now); ``checks`` starts again from 0."""
        ...

    def mark_failed(self, key: str, owner: str, reason: str) -> Row:
        """SENDING -> FAILED: the service refused the send (``maybe_delivered`` False)."""
        ...

    def mark_uncertain(
        self, key: str, owner: str, reason: str, check_at: datetime | None = None
    ) -> Row:
        """SENDING -> UNCERTAIN: the send ended without an answer (``maybe_delivered`` True);
        looked up by its ReferenceId from ``check_at`` (None: now)."""
        ...

    def resolve_uncertain(
        self, key: str, job_ids: Sequence[str], check_at: datetime | None = None
    ) -> Row:
        """UNCERTAIN -> SUBMITTED: the reference lookup found the job (``job_ids`` may be
        empty: the lookup gives none; such a row is tracked by its ReferenceId), looked up from
        ``check_at`` (None: now)."""
        ...

    def mark_needs_review(self, key: str, reason: str) -> Row:
        """CLAIMED, UNCERTAIN or SUBMITTED -> NEEDS_REVIEW, with what is known in ``reason``."""
        ...

    def record_late_answer(self, key: str, job_ids: Sequence[str], reason: str) -> Row:
        """NEEDS_REVIEW, kept: a send's answer that came after its row was put in review (its
        worker's lease had run out, and the look-ups found no job) records the job ids and
        ``reason``, so that nobody sends the fax again; synced."""
        ...

    def mark_final(self, key: str, state: State, reason: str | None = None) -> Row:
        """SUBMITTED -> DELIVERED, FAILED or CANCELLED (and PENDING or CLAIMED -> CANCELLED)."""
        ...

    def due(self, state: State, lease_seconds: float, limit: int) -> list[Row]:
        """Up to ``limit`` rows in ``state`` (SUBMITTED or UNCERTAIN) whose ``next_check_at``
        has come, soonest first; their ``next_check_at`` moves ``lease_seconds`` on in the same
        transaction, so other workers skip them meanwhile. Another state: BadInputError."""
        ...

    def schedule(self, keys: Sequence[str], check_at: datetime) -> None:
        """Set the next look-up of rows ``keys`` (still SUBMITTED or UNCERTAIN; others are
        left alone, unknown keys ignored) and count one check each, in one transaction."""
        ...

    def recover(self) -> list[Row]:
        """Return expired claims to PENDING (nothing was sent), and SENDING rows whose lease
        expired: those never started back to PENDING too (nothing was sent: their start
        marks could not have been lost), the others UNCERTAIN (their worker died mid-send:
        looked up at once); the moved rows."""
        ...

    def counts_by_state(self) -> dict[State, int]: ...

    def rows_in(self, state: State, limit: int | None = None) -> list[Row]: ...

    def rows(
        self, states: Collection[State] | None = None, *, after: int = 0, limit: int = 500
    ) -> list[Row]:
        """Up to ``limit`` rows (in ``states``, or all) with ``seq`` above ``after``, by
        ``seq``: page through a journal with the last row's ``seq``."""
        ...

    def next_call_at(self, account: str, interval: float) -> datetime:
        """Reserve the next call slot of ``account`` for calls ``interval`` seconds apart,
        shared by every worker of the store: the returned time is when this caller may call
        (now, or the previous reservation plus ``interval``)."""
        ...

    def acquire_send_slot(
        self, account: str, holder: str, limit: int, lease_seconds: float
    ) -> bool:
        """Hold one of ``account``'s ``limit`` concurrent send slots for ``holder`` (a row's
        key) until released or ``lease_seconds`` pass; False when all are held. Asked again by
        a holder: its slot, held ``lease_seconds`` from now."""
        ...

    def release_send_slot(self, account: str, holder: str) -> None: ...

    def meta(self, name: str, default: str) -> str:
        """The journal-wide value ``name``, set to ``default`` on first use (a batch id, the
        trace context its attempts link to)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None:
        """Close the store."""
        ...
