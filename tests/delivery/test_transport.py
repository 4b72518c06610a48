"""Connections, time-outs and retries, against real sockets on 127.0.0.1, for each face."""

from __future__ import annotations

import collections
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import responses

from conftest import (
    URL,
    CaptureServer,
    Face,
    http_reply,
    parse_request,
    report_response,
    send_response,
)
from faxws import (
    ConnectError,
    FaxClient,
    FaxFile,
    HTTPStatusError,
    RequestTimeoutError,
    TransportError,
)
from scripted import Conn, ScriptedServer


def test_connection_refused_is_a_connect_error_never_delivered(
    refused_port: int, face: Face
) -> None:
    client = face.client(f"http://127.0.0.1:{refused_port}", user_id="u", pin="1", retries=0)
    with pytest.raises(ConnectError) as info:
        client.send_fax(["+1 555 0100"], [FaxFile(b"x", 101)], request_id="rid-c")
    assert info.value.maybe_delivered is False
    assert info.value.request_id == "rid-c"


def test_read_timeout_on_send_fax_is_not_retried(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    server = capture_server(lambda raw: None)  # reads the request, never answers
    client = face.client(server.url, user_id="u", pin="1", timeout=(2, 0.3), retries=3)
    with pytest.raises(RequestTimeoutError) as info:
        client.send_fax(["+1 555 0100"], [FaxFile(b"x", 101)], request_id="rid-t")
    assert info.value.maybe_delivered is True
    assert len(server.captured.requests) == 1


def test_reset_after_request_on_send_fax_is_not_retried(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    server = capture_server(lambda raw: b"")  # closes the connection without answering
    client = face.client(server.url, user_id="u", pin="1", retries=3, retry_backoff=0)
    with pytest.raises(TransportError) as info:
        client.send_fax(["+1 555 0100"], [FaxFile(b"x", 101)])
    assert info.value.maybe_delivered is True
    assert len(server.captured.requests) == 1


def test_report_is_retried_on_503_with_the_same_request_id(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    answers = iter(
        [
            http_reply(b"busy", "503 Service Unavailable"),
            http_reply(b"gateway", "502 Bad Gateway"),
            http_reply(report_response()),
        ]
    )
    server = capture_server(lambda raw: next(answers))
    client = face.client(server.url, user_id="u", pin="1", retries=2, retry_backoff=0.01)
    result = client.get_fax_broadcast_report("J1", request_id="rid-r")
    assert result.request_id == "rid-r"
    ids = [
        line
        for raw in server.captured.requests
        for line in raw.split(b"\r\n")
        if line.startswith(b"x-ch-request-id:")
    ]
    assert ids == [b"x-ch-request-id: rid-r"] * 3


def test_report_retries_are_bounded(capture_server: type[CaptureServer], face: Face) -> None:
    server = capture_server(lambda raw: http_reply(b"down", "504 Gateway Timeout"))
    client = face.client(server.url, user_id="u", pin="1", retries=2, retry_backoff=0)
    with pytest.raises(HTTPStatusError) as info:
        client.get_fax_broadcast_report("J1")
    assert info.value.status_code == 504
    assert len(server.captured.requests) == 3


def test_send_fax_is_not_retried_on_503(capture_server: type[CaptureServer], face: Face) -> None:
    server = capture_server(lambda raw: http_reply(b"busy", "503 Service Unavailable"))
    client = face.client(server.url, user_id="u", pin="1", retries=2, retry_backoff=0)
    with pytest.raises(HTTPStatusError) as info:
        client.send_fax(["+1 555 0100"], [FaxFile(b"x", 101)])
    assert info.value.maybe_delivered is True
    assert len(server.captured.requests) == 1


def test_a_chunked_answer_is_read_whole_whatever_content_length_says(
    capture_server: type[CaptureServer],
) -> None:
    """A chunked answer that also carries a Content-Length (the header HTTP says to ignore
    then) is read to its last chunk, not cut where Content-Length would end it."""
    body = report_response()
    first, rest = body[:5], body[5:]
    chunked = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Length: 5\r\nConnection: close\r\n\r\n"
        + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
        % (len(first), first, len(rest), rest)
    )
    server = capture_server(lambda raw: chunked)
    result = FaxClient(server.url, user_id="u", pin="1").get_fax_broadcast_report("J1")
    assert result.job_id == "J1"


def test_a_content_length_of_other_digits_is_no_length(
    serve: Callable[..., ScriptedServer],
) -> None:
    """``Content-Length: \u00b2`` (a digit to str.isdigit, not a number to int) is read as no
    length at all: the answer runs to the connection's close, as the standard library reads
    it, and nothing fails on the header."""
    body = report_response()
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: \xb2\r\n"
        b"Connection: close\r\n\r\n" + body
    )

    def script(conn: Conn) -> None:
        conn.read_request()
        conn.send(answer)  # and the connection closes

    server = serve(script)
    result = FaxClient(server.url(), user_id="u", pin="1").get_fax_broadcast_report("J1")
    assert result.job_id == "J1"


def test_connections_are_pooled(capture_server: type[CaptureServer], face: Face) -> None:
    server = capture_server(lambda raw: http_reply(report_response()))
    client = face.client(server.url, user_id="u", pin="1")
    for _ in range(5):
        client.get_fax_broadcast_report("J1")
    assert len(server.captured.requests) == 5
    assert server.captured.connections == 1


def test_an_http_1_0_server_keeps_the_connection_it_is_asked_to_keep(
    serve: Callable[..., ScriptedServer], face: Face
) -> None:
    """An HTTP/1.0 server (or proxy) keeps a connection only when the request says
    ``Connection: keep-alive``: both clients say it, so their calls share one connection."""
    body = report_response()

    def script(conn: Conn) -> None:
        while (request := conn.read_request()) is not None:
            keep = (request.header("Connection") or "").lower() == "keep-alive"
            conn.send(
                b"HTTP/1.0 200 OK\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n%s\r\n%s"
                % (len(body), b"Connection: keep-alive\r\n" if keep else b"", body)
            )
            if not keep:
                return

    server = serve(script)
    client = face.client(server.url(), user_id="u", pin="1")
    for _ in range(3):
        client.get_fax_broadcast_report("J1")
    assert len(server.requests) == 3
    assert server.connections == 1


def test_a_client_copied_or_unpickled_still_calls(
    capture_server: type[CaptureServer],
) -> None:
    import copy
    import pickle

    server = capture_server(lambda raw: http_reply(report_response()))
    client = FaxClient(server.url, user_id="u", pin="1")
    client.get_fax_broadcast_report("J1")
    for other in (copy.deepcopy(client), pickle.loads(pickle.dumps(client))):  # noqa: S301
        with other:
            assert other.get_fax_broadcast_report("J2").job_id == "J2"
    client.close()


def test_a_call_makes_few_system_calls_on_a_kept_connection(
    capture_server: type[CaptureServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every system call on the socket lets go of the GIL, a chance for each other thread
    sharing the client to take it. On a kept connection a small request goes out in one write
    (head and body together); the time-out is set where urllib3 sets it (twice per call) and
    again only before a further read of the answer, not for each header line."""
    answer = http_reply(report_response(), extra="X-A: 1\r\nX-B: 2\r\nX-C: 3\r\n")
    server = capture_server(lambda raw: answer)
    client = FaxClient(server.url, user_id="u", pin="1")
    client.get_fax_broadcast_report("J1")  # the connection opened
    counts: collections.Counter[str] = collections.Counter()
    writes: list[bytes] = []

    def spy(owner: object, name: str, counted_as: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        def counted(sock: socket.socket, *args: Any) -> Any:
            try:
                ours = sock.getpeername()[1] == server.port  # not the server's own socket
            except OSError:
                ours = False
            if ours:
                counts[counted_as] += 1
                if counted_as == "send":
                    writes.append(bytes(args[0]))
            return original(sock, *args)

        monkeypatch.setattr(owner, name, counted)

    for name in ("send", "sendall", "settimeout", "recv_into"):
        spy(socket.socket, name, "send" if name == "sendall" else name)
    calls = 5
    for _ in range(calls):
        client.get_fax_broadcast_report("J1")
    monkeypatch.undo()
    client.close()
    assert len(writes) == calls
    assert all(w.startswith(b"POST ") and w.endswith(b"</soap:Envelope>") for w in writes)
    assert counts["recv_into"] >= calls
    assert counts["settimeout"] <= 2 * calls + (counts["recv_into"] - calls)


def test_netrc_and_proxy_variables_are_ignored(
    capture_server: type[CaptureServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    face: Face,
) -> None:
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password other\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    face.client(server.url, user_id="u", token="the-token").send_fax(
        ["+1 555 0100"], [FaxFile(b"x", 101)]
    )
    [raw] = server.captured.requests
    assert parse_request(raw).headers["authorization"] == "Bearer the-token"


def test_timeout_is_passed_to_every_request(mocked: responses.RequestsMock) -> None:
    mocked.post(URL, body=report_response())
    FaxClient(
        "https://fax.example.com", user_id="u", pin="1", timeout=(1.5, 7)
    ).get_fax_broadcast_report("J1")
    assert mocked.calls[0].request.req_kwargs["timeout"] == (1.5, 7)
    assert mocked.calls[0].request.req_kwargs["verify"] is True


def test_chunked_and_gzipped_answers_are_read(
    capture_server: type[CaptureServer], face: Face
) -> None:
    import gzip

    packed = gzip.compress(report_response())
    halves = [packed[: len(packed) // 2], packed[len(packed) // 2 :]]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(h), h) for h in halves) + b"0\r\n\r\n"
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    server = capture_server(lambda raw: head + chunked)
    client = face.client(server.url, user_id="u", pin="1")
    assert client.get_fax_broadcast_report("J1", request_id="gz").request_id == "gz"
