"""A PostgreSQL server for the journal's tests, started from the machine's server binaries.

One server per test session, started on first use: ``initdb`` into a temporary directory
(trust authentication, ``fsync`` off), listening only on a Unix socket in that directory (no
TCP), stopped when the session ends (by a watching process if the session is killed). Run as
root, the server runs as ``nobody`` (PostgreSQL refuses root). :func:`fresh_database` gives
each test a fresh schema of the one database: the DSN it returns sets ``search_path`` to that
schema (``options=-csearch_path=...``), so a store opened on it with no ``schema`` argument
keeps its tables there. :func:`restart_server` restarts it (every connection dropped).

Without the binaries the tests skip, telling how to install them; where ``CI`` or
``FAXWS_REQUIRE_POSTGRES`` is set they fail instead.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PostgresServer", "fresh_database", "fresh_schema", "restart_server", "server"]

REQUIRED = ("FAXWS_REQUIRE_POSTGRES", "CI")
INSTALL = (
    "PostgreSQL's server binaries (initdb, pg_ctl, postgres) were not found by"
    " `pg_config --bindir` nor in /usr/lib/postgresql/*/bin: install them"
    " (Debian/Ubuntu: `apt-get install postgresql`) to run the PostgreSQL journal tests"
)
#: Seconds pg_ctl waits for the server to start or stop, and the time-out of each command.
TIMEOUT = 60
USER = "postgres"
PORT = 5432


def find_bindir(versions: Path = Path("/usr/lib/postgresql")) -> Path | None:
    """The directory of initdb, pg_ctl and postgres: ``pg_config --bindir``'s, else the highest
    version's under ``versions``; None if neither has them."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            found = subprocess.run(
                [pg_config, "--bindir"],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            pass
        else:
            candidates.append(Path(found.stdout.strip()))

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))

    candidates += sorted(versions.glob("*/bin"), key=version, reverse=True)
    for bindir in candidates:
        if all(os.access(bindir / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


#: Waits for its stdin's end (this process ending, however: a SIGKILL too), then stops the
#: server at once (SIGQUIT to the postmaster named in the pid file) and deletes its directory.
_REAPER = """
import os, shutil, signal, sys, time
root, pid_file = sys.argv[1], sys.argv[2]
sys.stdin.buffer.read()
try:
    with open(pid_file, encoding="ascii") as found:
        pid = int(found.readline())
    os.kill(pid, signal.SIGQUIT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        os.kill(pid, 0)
        time.sleep(0.05)
except (OSError, ValueError):
    pass
shutil.rmtree(root, ignore_errors=True)
"""


def _open_to_others(path: Path) -> bool:
    """Whether every directory above ``path`` lets another user through."""
    return all(
        parent.stat().st_mode & stat.S_IXOTH for parent in path.resolve().parents if parent.exists()
    )


class PostgresServer:
    """One server in a temporary directory, run as ``nobody`` when this process is root."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self._as: dict[str, Any] = {}
        base = tempfile.gettempdir()
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            import pwd

            account = pwd.getpwnam("nobody")
            self._as = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
            if not _open_to_others(Path(base, "x")):
                base = "/tmp"  # the server's user must reach its directory
        self.root = Path(tempfile.mkdtemp(prefix="faxws-pg-", dir=base))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.running = False
        if self._as:
            os.chown(self.root, self._as["user"], self._as["group"])
        # a session killed before its clean-up leaves no server behind
        self._reaper = subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(self.root), str(self.data / "postmaster.pid")],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    @property
    def socket_dir(self) -> str:
        return str(self.root)

    def dsn(self, schema: str | None = None) -> str:
        """A libpq key=value DSN of the server's database, ``search_path`` set to ``schema``."""
        dsn = f"host={self.socket_dir} port={PORT} user={USER} dbname=postgres"
        if schema is not None:
            dsn += f" options='-csearch_path={schema}'"
        return dsn

    def _run(self, *args: str) -> None:
        try:
            subprocess.run(
                [str(self.bindir / args[0]), *args[1:]],
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=TIMEOUT + 30,
                check=True,
                **self._as,
            )
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(
                f"{' '.join(args[:2])} failed ({exc.returncode}): {exc.stdout}{exc.stderr}"
                f"{self._log_tail()}"
            ) from None

    def _pg_ctl(self, action: str, *args: str) -> None:
        self._run("pg_ctl", action, "-w", "-t", str(TIMEOUT), "-D", str(self.data), *args)

    def _log_tail(self) -> str:
        try:
            return "\nserver log:\n" + self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def start(self) -> None:
        """initdb (the first time) and start the server, waiting until it accepts connections."""
        if not self.data.exists():
            self._run(
                "initdb",
                f"--pgdata={self.data}",
                f"--username={USER}",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
            )
            with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(
                    "\n# the journal's tests: a Unix socket only; no durability needed\n"
                    "listen_addresses = ''\n"
                    f"unix_socket_directories = '{self.socket_dir}'\n"
                    f"port = {PORT}\n"
                    "fsync = off\n"
                    "full_page_writes = off\n"
                    "max_connections = 200\n"
                )
        self._pg_ctl("start", "-l", str(self.log))
        self.running = True

    def halt(self) -> None:
        """Stop the server as an administrator would (its connections told and dropped),
        keeping its data for :meth:`start`."""
        self._pg_ctl("stop", "-m", "fast")
        self.running = False

    def restart(self) -> None:
        """Stop the server and start it again on the same socket, its data kept: every open
        connection to it is dropped."""
        self.halt()
        self.start()

    def stop(self) -> None:
        """Stop the server at once and delete its directory."""
        if self.running:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._pg_ctl("stop", "-m", "immediate")
            self.running = False
        shutil.rmtree(self.root, ignore_errors=True)
        if self._reaper.stdin is not None:
            self._reaper.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._reaper.wait(timeout=TIMEOUT)

    def execute(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser (autocommit); its rows, if any."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=TIMEOUT) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []


_lock = threading.Lock()
_server: PostgresServer | None = None
_broken: str | None = None  # why the session's server could not start: not tried again
_schemas = itertools.count(1)


def server(request: pytest.FixtureRequest) -> PostgresServer:
    """The session's server, started on first use (skipped, or failed where required, when
    the binaries are missing)."""
    global _server, _broken
    with _lock:
        if _server is not None:
            return _server
        if _broken is not None:
            pytest.fail(_broken)
        bindir = find_bindir()
        if bindir is None:
            required = [name for name in REQUIRED if os.environ.get(name)]
            if required:
                pytest.fail(f"{INSTALL} ({' and '.join(required)} set: required here)")
            pytest.skip(INSTALL)
        started = PostgresServer(bindir)
        atexit.register(started.stop)

        def stop() -> None:
            global _server
            _server = None
            started.stop()

        request.config.add_cleanup(stop)
        try:
            started.start()
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            started.stop()
            _broken = f"the PostgreSQL server for the tests did not start: {error}"
            pytest.fail(_broken)
        _server = started
        return started


def fresh_schema(request: pytest.FixtureRequest) -> tuple[PostgresServer, str]:
    """The session's server and the name of a new, empty schema on it."""
    found = server(request)
    schema = f"test_{next(_schemas)}"
    found.execute(f"CREATE SCHEMA {schema}")
    return found, schema


def fresh_database(request: pytest.FixtureRequest) -> str:
    """A DSN of a new, empty schema on the session's server (``search_path`` set to it)."""
    found, schema = fresh_schema(request)
    return found.dsn(schema)


def restart_server(request: pytest.FixtureRequest) -> None:
    """Restart the session's server (or start it, if a test stopped it): every open
    connection to it is dropped; its data is kept."""
    found = server(request)
    if found.running:
        found.halt()
    found.start()
