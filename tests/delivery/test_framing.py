"""Every time limit holds, whatever the answer's framing, in every face.

The README's limits: the head of the answer within the read time-out of the request's end, the
body within the read time-out of the head; a server dripping bytes cannot hold a call longer.
One table of framings, well-formed and malformed (chunk sizes, extensions, trailers, lengths
that do not match, early closes), runs against every face that reads an answer: FaxClient,
AsyncFaxClient, zeep's client and both token providers. Each call ends, within the read
time-out of the head plus a margin for a loaded machine, either with the answer or with a
FaxWSError (whatever the framing, never an exception of the HTTP stack, never a hang).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from conftest import ZEEP_RECIPIENT as RECIPIENT
from conftest import Face, send_response
from faxws import FaxFile, FaxWSError
from scripted import WAIT, Conn, ScriptedServer

READ_TIMEOUT = 0.5
#: A call ends within the head's and the body's read time-outs, plus this, on a busy machine.
MARGIN = 4.0

SOAP = send_response(["J1"])
TOKEN = json.dumps({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600}).encode()


def head(framing: str, content_type: str) -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{framing}\r\n".encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


Answer = Callable[[Conn, bytes, str], None]


def pace(conn: Conn, seconds: float) -> bool:
    """The server's pace (not a synchronization): False once the server stops."""
    return not conn.server.stopping.wait(seconds)


def then_hold(write: Callable[[Conn, bytes], bytes]) -> Answer:
    """Head, a first chunk, a pause, then ``write``'s bytes; the connection stays open."""

    def answer(conn: Conn, body: bytes, content_type: str) -> None:
        conn.send(head("Transfer-Encoding: chunked\r\n", content_type) + chunk(body[:20]))
        pace(conn, 0.3)
        conn.send(write(conn, body))
        conn.hold()

    return answer


def then_close(write: Callable[[Conn, bytes], bytes]) -> Answer:
    def answer(conn: Conn, body: bytes, content_type: str) -> None:
        conn.send(head("Transfer-Encoding: chunked\r\n", content_type) + chunk(body[:20]))
        pace(conn, 0.3)
        conn.send(write(conn, body))

    return answer


def endless(first: bytes, each: bytes) -> Answer:
    """Head, the body's chunks up to ``first``, then ``each`` every 50 ms, forever."""

    def answer(conn: Conn, body: bytes, content_type: str) -> None:
        conn.send(head("Transfer-Encoding: chunked\r\n", content_type) + chunk(body) + first)
        while pace(conn, 0.05):
            conn.send(each)

    return answer


def dripped(data: Callable[[bytes, str], bytes]) -> Answer:
    """The whole answer, a byte every 50 ms."""

    def answer(conn: Conn, body: bytes, content_type: str) -> None:
        for i, byte in enumerate(data(body, content_type)):
            if i and not pace(conn, 0.05):
                return
            conn.send(bytes([byte]))
        conn.hold()

    return answer


def whole(data: Callable[[bytes, str], bytes], *, close: bool) -> Answer:
    def answer(conn: Conn, body: bytes, content_type: str) -> None:
        conn.send(data(body, content_type))
        if not close:
            conn.hold()

    return answer


def length(n: Callable[[bytes], str], extra: str = "") -> Callable[[bytes, str], bytes]:
    return lambda body, ct: head(f"Content-Length: {n(body)}\r\n{extra}", ct) + body


