"""One way to open a journal, whichever store it is in: a PostgreSQL connection string opens a
PostgresJournal (psycopg imported only then), anything else is an SQLite file."""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from faxws.journal._sqlite import SqliteJournal
from faxws.journal._store import JournalError, JournalStore

_URL = re.compile(r"postgres(?:ql)?://", re.IGNORECASE)
#: Any URL: one that is not PostgreSQL's is refused, never taken for a file name.
_ANY_URL = re.compile(r"([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
#: libpq's "key=value" form (spaces may surround the "="), by the keywords that say where the
#: database is or who connects.
_KEYWORDS = re.compile(
    r"(?:\A|\s)(?:dbname|host|hostaddr|port|user|password|passfile|service|sslmode)\s*="
)


def is_postgres(target: str | os.PathLike[str]) -> bool:
    """Whether ``target`` names a PostgreSQL database (a ``postgresql://`` or ``postgres://``
    URL, or a libpq "key=value" string with ``dbname=`` or ``host=``); a path object never
    does."""
    if not isinstance(target, str):
        return False
    return bool(_URL.match(target.lstrip()) or _KEYWORDS.search(target))


def sqlite_path(target: str | os.PathLike[str]) -> str | None:
    """The file ``target`` names when it names an SQLite journal; None for a PostgreSQL
    database or a URL (which :func:`open_journal` refuses without naming it)."""
    if is_postgres(target):
        return None
    if isinstance(target, str) and _ANY_URL.match(target.lstrip()):
        return None
    return os.fspath(target)


def open_journal(target: str | os.PathLike[str], **kwargs: Any) -> JournalStore:
    """The journal at ``target``: a PostgreSQL database (see :func:`is_postgres`), else the
    SQLite file at that path. ``kwargs`` go to the store (``clock``, and the store's own, such
    as SQLite's ``busy_timeout``). The connection string never appears in an error of this
    function: it may hold a password."""
    if not is_postgres(target):
        other = _ANY_URL.match(target.lstrip()) if isinstance(target, str) else None
        if other is not None:
            # Only the scheme is named: the rest may hold a password.
            raise JournalError(
                f"a journal is an SQLite file or a postgresql:// URL, not a {other[1]}:// URL"
            )
        return SqliteJournal(target, **kwargs)
    try:
        importlib.import_module("psycopg")
    except ImportError as error:
        raise JournalError(
            "a PostgreSQL journal needs psycopg 3: pip install 'faxws[postgres]'"
        ) from error
    postgres = importlib.import_module("faxws.journal._postgres")
    store: JournalStore = postgres.PostgresJournal(target, **kwargs)
    return store
