"""faxws.zeep: zeep's own client for any FaxWS WSDL, on faxws's wire form, auth and errors."""

from __future__ import annotations

import contextlib
import logging
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape

import pytest
import zeep
from lxml import etree
from zeep.wsdl.bindings.soap import SoapBinding

from conftest import (
    GOLDEN,
    CaptureServer,
    envelope,
    fault_response,
    http_reply,
    report_response,
    send_response,
)
from conftest import ZEEP_RECIPIENT as RECIPIENT
from faxws import FaxClient, FaxFile, Recipient
from faxws.bindings import FaxJob
from faxws.errors import (
    AuthenticationError,
    BadInputError,
    ConnectError,
    FaxWSError,
    HTTPStatusError,
    ProtocolError,
    ServiceError,
    SoapFaultError,
    TransportError,
)
from faxws.testing import DEMO_PIN, DEMO_TOKEN, DEMO_USER_ID, FaxWSSimulator
from faxws.zeep import FaxWSPlugin, FaxWSTransport, make_client

VENDOR = Path(__file__).parents[1] / "fixtures" / "vendor" / "FaxWS.wsdl"
WSDLS = {"packaged": None, "vendor": VENDOR}
USER = "mbx1234567890"
PIN = "pin-Marker-7f3a"
TOKEN = "tok-Marker-91c2"

Server = Callable[[Callable[[bytes], bytes | None]], CaptureServer]

FILE = {"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF-1.4"}
STATUS_RESPONSE = envelope(
    '<FaxStatusResponse xmlns="urn:FaxWS"><return>true</return><FaxStatusList><item>'
    "<FaxJobId>J1</FaxJobId><FaxJobStatusId>1</FaxJobStatusId>"
    "<StatusDescription>Sent &amp; confirmed</StatusDescription>"
    "<Error><ErrorCode>0</ErrorCode><ErrorString/></Error></item></FaxStatusList>"
    "<WSError><ErrorCode>0</ErrorCode><ErrorString/></WSError></FaxStatusResponse>"
)


def split(raw: bytes) -> tuple[dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body


def send(client: Any) -> Any:
    return client.service.SendFax(Recipients={"item": [RECIPIENT]}, FaxJobFiles={"item": [FILE]})


def status(client: Any) -> Any:
    return client.service.GetFaxStatus(FaxJobIds={"item": [{"JobId": "J1"}]})


def answering(body: bytes, status_line: str = "200 OK") -> Callable[[bytes], bytes]:
    return lambda raw: http_reply(body, status_line)


# -- the client -----------------------------------------------------------------------------


@pytest.mark.parametrize("wsdl", sorted(WSDLS))
def test_make_client_is_a_zeep_client_posting_to_base_url(wsdl: str) -> None:
    client = make_client("https://fax.example.com/", user_id=USER, pin=PIN, wsdl=WSDLS[wsdl])
    assert isinstance(client, zeep.Client)  # its service proxies raise only faxws errors
    assert isinstance(client.transport, FaxWSTransport)
    assert [type(p) for p in client.plugins] == [FaxWSPlugin]
    assert client.service._binding_options["address"] == "https://fax.example.com/fax/v5"
    assert client.settings.forbid_dtd
    assert client.settings.forbid_entities
    assert client.settings.forbid_external
    assert client.transport.session.trust_env is False
    assert client.transport.caller.transport._session.trust_env is False
    assert PIN not in repr(client.transport) + repr(client.plugins[0])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base_url": "http://fax.example.com"}, "base_url"),
        ({"timeout": math.nan}, "timeout"),
        ({"retries": 11}, "retries"),
        ({"retry_backoff": -1}, "retry_backoff"),
        ({"max_connections": 0}, "max_connections"),
        ({"proxies": {"https": "ftp://proxy"}}, "proxies['https']"),
        ({"verify": "/nonexistent/ca.pem"}, "verify"),
        ({"user_id": ""}, "user_id"),
        ({"pin": None}, "token/pin"),
        ({"wsdl": "https://fax.example.com/FaxWS.wsdl"}, "wsdl"),
        ({"wsdl": "/nonexistent/FaxWS.wsdl"}, "wsdl"),
    ],
)
def test_options_are_checked_like_the_typed_client(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"base_url": "https://fax.example.com", "user_id": USER, "pin": PIN}
    args.update(kwargs)
    with pytest.raises(BadInputError) as info:
        make_client(**args)
    assert info.value.field == field


# -- the wire form --------------------------------------------------------------------------


@pytest.mark.parametrize("wsdl", sorted(WSDLS))
@pytest.mark.parametrize("mode", ["pin", "token"])
def test_raw_request_on_a_socket_is_the_contract(
    capture_server: Server, wsdl: str, mode: str
) -> None:
    """Headers once each, exactly; the golden body; auth by the mode, whatever the caller
    passed as strPIN or UserID."""
    server = capture_server(answering(report_response()))
    creds = {"pin": "s3cret-PIN"} if mode == "pin" else {"token": "tok-123.abc"}
    client = make_client(server.url, user_id=USER, wsdl=WSDLS[wsdl], **creds)  # type: ignore[arg-type]
    with client.settings(extra_http_headers={"x-ch-request-id": "req-golden-2"}):
        client.service.GetFaxBroadcastReport(
            UserID="someone-else",
            strPIN="caller-PIN",
            JobId="JOB-42",
            RecipientType=1,
            RecipAddress="ops@example.com",
        )
    raw = server.captured.requests[0]
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /fax/v5 HTTP/1.1"
    fields = [line.split(b":", 1)[0].lower() for line in lines[1:]]
    assert len(fields) == len(set(fields))
    assert b"Content-Type: application/soap+xml; charset=utf-8" in lines
    assert b"SOAPAction: " in lines or b"SOAPAction:" in lines
    assert b"x-ch-request-id: req-golden-2" in lines
    assert f"Content-Length: {len(body)}".encode() in lines
    assert b"transfer-encoding" not in fields
    if mode == "pin":
        assert b"authorization" not in fields
        assert body == (GOLDEN / "report_pin.xml").read_bytes()
    else:
        assert b"Authorization: Bearer tok-123.abc" in lines
        assert body == (GOLDEN / "report_oauth.xml").read_bytes()
    assert b"caller-PIN" not in raw
    assert b"someone-else" not in raw


def test_auth_fields_are_filled_in_their_schema_place(capture_server: Server) -> None:
    server = capture_server(answering(STATUS_RESPONSE))
    client = make_client(server.url, user_id=USER, token=TOKEN, wsdl=VENDOR)
    status(client)
    _, body = split(server.captured.requests[0])
    assert (
        f'<GetFaxStatus xmlns="urn:FaxWS"><UserID>{USER}</UserID><strPIN/>'
        "<FaxJobIds><item><JobId>J1</JobId></item></FaxJobIds></GetFaxStatus>"
    ).encode() in body


def test_a_pin_never_goes_next_to_a_bearer_header_even_without_the_plugin(
    capture_server: Server,
) -> None:
    server = capture_server(answering(report_response()))
    client = make_client(server.url, user_id=USER, token=TOKEN)
    client.plugins.clear()
    with pytest.raises(BadInputError) as info:
        client.service.GetFaxBroadcastReport(
            UserID=USER, strPIN="caller-PIN", JobId="J", RecipientType=0, RecipAddress=""
        )
    assert info.value.field == "strPIN"
    assert server.captured.requests == []


def test_text_is_escaped_like_the_typed_client(capture_server: Server) -> None:
    server = capture_server(answering(send_response(["J1"])))
    client = make_client(server.url, user_id=USER, pin=PIN)
    recipient = {**RECIPIENT, "RecipCompany": "A & B <C>", "RecipName": " "}
    client.service.SendFax(Recipients={"item": [recipient]}, FaxJobFiles={"item": [FILE]})
    _, body = split(server.captured.requests[0])
    assert (
        b"<RecipCompany>A &amp; B &lt;C&gt;</RecipCompany><RecipTitle/><RecipName> </RecipName>"
        in body
    )


def test_other_headers_and_soap_headers_are_refused(capture_server: Server) -> None:
    server = capture_server(answering(report_response()))
    client = make_client(server.url, user_id=USER, pin=PIN)
    with (
        client.settings(extra_http_headers={"Authorization": "Bearer x"}),
        pytest.raises(BadInputError, match="Authorization"),
    ):
        send(client)
    assert server.captured.requests == []


# -- request ids ----------------------------------------------------------------------------


def test_request_id_is_a_fresh_uuid4_per_call(capture_server: Server) -> None:
    server = capture_server(answering(send_response(["J1"])))
    client = make_client(server.url, user_id=USER, pin=PIN)
    send(client)
    send(client)
    ids = [split(raw)[0]["x-ch-request-id"] for raw in server.captured.requests]
    assert ids[0] != ids[1]
    assert all(uuid.UUID(i).version == 4 for i in ids)


def test_a_bad_request_id_is_refused_before_sending(capture_server: Server) -> None:
    server = capture_server(answering(send_response(["J1"])))
    client = make_client(server.url, user_id=USER, pin=PIN)
    with (
        client.settings(extra_http_headers={"X-CH-Request-Id": "two words"}),
        pytest.raises(BadInputError) as info,
    ):
        send(client)
    assert info.value.field == "request_id"
    assert server.captured.requests == []


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "status_line", "error"),
    [
        (fault_response("SOAP-ENV:Server", "busy"), "500 Internal Server Error", SoapFaultError),
        (fault_response("SOAP-ENV:Client", "no"), "200 OK", SoapFaultError),
        (fault_response(), "401 Unauthorized", AuthenticationError),
        (b"<html>denied</html>", "403 Forbidden", AuthenticationError),
        (send_response([], ok=False, code=-5019, text="Invalid Job ID"), "200 OK", ServiceError),
        (b"<html>oops</html>", "500 Internal Server Error", HTTPStatusError),
        (b"", "302 Found", HTTPStatusError),
        (
            b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>',
            "200 OK",
            ProtocolError,
        ),
    ],
)
def test_answers_become_faxws_errors_with_the_request_id(
    capture_server: Server, answer: bytes, status_line: str, error: type[Exception]
) -> None:
    server = capture_server(answering(answer, status_line))
    client = make_client(server.url, user_id=USER, pin=PIN)
    with (
        client.settings(extra_http_headers={"x-ch-request-id": "rid-err"}),
        pytest.raises(error) as info,
    ):
        send(client)
    assert type(info.value) is error
    assert getattr(info.value, "request_id", None) == "rid-err"
    assert len(server.captured.requests) == 1  # SendFax is never sent twice


