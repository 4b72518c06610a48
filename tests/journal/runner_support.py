"""What the batch runner's tests share: a clock the workers' sleeps move (and the simulator's
with it), documents, a simulator and a client for it, and counts of what the simulator got."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from faxws import ClientOptions, FaxClient
from faxws._http.sync_transport import HttpTransport
from faxws.journal import Batch, FaxSpec, FileSpec, JournalStore
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator, ManualClock
from faxws.transport import Request, Response

#: One page, as the simulator counts pages.
PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
ORDINARY = "+1 555 0100"
BUSY = "+1 500 555 0001"  # fails after the service's own three attempts
REJECTED = "+1 500 555 0006"
NEVER_ENDS = "+1 500 555 0007"
#: Simulated seconds until a one-page fax to an ordinary number is delivered.
DELIVERED_AFTER = 2 + 5 + 10
#: Worker threads are named so; the fake clock moves when all of them sleep.
WORKER_PREFIX = "faxws-batch-worker"
#: Real seconds a fake sleep may wait for the other workers before the test fails.
STUCK_AFTER = 60.0


class FakeTime:
    """The runner's clock and sleep, and the simulator's clock: time moves only when every
    live worker thread sleeps, and then straight to the soonest wake-up (a worker busy with a
    call holds time still, as the call takes none). Each sleep is recorded."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start
        self.simulator_clock = ManualClock(start.timestamp())
        self.sleeps: list[float] = []
        self._sleeping: dict[threading.Thread, datetime] = {}
        self._cond = threading.Condition()

    def __call__(self) -> datetime:
        with self._cond:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._cond:
            self._move(self.now + timedelta(seconds=seconds))

    def _move(self, to: datetime) -> None:
        if to > self.now:
            self.simulator_clock.advance((to - self.now).total_seconds())
            self.now = to
        self._cond.notify_all()

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        me = threading.current_thread()
        deadline = time.monotonic() + STUCK_AFTER
        with self._cond:
            assert len(self.sleeps) < 20_000, "too many sleeps: the run does not move on"
            self.sleeps.append(seconds)
            wake = self.now + timedelta(seconds=seconds)
            self._sleeping[me] = wake
            try:
                while self.now < wake:
                    if self._all_asleep():
                        self._move(min(self._sleeping.values()))
                        continue
                    assert time.monotonic() < deadline, "a worker never slept or ended"
                    # Woken when time moves; the short time-out notices a worker that ended.
                    self._cond.wait(0.01)
            finally:
                del self._sleeping[me]

    def _all_asleep(self) -> bool:
        """Every live worker sleeps, none of them due to wake (which it is about to do)."""
        workers = [t for t in threading.enumerate() if t.name.startswith(WORKER_PREFIX)]
        return all(
            t in self._sleeping and self._sleeping[t] > self.now for t in workers if t.is_alive()
        )


class Delegate:
    """Passes every attribute on to ``inner`` (a store, a client): a subclass overrides what
    it changes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def document(directory: Path, name: str = "a.pdf", data: bytes = PDF) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


def spec(path: Path, *numbers: str) -> FaxSpec:
    return FaxSpec(list(numbers or [ORDINARY]), [FileSpec(path)])


def simulator(fake: FakeTime, **kwargs: Any) -> FaxWSSimulator:
    return FaxWSSimulator(clock=fake.simulator_clock, time_scale=1.0, **kwargs)


def client_for(sim: FaxWSSimulator, **kwargs: Any) -> FaxClient:
    kwargs.setdefault("pin", DEMO_PIN)
    kwargs.setdefault("retry_backoff", 0)
    return FaxClient(sim.url, user_id=DEMO_USER_ID, **kwargs)


def batch_for(store: JournalStore, client: Any, fake: FakeTime, **kwargs: Any) -> Batch:
    kwargs.setdefault("lease_seconds", 86_400)  # the longest: fake time runs far while a test waits
    return Batch(store, client, clock=fake, sleep=fake.sleep, **kwargs)


def sends_by_reference(sim: FaxWSSimulator) -> Counter[str]:
    """How many SendFaxEx the simulator accepted with each ReferenceId."""
    return Counter(job.reference_id for job in sim.jobs if job.operation == "SendFaxEx")


def calls(sim: FaxWSSimulator, operation: str) -> int:
    return len(sim.requests_for(operation))


Progress = Callable[[dict[Any, int]], object]


_OPERATION = re.compile(rb"<(?:[\w.-]+:)?(\w+)[\s>/]")
Hook = Callable[[str, Request], "Response | None"]


class Spy:
    """A SyncTransport in front of faxws's own: ``hook(operation, request)`` runs before each
    post and may raise (a ConnectError: nothing sent) or answer in place of the service;
    ``after(operation, request, response)`` may replace the answer. Every post is recorded
    with the fake clock's time."""

    def __init__(self, url: str, fake: FakeTime | None = None) -> None:
        self.inner = HttpTransport(f"{url}/fax/v5", ClientOptions(), lambda text: text)
        self.fake = fake
        self.hook: Hook | None = None
        self.after: Callable[[str, Request, Response], Response] | None = None
        self.posts: list[tuple[str, datetime | None]] = []
        self._lock = threading.Lock()

    @staticmethod
    def operation(request: Request) -> str:
        body = request.body if isinstance(request.body, bytes) else b""
        envelope_body = body.find(b"Body")
        found = _OPERATION.search(body, envelope_body + 4 if envelope_body >= 0 else 0)
        return found.group(1).decode() if found else "?"

    def post(self, request: Request) -> Response:
        operation = self.operation(request)
        with self._lock:
            self.posts.append((operation, None if self.fake is None else self.fake()))
        if self.hook is not None:
            answer = self.hook(operation, request)
            if answer is not None:
                request.written = True
                return answer
        response = self.inner.post(request)
        if self.after is not None:
            response = self.after(operation, request, response)
        return response

    def close(self) -> None:
        self.inner.close()


def spied_client(
    sim: FaxWSSimulator, fake: FakeTime | None = None, **kwargs: Any
) -> tuple[FaxClient, Spy]:
    spy = Spy(sim.url, fake)
    options = ClientOptions(transport=spy, retry_backoff=0, **kwargs)
    return FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, options=options), spy
