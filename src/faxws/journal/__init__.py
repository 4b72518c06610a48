"""A durable send journal: each fax a row, sent at most once across crashes.

A row is added with a caller's key (never released) and the sha256 of what is to be sent; it
gets a ReferenceId once, for its SendFaxEx. A worker claims rows under a lease, marks one
SENDING durably right before ``send_fax`` writes its first byte, then SUBMITTED (job ids),
FAILED (the service refused: ``maybe_delivered`` False) or UNCERTAIN (``maybe_delivered``
True). A row that reached SENDING is never handed out again: :meth:`JournalStore.recover`
makes one whose lease expired UNCERTAIN, to be looked up by its ReferenceId.
"""

from __future__ import annotations

from faxws.journal._sqlite import SqliteJournal
from faxws.journal._store import (
    TRANSITIONS,
    Clock,
    IllegalTransitionError,
    JournalError,
    JournalStore,
    KeyReusedError,
    LeaseLostError,
    Row,
    State,
    UnknownKeyError,
)

__all__ = [
    "TRANSITIONS",
    "Clock",
    "IllegalTransitionError",
    "JournalError",
    "JournalStore",
    "KeyReusedError",
    "LeaseLostError",
    "Row",
    "SqliteJournal",
    "State",
    "UnknownKeyError",
]
