"""The token providers' failures: whatever a token endpoint answers, and however a fetch
fails, callers get a FaxWSError (with their call's request id through the client), and the
callers waiting for one fetch share its outcome instead of fetching again.

Every server is a real HTTP server on 127.0.0.1; every wait has a time-out only a broken
provider reaches.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from conftest import CaptureServer, Face, http_reply
from faxws import (
    AuthenticationError,
    ConnectError,
    FaxWSError,
    ProtocolError,
    RequestTimeoutError,
)
from faxws import oauth as oauth_module
from faxws.auth import BearerAuth
from faxws.oauth import AsyncClientCredentials, ClientCredentials

#: Longest any step may take before the test calls the provider broken.
PATIENCE = 20.0
CALLERS = 8
SECRET = "s3cr3t-client-secret"


def token_answer(body: bytes, status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def ok_answer() -> bytes:
    body = json.dumps({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600})
    return token_answer(body.encode())


@pytest.fixture
def token_server(
    capture_server: Callable[[Callable[[bytes], bytes | None]], CaptureServer],
) -> Callable[[bytes], CaptureServer]:
    """A token endpoint answering every request with the same raw answer."""

    def start(answer: bytes) -> CaptureServer:
        return capture_server(lambda raw: answer)

    return start


def url_of(server: CaptureServer) -> str:
    return f"{server.url}/connect/token"


# -- hostile answers ----------------------------------------------------------------------

DEEP = 5000  # far past the interpreter's recursion limit (1000 by default)

HOSTILE: dict[str, tuple[bytes, type[FaxWSError]]] = {
    "deeply nested arrays": (token_answer(b"[" * DEEP + b"]" * DEEP), ProtocolError),
    "deeply nested arrays, unclosed": (token_answer(b"[" * DEEP), ProtocolError),
    "deeply nested objects": (
        token_answer(b'{"a":' * DEEP + b"1" + b"}" * DEEP),
        ProtocolError,
    ),
    "deep nesting inside the token": (
        token_answer(b'{"access_token":' + b"[" * DEEP + b"]" * DEEP + b"}"),
        ProtocolError,
    ),
    "deep nesting in a refusal": (
        token_answer(b'{"error":' + b"[" * DEEP + b"]" * DEEP + b"}", "400 Bad Request"),
        AuthenticationError,
    ),
    "deep nesting in a refusal, unclosed": (
        token_answer(b"[" * DEEP, "401 Unauthorized"),
        AuthenticationError,
    ),
    "invalid UTF-8": (token_answer(b'{"access_token": "tok\xff\xfe"}'), ProtocolError),
    "invalid UTF-8 in a refusal": (
        token_answer(b'{"error": "\xff"}', "400 Bad Request"),
        AuthenticationError,
    ),
    "a lone surrogate in the token": (
        token_answer(b'{"access_token": "tok\\ud800"}'),
        ProtocolError,
    ),
    "not JSON": (token_answer(b"<html>hello</html>"), ProtocolError),
    "empty": (token_answer(b""), ProtocolError),
    "a list": (token_answer(b'["access_token"]'), ProtocolError),
    "a string": (token_answer(b'"tok"'), ProtocolError),
    "a number": (token_answer(b"12"), ProtocolError),
    "a huge number": (token_answer(b"9" * 60000), ProtocolError),
    "null": (token_answer(b"null"), ProtocolError),
    "a numeric token": (token_answer(b'{"access_token": 12}'), ProtocolError),
    "a huge numeric token": (
        token_answer(b'{"access_token": ' + b"9" * 60000 + b"}"),
        ProtocolError,
    ),
    "a null token": (token_answer(b'{"access_token": null}'), ProtocolError),
    "an object token": (token_answer(b'{"access_token": {"a": "b"}}'), ProtocolError),
    "an empty token": (token_answer(b'{"access_token": ""}'), ProtocolError),
    "a token with CR LF": (
        token_answer(b'{"access_token": "tok\\r\\nX-Evil: 1"}'),
        ProtocolError,
    ),
    "a token with NUL": (token_answer(b'{"access_token": "tok\\u0000"}'), ProtocolError),
    "a numeric token_type": (
        token_answer(b'{"access_token": "tok", "token_type": 1}'),
        ProtocolError,
    ),
    "a MAC token_type": (
        token_answer(b'{"access_token": "tok", "token_type": "mac"}'),
        ProtocolError,
    ),
    "too large": (token_answer(b" " * (70 * 1024) + b"{}"), ProtocolError),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_token_answer_is_a_faxws_error(
    face: Face, token_server: Callable[[bytes], CaptureServer], case: str
) -> None:
    """Called directly, or through the client's credentials (which add the call's request
    id): a typed error, never RecursionError, UnicodeDecodeError or anything raw; and the
    secret is in no message."""
    answer, expected = HOSTILE[case]
    server = token_server(answer)
    provider = face.provider(url_of(server), "client", SECRET, timeout=PATIENCE)
    with pytest.raises(FaxWSError) as direct:
        face.fetch_token(provider)
    assert type(direct.value) is expected, repr(direct.value)
    assert direct.value.__cause__ is None

    auth = BearerAuth(provider)
    fetch: Callable[[], object] = (
        (lambda: face.run(auth.bearer_token_async("rid-hostile")))
        if face.is_async
        else (lambda: auth.bearer_token("rid-hostile"))
    )
    with pytest.raises(FaxWSError) as through_client:
        fetch()
    assert type(through_client.value) is expected
    assert through_client.value.request_id == "rid-hostile"
    assert through_client.value.maybe_delivered is False
    for error in (direct.value, through_client.value):
        assert SECRET not in str(error)
        assert SECRET not in repr(error)
    assert len(server.captured.requests) == 2


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"error": "invalid_client"}', "invalid_client"),
        (b'{"error": ""}', "HTTP 400"),
        (b'{"error": 7}', "HTTP 400"),
        (b"<html>no</html>", "HTTP 400"),
    ],
)
def test_a_refusal_names_its_error_or_else_its_status(
    face: Face, token_server: Callable[[bytes], CaptureServer], body: bytes, named: str
) -> None:
    server = token_server(token_answer(body, "400 Bad Request"))
    provider = face.provider(url_of(server), "client", SECRET, timeout=PATIENCE)
    with pytest.raises(AuthenticationError) as refused:
        face.fetch_token(provider)
    assert refused.value.message == f"the token endpoint refused the client credentials: {named}"
    assert refused.value.status_code == 400


@pytest.mark.parametrize(
    ("number", "reused"),
    [("3600", True), ("3600.5", True), ("9" * 5000, False), ("1e99999", False)],
)
def test_a_huge_expires_in_means_use_the_token_once(
    face: Face, token_server: Callable[[bytes], CaptureServer], number: str, reused: bool
) -> None:
    """An expires_in of thousands of digits is a number, though not a usable one: the token
    is used once, as for any lifetime that is not a finite number of seconds (on every
    Python version, whatever its limit on the digits of an int)."""
    body = b'{"access_token": "tok", "token_type": "Bearer", "expires_in": %b}' % number.encode()
    server = token_server(token_answer(body))
    provider = face.provider(url_of(server), "client", SECRET)
    assert face.fetch_token(provider) == "tok"
    assert face.fetch_token(provider) == "tok"
    assert len(server.captured.requests) == (1 if reused else 2)


# -- one fetch for everyone waiting, whatever its failure ---------------------------------


class CountingEvent(threading.Event):
    """An Event that counts the threads that began waiting for it."""

    def __init__(self, counter: Counter) -> None:
        super().__init__()
        self._counter = counter

    def wait(self, timeout: float | None = None) -> bool:
        self._counter.add()
        return super().wait(timeout)


class Counter:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.count = 0

    def add(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_for(self, count: int) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.count >= count, PATIENCE)


def hold_open(raw: bytes) -> bytes | None:
    return None  # never answers: the client's read time-out ends the wait


FAILURES: dict[str, tuple[bytes | Callable[[bytes], bytes | None] | None, type[FaxWSError]]] = {
    # name: (the server's answer, or None for a refused connection; the error expected)
    "HTTP 500": (token_answer(b"oops", "500 Internal Server Error"), ProtocolError),
    "HTTP 503 with HTML": (
        http_reply(b"<html>busy</html>", "503 Service Unavailable"),
        ProtocolError,
    ),
    "credentials refused": (
        token_answer(b'{"error": "invalid_client"}', "401 Unauthorized"),
        AuthenticationError,
    ),
    "malformed JSON": (token_answer(b'{"access_token": '), ProtocolError),
    "deep nesting": (token_answer(b"[" * DEEP), ProtocolError),
    "no access_token": (token_answer(b'{"token_type": "Bearer"}'), ProtocolError),
    "closed without an answer": (b"", ConnectError),
    "time-out": (hold_open, RequestTimeoutError),
    "connection refused": (None, ConnectError),
    "the fetch raises RuntimeError": (ok_answer(), AuthenticationError),
    "the fetch raises RecursionError": (ok_answer(), AuthenticationError),
}

RAISES: dict[str, type[BaseException]] = {
    "the fetch raises RuntimeError": RuntimeError,
    "the fetch raises RecursionError": RecursionError,
}


@pytest.fixture
def endpoint(
    capture_server: Callable[[Callable[[bytes], bytes | None]], CaptureServer],
    refused_port: int,
) -> Callable[[str], tuple[str, CaptureServer | None]]:
    def start(case: str) -> tuple[str, CaptureServer | None]:
        answer = FAILURES[case][0]
        if answer is None:
            return f"http://127.0.0.1:{refused_port}/connect/token", None
        reply = answer if callable(answer) else (lambda raw: answer)
        server = capture_server(reply)
        return url_of(server), server

    return start


def failing_fetch(case: str, real: Callable[[], Any], fetches: list[int]) -> Callable[[], Any]:
    """The provider's fetch, counted, then failing as the case says when the real one
    did not already."""

    def fetch() -> Any:
        fetches.append(threading.get_ident())
        token = real()
        if case in RAISES:
            raise RAISES[case]("the fetch broke")
        return token

    return fetch


def check_shared_failure(
    case: str,
    errors: dict[str, BaseException],
    fetches: list[int],
    server: CaptureServer | None,
) -> None:
    expected = FAILURES[case][1]
    assert sorted(errors) == sorted(f"rid-{n}" for n in range(CALLERS))
    kinds = {type(e) for e in errors.values()}
    assert len(kinds) == 1, kinds  # everyone got the same outcome
    for rid, error in errors.items():
        assert isinstance(error, expected), repr(error)
        assert error.request_id == rid  # each caller's own error
        assert error.maybe_delivered is False
        assert SECRET not in str(error)
    assert len({id(e) for e in errors.values()}) == CALLERS
    assert len(fetches) == 1
    if server is not None:
        assert len(server.captured.requests) == 1


def counting_waiters(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """The provider's fetches from now on count the threads that wait for them."""
    waiting = Counter()

    class Flight(oauth_module._Flight):
        def __init__(self) -> None:
            super().__init__()
            self.done = CountingEvent(waiting)

    monkeypatch.setattr(oauth_module, "_Flight", Flight)
    return waiting


