"""Raw HTTP for the simulator's tests: bytes written as given, what comes back read whole."""

from __future__ import annotations

import socket

from faxws.testing import FaxWSSimulator


def exchange(sim: FaxWSSimulator, data: bytes) -> bytes:
    """Send ``data`` and end the sending side; everything the simulator answers until it
    closes."""
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer
