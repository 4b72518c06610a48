"""The transport seam: a client given a transport (``ClientOptions(transport=...)``) behaves
as over faxws's own HTTP transport. The same scenarios run through a MockTransport and over
real sockets, for each face; then what MockTransport and the seam promise on their own."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    CaptureServer,
    Face,
    fault_response,
    http_reply,
    parse_request,
    report_response,
    send_response,
)
from faxws import (
    AsyncFaxClient,
    BadInputError,
    ClientOptions,
    ConnectError,
    DocumentError,
    FaxClient,
    FaxFile,
    FaxWSError,
    HTTPStatusError,
    ProtocolError,
    SoapFaultError,
    TransportError,
)
from faxws.transport import MockTransport, Request, Response

PDF = FaxFile(b"%PDF-1.4", 101)


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    """A request as the service received it: header names in lower case."""

    headers: dict[str, str]
    body: bytes


#: The service's side of a scenario: the answer to the n-th request (from 0).
Script = Callable[[int, Seen], Answer]


class Wire:
    """A scripted service that a face's clients reach through a MockTransport (``mock``) or
    over a real socket (``socket``, a capture server on loopback)."""

    def __init__(self, kind: str, face: Face, start: Callable[..., CaptureServer]) -> None:
        self.kind = kind
        self.face = face
        self._start = start
        self.seen: list[Seen] = []

    def client(self, script: Script, **kwargs: Any) -> Any:
        count = itertools.count()
        kwargs.setdefault("user_id", "mbx1")
        if "token" not in kwargs:
            kwargs.setdefault("pin", "4321")
        options = ClientOptions(**kwargs.pop("options", {}))
        if self.kind == "mock":

            def handler(request: Request) -> Response:
                seen = Seen({k.lower(): v for k, v in request.headers.items()}, request.body)  # type: ignore[arg-type]
                self.seen.append(seen)
                answer = script(next(count), seen)
                return Response(answer.status, answer.headers, answer.body)

            options = ClientOptions(**{**_fields(options), "transport": MockTransport(handler)})
            return self.face.client("https://fax.example.com", options=options, **kwargs)

        def reply(raw: bytes) -> bytes:
            request = parse_request(raw)
            seen = Seen(request.headers, request.body)
            self.seen.append(seen)
            answer = script(next(count), seen)
            extra = "".join(f"{k}: {v}\r\n" for k, v in answer.headers.items())
            return http_reply(answer.body, f"{answer.status} Reason", extra)

        server = self._start(reply)
        return self.face.client(server.url, options=options, **kwargs)


def _fields(options: ClientOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in options.__dataclass_fields__}


@pytest.fixture(params=["mock", "socket"])
def wire(
    request: pytest.FixtureRequest, face: Face, capture_server: Callable[..., CaptureServer]
) -> Wire:
    return Wire(request.param, face, capture_server)


def always(answer: Answer) -> Script:
    return lambda n, seen: answer


def in_turn(*answers: Answer) -> Script:
    return lambda n, seen: answers[min(n, len(answers) - 1)]


# -- the same scenarios, whatever carries them ------------------------------------------------


def test_a_send_goes_out_in_the_contracts_form_and_its_answer_is_read(wire: Wire) -> None:
    answer = Answer(
        200,
        send_response(["J1", "J2"]),
        {"x-ch-activity-id": "act-9", "X-CH-Execution-Time": "12"},
    )
    client = wire.client(always(answer))
    result = client.send_fax(["+1 555 0100", "+1 555 0101"], [PDF], request_id="rid-seam")
    assert result.job_ids == ("J1", "J2")
    assert (result.request_id, result.activity_id, result.execution_time_ms) == (
        "rid-seam",
        "act-9",
        12,
    )
    (seen,) = wire.seen
    assert seen.headers["content-type"] == "application/soap+xml; charset=utf-8"
    assert seen.headers["soapaction"] == ""
    assert seen.headers["x-ch-request-id"] == "rid-seam"
    assert "authorization" not in seen.headers
    assert b"<strPIN>4321</strPIN>" in seen.body


def test_a_report_is_retried_after_503_with_the_same_request_id(wire: Wire) -> None:
    script = in_turn(Answer(503, b"busy"), Answer(503, b"busy"), Answer(200, report_response()))
    client = wire.client(script, options={"retries": 2, "retry_backoff": 0})
    assert client.get_fax_broadcast_report("J1", request_id="rid-again").job_id == "J1"
    assert [s.headers["x-ch-request-id"] for s in wire.seen] == ["rid-again"] * 3


def test_a_send_answered_503_is_not_sent_again(wire: Wire) -> None:
    client = wire.client(always(Answer(503, b"busy")), options={"retry_backoff": 0})
    with pytest.raises(HTTPStatusError) as info:
        client.send_fax(["+1 555 0100"], [PDF])
    assert info.value.maybe_delivered is True
    assert len(wire.seen) == 1


def test_a_fault_is_a_typed_error_and_not_retried(wire: Wire) -> None:
    fault = Answer(500, fault_response("SOAP-ENV:Server", "timeout expired"))
    client = wire.client(always(fault), options={"retry_backoff": 0})
    with pytest.raises(SoapFaultError) as info:
        client.get_fax_broadcast_report("J1")
    assert info.value.maybe_delivered is True
    assert len(wire.seen) == 1


def test_a_401_asks_the_token_provider_again_once(wire: Wire) -> None:
    tokens = iter(["tok-1", "tok-2", "tok-3"])

    class Provider:
        invalidated = 0

        def __call__(self) -> str:
            return next(tokens)

        def invalidate(self) -> None:
            self.invalidated += 1

    provider = Provider()
    script = in_turn(Answer(401, b"expired"), Answer(200, report_response()))
    client = wire.client(script, token=provider)
    client.get_fax_broadcast_report("J1")
    assert [s.headers["authorization"] for s in wire.seen] == ["Bearer tok-1", "Bearer tok-2"]
    assert provider.invalidated == 1
    assert all(b"<strPIN></strPIN>" in s.body or b"<strPIN/>" in s.body for s in wire.seen)


def test_an_answer_over_the_size_limit_is_refused(wire: Wire) -> None:
    big = report_response(text="x" * 2000)
    client = wire.client(always(Answer(200, big)), options={"max_response_bytes": 1024})
    with pytest.raises(ProtocolError, match="larger than 1024 bytes") as info:
        client.get_fax_broadcast_report("J1", request_id="rid-big")
    assert info.value.request_id == "rid-big"


def test_a_large_document_arrives_whole(wire: Wire, tmp_path: Path) -> None:
    data = bytes(range(256)) * 8192  # 2 MiB: read and sent in chunks
    path = tmp_path / "big.pdf"
    path.write_bytes(data)
    client = wire.client(always(Answer(200, send_response(["J1"]))))
    client.send_fax(["+1 555 0100"], [FaxFile.from_path(path)])
    (seen,) = wire.seen
    start = seen.body.index(b"<FileData>") + len(b"<FileData>")
    assert base64.b64decode(seen.body[start : seen.body.index(b"</FileData>")]) == data


# -- what the seam and MockTransport promise ---------------------------------------------------


def mock_client(face: Face, transport: Any, **settings: Any) -> Any:
    options = ClientOptions(transport=transport, **settings)
    return face.client("https://fax.example.com", user_id="u", pin="4321", options=options)


def test_a_failure_the_transport_reports_decides_the_retry(face: Face) -> None:
    """Retries stay above the seam: a request the transport did not send is sent again, even
    a SendFax; one it may have delivered is sent again only when it is a report."""
    failures: list[FaxWSError] = [
        ConnectError("refused; nothing was sent"),
        TransportError("reset after the request", maybe_delivered=True),
    ]

    def handler(request: Request) -> Response:
        if failures:
            raise failures.pop(0)
        if b"GetFaxBroadcastReport" in request.body:  # type: ignore[operator]
            return Response(200, {}, report_response())
        return Response(200, {}, send_response(["J1"]))

    transport = MockTransport(handler)
    client = mock_client(face, transport, retry_backoff=0)
    with pytest.raises(TransportError) as info:
        client.send_fax(["+1 555 0100"], [PDF])  # refused, then sent and lost: not again
    assert info.value.maybe_delivered is True
    assert len(transport.requests) == 2
    failures[:] = [TransportError("reset after the request", maybe_delivered=True)]
    assert client.get_fax_broadcast_report("J1").job_id == "J1"
    assert len(transport.requests) == 4


def test_the_handler_gets_the_request_whole_and_each_is_kept(face: Face) -> None:
    transport = MockTransport(lambda request: Response(200, {}, send_response(["J1"])))
    client = mock_client(face, transport)
    client.send_fax(["+1 555 0100"], [PDF], request_id="rid-kept")
    (request,) = transport.requests
    assert request.url == "https://fax.example.com/fax/v5"
    assert request.request_id == "rid-kept"
    assert isinstance(request.body, bytes)
    assert request.size == len(request.body)
    assert request.written is True


def test_an_async_handler_serves_the_async_client() -> None:
    async def handler(request: Request) -> Response:
        await asyncio.sleep(0)
        return Response(200, {}, report_response())

    async def call() -> str:
        options = ClientOptions(transport=MockTransport(handler))
        async with AsyncFaxClient(
            "https://fax.example.com", user_id="u", pin="1", options=options
        ) as client:
            return (await client.get_fax_broadcast_report("J7")).job_id

    assert asyncio.run(call()) == "J7"


def test_an_async_handler_cannot_serve_the_threaded_client() -> None:
    async def handler(request: Request) -> Response:
        return Response(200, {}, report_response())

    options = ClientOptions(transport=MockTransport(handler))
    client = FaxClient("https://fax.example.com", user_id="u", pin="1", options=options)
    with client, pytest.raises(FaxWSError, match="TypeError"):
        client.get_fax_broadcast_report("J1")


class SyncOnly:
    closed = 0

    def post(self, request: Request) -> Response:
        return Response(200, {}, report_response())

    def close(self) -> None:
        self.closed += 1


class AsyncOnly:
    closed = 0

    async def post_async(self, request: Request) -> Response:
        return Response(200, {}, report_response())

    async def aclose(self) -> None:
        self.closed += 1


def test_a_transport_of_the_other_kind_is_refused_when_the_client_is_made() -> None:
    with pytest.raises(BadInputError) as info:
        ClientOptions(transport=object())  # type: ignore[arg-type]
    assert info.value.field == "transport"
    with pytest.raises(BadInputError, match="need a SyncTransport") as info:
        FaxClient(
            "https://x.example", user_id="u", pin="1", options=ClientOptions(transport=AsyncOnly())
        )
    assert info.value.field == "transport"
    with pytest.raises(BadInputError, match="needs an AsyncTransport") as info:
        AsyncFaxClient(
            "https://x.example", user_id="u", pin="1", options=ClientOptions(transport=SyncOnly())
        )
    assert info.value.field == "transport"


class PostAwaited:
    """A post() that is a coroutine function: no answer for the threaded client."""

    async def post(self, request: Request) -> Response:
        return Response(200, {}, report_response())

    def close(self) -> None: ...


class PostAsyncNotAwaited:
    """A post_async() that returns the answer itself: nothing the async client can await."""

    def post_async(self, request: Request) -> Response:
        return Response(200, {}, report_response())

    async def aclose(self) -> None: ...


def test_a_transport_whose_post_is_of_the_other_kind_is_refused() -> None:
    options = ClientOptions(transport=PostAwaited())  # type: ignore[arg-type]
    with pytest.raises(BadInputError, match="need a SyncTransport") as info:
        FaxClient("https://x.example", user_id="u", pin="1", options=options)
    assert info.value.field == "transport"
    options = ClientOptions(transport=PostAsyncNotAwaited())  # type: ignore[arg-type]
    with pytest.raises(BadInputError, match="needs an AsyncTransport") as info:
        AsyncFaxClient("https://x.example", user_id="u", pin="1", options=options)
    assert info.value.field == "transport"


def test_closing_the_client_closes_its_transport(face: Face) -> None:
    transport = AsyncOnly() if face.is_async else SyncOnly()
    client = mock_client(face, transport)
    assert client.get_fax_broadcast_report("J1").job_id == "J1"
    client.close()
    assert transport.closed == 1


def test_the_handlers_headers_are_read_in_any_case(face: Face) -> None:
    headers = {"X-Ch-Activity-Id": "act-1", "x-ch-execution-time": "5"}
    transport = MockTransport(lambda request: Response(200, headers, report_response()))
    result = mock_client(face, transport).get_fax_broadcast_report("J1")
    assert (result.activity_id, result.execution_time_ms) == ("act-1", 5)


def test_zeep_clients_take_a_transport_too() -> None:
    from faxws.zeep import make_client

    transport = MockTransport(lambda request: Response(200, {}, report_response()))
    options = ClientOptions(transport=transport)
    client = make_client("https://fax.example.com", user_id="u", pin="4321", options=options)
    answer = client.service.GetFaxBroadcastReport(JobId="J1", RecipientType=0, RecipAddress="")
    assert answer["return"] is True
    (request,) = transport.requests
    assert b"<strPIN>4321</strPIN>" in request.body  # type: ignore[operator]
    client.transport.close()


def test_a_mock_transport_needs_a_callable_handler() -> None:
    from faxws import BadInputError
    from faxws.transport import MockTransport

    with pytest.raises(BadInputError) as info:
        MockTransport("not a function")  # type: ignore[arg-type]
    assert (info.value.field, info.value.problem) == ("handler", "must be callable, not str")


class _WritesThenFails:
    """A transport that writes the request, then reports a failure that says (wrongly, or for
    a document) that nothing may have been delivered."""

    def __init__(self, failure: Callable[[], FaxWSError]) -> None:
        self.failure = failure
        self.posted = 0

    def post(self, request: Request) -> Response:
        self.posted += 1
        request.written = True
        raise self.failure()

    async def post_async(self, request: Request) -> Response:
        return self.post(request)

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


#: What a transport may raise after it wrote a request, each saying nothing was delivered.
AFTER_WRITING = [
    pytest.param(lambda: ConnectError("says nothing was sent"), id="connect-error"),
    pytest.param(
        lambda: TransportError("says nothing was sent", maybe_delivered=False), id="transport"
    ),
    pytest.param(lambda: DocumentError("a document failed mid-body"), id="document-error"),
    pytest.param(lambda: ProtocolError("garbled"), id="protocol-error"),
]


@pytest.mark.parametrize("failure", AFTER_WRITING)
def test_a_written_request_may_have_been_delivered_whatever_the_error_says(
    face: Face, failure: Callable[[], FaxWSError]
) -> None:
    """Safety is decided by the fact (a byte was written), not by the error's word: the call
    says maybe_delivered and a SendFax is not sent again."""
    transport = _WritesThenFails(failure)
    client = mock_client(face, transport, retry_backoff=0)
    with pytest.raises(FaxWSError) as info:
        client.send_fax(["+1 555 0100"], [PDF])
    assert info.value.maybe_delivered is True
    assert transport.posted == 1


@pytest.mark.parametrize("failure", AFTER_WRITING)
def test_a_written_request_may_have_been_delivered_in_zeep_too(
    failure: Callable[[], FaxWSError],
) -> None:
    from conftest import ZEEP_RECIPIENT
    from faxws.zeep import make_client

    transport = _WritesThenFails(failure)
    options = ClientOptions(transport=transport, retry_backoff=0)
    client = make_client("https://fax.example.com", user_id="u", pin="4321", options=options)
    file = {"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF"}
    with pytest.raises(FaxWSError) as info:
        client.service.SendFax(Recipients={"item": [ZEEP_RECIPIENT]}, FaxJobFiles={"item": [file]})
    assert info.value.maybe_delivered is True
    assert transport.posted == 1


def test_a_mock_transport_counts_a_request_as_written_unless_told_nothing_went_out() -> None:
    """The handler plays the network: an answer, any failure, or a cancellation while an
    async handler is awaited leaves the request written; only an error saying that nothing
    was sent leaves it not written."""

    def attempt() -> Request:
        return Request("https://fax.example.com/fax/v5", {}, b"<e/>", 4, "rid")

    def handler(request: Request) -> Response:
        if failures:
            raise failures.pop(0)
        return Response(200, {}, report_response())

    failures: list[Exception] = [
        ConnectError("refused"),
        RuntimeError("broken"),
        TransportError("reset", maybe_delivered=True),
    ]
    transport = MockTransport(handler)
    written: list[bool] = []
    for _ in range(4):
        request = attempt()
        with contextlib.suppress(Exception):
            transport.post(request)
        written.append(request.written)
    assert written == [False, True, True, True]

    async def cancelled() -> bool:
        started = asyncio.Event()

        async def hangs(request: Request) -> Response:
            started.set()
            await asyncio.Event().wait()
            raise AssertionError("never answers")

        request = attempt()
        task = asyncio.ensure_future(MockTransport(hangs).post_async(request))
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return request.written

    assert asyncio.run(cancelled()) is True


def test_requests_and_responses_show_no_secret() -> None:
    request = Request(
        "https://fax.example.com/fax/v5",
        {"Authorization": "Bearer TOKEN-SECRET"},
        b"<strPIN>PIN-SECRET</strPIN>",
        27,
        "rid",
    )
    response = Response(500, {"X": "y"}, b"<faultstring>PIN-SECRET</faultstring>")
    for shown in (repr(request), repr(response), str(request), str(response)):
        assert "SECRET" not in shown
    assert repr(request) == (
        "Request(url='https://fax.example.com/fax/v5', request_id='rid', size=27, written=False)"
    )


class _Answers:
    """A transport of the caller's that writes the request and hands back ``answer``."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.posted = 0

    def post(self, request: Request) -> Any:
        self.posted += 1
        request.written = True
        return self.answer

    async def post_async(self, request: Request) -> Any:
        return self.post(request)

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


