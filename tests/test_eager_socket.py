"""Eager sockets (faxws._eager_socket) keep Python's time-outs, over real TCP.

Each case runs twice on a connected loopback pair: once with a plain socket (Python's
time-out: a poll before each read and write) and once with an ``EagerSocket``; both must give
the same result or the same error. Then what an eager socket saves: no poll when a read or a
write need not wait.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from faxws import _eager_socket
from faxws._eager_socket import EAGER_SOCKETS, EagerSocket

pytestmark = pytest.mark.skipif(not EAGER_SOCKETS, reason="needs select.poll")

SHORT = 0.2  # seconds a case waits for nothing to arrive


def _connected() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ours = socket.create_connection(listener.getsockname(), timeout=5)
        peer, _ = listener.accept()
    return ours, peer


@pytest.fixture(params=["python", "eager"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[socket.socket, socket.socket]]:
    """(ours, the peer): ours connected over loopback TCP, of the kind under test."""
    ours, peer = _connected()
    if request.param == "eager":
        ours = EagerSocket.taking_over(ours)
    try:
        yield ours, peer
    finally:
        ours.close()
        peer.close()


def _waited(action: Callable[[], Any]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        action()
    except Exception as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


def _timed_out_once(waited: float, exc: BaseException | None, limit: float = SHORT) -> None:
    """``exc`` is Python's time-out, alone, after about ``limit`` seconds (not twice that)."""
    assert type(exc) is TimeoutError
    assert str(exc) == "timed out"
    assert exc.__context__ is None  # nothing chained to what happened underneath
    assert limit * 0.9 <= waited < 5


@contextlib.contextmanager
def _alarms(handler: Callable[..., None], delay: float, interval: float = 0) -> Iterator[None]:
    """SIGALRM to ``handler`` after ``delay`` seconds (then every ``interval``), until the
    block ends; the previous handler back then."""
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, delay, interval)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _read_what_comes(ours: socket.socket, peer: socket.socket, data: bytes) -> bytes:
    """What ``ours`` reads while ``peer`` sends ``data`` from another thread."""
    sender = threading.Thread(target=peer.sendall, args=(data,))
    sender.start()
    try:
        return ours.recv(len(data))
    finally:
        sender.join()


def _small_buffers(ours: socket.socket) -> None:
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)


READS: dict[str, Callable[[socket.socket], Any]] = {
    "recv": lambda sock: sock.recv(10),
    "recv_into": lambda sock: sock.recv_into(bytearray(10)),
    "recvfrom": lambda sock: sock.recvfrom(10),
    "recvfrom_into": lambda sock: sock.recvfrom_into(bytearray(10)),
}
if hasattr(socket.socket, "recvmsg"):
    READS["recvmsg"] = lambda sock: sock.recvmsg(10)
    READS["recvmsg_into"] = lambda sock: sock.recvmsg_into([bytearray(10)])


@pytest.mark.parametrize("method", sorted(READS))
def test_a_read_with_nothing_to_read_times_out(
    pair: tuple[socket.socket, socket.socket], method: str
) -> None:
    ours, _ = pair
    ours.settimeout(SHORT)
    _timed_out_once(*_waited(lambda: READS[method](ours)))


WRITES: dict[str, Callable[[socket.socket, bytes], Any]] = {
    "send": lambda sock, data: sock.send(data),
    "sendall": lambda sock, data: sock.sendall(data),
}
if hasattr(socket.socket, "sendmsg"):
    WRITES["sendmsg"] = lambda sock, data: sock.sendmsg([data])


@pytest.mark.parametrize("method", sorted(WRITES))
def test_a_write_with_no_room_times_out(
    pair: tuple[socket.socket, socket.socket], method: str
) -> None:
    ours, _ = pair
    _small_buffers(ours)
    ours.settimeout(SHORT)
    while True:  # until the buffers are full: then one wait of the time-out
        waited, exc = _waited(lambda: WRITES[method](ours, b"x" * 65536))
        if exc is not None:
            break
    _timed_out_once(waited, exc)


