"""Reliability under hostile responses and network faults; each guarantee is a named test.

Every case asserts the typed error, the ``maybe_delivered`` flag, and that a SendFax reached
the service at most once, for each face (FaxClient and AsyncFaxClient).
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    CaptureServer,
    Face,
    envelope,
    fault_response,
    http_reply,
    report_response,
    send_response,
)
from faxws import (
    AuthenticationError,
    ClientOptions,
    ConnectError,
    FaxFile,
    FaxWSError,
    HTTPStatusError,
    ProtocolError,
    RequestTimeoutError,
    ServiceError,
    SoapFaultError,
    TransportError,
)
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator
from faxws.transport import MockTransport, Request, Response

PDF = FaxFile(b"%PDF-1.4", 101)


@contextlib.contextmanager
def peak_memory() -> Iterator[list[int]]:
    """Traces Python allocations inside the block; the list gets the peak in bytes."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
        peak.append(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


#: Not a single digit: a secret is masked wherever it is in a message, in the numbers faxws
#: writes there too, which these tests read.
PIN = "pin-4321"


def send(client: Any) -> object:
    return client.send_fax(["+1 555 0100"], [PDF], request_id="rid-rel")


# -- hostile responses ---------------------------------------------------------------------


@pytest.fixture
def marker_file(tmp_path: Path) -> Path:
    path = tmp_path / "marker.txt"
    path.write_text("MARKER-7f3e-LOCAL-FILE")
    return path


def hostile_bodies(marker: Path, dtd_url: str) -> Iterator[tuple[str, bytes, str]]:
    """(name, raw HTTP response, words of the error)."""
    laughs = "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    yield (
        "billion-laughs",
        http_reply(f'<!DOCTYPE r [<!ENTITY l0 "lol">{laughs}]><r>&l9;</r>'.encode()),
        "DOCTYPE",
    )
    yield (
        "xxe-local-file",
        http_reply(
            f'<!DOCTYPE r [<!ENTITY x SYSTEM "file://{marker}">]>'.encode() + envelope("<x>&x;</x>")
        ),
        "DOCTYPE",
    )
    yield (
        "external-dtd",
        http_reply(f'<!DOCTYPE r SYSTEM "{dtd_url}">'.encode() + report_response()),
        "DOCTYPE",
    )
    yield ("deep-nesting", http_reply(b"<a>" * 10000 + b"</a>" * 10000), "not well-formed")
    yield ("non-xml", http_reply(b"\x00\x01binary junk\xff"), "not well-formed")
    yield (
        "wrong-namespace",
        http_reply(report_response().replace(b'xmlns="urn:FaxWS"', b'xmlns="urn:NotFaxWS"')),
        "expected the element {urn:FaxWS}GetFaxBroadcastReportResponse",
    )
    yield (
        "missing-part",
        http_reply(
            envelope(
                '<GetFaxBroadcastReportResponse xmlns="urn:FaxWS"><return>true'
                "</return></GetFaxBroadcastReportResponse>"
            )
        ),
        "lacks /GetFaxBroadcastReportResponse/WSError",
    )
    yield (
        "invalid-utf8",
        http_reply(report_response().replace(b"<return>", b"<return>\xc3\x28")),
        "not well-formed",
    )


@pytest.mark.parametrize(
    "case",
    [
        "billion-laughs",
        "xxe-local-file",
        "external-dtd",
        "deep-nesting",
        "non-xml",
        "wrong-namespace",
        "missing-part",
        "invalid-utf8",
    ],
)
def test_hostile_response_gives_a_protocol_error(
    capture_server: type[CaptureServer],
    marker_file: Path,
    case: str,
    face: Face,
) -> None:
    dtd_server = capture_server(lambda raw: http_reply(b'<!ENTITY x "DTD-FETCHED">'))
    bodies = {
        name: (raw, words)
        for name, raw, words in hostile_bodies(marker_file, f"{dtd_server.url}/evil.dtd")
    }
    raw, words = bodies[case]
    server = capture_server(lambda request: raw)
    client = face.client(server.url, user_id="u", pin=PIN)
    with peak_memory() as peak, pytest.raises(ProtocolError) as info:
        client.get_fax_broadcast_report("J1", request_id="rid-hostile")
    assert peak[0] < 20 * 1024 * 1024
    err = info.value
    assert words in err.message
    assert err.request_id == "rid-hostile"
    assert len(err.body_excerpt) <= 500
    for text in (str(err), repr(err), err.body_excerpt):
        assert "MARKER-7f3e-LOCAL-FILE" not in text
        assert "DTD-FETCHED" not in text
    assert dtd_server.captured.requests == []