ODD_ANSWERS = [
    pytest.param(Response(200.7, {}, b""), id="float-status"),  # type: ignore[arg-type]
    pytest.param(Response(True, {}, b""), id="bool-status"),  # type: ignore[arg-type]
    pytest.param(Response("200", {}, b""), id="str-status"),  # type: ignore[arg-type]
    pytest.param(Response(42, {}, b""), id="no-http-status"),
    pytest.param(Response(200, None, b""), id="no-headers"),  # type: ignore[arg-type]
    pytest.param(Response(200, {}, None), id="no-content"),  # type: ignore[arg-type]
    pytest.param(Response(200, {}, "text"), id="str-content"),  # type: ignore[arg-type]
    pytest.param(None, id="none"),
    pytest.param((200, {}, b""), id="tuple"),
]


@pytest.mark.parametrize("answer", ODD_ANSWERS)
def test_an_answer_that_is_not_a_response_is_a_protocol_error(face: Face, answer: object) -> None:
    transport = _Answers(answer)
    client = mock_client(face, transport, retry_backoff=0)
    with pytest.raises(ProtocolError) as info:
        client.send_fax(["+1 555 0100"], [PDF], request_id="rid-odd")
    assert info.value.maybe_delivered is True
    assert info.value.request_id == "rid-odd"
    assert transport.posted == 1
    repr(answer)  # a Response shows what it holds, whatever it holds


def test_headers_in_a_plain_dict_are_read_in_any_case(face: Face) -> None:
    headers = {"X-CH-ACTIVITY-ID": "act-1"}
    transport = _Answers(Response(200, headers, send_response(["J1"])))
    result = mock_client(face, transport).send_fax(["+1 555 0100"], [PDF])
    assert result.activity_id == "act-1"
