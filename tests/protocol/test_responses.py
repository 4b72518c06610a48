"""Responses: typed results, and each kind of failure as its typed error, for each face."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conftest import (
    CaptureServer,
    Face,
    envelope,
    fault_response,
    http_reply,
    parse_request,
    report_response,
    send_response,
)
from faxws import (
    AuthenticationError,
    FaxFile,
    HTTPStatusError,
    ProtocolError,
    SendFaxResult,
    ServiceError,
    SoapFaultError,
)

PIN = "PIN-SECRET-4711"


@pytest.fixture
def answering(capture_server: type[CaptureServer]) -> Callable[..., CaptureServer]:
    """A server giving these answers in turn (the last one from then on)."""

    def start(*answers: bytes) -> CaptureServer:
        queue = list(answers)
        return capture_server(lambda raw: queue.pop(0) if len(queue) > 1 else queue[0])

    return start


def answer(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> bytes:
    reasons = {200: "OK", 307: "Temporary Redirect", 401: "Unauthorized", 403: "Forbidden"}
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return http_reply(body, f"{status} {reasons.get(status, 'Error')}", extra)


def pin_client(face: Face, server: CaptureServer, **kw: Any) -> Any:
    return face.client(server.url, user_id="mbx1", pin=PIN, **kw)


def send(client: Any, rid: str = "rid-1") -> SendFaxResult:
    result: SendFaxResult = client.send_fax(
        ["+1 555 0100", "+1 555 0101"], [FaxFile(b"%PDF", 101)], rid
    )
    return result


def test_send_fax_result(answering: Callable[..., CaptureServer], face: Face) -> None:
    server = answering(
        answer(
            send_response(["JOB-A", "JOB-B"], ttfp=120),
            headers={"x-ch-activity-id": "act-9", "x-ch-execution-time": "37"},
        )
    )
    result = send(pin_client(face, server))
    assert result == SendFaxResult(
        job_ids=("JOB-A", "JOB-B"),
        ttfp=120,
        request_id="rid-1",
        activity_id="act-9",
        execution_time_ms=37,
    )
    with pytest.raises(AttributeError):
        result.ttfp = 1  # type: ignore[misc]


def test_report_result(answering: Callable[..., CaptureServer], face: Face) -> None:
    server = answering(answer(report_response(), headers={"x-ch-activity-id": "act-1"}))
    result = pin_client(face, server).get_fax_broadcast_report("JOB-A", request_id="r2")
    assert (result.job_id, result.request_id, result.activity_id) == ("JOB-A", "r2", "act-1")
    assert result.execution_time_ms is None


def test_unknown_job_is_a_service_error_with_code(
    answering: Callable[..., CaptureServer], face: Face
) -> None:
    server = answering(answer(report_response(ok=False, code=-5019, text="Invalid Job ID")))
    with pytest.raises(ServiceError) as info:
        pin_client(face, server).get_fax_broadcast_report("NOPE", request_id="r3")
    err = info.value
    assert (err.code, err.error_string, err.request_id, err.status_code) == (
        -5019,
        "Invalid Job ID",
        "r3",
        200,
    )
    assert str(err) == "service error -5019: Invalid Job ID (HTTP 200, request id r3)"
    assert err.maybe_delivered is False


def test_nonzero_wserror_with_return_true_is_a_service_error(
    answering: Callable[..., CaptureServer],
    face: Face,
) -> None:
    server = answering(answer(send_response(["J"], ok=True, code=-7, text="quota")))
    with pytest.raises(ServiceError) as info:
        send(pin_client(face, server))
    assert info.value.code == -7


def test_return_false_without_code_is_a_service_error(
    answering: Callable[..., CaptureServer], face: Face
) -> None:
    server = answering(answer(report_response(ok=False)))
    with pytest.raises(ServiceError, match="the service returned false"):
        pin_client(face, server).get_fax_broadcast_report("J")


def test_soap_fault(answering: Callable[..., CaptureServer], face: Face) -> None:
    server = answering(answer(fault_response("SOAP-ENV:Server", "database down"), status=500))
    with pytest.raises(SoapFaultError) as info:
        send(pin_client(face, server), "rid-f")
    err = info.value
    assert (err.fault_code, err.fault_string, err.status_code, err.request_id) == (
        "SOAP-ENV:Server",
        "database down",
        500,
        "rid-f",
    )


def test_soap12_fault_is_read_too(answering: Callable[..., CaptureServer], face: Face) -> None:
    body = (
        b'<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><e:Fault>'
        b"<e:Code><e:Value>e:Sender</e:Value></e:Code><e:Reason><e:Text>no</e:Text></e:Reason>"
        b"</e:Fault></e:Body></e:Envelope>"
    )
    server = answering(answer(body, status=500))
    with pytest.raises(SoapFaultError) as info:
        send(pin_client(face, server))
    assert (info.value.fault_code, info.value.fault_string) == ("e:Sender", "no")


@pytest.mark.parametrize("status", [401, 403])
def test_authentication_error(
    answering: Callable[..., CaptureServer], face: Face, status: int
) -> None:
    server = answering(answer(fault_response("SOAP-ENV:Client", "bad credentials"), status=status))
    with pytest.raises(AuthenticationError) as info:
        send(pin_client(face, server))
    assert info.value.status_code == status
    assert info.value.fault_string == "bad credentials"
    assert len(server.captured.requests) == 1  # a fixed credential is not retried


def test_401_with_a_token_provider_refreshes_once_and_retries(
    answering: Callable[..., CaptureServer],
    face: Face,
) -> None:
    tokens = iter(["old-token", "new-token", "third-token"])
    invalidated: list[bool] = []

    class Provider:
        def __call__(self) -> str:
            return next(tokens)

        def invalidate(self) -> None:
            invalidated.append(True)

    server = answering(
        answer(fault_response("c", "expired"), status=401), answer(send_response(["J1", "J2"]))
    )
    client = face.client(server.url, user_id="mbx1", token=Provider())
    result = send(client, "rid-401")
    sent = [parse_request(raw).headers for raw in server.captured.requests]
    assert [h["authorization"] for h in sent] == ["Bearer old-token", "Bearer new-token"]
    assert [h["x-ch-request-id"] for h in sent] == ["rid-401"] * 2
    assert invalidated == [True]
    assert result.job_ids == ("J1", "J2")


def test_401_twice_with_a_token_provider_gives_up(
    answering: Callable[..., CaptureServer], face: Face
) -> None:
    server = answering(answer(b"", status=401))
    client = face.client(server.url, user_id="mbx1", token=lambda: "t")
    with pytest.raises(AuthenticationError):
        client.get_fax_broadcast_report("J")
    assert len(server.captured.requests) == 2


def test_html_error_page_is_an_http_status_error(
    answering: Callable[..., CaptureServer], face: Face
) -> None:
    page = "<html><body>" + "Internal Server Error " * 100 + "</body></html>"
    server = answering(answer(page.encode(), status=500))
    with pytest.raises(HTTPStatusError) as info:
        send(pin_client(face, server))
    err = info.value
    assert err.status_code == 500
    assert err.maybe_delivered is True
    assert len(err.body_excerpt) <= 500
    assert err.body_excerpt.startswith("<html><body>Internal Server Error")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "empty"),
        (b"not xml at all", "not well-formed"),
        (b"<html><body>ok</body></html>", "not a SOAP envelope"),
        (envelope(""), "holds 0 elements"),
        (
            envelope('<FaxSendResponse xmlns="urn:Other"><return>true</return></FaxSendResponse>'),
            "expected the element {urn:FaxWS}FaxSendResponse",
        ),
        (
            envelope('<FaxSendResponse xmlns="urn:FaxWS"><return>true</return></FaxSendResponse>'),
            "lacks /FaxSendResponse/FaxJobIds",
        ),
        (
            send_response(["J"]).replace(b"<f:TTFP>45", b"<f:TTFP>soon"),
            "/FaxSendResponse/TTFP is not an integer",
        ),
        (
            b'<!DOCTYPE x [<!ENTITY a "aaaa">]>' + send_response(["J"]),
            "DOCTYPE",
        ),
        (b"\xff\xfe<soap>", "not well-formed"),
    ],
    ids=[
        "empty",
        "not-xml",
        "html",
        "empty-body",
        "wrong-namespace",
        "missing-part",
        "bad-int",
        "dtd",
        "bad-utf8",
    ],
)
def test_unreadable_answers_are_protocol_errors(
    answering: Callable[..., CaptureServer], face: Face, body: bytes, words: str
) -> None:
    server = answering(answer(body))
    with pytest.raises(ProtocolError) as info:
        send(pin_client(face, server), "rid-p")
    assert words in info.value.message
    assert info.value.request_id == "rid-p"
    assert info.value.maybe_delivered is True


def test_unknown_extra_elements_are_tolerated(
    answering: Callable[..., CaptureServer], face: Face
) -> None:
    body = send_response(["J1", "J2"]).replace(b"<f:TTFP>", b"<f:NewThing>x</f:NewThing><f:TTFP>")
    server = answering(answer(body))
    assert send(pin_client(face, server)).job_ids == ("J1", "J2")


def test_secret_echoed_by_the_service_is_masked(
    answering: Callable[..., CaptureServer], face: Face
) -> None:
    server = answering(answer(fault_response("c", f"bad PIN {PIN} for mbx1"), status=500))
    with pytest.raises(SoapFaultError) as info:
        send(pin_client(face, server))
    assert PIN not in str(info.value)
    assert PIN not in repr(info.value)
    assert "bad PIN *** for mbx1" in info.value.fault_string


def test_redirect_is_not_followed(answering: Callable[..., CaptureServer], face: Face) -> None:
    elsewhere = answering(answer(send_response(["J1", "J2"])))
    server = answering(answer(b"", status=307, headers={"Location": f"{elsewhere.url}/fax/v5"}))
    with pytest.raises(HTTPStatusError) as info:
        send(pin_client(face, server))
    assert info.value.status_code == 307
    assert info.value.maybe_delivered is False
    assert len(server.captured.requests) == 1
    assert elsewhere.captured.connections == 0


def test_oversized_response_is_refused(answering: Callable[..., CaptureServer], face: Face) -> None:
    server = answering(answer(b"<x>" + b"a" * (2 * 1024 * 1024) + b"</x>"))
    client = pin_client(face, server, max_response_bytes=1024 * 1024)
    with pytest.raises(ProtocolError, match="larger than 1048576 bytes"):
        send(client)


def test_every_error_type_is_a_faxws_error() -> None:
    import faxws.errors as errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.FaxWSError), name
        assert cls.__doc__, name
