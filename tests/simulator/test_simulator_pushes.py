"""Completion pushes: when a job that asked for an HTTP POST push ends, the simulator posts
its outcome to the job's NotifyDestination as the vendor does, with the job's HTTP Basic
credentials, from a background thread that retries a failing receiver and records each
attempt on the job. A real receiver listens on 127.0.0.1 in each test."""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus
from xml.sax.saxutils import escape

import pytest
import requests
from simulated_calls import START, cancel, job_ids, move_to, pdf, send_ex, simple_status

from faxws._protocol.redact import secret_forms
from faxws.notifications import DeliveryNotification, parse_notification
from faxws.testing import FaxWSSimulator, ManualClock, PushRecord, _pushes

PASSWORD = "s3cret-Push!"
DAY = 86400.0
PUSH = {"notify_type": 3, "reference_id": "R-7"}


class _Server(HTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a push the simulator cut off at its stop


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps each request it gets and answers with the
    statuses given, in turn (the last one again and again)."""

    def __init__(self, *statuses: int, hold: threading.Event | None = None) -> None:
        self.statuses = list(statuses or (204,))
        self.requests: queue.Queue[tuple[str, dict[str, str], bytes]] = queue.Queue()
        received = self.requests
        answers = self.statuses

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.put((self.path, dict(self.headers.items()), body))
                if hold is not None:
                    hold.wait(30)
                status = answers.pop(0) if len(answers) > 1 else answers[0]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(30)
        assert not self.thread.is_alive()

    def push(self, timeout: float = 30) -> tuple[str, dict[str, str], bytes]:
        return self.requests.get(timeout=timeout)

    def event(self, credentials: tuple[str, str] | None = None) -> DeliveryNotification:
        _, headers, body = self.push()
        return parse_notification(body, headers, credentials=credentials)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def sim(clock: ManualClock) -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator(clock=clock) as started:
        yield started


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as started:
        yield started


def settle(sim: FaxWSSimulator) -> None:
    assert sim.wait_for_pushes(timeout=30)


def push_of(sim: FaxWSSimulator, job_id: str) -> PushRecord | None:
    progress = sim.progress(job_id)
    assert progress is not None
    return progress.push


def test_a_push_goes_out_with_its_credentials_once_the_job_ends(
    sim: FaxWSSimulator, clock: ManualClock, receiver: Receiver
) -> None:
    (job_id,) = job_ids(
        send_ex(
            sim,
            "+1 555 0100",
            notify_destination=f"{receiver.url}/hook?site=7",
            notify_auth_user="hook",
            notify_auth_password=PASSWORD,
            **PUSH,
        )
    )
    clock.advance(4)  # not yet ended: 16 of 17 simulated seconds
    settle(sim)
    assert receiver.requests.empty()
    assert push_of(sim, job_id) == PushRecord("pending")
    clock.advance(0.25)
    settle(sim)
    path, headers, body = receiver.push()
    assert path == "/hook?site=7"
    event = parse_notification(body, headers, credentials=("hook", PASSWORD))
    assert event == DeliveryNotification(
        account_id="mbx0000000000",
        reference_id="R-7",
        job_id=job_id,
        status_id=1,
        description="Delivered",
        page_count=1,
        delivered_at=datetime(2030, 1, 2, 3, 4, 9, tzinfo=timezone.utc),  # START + 17 s / 4
        duration_seconds=15,
        remote_csid="+15550100",
        error_code=0,
        error_string="",
    )
    assert event.flavour == "form"
    assert push_of(sim, job_id) == PushRecord("delivered", 1, "HTTP 204", START + 4.25)
    clock.advance(DAY)
    settle(sim)
    assert receiver.requests.empty()  # once


def test_without_credentials_a_push_has_no_authorization(
    sim: FaxWSSimulator, clock: ManualClock, receiver: Receiver
) -> None:
    send_ex(sim, "+1 555 0100", notify_destination=receiver.url, **PUSH)
    clock.advance(5)
    settle(sim)
    _, headers, body = receiver.push()
    assert "Authorization" not in headers
    assert parse_notification(body, headers).status_id == 1


def test_the_delivered_image_is_the_first_document_sent_as_multipart(
    sim: FaxWSSimulator, clock: ManualClock, receiver: Receiver
) -> None:
    document = pdf(2)
    delivered, rejected = job_ids(
        send_ex(
            sim,
            "+1 555 0100",
            "+1 500 555 0006",
            documents=(document, b"second"),
            notify_destination=receiver.url,
            notify_include_delivered_image=1,
            **PUSH,
        )
    )
    clock.advance(DAY)
    settle(sim)
    first, second = receiver.event(), receiver.event()
    assert (first.job_id, first.status_id, first.description) == (
        rejected,
        2,
        "Failed: the number is not a fax machine",
    )
    assert (first.image, first.flavour, first.delivered_at) == (None, "form", None)
    assert (second.job_id, second.status_id, second.page_count) == (delivered, 1, 3)
    assert (second.image, second.flavour) == (document, "multipart")


def test_a_cancel_is_pushed_at_once(
    sim: FaxWSSimulator, clock: ManualClock, receiver: Receiver
) -> None:
    (job_id,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=receiver.url, **PUSH))
    clock.advance(1)
    assert cancel(sim, job_id).return_ is True
    settle(sim)
    event = receiver.event()
    assert (event.status_id, event.description, event.page_count) == (2, "Cancelled", 0)


def test_a_failing_receiver_is_tried_again_with_backoff_then_given_up(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    with Receiver(500) as failing:
        (job_id,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=failing.url, **PUSH))
        move_to(clock, 5)
        settle(sim)
        attempts = [push_of(sim, job_id)]
        for at in (6, 8, 12):  # 1, 2 and 4 seconds after each failed attempt
            move_to(clock, at - 0.01)
            settle(sim)
            assert push_of(sim, job_id) == attempts[-1]  # not yet
            move_to(clock, at)
            settle(sim)
            attempts.append(push_of(sim, job_id))
        clock.advance(DAY)
        settle(sim)
        assert failing.requests.qsize() == 4
    at = START + 5
    assert attempts == [
        PushRecord("pending", 1, "HTTP 500", at, at + 1),
        PushRecord("pending", 2, "HTTP 500", at + 1, at + 3),
        PushRecord("pending", 3, "HTTP 500", at + 3, at + 7),
        PushRecord("failed", 4, "HTTP 500", at + 7),
    ]
    shown = requests.get(f"{sim.url}/api/jobs/{job_id}", timeout=30).json()
    assert shown["recipients"][0]["push"] == {
        "state": "failed",
        "attempts": 4,
        "result": "HTTP 500",
        "at": "2030-01-02T03:04:17.000Z",
        "next_at": None,
    }
    assert "push failed (HTTP 500)" in requests.get(sim.url + "/", timeout=30).text


def test_a_receiver_that_recovers_gets_the_push_and_one_that_is_gone_is_recorded(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    with Receiver(503, 503, 200) as recovering:
        (job_id,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=recovering.url, **PUSH))
        for step in (5, 1, 2):
            clock.advance(step)
            settle(sim)
        assert push_of(sim, job_id) == PushRecord("delivered", 3, "HTTP 200", START + 8)
    gone = recovering.url  # closed: nothing listens there now
    (lost,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=gone, **PUSH))
    clock.advance(5)
    settle(sim)
    record = push_of(sim, lost)
    assert record is not None
    assert (record.state, record.attempts) == ("pending", 1)
    assert record.result.startswith("ConnectionRefusedError: ")


SKIPPED = PushRecord(
    "skipped",
    result="NotifyDestination is not an http(s) URL (account URL templates are not simulated)",
)


@pytest.mark.parametrize(
    ("kind", "destination", "push"),
    [
        (3, "hooks.example.test", SKIPPED),
        (3, "ftp://example.test/", SKIPPED),
        (3, "http://:80/", SKIPPED),
        (3, "http://127.0.0.1:port/", SKIPPED),
        (1, "ops@example.test", None),
        (2, "http://127.0.0.1:9/", None),
        (0, "http://127.0.0.1:9/", None),
    ],
    ids=["a-host-name", "another-scheme", "no-host", "bad-port", "email", "http-get", "none"],
)
def test_only_http_post_to_an_http_url_is_pushed(
    sim: FaxWSSimulator, clock: ManualClock, kind: int, destination: str, push: PushRecord | None
) -> None:
    (job_id,) = job_ids(
        send_ex(sim, "+1 555 0100", notify_type=kind, notify_destination=destination)
    )
    clock.advance(5)
    settle(sim)
    assert push_of(sim, job_id) == push


def test_a_user_name_basic_cannot_carry_fails_the_push_at_once(
    sim: FaxWSSimulator, clock: ManualClock, receiver: Receiver
) -> None:
    (job_id,) = job_ids(
        send_ex(sim, "+1 555 0100", notify_destination=receiver.url, notify_auth_user="a:b", **PUSH)
    )
    clock.advance(5)
    settle(sim)
    record = push_of(sim, job_id)
    assert record is not None
    assert (record.state, record.attempts) == ("failed", 1)
    assert record.result.startswith("not sent: credentials")
    assert receiver.requests.empty()


def test_a_pending_push_goes_out_after_a_restart(tmp_path: Path, receiver: Receiver) -> None:
    db = tmp_path / "inbox.sqlite"
    clock = ManualClock(START)
    with FaxWSSimulator(db=db, clock=clock) as sim:
        done, later = job_ids(
            send_ex(
                sim,
                "+1 555 0100",
                "+1 500 555 0001",  # busy: retried 5 minutes apart
                notify_destination=receiver.url,
                notify_auth_user="hook",
                notify_auth_password=PASSWORD,
                **PUSH,
            )
        )
        clock.advance(5)
        settle(sim)
        assert receiver.event().job_id == done
    clock.advance(DAY)  # the busy line's life ends while the simulator is down
    with FaxWSSimulator(db=db, clock=clock) as sim:
        settle(sim)
        _, headers, body = receiver.push()
        event = parse_notification(body, headers, credentials=("hook", PASSWORD))
        assert (event.job_id, event.description) == (later, "Failed: the line was busy")
        assert simple_status(sim, later) == 2
        assert push_of(sim, done) == PushRecord("delivered", 1, "HTTP 204", START + 5)
    assert receiver.requests.empty()  # nothing went out twice


def test_a_real_clock_pushes_when_the_job_ends(receiver: Receiver) -> None:
    with FaxWSSimulator(time_scale=1000) as sim:
        (job_id,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=receiver.url, **PUSH))
        _, headers, body = receiver.push(timeout=30)  # 17 ms after the send
        assert parse_notification(body, headers).job_id == job_id


def test_stop_cuts_off_a_push_under_way_and_joins_its_thread(
    clock: ManualClock,
) -> None:
    hold = threading.Event()
    with Receiver(hold=hold) as hanging:
        before = set(threading.enumerate())
        sim = FaxWSSimulator(clock=clock).start()
        try:
            send_ex(sim, "+1 555 0100", notify_destination=hanging.url, **PUSH)
            clock.advance(5)
            hanging.push()  # the push is under way, its answer held back
            started = time.monotonic()
        finally:
            sim.stop()
        assert time.monotonic() - started < 5  # not the read time-out
        assert set(threading.enumerate()) <= before  # every thread it started ended
        hold.set()


def test_the_push_password_is_never_shown(
    sim: FaxWSSimulator,
    clock: ManualClock,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    (job_id,) = job_ids(
        send_ex(
            sim,
            "+1 555 0100",
            notify_destination=receiver.url,
            notify_auth_user="hook",
            notify_auth_password=PASSWORD,
            **PUSH,
        )
    )
    clock.advance(5)
    settle(sim)
    _, headers, body = receiver.push()
    parse_notification(body, headers, credentials=("hook", PASSWORD))  # it was sent
    shown = [
        repr(sim.jobs),
        repr(sim.requests),
        repr(sim.progress(job_id)),
        caplog.text,
        *(
            requests.get(sim.url + path, timeout=30).text
            for path in ("/", "/jobs/1", "/jobs/1/progress", "/api/jobs", "/api/requests")
        ),
    ]
    assert f"push {job_id} attempt 1: HTTP 204" in caplog.text
    for text in shown:
        assert PASSWORD not in text
    job = sim.jobs[0]
    assert job.details is not None
    assert job.details.notify_auth_password == "***"


MARKED = "s3cret&<Push> +"  # XML escapes it in the request, URLs percent-encode it


def test_the_push_password_is_masked_in_the_destination_and_the_destinations_user_info(
    sim: FaxWSSimulator,
    clock: ManualClock,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The password as a receiver may also want it, in the destination's user information
    or query: the simulator shows neither, in any spelling, and pushes to the destination
    as given."""
    caplog.set_level(logging.DEBUG)
    host = receiver.url.removeprefix("http://")
    encoded = quote(MARKED, safe="")
    destinations = [
        f"http://hook:{encoded}@{host}/hook",
        f"http://{host}/hook?pw={encoded}",
        f"http://{host}/hook?pw={quote_plus(MARKED)}",
    ]
    for destination in destinations:
        send_ex(
            sim,
            "+1 555 0100",
            notify_destination=destination,
            notify_auth_user="hook",
            notify_auth_password=MARKED,
            **PUSH,
        )
    clock.advance(5)
    settle(sim)
    paths = sorted(receiver.push()[0] for _ in destinations)
    assert paths == sorted(["/hook", f"/hook?pw={encoded}", f"/hook?pw={quote_plus(MARKED)}"])
    pages = ["/", "/api/jobs", "/api/requests"]
    pages += [f"/jobs/{n}" for n in (1, 2, 3)] + [f"/api/jobs/{n}" for n in (1, 2, 3)]
    shown = {path: requests.get(sim.url + path, timeout=30).text for path in pages}
    shown |= {"jobs": repr(sim.jobs), "requests": repr(sim.requests), "log": caplog.text}
    spellings = {*secret_forms(MARKED), quote(MARKED), quote_plus(MARKED), escape(MARKED)}
    for where, text in shown.items():
        for spelling in spellings | {"s3cret"}:
            assert spelling not in text, (where, spelling)
        assert "hook:" not in text.replace("hook://", ""), where
    assert "http://***@" in shown["/api/jobs"]
    assert "http://***@" in shown["/jobs/1"]
    assert "?pw=***" in shown["/api/jobs/2"]
    details = sim.jobs[0].details
    assert details is not None
    assert details.notify_destination == destinations[0]  # kept as given, for the push


class Trickler:
    """A receiver on 127.0.0.1 that reads a request and answers 200 a byte at a time,
    ``pause`` seconds apart, headers first: the whole answer takes ``len(ANSWER) * pause``."""

    ANSWER = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100 + b"\r\nContent-Length: 0\r\n\r\n"

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(30)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/"

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            connection, _ = self.listener.accept()
            with connection:
                connection.settimeout(30)
                connection.recv(65536)
                for byte in self.ANSWER:
                    if self.done.wait(self.pause):  # a slow peer, not a synchronisation
                        return
                    connection.sendall(bytes([byte]))

    def __enter__(self) -> Trickler:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.done.set()
        self.listener.close()
        self.thread.join(30)
        assert not self.thread.is_alive()


def test_a_receiver_trickling_its_answer_is_cut_off_and_holds_back_no_other_push(
    sim: FaxWSSimulator,
    clock: ManualClock,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each read of the answer is quick, but the whole of it would take 5 s: the attempt
    ends at its deadline, and the next job's push goes out then."""
    monkeypatch.setattr(_pushes, "PUSH_DEADLINE", 0.5)
    with Trickler(pause=0.05) as slow:
        (slow_id,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=slow.url, **PUSH))
        (good_id,) = job_ids(send_ex(sim, "+1 555 0100", notify_destination=receiver.url, **PUSH))
        started = time.monotonic()
        clock.advance(5)
        settle(sim)
        elapsed = time.monotonic() - started
    assert receiver.push()[0] == "/"
    slow_push, good_push = push_of(sim, slow_id), push_of(sim, good_id)
    assert slow_push is not None
    assert good_push is not None
    assert (slow_push.state, slow_push.attempts) == ("pending", 1)
    assert slow_push.result == "timed out: no whole answer within 0.5 s"
    assert (good_push.state, good_push.result) == ("delivered", "HTTP 204")
    assert elapsed < 4  # not the 5 s of the whole answer


def test_an_error_quoting_the_destination_is_recorded_with_the_password_masked(
    sim: FaxWSSimulator, clock: ManualClock, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    (job_id,) = job_ids(
        send_ex(
            sim,
            "+1 555 0100",
            notify_destination=f"{receiver.url}/hook?pw={MARKED}",  # spaces: no valid request
            notify_auth_password=MARKED,
            **PUSH,
        )
    )
    clock.advance(5)
    settle(sim)
    record = push_of(sim, job_id)
    assert record is not None
    assert record.result.startswith("InvalidURL: ")
    assert "/hook?pw=***" in record.result
    for text in (record.result, caplog.text, requests.get(sim.url + "/api/jobs", timeout=30).text):
        assert "s3cret" not in text
