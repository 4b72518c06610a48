"""The receivers answer as their docstrings say: ``faxws.notifications.wsgi_app`` through a
real wsgiref server on a loopback port (and on the server examples/notifications_wsgi.py runs),
the ASGI example in examples/ called with scripted receive and send."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import importlib.util
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote_plus
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from notification_cases import CREDENTIALS, EVENT, IMAGE, PASSWORD, USER, basic

from faxws.errors import BadInputError
from faxws.notifications import DeliveryNotification, render_notification, wsgi_app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LIMIT = 4096  # the receivers' max_bytes here
TIMEOUT = 10


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IN_PROGRESS = dataclasses.replace(EVENT, status_id=3)
FAILED = dataclasses.replace(EVENT, status_id=2, image=IMAGE)
GOOD = {"Authorization": basic(USER, PASSWORD)}


# -- WSGI, over a real socket --------------------------------------------------------------------


class QuietHandler(WSGIRequestHandler):
    timeout = TIMEOUT  # every read of the server's has a time-out too

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass


class Handler:
    """What a receiver hands final events to: it keeps them, or raises while ``failing``."""

    def __init__(self) -> None:
        self.received: list[DeliveryNotification] = []
        self.failing: Exception | None = None

    def __call__(self, event: DeliveryNotification) -> None:
        if self.failing is not None:
            raise self.failing
        self.received.append(event)


@pytest.fixture
def handler() -> Handler:
    return Handler()


@pytest.fixture
def wsgi(handler: Handler) -> Iterator[tuple[int, list[DeliveryNotification]]]:
    """``wsgi_app`` served on 127.0.0.1, and the events it handed on."""
    received = handler.received
    app = wsgi_app(handler, CREDENTIALS, max_bytes=LIMIT)
    server = make_server("127.0.0.1", 0, app, handler_class=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_port, received
    finally:
        server.shutdown()
        thread.join(TIMEOUT)
        server.server_close()
    assert not thread.is_alive()


def post(
    port: int, headers: dict[str, str], body: bytes | None, method: str = "POST"
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request; ``body=None`` sends the headers alone (Content-Length as given)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        if body is None:
            conn.putrequest(method, "/notify", skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.endheaders()
        else:
            conn.request(method, "/notify", body, headers)
        response = conn.getresponse()
        return response.status, response.msg, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("flavour", ["form", "multipart", "soap"])
def test_wsgi_a_final_event_is_handed_on_and_answered_204(
    wsgi: tuple[int, list[DeliveryNotification]], flavour: str
) -> None:
    port, received = wsgi
    headers, body = render_notification(FAILED, flavour, credentials=CREDENTIALS)
    assert post(port, headers, body)[::2] == (204, b"")
    assert received == [FAILED]


def test_wsgi_an_event_in_progress_is_answered_204_and_dropped(
    wsgi: tuple[int, list[DeliveryNotification]],
) -> None:
    port, received = wsgi
    headers, body = render_notification(IN_PROGRESS, credentials=CREDENTIALS)
    assert post(port, headers, body)[0] == 204
    assert received == []


@pytest.mark.parametrize(
    "authorization",
    [None, basic(USER, "wrong"), basic("other", PASSWORD), "Bearer x"],
    ids=["none", "wrong password", "wrong user", "not Basic"],
)
def test_wsgi_wrong_credentials_get_401_before_the_body_is_read(
    wsgi: tuple[int, list[DeliveryNotification]], authorization: str | None
) -> None:
    """The body announced is never sent: an app reading it first would wait, and the request
    would time out instead of being answered."""
    port, received = wsgi
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": "100"}
    if authorization is not None:
        headers["Authorization"] = authorization
    status, answer_headers, text = post(port, headers, None)
    assert status == 401
    assert answer_headers["WWW-Authenticate"] == 'Basic realm="faxws"'
    assert PASSWORD not in text.decode()
    assert received == []


def test_wsgi_a_malformed_body_gets_400_naming_the_field(
    wsgi: tuple[int, list[DeliveryNotification]],
) -> None:
    port, received = wsgi
    headers = {"Content-Type": "application/x-www-form-urlencoded", **GOOD}
    status, _, text = post(port, headers, b"FaxJobId=J&FaxJobStatusId=one")
    assert status == 400
    assert text.decode().startswith("FaxJobStatusId: is not a decimal integer")
    assert received == []


def test_wsgi_a_body_over_max_bytes_gets_413_unread(
    wsgi: tuple[int, list[DeliveryNotification]],
) -> None:
    port, received = wsgi
    headers = {"Content-Type": "text/xml", "Content-Length": str(LIMIT + 1), **GOOD}
    assert post(port, headers, None)[0] == 413  # answered with the body unsent, so unread
    assert received == []


def test_wsgi_a_body_shorter_than_announced_is_not_read_as_an_event(
    wsgi: tuple[int, list[DeliveryNotification]],
) -> None:
    port, received = wsgi
    body = b"FaxJobId=J&FaxJobStatusId=1"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.putrequest("POST", "/notify")
        conn.putheader("Content-Type", "application/x-www-form-urlencoded")
        conn.putheader("Authorization", GOOD["Authorization"])
        conn.putheader("Content-Length", str(len(body) + 20))
        conn.endheaders(body)
        assert conn.sock is not None
        conn.sock.shutdown(1)  # the sender is done writing: the server reads to the end
        response = conn.getresponse()
        assert response.status == 400
        assert response.read().startswith(b"body: is shorter than its Content-Length")
    finally:
        conn.close()
    assert received == []


@pytest.mark.parametrize("length", [None, "", "abc", "-1", "1e3", "\u00b2"])
def test_wsgi_a_body_without_a_decimal_length_gets_411(
    wsgi: tuple[int, list[DeliveryNotification]], length: str | None
) -> None:
    port, received = wsgi
    headers = {**GOOD, "Content-Type": "application/x-www-form-urlencoded"}
    if length is not None:
        headers["Content-Length"] = length
    assert post(port, headers, None)[0] == 411
    assert received == []


def test_wsgi_only_post_is_answered(wsgi: tuple[int, list[DeliveryNotification]]) -> None:
    port, _ = wsgi
    status, headers, _ = post(port, GOOD, None, method="GET")
    assert (status, headers["Allow"]) == (405, "POST")


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"on_final": "print", "credentials": CREDENTIALS}, "on_final"),
        ({"on_final": print, "credentials": (USER,)}, "credentials"),
        ({"on_final": print, "credentials": ("a:b", PASSWORD)}, "credentials"),
        ({"on_final": print, "credentials": CREDENTIALS, "max_bytes": -1}, "max_bytes"),
        ({"on_final": print, "credentials": CREDENTIALS, "max_bytes": True}, "max_bytes"),
    ],
)
def test_wsgi_app_checks_its_arguments(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(BadInputError) as caught:
        wsgi_app(**arguments)
    assert caught.value.field == field
    assert PASSWORD not in str(caught.value)


@pytest.fixture
def script_server(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[ModuleType, int, list[DeliveryNotification]]]:
    """The WSGI example's app on the server it runs when run as a script."""
    module = load("notifications_wsgi")
    monkeypatch.setattr(module.TimedHandler, "log_message", lambda *args: None)
    received: list[DeliveryNotification] = []
    server = module.serve(wsgi_app(received.append, CREDENTIALS), 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield module, server.server_port, received
    finally:
        server.shutdown()
        thread.join(TIMEOUT)
        server.server_close()
    assert not thread.is_alive()


def test_wsgi_served_as_a_script_is_not_held_by_a_silent_connection(
    script_server: tuple[ModuleType, int, list[DeliveryNotification]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each connection has a thread: a push is answered while another connection, open
    before it, still says nothing (and is not yet timed out)."""
    module, port, received = script_server
    monkeypatch.setattr(module.TimedHandler, "timeout", 10 * TIMEOUT)
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as silent:
        headers, body = render_notification(FAILED, credentials=CREDENTIALS)
        assert post(port, headers, body)[0] == 204
        assert received == [FAILED]
        silent.setblocking(False)
        with pytest.raises(BlockingIOError):  # still open: nothing read, not closed
            silent.recv(1)


def test_wsgi_served_as_a_script_closes_a_silent_connection_quietly(
    script_server: tuple[ModuleType, int, list[DeliveryNotification]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    module, port, _ = script_server
    assert 0 < module.IDLE_TIMEOUT <= 60
    assert module.TimedHandler.timeout == module.IDLE_TIMEOUT
    monkeypatch.setattr(module.TimedHandler, "timeout", 0.2)
    for sent in (b"", b"POST /notify HTTP/1.1\r\n"):  # silent at once, or mid-request
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as silent:
            silent.sendall(sent)
            assert silent.recv(1) == b""  # closed by the server after its time-out
    assert "Traceback" not in capsys.readouterr().err


# -- ASGI, scripted ------------------------------------------------------------------------------


class Script:
    """An ASGI exchange: the body in chunks (then a disconnect, if asked), what the app sent,
    and how many chunks it took."""

    def __init__(self, chunks: list[bytes], *, disconnect: bool = False) -> None:
        self.messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": chunk, "more_body": i + 1 < len(chunks) or disconnect}
            for i, chunk in enumerate(chunks)
        ]
        if disconnect:
            self.messages.append({"type": "http.disconnect"})
        self.taken = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        if self.taken == len(self.messages):
            raise AssertionError("the app read past the end of the request")
        self.taken += 1
        return self.messages[self.taken - 1]

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int | None:
        return self.sent[0]["status"] if self.sent else None

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


def run_asgi(
    headers: dict[str, str],
    chunks: list[bytes],
    *,
    method: str = "POST",
    disconnect: bool = False,
    handler: Handler | None = None,
) -> tuple[Script, list[DeliveryNotification]]:
    handed = Handler() if handler is None else handler
    received = handed.received

    async def on_final(event: DeliveryNotification) -> None:
        handed(event)

    app = load("notifications_asgi").make_app(CREDENTIALS, on_final, max_bytes=LIMIT)
    script = Script(chunks, disconnect=disconnect)
    scope = {
        "type": "http",
        "method": method,
        "path": "/notify",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
    }
    asyncio.run(asyncio.wait_for(app(scope, script.receive, script.send), TIMEOUT))
    return script, received


@pytest.mark.parametrize("face", ["wsgi", "asgi"])
@pytest.mark.parametrize(
    "failure",
    [RuntimeError("database is locked"), ValueError(PASSWORD)],
    ids=["an error", "an error quoting the password"],
)
def test_a_handler_that_raises_gets_500_and_the_push_is_taken_when_sent_again(
    wsgi: tuple[int, list[DeliveryNotification]],
    handler: Handler,
    face: str,
    failure: Exception,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Acknowledged only once handled: the service pushes again after a 500. What is logged
    and answered names the failure's type at most, never its text."""
    headers, body = render_notification(FAILED, credentials=CREDENTIALS)

    def push() -> tuple[int | None, bytes]:
        if face == "asgi":
            script, _ = run_asgi(headers, [body], handler=handler)
            return script.status, script.body
        status, _, text = post(wsgi[0], headers, body)
        return status, text

    handler.failing = failure
    with caplog.at_level("DEBUG"):
        assert push() == (500, b"the push could not be handled")
    logged = [r.getMessage() for r in caplog.records]
    if face == "wsgi":
        assert logged == [f"push for job {FAILED.job_id} not handled: {type(failure).__name__}"]
    assert not [line for line in logged if PASSWORD in line]
    assert handler.received == []
    handler.failing = None
    assert push()[0] == 204
    assert handler.received == [FAILED]


def split(body: bytes, size: int = 100) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


@pytest.mark.parametrize("flavour", ["form", "multipart", "soap"])
def test_asgi_a_final_event_is_handed_on_and_answered_204(flavour: str) -> None:
    headers, body = render_notification(FAILED, flavour, credentials=CREDENTIALS)
    script, received = run_asgi(headers, split(body))
    assert (script.status, script.body) == (204, b"")
    assert not [name for name, _ in script.sent[0]["headers"] if name == b"content-length"]
    assert received == [FAILED]
    assert script.taken == len(split(body))


def test_asgi_an_event_in_progress_is_answered_204_and_dropped() -> None:
    headers, body = render_notification(IN_PROGRESS, credentials=CREDENTIALS)
    script, received = run_asgi(headers, [body])
    assert (script.status, received) == (204, [])


@pytest.mark.parametrize(
    "authorization",
    [None, basic(USER, "wrong"), basic("other", PASSWORD), "Bearer x"],
    ids=["none", "wrong password", "wrong user", "not Basic"],
)
def test_asgi_wrong_credentials_get_401_with_the_body_unread(authorization: str | None) -> None:
    headers, body = render_notification(EVENT)
    if authorization is not None:
        headers["Authorization"] = authorization
    script, received = run_asgi(headers, [body])
    assert script.status == 401
    assert script.taken == 0
    assert (b"www-authenticate", b'Basic realm="faxws"') in script.sent[0]["headers"]
    assert received == []


def test_asgi_a_malformed_body_gets_400_naming_the_field() -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded", **GOOD}
    script, received = run_asgi(headers, [b"FaxJobId=J&FaxJobStatusId=", b"one"])
    assert script.status == 400
    assert script.body.startswith(b"FaxJobStatusId: is not a decimal integer")
    assert received == []


@pytest.mark.parametrize(
    "echoed",
    [PASSWORD, GOOD["Authorization"][6:]],
    ids=["the password", "the Basic token"],
)
def test_the_answer_to_a_malformed_body_masks_the_password_it_quotes(
    wsgi: tuple[int, list[DeliveryNotification]], echoed: str
) -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded", **GOOD}
    body = b"FaxJobId=J&FaxJobStatusId=" + quote_plus(echoed).encode()
    script, _ = run_asgi(headers, [body])
    status, _, text = post(wsgi[0], headers, body)
    for answer in (script.body.decode(), text.decode()):
        assert answer.startswith("FaxJobStatusId: ")
        assert "***" in answer
        assert echoed not in answer
        assert quote_plus(echoed) not in answer
    assert (script.status, status) == (400, 400)


def test_asgi_a_body_over_max_bytes_gets_413_and_the_rest_is_not_read() -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded", **GOOD}
    chunks = [b"x" * 1000] * 10
    script, received = run_asgi(headers, chunks)
    assert script.status == 413
    assert script.taken == LIMIT // 1000 + 1  # the chunk that passed the limit, no more
    assert received == []


def test_asgi_a_sender_gone_mid_body_gets_no_answer_and_no_event() -> None:
    headers, body = render_notification(EVENT, credentials=CREDENTIALS)
    cut = body[: body.index(b"&PageCount")]  # itself a readable push
    script, received = run_asgi(headers, [cut], disconnect=True)
    assert (script.sent, received) == ([], [])


def test_asgi_only_post_is_answered() -> None:
    script, _ = run_asgi(GOOD, [b""], method="GET")
    assert script.status == 405
    assert script.taken == 0


def test_asgi_lifespan_events_are_left_alone() -> None:
    app = load("notifications_asgi").make_app(CREDENTIALS, lambda event: None)
    script = Script([])
    asyncio.run(app({"type": "lifespan"}, script.receive, script.send))
    assert (script.taken, script.sent) == (0, [])
