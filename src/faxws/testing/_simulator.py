"""The simulator itself: its life cycle (a server thread, every connection tracked and ended
at stop), what tests inspect, and what they control."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import socket
import sqlite3
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from faxws._protocol.checks import is_loopback
from faxws.errors import BadInputError
from faxws.testing._accounts import DEMO_ACCOUNT, Account, seconds
from faxws.testing._clock import ManualClock, shown
from faxws.testing._durable import InUseError, JobStore
from faxws.testing._faults import Fault
from faxws.testing._http import Handler, Server
from faxws.testing._oauth import TOKEN_PATH
from faxws.testing._progress import JobProgress, make_plan
from faxws.testing._pushes import Pusher
from faxws.testing._records import ReceivedRequest, SimulatedJob
from faxws.testing._state import MAX_JOBS, MAX_REQUESTS, State, forget_files

__all__ = ["RETAINED_BODY_BYTES", "FaxWSSimulator"]

#: Default ``retained_body_bytes``: request bodies kept in memory, in total, newest first.
RETAINED_BODY_BYTES = 8 * 1024 * 1024
_MAX_TIME_SCALE = 1e9  # simulated seconds per clock second: a life in microseconds


class FaxWSSimulator:
    """The simulator. Use as a context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        accounts: the users it accepts; default: the demo account
            (:data:`DEMO_USER_ID` with PIN :data:`DEMO_PIN`, token :data:`DEMO_TOKEN`,
            client :data:`DEMO_CLIENT_ID` / :data:`DEMO_CLIENT_SECRET`).
        host, port: where to listen; port 0 picks a free port (see :attr:`url`).
        token_lifetime: seconds a token from the token endpoint stays valid (finite, > 0).
        ttfp: the TTFP SendFax and SendFaxEx answer with; by default the clock's seconds
            until the job's first attempt dials, rounded up.
        time_scale: simulated seconds of a fax's life per second of ``clock`` (above 0,
            at most 1e9): with the default 4, a one-page fax is delivered about 5 s after it was
            sent (queue 2 s, dial 5 s, 10 s a page, simulated); 1000 makes a life take
            milliseconds.
        clock: seconds since the epoch (default ``time.time``); a :class:`ManualClock`
            lets a test step lives. Every time the simulator keeps is this clock's.
        retained_body_bytes: how many bytes of request bodies :attr:`requests` keeps in
            memory, newest first (default 8 MiB); a larger body is never kept. Documents
            are kept either way, in :attr:`jobs` (large ones on disk).
        strict: answer a request that differs from the contract's exact form (Content-Type,
            SOAPAction, XML declaration, envelope prefix, empty soap:Header, default
            namespace) with a SOAP Client fault naming each difference. By default such a
            request is served, and the differences are recorded in
            :attr:`ReceivedRequest.deviations` and :attr:`SimulatedJob.deviations`.
        api_token: what the inbox and the REST API require (``?token=`` or the
            ``X-FaxWS-Token`` header). By default none on a loopback address, and a random
            one (:attr:`api_token`) on any other.
        max_requests, max_jobs: how many request records and jobs are kept (default
            100,000 each); beyond them the oldest are forgotten, the jobs' documents too.
        db: a SQLite file that keeps the jobs across restarts, with their documents in
            files beside it (``PATH.files/``); a restart serves them again and numbers new
            ones after them. Without it, jobs live in memory and documents in a temporary
            directory removed at :meth:`stop`.
    """

    def __init__(
        self,
        accounts: Iterable[Account] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token_lifetime: float = 3600.0,
        ttfp: int | None = None,
        retained_body_bytes: int = RETAINED_BODY_BYTES,
        strict: bool = False,
        api_token: str | None = None,
        max_requests: int = MAX_REQUESTS,
        max_jobs: int = MAX_JOBS,
        db: str | os.PathLike[str] | None = None,
        time_scale: float = 4.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if isinstance(retained_body_bytes, bool) or not isinstance(retained_body_bytes, int):
            raise BadInputError("retained_body_bytes", "must be an int")
        if retained_body_bytes < 0:
            raise BadInputError("retained_body_bytes", "must not be negative")
        self.token_lifetime = seconds("token_lifetime", token_lifetime)
        self.ttfp = ttfp
        if not isinstance(strict, bool):
            raise BadInputError("strict", f"must be True or False, not {type(strict).__name__}")
        self.strict = strict
        if api_token is not None and (not isinstance(api_token, str) or not api_token):
            raise BadInputError("api_token", "must be a non-empty string")
        if api_token is None and not is_loopback(host):
            api_token = secrets.token_urlsafe(18)
        self.api_token = api_token
        for name, value in (("max_requests", max_requests), ("max_jobs", max_jobs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BadInputError(name, f"must be a whole number of at least 1, not {value!r}")
        # Compared, not converted: an int too large for a float is refused, not an overflow.
        if (
            isinstance(time_scale, bool)
            or not isinstance(time_scale, (int, float))
            or not time_scale > 0
            or time_scale == math.inf
        ):
            raise BadInputError(
                "time_scale", f"must be a finite number above 0, not {shown(time_scale)}"
            )
        if time_scale > _MAX_TIME_SCALE:
            raise BadInputError(
                "time_scale", f"must be at most {_MAX_TIME_SCALE:g}, not {shown(time_scale)}"
            )
        if clock is not None and not callable(clock):
            raise BadInputError("clock", "must be a function that returns seconds")
        self.time_scale = float(time_scale)
        self.clock: Callable[[], float] = time.time if clock is None else clock
        self._state = State(
            tuple(accounts) if accounts is not None else (DEMO_ACCOUNT,),
            retained_body_bytes,
            max_requests,
            max_jobs,
            clock=self.clock,
            time_scale=self.time_scale,
        )
        self._pusher = Pusher(self._state)
        self._state.on_change = self._pusher.wake
        if db is not None and not isinstance(db, (str, os.PathLike)):
            raise BadInputError("db", f"must be a path, not {type(db).__name__}")
        self._db = None if db is None else Path(os.fspath(db)).expanduser()
        if self.api_token is not None:
            self._state.extra_secrets = frozenset({self.api_token})
        self._host, self._port = host, port
        # Guards the connections and threads below (the state has its own lock).
        self._lock = threading.Lock()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        self._spool: Path | None = None
        self._streams = 0  # event streams open

    @property
    def accounts(self) -> tuple[Account, ...]:
        return self._state.accounts

    @accounts.setter
    def accounts(self, accounts: Iterable[Account]) -> None:
        self._state.accounts = tuple(accounts)

    @property
    def retained_body_bytes(self) -> int:
        return self._state.retained_body_bytes

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> FaxWSSimulator:
        server = Server((self._host, self._port), Handler)
        server.sim = self
        self._stopping = threading.Event()
        self._state.stopping = False
        if self._db is None:
            self._spool = Path(tempfile.mkdtemp(prefix="faxws-simulator-"))
        else:
            # A mistyped folder is said as such, rather than made: the jobs would be kept
            # where no one looks for them.
            folder = self._db.parent
            if not folder.is_dir():
                server.server_close()
                problem = (
                    f"{folder} is not a folder"
                    if folder.exists()
                    else f"the folder {folder} does not exist (create it first)"
                )
                raise BadInputError("db", f"{self._db}: {problem}")
            try:
                store = JobStore(self._db)
            except InUseError as exc:
                server.server_close()
                raise BadInputError("db", str(exc)) from None
            except (OSError, sqlite3.Error) as exc:
                server.server_close()
                raise BadInputError("db", f"cannot be opened: {exc}") from None
            try:
                self._state.open_store(store)
            except (ValueError, OSError, sqlite3.Error) as exc:
                store.close()
                server.server_close()
                raise BadInputError("db", f"cannot be read: {exc}") from None
            self._spool = store.spool
        self._pusher.start()
        if isinstance(self.clock, ManualClock):
            self.clock._listen(self._state.touch)  # what the inbox shows moved on
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="faxws-simulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wake parked faults, shut every connection down, join every thread
        and remove the spooled documents. Raises RuntimeError if a thread does not end."""
        server, self._server = self._server, None
        if server is None:
            return
        pusher = self._pusher.stop()  # a push under way is cut off
        if isinstance(self.clock, ManualClock):
            self.clock._forget(self._state.touch)
        self._stopping.set()  # delays and slow drips end now
        self._state.stop()  # and so do waits for jobs
        server.shutdown()  # the accept loop ends: no connection is added after this
        server.server_close()
        with self._lock:
            for sock in self._sockets:
                # Wakes a handler blocked reading a request or writing an answer.
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            threads = list(self._threads)
        if self._thread is not None:
            threads.append(self._thread)
        if pusher is not None:
            threads.append(pusher)
        deadline = time.monotonic() + 60
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        spool, self._spool = self._spool, None
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)
        self._state.close_store()
        alive = [t for t in threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"{len(alive)} simulator thread(s) did not stop")

    def __enter__(self) -> FaxWSSimulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulator is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The service root to give to :class:`~faxws.FaxClient` (``http://127.0.0.1:N``)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    @property
    def token_url(self) -> str:
        return f"{self.url}{TOKEN_PATH}"

    # -- inspection ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget received requests, jobs (and their spooled documents), counters and pending
        faults (accounts stay)."""
        forget_files(self._state.reset())

    @property
    def connections(self) -> int:
        """Connections accepted since the start (or the last :meth:`reset`)."""
        return self._state.connections

    @property
    def token_requests(self) -> int:
        """Requests to the token endpoint since the start (or the last :meth:`reset`)."""
        return self._state.token_requests

    @property
    def requests(self) -> list[ReceivedRequest]:
        """The requests received so far, oldest first (a copy); token endpoint requests are
        counted in :attr:`token_requests` instead."""
        with self._state.lock:
            return self._state.records()

    @property
    def jobs(self) -> list[SimulatedJob]:
        """The jobs SendFax and SendFaxEx accepted so far, oldest first (a copy); where each
        recipient's job is now: :meth:`progress`."""
        with self._state.lock:
            return list(self._state.jobs)

    def requests_for(self, operation: str) -> list[ReceivedRequest]:
        return [r for r in self.requests if r.operation == operation]

    def job(self, job_id: str) -> SimulatedJob | None:
        return self._state.job(job_id)

    def progress(self, job_id: str) -> JobProgress | None:
        """Where the job ``job_id`` is now (its status as every answer gives it, its pages,
        attempts, planned outcome and push), or None for an unknown job id."""
        return self._state.progress(job_id)

    # -- control ------------------------------------------------------------------------------

    def inject(self, fault: Fault, *, operation: str | None = None, times: int = 1) -> None:
        """Apply ``fault`` to the next ``times`` requests (of ``operation``, if given)."""
        self._state.faults.add(fault, operation, times)

    def set_outcome(self, job_id: str, outcome: str, *, pages: int | None = None) -> None:
        """Plan what happens to the job ``job_id`` (or to every recipient of the job numbered
        ``job_id``), before or during its life: one of ``OUTCOMES`` (``"busy"``, ...), with
        the ``pages`` that go through for ``"fails-after-pages"``. The plan applies to the
        whole life; a job already past the point where it ends by the new plan ends now.
        Raises BadInputError for a bad outcome, an unknown job or one that has ended."""
        try:
            self._state.set_outcome(job_id, make_plan(outcome, pages))
        except KeyError:
            raise BadInputError("job_id", f"no job {job_id}") from None
        except ValueError as exc:
            raise BadInputError("outcome", str(exc)) from None

    def wait_for_pushes(self, timeout: float = 30.0) -> bool:
        """Wait until every push due by the clock now has been tried (delivered, failed,
        or waiting for its next attempt's time); False if ``timeout`` seconds passed first."""
        return self._pusher.wait_settled(timeout)

    def issue_token(self, user_id: str, lifetime: float | None = None) -> str:
        """A new bearer token for ``user_id``, valid for ``lifetime`` seconds (finite, > 0;
        default: ``token_lifetime``)."""
        life = self.token_lifetime if lifetime is None else seconds("lifetime", lifetime)
        return self._state.issue_token(user_id, life)

    def expire_tokens(self) -> None:
        """Make every token the token endpoint issued invalid from now on."""
        self._state.expire_tokens()

    # -- internals used by the server -------------------------------------------------------

    def _connection_opened(self, sock: socket.socket, thread: threading.Thread) -> None:
        with self._state.lock:
            self._state.connections += 1
        with self._lock:
            self._sockets.add(sock)
            self._threads.add(thread)

    def _stream_opened(self, limit: int) -> bool:
        """Count an event stream in, unless ``limit`` are open already."""
        with self._lock:
            if self._streams >= limit:
                return False
            self._streams += 1
            return True

    def _stream_closed(self) -> None:
        with self._lock:
            self._streams -= 1

    def _thread_ended(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads.discard(thread)

    def _reset_connection(self, sock: socket.socket) -> None:
        """Close ``sock`` with a TCP reset (SO_LINGER 0), under the lock like every close."""
        with self._lock:
            self._sockets.discard(sock)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
