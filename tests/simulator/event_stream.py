"""A client of the simulator's event stream over a plain socket, for the tests: every read
has a time-out, and an event is read whole or the test fails."""

from __future__ import annotations

import json
import socket
from typing import Any


class EventStream:
    """``GET /api/events`` on a socket of its own: :attr:`head` (status line and headers)
    once open, then :meth:`next_event`."""

    def __init__(self, port: int, path: str = "/api/events", timeout: float = 30) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        self._buffer = b""
        self.head = self._until(b"\r\n\r\n").decode("latin-1")

    @property
    def status(self) -> int:
        return int(self.head.split(" ", 2)[1])

    def _until(self, end: bytes) -> bytes:
        while end not in self._buffer:
            chunk = self.sock.recv(4096)  # the socket's time-out bounds each read
            if not chunk:
                raise EOFError(f"the stream ended: {self._buffer!r}")
            self._buffer += chunk
        found, _, self._buffer = self._buffer.partition(end)
        return found

    def next_block(self) -> str:
        """The next block (an event, a comment or a retry field), without its blank line."""
        return self._until(b"\n\n").decode()

    def next_event(self) -> tuple[str, Any]:
        """The next event's name and data (JSON), skipping comments and fields."""
        while True:
            fields = dict(
                line.split(": ", 1) for line in self.next_block().splitlines() if ": " in line
            )
            if "event" in fields:
                return fields["event"], json.loads(fields["data"])

    def ended(self) -> bool:
        """Whether the server closed the stream (read until it does, within the time-out)."""
        try:
            while self.sock.recv(4096):
                pass
        except ConnectionResetError:
            pass
        return True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