def test_html_error_page_is_an_http_status_error(
    capture_server: type[CaptureServer], face: Face
) -> None:
    page = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
    server = capture_server(lambda raw: http_reply(page, "502 Bad Gateway"))
    client = face.client(server.url, user_id="u", pin=PIN, retries=0)
    with pytest.raises(HTTPStatusError) as info:
        send(client)
    assert (info.value.status_code, info.value.maybe_delivered) == (502, True)
    assert "502 Bad Gateway" in info.value.body_excerpt


def test_fifty_megabyte_junk_body_is_refused_in_bounded_memory(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    reply = http_reply(b"J" * (50 * 1024 * 1024))  # built before memory is traced
    server = capture_server(lambda raw: reply)
    client = face.client(server.url, user_id="u", pin=PIN)
    with peak_memory() as peak, pytest.raises(ProtocolError, match="larger than 10485760 bytes"):
        send(client)
    assert peak[0] < 25 * 1024 * 1024  # the 10 MiB cap, not the 50 MB body
    assert len(server.captured.requests) == 1


def test_fault_with_a_huge_detail(capture_server: type[CaptureServer], face: Face) -> None:
    detail = "D" * (5 * 1024 * 1024)
    body = envelope(
        f"<SOAP-ENV:Fault><faultcode>SOAP-ENV:Server</faultcode><faultstring>{'x' * 5000}"
        f"</faultstring><detail>{detail}</detail></SOAP-ENV:Fault>"
    )
    server = capture_server(lambda raw: http_reply(body, "500 Internal Server Error"))
    with pytest.raises(SoapFaultError) as info:
        send(face.client(server.url, user_id="u", pin=PIN))
    assert len(info.value.fault_string) <= 500
    assert len(str(info.value)) < 700
    assert "DDDD" not in str(info.value)


def test_html_page_with_status_200_is_a_protocol_error(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    server = capture_server(lambda raw: http_reply(b"<html><body>Maintenance</body></html>"))
    with pytest.raises(ProtocolError, match="not a SOAP envelope"):
        send(face.client(server.url, user_id="u", pin=PIN))


# -- network faults ----------------------------------------------------------------------------


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator() as s:
        yield s


def client_for(sim: FaxWSSimulator, face: Face, **kw: object) -> Any:
    kw.setdefault("retries", 2)
    kw.setdefault("retry_backoff", 0.01)
    return face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, **kw)


def test_connection_refused_is_not_delivered_and_may_be_retried(
    refused_port: int, face: Face
) -> None:
    port = refused_port
    started = time.monotonic()
    # Each wait its whole bound (no jitter): 0.05, then 0.1.
    options = ClientOptions(retries=2, retry_backoff=0.05, retry_random=lambda: 1.0)
    client = face.client(f"http://127.0.0.1:{port}", user_id="u", pin=PIN, options=options)
    with pytest.raises(ConnectError) as info:
        send(client)
    assert info.value.maybe_delivered is False
    assert time.monotonic() - started >= 0.15  # two retries with backoff 0.05 + 0.1


def mock_client(face: Face, handler: Callable[[Request], Response], **settings: Any) -> Any:
    """A client of ``face`` whose exchanges ``handler`` answers, with no network."""
    transport = MockTransport(handler)
    options = ClientOptions(transport=transport, **settings)
    return face.client("https://fax.example.com", user_id="u", pin=PIN, options=options)


def test_send_fax_is_retried_after_a_refused_connection(face: Face) -> None:
    answers: list[Response | FaxWSError] = [
        ConnectError("cannot connect: Connection refused; nothing was sent"),
        Response(200, {}, send_response(["J1"])),
    ]
    seen: list[str] = []

    def handler(request: Request) -> Response:
        seen.append(request.headers["x-ch-request-id"])
        answer = answers.pop(0)
        if isinstance(answer, FaxWSError):
            raise answer
        return answer

    client = mock_client(face, handler, retry_backoff=0)
    assert client.send_fax(["+1 555 0100"], [PDF], "rid-retry").job_ids == ("J1",)
    assert seen == ["rid-retry"] * 2


def test_connect_timeout_is_not_delivered(face: Face) -> None:
    # A listener whose backlog is full: the kernel drops further SYNs, so connect() hangs.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):
            f = socket.socket()
            f.setblocking(False)
            f.connect_ex(("127.0.0.1", port))
            fillers.append(f)
        # Once the first filler is connected the accept queue is full: later SYNs are dropped.
        assert select.select([], [fillers[0]], [], 30)[1]
        client = face.client(
            f"http://127.0.0.1:{port}", user_id="u", pin=PIN, timeout=(0.3, 60), retries=0
        )
        with pytest.raises(RequestTimeoutError) as info:
            send(client)
        assert info.value.maybe_delivered is False
        assert "nothing was sent" in info.value.message
    finally:
        for f in fillers:
            f.close()
        listener.close()


FAULT_CASES = [
    ("read-timeout", Fault.delay_response(1.5), RequestTimeoutError, True),
    ("reset-mid-response", Fault.reset_mid_response(), TransportError, True),
    ("close-after-read", Fault.close_after_read(), TransportError, True),
    ("close-before-read", Fault.close_before_read(), TransportError, True),
    ("500", Fault.html_500(), HTTPStatusError, True),
    ("502", Fault.http_status(502), HTTPStatusError, True),
    ("503", Fault.http_status(503), HTTPStatusError, True),
    ("504", Fault.http_status(504), HTTPStatusError, True),
    ("401", Fault.http_status(401), AuthenticationError, False),
    ("403", Fault.http_status(403), AuthenticationError, False),
    ("slow-drip", Fault.slow_drip(10.0), RequestTimeoutError, True),
]


@pytest.mark.parametrize(
    ("fault", "error", "maybe_delivered"),
    [pytest.param(f, e, m, id=i) for i, f, e, m in FAULT_CASES],
)
def test_send_fax_fault_maps_to_typed_error_and_is_sent_once(
    sim: FaxWSSimulator,
    fault: Fault,
    error: type[FaxWSError],
    maybe_delivered: bool,
    face: Face,
) -> None:
    operation = None if fault.kind == "close_before_read" else "SendFax"
    sim.inject(fault, operation=operation, times=5)
    with pytest.raises(error) as info:
        send(client_for(sim, face, timeout=(2, 0.5)))
    assert info.value.maybe_delivered is maybe_delivered
    assert info.value.request_id == "rid-rel"
    assert len(sim.requests) == 1


@pytest.mark.parametrize(
    "fault",
    [
        Fault.http_status(502),
        Fault.http_status(503),
        Fault.http_status(504),
        Fault.close_after_read(),
        Fault.reset_mid_response(),
    ],
    ids=["502", "503", "504", "close-after-read", "reset"],
)
def test_report_is_retried_with_backoff_and_the_same_request_id(
    sim: FaxWSSimulator,
    fault: Fault,
    face: Face,
) -> None:
    options = ClientOptions(retries=2, retry_backoff=0.05, retry_random=lambda: 1.0)
    client = face.client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, options=options)
    job = client.send_fax(["+1 555 0100"], [PDF]).job_ids[0]
    sim.inject(fault, operation="GetFaxBroadcastReport", times=2)
    started = time.monotonic()
    result = client.get_fax_broadcast_report(job, request_id="rid-again")
    assert time.monotonic() - started >= 0.15  # backoff 0.05, then 0.1
    reports = sim.requests_for("GetFaxBroadcastReport")
    assert [r.header("x-ch-request-id") for r in reports] == ["rid-again"] * 3
    assert result.request_id == "rid-again"