def test_a_ws_error_of_a_vendor_operation_is_a_service_error(capture_server: Server) -> None:
    answer = envelope(
        '<FaxStatusResponse xmlns="urn:FaxWS"><return>false</return><FaxStatusList/>'
        "<WSError><ErrorCode>-5019</ErrorCode><ErrorString>Invalid Job ID</ErrorString>"
        "</WSError></FaxStatusResponse>"
    )
    server = capture_server(answering(answer))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR)
    with pytest.raises(ServiceError) as info:
        status(client)
    assert info.value.code == -5019
    assert info.value.request_id is not None


def test_an_answer_without_ws_error_is_not_judged_by_its_return(capture_server: Server) -> None:
    """CheckService answers a string ``return`` and no WSError: not a service error."""
    answer = envelope(
        '<CheckServiceResponse xmlns="urn:FaxWS"><return>OK</return></CheckServiceResponse>'
    )
    server = capture_server(answering(answer))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR)
    assert client.service.CheckService() == "OK"
    _, body = split(server.captured.requests[0])
    # The payload element is written open and closed, as the bindings writer does.
    assert body.endswith(
        b'<soap:Body><CheckService xmlns="urn:FaxWS"></CheckService></soap:Body></soap:Envelope>'
    )


def test_refused_connection_is_not_delivered(refused_port: int) -> None:
    client = make_client(f"http://127.0.0.1:{refused_port}", user_id=USER, pin=PIN, retries=0)
    with pytest.raises(ConnectError) as info:
        send(client)
    assert info.value.maybe_delivered is False
    assert info.value.request_id is not None


def test_send_fax_is_not_resent_after_a_reset_post_request(capture_server: Server) -> None:
    server = capture_server(lambda raw: b"")  # read the whole request, close without answering
    client = make_client(server.url, user_id=USER, pin=PIN, retries=3, retry_backoff=0)
    with (
        client.settings(extra_http_headers={"x-ch-request-id": "rid-reset"}),
        pytest.raises(TransportError) as info,
    ):
        send(client)
    assert info.value.maybe_delivered is True
    assert info.value.request_id == "rid-reset"
    assert len(server.captured.requests) == 1


def test_idempotent_vendor_operation_is_retried_after_a_reset(capture_server: Server) -> None:
    answers = [b"", b"", http_reply(STATUS_RESPONSE)]
    server = capture_server(lambda raw: answers.pop(0))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR, retry_backoff=0)
    assert status(client).FaxStatusList.item[0].FaxJobId == "J1"
    ids = {split(raw)[0]["x-ch-request-id"] for raw in server.captured.requests}
    assert len(server.captured.requests) == 3
    assert len(ids) == 1  # one call, one request id


def test_send_fax_is_not_retried_after_503(capture_server: Server) -> None:
    server = capture_server(answering(b"busy", "503 Service Unavailable"))
    client = make_client(server.url, user_id=USER, pin=PIN, retry_backoff=0)
    with pytest.raises(HTTPStatusError) as info:
        send(client)
    assert info.value.maybe_delivered is True
    assert len(server.captured.requests) == 1


def test_token_provider_gets_one_retry_after_401(capture_server: Server) -> None:
    class Provider:
        def __init__(self) -> None:
            self.tokens = iter(["tok-old", "tok-new", "tok-newer"])
            self.current = next(self.tokens)
            self.invalidated = 0

        def __call__(self) -> str:
            return self.current

        def invalidate(self) -> None:
            self.invalidated += 1
            self.current = next(self.tokens)

    answers = [http_reply(fault_response(), "401 Unauthorized"), http_reply(send_response(["J1"]))]
    server = capture_server(lambda raw: answers.pop(0))
    provider = Provider()
    client = make_client(server.url, user_id=USER, token=provider)
    assert send(client).FaxJobIds.item[0].JobId == "J1"
    auth = [split(raw)[0]["authorization"] for raw in server.captured.requests]
    assert auth == ["Bearer tok-old", "Bearer tok-new"]
    assert provider.invalidated == 1


def test_a_second_401_is_an_authentication_error(capture_server: Server) -> None:
    server = capture_server(answering(fault_response(), "401 Unauthorized"))
    client = make_client(server.url, user_id=USER, token=lambda: TOKEN)
    with pytest.raises(AuthenticationError):
        send(client)
    assert len(server.captured.requests) == 2


# -- secrets in logs ------------------------------------------------------------------------


