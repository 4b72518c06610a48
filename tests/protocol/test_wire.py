"""The request on the wire: headers, envelope and element order, byte for byte, from every
face (FaxClient, AsyncFaxClient, zeep through faxws.zeep)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from conftest import (
    GOLDEN,
    URL,
    CaptureServer,
    Face,
    http_reply,
    parse_request,
    report_response,
    send_response,
)
from faxws import FaxClient, FaxFile, FileType, Recipient

USER = "mbx1234567890"
PIN = "s3cret-PIN"
TOKEN = "tok-123.abc"
PDF = b"%PDF-1.4\n%golden\n"


def send(client: FaxClient) -> None:
    client.send_fax(
        [
            Recipient("+1 555 0100", company="ACME & Sons", title="Dr", name="Bob <B>"),
            Recipient("+44 20 7946 0000", secure_csid="CSID-9"),
        ],
        [FaxFile(PDF, FileType.PDF), FaxFile(b"hello fax\n", FileType.TEXT)],
        request_id="req-golden-1",
    )


def report(client: FaxClient) -> None:
    client.get_fax_broadcast_report(
        "JOB-42", recipient_type=1, recip_address="ops@example.com", request_id="req-golden-2"
    )


def zeep_send(client: Any) -> None:
    empty = dict.fromkeys(("RecipCompany", "RecipTitle", "RecipName", "RecipSecureCSID"), "")
    recipients = [
        {
            **empty,
            "RecipFaxNumber": "+1 555 0100",
            "RecipCompany": "ACME & Sons",
            "RecipTitle": "Dr",
            "RecipName": "Bob <B>",
        },
        {**empty, "RecipFaxNumber": "+44 20 7946 0000", "RecipSecureCSID": "CSID-9"},
    ]
    with client.settings(extra_http_headers={"x-ch-request-id": "req-golden-1"}):
        client.service.SendFax(
            Recipients={"item": recipients},
            FaxJobFiles={
                "item": [
                    {"FileIndex": 1, "FileTypeId": 101, "FileData": PDF},
                    {"FileIndex": 2, "FileTypeId": 105, "FileData": b"hello fax\n"},
                ]
            },
        )


def zeep_report(client: Any) -> None:
    with client.settings(extra_http_headers={"x-ch-request-id": "req-golden-2"}):
        client.service.GetFaxBroadcastReport(
            JobId="JOB-42", RecipientType=1, RecipAddress="ops@example.com"
        )


#: The faces that write these requests: the typed clients (sync and async), and zeep's client
#: through faxws.zeep with the packaged WSDL and with the vendor's.
FACES = ("FaxClient", "AsyncFaxClient", "zeep", "zeep-vendor")
VENDOR_WSDL = Path(__file__).parents[1] / "fixtures" / "vendor" / "FaxWS.wsdl"


def call_on(
    face: str,
    make_face: Callable[[str], Face],
    url: str,
    creds: dict[str, str],
    call: Callable[[Any], None],
) -> None:
    if face in ("FaxClient", "AsyncFaxClient"):
        typed = make_face("sync" if face == "FaxClient" else "async")
        call(typed.client(url, user_id=USER, **creds))
        return
    from faxws.zeep import make_client

    wsdl = VENDOR_WSDL if face == "zeep-vendor" else None
    client = make_client(url, user_id=USER, wsdl=wsdl, **creds)  # type: ignore[arg-type]
    (zeep_send if call is send else zeep_report)(client)


CASES = {
    "send_fax_oauth": ({"token": TOKEN}, send, send_response(["J1", "J2"])),
    "send_fax_pin": ({"pin": PIN}, send, send_response(["J1", "J2"])),
    "report_oauth": ({"token": TOKEN}, report, report_response()),
    "report_pin": ({"pin": PIN}, report, report_response()),
}


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_body_matches_golden_file(
    capture_server: type[CaptureServer], make_face: Callable[[str], Face], name: str, face: str
) -> None:
    creds, call, answer = CASES[name]
    server = capture_server(lambda raw: http_reply(answer))
    call_on(face, make_face, server.url, creds, call)
    [raw] = server.captured.requests
    assert parse_request(raw).body == (GOLDEN / f"{name}.xml").read_bytes()


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_headers_are_exactly_the_contract(
    capture_server: type[CaptureServer], make_face: Callable[[str], Face], name: str, face: str
) -> None:
    creds, call, answer = CASES[name]
    server = capture_server(lambda raw: http_reply(answer))
    call_on(face, make_face, server.url, creds, call)
    [raw] = server.captured.requests
    request = parse_request(raw)
    assert request.line == b"POST /fax/v5 HTTP/1.1"
    assert len(request.names) == len(set(request.names))  # each header once
    h = request.headers
    assert h["host"] == f"127.0.0.1:{server.port}"
    assert h["content-type"] == "application/soap+xml; charset=utf-8"
    assert "soapaction" in h
    assert h["soapaction"] == ""
    assert h["x-ch-request-id"].startswith("req-golden-")
    assert int(h["content-length"]) == len(request.body)
    assert "transfer-encoding" not in h
    # The same on both faces, whatever decoders are installed; HTTP/1.0 peers keep the
    # connection only when asked.
    assert h["accept-encoding"] == "gzip, deflate"
    assert h["connection"] == "keep-alive"
    if "token" in creds:
        assert h["authorization"] == f"Bearer {TOKEN}"
        assert b"<strPIN/>" in request.body
    else:
        assert "authorization" not in h
        assert f"<strPIN>{PIN}</strPIN>".encode() in request.body


def test_raw_bytes_on_a_real_socket(capture_server: type[CaptureServer], face: Face) -> None:
    """What leaves the socket: request line, the headers once each, an empty SOAPAction."""
    server = capture_server(lambda raw: http_reply(report_response()))
    client = face.client(server.url, user_id=USER, pin=PIN)
    report(client)
    raw = server.captured.requests[0]
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /fax/v5 HTTP/1.1"
    fields = [line.split(b":", 1)[0].lower() for line in lines[1:]]
    assert len(fields) == len(set(fields))
    assert b"SOAPAction: " in lines or b"SOAPAction:" in lines
    assert b"Content-Type: application/soap+xml; charset=utf-8" in lines
    assert f"Content-Length: {len(body)}".encode() in lines
    assert b"x-ch-request-id: req-golden-2" in lines
    assert b"authorization" not in fields
    assert b"transfer-encoding" not in fields
    assert body == (GOLDEN / "report_pin.xml").read_bytes()


def test_default_request_id_is_a_fresh_uuid4(
    capture_server: type[CaptureServer], face: Face
) -> None:
    import uuid

    server = capture_server(lambda raw: http_reply(report_response()))
    client = face.client(server.url, user_id=USER, token=TOKEN)
    first = client.get_fax_broadcast_report("J1")
    second = client.get_fax_broadcast_report("J1")
    ids = [parse_request(raw).headers["x-ch-request-id"] for raw in server.captured.requests]
    assert ids == [first.request_id, second.request_id]
    assert ids[0] != ids[1]
    assert all(uuid.UUID(i).version == 4 for i in ids)


def test_request_ids_are_uuid4_unique_after_fork_and_apart_from_the_random_module() -> None:
    import os
    import random
    import uuid

    from faxws._protocol.soap import new_request_id

    ids = [new_request_id() for _ in range(1000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert (str(parsed), parsed.version, parsed.variant) == (text, 4, uuid.RFC_4122)
    # A program seeding the random module twice alike gets different request ids.
    random.seed(7)
    first = new_request_id()
    random.seed(7)
    assert new_request_id() != first
    # A forked child does not repeat the ids its parent goes on to make.
    if not hasattr(os, "fork"):
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then gone
        os.write(write_end, new_request_id().encode())
        os._exit(0)
    os.close(write_end)
    parents = new_request_id()
    with os.fdopen(read_end, "rb") as pipe:
        childs = pipe.read().decode()
    assert os.waitpid(pid, 0)[1] == 0
    assert len(childs) == 36
    assert childs != parents


def test_unnarrowed_report_sends_type_zero_and_empty_address(
    capture_server: type[CaptureServer], face: Face
) -> None:
    server = capture_server(lambda raw: http_reply(report_response()))
    face.client(server.url, user_id=USER, token=TOKEN).get_fax_broadcast_report(
        "JOB-7", request_id="r"
    )
    body = parse_request(server.captured.requests[0]).body
    assert (
        b"<JobId>JOB-7</JobId><RecipientType>0</RecipientType><RecipAddress/>"
        b"</GetFaxBroadcastReport>" in body
    )


def test_file_indexes_are_assigned_in_order_unless_given(
    capture_server: type[CaptureServer], face: Face
) -> None:
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    client = face.client(server.url, user_id=USER, token=TOKEN)
    client.send_fax(
        ["+1 555 0100"],
        [FaxFile(b"a", 101), FaxFile(b"b", 101, index=7), FaxFile(b"c", 101)],
    )
    body = parse_request(server.captured.requests[0]).body
    indexes = [int(part.split(b"</FileIndex>")[0]) for part in body.split(b"<FileIndex>")[1:]]
    assert indexes == [1, 7, 3]


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://fax.example.com", "https://fax.example.com/fax/v5"),
        ("https://fax.example.com/", "https://fax.example.com/fax/v5"),
        ("https://fax.example.com/fax/v5", "https://fax.example.com/fax/v5"),
        ("https://fax.example.com/fax/v5/", "https://fax.example.com/fax/v5"),
        ("https://fax.example.com:8443/proxy", "https://fax.example.com:8443/proxy/fax/v5"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/fax/v5"),
        ("http://[::1]:8080", "http://[::1]:8080/fax/v5"),
        ("http://localhost", "http://localhost/fax/v5"),
    ],
)
def test_requests_go_to_base_url_fax_v5(face: Face, base_url: str, expected: str) -> None:
    assert face.client(base_url, user_id=USER, token=TOKEN).url == expected


def test_large_file_is_handed_to_requests_as_a_stream_with_exact_content_length(
    mocked: responses.RequestsMock, tmp_path: Path
) -> None:
    data = bytes(range(256)) * 8192  # 2 MiB: above the streaming threshold
    path = tmp_path / "big.pdf"
    path.write_bytes(data)
    bodies: list[bytes] = []

    def answer(request: requests.PreparedRequest) -> tuple[int, dict[str, str], bytes]:
        assert not isinstance(request.body, bytes)  # handed to requests as a stream
        bodies.append(b"".join(request.body))  # type: ignore[arg-type]
        return 200, {}, send_response(["J1"])

    mocked.add_callback(responses.POST, URL, callback=answer)
    FaxClient("https://fax.example.com", user_id=USER, token=TOKEN).send_fax(
        ["+1 555 0100"], [FaxFile.from_path(path)], request_id="big"
    )
    request = mocked.calls[0].request
    body = bodies[0]
    assert int(request.headers["Content-Length"]) == len(body)
    assert "Transfer-Encoding" not in request.headers
    encoded = body.split(b"<FileData>")[1].split(b"</FileData>")[0]
    assert base64.b64decode(encoded, validate=True) == data


def test_streamed_body_on_a_real_socket(
    capture_server: type[CaptureServer], tmp_path: Path, face: Face
) -> None:
    data = b"\x00\xff" * (3 << 19)  # 3 MiB, several chunks
    path = tmp_path / "scan.png"
    path.write_bytes(data)
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    face.client(server.url, user_id=USER, token=TOKEN).send_fax(
        ["+1 555 0100"], [FaxFile.from_path(path)]
    )
    head, _, body = server.captured.requests[0].partition(b"\r\n\r\n")
    assert f"Content-Length: {len(body)}".encode() in head.split(b"\r\n")
    assert b"transfer-encoding" not in head.lower()
    assert b"<FileTypeId>120</FileTypeId>" in body
    encoded = body.split(b"<FileData>")[1].split(b"</FileData>")[0]
    assert base64.b64decode(encoded) == data


def test_bytes_in_a_binding_are_base64_encoded_on_the_wire() -> None:
    from faxws import bindings
    from faxws._protocol import writer as _wire

    request = bindings.SendFax(
        user_id="u",
        str_pin="",
        recipients=bindings.FaxJobRecipients(
            item=(bindings.FaxJobRecipient("+1 555 0100", "", "", "", ""),)
        ),
        fax_job_files=bindings.FaxJobFiles(item=(bindings.FaxJobFile(1, 101, b"%PDF"),)),
    )
    body = _wire.envelope(request)
    assert b"<FileData>JVBERg==</FileData>" in b"".join(body)
    assert body.whole == b"".join(body)  # small bytes: encoded as the envelope was written