def test_report_retries_default_to_two(face: Face) -> None:
    seen: list[Request] = []

    def busy(request: Request) -> Response:
        seen.append(request)
        return Response(503, {}, b"busy")

    with pytest.raises(HTTPStatusError):
        mock_client(face, busy, retry_backoff=0).get_fax_broadcast_report("J1")
    assert len(seen) == 3


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (Response(500, {}, fault_response()), SoapFaultError),
        (Response(200, {}, report_response(ok=False, code=-5001, text="busy")), ServiceError),
    ],
    ids=["fault", "service-error"],
)
def test_report_is_never_retried_on_faults_or_service_errors(
    answer: Response, error: type[FaxWSError], face: Face
) -> None:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return answer

    with pytest.raises(error):
        mock_client(face, handler, retry_backoff=0).get_fax_broadcast_report("J1")
    assert len(seen) == 1


def test_fifty_megabyte_chunked_junk_is_cut_off_at_the_cap(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    block = b"J" * (1024 * 1024)
    chunk = b"%x\r\n%s\r\n" % (len(block), block)
    reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 50 + b"0\r\n\r\n"
    server = capture_server(lambda raw: reply)
    client = face.client(server.url, user_id="u", pin=PIN)
    with peak_memory() as peak, pytest.raises(ProtocolError, match="larger than 10485760 bytes"):
        send(client)
    assert peak[0] < 25 * 1024 * 1024


def test_a_dtd_in_a_utf16_response_is_refused(
    capture_server: type[CaptureServer], face: Face
) -> None:
    body = (
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY x "MARKER-U16">]>'
        '<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>'
        "<s:Fault><faultcode>c</faultcode><faultstring>&x;</faultstring></s:Fault>"
        "</s:Body></s:Envelope>"
    ).encode("utf-16")
    server = capture_server(lambda raw: http_reply(body))
    with pytest.raises(ProtocolError, match="DTD") as info:
        face.client(server.url, user_id="u", pin=PIN).get_fax_broadcast_report("J")
    assert "MARKER-U16" not in str(info.value)