def test_debug_logs_never_show_the_pin_or_token(
    capture_server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # Each client's own secret is echoed back by the service in an error.
    answers = [
        http_reply(send_response(["J1"])),
        http_reply(fault_response("SOAP-ENV:Client", f"echo {TOKEN}"), "500 Internal Error"),
        http_reply(send_response([], ok=False, code=-1, text=f"echo {PIN}")),
    ]
    server = capture_server(lambda raw: answers.pop(0))
    messages = []
    for creds in ({"pin": PIN}, {"token": TOKEN}, {"pin": PIN}):
        client = make_client(server.url, user_id=USER, **creds)  # type: ignore[arg-type]
        try:
            send(client)
        except (SoapFaultError, ServiceError) as exc:
            messages.append(f"{exc} {exc!r}")
    assert len(server.captured.requests) == 3
    assert len(messages) == 2
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "faxws" in {r.name for r in caplog.records}  # DEBUG was on
    assert not any(r.name == "zeep.transports" for r in caplog.records)
    for secret in (PIN, TOKEN):
        assert secret not in logged
        assert all(secret not in m for m in messages)


# -- vendor operations and the simulator ------------------------------------------------------


def test_get_fax_status_round_trip(capture_server: Server) -> None:
    server = capture_server(answering(STATUS_RESPONSE))
    client = make_client(server.url, user_id=USER, token=TOKEN, wsdl=VENDOR)
    with client.settings(extra_http_headers={"x-ch-request-id": "order-42"}):
        result = status(client)
    item = result.FaxStatusList.item[0]
    assert (item.FaxJobId, item.FaxJobStatusId, item.StatusDescription) == (
        "J1",
        1,
        "Sent & confirmed",
    )
    headers, _ = split(server.captured.requests[0])
    assert headers["x-ch-request-id"] == "order-42"
    assert headers["authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("wsdl", sorted(WSDLS))
@pytest.mark.parametrize("mode", ["pin", "token"])
def test_the_simulator_accepts_both_auth_modes(wsdl: str, mode: str) -> None:
    creds = {"pin": DEMO_PIN} if mode == "pin" else {"token": DEMO_TOKEN}
    with FaxWSSimulator() as sim:
        client = make_client(sim.url, user_id=DEMO_USER_ID, wsdl=WSDLS[wsdl], **creds)  # type: ignore[arg-type]
        job = send(client).FaxJobIds.item[0].JobId
        report = client.service.GetFaxBroadcastReport(JobId=job, RecipientType=0, RecipAddress="")
        assert report["return"] is True
        with pytest.raises(ServiceError) as info:
            client.service.GetFaxBroadcastReport(JobId="nope", RecipientType=0, RecipAddress="")
        assert info.value.code == -5019
        assert sim.jobs[0].files[0].data == b"%PDF-1.4"


def test_nil_values_and_soap_headers_are_refused(capture_server: Server) -> None:
    server = capture_server(answering(STATUS_RESPONSE))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR)
    with pytest.raises(BadInputError, match="XMLSchema-instance}nil"):
        client.service.GetFaxStatus(FaxJobIds={"item": [zeep.xsd.Nil]})
    header = etree.Element("{urn:x}H")
    with pytest.raises(BadInputError) as info:
        client.service.GetFaxStatus(FaxJobIds={"item": [{"JobId": "J1"}]}, _soapheaders=[header])
    assert info.value.field == "_soapheaders"
    assert info.value.request_id is not None  # refused before the exchange, still with an id
    with (
        client.settings(extra_http_headers={"x-ch-request-id": "rid-headers"}),
        pytest.raises(BadInputError) as info,
    ):
        client.service.GetFaxStatus(FaxJobIds={"item": [{"JobId": "J1"}]}, _soapheaders=[header])
    assert info.value.request_id == "rid-headers"
    assert server.captured.requests == []


def test_an_answer_zeep_cannot_read_is_a_protocol_error_with_the_request_id(
    capture_server: Server,
) -> None:
    unreadable = STATUS_RESPONSE.replace(b"<FaxJobId>J1</FaxJobId>", b"<Unknown>J1</Unknown>")
    server = capture_server(answering(unreadable))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR)
    with (
        client.settings(extra_http_headers={"x-ch-request-id": "order-7"}),
        pytest.raises(ProtocolError) as info,
    ):
        status(client)
    assert info.value.request_id == "order-7"
    assert info.value.maybe_delivered is True
    assert len(server.captured.requests) == 1


def test_arguments_zeep_refuses_are_bad_input_and_nothing_is_sent(
    capture_server: Server,
) -> None:
    server = capture_server(answering(STATUS_RESPONSE))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR)
    with pytest.raises(BadInputError) as info:
        client.service.GetFaxStatus(NoSuchField=1)
    assert info.value.field == "arguments"
    assert "NoSuchField" in info.value.problem
    assert info.value.maybe_delivered is False
    assert server.captured.connections == 0


# -- attacks on the integration's promises ----------------------------------------------------

NS = "{urn:FaxWS}"
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
SEND_OK = envelope(
    '<FaxSendResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds><item><JobId>J1</JobId>'
    "</item></FaxJobIds><TTFP>1</TTFP><WSError><ErrorCode>0</ErrorCode><ErrorString/>"
    "</WSError></FaxSendResponse>"
)


def without_plugin(client: Any) -> Any:
    """zeep's envelope for SendFax built with the plugins removed, strPIN empty."""
    saved, client.plugins = client.plugins, []
    try:
        return client.create_message(
            client.service,
            "SendFax",
            UserID=USER,
            strPIN="",
            Recipients={"item": [RECIPIENT]},
            FaxJobFiles={"item": [FILE]},
        )
    finally:
        client.plugins = saved