@pytest.mark.parametrize("case", list(FAILURES))
def test_threads_waiting_for_a_failed_fetch_share_it_whatever_the_failure(
    monkeypatch: pytest.MonkeyPatch,
    endpoint: Callable[[str], tuple[str, CaptureServer | None]],
    case: str,
) -> None:
    """Eight threads without a token: the first fetches, and its request is held back until
    the seven others are waiting for it. It fails; all eight get that failure, each as its
    own FaxWSError with its own request id, and the endpoint saw one request. The next call
    asks again."""
    url, server = endpoint(case)
    waiting = counting_waiters(monkeypatch)
    provider = ClientCredentials(url, "client", SECRET, timeout=(PATIENCE, 0.5))
    fetches: list[int] = []
    counted = failing_fetch(case, provider._fetch, fetches)

    def held_fetch() -> Any:
        assert waiting.wait_for(CALLERS - 1), "the other callers never waited"
        return counted()

    provider._fetch = held_fetch  # type: ignore[method-assign]
    auth = BearerAuth(provider)
    errors: dict[str, BaseException] = {}
    tokens: list[str] = []

    def call(rid: str) -> None:
        try:
            tokens.append(auth.bearer_token(rid))
        except BaseException as exc:
            errors[rid] = exc

    threads = [threading.Thread(target=call, args=(f"rid-{n}",)) for n in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE * 2)
    assert not any(t.is_alive() for t in threads), "a caller never came back"
    assert tokens == []
    check_shared_failure(case, errors, fetches, server)

    # Those errors were delivered: a caller arriving now asks again.
    provider._fetch = counted  # type: ignore[method-assign]
    with pytest.raises(FaxWSError):
        provider()
    assert len(fetches) == 2
    provider.close()