def test_a_token_endpoint_failure_carries_the_calls_request_id(
    refused_port: int, face: Face
) -> None:
    provider = face.provider(f"http://127.0.0.1:{refused_port}/token", "cid", "secret")
    client = face.client("https://fax.example.com", user_id="u", token=provider, retries=0)
    with pytest.raises(ConnectError) as info:
        send(client)
    assert info.value.request_id == "rid-rel"
    assert info.value.maybe_delivered is False  # the fax request was never written
    assert "Connection refused" in info.value.message


def test_a_failing_token_provider_carries_the_calls_request_id(face: Face) -> None:
    def provider() -> str:
        raise RuntimeError("vault said: secret-in-message")

    client = face.client("https://fax.example.com", user_id="u", token=provider)
    with pytest.raises(AuthenticationError) as info:
        send(client)
    assert info.value.request_id == "rid-rel"
    assert "secret-in-message" not in str(info.value)


def test_the_token_response_is_read_with_a_size_cap(
    capture_server: type[CaptureServer], face: Face
) -> None:
    huge = b'{"access_token": "' + b"a" * (1 << 20) + b'"}'
    server = capture_server(lambda raw: http_reply(huge))
    provider = face.provider(f"{server.url}/token", "cid", "secret")
    with pytest.raises(ProtocolError) as info:
        face.fetch_token(provider)
    assert "larger than 65536 bytes" in info.value.message


