"""The request on the wire: headers, envelope and element order, byte for byte."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from conftest import GOLDEN, URL, CaptureServer, http_reply, report_response, send_response
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


#: The faces that write these requests: the typed client, and zeep's client through
#: faxws.zeep with the packaged WSDL and with the vendor's.
FACES = ("FaxClient", "zeep", "zeep-vendor")
VENDOR_WSDL = Path(__file__).parent / "fixtures" / "vendor" / "FaxWS.wsdl"


def call_on(face: str, creds: dict[str, str], call: Callable[[FaxClient], None]) -> None:
    if face == "FaxClient":
        call(FaxClient("https://fax.example.com", user_id=USER, **creds))  # type: ignore[arg-type]
        return
    from faxws.zeep import make_client

    wsdl = VENDOR_WSDL if face == "zeep-vendor" else None
    client = make_client("https://fax.example.com", user_id=USER, wsdl=wsdl, **creds)  # type: ignore[arg-type]
    (zeep_send if call is send else zeep_report)(client)


CASES = {
    "send_fax_oauth": ({"token": TOKEN}, send, send_response(["J1", "J2"])),
    "send_fax_pin": ({"pin": PIN}, send, send_response(["J1", "J2"])),
    "report_oauth": ({"token": TOKEN}, report, report_response()),
    "report_pin": ({"pin": PIN}, report, report_response()),
}


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_body_matches_golden_file(mocked: responses.RequestsMock, name: str, face: str) -> None:
    creds, call, answer = CASES[name]
    mocked.post(URL, body=answer)
    call_on(face, creds, call)
    body = mocked.calls[0].request.body
    assert isinstance(body, bytes)
    assert body == (GOLDEN / f"{name}.xml").read_bytes()


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_headers_are_exactly_the_contract(
    mocked: responses.RequestsMock, name: str, face: str
) -> None:
    creds, call, answer = CASES[name]
    mocked.post(URL, body=answer)
    call_on(face, creds, call)
    request = mocked.calls[0].request
    assert request.method == "POST"
    assert request.url == URL
    h = request.headers
    assert h["Content-Type"] == "application/soap+xml; charset=utf-8"
    assert "SOAPAction" in h
    assert h["SOAPAction"] == ""
    assert h["x-ch-request-id"].startswith("req-golden-")
    assert int(h["Content-Length"]) == len(request.body)
    if "token" in creds:
        assert h["Authorization"] == f"Bearer {TOKEN}"
        assert b"<strPIN/>" in request.body
    else:
        assert "Authorization" not in h
        assert f"<strPIN>{PIN}</strPIN>".encode() in request.body


def test_raw_bytes_on_a_real_socket(capture_server: type[CaptureServer]) -> None:
    """What leaves the socket: request line, the headers once each, an empty SOAPAction."""
    server = capture_server(lambda raw: http_reply(report_response()))
    client = FaxClient(server.url, user_id=USER, pin=PIN)
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


def test_default_request_id_is_a_fresh_uuid4(mocked: responses.RequestsMock) -> None:
    import uuid

    mocked.post(URL, body=report_response())
    client = FaxClient("https://fax.example.com", user_id=USER, token=TOKEN)
    first = client.get_fax_broadcast_report("J1")
    second = client.get_fax_broadcast_report("J1")
    ids = [c.request.headers["x-ch-request-id"] for c in mocked.calls]
    assert ids == [first.request_id, second.request_id]
    assert ids[0] != ids[1]
    assert all(uuid.UUID(i).version == 4 for i in ids)


def test_unnarrowed_report_sends_type_zero_and_empty_address(
    mocked: responses.RequestsMock,
) -> None:
    mocked.post(URL, body=report_response())
    FaxClient("https://fax.example.com", user_id=USER, token=TOKEN).get_fax_broadcast_report(
        "JOB-7", request_id="r"
    )
    body = mocked.calls[0].request.body
    assert (
        b"<JobId>JOB-7</JobId><RecipientType>0</RecipientType><RecipAddress/>"
        b"</GetFaxBroadcastReport>" in body
    )


def test_file_indexes_are_assigned_in_order_unless_given(mocked: responses.RequestsMock) -> None:
    mocked.post(URL, body=send_response(["J1"]))
    client = FaxClient("https://fax.example.com", user_id=USER, token=TOKEN)
    client.send_fax(
        ["+1 555 0100"],
        [FaxFile(b"a", 101), FaxFile(b"b", 101, index=7), FaxFile(b"c", 101)],
    )
    body = mocked.calls[0].request.body
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
def test_requests_go_to_base_url_fax_v5(base_url: str, expected: str) -> None:
    assert FaxClient(base_url, user_id=USER, token=TOKEN).url == expected


def test_large_file_is_streamed_with_exact_content_length(
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
    capture_server: type[CaptureServer], tmp_path: Path
) -> None:
    data = b"\x00\xff" * (3 << 19)  # 3 MiB, several chunks
    path = tmp_path / "scan.png"
    path.write_bytes(data)
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    FaxClient(server.url, user_id=USER, token=TOKEN).send_fax(
        ["+1 555 0100"], [FaxFile.from_path(path)]
    )
    head, _, body = server.captured.requests[0].partition(b"\r\n\r\n")
    assert f"Content-Length: {len(body)}".encode() in head.split(b"\r\n")
    assert b"<FileTypeId>120</FileTypeId>" in body
    encoded = body.split(b"<FileData>")[1].split(b"</FileData>")[0]
    assert base64.b64decode(encoded) == data


def test_bytes_in_a_binding_are_base64_encoded_on_the_wire() -> None:
    from faxws import _wire, bindings

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
    assert b"<FileData></FileData>" in body.skeleton()  # file data stays out of schema checks
