"""The journal's stores under one suite: ``store`` is each store in turn (SQLite in a fresh
file, PostgreSQL in a fresh schema of a server the tests start), on a test clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from faxws.journal import JournalStore

STORES = ["sqlite", "postgres"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


#: Opens one more handle on the store under test (another worker of the same journal).
OpenStore = Callable[..., JournalStore]


@pytest.fixture(params=STORES)
def open_store(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[OpenStore]:
    """Opens handles on one fresh journal of the store ``request.param``; all are closed
    after the test. Keyword arguments go to the store's constructor (``clock`` by default
    the test's)."""
    opened: list[JournalStore] = []
    if request.param == "sqlite":
        from faxws.journal import SqliteJournal

        def make(**kwargs: object) -> JournalStore:
            kwargs.setdefault("clock", clock)
            store = SqliteJournal(tmp_path / "journal.db", **kwargs)  # type: ignore[arg-type]
            opened.append(store)
            return store

    else:
        from postgres_server import fresh_database

        dsn = fresh_database(request)

        def make(**kwargs: object) -> JournalStore:
            from faxws.journal._postgres import PostgresJournal

            kwargs.setdefault("clock", clock)
            store = PostgresJournal(dsn, **kwargs)  # type: ignore[arg-type]
            opened.append(store)
            return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: OpenStore) -> JournalStore:
    return open_store()
