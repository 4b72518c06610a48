"""The event stream (GET /api/events): a change is told at once, changes close together once;
a stream ends when its client goes away and at stop(), at once; streams are bounded and never
hold up the service."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import requests
from event_stream import EventStream

from faxws import FaxClient, FaxFile, FileType
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator, ManualClock, _events

PDF = b"%PDF-1.4 one page"


def send(sim: FaxWSSimulator) -> None:
    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
        c.send_fax(["+1 555 0100"], [FaxFile(PDF, FileType.PDF)])


@pytest.fixture
def slow_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streams that look for a gone client, or speak unasked, only once a minute: what ends
    them sooner is what a test shows."""
    monkeypatch.setattr(_events, "CHECK", 60.0)
    monkeypatch.setattr(_events, "HEARTBEAT", 60.0)
    monkeypatch.setattr(_events, "_COALESCE", 0.0)  # straight on to waiting for a change


def stream_thread(sim: FaxWSSimulator, before: set[threading.Thread]) -> threading.Thread:
    with sim._lock:
        new = sim._threads - before
    assert len(new) == 1
    return new.pop()


def test_every_change_is_told_with_a_new_version() -> None:
    clock = ManualClock()
    with FaxWSSimulator(clock=clock) as sim, EventStream(sim.port) as stream:
        assert stream.status == 200
        assert "Cache-Control: no-store" in stream.head
        assert stream.next_block() == "retry: 1000"
        name, data = stream.next_event()
        assert name == "change"
        instance, _, first = data["version"].partition("-")
        seen = {int(first)}
        for change in (
            lambda: send(sim),
            lambda: sim.inject(Fault.html_500()),
            lambda: clock.advance(1),
            lambda: requests.delete(
                sim.url + "/api/jobs/1", headers={"X-FaxWS-Client": "t"}, timeout=30
            ),
        ):
            change()
            name, data = stream.next_event()
            assert name == "change"
            mine, _, version = data["version"].partition("-")
            assert mine == instance
            assert int(version) not in seen
            seen.add(int(version))


def test_stop_ends_a_stream_whose_client_went_away(slow_checks: None) -> None:
    # The stream finds its client gone at its next check (once a second by default); made
    # to wait a minute here, it must be stop() that ends the stream.
    with FaxWSSimulator() as sim:
        with sim._lock:
            before = set(sim._threads)
        stream = EventStream(sim.port)
        stream.next_event()
        thread = stream_thread(sim, before)
        stream.close()
        assert thread.is_alive()  # a minute to notice, or the simulator's stop
        started = time.monotonic()
    thread.join(30)
    assert not thread.is_alive()
    assert time.monotonic() - started < 30


def test_a_gone_client_is_noticed_within_a_check() -> None:
    with FaxWSSimulator() as sim:
        with sim._lock:
            before = set(sim._threads)
        stream = EventStream(sim.port)
        stream.next_event()
        thread = stream_thread(sim, before)
        stream.close()
        thread.join(_events.CHECK * 10)  # not the heartbeat's 15 s
        assert not thread.is_alive()
        assert sim._streams == 0


def test_stop_ends_every_stream_at_once(slow_checks: None) -> None:
    sim = FaxWSSimulator().start()
    streams = [EventStream(sim.port) for _ in range(3)]
    try:
        for stream in streams:
            stream.next_event()
        started = time.monotonic()
        sim.stop()  # raises RuntimeError for a thread that did not end within 60 s
        assert time.monotonic() - started < 10
        assert all(stream.ended() for stream in streams)
    finally:
        for stream in streams:
            stream.close()


@pytest.fixture
def two_streams(monkeypatch: pytest.MonkeyPatch) -> Iterator[FaxWSSimulator]:
    monkeypatch.setattr(_events, "MAX_STREAMS", 2)
    with FaxWSSimulator() as sim:
        yield sim


def test_streams_are_bounded_and_never_hold_up_the_service(two_streams: FaxWSSimulator) -> None:
    sim = two_streams
    with sim._lock:
        before = set(sim._threads)
    first = EventStream(sim.port)
    first.next_event()
    first_thread = stream_thread(sim, before)
    with EventStream(sim.port) as second:
        second.next_event()
        third = requests.get(sim.url + "/api/events", timeout=30)
        assert (third.status_code, third.json(), third.headers["Retry-After"]) == (
            503,
            {"error": "at most 2 event streams are served at once"},
            "5",
        )
        # Keep-alive connections and the service go on beside the streams.
        with requests.Session() as session:
            for _ in range(3):
                send(sim)
                assert session.get(sim.url + "/api/jobs", timeout=30).json()["total"] >= 1
        first.close()
        first_thread.join(_events.CHECK * 10)
        assert not first_thread.is_alive()
        with EventStream(sim.port) as again:
            assert again.status == 200
            again.next_event()


def test_changes_close_together_are_told_once(
    faxws_simulator: FaxWSSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_events, "_COALESCE", 3.0)  # room for a burst, on any machine
    state = faxws_simulator._state
    with EventStream(faxws_simulator.port) as stream:
        stream.next_event()
        for _ in range(20):
            state.touch()
        burst = state.version
        _, data = stream.next_event()
        assert data["version"] == f"{state.instance}-{burst}"  # the twenty as one


def test_the_stream_is_neither_recorded_nor_logged(
    faxws_simulator: FaxWSSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="faxws.simulator")
    with EventStream(faxws_simulator.port) as stream:
        stream.next_event()
    assert faxws_simulator.requests == []
    assert [r for r in caplog.records if r.name == "faxws.simulator"] == []