def second_strpin(client: Any) -> None:
    envelope_ = without_plugin(client)
    pin = envelope_.find(f".//{NS}strPIN")
    extra = etree.Element(f"{NS}strPIN")
    extra.text = "1234"
    pin.addnext(extra)
    client.transport.post_xml(client.transport.caller.url, envelope_, {})


def strpin_with_a_child(client: Any) -> None:
    envelope_ = without_plugin(client)
    etree.SubElement(envelope_.find(f".//{NS}strPIN"), f"{NS}v").text = "1234"
    client.transport.post_xml(client.transport.caller.url, envelope_, {})


def unqualified_payload(client: Any) -> None:
    envelope_ = etree.fromstring(
        f'<s:Envelope xmlns:s="{SOAP}"><s:Body><SendFax><UserID>u</UserID>'
        "<strPIN>1234</strPIN></SendFax></s:Body></s:Envelope>"
    )
    client.transport.post_xml(client.transport.caller.url, envelope_, {})


def posted_bytes(client: Any) -> None:
    client.transport.post(
        client.transport.caller.url,
        f'<s:Envelope xmlns:s="{SOAP}"><s:Body><SendFax xmlns="urn:FaxWS"><UserID>u</UserID>'
        "<strPIN/><strPIN>1234</strPIN></SendFax></s:Body></s:Envelope>",
        {},
    )


@pytest.mark.parametrize(
    "route", [second_strpin, strpin_with_a_child, unqualified_payload, posted_bytes]
)
def test_no_route_puts_a_pin_next_to_a_bearer_header(
    capture_server: Server, route: Callable[[Any], None]
) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, token=TOKEN, wsdl=VENDOR, retries=0)
    with pytest.raises(BadInputError):
        route(client)
    assert server.captured.connections == 0


@pytest.mark.parametrize(
    "extra",
    [
        {"SOAPAction": "urn:Other#Op"},
        {"SOAPAction": "x\r\n X-Injected: yes"},
        {"Content-Type": "text/plain"},
        {"Authorization": "Bearer other"},
        {"x-ch-request-id": "a\r\nX-Injected: yes"},
    ],
    ids=["soapaction", "folded injection", "content-type", "authorization", "request id"],
)
def test_extra_headers_cannot_change_the_contracts_headers(
    capture_server: Server, extra: dict[str, str]
) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR, retries=0)
    with client.settings(extra_http_headers=extra), pytest.raises(BadInputError):
        send(client)
    assert server.captured.connections == 0


@pytest.mark.parametrize(
    "element", ["FaxSendExResponse", "NotAnOperationAtAll"], ids=["another operation", "unknown"]
)
def test_the_answer_of_another_operation_is_a_protocol_error(
    capture_server: Server, element: str
) -> None:
    answer = SEND_OK.replace(b"FaxSendResponse", element.encode())
    server = capture_server(answering(answer))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR, retries=0)
    with pytest.raises(ProtocolError) as info:
        send(client)
    assert element in info.value.message


def test_an_answer_zeep_would_misread_is_refused_before_zeep_logs_it(
    capture_server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answer = STATUS_RESPONSE.replace(
        b"<FaxJobStatusId>1</FaxJobStatusId>",
        f"<FaxJobStatusId>your PIN {PIN} is wrong</FaxJobStatusId>".encode(),
    )
    server = capture_server(answering(answer))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR, retries=0)
    with pytest.raises(ProtocolError) as info:
        status(client)  # zeep alone would answer FaxJobStatusId=None and log the text
    assert "not a valid xs:int" in info.value.message
    assert PIN not in str(info.value)
    assert PIN not in "\n".join(r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_create_service_proxies_raise_faxws_errors_with_a_request_id(
    capture_server: Server,
) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR, retries=0)
    binding = next(iter(client.wsdl.bindings))
    service = client.create_service(binding, client.transport.caller.url)
    with pytest.raises(BadInputError) as info:
        service.SendFax(NoSuchField=1)
    assert info.value.request_id is not None
    assert server.captured.connections == 0


# -- SendFaxEx's notification password ----------------------------------------------------------

NOTIFY_PASSWORD = "Hunter2-s3cr&t"  # '&': XML-escaped on the wire, percent-encoded by URLs
NOTIFY_FORMS = {
    "XML-escaped": escape(NOTIFY_PASSWORD),
    "XML references": "".join(f"&#{ord(c)};" for c in NOTIFY_PASSWORD),
    "percent-encoded": quote(NOTIFY_PASSWORD, safe=""),
}


def send_ex_answer(code: int, text: str) -> bytes:
    return envelope(
        '<FaxSendExResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds><item>'
        "<JobId>J1</JobId></item></FaxJobIds><TTFP>30</TTFP><WSError>"
        f"<ErrorCode>{code}</ErrorCode><ErrorString>{text}</ErrorString></WSError>"
        "</FaxSendExResponse>"
    )


def send_ex(client: Any) -> Any:
    details: dict[str, Any] = {f.name: "" for f in FaxJob.__xml__.fields if f.min_occurs}
    details |= {"JobScheduleStartType": 0, "NotifyType": 3, "NotifyIncludeDeliveredImage": 0}
    details |= {"NotifyDestination": "https://hook.example/", "NotifyAuthUser": "hook"}
    details |= {"NotifyAuthPassword": NOTIFY_PASSWORD, "ReferenceId": "R1"}
    return client.service.SendFaxEx(
        Recipients={"item": [RECIPIENT]}, FaxJobFiles={"item": [FILE]}, JobDetails=details
    )


