"""Completion pushes: when a job that asked for one (NotifyType HTTP POST, an http(s)
NotifyDestination) ends, a background thread POSTs its outcome there as the vendor does
(:func:`~faxws.notifications.render_notification`, form flavour; multipart with the image),
with the job's NotifyAuthUser and NotifyAuthPassword as HTTP Basic credentials.

An attempt has :data:`PUSH_DEADLINE` seconds in all to connect, send and read the answer (a
receiver answering a byte at a time is cut off then), so that one slow receiver holds back the
pushes of other jobs for that long at most. A push whose receiver does not answer 2xx is tried
again, :data:`PUSH_ATTEMPTS` times in all,
:data:`FIRST_RETRY` clock seconds after the first attempt and twice as long after each later
one. Every attempt's outcome is kept on the job (and in the database): a pending push goes
out after a restart too. The image, when NotifyIncludeDeliveredImage is 1, is the job's first
document, for a delivered job, up to :data:`MAX_IMAGE` bytes.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import math
import socket
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from faxws._protocol import assumptions as vendor
from faxws._protocol.redact import redact
from faxws.bindings import FaxJob
from faxws.errors import BadInputError
from faxws.notifications import DeliveryNotification, render_notification
from faxws.status import JobStatus
from faxws.testing._clock import ManualClock
from faxws.testing._durable import StoreError
from faxws.testing._progress import JobProgress, PushRecord
from faxws.testing._records import SimulatedJob

if TYPE_CHECKING:
    from faxws.testing._state import State

__all__ = [
    "CONNECT_TIMEOUT",
    "FIRST_RETRY",
    "MAX_IMAGE",
    "PUSH_ATTEMPTS",
    "PUSH_DEADLINE",
    "READ_TIMEOUT",
    "Pusher",
    "first_push",
]

PUSH_ATTEMPTS = 4
FIRST_RETRY = 1.0
#: Seconds to connect to a receiver, and to wait for each read of its answer.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
#: Seconds for a whole attempt: connecting, sending and reading the answer.
PUSH_DEADLINE = 15.0
MAX_IMAGE = 16 * 1024 * 1024
_POLL = 1.0  # the longest wait between checks with a clock that tells no one it moved
_MAX_WAIT = 60.0  # with the real clock: the longest wait, should the system's clock jump
_ANSWER = 64 * 1024  # bytes of a receiver's answer read before the connection closes
_log = logging.getLogger("faxws.simulator")


def first_push(details: FaxJob | None) -> PushRecord | None:
    """The push a job's details ask for: None for none, else pending or skipped."""
    if details is None or details.notify_type != vendor.NOTIFY_TYPES["post"]:
        return None
    if not _is_http_url(details.notify_destination):
        return PushRecord(
            "skipped",
            result="NotifyDestination is not an http(s) URL (account URL templates are "
            "not simulated)",
        )
    return PushRecord("pending")


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class Pusher:
    """The thread that sends pushes once they are due. It sleeps until the next push falls
    due by the clock, or until :meth:`wake` (a new job, a cancel, a plan, a manual clock
    moving on)."""

    def __init__(self, state: State) -> None:
        self._state = state
        self._cond = threading.Condition()
        self._wakes = 0  # wake-ups asked for
        self._settled = 0  # the wake-ups the last finished pass had seen
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None  # of the push under way

    def start(self) -> None:
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="faxws-simulator-push", daemon=True)
        self._thread.start()
        if isinstance(self._state.clock, ManualClock):
            self._state.clock._listen(self.wake)

    def stop(self) -> threading.Thread | None:
        """Stop sending (a push under way is cut off); the thread, for the caller to join."""
        if isinstance(self._state.clock, ManualClock):
            self._state.clock._forget(self.wake)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            if self._socket is not None:
                with contextlib.suppress(OSError):
                    self._socket.shutdown(socket.SHUT_RDWR)
        thread, self._thread = self._thread, None
        return thread

    def wake(self) -> None:
        with self._cond:
            self._wakes += 1
            self._cond.notify_all()

    def wait_settled(self, timeout: float) -> bool:
        """Wait until every push due at the clock's time now has been tried; False if
        ``timeout`` seconds passed first, or the thread is not running."""
        with self._cond:
            self._wakes += 1
            target = self._wakes
            self._cond.notify_all()
            self._cond.wait_for(
                lambda: self._settled >= target or self._stopping or self._thread is None,
                timeout,
            )
            return self._settled >= target

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopping:
                    return
                seen = self._wakes
            soonest = self._send_due()
            with self._cond:
                self._settled = seen
                self._cond.notify_all()
                if self._wakes == seen and not self._stopping:
                    self._cond.wait(self._wait(soonest))

    def _wait(self, soonest: float) -> float | None:
        clock = self._state.clock
        if math.isinf(soonest) or isinstance(clock, ManualClock):
            return None  # until woken
        left = max(soonest - clock(), 0.0)
        return min(left, _MAX_WAIT if clock is time.time else _POLL)

    def _send_due(self) -> float:
        """Send every push that is due; when the next one falls due."""
        while True:
            due, soonest = self._state.due_pushes(self._state.clock())
            if not due:
                return soonest
            for job, ended in due:
                with self._cond:
                    if self._stopping:
                        return math.inf
                record = self._attempt(job, ended)
                try:
                    self._state.record_push(ended.job_id, record)
                except StoreError as exc:  # tried again on a later pass
                    _log.warning("push %s: not recorded: %s", ended.job_id, exc)
                    return self._state.clock() + FIRST_RETRY

    def _attempt(self, job: SimulatedJob, ended: JobProgress) -> PushRecord:
        assert job.details is not None
        assert ended.push is not None
        details, password = job.details, job._notify_password
        attempt = ended.push.attempts + 1
        credentials = (details.notify_auth_user, password)
        try:
            headers, body = render_notification(
                _event(job, ended), credentials=credentials if any(credentials) else None
            )
        except BadInputError as exc:  # a user name with a colon, which HTTP Basic cannot carry
            result, ok, final = f"not sent: {exc}", False, True
        else:
            ok, result = self._post(details.notify_destination, headers, body)
            final = ok or attempt >= PUSH_ATTEMPTS
        now = self._state.clock()
        result = redact(result, [password])  # an error may quote the destination
        _log.info("push %s attempt %d: %s", ended.job_id, attempt, result)
        if ok:
            return PushRecord("delivered", attempt, result, now)
        if final:
            return PushRecord("failed", attempt, result, now)
        return PushRecord("pending", attempt, result, now, now + FIRST_RETRY * 2 ** (attempt - 1))

    def _post(self, url: str, headers: dict[str, str], body: bytes) -> tuple[bool, str]:
        """POST ``body``; whether the receiver answered 2xx, and what happened."""
        parts = urlsplit(url)
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection = kind(parts.hostname or "", parts.port, timeout=CONNECT_TIMEOUT)
        # Time-outs bound each read, not a receiver that trickles: at the deadline the
        # connection is shut down, as stop() does, and whatever was read does not count.
        expired = threading.Event()
        late = f"timed out: no whole answer within {PUSH_DEADLINE:g} s"

        def expire() -> None:
            with self._cond:
                expired.set()
                if self._socket is not None:
                    with contextlib.suppress(OSError):
                        self._socket.shutdown(socket.SHUT_RDWR)

        deadline = threading.Timer(PUSH_DEADLINE, expire)
        deadline.daemon = True
        deadline.start()
        try:
            connection.connect()
            assert connection.sock is not None
            connection.sock.settimeout(READ_TIMEOUT)
            with self._cond:
                if self._stopping:
                    return False, "not sent: the simulator stopped"
                if expired.is_set():
                    return False, late
                self._socket = connection.sock
            connection.request("POST", target, body=body, headers=headers)
            answer = connection.getresponse()
            answer.read(_ANSWER)
            if expired.is_set():
                return False, late
            return 200 <= answer.status < 300, f"HTTP {answer.status}"
        except (OSError, http.client.HTTPException) as exc:
            return False, late if expired.is_set() else f"{type(exc).__name__}: {exc}"
        finally:
            deadline.cancel()
            deadline.join()
            with self._cond:
                self._socket = None
            connection.close()


def _event(job: SimulatedJob, ended: JobProgress) -> DeliveryNotification:
    return DeliveryNotification(
        account_id=job.user_id,
        reference_id=ended.reference_id,
        job_id=ended.job_id,
        status_id=int(ended.status),
        description=ended.description,
        page_count=ended.pages_sent,
        delivered_at=ended.delivered_at,
        duration_seconds=ended.duration,
        remote_csid=ended.remote_csid,
        # No failure codes are published: the status and its description tell the outcome.
        error_code=0,
        error_string="",
        image=_image(job) if ended.status is JobStatus.SUCCEEDED else None,
    )


def _image(job: SimulatedJob) -> bytes | None:
    assert job.details is not None
    if job.details.notify_include_delivered_image != 1 or not job.files:
        return None
    first = job.files[0]
    if first.size > MAX_IMAGE:
        return None
    try:
        return first.data
    except FileNotFoundError:  # forgotten meanwhile
        return None
