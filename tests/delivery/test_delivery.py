"""``maybe_delivered`` comes from bytes written, over real sockets, plain TCP and TLS.

Every case runs a scripted server (tests/scripted.py) and a SendFax with retries allowed, from
each face (FaxClient and AsyncFaxClient):
after any byte of the request was written, the error says the fax may have been delivered and
the server saw exactly one request; before the first byte, it says nothing was sent and the
client tried again.
"""

from __future__ import annotations

import base64
import itertools
import logging
import select
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import trustme

from conftest import Face, report_response, send_response
from faxws import BadInputError, ConnectError, FaxFile, FaxWSError, RequestTimeoutError
from scripted import WAIT, Conn, ScriptedServer, reply

USER = "mbx-delivery"
RETRIES = 2


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return context


@pytest.fixture(scope="session")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def client_for(server: ScriptedServer, ca_file: str, face: Face, **kwargs: object) -> Any:
    options: dict[str, object] = {
        "user_id": USER,
        "pin": "4321",
        "retries": RETRIES,
        "retry_backoff": 0,
        "timeout": (5, 5),
        "verify": ca_file,
    }
    options.update(kwargs)
    return face.client(server.url("localhost"), **options)


def send(client: Any) -> object:
    return client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4 one page", 101)], "rid-d")


ANSWER = reply(send_response(["J1"]))
KEPT_ANSWER = ANSWER.replace(b"Connection: close\r\n", b"")  # keep-alive


# -- after the first byte: maybe delivered, never sent again ----------------------------------


