"""The simulator's HTTP reading (the standard library's, with checks of the header lines it
read), its one-write answers and idle limit, and what keeps its request path cheap."""

from __future__ import annotations

import gc
import http.client
import io
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from wire import exchange

from faxws._protocol.reader import read_payload, soap_payload
from faxws._protocol.request_reader import RequestReader
from faxws._protocol.writer import document, envelope
from faxws.bindings import (
    OPERATIONS,
    FaxJobFile,
    FaxJobFiles,
    FaxJobId,
    FaxJobIds,
    FaxJobRecipient,
    FaxJobRecipients,
    FaxSendResponse,
    GetFaxBroadcastReport,
    GetFaxBroadcastReportResponse,
    SendFax,
    WSError,
)
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator, _http
from faxws.testing._documents import Received
from faxws.testing._records import ReceivedRequest

REPORT = (
    '<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap='
    '"http://schemas.xmlsoap.org/soap/envelope/"><soap:Header/><soap:Body>'
    f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID>'
    f"<strPIN>{DEMO_PIN}</strPIN><JobId>J1</JobId><RecipientType>0</RecipientType>"
    "<RecipAddress/></GetFaxBroadcastReport></soap:Body></soap:Envelope>"
).encode()


SOAP_HEADERS = "Host: x\r\nContent-Type: application/soap+xml; charset=utf-8\r\nSOAPAction: \r\n"


def request(headers: str, body: bytes = REPORT, line: str = "POST /fax/v5 HTTP/1.1") -> bytes:
    """A request with ``headers`` (CRLF-separated lines) and a Content-Length for ``body``."""
    length = f"Content-Length: {len(body)}\r\n" if body else ""
    return f"{line}\r\n{headers}{length}\r\n".encode("latin-1") + body


