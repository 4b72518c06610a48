"""Each request's body is read whole or the connection closes: whatever the simulator answers
(refusals too, on every route and for every method), nothing of a body is ever taken for the
next request. Over real sockets, with bodies that are themselves requests that would clear
the inbox and inject a fault."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from test_simulator_http import exchange

from faxws import FaxClient, FaxFile, FileType
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator, _http
from faxws.testing._http import MAX_BODY

HOST = "Host: 127.0.0.1\r\n"
_FAULT = json.dumps({"fault": "http_status", "status": 503, "times": 5}).encode()
# What a page could not send itself but might hide in a body it may send: each would change
# the simulator's state if it were read as a request.
CLEAR = f"DELETE /api/jobs HTTP/1.1\r\n{HOST}X-FaxWS-Client: x\r\nContent-Length: 0\r\n\r\n"
INJECT = (
    f"POST /api/faults HTTP/1.1\r\n{HOST}Content-Type: application/json\r\n"
    f"Content-Length: {len(_FAULT)}\r\n\r\n"
).encode() + _FAULT
SMUGGLED = CLEAR.encode() + INJECT
# A well-formed request sent after the one under test, on the same connection.
FOLLOW = f"GET /api/jobs HTTP/1.1\r\n{HOST}\r\n".encode()

PATHS = [
    "/",
    "/jobs/1",
    "/api/jobs",
    "/api/jobs/1",
    "/api/jobs/1/files/1",
    "/api/requests",
    "/api/faults",
    "/api/nothing",
    "/fax/v5",
    "/connect/token",
    "/elsewhere",
]
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"]
# text/plain is what a page on another origin may send without a preflight.
CONTENT_TYPES = ["text/plain", "application/json", "application/x-www-form-urlencoded"]


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    """A simulator holding one job and no pending fault."""
    with FaxWSSimulator() as simulator:
        with FaxClient(simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            client.send_fax(["+1 5"], [FaxFile(b"%PDF-1.4 page", FileType.PDF)])
        yield simulator


def answers(data: bytes, heads: tuple[int, ...] = ()) -> list[tuple[int, dict[str, str], bytes]]:
    """The answers in ``data``, each with its headers (lower-case names) and body; those at
    the indexes ``heads`` answer HEAD, so without a body. Fails on bytes that are not whole
    answers."""
    found = []
    while data:
        head, separator, data = data.partition(b"\r\n\r\n")
        assert separator, f"an answer cut short: {head[:200]!r}"
        lines = head.decode("latin-1").split("\r\n")
        assert lines[0].startswith("HTTP/1.1 "), lines[0]
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = 0 if len(found) in heads else int(fields.get("content-length", "0"))
        body, data = data[:length], data[length:]
        assert len(body) == length, "an answer's body cut short"
        found.append((int(lines[0].split()[1]), fields, body))
    return found


def assert_untouched(sim: FaxWSSimulator) -> None:
    """Neither smuggled request ran: the job is still there, no fault is pending."""
    assert len(sim.jobs) == 1
    assert sim._state.faults._pending == []


def assert_one_answer_then_closed_or_kept_going(
    sim: FaxWSSimulator, request: bytes, head: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """``request`` followed by :data:`FOLLOW`: its answer, then either the connection closed
    (said in the answer) or the follow-up answered as on a fresh connection; never an answer
    to anything in the body."""
    got = answers(exchange(sim, request + FOLLOW), (0,) if head else ())
    if got and got[0][0] == 100:  # the invitation to send a body announced with Expect
        got = got[1:]
    assert 1 <= len(got) <= 2, [(status, body[:80]) for status, _, body in got]
    first = got[0]
    if len(got) == 1:
        assert first[1].get("connection") == "close", first
    else:
        assert "connection" not in first[1]
        status, _, body = got[1]
        assert status == 200
        assert json.loads(body)["total"] == 1
    assert_untouched(sim)
    return first


def framed(method: str, path: str, headers: str, body: bytes) -> bytes:
    return f"{method} {path} HTTP/1.1\r\n{HOST}{headers}\r\n".encode("latin-1") + body


# -- a body each route and method may be sent ------------------------------------------------


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", PATHS)
def test_a_body_is_never_read_as_a_request_whatever_the_answer(
    sim: FaxWSSimulator, path: str, method: str, content_type: str
) -> None:
    headers = f"Content-Type: {content_type}\r\nContent-Length: {len(SMUGGLED)}\r\n"
    request = framed(method, path, headers, SMUGGLED)
    assert_one_answer_then_closed_or_kept_going(sim, request, head=method == "HEAD")


REFUSALS = {
    # A body larger than any route reads: refused or answered without reading it.
    "too-large": f"Content-Type: text/plain\r\nContent-Length: {MAX_BODY + 1}\r\n",
    # The body is sent at once, as a client that does not wait for 100 Continue does.
    "expect-100": (
        f"Content-Type: text/plain\r\nExpect: 100-continue\r\nContent-Length: {len(SMUGGLED)}\r\n"
    ),
}


@pytest.mark.parametrize("refusal", list(REFUSALS))
@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
@pytest.mark.parametrize("path", PATHS)
def test_a_body_a_refusal_leaves_is_never_read_as_a_request(
    sim: FaxWSSimulator, path: str, method: str, refusal: str
) -> None:
    request = framed(method, path, REFUSALS[refusal], SMUGGLED)
    assert_one_answer_then_closed_or_kept_going(sim, request)


@pytest.mark.parametrize("path", ["/", "/api/jobs", "/api/faults"])
def test_a_page_on_another_name_or_without_the_token_leaves_no_body_behind(path: str) -> None:
    headers = f"Content-Type: text/plain\r\nContent-Length: {len(SMUGGLED)}\r\n"
    with FaxWSSimulator(api_token="tok-1") as sim:
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            client.send_fax(["+1 5"], [FaxFile(b"%PDF-1.4 page", FileType.PDF)])
        request = framed("POST", path, headers, SMUGGLED)
        status, _, _ = answers(exchange(sim, request))[0]
        assert status == 401
        assert_untouched(sim)
    with FaxWSSimulator() as sim:
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            client.send_fax(["+1 5"], [FaxFile(b"%PDF-1.4 page", FileType.PDF)])
        request = framed("POST", path, headers, SMUGGLED).replace(
            HOST.encode(), b"Host: evil.example\r\n", 1
        )
        status, _, _ = answers(exchange(sim, request))[0]
        assert status == 403
        assert_untouched(sim)


@pytest.mark.parametrize(
    ("method", "path", "length", "expected"),
    [
        ("POST", "/api/faults", None, 403),  # too long to read and drop before the answer
        ("GET", "/api/jobs", None, 200),
        ("POST", "/", None, 405),
        ("POST", "/connect/token", MAX_BODY + 1, 413),
        ("POST", "/fax/v5", MAX_BODY + 1, 413),
    ],
)
def test_a_client_still_sending_a_body_left_unread_gets_the_answer_not_a_reset(
    sim: FaxWSSimulator,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    length: int | None,
    expected: int,
) -> None:
    """A client sends its body while the answer comes (as most do, without Expect): closed
    with that body unread, the connection would be reset, and the client's write would fail
    before it could read the answer."""
    monkeypatch.setattr(_http, "_LINGER", 30.0)  # the bound a loaded machine could reach
    body = SMUGGLED + b"x" * (900 * 1024 - len(SMUGGLED))
    size = len(body) if length is None else length
    headers = f"Content-Type: text/plain\r\nContent-Length: {size}\r\n"
    with socket.socket() as sock:
        # Small buffers: most of the body waits in this client until the simulator reads it.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
        sock.settimeout(30)
        sock.connect(("127.0.0.1", sim.port))
        sock.sendall(framed(method, path, headers, body))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    ((status, fields, _),) = answers(data)
    assert (status, fields.get("connection")) == (expected, "close")
    assert_untouched(sim)


# -- framing that is not one plain Content-Length ---------------------------------------------

CHUNKED = b"%x\r\n" % len(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n"
FRAMINGS = {
    # name: (headers, body, status)
    "two equal lengths": (
        f"Content-Length: {len(SMUGGLED)}\r\nContent-Length: {len(SMUGGLED)}\r\n",
        SMUGGLED,
        400,
    ),
    "two lengths, the first none": (
        f"Content-Length: 0\r\nContent-Length: {len(SMUGGLED)}\r\n",
        SMUGGLED,
        400,
    ),
    "two lengths in other cases": (
        f"Content-Length: 0\r\ncontent-length: {len(SMUGGLED)}\r\n",
        SMUGGLED,
        400,
    ),
    "a list of lengths": (f"Content-Length: 0, {len(SMUGGLED)}\r\n", SMUGGLED, 400),
    "length and chunked": ("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", CHUNKED, 400),
    "chunked and length": (
        f"Transfer-Encoding: chunked\r\nContent-Length: {len(CHUNKED)}\r\n",
        CHUNKED,
        400,
    ),
    "chunked": ("Transfer-Encoding: chunked\r\n", CHUNKED, 411),
    "gzip, then chunked": ("Transfer-Encoding: gzip, chunked\r\n", CHUNKED, 411),
    "chunked twice": (
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        CHUNKED,
        400,
    ),
    "a coding it does not know": ("Transfer-Encoding: gzip\r\n", SMUGGLED, 400),
    "chunked, then gzip": ("Transfer-Encoding: chunked, gzip\r\n", SMUGGLED, 400),
}


@pytest.mark.parametrize("framing", list(FRAMINGS))
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("HEAD", "/"),
        ("GET", "/api/jobs"),
        ("POST", "/api/faults"),
        ("DELETE", "/api/jobs"),
        ("POST", "/fax/v5"),
        ("POST", "/connect/token"),
        ("GET", "/elsewhere"),
    ],
)
def test_framing_other_than_one_plain_length_is_refused_and_the_connection_closed(
    sim: FaxWSSimulator, method: str, path: str, framing: str
) -> None:
    headers, body, expected = FRAMINGS[framing]
    request = framed(method, path, "Content-Type: application/json\r\n" + headers, body)
    got = answers(exchange(sim, request + FOLLOW), (0,) if method == "HEAD" else ())
    assert len(got) == 1, [(status, body[:80]) for status, _, body in got]
    status, fields, _ = got[0]
    assert status == expected
    assert fields.get("connection") == "close"
    assert_untouched(sim)


# -- what still works ------------------------------------------------------------------------


def test_requests_sent_back_to_back_are_each_answered_in_order(sim: FaxWSSimulator) -> None:
    report = (
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
        f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID>'
        f"<strPIN>{DEMO_PIN}</strPIN><JobId>J1</JobId><RecipientType>0</RecipientType>"
        "<RecipAddress/></GetFaxBroadcastReport></soap:Body></soap:Envelope>"
    ).encode()
    soap = f"Content-Type: text/xml\r\nSOAPAction: \r\nContent-Length: {len(report)}\r\n"
    clear = "X-FaxWS-Client: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
    pipeline = (
        framed("POST", "/fax/v5", soap, report)
        + FOLLOW
        + framed("HEAD", "/", "", b"")
        + framed("DELETE", "/api/jobs", clear, b"{}")
        + framed("POST", "/fax/v5", soap, report)
        + f"GET /api/jobs HTTP/1.1\r\n{HOST}Connection: close\r\n\r\n".encode()
    )
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as sock:
        sock.sendall(pipeline)
        data = b""
        while chunk := sock.recv(65536):  # the last request asks the simulator to close
            data += chunk
    got = answers(data, heads=(2,))
    assert [status for status, _, _ in got] == [200] * 6
    assert json.loads(got[1][2])["total"] == 1
    assert json.loads(got[3][2]) == {"cleared": True, "jobs": 1}
    assert json.loads(got[5][2])["total"] == 0
