"""What only the async client has: cancellation, an event loop that keeps running while
documents are read, async token providers, one event loop per client, and aiohttp imported
only when the async client is used. (Everything it shares with FaxClient runs against both
clients in the other test modules, through the ``face`` fixture.)"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import logging
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CaptureServer, Face, http_reply, parse_request, send_response
from faxws import (
    AsyncFaxClient,
    AuthenticationError,
    BadInputError,
    FaxClient,
    FaxFile,
    FaxWSError,
    SendFaxResult,
)
from faxws.oauth import AsyncClientCredentials, ClientCredentials
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator
from scripted import WAIT, Conn, ScriptedServer, reply

ANSWER = reply(send_response(["J1"]))
PDF = FaxFile(b"%PDF-1.4", 101)


@pytest.fixture
def face(make_face: Callable[[str], Face]) -> Face:
    """The async face only (this module's tests are about it)."""
    return make_face("async")


@pytest.fixture
def sim() -> Any:
    with FaxWSSimulator() as s:
        yield s


# -- cancellation -----------------------------------------------------------------------------


def holding(conn: Conn) -> None:
    """Reads the request, lets the test know, and answers nothing until the client leaves."""
    if conn.read_request() is not None:
        conn.server.headers_read.set()
        conn.hold()


def answering(conn: Conn) -> None:
    while conn.read_request() is not None:
        conn.send(ANSWER.replace(b"Connection: close\r\n", b""))


def test_a_cancelled_send_fax_in_flight_logs_maybe_delivered_and_reraises(
    serve: Callable[..., ScriptedServer], face: Face, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="faxws")
    answers = iter([holding, answering])
    server = serve(lambda conn: next(answers)(conn))
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234", retries=2, retry_backoff=0)

    async def main() -> SendFaxResult:
        task = asyncio.create_task(client.send_fax(["+1 555 0100"], [PDF], "rid-cancel"))
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, server.headers_read.wait, WAIT)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The next call does not reuse the connection the cancelled one was using.
        return await client.send_fax(["+1 555 0100"], [PDF], "rid-next")

    try:
        result = face.run(main())
    finally:
        face.run(client.close())
    assert result.job_ids == ("J1",)
    server.wait_served(2)
    assert server.connections == 2
    assert len(server.requests) == 2  # the cancelled SendFax was not sent again
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    message = warning.getMessage()
    assert "rid-cancel" in message
    assert "maybe_delivered=True" in message


def test_a_call_cancelled_before_its_first_byte_says_nothing_was_sent(
    refused_port: int, face: Face, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="faxws")
    asked = asyncio.Event()

    async def provider() -> str:
        asked.set()
        await asyncio.sleep(WAIT)  # a token service that does not answer
        return "never"

    client = AsyncFaxClient(f"http://127.0.0.1:{refused_port}", user_id="u", token=provider)

    async def main() -> None:
        task = asyncio.create_task(client.send_fax(["+1 555 0100"], [PDF], "rid-early"))
        await asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        face.run(main())
    finally:
        face.run(client.close())
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "rid-early" in warning.getMessage()
    assert "maybe_delivered=False" in warning.getMessage()


def test_a_time_limit_around_a_call_is_the_callers_own(
    serve: Callable[..., ScriptedServer], face: Face
) -> None:
    """asyncio.wait_for cancels the call: the caller sees asyncio's TimeoutError, not a
    faxws error, as for any coroutine."""
    server = serve(holding)
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234")

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.send_fax(["+1 555 0100"], [PDF]), 0.5)

    try:
        face.run(main())
    finally:
        face.run(client.close())
    assert server.connections == 1


# -- closing the client while calls are in flight ---------------------------------------------


def outcomes_after_close(client: AsyncFaxClient, calls: int, ready: Callable[[], Any]) -> list[Any]:
    """Starts ``calls`` SendFax calls (request ids rid-0, rid-1...), awaits ``ready()``, closes
    the client, and returns what each call ended with (a result or an exception)."""

    async def main() -> list[Any]:
        tasks = [
            asyncio.create_task(client.send_fax(["+1 555 0100"], [PDF], f"rid-{n}"))
            for n in range(calls)
        ]
        await ready()
        await client.close()
        return await asyncio.gather(*tasks, return_exceptions=True)

    return asyncio.run(main())


