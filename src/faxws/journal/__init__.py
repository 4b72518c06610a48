"""A durable send journal: each fax a row, sent at most once across crashes.

A row is added with a caller's key (never released) and the sha256 of what is to be sent; it
gets a ReferenceId once, for its SendFaxEx. A worker claims rows under a lease, marks them
SENDING durably (several in one commit), marks each started right before ``send_fax`` writes
its first byte, then SUBMITTED (job ids), FAILED (the service refused: ``maybe_delivered``
False) or UNCERTAIN (``maybe_delivered`` True). A row that started is never handed out again:
:meth:`JournalStore.recover` makes one whose lease expired UNCERTAIN, to be looked up by its
ReferenceId; one that never started goes back to PENDING.

:class:`Batch` is the Python API over a store: rows added as :class:`FaxSpec`, sent by worker
threads, tracked to their outcome; :func:`notification_app` applies the service's pushes to
it. ``PostgresJournal`` is imported (with psycopg) only when
it is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faxws.journal._open import open_journal
from faxws.journal._payload import FaxSpec, FileSpec
from faxws.journal._receiver import notification_app
from faxws.journal._runner import Batch, Outcome, ResendPolicy, RunSummary, Stop
from faxws.journal._sqlite import SqliteJournal
from faxws.journal._store import (
    RESEND_SUFFIX,
    TRANSITIONS,
    Clock,
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

if TYPE_CHECKING:
    from faxws.journal._postgres import PostgresJournal

__all__ = [
    "RESEND_SUFFIX",
    "TRANSITIONS",
    "Batch",
    "Clock",
    "FaxSpec",
    "FileSpec",
    "IllegalTransitionError",
    "JournalError",
    "JournalStore",
    "KeyReusedError",
    "LeaseLostError",
    "Outcome",
    "PostgresJournal",
    "ResendPolicy",
    "Row",
    "RunSummary",
    "SqliteJournal",
    "State",
    "Stop",
    "Submission",
    "UnknownKeyError",
    "notification_app",
    "open_journal",
]


def __getattr__(name: str) -> Any:
    # psycopg is imported with the PostgreSQL store, only when it is asked for.
    if name == "PostgresJournal":
        from faxws.journal._postgres import PostgresJournal

        return PostgresJournal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
