"""The capture server itself: closing it never races its threads, and reads are time-bounded.

A server that closes a socket while its accept loop or a handler still uses it raises in that
thread (EBADF), which surfaces in whatever test happens to run next. These tests start and
close servers many times, in every state a test leaves them in, and fail on any exception a
server thread raises and on any thread a closed server leaves running. The tripwire, which
other tests trust to show that nothing opened an external resource, must see an open.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from conftest import CaptureServer, Tripwire, _read_request, http_reply, report_response

TRIALS = 300

Client = Callable[[CaptureServer, threading.Event], None]


@pytest.fixture
def thread_errors(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Exceptions raised in any thread during the test, recorded rather than printed."""
    errors: list[str] = []

    def record(args: threading.ExceptHookArgs) -> None:
        errors.append(f"{args.thread.name if args.thread else '?'}: {args.exc_value!r}")

    monkeypatch.setattr(threading, "excepthook", record)
    yield errors
    assert errors == []  # also what a thread raised after the test's own checks


def request(path: str = "/") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi".encode()


def nobody_connects(server: CaptureServer, held: threading.Event) -> None:
    pass


def one_exchange(server: CaptureServer, held: threading.Event) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request())
        with sock.makefile("rb") as answer:
            assert answer.read(15) == b"HTTP/1.1 200 OK"


def idle_connection(server: CaptureServer, held: threading.Event) -> None:
    """Connects and leaves the connection open, sending nothing, while the server closes."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    server.close()
    sock.close()


def held_connection(server: CaptureServer, held: threading.Event) -> None:
    """A request the server never answers (reply None), open while the server closes."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(request("/hold"))
    assert held.wait(30)
    server.close()
    assert sock.recv(1) == b""  # closing the server ended the held connection
    sock.close()


def half_a_request(server: CaptureServer, held: threading.Event) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(b"POST / HTTP/1.1\r\nContent-Le")
    server.close()
    sock.close()


def connect_and_leave(server: CaptureServer, held: threading.Event) -> None:
    """Connects and hangs up at once: the server may accept it before or after close()."""
    socket.create_connection(("127.0.0.1", server.port), timeout=30).close()


def replying(held: threading.Event) -> Callable[[bytes], bytes | None]:
    """Answers every request but one to /hold, which it holds open and then sets ``held``."""

    def reply(raw: bytes) -> bytes | None:
        if raw.startswith(b"POST /hold "):
            held.set()
            return None
        return http_reply(report_response())

    return reply


@pytest.mark.parametrize(
    "client",
    [
        nobody_connects,
        one_exchange,
        idle_connection,
        held_connection,
        half_a_request,
        connect_and_leave,
    ],
)
def test_create_and_close_never_raises_in_a_thread_nor_leaves_one(
    thread_errors: list[str], client: Client
) -> None:
    before = set(threading.enumerate())
    for _ in range(TRIALS):
        held = threading.Event()
        server = CaptureServer(replying(held))
        client(server, held)
        server.close()
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert thread_errors == []
    assert left == []


def test_close_twice_is_harmless(thread_errors: list[str]) -> None:
    server = CaptureServer(replying(threading.Event()))
    one_exchange(server, threading.Event())
    server.close()
    server.close()
    assert server.captured.connections == 1
    assert len(server.captured.requests) == 1
    assert thread_errors == []


def test_a_request_that_drips_forever_times_out() -> None:
    """The time-out bounds the whole request, not each receive: a peer that sends a byte now
    and then cannot keep a handler reading for longer than it."""
    reader, writer = socket.socketpair()
    stop = threading.Event()

    def drip() -> None:
        try:
            for byte in b"POST / HTTP/1.1\r\nX-Slow: " + b"x" * 10_000:
                if stop.wait(0.02):
                    return
                writer.sendall(bytes([byte]))
        except OSError:
            return  # the reader hung up

    dripper = threading.Thread(target=drip)
    dripper.start()
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            _read_request(reader, timeout=0.5)
        # Bounded by the whole-request time-out, not by the 200 s the drip would take.
        assert time.monotonic() - started < 60
    finally:
        stop.set()
        dripper.join()
        reader.close()
        writer.close()


def test_the_tripwire_sees_an_open_and_only_an_open(tripwire: Tripwire) -> None:
    with tripwire.path.open("rb") as reader:  # what a parser loading the resource does
        assert reader.read() == b'<!ENTITY e "TRIPPED">'
    tripwire.close()
    assert tripwire.opened is True


def test_an_untouched_tripwire_stays_unopened(tripwire: Tripwire) -> None:
    tripwire.close()
    assert tripwire.opened is False