class _Trickle(io.RawIOBase):
    """A stream that hands ``data`` over ``step`` bytes at a time, as a slow client would."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._step = data, step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self._step, len(self._data))
        buffer[:n], self._data = self._data[:n], self._data[n:]
        return n


class _Writes:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.writes.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


def handled(sim: FaxWSSimulator, data: bytes, step: int = 1 << 20) -> _http.Handler:
    """The simulator's handler after it handled one request from memory (its writes in
    ``wfile.writes``)."""
    handler = object.__new__(_http.Handler)
    handler.server = sim._server  # type: ignore[assignment]
    handler.client_address = ("127.0.0.1", 0)
    handler.rfile = io.BufferedReader(_Trickle(data, step))
    handler.wfile = _Writes()  # type: ignore[assignment]
    handler.close_connection = True
    handler.handle_one_request()
    return handler


def serve(sim: FaxWSSimulator, data: bytes, step: int = 1 << 20) -> list[bytes]:
    """One request handled by the simulator's handler from memory: what it wrote, each
    write apart."""
    writes: list[bytes] = handled(sim, data, step).wfile.writes  # type: ignore[attr-defined]
    return writes


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator() as simulator:
        yield simulator


# -- headers ---------------------------------------------------------------------------------


def test_headers_are_recorded_as_sent_the_first_of_a_name_kept(sim: FaxWSSimulator) -> None:
    headers = (
        "Host: 127.0.0.1\r\nContent-Type: application/soap+xml; charset=utf-8\r\n"
        "SOAPAction: \r\nx-ch-request-id:  rid-1 \r\nX-Twice: first\r\nX-Twice: second\r\n"
        "x-weird-token!#$%&'*+.^_`|~: v\tw\r\n"
    )
    answer = exchange(sim, request(headers))
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"x-ch-request-id: rid-1\r\n" in answer
    (record,) = sim.requests
    assert record.headers == {
        "Host": "127.0.0.1",
        "Content-Type": "application/soap+xml; charset=utf-8",
        "SOAPAction": "",
        "x-ch-request-id": "rid-1",
        "X-Twice": "first",
        "x-weird-token!#$%&'*+.^_`|~": "v\tw",
        "Content-Length": str(len(REPORT)),
    }
    assert record.deviations == ()


@pytest.mark.parametrize("value", ["\xb2", "-1", "+4", "0x10", "4 4", ""])
def test_a_content_length_that_is_not_ascii_digits_is_refused(
    sim: FaxWSSimulator, value: str
) -> None:
    answer = exchange(sim, request(f"Host: x\r\nContent-Length: {value}\r\n", body=b""))
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
    assert b"bad Content-Length" in answer
    assert answer.count(b"HTTP/1.1 ") == 1  # the connection closed: nothing else was read


@pytest.mark.parametrize(
    "line",
    [
        "Bad Header: x",  # a space in the name
        " folded: x",  # an obsolete folded line
        "no colon",
        ": no name",
        "X-A: a\rb",  # a CR inside a value
        "X-A: a\0b",
        "Caf\xe9: x",  # a name that is not a token
        "X(a): b",  # one the email package takes
        "X-A : b",
        "\tfolded: x",
        "X-A: a\rTransfer-Encoding: chunked",  # two header lines to the email package
        "X-A: a\r",  # a CR before the line's CRLF
        "From x",  # a Unix From line to the email package, dropped
    ],
)
def test_a_header_line_that_is_not_name_colon_value_is_refused(
    sim: FaxWSSimulator, line: str
) -> None:
    smuggled = "Transfer-Encoding: chunked\r\n"  # never taken for a header of this request
    answer = exchange(sim, request(f"Host: x\r\n{line}\r\n{smuggled}"))
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
    assert answer.count(b"HTTP/1.1 ") == 1  # the connection closed: nothing else was read
    assert sim.requests == []


@pytest.mark.parametrize("value", ["a\x0bb", "a\x0cb", "a\x1cb", "a\x85b", "\xc3\x85", "a\x01b"])
def test_a_value_holding_other_control_characters_is_kept_whole(
    sim: FaxWSSimulator, value: str
) -> None:
    # Some are line breaks to str.splitlines (0x85 is also the second byte of UTF-8's
    # "\xc5"), but not to HTTP, nor to the email package's parse.
    answer = exchange(sim, request(f"Host: x\r\nContent-Type: text/xml\r\nX-A: {value}\r\n"))
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:80]
    (record,) = sim.requests
    assert record.header("x-a") == value


@pytest.mark.parametrize("step", [1, 7, 64, 100_000])
def test_headers_arriving_in_pieces_are_read_as_when_they_arrive_at_once(
    sim: FaxWSSimulator, step: int
) -> None:
    headers = 'Host: x\r\nContent-Type: text/xml\r\nSOAPAction: ""\r\nX-Twice: 1\r\nX-Twice: 2\r\n'
    writes = serve(sim, request(headers), step)
    assert writes[0].startswith(b"HTTP/1.1 200 ")
    (record,) = sim.requests
    assert record.headers == {
        "Host": "x",
        "Content-Type": "text/xml",
        "SOAPAction": '""',
        "X-Twice": "1",
        "Content-Length": str(len(REPORT)),
    }


def test_bare_line_feeds_end_header_lines_too(sim: FaxWSSimulator) -> None:
    whole = request("Host: x\r\nContent-Type: text/xml\r\nSOAPAction: \r\n")
    assert exchange(sim, whole.replace(b"\r\n", b"\n")).startswith(b"HTTP/1.1 200 ")
    mixed = whole.replace(b"\r\n", b"\n", 3)  # the request line and two headers
    assert exchange(sim, mixed).startswith(b"HTTP/1.1 200 ")
    assert [r.header("content-type") for r in sim.requests] == ["text/xml", "text/xml"]


def test_too_many_or_too_long_header_lines_get_431(sim: FaxWSSimulator) -> None:
    get = "GET /nowhere HTTP/1.1"
    # http.client's bound: 100 lines, the empty one that ends them counted.
    most = "".join(f"X-{n}: {n}\r\n" for n in range(98)) + "Host: x\r\n"
    assert exchange(sim, request(most, b"", get)).startswith(b"HTTP/1.1 404 ")
    many = most + "X-One-Too-Many: 1\r\n"
    assert exchange(sim, request(many, b"", get)).startswith(b"HTTP/1.1 431 ")
    long_line = f"Host: x\r\nX-Long: {'a' * 70_000}\r\n"
    assert exchange(sim, request(long_line, b"", get)).startswith(b"HTTP/1.1 431 ")


class _Plain(BaseHTTPRequestHandler):
    """The standard library's handler, answering 200 to any POST."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.mark.parametrize(
    "line",
    [
        "POST /fax/v5 HTTP/1.1",
        "POST /fax/v5 HTTP/1.0",
        "POST /fax/v5 HTTP/1.x",
        "POST /fax/v5 HTTP/1.1.1",
        "POST /fax/v5 HTTP/01.01",
        "POST /fax/v5 HTTP/2.0",
        "POST /fax/v5 HTTP/1.1 extra",
        "POST /fax/v5",  # HTTP/0.9 knows only GET
        "POST //fax/v5 HTTP/1.1",  # "//path" is a path
        "   ",
    ],
)
def test_the_request_line_is_read_by_the_standard_librarys_rules(
    sim: FaxWSSimulator, line: str
) -> None:
    data = request("Host: x\r\nContent-Type: text/xml\r\nSOAPAction: \r\n", line=line)
    plain = ThreadingHTTPServer(("127.0.0.1", 0), _Plain)
    thread = threading.Thread(target=plain.serve_forever)
    thread.start()
    try:
        with socket.create_connection(plain.server_address[:2], timeout=30) as sock:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            expected = b""
            while chunk := sock.recv(65536):
                expected += chunk
    finally:
        plain.shutdown()
        thread.join()
        plain.server_close()
    # The status line, or the start of the page an HTTP/0.9 answer is (nothing for no line).
    assert exchange(sim, data)[:12] == expected[:12]