ECHOES: dict[str, Callable[[str], bytes]] = {
    "a WSError": lambda f: http_reply(send_ex_answer(-1, f"bad password {f}")),
    "a SOAP fault": lambda f: http_reply(fault_response(text=f"bad {f}"), "500 Internal Error"),
    "a value the schema refuses": lambda f: http_reply(
        send_ex_answer(0, "").replace(b"<TTFP>30<", f"<TTFP>{f}<".encode())
    ),
}


@pytest.mark.parametrize("form", list(NOTIFY_FORMS.values()), ids=list(NOTIFY_FORMS))
@pytest.mark.parametrize("echo", list(ECHOES.values()), ids=list(ECHOES))
def test_the_notification_password_a_service_echoes_is_masked_in_errors(
    capture_server: Server, echo: Callable[[str], bytes], form: str
) -> None:
    server = capture_server(lambda raw: echo(form))
    client = make_client(server.url, user_id=USER, pin=PIN, retries=0)
    with pytest.raises(FaxWSError) as info:
        send_ex(client)
    _, body = split(server.captured.requests[0])
    assert b"<NotifyAuthPassword>Hunter2-s3cr&amp;t</NotifyAuthPassword>" in body  # it went
    shown = [str(info.value), repr(info.value), repr(vars(info.value))]
    for text in shown:
        assert "Hunter2" not in text, text


