"""open_journal: a path is an SQLite file, a PostgreSQL connection string a PostgresJournal
(imported only then); without psycopg, a clear JournalError that names no password."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from faxws.journal._open import is_postgres, open_journal
from faxws.journal._sqlite import SqliteJournal
from faxws.journal._store import JournalError

SHA = "0" * 64
POSTGRES = [
    "postgresql://user@db.example/faxws",
    "postgres://db.example/faxws",
    "postgresql:///faxws",
    "PostgreSQL://user:secret@db.example:5433/faxws?sslmode=require",
    "  postgresql://db.example/faxws",
    "dbname=faxws",
    "host=db.example dbname=faxws user=faxws",
    "user=faxws host = db.example",
    "port=5433\thost=/var/run/postgresql",
]
FILES = [
    "batch.db",
    "./postgresql.db",
    "postgresql:/faxws",
    "postgres.example/batch.db",
    "/var/lib/faxws/ghost=1.db",
    "hostname=db",
    "my dbname.db",
    "",
]


@pytest.mark.parametrize("target", POSTGRES)
def test_a_postgres_connection_string_is_recognised(target: str) -> None:
    assert is_postgres(target)


@pytest.mark.parametrize("target", FILES)
def test_anything_else_is_a_file(target: str) -> None:
    assert not is_postgres(target)


def test_a_path_object_is_always_a_file() -> None:
    assert not is_postgres(Path("postgresql://db.example/faxws"))
    assert not is_postgres(Path("host=db.example"))


def clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("kind", [str, Path])
def test_a_path_opens_an_sqlite_file(
    tmp_path: Path, kind: Callable[[Path], str | os.PathLike[str]]
) -> None:
    path = tmp_path / "batch.db"
    store = open_journal(kind(path), clock=clock, busy_timeout=2.5)
    try:
        assert isinstance(store, SqliteJournal)
        assert store.add("k", SHA).created_at == clock()
        assert store._db.execute("PRAGMA busy_timeout").fetchone() == (2500,)
    finally:
        store.close()
    assert path.exists()
    with pytest.raises(TypeError):
        open_journal(tmp_path / "other.db", no_such_option=1)


class FakePostgres:
    def __init__(self, dsn: str, **kwargs: Any) -> None:
        self.dsn, self.kwargs = dsn, kwargs


@pytest.mark.parametrize("target", POSTGRES)
def test_a_connection_string_opens_the_postgres_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: str
) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("faxws.journal._postgres")
    module.PostgresJournal = FakePostgres  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "faxws.journal._postgres", module)
    monkeypatch.setitem(sys.modules, "psycopg", types.ModuleType("psycopg"))
    store = open_journal(target, clock=clock)
    assert isinstance(store, FakePostgres)
    assert (store.dsn, store.kwargs) == (target, {"clock": clock})
    assert list(tmp_path.iterdir()) == []  # no file made of a connection string


@pytest.mark.parametrize("target", POSTGRES)
def test_without_psycopg_a_connection_string_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # not importable
    monkeypatch.delitem(sys.modules, "faxws.journal._postgres", raising=False)
    with pytest.raises(JournalError) as caught:
        open_journal(target)
    message = str(caught.value)
    assert "psycopg" in message
    assert "faxws[postgres]" in message
    assert "secret" not in message
    assert target.strip() not in message
    assert "faxws.journal._postgres" not in sys.modules  # nothing tried to connect
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("target", "scheme"),
    [
        ("postgresql+psycopg://u:SECRETPW@db.example/faxws", "postgresql+psycopg"),
        ("postgresq://u:SECRETPW@db.example/faxws", "postgresq"),
        ("mysql://u:SECRETPW@db.example/faxws", "mysql"),
    ],
)
def test_another_url_is_refused_naming_only_its_scheme(
    target: str, scheme: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(JournalError) as caught:
        open_journal(target)
    assert f"not a {scheme}:// URL" in str(caught.value)
    assert "SECRETPW" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_libpq_keywords_without_host_or_dbname_are_postgres() -> None:
    assert is_postgres("user=u password=SECRETPW")


def test_a_file_in_a_missing_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(JournalError) as caught:
        open_journal(tmp_path / "missing" / "batch.db")
    assert "does not exist" in str(caught.value)
    assert "read-only" not in str(caught.value)
