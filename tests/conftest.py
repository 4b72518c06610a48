"""Shared fixtures: response documents, a raw-socket capture server, request helpers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import responses

GOLDEN = Path(__file__).parent / "golden"
BASE = "https://fax.example.com"
URL = f"{BASE}/fax/v5"
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"


def envelope(payload: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<SOAP-ENV:Envelope xmlns:SOAP-ENV="{SOAP}"><SOAP-ENV:Body>{payload}'
        "</SOAP-ENV:Body></SOAP-ENV:Envelope>"
    ).encode()


def send_response(
    job_ids: list[str], ttfp: int = 45, ok: bool = True, code: int = 0, text: str = ""
) -> bytes:
    """A FaxSendResponse, written with a namespace prefix as gSOAP does."""
    ids = "".join(f"<f:item><f:JobId>{j}</f:JobId></f:item>" for j in job_ids)
    return envelope(
        f'<f:FaxSendResponse xmlns:f="urn:FaxWS"><f:return>{str(ok).lower()}</f:return>'
        f"<f:FaxJobIds>{ids}</f:FaxJobIds><f:TTFP>{ttfp}</f:TTFP>"
        f"<f:WSError><f:ErrorCode>{code}</f:ErrorCode><f:ErrorString>{text}</f:ErrorString>"
        "</f:WSError></f:FaxSendResponse>"
    )


def report_response(ok: bool = True, code: int = 0, text: str = "") -> bytes:
    return envelope(
        f'<GetFaxBroadcastReportResponse xmlns="urn:FaxWS"><return>{str(ok).lower()}</return>'
        f"<WSError><ErrorCode>{code}</ErrorCode><ErrorString>{text}</ErrorString></WSError>"
        "</GetFaxBroadcastReportResponse>"
    )


def fault_response(code: str = "SOAP-ENV:Client", text: str = "bad request") -> bytes:
    return envelope(
        f"<SOAP-ENV:Fault><faultcode>{code}</faultcode><faultstring>{text}</faultstring>"
        "</SOAP-ENV:Fault>"
    )


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    """requests mocked: a test that expects no request asserts ``len(mocked.calls) == 0``."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rs:
        yield rs


@dataclass
class Captured:
    """What a capture server received: whole raw HTTP requests, in order."""

    requests: list[bytes] = field(default_factory=list)
    connections: int = 0


Reply = Callable[[bytes], bytes | None]


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def http_reply(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/xml; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


class CaptureServer:
    """A one-thread HTTP/1.1 server on 127.0.0.1 that records the raw bytes of each request.

    ``reply`` maps the raw request to the raw response; ``b""`` means: close the connection
    without answering; None: answer nothing and keep the connection open until the test ends.
    """

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.captured = Captured()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.captured.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            while not self._stop.is_set():
                raw = _read_request(conn)
                if not raw:
                    break
                self.captured.requests.append(raw)
                answer = self.reply(raw)
                if answer is None:
                    self._held.append(conn)
                    return
                if not answer:
                    break  # close without answering
                conn.sendall(answer)
        except OSError:
            pass
        conn.close()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        for conn in self._held:
            conn.close()
        self._thread.join(2)


@pytest.fixture
def capture_server() -> Iterator[Callable[[Reply], CaptureServer]]:
    servers: list[CaptureServer] = []

    def start(reply: Reply) -> CaptureServer:
        server = CaptureServer(reply)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
