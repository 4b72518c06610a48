"""A journal's states, rows, errors and the store protocol (no I/O)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from faxws.errors import FaxWSError

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


#: Every move a store makes, from each state. A row that reached SENDING never goes back to
#: PENDING or CLAIMED: its fax may be at the service.
TRANSITIONS: dict[State, frozenset[State]] = {
    State.PENDING: frozenset({State.CLAIMED, State.CANCELLED}),
    State.CLAIMED: frozenset({State.CLAIMED, State.PENDING, State.SENDING, State.CANCELLED}),
    State.SENDING: frozenset({State.SUBMITTED, State.FAILED, State.UNCERTAIN}),
    State.UNCERTAIN: frozenset({State.SUBMITTED, State.NEEDS_REVIEW}),
    State.SUBMITTED: frozenset({State.DELIVERED, State.FAILED, State.CANCELLED}),
    State.DELIVERED: frozenset(),
    State.FAILED: frozenset(),
    State.CANCELLED: frozenset(),
    State.NEEDS_REVIEW: frozenset(),
}


@dataclass(frozen=True)
class Row:
    """One fax of the journal. ``reference_id`` is made once, when the row is added, and is
    the ReferenceId its SendFaxEx goes with; ``attempt`` counts its claims."""

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
    does not allow raises :class:`IllegalTransitionError`."""

    def add(self, key: str, payload_sha256: str) -> Row:
        """Add a pending row; the same key and payload again return the existing row, the same
        key with another payload raises :class:`KeyReusedError`."""
        ...

    def get(self, key: str) -> Row | None: ...

    def claim(self, owner: str, lease_seconds: float, limit: int) -> list[Row]:
        """Lease up to ``limit`` pending rows (or claimed ones whose lease expired) to
        ``owner``, oldest first."""
        ...

    def heartbeat(self, key: str, owner: str, lease_seconds: float) -> Row: ...

    def mark_sending(self, key: str, owner: str, lease_seconds: float | None = None) -> Row:
        """CLAIMED -> SENDING, durably, before the first byte of the send is written."""
        ...

    def mark_submitted(self, key: str, owner: str, job_ids: Sequence[str]) -> Row: ...

    def mark_failed(self, key: str, owner: str, reason: str) -> Row:
        """SENDING -> FAILED: the service refused the send (``maybe_delivered`` False)."""
        ...

    def mark_uncertain(self, key: str, owner: str, reason: str) -> Row:
        """SENDING -> UNCERTAIN: the send ended without an answer (``maybe_delivered`` True)."""
        ...

    def resolve_uncertain(self, key: str, job_ids: Sequence[str]) -> Row: ...

    def mark_needs_review(self, key: str, reason: str) -> Row: ...

    def mark_final(self, key: str, state: State, reason: str | None = None) -> Row:
        """SUBMITTED -> DELIVERED, FAILED or CANCELLED (and PENDING or CLAIMED -> CANCELLED)."""
        ...

    def counts_by_state(self) -> dict[State, int]: ...

    def rows_in(self, state: State, limit: int | None = None) -> list[Row]: ...

    def recover(self) -> list[Row]:
        """Return expired claims to PENDING (nothing was sent) and make SENDING rows whose
        lease expired UNCERTAIN (their worker died mid-send); the moved rows."""
        ...

    def close(self) -> None: ...