def test_a_buffered_file_reading_past_a_time_out_fails_as_pythons(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = pair
    ours.settimeout(SHORT)
    reader = ours.makefile("rb")
    with pytest.raises(TimeoutError, match=r"^timed out$"):
        reader.read(1)
    # socket.SocketIO remembers the time-out and refuses to read on.
    with pytest.raises(OSError, match="cannot read from timed out object"):
        reader.read(1)
    reader.close()


def test_a_read_gives_what_arrived_and_then_the_end(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, peer = pair
    ours.settimeout(5)
    peer.sendall(b"hello")
    assert ours.recv(5) == b"hello"
    peer.shutdown(socket.SHUT_WR)
    assert ours.recv(5) == b""


def test_a_read_waits_for_what_comes_later(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    ours.settimeout(30)
    assert _read_what_comes(ours, peer, b"later") == b"later"


def test_a_reset_is_the_same_error(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    ours.settimeout(5)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    peer.close()
    with pytest.raises(ConnectionResetError):
        ours.recv(1)


def test_a_write_takes_what_fits_without_waiting(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    _small_buffers(ours)
    ours.settimeout(30)
    waited, exc = _waited(lambda: ours.send(b"x" * (32 << 20)))
    assert exc is None
    assert waited < 5  # not the time-out: what fitted went, and send returned


def test_sendall_to_a_peer_that_does_not_read_times_out(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = pair
    ours.settimeout(SHORT)
    _timed_out_once(*_waited(lambda: ours.sendall(b"\0" * (32 << 20))))


def test_a_timed_out_sendall_leaves_the_callers_buffer_free(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = pair
    ours.settimeout(SHORT)
    data = bytearray(32 << 20)
    with pytest.raises(TimeoutError) as info:
        ours.sendall(data)
    # While the error (and its traceback) lives, no view of the data may: else BufferError.
    data.extend(b"more")
    assert info.value.__traceback__ is not None


def test_sendall_refuses_a_buffer_that_is_not_contiguous(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = pair
    with pytest.raises(BufferError):
        ours.sendall(memoryview(b"abcdef")[::2])


def test_a_time_out_longer_than_poll_takes_waits(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, peer = pair
    ours.settimeout(3e6)  # about 35 days: more milliseconds than poll() takes at once
    assert _read_what_comes(ours, peer, b"x") == b"x"


def test_sendall_sends_everything_to_a_peer_that_reads(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, peer = pair
    _small_buffers(ours)
    ours.settimeout(30)
    data = bytes(range(256)) * 4096  # 1 MiB, far more than fits at once
    received = bytearray()

    def read_all() -> None:
        while len(received) < len(data):
            chunk = peer.recv(65536)
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        ours.sendall(memoryview(data))
    finally:
        reader.join()
    assert bytes(received) == data


def test_a_new_time_out_holds_for_the_next_read(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    ours.settimeout(30)
    peer.sendall(b"a")
    assert ours.recv(1) == b"a"
    ours.settimeout(SHORT)
    waited, exc = _waited(lambda: ours.recv(1))
    assert type(exc) is TimeoutError
    assert waited < 5


def test_zero_is_non_blocking_and_none_blocks(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    ours.settimeout(0)
    assert ours.gettimeout() == 0.0
    assert ours.getblocking() is False
    with pytest.raises(BlockingIOError):
        ours.recv(1)
    ours.settimeout(None)
    assert ours.gettimeout() is None
    assert ours.getblocking() is True
    peer.sendall(b"b")
    assert ours.recv(1) == b"b"
    ours.setblocking(False)
    assert ours.gettimeout() == 0.0
    with pytest.raises(BlockingIOError):
        ours.recv(1)
    ours.setblocking(True)
    assert ours.gettimeout() is None
    ours.settimeout(SHORT)  # and back to a time-out
    assert type(_waited(lambda: ours.recv(1))[1]) is TimeoutError


def test_non_blocking_sendall_raises_when_the_buffers_are_full(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = pair
    _small_buffers(ours)
    ours.settimeout(0)
    with pytest.raises(BlockingIOError):
        ours.sendall(b"\0" * (32 << 20))


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, ValueError),
        (-0.5, ValueError),
        (float("nan"), ValueError),
        (float("inf"), OverflowError),
        (1e10, OverflowError),
        ("1", TypeError),
        (object(), TypeError),
    ],
)
def test_bad_time_outs_are_refused_as_python_refuses_them(
    pair: tuple[socket.socket, socket.socket], value: Any, error: type[Exception]
) -> None:
    ours, _ = pair
    ours.settimeout(3)
    with pytest.raises(error):
        ours.settimeout(value)
    assert ours.gettimeout() == 3.0


@pytest.mark.parametrize("value", [5, 2.5, None, 0.0, True])
def test_the_time_out_reads_back_as_set(
    pair: tuple[socket.socket, socket.socket], value: float | None
) -> None:
    ours, _ = pair
    ours.settimeout(value)
    assert ours.gettimeout() == value


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_signals_every_few_milliseconds_do_not_stretch_a_time_out(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """An interrupted wait goes on for the time left, not the whole time-out again: a wait
    of 0.3 s ends in about that time while signals come every 5 ms for 2 s, not after them."""
    ours, _ = pair
    ours.settimeout(0.3)
    ticks = 0

    def tick(*_: object) -> None:
        nonlocal ticks
        ticks += 1
        if ticks == 400:
            signal.setitimer(signal.ITIMER_REAL, 0)

    with _alarms(tick, 0.005, 0.005):
        waited, exc = _waited(lambda: ours.recv(1))
    assert type(exc) is TimeoutError
    assert ticks > 1
    assert waited < 1.5


class _InterruptedError(Exception):
    pass


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_what_a_signal_handler_raises_during_a_wait_comes_out_alone(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = pair
    ours.settimeout(30)

    def interrupt(*_: object) -> None:
        raise _InterruptedError

    with _alarms(interrupt, 0.05):
        waited, exc = _waited(lambda: ours.recv(1))
    assert type(exc) is _InterruptedError
    assert exc.__context__ is None
    assert waited < 10


# -- what an eager socket saves ----------------------------------------------------------------


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each wait an eager socket makes (the events it polls for)."""
    made: list[int] = []
    real = select.poll

    class Poll:
        def __init__(self) -> None:
            self._poll = real()

        def register(self, fd: Any, events: int) -> None:
            made.append(events)
            self._poll.register(fd, events)

        def poll(self, timeout: float | None = None) -> list[tuple[int, int]]:
            return self._poll.poll(timeout)

    monkeypatch.setattr(_eager_socket.select, "poll", Poll)
    return made


def test_no_poll_when_a_read_or_a_write_need_not_wait(polls: list[int]) -> None:
    plain, peer = _connected()
    with EagerSocket.taking_over(plain) as ours, peer:
        assert socket.socket.gettimeout(ours) == 0.0  # Python itself polls for nothing
        ours.settimeout(10)
        ours.sendall(b"request")
        ours.settimeout(60)
        assert peer.recv(7) == b"request"
        peer.sendall(b"answer")
        assert select.select([ours], [], [], 30)[0] == [ours]  # arrived: nothing to wait for
        assert ours.recv(6) == b"answer"
        assert polls == []
        ours.settimeout(SHORT)
        with pytest.raises(TimeoutError):
            ours.recv(1)  # nothing to read: then it polls
        assert polls == [select.POLLIN]


def test_taking_over_keeps_the_descriptor_and_the_time_out() -> None:
    plain, peer = _connected()
    plain.settimeout(7)
    fd = plain.fileno()
    with EagerSocket.taking_over(plain) as ours, peer:
        assert ours.fileno() == fd
        assert plain.fileno() == -1  # detached: closing it cannot close ours
        assert ours.gettimeout() == 7.0
        ours.sendall(b"ping")
        assert peer.recv(4) == b"ping"


def test_a_socket_closed_before_its_wait_is_a_bad_descriptor(polls: list[int]) -> None:
    """Closed by another thread between a read that found nothing and the wait: the error
    Python's own socket gives, not a ValueError about the descriptor."""
    plain, peer = _connected()
    ours = EagerSocket.taking_over(plain)
    ours.settimeout(5)
    real_wait = EagerSocket._wait

    def closed_first(self: EagerSocket, events: int, deadline: float | None) -> float | None:
        self.close()  # as another thread would, just then
        return real_wait(self, events, deadline)

    with peer, pytest.MonkeyPatch.context() as patch:
        patch.setattr(EagerSocket, "_wait", closed_first)
        with pytest.raises(OSError, match="Bad file descriptor") as info:
            ours.recv(1)
    assert info.value.errno == errno.EBADF
    assert polls == []


@pytest.mark.parametrize(
    "data",
    [b"", bytearray(), memoryview(b""), ((ctypes.c_int * 0) * 2)()],
    ids=["bytes", "array", "view", "empty two-dimensional"],
)
def test_sendall_of_nothing_still_reports_a_closed_connection(
    pair: tuple[socket.socket, socket.socket], data: Any
) -> None:
    ours, _ = pair
    ours.settimeout(5)
    ours.sendall(data)  # nothing to send: fine while open
    ours.shutdown(socket.SHUT_WR)
    with pytest.raises(BrokenPipeError):
        ours.sendall(data)