def test_an_unexpected_exception_below_a_call_becomes_a_faxws_error(
    capture_server: type[CaptureServer], monkeypatch: pytest.MonkeyPatch, face: Face
) -> None:
    import faxws.client

    def broken(*args: object, **kwargs: object) -> object:
        raise KeyError("bug")

    monkeypatch.setattr(faxws.client, "interpret", broken)
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    client = face.client(server.url, user_id="u", pin=PIN)
    with pytest.raises(FaxWSError) as info:
        send(client)
    assert type(info.value) is FaxWSError
    assert info.value.request_id == "rid-rel"
    assert info.value.maybe_delivered is True
    # Named, not chained: an exception's arguments may hold the request and its secrets.
    assert "unexpected KeyError at test_reliability.py:" in info.value.message
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
    assert len(server.captured.requests) == 1


@pytest.mark.parametrize(
    "answer",
    [
        http_reply(b"<html>login page</html>", "200 OK"),
        http_reply(b"oops", "500 Internal Server Error"),
        http_reply(b'{"access_token": "t", "token_type": "mac"}'),
    ],
    ids=["html", "500", "not bearer"],
)
def test_a_failed_token_fetch_is_never_maybe_delivered(
    capture_server: type[CaptureServer],
    answer: bytes,
    face: Face,
) -> None:
    token_server = capture_server(lambda raw: answer)
    fax_server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    provider = face.provider(f"{token_server.url}/token", "cid", "secret")
    client = face.client(fax_server.url, user_id="u", token=provider, retries=0)
    with pytest.raises(FaxWSError) as info:
        send(client)
    assert info.value.maybe_delivered is False  # the fax request was never written
    assert info.value.request_id == "rid-rel"
    assert fax_server.captured.connections == 0


@pytest.mark.parametrize(
    ("code", "maybe_delivered"),
    [
        ("soap:Client", False),
        ("SOAP-ENV:Client", False),
        ("soap:Client.Authentication", False),
        ("soap:Server", True),
        ("SOAP-ENV:Server", True),
        ("anything-else", True),
    ],
)
def test_a_server_fault_may_follow_delivery_and_a_client_fault_does_not(
    capture_server: type[CaptureServer],
    code: str,
    maybe_delivered: bool,
    face: Face,
) -> None:
    from conftest import fault_response

    server = capture_server(
        lambda raw: http_reply(fault_response(code, "Timeout expired"), "500 Internal Error")
    )
    with pytest.raises(SoapFaultError) as info:
        send(face.client(server.url, user_id="u", pin=PIN, retries=3))
    assert info.value.maybe_delivered is maybe_delivered
    assert len(server.captured.requests) == 1


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
@pytest.mark.parametrize(
    "form",
    [
        '<!DOCTYPE r SYSTEM "{url}"><r>&e;</r>',
        '<!DOCTYPE r [<!ENTITY x SYSTEM "{url}">]><r>&x;</r>',
        '<!DOCTYPE r [<!ENTITY % p SYSTEM "{url}"> %p;]><r>&e;</r>',
    ],
    ids=["external DTD", "external entity", "external parameter entity"],
)
def test_a_response_never_makes_the_client_open_an_external_file(
    capture_server: type[CaptureServer],
    tripwire: object,
    form: str,
    encoding: str,
    face: Face,
) -> None:
    """A UTF-16 answer gets past the byte scan for DOCTYPE; the parser itself must not open
    what it names (a named pipe that records any open)."""
    url = tripwire.path.as_uri()  # type: ignore[attr-defined]
    document = f'<?xml version="1.0" encoding="{encoding.upper()}"?>' + form.format(url=url)
    body = document.encode(encoding)
    server = capture_server(lambda raw: http_reply(body))
    with pytest.raises(ProtocolError, match="DTD"):
        send(face.client(server.url, user_id="u", pin=PIN, retries=0))
    tripwire.close()  # type: ignore[attr-defined]
    assert tripwire.opened is False  # type: ignore[attr-defined]
