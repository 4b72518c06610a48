"""A plain TCP socket that reads and writes first and waits only when it must.

A socket with a Python time-out (``settimeout``) polls before every read and write, and every
``settimeout`` is an ``ioctl``; each of those system calls lets go of the GIL, a chance for a
waiting thread to take it and for this one to wait to get it back. urllib3 sets the connect
time-out before each request and the read time-out before each answer, so a call made four
such system calls besides its write and its read.

:class:`EagerSocket` keeps Python's meaning of a time-out with neither: its descriptor stays
non-blocking, ``settimeout`` only records the limit, and a read or write is tried at once;
only when it would block (no room to write, nothing yet to read) does it poll, for what is
left of the time-out, and try again, and when the time-out passes it raises
``TimeoutError("timed out")`` as Python's own does. A write takes what fits and returns; an
interrupted poll goes on for the time left (PEP 475), so signals cannot stretch a time-out.

For plain TCP only: the ssl module keeps the time-out of the socket it wraps itself (and
reads before it polls already). Where ``select.poll`` is missing (Windows), sockets keep
Python's time-outs.
"""

from __future__ import annotations

import errno
import math
import operator
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

__all__ = ["EAGER_SOCKETS", "EagerSocket"]

EAGER_SOCKETS = hasattr(select, "poll")

_READABLE = getattr(select, "POLLIN", 1)
_WRITABLE = getattr(select, "POLLOUT", 4)
_LONGEST_POLL = 2**31 - 1  # milliseconds poll() takes at most
# The base class's calls, looked up once: no super() on every read and write.
_recv_into = socket.socket.recv_into
_send = socket.socket.send


class EagerSocket(socket.socket):
    """A connected plain TCP socket whose reads and writes poll only when they would block.

    ``settimeout`` and ``gettimeout`` keep their meaning and make no system call; each call
    that reads or writes waits at most the time-out, as Python's do (``sendall`` for all of its
    data), then raises ``TimeoutError("timed out")``. A time-out of 0 is non-blocking:
    ``BlockingIOError`` at once. None waits as long as it takes. (``socket.dup`` gives
    another such socket; a descriptor copied with ``os.dup`` shares the non-blocking mode.
    It is made from a connected socket: ``connect`` and ``accept`` are not for it.)"""

    __slots__ = ("_limit",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        super().settimeout(0.0)  # non-blocking, whatever the descriptor was
        self._limit: float | None = None

    @classmethod
    def taking_over(cls, sock: socket.socket) -> EagerSocket:
        """The socket of ``sock``'s descriptor, with its time-out (``sock`` is detached)."""
        timeout = sock.gettimeout()
        fd = sock.detach()
        try:
            new = cls(sock.family, sock.type, sock.proto, fileno=fd)
        except BaseException:
            os.close(fd)
            raise
        new.settimeout(timeout)
        return new

    def settimeout(self, value: float | None) -> None:
        if value is not None:
            # As Python takes them: a float, or an integer (TypeError for anything else).
            value = value if isinstance(value, float) else float(operator.index(value))
            if not value >= 0:  # NaN too, as Python refuses it
                raise ValueError("Timeout value out of range")
            if value * 1e9 >= 2**63:  # as Python: its clock counts nanoseconds in 64 bits
                raise OverflowError("timestamp too large to convert to C _PyTime_t")
        self._limit = value

    def gettimeout(self) -> float | None:
        return self._limit

    def setblocking(self, flag: bool) -> None:
        self.settimeout(None if flag else 0.0)

    def getblocking(self) -> bool:
        return self._limit != 0

    # recv_into and send are what a call makes (http.client reads through recv_into): written
    # out, one frame fewer each. The waits come after the except clauses, so that what a wait
    # raises (the time-out, a signal handler's exception) is not chained to BlockingIOError.

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        deadline = None
        while True:
            try:
                return _recv_into(self, buffer, nbytes, flags)
            except BlockingIOError:
                if self._limit == 0:
                    raise
            deadline = self._wait(_READABLE, deadline)

    def send(self, data: Any, flags: int = 0) -> int:
        deadline = None
        while True:
            try:
                return _send(self, data, flags)
            except BlockingIOError:
                if self._limit == 0:
                    raise
            deadline = self._wait(_WRITABLE, deadline)

    def sendall(self, data: Any, flags: int = 0) -> None:
        # As Python's: the time-out bounds the whole of it, from the start.
        limit = self._limit
        deadline = None if not limit else time.monotonic() + limit
        with memoryview(data) as whole:
            if not whole.c_contiguous:
                raise BufferError("memoryview: underlying buffer is not C-contiguous")
            if not whole.nbytes:
                # As Python's: one write even of nothing, which reports a closed socket.
                self.send(b"", flags)
                return
            with whole.cast("B") as view:  # released however this ends: the caller's again
                sent, size = 0, len(view)
                while sent < size:
                    try:
                        sent += _send(self, view[sent:], flags)
                        continue
                    except BlockingIOError:
                        if limit == 0:
                            raise
                    deadline = self._wait(_WRITABLE, deadline)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        return self._io(super().recv, _READABLE, bufsize, flags)  # type: ignore[no-any-return]

    def recvfrom(self, bufsize: int, flags: int = 0) -> Any:
        return self._io(super().recvfrom, _READABLE, bufsize, flags)

    def recvfrom_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> Any:
        return self._io(super().recvfrom_into, _READABLE, buffer, nbytes, flags)

    def sendto(self, *args: Any) -> int:
        return self._io(super().sendto, _WRITABLE, *args)  # type: ignore[no-any-return]

    if hasattr(socket.socket, "recvmsg"):

        def recvmsg(self, *args: Any) -> Any:
            return self._io(super().recvmsg, _READABLE, *args)

        def recvmsg_into(self, *args: Any) -> Any:
            return self._io(super().recvmsg_into, _READABLE, *args)

        def sendmsg(self, *args: Any) -> int:
            return self._io(super().sendmsg, _WRITABLE, *args)  # type: ignore[no-any-return]

    def _io(self, call: Callable[..., Any], events: int, *args: Any) -> Any:
        """``call(*args)``, waiting for ``events`` whenever it would block."""
        deadline = None
        while True:
            try:
                return call(*args)
            except BlockingIOError:
                if self._limit == 0:
                    raise
            deadline = self._wait(events, deadline)

    def _wait(self, events: int, deadline: float | None) -> float | None:
        """Poll until the socket is ready for ``events`` (or has an error or a hang-up to
        report), within ``deadline`` (None: from now, the time-out); that deadline, for the
        next wait of the same call. TimeoutError once it has passed."""
        limit = self._limit
        if deadline is None and limit is not None:
            deadline = time.monotonic() + limit
        fd = self.fileno()
        if fd < 0:  # closed by another thread since the call began: as Python reports it
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        poller = select.poll()
        poller.register(fd, events)
        while True:
            wait = None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("timed out")
                wait = min(math.ceil(left * 1000), _LONGEST_POLL)  # then polls again
            if poller.poll(wait):
                return deadline