def closed_error(outcome: object, rid: str, *, maybe_delivered: bool) -> None:
    assert isinstance(outcome, FaxWSError), repr(outcome)
    assert "the client was closed during the call" in outcome.message
    assert outcome.request_id == rid
    assert outcome.maybe_delivered is maybe_delivered


def test_closing_the_client_ends_each_call_in_flight_with_a_faxws_error(
    serve: Callable[..., ScriptedServer], caplog: pytest.LogCaptureFixture
) -> None:
    """One call's request is written and awaits its answer; two more wait for the only
    connection (aiohttp cancels such waits when its pool closes). None of them was
    cancelled: each gets the error saying the client was closed, and nothing logs a
    cancellation."""
    caplog.set_level(logging.WARNING, logger="faxws")
    server = serve(holding)
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234", max_connections=1)

    async def request_read() -> None:
        # The other two reached the pool long before: nothing on their way to it waits.
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, server.headers_read.wait, WAIT)

    first, *waiting = outcomes_after_close(client, 3, request_read)
    closed_error(first, "rid-0", maybe_delivered=True)
    for n, outcome in enumerate(waiting, 1):
        closed_error(outcome, f"rid-{n}", maybe_delivered=False)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert server.connections == 1
    assert len(server.received) == 1


def test_closing_the_client_ends_a_connection_being_set_up_and_tries_no_other(
    serve: Callable[..., ScriptedServer],
) -> None:
    """A TLS handshake the server never answers: close() ends it at once, and the call,
    which wrote nothing, is not tried again on a new connection."""

    def stalled(conn: Conn) -> None:
        conn.server.headers_read.set()  # accepted: the client is in its TLS handshake
        conn.hold()

    server = serve(stalled)
    url = server.url().replace("http:", "https:")
    client = AsyncFaxClient(url, user_id="u", pin="1234", retries=2, timeout=(WAIT, WAIT))

    async def accepted() -> None:
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, server.headers_read.wait, WAIT)

    started = time.monotonic()
    [outcome] = outcomes_after_close(client, 1, accepted)
    closed_error(outcome, "rid-0", maybe_delivered=False)
    assert time.monotonic() - started < WAIT / 2  # not the connect time-out
    assert server.connections == 1


def test_a_call_awaiting_its_token_when_the_client_closes_opens_no_connection(
    serve: Callable[..., ScriptedServer],
) -> None:
    """close() has returned when the token comes: the call sends nothing and opens no new
    session (which nothing would close)."""
    server = serve(answering)
    asked = asyncio.Event()
    release = asyncio.Event()

    async def provider() -> str:
        asked.set()
        await release.wait()
        return "tok"

    client = AsyncFaxClient(server.url(), user_id="u", token=provider)

    async def main() -> object:
        task = asyncio.create_task(client.send_fax(["+1 555 0100"], [PDF], "rid-token"))
        await asked.wait()
        await client.close()
        release.set()
        return (await asyncio.gather(task, return_exceptions=True))[0]

    outcome = asyncio.run(main())
    closed_error(outcome, "rid-token", maybe_delivered=False)
    assert client._caller.transport._session is None
    assert server.connections == 0


def test_a_call_cancelled_while_it_waits_for_a_connection_is_cancelled(
    serve: Callable[..., ScriptedServer],
) -> None:
    """Only a close is told from a cancellation: a call cancelled in the pool's queue still
    raises CancelledError."""
    server = serve(holding)
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234", max_connections=1)

    async def main() -> list[Any]:
        first = asyncio.create_task(client.send_fax(["+1 555 0100"], [PDF], "rid-0"))
        queued = asyncio.create_task(client.send_fax(["+1 555 0100"], [PDF], "rid-1"))
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, server.headers_read.wait, WAIT)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        await client.close()
        return await asyncio.gather(first, return_exceptions=True)

    [first] = asyncio.run(main())
    closed_error(first, "rid-0", maybe_delivered=True)
    assert server.connections == 1


# -- the event loop keeps running while documents are read ------------------------------------


class SlowFile(io.BytesIO):
    """A file object whose every read takes ``delay`` seconds (a slow disk or network share)."""

    def __init__(self, data: bytes, delay: float) -> None:
        super().__init__(data)
        self.delay = delay
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        if size and size > 1:  # the end-of-file check reads one byte
            self.reads += 1
            time.sleep(self.delay)  # the slow read itself, not a synchronization
        return super().read(size)