def test_the_notification_password_in_the_activity_id_is_masked_in_the_span(
    capture_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[str | None] = []

    class Span:
        def answered(self, activity_id: Callable[[], str | None]) -> None:
            answered.append(activity_id())

    @contextlib.contextmanager
    def traced(operation: str, url: str, request_id: str) -> Iterator[Span]:
        yield Span()

    monkeypatch.setattr("faxws.zeep.traced", traced)
    extra = f"x-ch-activity-id: act-{NOTIFY_PASSWORD}\r\n"
    server = capture_server(lambda raw: http_reply(send_ex_answer(0, ""), extra=extra))
    client = make_client(server.url, user_id=USER, pin=PIN)
    assert send_ex(client).FaxJobIds.item[0].JobId == "J1"
    assert answered == ["act-***"]


def test_the_notification_password_in_a_failure_of_zeeps_after_the_answer_is_masked(
    capture_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    def process_reply(*args: Any) -> None:
        raise ValueError(f"cannot read {NOTIFY_PASSWORD}")

    monkeypatch.setattr(SoapBinding, "process_reply", process_reply)
    server = capture_server(lambda raw: http_reply(send_ex_answer(0, "")))
    client = make_client(server.url, user_id=USER, pin=PIN)
    with pytest.raises(ProtocolError) as info:
        send_ex(client)
    assert str(info.value).startswith("zeep could not read the answer: ValueError: cannot read ***")


# -- requests are checked as a whole before their first byte, as FaxClient checks them -------

FACE_WSDLS = {"zeep": "packaged", "zeep-vendor": "vendor"}
FACES = ["FaxClient", *FACE_WSDLS]


@dataclass(frozen=True)
class Refusal:
    """One bad value, as FaxClient's arguments and the zeep face's carry it, and what each
    face's BadInputError says (field, then words of the problem)."""

    typed: Callable[[Any], object]
    recipient: dict[str, Any] = field(default_factory=dict)
    file: dict[str, Any] = field(default_factory=dict)
    files: int = 1
    typed_error: tuple[str, str] = ("", "")
    zeep_error: tuple[str, str] = ("", "")


def typed_send(recipient: Any = "+1 555 0100", *files: Any) -> Callable[[Any], object]:
    return lambda c: c.send_fax([recipient], list(files) or [FaxFile(b"%PDF-1.4", 101)])


RECIPIENT_PATH = "/SendFax/Recipients/item/"
FILE_PATH = "/SendFax/FaxJobFiles/item/"
REFUSALS = {
    "fax number without digits": Refusal(
        typed_send("call me"),
        recipient={"RecipFaxNumber": "call me"},
        typed_error=("recipients[0].fax_number", "no digits"),
        zeep_error=(RECIPIENT_PATH + "RecipFaxNumber", "no digits"),
    ),
    **{
        f"a name holding U+{ord(brk):04X}": Refusal(
            lambda c, brk=brk: typed_send(Recipient("+1 555 0100", name=f"a{brk}b"))(c),
            recipient={"RecipName": f"a{brk}b"},
            typed_error=("name", f"line break (U+{ord(brk):04X})"),
            zeep_error=(RECIPIENT_PATH + "RecipName", f"line break (U+{ord(brk):04X})"),
        )
        for brk in "\r\u2028\u0085"
    },
    "file index 0": Refusal(
        lambda c: FaxFile(b"%PDF", 101, index=0),
        file={"FileIndex": 0},
        typed_error=("index", "0 is outside 1..2147483647"),
        zeep_error=(FILE_PATH + "FileIndex", "0 is outside 1..2147483647"),
    ),
    "file index beyond xs:int": Refusal(
        lambda c: FaxFile(b"%PDF", 101, index=2**40),
        file={"FileIndex": 2**40},
        typed_error=("index", "outside"),
        zeep_error=(FILE_PATH + "FileIndex", "not a valid xs:int"),
    ),
    "file index as text": Refusal(
        lambda c: FaxFile(b"%PDF", 101, index="abc"),  # type: ignore[arg-type]
        file={"FileIndex": "abc"},
        typed_error=("index", "must be an int"),
        zeep_error=(FILE_PATH + "FileIndex", "not a valid xs:int"),
    ),
    "file type as a bool": Refusal(
        lambda c: FaxFile(b"%PDF", True),
        file={"FileTypeId": True},
        typed_error=("file_type", "must be an int"),
        zeep_error=(FILE_PATH + "FileTypeId", "not a valid xs:int"),
    ),
    "file type as a float": Refusal(
        lambda c: FaxFile(b"%PDF", 101.7),  # type: ignore[arg-type]
        file={"FileTypeId": 101.7},
        typed_error=("file_type", "must be an int"),
        zeep_error=(FILE_PATH + "FileTypeId", "not a valid xs:int"),
    ),
    "document as a str": Refusal(
        lambda c: FaxFile("plain text", 101),  # type: ignore[arg-type]
        file={"FileData": "plain text"},
        typed_error=("data", "is a str"),
        zeep_error=(FILE_PATH + "FileData", "not a valid xs:base64Binary"),
    ),
    "empty document": Refusal(
        lambda c: FaxFile(b"", 101),
        file={"FileData": b""},
        typed_error=("data", "is empty"),
        zeep_error=(FILE_PATH + "FileData", "is empty"),
    ),
    "two documents with one index": Refusal(
        typed_send("+1 555 0100", FaxFile(b"a", 101, 1), FaxFile(b"b", 101, 1)),
        files=2,
        typed_error=("files[1].index", "1 is also the index of files[0]"),
        zeep_error=(
            "/SendFax/FaxJobFiles/item[2]/FileIndex",
            "1 is also the index of /SendFax/FaxJobFiles/item[1]",
        ),
    ),
}


def refused_send(face: str, case: Refusal, url: str) -> None:
    if face == "FaxClient":
        case.typed(FaxClient(url, user_id=USER, pin=PIN))
        return
    client = make_client(url, user_id=USER, pin=PIN, wsdl=WSDLS[FACE_WSDLS[face]])
    client.service.SendFax(
        Recipients={"item": [{**RECIPIENT, **case.recipient}]},
        FaxJobFiles={"item": [{**FILE, **case.file}] * case.files},
    )


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("case", list(REFUSALS.values()), ids=list(REFUSALS))
def test_a_value_faxclient_refuses_is_refused_by_every_face_before_any_byte(
    capture_server: Server, face: str, case: Refusal
) -> None:
    server = capture_server(answering(SEND_OK))
    with pytest.raises(BadInputError) as info:
        refused_send(face, case, server.url)
    field_, words = case.typed_error if face == "FaxClient" else case.zeep_error
    assert info.value.field == field_
    assert words in info.value.problem
    assert server.captured.connections == 0


@pytest.mark.parametrize(
    ("call", "field_", "words"),
    [
        (
            lambda s: s.GetFaxBroadcastReport(JobId="J", RecipientType="x", RecipAddress="a"),
            "/GetFaxBroadcastReport/RecipientType",
            "'x' is not a valid xs:int",
        ),
        (
            lambda s: s.GetFaxBroadcastReport(JobId="", RecipientType=0, RecipAddress=""),
            "/GetFaxBroadcastReport/JobId",
            "must not be empty",
        ),
        (
            lambda s: s.SendFax(Recipients={"item": [None]}, FaxJobFiles={"item": [FILE]}),
            "/SendFax/Recipients/item",
            "expected RecipFaxNumber",
        ),
    ],
    ids=["report type as text", "empty job id", "recipient left out"],
)
def test_a_request_the_contracts_schema_refuses_is_never_sent(
    capture_server: Server, call: Callable[[Any], object], field_: str, words: str
) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN)
    with pytest.raises(BadInputError) as info:
        call(client.service)
    assert (info.value.field, info.value.maybe_delivered) == (field_, False)
    assert words in info.value.problem
    assert server.captured.connections == 0


@pytest.mark.parametrize("empty", ["Recipients", "FaxJobFiles"])
def test_the_contracts_schema_holds_with_a_laxer_wsdl(capture_server: Server, empty: str) -> None:
    """The vendor's WSDL lets a SendFax name no recipient or no document; the contract does
    not, and its schema is the one a contract operation is checked against."""
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN, wsdl=VENDOR)
    lists = {"Recipients": {"item": [RECIPIENT]}, "FaxJobFiles": {"item": [FILE]}}
    with pytest.raises(BadInputError) as info:
        client.service.SendFax(**{**lists, empty: {"item": []}})
    assert info.value.field == f"/SendFax/{empty}"
    assert "expected item" in info.value.problem
    assert server.captured.connections == 0


