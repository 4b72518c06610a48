"""Token providers across os.fork(): the child keeps the cached token (it is still valid) but
none of the parent's pooled connections, locks or fetches in progress. A child writing into
the parent's keep-alive connection would interleave two processes' requests and answers on
one TCP stream; a child waiting for a lock or a fetch whose thread stayed in the parent would
wait forever.

Each child reports through a pipe and leaves with os._exit; the parent reads the report with
a time-out and kills a child that does not finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conftest import CaptureServer
from faxws.oauth import AsyncClientCredentials, ClientCredentials

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX"),
    # The warning Python 3.12+ gives for forking a process with threads: the test's threads
    # (the token server's) are what the child must cope with.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

#: Longest any step may take before the test calls the provider broken.
PATIENCE = 20.0


class TokenServer:
    """A keep-alive token endpoint issuing tok-1, tok-2, ... and counting its connections."""

    def __init__(self, start: Callable[[Callable[[bytes], bytes | None]], CaptureServer]) -> None:
        self._lock = threading.Lock()
        self.issued = 0
        self.server = start(self._answer)
        self.url = f"{self.server.url}/connect/token"

    def _answer(self, raw: bytes) -> bytes:
        with self._lock:
            self.issued += 1
            token = f"tok-{self.issued}"
        body = json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": 3600})
        return (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode()

    @property
    def connections(self) -> int:
        return self.server.captured.connections

    @property
    def requests(self) -> int:
        return len(self.server.captured.requests)


@pytest.fixture
def token_server(
    capture_server: Callable[[Callable[[bytes], bytes | None]], CaptureServer],
) -> TokenServer:
    return TokenServer(capture_server)


@contextlib.contextmanager
def held_by_a_thread(lock: Any) -> Iterator[None]:
    """``lock`` held by another thread of the parent meanwhile: a child forked now inherits
    it held, by a thread that does not exist in the child."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            done.wait(PATIENCE * 3)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(PATIENCE)
        yield
    finally:
        done.set()
        holder.join(PATIENCE)
    assert not holder.is_alive()


def in_child(work: Callable[[], str], *, holding: Any = None) -> str:
    """Runs ``work`` in a forked child and returns what it returned; fails the test if the
    child raised or did not finish within PATIENCE. ``holding``: a lock another thread of
    the parent holds while it forks."""
    read_fd, write_fd = os.pipe()
    if holding is not None:
        with held_by_a_thread(holding):
            pid = os.fork()
    else:
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code, report = 1, "the child failed before reporting"
        try:
            os.close(read_fd)
            report = "ok " + work()
            code = 0
        except BaseException as exc:
            report = f"{type(exc).__name__}: {exc}"
        finally:
            try:
                os.write(write_fd, report.encode())
            finally:
                os._exit(code)
    os.close(write_fd)
    received = b""
    deadline = time.monotonic() + PATIENCE
    try:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([read_fd], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the child did not finish: it waited for the parent's state")
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            received += chunk
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)  # it closed the pipe by exiting
    text = received.decode()
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert text.startswith("ok "), text
    return text[3:]


class Gate:
    """Holds the provider's fetch in one parent thread: a fetch in progress at fork time.
    Fetches made by any other thread (the child's main thread among them) go through."""

    def __init__(self, provider: ClientCredentials) -> None:
        self.began = threading.Event()
        self.release = threading.Event()
        self.thread: threading.Thread | None = None
        real = provider._fetch

        def fetch() -> Any:
            if threading.current_thread() is self.thread:
                self.began.set()
                assert self.release.wait(PATIENCE * 3), "the fetch was never released"
            return real()

        provider._fetch = fetch  # type: ignore[method-assign]


def pool_of(provider: ClientCredentials, url: str) -> Any:
    """The queue holding the provider's pooled connections to ``url``."""
    adapter: Any = provider._session.get_adapter(url)
    pools = list(adapter._pools.values())
    assert len(pools) == 1
    return pools[0].pool


def pooled_fd(provider: ClientCredentials, url: str) -> int:
    """The descriptor of the one connection the provider keeps."""
    socks = [conn.sock for conn in pool_of(provider, url).queue if conn and conn.sock]
    assert len(socks) == 1
    fd: int = socks[0].fileno()
    return fd


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


STATES = ["nothing", "the provider's lock", "the connection pool's lock", "a fetch"]


@pytest.mark.parametrize("held", STATES)
def test_a_forked_child_uses_a_connection_of_its_own(token_server: TokenServer, held: str) -> None:
    """The parent fetches a token (its connection stays pooled) and forks while holding
    ``held``. The child is handed the cached token without a request, and after a 401 fetches
    a new one on a new connection. The parent's pooled connection is untouched: its next
    fetch reuses it."""
    provider = ClientCredentials(token_server.url, "client", "secret", timeout=PATIENCE)
    assert provider() == "tok-1"
    assert (token_server.requests, token_server.connections) == (1, 1)
    inherited = pooled_fd(provider, token_server.url)
    holding: Any = None
    fetcher: threading.Thread | None = None
    parent_got: list[str] = []
    if held == "the provider's lock":
        holding = provider._lock
    elif held == "the connection pool's lock":
        holding = pool_of(provider, token_server.url).mutex
    elif held == "a fetch":
        provider.invalidate()
        gate = Gate(provider)
        fetcher = gate.thread = threading.Thread(target=lambda: parent_got.append(provider()))
        fetcher.start()
        assert gate.began.wait(PATIENCE)

    def child() -> str:
        # Closed in the child before anything else opens a descriptor (whose number could
        # be the same): the child keeps no descriptor of the parent's connection.
        assert not is_open(inherited)
        if held != "a fetch":
            assert provider() == "tok-1"  # cached: still valid in the child
            provider.invalidate()
        return provider()

    try:
        assert in_child(child, holding=holding) == "tok-2"
        assert (token_server.requests, token_server.connections) == (2, 2)
    finally:
        if fetcher is not None:
            gate.release.set()
            fetcher.join(PATIENCE)

    if fetcher is None:
        provider.invalidate()
        parent_got.append(provider())
    else:
        assert not fetcher.is_alive()
    assert parent_got == ["tok-3"]
    assert pooled_fd(provider, token_server.url) == inherited
    # On the connection it had pooled before the fork: the child left it alone.
    assert (token_server.requests, token_server.connections) == (3, 2)
    provider.close()


def test_a_forked_child_of_the_async_provider_uses_a_connection_of_its_own(
    token_server: TokenServer,
) -> None:
    provider = AsyncClientCredentials(token_server.url, "client", "secret", timeout=PATIENCE)
    assert asyncio.run(provider()) == "tok-1"
    assert (token_server.requests, token_server.connections) == (1, 1)

    async def renew() -> str:
        cached = await provider()
        provider.invalidate()  # in the task that was handed it, as the client does
        return f"{cached} {await provider()}"

    assert in_child(lambda: asyncio.run(renew())) == "tok-1 tok-2"
    assert (token_server.requests, token_server.connections) == (2, 2)
    assert asyncio.run(renew()) == "tok-1 tok-3"
    assert (token_server.requests, token_server.connections) == (3, 2)
    provider.close()