def tls_alert_after_request(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send_raw(b"\x15\x03\x03\x00\x02\x02\x50")  # a fatal alert record, internal_error


def unclean_tls_close(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()  # then the TCP connection closes without close_notify


def clean_tls_close(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.sock.unwrap()  # type: ignore[attr-defined]


def reset_after_request(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.reset()


def close_after_request(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()


def garbage_status_line(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(b"HTPT/1.1 two hundred\r\n\r\n")


def interim_then_close(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(b"HTTP/1.1 102 Processing\r\n\r\n")


def endless_interim(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(b"HTTP/1.1 102 Processing\r\n\r\n" * 40 + ANSWER)


def interim_then_silence(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
    conn.hold()


def silence_after_request(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.hold()


def reset_mid_headers(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: te")
    conn.reset()


def truncated_body(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(ANSWER[:-20])


def endless_interim_headers(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(b"HTTP/1.1 103 Early Hints\r\n")
    while True:  # until the client gives up
        conn.send(b"Link: </a.css>; rel=preload\r\n")


def body_dripped(conn: Conn) -> None:
    """The head at once, then the body a byte every 50 ms."""
    conn.handshake()
    conn.read_request()
    head, _, body = ANSWER.partition(b"\r\n\r\n")
    conn.send(head + b"\r\n\r\n")
    for byte in body:
        conn.send(bytes([byte]))
        conn.server.stopping.wait(0.05)  # the server's pace, not a synchronization


def drip(data: bytes) -> Callable[[Conn], None]:
    """Sends ``data`` a byte at a time, a byte every 50 ms, for as long as the client
    listens (a slow-loris answer)."""

    def script(conn: Conn) -> None:
        conn.handshake()
        conn.read_request()
        for byte in data:
            conn.send(bytes([byte]))
            conn.server.stopping.wait(0.05)  # the server's pace, not a synchronization

    return script


AFTER_WRITE = {
    "tls alert after the request": (tls_alert_after_request, True, FaxWSError),
    "unclean tls close": (unclean_tls_close, True, FaxWSError),
    "clean tls close without an answer": (clean_tls_close, True, FaxWSError),
    "tcp reset after the request (tls)": (reset_after_request, True, FaxWSError),
    "tcp reset after the request": (reset_after_request, False, FaxWSError),
    "close without an answer": (close_after_request, False, FaxWSError),
    "garbage status line": (garbage_status_line, False, FaxWSError),
    "garbage status line (tls)": (garbage_status_line, True, FaxWSError),
    "interim 102 then close": (interim_then_close, False, FaxWSError),
    "more interim answers than allowed": (endless_interim, False, FaxWSError),
    "interim 103 then silence": (interim_then_silence, False, RequestTimeoutError),
    "silence after the request": (silence_after_request, True, RequestTimeoutError),
    "reset in the middle of the headers": (reset_mid_headers, False, FaxWSError),
    "truncated answer": (truncated_body, False, FaxWSError),
    "endless header lines after an interim answer": (endless_interim_headers, False, FaxWSError),
    "interim answer dripped": (
        drip(b"HTTP/1.1 102 Processing\r\nX-A: " + b"a" * 400 + b"\r\n\r\n"),
        False,
        RequestTimeoutError,
    ),
    "body dripped": (body_dripped, False, RequestTimeoutError),
    "final head dripped": (
        drip(reply(send_response(["J1"]), extra="X-Pad: " + "p" * 1000 + "\r\n")),
        True,
        RequestTimeoutError,
    ),
}


@pytest.mark.parametrize("case", sorted(AFTER_WRITE))
def test_failure_after_the_first_byte_is_maybe_delivered_and_never_resent(
    case: str,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    script, tls, error_type = AFTER_WRITE[case]
    server = serve(script, tls=server_tls if tls else None)
    timeout = (5, 1) if error_type is RequestTimeoutError else (5, 5)
    # A dripping server would hold a client without a deadline for the server's whole
    # patience (30 s and more); the client's read time-out is 1 s, for the head and then the
    # body.
    started = time.monotonic()
    with pytest.raises(FaxWSError) as info:
        send(client_for(server, ca_file, face, timeout=timeout))
    assert time.monotonic() - started < 10
    assert isinstance(info.value, error_type)
    assert info.value.maybe_delivered is True
    assert info.value.request_id == "rid-d"
    assert len(server.received) == 1
    assert server.connections == 1


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
@pytest.mark.parametrize(
    ("status", "error_type", "maybe_delivered"),
    [("413 Payload Too Large", "HTTPStatusError", False), ("200 OK", "TransportError", True)],
    ids=["413", "200"],
)
def test_an_answer_sent_before_the_body_is_complete_is_read_and_no_success(
    tls: bool,
    status: str,
    error_type: str,
    maybe_delivered: bool,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    """A refusal may come early (413, 401) and is read as the outcome; a success cannot
    answer an envelope the service has not read whole (a stale answer could, and would
    carry another call's job ids): the call fails, and the fax may have been delivered."""

    def script(conn: Conn) -> None:
        conn.handshake()
        conn.read_head()
        conn.send(reply(send_response(["J1"]), status))  # before reading the body,
        conn.hold()  # then reading the rest, as HTTP asks of a server that answers early

    server = serve(script, tls=server_tls if tls else None, rcvbuf=64 << 10)
    client = client_for(server, ca_file, face)
    document = FaxFile(b"\0" * (16 << 20), 101)  # far more than the socket buffers hold
    with pytest.raises(FaxWSError) as info:
        client.send_fax(["+1 555 0100"], [document])
    assert type(info.value).__name__ == error_type
    assert info.value.maybe_delivered is maybe_delivered
    assert server.connections == 1


# -- interim answers are read past --------------------------------------------------------


@pytest.mark.parametrize(
    "interim",
    [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 102 Processing\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX-A: b\r\n\r\n",
    ],
    ids=["100", "102", "103", "100+102"],
)
@pytest.mark.parametrize("when", ["after the request", "while the body arrives"])
@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_interim_responses_are_read_past_to_the_final_answer(
    interim: bytes,
    when: str,
    tls: bool,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    """A server may send interim answers at any time: one that comes while a large document
    is still being written is no early answer, and the final answer is the call's."""
    during = when == "while the body arrives"

    def script(conn: Conn) -> None:
        conn.handshake()
        if during:
            conn.read_request(interim=interim, keep=False)
            conn.send(ANSWER)
        else:
            conn.read_request()
            conn.send(interim + ANSWER)

    # while the body arrives: far more than the socket buffers hold
    server = serve(script, tls=server_tls if tls else None, rcvbuf=64 << 10 if during else None)
    client = client_for(server, ca_file, face)
    document = FaxFile(b"\0" * (16 << 20) if during else b"%PDF-1.4 one page", 101)
    assert client.send_fax(["+1 555 0100"], [document]).job_ids == ("J1",)
    assert [r.complete for r in server.received] == [True]


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_large_document_on_a_new_connection_gets_its_answer(
    tls: bool,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    """What a TLS 1.3 server sends after the handshake (session tickets) arrives while the
    first request's body is written: records without application data, no early answer."""

    def script(conn: Conn) -> None:
        conn.handshake()
        conn.read_request(keep=False)
        conn.send(ANSWER)

    server = serve(script, tls=server_tls if tls else None)
    client = client_for(server, ca_file, face)
    document = FaxFile(b"%PDF-1.4\n" + b"\0" * (3 << 20), 101)  # streamed, in parts
    assert client.send_fax(["+1 555 0100"], [document]).job_ids == ("J1",)
    assert [r.complete for r in server.received] == [True]


# -- before the first byte: nothing sent, tried again -------------------------------------


def stall_handshake(conn: Conn) -> None:
    conn.hold()  # never answers the ClientHello


def close_before_handshake(conn: Conn) -> None:
    pass  # accepted, then closed at once


def plain_http_to_tls_client(conn: Conn) -> None:
    conn.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def tls_handshake(conn: Conn) -> None:
    conn.handshake()  # the client refuses the certificate


BEFORE_WRITE = {
    "tls handshake stalls": (stall_handshake, {"timeout": (0.5, 5)}, RequestTimeoutError),
    "closed before the tls handshake": (close_before_handshake, {}, ConnectError),
    "plain http answers a tls client": (plain_http_to_tls_client, {}, ConnectError),
    "certificate not trusted": (tls_handshake, {"verify": True}, ConnectError),
}


@pytest.mark.parametrize("case", sorted(BEFORE_WRITE))
def test_failure_before_the_first_byte_is_not_delivered_and_retried(
    case: str,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    script, options, error_type = BEFORE_WRITE[case]
    server = serve(script, tls=server_tls)
    with pytest.raises(FaxWSError) as info:
        send(client_for(server, ca_file, face, **options))
    assert isinstance(info.value, error_type)
    assert info.value.maybe_delivered is False
    assert info.value.request_id == "rid-d"
    server.wait_served(RETRIES + 1)  # the last connection may still be queued for accept
    assert server.received == []
    assert server.connections == RETRIES + 1  # it was tried again, each time on a new connection


def test_wrong_host_name_in_certificate_is_not_delivered(
    serve: Callable[..., ScriptedServer],
    ca: trustme.CA,
    ca_file: str,
    face: Face,
) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("other.example").configure_cert(context)
    server = serve(tls_handshake, tls=context)
    with pytest.raises(ConnectError) as info:
        send(client_for(server, ca_file, face))
    assert info.value.maybe_delivered is False
    assert "certificate" in info.value.message
    assert server.received == []


def test_connection_refused_is_retried_and_names_its_cause(
    caplog: pytest.LogCaptureFixture,
    refused_port: int,
    face: Face,
) -> None:
    port = refused_port
    caplog.set_level(logging.INFO, logger="faxws")
    client = face.client(
        f"http://127.0.0.1:{port}", user_id=USER, pin="4321", retries=RETRIES, retry_backoff=0
    )
    with pytest.raises(ConnectError) as info:
        send(client)
    assert info.value.maybe_delivered is False
    assert f"127.0.0.1:{port}" in info.value.message
    assert "Connection refused" in info.value.message
    assert sum("retrying" in r.getMessage() for r in caplog.records) == RETRIES


def test_a_pooled_connection_the_server_closed_is_replaced_not_failed(
    serve: Callable[..., ScriptedServer],
    ca_file: str,
    face: Face,
) -> None:
    idle = threading.Event()

    def script(conn: Conn) -> None:
        conn.read_request()
        conn.send(KEPT_ANSWER)  # kept alive, then
        idle.wait(WAIT)  # closed while the client holds it idle in its pool

    server = serve(script)
    client = client_for(server, ca_file, face, retries=0)  # replaced, not retried
    send(client)
    idle.set()
    server.wait_served(1)  # the server has closed the pooled connection
    send(client)
    assert len(server.requests) == 2
    assert server.connections == 2


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_the_time_limit_holds_on_a_reused_connection(
    tls: bool,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    """The second call on a pooled connection is held to its own read time-out (the async
    client's timer belongs to the connection and is kept from one call to the next)."""

    def script(conn: Conn) -> None:
        conn.handshake()
        conn.read_request()
        # Half the time-out before the first answer: a timer kept from the first call
        # would fire half-way through the second call's time-out.
        conn.server.stopping.wait(0.5)  # the server's pace, not a synchronization
        conn.send(KEPT_ANSWER)
        conn.read_request()
        conn.server.stopping.wait(WAIT)  # then silence, until the test ends

    server = serve(script, tls=server_tls if tls else None)
    client = client_for(server, ca_file, face, timeout=(5, 1), retries=0)
    send(client)
    started = time.monotonic()
    with pytest.raises(RequestTimeoutError) as info:
        send(client)
    waited = time.monotonic() - started
    assert 0.9 <= waited < 10
    assert info.value.maybe_delivered is True
    assert len(server.received) == 2
    assert server.connections == 1


def test_no_timer_of_the_async_client_outlives_its_calls(
    serve: Callable[..., ScriptedServer],
) -> None:
    """A call that timed out on one connection and one answered on the next leave no timer
    behind (none holding an attempt, its connection or its answer in memory until a
    connect time-out far away)."""
    import asyncio

    from faxws import AsyncFaxClient
    from faxws._http.async_transport import Sent, _Handler

    served = itertools.count()

    def script(conn: Conn) -> None:
        conn.read_request()
        if next(served) == 0:
            assert conn.read_head() is None  # no answer, until the client gives up
        else:
            conn.send(reply(report_response()))

    server = serve(script)

    async def calls() -> list[object]:
        client = AsyncFaxClient(
            server.url("127.0.0.1"), user_id=USER, pin="4321", timeout=(30, 0.5), retries=0
        )
        try:
            with pytest.raises(RequestTimeoutError):
                await client.get_fax_broadcast_report("J1")
            await client.get_fax_broadcast_report("J1")
        finally:
            await client.close()
        loop: Any = asyncio.get_running_loop()
        return [
            h
            for h in loop._scheduled
            if not h.cancelled()
            and isinstance(getattr(h._callback, "__self__", None), (Sent, _Handler))
        ]

    assert asyncio.run(calls()) == []


def test_reports_are_retried_after_a_failure_past_the_first_byte(
    serve: Callable[..., ScriptedServer],
    ca_file: str,
    face: Face,
) -> None:
    answers = iter([None, reply(report_response())])

    def script(conn: Conn) -> None:
        conn.read_request()
        answer = next(answers)
        if answer is None:
            conn.reset()
        else:
            conn.send(answer)

    server = serve(script)
    result = client_for(server, ca_file, face).get_fax_broadcast_report("J1", request_id="rid-r")
    assert result.request_id == "rid-r"
    assert [r.header("x-ch-request-id") for r in server.requests] == ["rid-r", "rid-r"]


# -- through a proxy: its CONNECT is not the request -----------------------------------------


def relay(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes (either may be a TLS socket, whose
    decrypted bytes select() does not see)."""
    while True:
        pending = [s for s in (a, b) if isinstance(s, ssl.SSLSocket) and s.pending()]
        ready = pending or select.select([a, b], [], [], 30)[0]
        if not ready:
            return
        for src in ready:
            data = src.recv(65536)
            if not data:
                return
            (b if src is a else a).sendall(data)


def connect_proxy(
    allow: bool, heads: list[bytes] | None = None, *, tls: bool = False
) -> Callable[[Conn], None]:
    def script(conn: Conn) -> None:
        if tls:
            conn.handshake()  # an https:// proxy: TLS to the proxy, the tunnel inside it
        head = conn.read_head()
        assert head is not None
        assert head.startswith(b"CONNECT localhost:")
        if heads is not None:
            heads.append(head)
        if not allow:
            conn.send(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        port = int(head.split(b" ")[1].rpartition(b":")[2])  # localhost is 127.0.0.1 here
        with socket.create_connection(("127.0.0.1", port), timeout=30) as upstream:
            conn.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            relay(conn.sock, upstream)

    return script


def answer_once(conn: Conn) -> None:
    conn.handshake()
    conn.read_request()
    conn.send(ANSWER)


def test_a_proxy_refusing_connect_is_not_delivered_and_retried(
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    target = serve(answer_once, tls=server_tls)
    proxy = serve(connect_proxy(allow=False))
    client = client_for(target, ca_file, face, proxies={"https": proxy.url()})
    with pytest.raises(ConnectError) as info:
        send(client)
    assert info.value.maybe_delivered is False
    assert proxy.connections == RETRIES + 1
    assert target.connections == 0


@pytest.mark.parametrize(
    "reason",
    [b"pxuser:pX:s3cret!", b"Proxy Auth Basic " + base64.b64encode(b"pxuser:pX:s3cret!")],
)
def test_a_proxy_refusing_the_tunnel_is_told_without_its_reason_phrase(
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
    reason: bytes,
) -> None:
    """A proxy's reason phrase may echo the credentials it was sent: only its status is told,
    in the same words by both clients."""

    def echoing_proxy(conn: Conn) -> None:
        assert conn.read_head() is not None
        conn.send(b"HTTP/1.1 407 " + reason + b"\r\nContent-Length: 0\r\n\r\n")

    target = serve(answer_once, tls=server_tls)
    proxy = serve(echoing_proxy)
    url = proxy.url().replace("://", "://pxuser:pX%3As3cret%21@")
    client = client_for(target, ca_file, face, proxies={"https": url})
    with pytest.raises(ConnectError) as info:
        send(client)
    assert "the proxy refused the tunnel (HTTP 407)" in str(info.value)
    assert "s3cret" not in str(info.value)
    assert base64.b64encode(b"pxuser:pX").decode() not in str(info.value)


def test_a_tunnel_through_a_proxy_is_recorded_from_the_request_on(
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    target = serve(reset_after_request, tls=server_tls)
    proxy = serve(connect_proxy(allow=True))
    client = client_for(target, ca_file, face, proxies={"https": proxy.url()})
    with pytest.raises(FaxWSError) as info:
        send(client)
    assert info.value.maybe_delivered is True
    assert len(target.received) == 1
    assert proxy.connections == 1


def test_a_tunnel_through_a_proxy_carries_the_call(
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    target = serve(answer_once, tls=server_tls)
    proxy = serve(connect_proxy(allow=True))
    client = client_for(target, ca_file, face, proxies={"https": proxy.url()})
    assert send(client).job_ids == ("J1",)  # type: ignore[attr-defined]
    assert len(target.requests) == 1


def test_plain_http_through_a_proxy_asks_it_for_the_whole_url_every_time(
    serve: Callable[..., ScriptedServer], ca_file: str, face: Face
) -> None:
    """A forwarding proxy gets the absolute URL in the request line, on every call (the
    request target is worked out once per client), and the service's headers unchanged."""
    proxy = serve(answer_once)  # answers as the service would, through a fresh connection
    client = face.client(
        "http://localhost:9", user_id=USER, pin="4321", retries=0, proxies={"http": proxy.url()}
    )
    for _ in range(2):
        assert send(client).job_ids == ("J1",)  # type: ignore[attr-defined]
    lines = [r.head.split(b"\r\n", 1)[0] for r in proxy.requests]
    assert lines == [b"POST http://localhost:9/fax/v5 HTTP/1.1"] * 2
    assert [r.header("SOAPAction") for r in proxy.requests] == ["", ""]


def test_a_proxy_that_never_answers_connect_is_a_connect_time_out(
    serve: Callable[..., ScriptedServer], server_tls: ssl.SSLContext, ca_file: str, face: Face
) -> None:
    def silent_proxy(conn: Conn) -> None:
        conn.read_head()  # the CONNECT request, never answered
        conn.hold()

    target = serve(answer_once, tls=server_tls)
    proxy = serve(silent_proxy)
    client = client_for(target, ca_file, face, proxies={"https": proxy.url()}, timeout=(0.5, 5))
    with pytest.raises(RequestTimeoutError) as info:
        send(client)
    assert info.value.maybe_delivered is False
    proxy.wait_served(RETRIES + 1)
    assert proxy.connections == RETRIES + 1
    assert target.connections == 0


#: How long a dripping server goes on (a byte every 20 ms), unless the client leaves first.
DRIPS = 250


def dripped_handshake(conn: Conn) -> None:
    """Takes the ClientHello, then announces a 16 KiB handshake record and sends a byte of
    it every 20 ms, for 5 s."""
    assert conn.sock.recv(65536)
    conn.send(b"\x16\x03\x03\x40\x00")
    for _ in range(DRIPS):
        conn.send(b"\x00")
        conn.server.stopping.wait(0.02)  # the server's pace, not a synchronization


def dripping_proxy(answer: bytes, *, then_tls: bool = False) -> Callable[[Conn], None]:
    """A proxy answering CONNECT with ``answer`` a byte every 20 ms, then (``then_tls``) a
    TLS server dripping its handshake, else more of a header line for 5 s."""

    def script(conn: Conn) -> None:
        assert conn.read_head() is not None
        for byte in answer:
            conn.send(bytes([byte]))
            conn.server.stopping.wait(0.02)  # the server's pace, not a synchronization
        if then_tls:
            dripped_handshake(conn)
            return
        for _ in range(DRIPS):
            conn.send(b"a")
            conn.server.stopping.wait(0.02)

    return script


SLOW_SETUPS = {
    # Each byte comes well inside the connect time-out: only a bound on the set-up as a
    # whole ends them.
    "a proxy's answer to connect dripped": (
        dripping_proxy(b"HTTP/1.1 200 Connection established\r\nX-Pad: "),
        True,
    ),
    "a tls handshake dripped": (dripped_handshake, False),
    # Within the time-out each (0.8 s, then at most 1 s); over it together.
    "a proxy's answer to connect, then a tls handshake, dripped": (
        dripping_proxy(b"HTTP/1.1 200 Connection established\r\n\r\n", then_tls=True),
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(SLOW_SETUPS))
def test_the_connect_time_out_bounds_the_whole_set_up(
    case: str, serve: Callable[..., ScriptedServer], ca_file: str, face: Face
) -> None:
    script, through_proxy = SLOW_SETUPS[case]
    server = serve(script)
    if through_proxy:
        url, proxies = "https://localhost:9", {"https": server.url()}
    else:
        url, proxies = server.url().replace("http:", "https:"), {}
    client = face.client(
        url,
        user_id=USER,
        pin="4321",
        retries=0,
        timeout=(1, 5),
        verify=ca_file,
        proxies=proxies,
    )
    started = time.monotonic()
    with pytest.raises(RequestTimeoutError) as info:
        send(client)
    elapsed = time.monotonic() - started
    assert elapsed < 1.5, f"the set-up went on for {elapsed:.1f} s"
    assert info.value.maybe_delivered is False
    assert info.value.request_id == "rid-d"
    assert server.connections == 1


@pytest.mark.parametrize(
    ("userinfo", "decoded"),
    [
        ("user%40corp:p%3Ass", b"user@corp:p:ss"),
        ("us%3Aer:pa%20ss", b"us:er:pa ss"),  # a colon in the user name, read as requests reads it
        ("user:", b"user:"),
        ("%C3%A9t%C3%A9:x", "\u00e9t\u00e9:x".encode("latin-1")),
        (":pw", None),  # as requests: credentials only with a user name and a password
        ("user", None),
    ],
    ids=[
        "escaped at and colon",
        "escaped colon in the user name",
        "empty password",
        "not ascii",
        "no user name",
        "no password",
    ],
)
def test_proxy_credentials_go_in_the_connect_request(
    userinfo: str,
    decoded: bytes | None,
    serve: Callable[..., ScriptedServer],
    server_tls: ssl.SSLContext,
    ca_file: str,
    face: Face,
) -> None:
    heads: list[bytes] = []
    target = serve(answer_once, tls=server_tls)
    proxy = serve(connect_proxy(allow=True, heads=heads))
    with_credentials = f"http://{userinfo}@127.0.0.1:{proxy.port}"
    client = client_for(target, ca_file, face, proxies={"https": with_credentials})
    assert send(client).job_ids == ("J1",)  # type: ignore[attr-defined]
    [head] = heads
    expected = [] if decoded is None else [b"Basic " + base64.b64encode(decoded)]
    fields = [line.partition(b":") for line in head.split(b"\r\n")[1:]]
    assert [v.strip() for k, _, v in fields if k.lower() == b"proxy-authorization"] == expected
    assert userinfo.encode() not in target.requests[0].head  # the service never sees them
    assert b"proxy-authorization" not in target.requests[0].head.lower()


def stop_reading(conn: Conn) -> None:
    conn.read_head()
    conn.server.headers_read.set()
    conn.server.stopping.wait(WAIT)  # reads nothing more until the test ends


def test_a_server_that_stops_reading_the_body_is_a_time_out(
    serve: Callable[..., ScriptedServer], ca_file: str, face: Face
) -> None:
    server = serve(stop_reading, rcvbuf=64 << 10)
    client = client_for(server, ca_file, face, timeout=(5, 1))
    document = FaxFile(b"\0" * (32 << 20), 101)  # far more than the socket buffers hold
    with pytest.raises(RequestTimeoutError) as info:
        client.send_fax(["+1 555 0100"], [document], "rid-stall")
    assert info.value.maybe_delivered is True
    assert info.value.request_id == "rid-stall"
    assert server.connections == 1


def test_a_tunnel_through_an_https_proxy_carries_the_call(
    serve: Callable[..., ScriptedServer], server_tls: ssl.SSLContext, ca_file: str, face: Face
) -> None:
    """TLS to the proxy, and the service's TLS inside the tunnel: asyncio has TLS inside TLS
    from Python 3.11, and the async client refuses such a proxy before that."""
    target = serve(answer_once, tls=server_tls)
    proxy = serve(connect_proxy(allow=True, tls=True), tls=server_tls)
    proxies = {"https": proxy.url("localhost")}
    if face.is_async and sys.version_info < (3, 11):
        with pytest.raises(BadInputError) as info:
            client_for(target, ca_file, face, proxies=proxies)
        assert info.value.field == "proxies['https']"
        assert "3.11" in info.value.problem
        return
    client = client_for(target, ca_file, face, proxies=proxies)
    assert send(client).job_ids == ("J1",)  # type: ignore[attr-defined]
    assert len(target.requests) == 1
    assert proxy.connections == 1


# -- time-outs on plain TCP ------------------------------------------------------------------


def _answer_then_silence(conn: Conn) -> None:
    conn.read_request()
    conn.send(KEPT_ANSWER)
    conn.read_request()
    conn.server.stopping.wait(WAIT)  # then silence, until the test ends


#: Plain TCP cases that end in a time-out: (script, calls before the one that times out,
#: the document's size).
TIME_OUTS: dict[str, tuple[Callable[[Conn], None], int, int]] = {
    **{
        case: (script, 0, 100)
        for case, (script, tls, error_type) in AFTER_WRITE.items()
        if not tls and error_type is RequestTimeoutError
    },
    # Far more than the socket buffers hold: the write waits out the connect time-out
    # (urllib3 writes within it), then the answer is looked for within the read time-out.
    "a server that stops reading the body": (stop_reading, 0, 32 << 20),
    "silence on a reused connection": (_answer_then_silence, 1, 100),
}


@pytest.mark.parametrize("case", sorted(TIME_OUTS))
def test_time_outs_on_plain_tcp_are_each_waited_once(
    case: str,
    serve: Callable[..., ScriptedServer],
    ca_file: str,
    make_face: Callable[[str], Face],
) -> None:
    """The read time-out of 1 s, or for a write the connect time-out of 3 s and the read
    time-out, each waited once, and maybe delivered."""
    script, before, size = TIME_OUTS[case]
    server = serve(script, rcvbuf=64 << 10)
    client = client_for(server, ca_file, make_face("sync"), timeout=(3, 1), retries=0)
    for _ in range(before):
        send(client)
    document = FaxFile(b"\0" * size, 101)
    started = time.monotonic()
    with pytest.raises(RequestTimeoutError) as info:
        client.send_fax(["+1 555 0100"], [document], "rid-d")
    waited = time.monotonic() - started
    assert (3.9 if size > 100 else 0.9) <= waited < (6.5 if size > 100 else 5)  # not 3 s twice
    assert info.value.maybe_delivered is True
    assert info.value.request_id == "rid-d"
    assert server.connections == 1


# -- closing a client ---------------------------------------------------------------------------


def test_a_client_used_after_close_opens_a_new_connection_which_close_ends(
    serve: Callable[..., ScriptedServer], ca_file: str, face: Face
) -> None:
    """close() ends the pooled connections; a call made after it opens a new one (as the
    first call did), and the next close() ends that one too: the server sees each end."""

    def answering(conn: Conn) -> None:
        while conn.read_request() is not None:
            conn.send(KEPT_ANSWER)

    server = serve(answering)
    client = client_for(server, ca_file, face)
    send(client)
    client.close()
    server.wait_served(1)
    send(client)
    client.close()
    server.wait_served(2)
    assert len(server.requests) == server.connections == 2