@pytest.mark.parametrize("case", list(FAILURES))
def test_tasks_waiting_for_a_failed_fetch_share_it_whatever_the_failure(
    monkeypatch: pytest.MonkeyPatch,
    endpoint: Callable[[str], tuple[str, CaptureServer | None]],
    case: str,
) -> None:
    """The same for eight tasks of AsyncClientCredentials: the fetch (in a worker thread) is
    held until all eight wait for it."""
    url, server = endpoint(case)
    provider = AsyncClientCredentials(url, "client", SECRET, timeout=(PATIENCE, 0.5))
    all_waiting = threading.Event()
    shields = 0
    real_shield = asyncio.shield

    def counted_shield(awaitable: Awaitable[Any]) -> Any:
        # Each task awaits the shield as soon as it has it: the eighth call means every
        # task is waiting (or about to, in this very step of the loop).
        nonlocal shields
        shields += 1
        if shields == CALLERS:
            all_waiting.set()
        return real_shield(awaitable)

    monkeypatch.setattr(asyncio, "shield", counted_shield)
    fetches: list[int] = []
    counted = failing_fetch(case, provider._grant._fetch, fetches)

    def held_fetch() -> Any:
        assert all_waiting.wait(PATIENCE), "the other tasks never waited"
        return counted()

    provider._grant._fetch = held_fetch  # type: ignore[method-assign]
    auth = BearerAuth(provider)

    async def call(rid: str) -> str:
        return await auth.bearer_token_async(rid)

    async def main() -> list[str | BaseException]:
        calls = [call(f"rid-{n}") for n in range(CALLERS)]
        return await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), PATIENCE * 2)

    outcomes = asyncio.run(main())
    errors = {f"rid-{n}": o for n, o in enumerate(outcomes) if isinstance(o, BaseException)}
    assert len(errors) == CALLERS, outcomes
    check_shared_failure(case, errors, fetches, server)

    provider._grant._fetch = counted  # type: ignore[method-assign]
    with pytest.raises(FaxWSError):
        asyncio.run(provider())
    assert len(fetches) == 2
    provider.close()