def test_expect_100_continue_is_answered_before_the_body(sim: FaxWSSimulator) -> None:
    head, _, body = request(
        "Host: x\r\nContent-Type: text/xml\r\nExpect: 100-continue\r\n"
    ).partition(b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as sock:
        sock.sendall(head + b"\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(body)
        assert b"HTTP/1.1 200 " in sock.recv(65536)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ("Transfer-Encoding: chunked\r\n", b"411"),
        ("Content-Length: 4\r\nContent-Length: 4\r\n", b"400"),
        ("Content-Length: 4\r\nX-A: a\rb\r\n", b"400"),
    ],
)
def test_a_refused_head_gets_its_refusal_not_100_continue(
    sim: FaxWSSimulator, headers: str, status: bytes
) -> None:
    head = f"POST /fax/v5 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n{headers}\r\n"
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as sock:
        sock.sendall(head.encode("latin-1"))
        assert sock.recv(100).startswith(b"HTTP/1.1 " + status + b" ")


# -- answers ---------------------------------------------------------------------------------


def test_an_answer_is_one_write_with_the_standard_head(sim: FaxWSSimulator) -> None:
    writes = serve(sim, request("Host: x\r\nContent-Type: text/xml\r\n"))
    assert len(writes) == 1  # head and body together
    head, _, body = writes[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    assert lines[1] == f"Server: {_http.Handler.server_version} {_http.Handler.sys_version}"
    assert lines[2].startswith("Date: ")
    assert lines[2].endswith(" GMT")
    assert lines[3] == "Content-Type: application/soap+xml; charset=utf-8"
    assert uuid.UUID(lines[4].removeprefix("x-ch-activity-id: ")).version == 4
    assert lines[5].startswith("x-ch-execution-time: ")
    assert lines[6] == f"Content-Length: {len(body)}"
    assert b"<return>false</return>" in body  # job J1 is unknown


def test_head_gets_the_head_alone(sim: FaxWSSimulator) -> None:
    answer = exchange(sim, b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"Content-Length: " in head
    assert rest == b""


def test_an_idle_connection_is_closed_after_the_idle_limit(
    sim: FaxWSSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_http, "IDLE", 1)
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""  # closed by the simulator, not by this time-out
        assert time.monotonic() - started < 25


# -- the request path's shortcuts -------------------------------------------------------------


def test_answers_are_written_whole_as_the_envelope_writes_them() -> None:
    answers = [
        GetFaxBroadcastReportResponse(return_=True, ws_error=WSError(0, "")),
        GetFaxBroadcastReportResponse(return_=False, ws_error=WSError(-5019, "Invalid <Job> ID")),
        FaxSendResponse(
            return_=True,
            fax_job_ids=FaxJobIds((FaxJobId("SIM1"), FaxJobId("SIM2"))),
            ttfp=30,
            ws_error=WSError(0, ""),
        ),
    ]
    for answer in answers:
        assert document(answer) == b"".join(envelope(answer))
    with_document = SendFax(
        "u",
        "p",
        FaxJobRecipients((FaxJobRecipient("+1 5", "", "", "", ""),)),
        FaxJobFiles((FaxJobFile(1, 101, b"%PDF"),)),
    )
    with pytest.raises(ValueError, match="holds documents"):
        document(with_document)


def test_a_parsed_request_is_freed_without_the_garbage_collector(tmp_path: object) -> None:
    body = REPORT
    gc.collect()
    gc.disable()
    try:
        received = Received(tmp_path)  # type: ignore[arg-type]
        received.feed(body)
        received.close()
        assert received.root is not None
        assert received.operation == "GetFaxBroadcastReport"
        gone = weakref.ref(received)
        del received
        assert gone() is None  # no reference cycle held it
    finally:
        gc.enable()


def test_a_report_request_is_read_as_it_is_sent() -> None:
    reader_ = RequestReader(lambda item: None)  # type: ignore[arg-type,return-value]
    reader_.feed(REPORT)
    reader_.close()
    assert reader_.root is not None
    sent = read_payload(soap_payload(reader_.root), OPERATIONS["GetFaxBroadcastReport"].input)
    assert sent == GetFaxBroadcastReport(DEMO_USER_ID, DEMO_PIN, "J1", 0, "")


def test_a_reports_answers_are_written_as_the_envelope_writer_writes_them(
    sim: FaxWSSimulator,
) -> None:
    accepted = GetFaxBroadcastReportResponse(return_=True, ws_error=WSError(0, ""))
    unknown = GetFaxBroadcastReportResponse(
        return_=False, ws_error=WSError(-5019, "Invalid Job ID")
    )
    # An injected error is answered in place of either.
    recipients = FaxJobRecipients((FaxJobRecipient("+1 5", "", "", "", ""),))
    job = sim._state.new_job(
        SendFax(DEMO_USER_ID, DEMO_PIN, recipients, FaxJobFiles(())), "pin", None, []
    )
    bodies = []
    for job_id in (job.job_ids[0], "SIM99999999"):
        sent = REPORT.replace(b"J1", job_id.encode())
        bodies.append(serve(sim, request(SOAP_HEADERS, sent))[0].partition(b"\r\n\r\n")[2])
    sim.inject(Fault.ws_error(7, "x & <y>"), operation="GetFaxBroadcastReport")
    bodies.append(serve(sim, request(SOAP_HEADERS))[0].partition(b"\r\n\r\n")[2])
    injected = GetFaxBroadcastReportResponse(return_=False, ws_error=WSError(7, "x & <y>"))
    assert bodies == [document(accepted), document(unknown), document(injected)]


def test_records_are_found_by_number_through_pruning() -> None:
    from faxws.testing._accounts import DEMO_ACCOUNT
    from faxws.testing._state import State

    state = State((DEMO_ACCOUNT,), retained_body_bytes=10, max_requests=3)

    def arrived(n: int) -> ReceivedRequest:
        body = b"%05d" % n
        return ReceivedRequest("POST", "/fax/v5", {}, body, received_at=float(n))

    tickets = []
    for n in range(5000):
        tickets.append(state.record(arrived(n)))
        state.settle(tickets[-1], status=200 + n % 3)
        if n == 4000:
            state.settle(tickets[3990], status=599)  # a forgotten record: no effect
    records = state.records()
    assert [r.received_at for r in records] == [4997.0, 4998.0, 4999.0]
    assert [r.status for r in records] == [200 + n % 3 for n in (4997, 4998, 4999)]
    # The budget keeps the newest two bodies (5 bytes each), the oldest dropped.
    assert [(r.body, r.body_retained) for r in records] == [
        (b"", False),
        (b"04998", True),
        (b"04999", True),
    ]
    assert state._retained_bytes == 10
    count, newest = state.recent_requests(10)
    assert (count, [(n, r.received_at) for n, r in newest]) == (
        3,
        [(5000, 4999.0), (4999, 4998.0), (4998, 4997.0)],  # numbered from 1
    )
    assert state.request(4998) == records[0]
    assert state.request(4997) is None  # forgotten
    assert state.recent_refusals(10, 10) == []
    assert len(state.requests) == 3


@pytest.mark.parametrize(
    "headers",
    [
        "Host: x\r\nX-Twice: 1\r\nX-Twice: 2\r\nx-twice: 3\r\n",
        "Host:x\r\nX-A:  a  b \t\r\nX-Empty:\r\nX-Blank: \t \r\nX-Tab:\tv\r\n",
        "Host: x\nX-A: caf\xe9\nX-B: a\x0bb\x85c\x01\r\nFrom: a\r\n",  # bare LFs, odd bytes
        "x-weird-token!#$%&'*+.^_`|~: v\tw\r\nX-Colons: a:b: c\r\n",
        "",
    ],
)
def test_the_headers_are_the_standard_librarys_and_the_fields_theirs_stripped(
    sim: FaxWSSimulator, headers: str
) -> None:
    data = request(headers)
    handler = handled(sim, data)
    stream = io.BytesIO(data)
    stream.readline()  # the request line
    expected = http.client.parse_headers(stream).items()
    assert len(sim.requests) == 1  # read (a refused header line leaves no record)
    assert handler.headers.items() == expected
    stripped = [(name, value.strip(" \t")) for name, value in expected]
    assert handler.pairs == stripped
    assert handler.fields == {name.lower(): value for name, value in reversed(stripped)}
    assert isinstance(handler.headers, http.client.HTTPMessage)
