"""An answer belongs to a request only if that request was written on that connection.

A server (or a middlebox) may write on a keep-alive connection while the client holds it idle
in its pool: a second, unsolicited answer, a ``408`` before it closes (as load balancers do at
their idle time-out), part of an answer, garbage, an empty line. Whatever it wrote, and
wherever it waits (in the kernel, or already read into the client's buffers), the next call
goes out on a new connection and gets its own answer, without using a retry: nothing of its
request was written to the spoiled one. The same holds for bytes that came in the same write
as the end of the last answer, but for empty lines there, which HTTP parsers skip between
answers (both clients do). Each case runs against both clients.

One outcome differs: garbage in the same read as the end of an answer makes aiohttp's parser
refuse the whole read, answer included, so the async client reports that call as failed and
maybe delivered (never as sent, never as not sent); the threaded client reads the answer and
drops the connection.
"""

from __future__ import annotations

import asyncio
import fcntl
import socket
import ssl
import struct
import tempfile
import termios
import threading
import time
from collections.abc import Callable

import pytest

from conftest import Face, send_response
from faxws import FaxFile, TransportError
from scripted import WAIT, Conn, ScriptedServer, reply

ANSWER_1 = reply(send_response(["J1"])).replace(b"Connection: close\r\n", b"")
ANSWER_2 = reply(send_response(["J2"]))

STALE_200 = reply(send_response(["J-STALE"])).replace(b"close", b"keep-alive")

#: What the server writes on the idle connection, and whether it then closes it.
STALE: dict[str, tuple[bytes, bool]] = {
    "a stale 200 answer": (
        reply(send_response(["J-STALE"])).replace(b"close", b"keep-alive"),
        False,
    ),
    "408 and close": (
        b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        True,
    ),
    "408, its close still to come": (
        b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        False,
    ),
    "part of an answer": (b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Le", False),
    "a whole head, its body still to come": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 400\r\n\r\n<soap:",
        False,
    ),
    "garbage": (b"\x00\xffnot http at all\r\n", False),
    "a bare CRLF": (b"\r\n", False),
}

#: When it writes it: with the end of the last answer, or later, while the connection is
#: idle (then the client either has not read it yet or, for the async client, has).
WHEN = ("with the answer", "while idle, unread", "while idle, read by the client")


def server_for(
    stale: bytes, close: bool, when: str, idle: threading.Event
) -> Callable[[Conn], None]:
    served = 0

    def script(conn: Conn) -> None:
        nonlocal served
        served += 1
        if served == 1:
            conn.read_request()
            if when == "with the answer":
                conn.send(ANSWER_1 + stale)
            else:
                conn.send(ANSWER_1)
                idle.wait(WAIT)  # the client has its answer and holds the connection idle
                conn.send(stale)
            conn.server.headers_read.set()  # (used here as: the stale bytes are written)
            if not close and conn.read_request() is not None:
                conn.send(ANSWER_2)  # the connection was kept: only the empty line may do that
            return
        conn.read_request()
        conn.send(ANSWER_2)

    return script


async def _let_the_loop_read() -> None:
    # Passes of the event loop, so that what arrived is read into aiohttp's buffers (the
    # outcome must be the same whether it was or not).
    for _ in range(20):
        await asyncio.sleep(0.005)


def call(client: object, rid: str) -> tuple[str, ...]:
    result = client.send_fax(  # type: ignore[attr-defined]
        ["+1 555 0100"], [FaxFile(b"%PDF-1.4 one page", 101)], rid
    )
    return tuple(result.job_ids)