@pytest.mark.parametrize("size", [100_000, 3 << 20], ids=["small", "streamed"])
def test_documents_are_read_off_the_event_loop(
    serve: Callable[..., ScriptedServer], face: Face, size: int
) -> None:
    def discarding(conn: Conn) -> None:
        if conn.read_request(keep=False) is not None:
            conn.send(ANSWER)

    server = serve(discarding)
    document = SlowFile(b"%PDF" * (size // 4), delay=0.3)
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234")
    ticks: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def main() -> float:
        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        started = time.monotonic()
        await client.send_fax(["+1 555 0100"], [FaxFile(document, 101)])
        elapsed = time.monotonic() - started
        stop.set()
        await ticking
        await client.close()
        return elapsed

    elapsed = face.run(main())
    assert document.reads >= (1 if size < 1 << 20 else 4)
    assert elapsed >= 0.3 * document.reads  # the reads really were slow
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert max(gaps) < 0.2, f"the event loop stood still for {max(gaps):.2f} s"


def test_one_file_object_sent_by_two_tasks_arrives_intact_twice(
    serve: Callable[..., ScriptedServer], face: Face
) -> None:
    data = bytes(range(256)) * (12 << 10)  # 3 MiB: streamed
    document = FaxFile(io.BytesIO(data), 101)
    server = serve(answering)
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234")

    async def main() -> None:
        await asyncio.gather(
            client.send_fax(["+1 555 0100"], [document]),
            client.send_fax(["+1 555 0101"], [document]),
        )
        await client.close()

    face.run(main())
    assert [r.documents() for r in server.requests] == [[data], [data]]


# -- sharing a client between tasks -----------------------------------------------------------


def test_four_hundred_tasks_share_one_client(
    capture_server: type[CaptureServer], face: Face
) -> None:
    def echo(raw: bytes) -> bytes:
        rid = parse_request(raw).headers["x-ch-request-id"]
        return http_reply(send_response([f"JOB-{rid}"]), extra=f"x-ch-activity-id: act-{rid}\r\n")

    server = capture_server(echo)
    client = AsyncFaxClient(server.url, user_id="mbx1", token="tok", max_connections=8)

    async def call(n: int) -> tuple[str, SendFaxResult]:
        rid = f"t{n}"
        return rid, await client.send_fax(["+1 555 0100"], [PDF], rid)

    async def main() -> list[tuple[str, SendFaxResult]]:
        try:
            return await asyncio.gather(*(call(n) for n in range(400)))
        finally:
            await client.close()

    outcomes = face.run(main())
    for rid, result in outcomes:
        assert (result.request_id, result.job_ids, result.activity_id) == (
            rid,
            (f"JOB-{rid}",),
            f"act-{rid}",
        )
    assert len(server.captured.requests) == 400
    assert server.captured.connections <= 8  # at most max_connections at a time, reused


def test_a_client_belongs_to_the_event_loop_it_was_first_used_in(sim: Any, face: Face) -> None:
    client = AsyncFaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
    assert face.run(client.send_fax(["+1 555 0100"], [PDF])).job_ids
    other = asyncio.new_event_loop()
    try:
        with pytest.raises(FaxWSError) as info:
            other.run_until_complete(client.send_fax(["+1 555 0100"], [PDF], "rid-loop"))
    finally:
        other.close()
    assert "another event loop" in info.value.message
    assert info.value.request_id == "rid-loop"
    assert info.value.maybe_delivered is False
    assert len(sim.requests) == 1
    face.run(client.close())


def test_calls_on_one_connection_share_one_timer(sim: Any) -> None:
    """Each call's time limits run on its connection's timer, set once and kept while calls
    follow each other (faster than a timer per call); it ends with the connection."""
    from faxws._http.async_transport import _Handler

    made: list[object] = []

    async def calls() -> None:
        loop = asyncio.get_running_loop()
        call_at = loop.call_at

        def counting(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(callback, "__func__", None) is _Handler.watch_fired:
                made.append(callback)
            return call_at(when, callback, *args, **kwargs)

        loop.call_at = counting  # type: ignore[method-assign]
        async with AsyncFaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            job = (await client.send_fax(["+1 555 0100"], [PDF])).job_ids[0]
            for _ in range(5):
                await client.get_fax_broadcast_report(job)
            (transport,) = client._caller.transport._used
            handler = transport.get_protocol()
            assert isinstance(handler, _Handler)
            assert handler.watch is not None
            assert handler.watched is None
        assert handler.watch is None  # gone with the connection

    asyncio.run(calls())
    assert len(made) == 1


# -- token providers --------------------------------------------------------------------------


def test_an_async_token_provider_is_awaited_per_request_and_refreshed_after_a_401(
    capture_server: type[CaptureServer], face: Face
) -> None:
    tokens = iter(["old-token", "new-token", "third-token"])
    invalidated: list[bool] = []

    class Provider:
        async def __call__(self) -> str:
            await asyncio.sleep(0)
            return next(tokens)

        async def invalidate(self) -> None:
            invalidated.append(True)

    answers = [
        http_reply(b"", "401 Unauthorized"),
        http_reply(send_response(["J1"])),
        http_reply(send_response(["J2"])),
    ]
    server = capture_server(lambda raw: answers.pop(0))
    client = face.client(server.url, user_id="u", token=Provider())
    assert client.send_fax(["+1 555 0100"], [PDF], "rid-401").job_ids == ("J1",)
    assert client.send_fax(["+1 555 0100"], [PDF]).job_ids == ("J2",)
    sent = [parse_request(raw).headers["authorization"] for raw in server.captured.requests]
    assert sent == ["Bearer old-token", "Bearer new-token", "Bearer third-token"]
    assert invalidated == [True]


def test_an_async_token_provider_that_fails_is_an_authentication_error(
    capture_server: type[CaptureServer], face: Face
) -> None:
    async def provider() -> str:
        raise RuntimeError("vault said: secret-in-message")

    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    client = face.client(server.url, user_id="u", token=provider)
    with pytest.raises(AuthenticationError) as info:
        client.send_fax(["+1 555 0100"], [PDF], "rid-token")
    assert info.value.request_id == "rid-token"
    assert info.value.maybe_delivered is False
    assert "secret-in-message" not in str(info.value)
    assert server.captured.connections == 0


def test_concurrent_tasks_share_one_token_fetch(sim: Any, face: Face) -> None:
    provider = AsyncClientCredentials(sim.token_url, "demo-client", "demo-secret")
    client = AsyncFaxClient(sim.url, user_id=DEMO_USER_ID, token=provider)

    async def main() -> None:
        try:
            await asyncio.gather(*(client.send_fax(["+1 555 0100"], [PDF]) for _ in range(50)))
        finally:
            await client.close()

    face.run(main())
    assert provider.fetches == 1
    assert sim.token_requests == 1
    assert len(sim.jobs) == 50
    provider.close()


def test_a_waiter_cancelled_during_a_token_fetch_leaves_it_to_the_others(
    capture_server: type[CaptureServer], face: Face
) -> None:
    release = threading.Event()
    body = json.dumps({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 600})

    def token_endpoint(raw: bytes) -> bytes:
        release.wait(WAIT)  # holds the answer until the test lets it go
        return http_reply(body.encode())

    server = capture_server(token_endpoint)
    provider = AsyncClientCredentials(f"{server.url}/token", "cid", "secret")

    async def main() -> list[str]:
        first = asyncio.create_task(provider())
        second = asyncio.create_task(provider())
        while not server.captured.requests:  # the fetch is under way
            await asyncio.sleep(0.01)
        first.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await first
        return [await second, await provider()]

    try:
        assert face.run(main()) == ["tok-1", "tok-1"]
    finally:
        release.set()
    assert provider.fetches == 1
    assert len(server.captured.requests) == 1
    provider.close()


def test_async_client_credentials_hide_the_secret_and_check_like_the_sync_one() -> None:
    provider = AsyncClientCredentials("https://id.example.com/token", "cid", "SECRET-93")
    assert "SECRET-93" not in repr(provider)
    for kwargs in ({"leeway": -1}, {"timeout": 0}, {"verify": "/nonexistent/ca.pem"}):
        with pytest.raises(BadInputError) as info:
            AsyncClientCredentials("https://id.example.com/token", "cid", "s", **kwargs)
        with pytest.raises(BadInputError) as same:
            ClientCredentials("https://id.example.com/token", "cid", "s", **kwargs)
        assert (info.value.field, info.value.problem) == (same.value.field, same.value.problem)


def test_each_client_refuses_the_provider_it_cannot_use_well() -> None:
    async def async_provider() -> str:
        return "t"

    with pytest.raises(BadInputError) as info:
        FaxClient("https://fax.example.com", user_id="u", token=async_provider)  # type: ignore[arg-type]
    assert info.value.field == "token"
    assert "AsyncFaxClient" in info.value.problem
    blocking = ClientCredentials("https://id.example.com/token", "cid", "s")
    with pytest.raises(BadInputError) as info:
        AsyncFaxClient("https://fax.example.com", user_id="u", token=blocking)
    assert info.value.field == "token"
    assert "AsyncClientCredentials" in info.value.problem
    blocking.close()


def test_a_plain_callable_returning_a_coroutine_is_refused_by_the_sync_client(
    capture_server: type[CaptureServer],
) -> None:
    async def fetch() -> str:
        return "t"

    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    client = FaxClient(server.url, user_id="u", token=lambda: fetch())  # type: ignore[arg-type, return-value]
    with pytest.raises(BadInputError) as info:
        client.send_fax(["+1 555 0100"], [PDF], "rid-coro")
    assert info.value.field == "token"
    assert info.value.request_id == "rid-coro"
    assert "AsyncFaxClient" in info.value.problem
    assert server.captured.connections == 0
    client.close()


# -- where bytes written cannot be seen -----------------------------------------------------


def test_on_a_loop_that_bypasses_the_sockets_every_connected_attempt_counts_as_written() -> None:
    """uvloop and the proactor loop write without the socket objects: nothing could be
    counted there, so an attempt that got a connection says it may have been delivered."""
    from faxws._http.async_transport import Sent, counts_at_socket

    class Elsewhere(asyncio.AbstractEventLoop):
        """A loop of another family (not asyncio's selector loops)."""

    loop = asyncio.new_event_loop()
    try:
        assert counts_at_socket(loop) is True
        assert counts_at_socket(Elsewhere()) is False
        for precise, written in ((True, False), (False, True)):
            sent = Sent(loop, (1.0, 1.0), weakref.WeakSet())
            sent.precise = precise
            assert sent.written is False
            sent.sending(asyncio.Transport(), object())  # connected, nothing written yet
            assert sent.written is written
            sent.close()
    finally:
        loop.close()


# -- aiohttp only when the async client is used ----------------------------------------------


def modules_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_aiohttp_is_imported_only_when_an_async_client_is_made() -> None:
    assert "aiohttp" not in modules_after("import faxws")
    assert "aiohttp" not in modules_after("from faxws import AsyncFaxClient, FaxClient")
    assert "aiohttp" not in modules_after(
        "from faxws import FaxClient\nFaxClient('https://fax.example.com', user_id='u', pin='1')"
    )
    made = (
        "from faxws import AsyncFaxClient\n"
        "AsyncFaxClient('https://fax.example.com', user_id='u', pin='1')"
    )
    assert "aiohttp" in modules_after(made)


def test_without_aiohttp_the_async_client_says_which_extra_to_install(tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['aiohttp'] = None  # as if it were not installed\n"
        "from faxws import AsyncFaxClient\n"
        "AsyncFaxClient('https://fax.example.com', user_id='u', pin='1')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0
    assert "ImportError: AsyncFaxClient needs aiohttp" in done.stderr
    assert "faxws[async]" in done.stderr


def test_async_client_credentials_renew_a_short_lived_token_like_the_sync_one(
    capture_server: type[CaptureServer], face: Face
) -> None:
    answers = iter(["tok-1", "tok-2"])

    def token_endpoint(raw: bytes) -> bytes:
        token = next(answers)
        return http_reply(json.dumps({"access_token": token, "expires_in": 10}).encode())

    server = capture_server(token_endpoint)
    provider = AsyncClientCredentials(f"{server.url}/token", "cid", "secret")  # leeway 30 s
    now = [1000.0]
    provider._grant._clock = lambda: now[0]

    async def at(moment: float) -> str:
        now[0] = 1000.0 + moment
        return await provider()

    async def main() -> list[str]:
        # A 10 s token is renewed halfway through its life, not at once (30 s leeway), by a
        # task of its own: the caller at 5.1 s goes on with tok-1, still valid.
        tokens = [await at(0), await at(4.9), await at(5.1)]
        renewing = provider._fetching
        assert renewing is not None
        await renewing
        return [*tokens, await at(6)]

    assert face.run(main()) == ["tok-1", "tok-1", "tok-1", "tok-2"]
    assert provider.fetches == 2
    provider.close()


# -- found in review: file objects shared by many tasks, errors shared by many waiters --------


def test_more_tasks_than_worker_threads_share_one_file_object(
    serve: Callable[..., ScriptedServer], face: Face
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    data = bytes(range(256)) * (4 << 10)  # 1 MiB: streamed
    document = FaxFile(io.BytesIO(data), 101)
    server = serve(answering)
    client = AsyncFaxClient(server.url(), user_id="u", pin="1234", timeout=(10, 30))
    executor = ThreadPoolExecutor(2)  # fewer threads than tasks waiting for the object
    assert face.loop is not None
    face.loop.set_default_executor(executor)

    async def main() -> None:
        try:
            await asyncio.wait_for(
                asyncio.gather(*(client.send_fax([f"+1 5{n}"], [document]) for n in range(8))),
                WAIT,
            )
        finally:
            await client.close()

    face.run(main())
    assert [r.documents() for r in server.requests] == [[data]] * 8


def test_a_file_object_being_sent_cannot_become_a_fax_file_on_the_loop(face: Face) -> None:
    from faxws._protocol.content import release_stream, try_acquire_stream

    stream = io.BytesIO(b"%PDF-1.4")

    async def main() -> None:
        lock = try_acquire_stream(stream)  # as a call sending it holds it
        assert lock is not None
        try:
            with pytest.raises(BadInputError, match="being sent by a call on this event loop"):
                FaxFile(stream, 101)
        finally:
            release_stream(stream, lock)
        FaxFile(stream, 101)  # free again

    face.run(main())


def test_waiters_on_a_failed_token_fetch_each_get_their_own_error(
    capture_server: type[CaptureServer], face: Face
) -> None:
    server = capture_server(lambda raw: http_reply(b'{"error": "invalid_client"}', status=401))
    provider = AsyncClientCredentials(f"{server.url}/token", "cid", "secret")
    client = AsyncFaxClient("https://fax.example.com", user_id="u", token=provider)

    async def main() -> list[BaseException]:
        try:
            calls = (client.get_fax_broadcast_report("J", request_id=f"rid-{n}") for n in range(4))
            return list(await asyncio.gather(*calls, return_exceptions=True))
        finally:
            await client.close()

    errors = face.run(main())
    assert all(isinstance(e, AuthenticationError) for e in errors)
    assert [e.request_id for e in errors] == [f"rid-{n}" for n in range(4)]  # type: ignore[attr-defined]
    assert len({id(e) for e in errors}) == 4
    assert len(server.captured.requests) == 1
    provider.close()


def test_a_late_401_does_not_throw_away_the_token_fetched_since(
    capture_server: type[CaptureServer], face: Face
) -> None:
    tokens = iter(["tok-1", "tok-2", "tok-3"])
    server = capture_server(
        lambda raw: http_reply(
            json.dumps({"access_token": next(tokens), "expires_in": 600}).encode()
        )
    )
    provider = AsyncClientCredentials(f"{server.url}/token", "cid", "secret")

    async def late_reporter(handed: asyncio.Event, go: asyncio.Event) -> None:
        await provider()  # tok-1, which the service will refuse
        handed.set()
        await go.wait()
        provider.invalidate()  # its 401 arrives after another task's refresh

    async def main() -> list[str]:
        handed, go = asyncio.Event(), asyncio.Event()
        late = asyncio.create_task(late_reporter(handed, go))
        await handed.wait()
        assert await provider() == "tok-1"
        provider.invalidate()  # this task's 401 for tok-1
        second = await provider()  # tok-2
        go.set()
        await late
        return [second, await provider()]

    assert face.run(main()) == ["tok-2", "tok-2"]
    assert provider.fetches == 2
    provider.close()


def test_tokens_echoed_by_the_server_stay_masked_with_many_calls_in_flight(
    capture_server: type[CaptureServer], face: Face
) -> None:
    from conftest import fault_response

    def echo(raw: bytes) -> bytes:
        token = parse_request(raw).headers["authorization"].split(" ", 1)[1]
        return http_reply(fault_response(text=f"bad token {token}"), status=500)

    server = capture_server(echo)
    counter = itertools.count()

    async def unique_token() -> str:
        return f"JWT-UNIQUE-{next(counter):04d}-abcdef"

    client = AsyncFaxClient(server.url, user_id="u", token=unique_token, retries=0)

    async def main() -> list[BaseException]:
        try:
            calls = (client.get_fax_broadcast_report("J") for _ in range(40))
            return list(await asyncio.gather(*calls, return_exceptions=True))
        finally:
            await client.close()

    errors = face.run(main())
    assert len(errors) == 40
    assert all(isinstance(e, FaxWSError) for e in errors)
    assert not [str(e) for e in errors if "JWT-UNIQUE" in str(e)]
