"""A scripted HTTP/1.1 server on a real socket, plain or TLS, for delivery and document tests.

One thread serves one connection at a time: it accepts, hands the connection to the test's
script, then closes it. The script decides what a hostile or broken server does: answer,
reset, send a TLS alert, stall the handshake, send interim responses, read half the body...
The server records every connection and every request it read (whole or cut short), and
``close()`` wakes and joins its thread before closing any socket the thread uses.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

#: Longest any server-side wait lasts; a test's client gives up long before.
WAIT = 30.0


@dataclass
class Received:
    """One request as the server read it."""

    head: bytes
    body: bytes
    complete: bool
    """False when the connection ended before Content-Length bytes of body arrived."""

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.lower().encode():
                return value.strip().decode()
        return None

    def documents(self) -> list[bytes]:
        """The decoded FileData of each file, in order (needs a complete body)."""
        import base64

        root = etree.fromstring(self.body)
        return [base64.b64decode(e.text or "") for e in root.iter("{urn:FaxWS}FileData")]


class Conn:
    """The server's side of one connection, as a script sees it."""

    def __init__(self, server: ScriptedServer, sock: socket.socket) -> None:
        self.server = server
        self.sock: socket.socket = sock
        self._buffer = b""
        sock.settimeout(WAIT)

    # -- connection set-up --
    def handshake(self) -> None:
        """Complete TLS when the server has a certificate (nothing for plain HTTP)."""
        if self.server.tls is not None:
            self.sock = self.server.tls.wrap_socket(self.sock, server_side=True)

    # -- reading --
    def _recv(self) -> bytes:
        if not self.server.wait_readable(self.sock):
            return b""
        try:
            return self.sock.recv(65536)
        except (OSError, ssl.SSLError):
            return b""

    def read_head(self) -> bytes | None:
        while b"\r\n\r\n" not in self._buffer:
            data = self._recv()
            if not data:
                return None
            self._buffer += data
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        return head

    def read_request(
        self, *, pause: threading.Event | None = None, keep: bool = True, interim: bytes = b""
    ) -> Received | None:
        """Read one request; with ``pause``, read the head and wait for the event before
        reading the body (so that the client is still sending when the test acts); with
        ``keep=False``, count the body's bytes without keeping them; ``interim`` is sent once
        the head is read, before the body is."""
        head = self.read_head()
        if head is None:
            return None
        if interim:
            self.send(interim)
        if pause is not None:
            self.server.headers_read.set()
            pause.wait(WAIT)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == b"content-length":
                length = int(value.strip())
        if not keep:
            got = len(self._buffer)
            while got < length:
                data = self._recv()
                if not data:
                    break
                got += len(data)
            self._buffer = b""
            received = Received(head, b"", complete=got >= length)
            self.server.received.append(received)
            return received
        body = self._buffer
        while len(body) < length:
            data = self._recv()
            if not data:
                break
            body += data
        self._buffer = body[length:]
        received = Received(head, body[:length], complete=len(body) >= length)
        self.server.received.append(received)
        return received

    # -- answering --
    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_raw(self, data: bytes) -> None:
        """Bytes on the TCP connection under TLS, bypassing the TLS layer."""
        os.write(self.sock.fileno(), data)

    def reset(self) -> None:
        """Close with a TCP reset."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def hold(self) -> None:
        """Say nothing until the client hangs up (or the server stops)."""
        while self._recv():
            pass


Script = Callable[[Conn], None]


class ScriptedServer:
    def __init__(
        self, script: Script, *, tls: ssl.SSLContext | None = None, rcvbuf: int | None = None
    ) -> None:
        self.script = script
        self.tls = tls
        self.connections = 0
        self.received: list[Received] = []
        self.errors: list[BaseException] = []
        self.headers_read = threading.Event()
        self.stopping = threading.Event()
        self._served = 0
        self._served_changed = threading.Condition()
        self._listener = socket.socket()
        if rcvbuf is not None:  # inherited by accepted sockets: the client blocks sooner
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._run, name="scripted-server")
        self._thread.start()

    @property
    def requests(self) -> list[Received]:
        """Requests read whole."""
        return [r for r in self.received if r.complete]

    def url(self, host: str = "127.0.0.1") -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host}:{self.port}"

    def wait_readable(self, sock: socket.socket) -> bool:
        """Wait until ``sock`` has data (or EOF); False when the server is stopping."""
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        ready, _, _ = select.select([sock, self._wake_r], [], [], WAIT)
        return sock in ready and self._wake_r not in ready

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self._listener, self._wake_r], [], [])
            if self._wake_r in ready:
                return
            sock, _ = self._listener.accept()
            self.connections += 1
            conn = Conn(self, sock)
            try:
                self.script(conn)
            except (OSError, ssl.SSLError):
                pass  # the client went away: what the script was testing, or a late write
            except BaseException as exc:
                self.errors.append(exc)
            finally:
                conn.sock.close()
                sock.close()
                with self._served_changed:
                    self._served += 1
                    self._served_changed.notify_all()

    def wait_served(self, count: int) -> None:
        """Wait until ``count`` connections were served to their end (the client may have
        given up while the server was still reading)."""
        with self._served_changed:
            assert self._served_changed.wait_for(lambda: self._served >= count, WAIT)

    def close(self) -> None:
        self.stopping.set()
        self._wake_w.send(b"x")
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the scripted server did not stop"
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        if self.errors:
            raise self.errors[0]


def reply(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/xml; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    ).encode() + body