def test_waiters_get_an_error_when_the_fetching_thread_is_interrupted(
    monkeypatch: pytest.MonkeyPatch, token_server: Callable[[bytes], CaptureServer]
) -> None:
    """A fetch ended by KeyboardInterrupt (or SystemExit) in its own thread: that thread
    gets its interruption; the threads waiting for it get a FaxWSError rather than starting
    fetches of their own."""
    server = token_server(ok_answer())
    waiting = counting_waiters(monkeypatch)
    provider = ClientCredentials(url_of(server), "client", SECRET)
    fetches: list[int] = []

    def interrupted() -> Any:
        fetches.append(1)
        assert waiting.wait_for(CALLERS - 1)
        raise KeyboardInterrupt

    provider._fetch = interrupted  # type: ignore[method-assign]
    outcomes: list[BaseException] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            provider()
        except BaseException as exc:
            with lock:
                outcomes.append(exc)

    threads = [threading.Thread(target=call) for _ in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE * 2)
    assert not any(t.is_alive() for t in threads)
    assert len(fetches) == 1
    assert sorted(type(o).__name__ for o in outcomes) == sorted(
        ["KeyboardInterrupt"] + ["AuthenticationError"] * (CALLERS - 1)
    )
    assert server.captured.requests == []
    provider.close()


def test_a_direct_call_never_raises_a_raw_exception(
    monkeypatch: pytest.MonkeyPatch, face: Face, token_server: Callable[[bytes], CaptureServer]
) -> None:
    """A fetch that breaks in an unexpected way (a bug, an exhausted interpreter) reaches a
    direct caller as a FaxWSError naming only the exception's type: its text may quote what
    the endpoint sent."""
    server = token_server(ok_answer())
    provider = face.provider(url_of(server), "client", SECRET)
    grant = provider._grant if face.is_async else provider

    def broken() -> Any:
        raise ValueError(f"broken with {SECRET}")

    monkeypatch.setattr(grant, "_fetch", broken)
    with pytest.raises(FaxWSError) as caught:
        face.fetch_token(provider)
    assert "ValueError" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None