def chunked(extra: str = "", trailer: bytes = b"") -> Callable[[bytes, str], bytes]:
    return lambda body, ct: (
        head(f"Transfer-Encoding: chunked\r\n{extra}", ct)
        + chunk(body[:20])
        + chunk(body[20:])
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


FRAMINGS: dict[str, Answer] = {
    # chunk sizes
    "a malformed chunk size, the connection kept": then_hold(lambda c, b: b"zz\r\n"),
    "a malformed chunk size, then close": then_close(lambda c, b: b"zz\r\n"),
    "a negative chunk size": then_hold(lambda c, b: b"-5\r\nhello\r\n"),
    "a chunk size too large for any integer": then_hold(lambda c, b: b"f" * 40 + b"\r\n"),
    "a chunk shorter than its size, the connection kept": then_hold(
        lambda c, b: b"400\r\n" + b[20:]
    ),
    "a chunk shorter than its size, then close": then_close(lambda c, b: b"400\r\n" + b[20:]),
    "no last chunk, then close": then_close(lambda c, b: chunk(b[20:])),
    "no last chunk, the connection kept": then_hold(lambda c, b: chunk(b[20:])),
    "a chunk without its CRLF": then_hold(
        lambda c, b: b"%x\r\n%sXY0\r\n\r\n" % (len(b) - 20, b[20:])
    ),
    "a chunk size line dripped forever": endless(b"", b"0"),
    # extensions
    "a chunk extension dripped forever": endless(b"5;ext=", b"a"),
    "a long chunk extension": then_hold(lambda c, b: b"%x;%s\r\n" % (len(b) - 20, b"e" * 70000)),
    # trailers
    "a malformed trailer line, the connection kept": then_hold(
        lambda c, b: chunk(b[20:]) + b"0\r\nno colon in this trailer\r\n\r\n"
    ),
    "a malformed trailer line, then close": then_close(
        lambda c, b: chunk(b[20:]) + b"0\r\nno colon in this trailer\r\n"
    ),
    "endless trailer lines": endless(b"0\r\n", b"X-Trailer: more\r\n"),
    "a trailer line dripped forever": endless(b"0\r\nX-Trailer: ", b"a"),
    "an answer dripped with trailers": dripped(chunked(trailer=b"X-A: 1\r\nX-B: 2\r\n")),
    "well-formed trailers": whole(chunked(trailer=b"X-A: 1\r\n"), close=False),
    "a well-formed chunk extension": whole(
        lambda body, ct: (
            head("Transfer-Encoding: chunked\r\n", ct)
            + b"%x;name=value\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        ),
        close=False,
    ),
    # lengths
    "a Content-Length past the body, then close": whole(
        length(lambda b: str(len(b) + 100)), close=True
    ),
    "a Content-Length past the body, the connection kept": whole(
        length(lambda b: str(len(b) + 100)), close=False
    ),
    "a Content-Length that is not a number": whole(length(lambda b: "12a"), close=False),
    "a negative Content-Length": whole(length(lambda b: "-1"), close=False),
    "two different Content-Lengths": whole(
        length(lambda b: str(len(b)), extra="Content-Length: 5\r\n"), close=False
    ),
    "a Content-Length beside chunked framing": whole(
        chunked(extra="Content-Length: 7\r\n"), close=False
    ),
    "the body dripped": dripped(length(lambda b: str(len(b)))),
    # early close
    "the head, then close": whole(lambda body, ct: head("Content-Length: 50\r\n", ct), close=True),
    "half the head, then close": whole(
        lambda body, ct: b"HTTP/1.1 200 OK\r\nContent-Ty", close=True
    ),
    "the head, then silence": whole(
        lambda body, ct: head("Content-Length: 50\r\n", ct), close=False
    ),
    "no framing, the body ended by the close": whole(
        lambda body, ct: head("", ct) + body, close=True
    ),
}


# -- the faces ----------------------------------------------------------------------------------

Caller = Callable[[str, Face], object]


def fax_client(url: str, face: Face) -> object:
    client: Any = face.client(
        url, user_id="mbx-framing", pin="4321", retries=0, timeout=(5, READ_TIMEOUT)
    )
    return client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4 one page", 101)], "rid-f")


def zeep_client(url: str, face: Face) -> object:
    from faxws.zeep import make_client

    client = make_client(
        url, user_id="mbx-framing", pin="4321", retries=0, timeout=(5, READ_TIMEOUT)
    )
    try:
        return client.service.SendFax(
            Recipients={"item": [RECIPIENT]},
            FaxJobFiles={"item": [{"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF"}]},
        )
    finally:
        client.transport.close()


def token_provider(url: str, face: Face) -> object:
    provider = face.provider(f"{url}/token", "client-1", "secret-1", timeout=(5, READ_TIMEOUT))
    return face.fetch_token(provider)


FACES: dict[str, tuple[str, Caller, bytes, str]] = {
    "FaxClient": ("sync", fax_client, SOAP, "text/xml; charset=utf-8"),
    "AsyncFaxClient": ("async", fax_client, SOAP, "text/xml; charset=utf-8"),
    "zeep": ("sync", zeep_client, SOAP, "text/xml; charset=utf-8"),
    "ClientCredentials": ("sync", token_provider, TOKEN, "application/json"),
    "AsyncClientCredentials": ("async", token_provider, TOKEN, "application/json"),
}


@pytest.mark.parametrize("framing", sorted(FRAMINGS))
@pytest.mark.parametrize("face_name", list(FACES))
def test_every_framing_ends_within_the_time_limits_in_a_typed_outcome(
    face_name: str,
    framing: str,
    serve: Callable[..., ScriptedServer],
    make_face: Callable[[str], Face],
) -> None:
    kind, call, body, content_type = FACES[face_name]
    answer = FRAMINGS[framing]

    def script(conn: Conn) -> None:
        conn.read_request()
        answer(conn, body, content_type)

    server = serve(script)
    face = make_face(kind)
    outcomes: list[object] = []

    def run() -> None:
        try:
            outcomes.append(call(server.url(), face))
        except BaseException as exc:
            outcomes.append(exc)

    # In a thread, so that a call that does not end fails the test instead of holding it.
    caller = threading.Thread(target=run)
    caller.start()
    caller.join(2 * READ_TIMEOUT + MARGIN)
    if caller.is_alive():
        server.stopping.set()  # the server's scripts end, and the connection with them
        caller.join(WAIT)
        pytest.fail(f"{face_name} was still in the call after {2 * READ_TIMEOUT + MARGIN} s")
    [outcome] = outcomes
    assert isinstance(outcome, FaxWSError) or not isinstance(outcome, BaseException), outcome
    if isinstance(outcome, FaxWSError) and call is not token_provider:
        # (A provider called directly has no call's request id; a client passes it its own.)
        assert outcome.request_id, "every error carries the request id"
    assert len(server.received) == 1  # one request, never sent again