@pytest.mark.parametrize("when", WHEN)
@pytest.mark.parametrize("case", sorted(STALE))
def test_what_arrives_on_an_idle_connection_is_never_taken_for_an_answer(
    case: str, when: str, serve: Callable[..., ScriptedServer], face: Face
) -> None:
    stale, close = STALE[case]
    idle = threading.Event()
    server = serve(server_for(stale, close, when, idle))
    client = face.client(server.url(), user_id="mbx-idle", pin="4321", retries=0, timeout=(5, 5))
    if face.is_async and case == "garbage" and when == "with the answer":
        with pytest.raises(TransportError) as info:
            call(client, "rid-1")
        assert info.value.maybe_delivered is True
    else:
        assert call(client, "rid-1") == ("J1",)
    idle.set()
    assert server.headers_read.wait(WAIT)
    if when == "while idle, read by the client" and face.is_async:
        face.run(_let_the_loop_read())
    assert call(client, "rid-2") == ("J2",)
    assert [r.header("x-ch-request-id") for r in server.requests] == ["rid-1", "rid-2"]
    kept = case == "a bare CRLF" and when == "with the answer"
    assert server.connections == (1 if kept else 2)


def test_bytes_that_arrive_after_the_pool_check_are_caught_before_the_first_write(
    serve: Callable[..., ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """urllib3 checks a connection when it leaves the pool; a thread may then wait for the
    interpreter lock before it writes. FaxClient looks again just before its first write:
    here the pool's check sees nothing (as if it ran before the stale answer came)."""
    import urllib3.connectionpool

    from faxws import FaxClient

    idle = threading.Event()
    server = serve(server_for(STALE_200, False, "while idle, unread", idle))
    client = FaxClient(server.url(), user_id="mbx-idle", pin="4321", retries=0, timeout=(5, 5))
    try:
        assert call(client, "rid-1") == ("J1",)
        idle.set()
        assert server.headers_read.wait(WAIT)
        monkeypatch.setattr(urllib3.connectionpool, "is_connection_dropped", lambda conn: False)
        assert call(client, "rid-2") == ("J2",)
    finally:
        client.close()
    assert [r.header("x-ch-request-id") for r in server.requests] == ["rid-1", "rid-2"]
    assert server.connections == 2


FAKE_ANSWER = reply(send_response(["J-NOT-YOURS"])).replace(b"close", b"keep-alive")


def unacknowledged(sock: socket.socket) -> int:
    """Bytes written to ``sock`` that its peer has not acknowledged yet (Linux's SIOCOUTQ)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_an_answer_sent_on_a_new_connection_before_its_request_is_never_taken(
    tls: bool, serve: Callable[..., ScriptedServer], face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server (or a middlebox) that answers as soon as a connection is open answers no
    request of the client's: the request goes out on a new connection and gets its own
    answer. The client is held until the early answer reached its socket."""
    import trustme

    from faxws._http import async_transport, sync_transport

    ca = trustme.CA()
    context = None
    if tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("localhost").configure_cert(context)
    sent_early = threading.Event()
    served = 0

    def script(conn: Conn) -> None:
        nonlocal served
        served += 1
        conn.handshake()
        if served == 1:
            conn.send(FAKE_ANSWER)
            # Until the client's end acknowledged every byte: then they are in its socket.
            deadline = time.monotonic() + WAIT
            while unacknowledged(conn.sock) and time.monotonic() < deadline:
                time.sleep(0.001)
            sent_early.set()
            conn.hold()
            return
        conn.read_request()
        conn.send(ANSWER_2)

    connect = sync_transport._RecordingConnection.connect

    def held_connect(self: object) -> None:
        connect(self)  # type: ignore[arg-type]
        assert sent_early.wait(WAIT)

    send = async_transport._Request.send

    async def held_send(self: object, conn: object) -> object:
        assert sent_early.wait(WAIT)
        return await send(self, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_transport._RecordingConnection, "connect", held_connect)
    monkeypatch.setattr(async_transport._Request, "send", held_send)
    server = serve(script, tls=context)
    with tempfile.TemporaryDirectory() as folder:
        verify: object = True
        if tls:
            verify = f"{folder}/ca.pem"
            ca.cert_pem.write_to_path(str(verify))
        client = face.client(
            server.url("localhost"),
            user_id="mbx-idle",
            pin="4321",
            retries=0,
            timeout=(5, 5),
            verify=verify,
        )
        assert call(client, "rid-1") == ("J2",)
    assert [r.header("x-ch-request-id") for r in server.requests] == ["rid-1"]
    assert server.connections == 2