def posted_send(client: Any, file_data: str) -> Any:
    """A SendFax envelope posted as bytes: the checks hold however the envelope was built."""
    return client.transport.post(
        client.transport.caller.url,
        f'<s:Envelope xmlns:s="{SOAP}"><s:Body><SendFax xmlns="urn:FaxWS"><UserID>u</UserID>'
        "<strPIN>1234</strPIN><Recipients><item><RecipFaxNumber>+1 555</RecipFaxNumber>"
        "<RecipCompany/><RecipTitle/><RecipName/><RecipSecureCSID/></item></Recipients>"
        "<FaxJobFiles><item><FileIndex>1</FileIndex><FileTypeId>101</FileTypeId>"
        f"<FileData>{file_data}</FileData></item></FaxJobFiles></SendFax></s:Body></s:Envelope>",
        {},
    )


LARGE = "QUJD" * 100_000  # 400,000 characters of base64: beyond what libxml2 is shown whole


@pytest.mark.parametrize(
    "file_data",
    [
        "QUJD=QUJ",
        LARGE[:-4] + "QQ=A",
        LARGE[:200_000] + "=" + LARGE[200_001:],
        LARGE[:200_000] + "!" + LARGE[200_001:],
        LARGE[:200_000] + "é" + LARGE[200_001:],
        LARGE + "Q",
    ],
    ids=[
        "small",
        "large, bad padding",
        "large, padding inside",
        "large, not of the alphabet",
        "large, not ASCII",
        "large, not whole quanta",
    ],
)
def test_a_document_that_is_not_base64_is_refused_whatever_its_size(
    capture_server: Server, file_data: str
) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN, retries=0)
    with pytest.raises(BadInputError) as info:
        posted_send(client, file_data)
    assert info.value.field == FILE_PATH + "FileData"
    assert "not a valid xs:base64Binary" in info.value.problem
    assert server.captured.connections == 0


@pytest.mark.parametrize("file_data", [LARGE, LARGE[:-4] + "QQ==", "QUJD\nQUJD" + LARGE])
def test_a_large_valid_document_is_sent_whole(capture_server: Server, file_data: str) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN, retries=0)
    posted_send(client, file_data)
    _, body = split(server.captured.requests[0])
    assert f"<FileData>{file_data}</FileData></item></FaxJobFiles>".encode() in body


def test_a_checked_envelope_is_left_as_it_was(capture_server: Server) -> None:
    server = capture_server(answering(SEND_OK))
    client = make_client(server.url, user_id=USER, pin=PIN, retries=0)
    envelope_ = client.create_message(
        client.service,
        "SendFax",
        Recipients={"item": [RECIPIENT]},
        FaxJobFiles={"item": [{**FILE, "FileData": b"x" * 300_000}]},
    )
    before = etree.tostring(envelope_)
    client.transport.post_xml(client.transport.caller.url, envelope_, {})
    assert etree.tostring(envelope_) == before
    assert len(server.captured.requests) == 1


@pytest.mark.parametrize("text", [" ", "\t\n", "\u00a0"])
def test_a_strpin_of_white_space_never_goes_next_to_a_bearer_header(
    capture_server: Server, text: str
) -> None:
    server = capture_server(answering(report_response()))
    client = make_client(server.url, user_id=USER, token=TOKEN)
    client.plugins.clear()
    with pytest.raises(BadInputError) as info:
        client.service.GetFaxBroadcastReport(
            UserID=USER, strPIN=text, JobId="J", RecipientType=0, RecipAddress=""
        )
    assert info.value.field == "strPIN"
    assert server.captured.connections == 0


def test_a_value_quoted_by_a_refusal_is_masked_if_it_holds_the_pin(
    capture_server: Server,
) -> None:
    server = capture_server(answering(report_response()))
    client = make_client(server.url, user_id=USER, pin=PIN)
    with pytest.raises(BadInputError) as info:
        client.service.GetFaxBroadcastReport(JobId="J", RecipientType=PIN, RecipAddress="a")
    assert info.value.field == "/GetFaxBroadcastReport/RecipientType"
    texts = [str(info.value), info.value.problem, *(i.message for i in info.value.issues)]
    assert not any(PIN in text for text in texts)
    assert "'***' is not a valid xs:int" in info.value.problem
    assert server.captured.connections == 0


def report_with_request_id(face: str, request_id: str, url: str) -> None:
    if face == "FaxClient":
        FaxClient(url, user_id=USER, pin=PIN).get_fax_broadcast_report("J", request_id=request_id)
        return
    client = make_client(url, user_id=USER, pin=PIN)
    with client.settings(extra_http_headers={"x-ch-request-id": request_id}):
        client.service.GetFaxBroadcastReport(JobId="J", RecipientType=0, RecipAddress="")


@pytest.mark.parametrize("face", ["FaxClient", "zeep"])
@pytest.mark.parametrize("request_id", ["a\r\nX-Evil: 1", "x" * 5000, "é"])
def test_a_request_id_that_cannot_be_sent_is_no_errors_request_id(
    capture_server: Server, face: str, request_id: str
) -> None:
    server = capture_server(answering(report_response()))
    with pytest.raises(BadInputError) as info:
        report_with_request_id(face, request_id, server.url)
    assert (info.value.field, info.value.request_id) == ("request_id", None)
    assert request_id not in str(info.value)
    assert "\n" not in str(info.value)
    assert server.captured.connections == 0
