"""ClientCredentials under concurrency: short-lived tokens reused, no caller waiting while a
token it may use exists, one fetch for everyone who needs one, and 401s handled once.

Every test drives the provider's clock by hand and orders threads with events and
barriers; each wait has a generous time-out that only a broken provider reaches.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from faxws import AuthenticationError, FaxClient, FaxFile, FileType
from faxws.auth import BearerAuth
from faxws.oauth import AsyncClientCredentials, ClientCredentials, _lifetime
from faxws.testing import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_USER_ID, FaxWSSimulator

#: Longest any step may take before the test calls the provider broken.
PATIENCE = 10.0
PDF = FaxFile(b"%PDF-1.4", FileType.PDF)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Watched:
    """A lock that counts how often each thread has released it: a caller that released the
    provider's lock after the fetch began has decided what to do, so waiting for those
    releases orders the test without sleeping."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock
        self._changed = threading.Condition()
        self.releases: dict[int, int] = {}

    def __enter__(self) -> bool:
        return bool(self._lock.__enter__())

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)
        with self._changed:
            ident = threading.get_ident()
            self.releases[ident] = self.releases.get(ident, 0) + 1
            self._changed.notify_all()

    def wait_for(self, test: Callable[[dict[int, int]], bool]) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: test(dict(self.releases)), PATIENCE)


class Gate:
    """Wraps the provider's fetch: it says when a fetch has begun, and holds it until
    released (the token endpoint is hit once the gate opens)."""

    def __init__(self, provider: ClientCredentials) -> None:
        self.began = threading.Event()
        self.release = threading.Event()
        self.fetcher: int | None = None
        real = provider._fetch

        def fetch() -> Any:
            self.fetcher = threading.get_ident()
            self.began.set()
            assert self.release.wait(PATIENCE), "the fetch was never released"
            return real()

        provider._fetch = fetch  # type: ignore[method-assign]


@pytest.fixture
def short_lived() -> Iterator[FaxWSSimulator]:
    """A token endpoint issuing tokens that live 10 s: below the default leeway of 30 s."""
    with FaxWSSimulator(token_lifetime=10) as sim:
        yield sim


def provider_for(sim: FaxWSSimulator, clock: Clock, **kw: Any) -> ClientCredentials:
    provider = ClientCredentials(sim.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, **kw)
    provider._clock = clock
    return provider


def run(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.start()


def joined(threads: list[threading.Thread]) -> bool:
    for t in threads:
        t.join(PATIENCE)
    return not any(t.is_alive() for t in threads)


# -- the leeway ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lifetime", "leeway", "renewal"),
    [
        (10, 30, 5.0),  # at most the leeway: halfway
        (50, 30, 25.0),  # under twice the leeway: halfway
        (60, 30, 30.0),
        (100, 30, 70.0),  # the leeway as given
        (10, 0, 10.0),
    ],
)
def test_a_token_is_renewed_at_the_leeway_or_halfway_whichever_is_later(
    lifetime: int, leeway: float, renewal: float
) -> None:
    clock = Clock()
    with FaxWSSimulator(token_lifetime=lifetime) as sim:
        provider = provider_for(sim, clock, leeway=leeway)
        first = provider()
        clock.now += renewal - 0.01
        assert provider() == first
        assert sim.token_requests == 1
        clock.now += 0.01
        second = provider()
        assert second != first
        assert sim.token_requests == 2


def test_short_lived_tokens_are_reused_for_most_of_their_life(
    short_lived: FaxWSSimulator,
) -> None:
    """1,000 calls spread over 100 s of 10-second tokens: one fetch every 5 s, not one per
    call (a lifetime at or below the leeway used to make every call fetch)."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    tokens = []
    for _ in range(1000):
        tokens.append(provider())
        clock.now += 0.1
    assert short_lived.token_requests == provider.fetches == 20
    assert len(set(tokens)) == 20


@pytest.mark.parametrize(
    ("expires_in", "seconds"),
    [
        (10, 10.0),
        (2.5, 2.5),
        (0, 0.0),
        (-5, 0.0),
        (math.nan, 0.0),
        (math.inf, 0.0),
        (10**400, 0.0),
        (True, 0.0),
        ("3600", 0.0),
        (None, 0.0),
    ],
)
def test_an_unusable_lifetime_means_use_the_token_once(expires_in: object, seconds: float) -> None:
    assert _lifetime(expires_in) == seconds


# -- concurrency --------------------------------------------------------------------------


def test_a_refresh_does_not_hold_up_callers_with_a_valid_token(
    short_lived: FaxWSSimulator,
) -> None:
    """While one caller fetches the next token (held at the gate), four others make 50 calls
    each and finish, with the current token, which is still valid."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    first = provider()
    clock.now += 7  # renewal due (at 5 s), the token valid until 10 s
    gate = Gate(provider)
    renewed: list[str] = []
    fetcher = threading.Thread(target=lambda: renewed.append(provider()))
    fetcher.start()
    assert gate.began.wait(PATIENCE)

    seen: list[list[str]] = [[] for _ in range(4)]
    others = [
        threading.Thread(target=lambda out=out: out.extend(provider() for _ in range(50)))
        for out in seen
    ]
    run(others)
    try:
        assert joined(others), "callers with a valid token waited for the fetch"
    finally:
        gate.release.set()
    assert all(out == [first] * 50 for out in seen)
    assert joined([fetcher])
    assert len(renewed) == 1
    assert renewed[0] != first
    assert provider() == renewed[0]
    assert short_lived.token_requests == provider.fetches == 2


def test_the_async_provider_hands_out_a_valid_token_while_one_task_renews_it(
    short_lived: FaxWSSimulator,
) -> None:
    """Tasks arriving while another task's renewal is held get the current token, still
    valid, without waiting; the renewing task then gets the next one."""
    clock = Clock()
    provider = AsyncClientCredentials(short_lived.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    provider._grant._clock = clock
    gate = Gate(provider._grant)

    async def main() -> tuple[str, list[str], str]:
        loop = asyncio.get_running_loop()
        gate.release.set()
        first = await provider()
        gate.began.clear()
        gate.release.clear()
        clock.now += 7  # renewal due (at 5 s), the token valid until 10 s
        renewing = asyncio.ensure_future(provider())
        assert await loop.run_in_executor(None, gate.began.wait, PATIENCE)
        try:
            during = [await asyncio.wait_for(provider(), PATIENCE) for _ in range(3)]
        finally:
            gate.release.set()
        return first, during, await asyncio.wait_for(renewing, PATIENCE)

    first, during, renewed = asyncio.run(main())
    assert during == [first] * 3
    assert renewed != first
    assert short_lived.token_requests == provider.fetches == 2
    provider.close()


def test_only_a_token_provider_is_refreshed() -> None:
    invalidated: list[str] = []

    class Provider:
        def __call__(self) -> str:
            return "tok"

        def invalidate(self) -> None:
            invalidated.append("tok")

    assert BearerAuth("tok").refresh() is False
    assert asyncio.run(BearerAuth("tok").refresh_async()) is False
    assert BearerAuth(Provider()).refresh() is True
    assert asyncio.run(BearerAuth(Provider()).refresh_async()) is True
    assert invalidated == ["tok", "tok"]


@pytest.mark.parametrize("state", ["expired", "invalidated", "never fetched"])
def test_callers_without_a_valid_token_share_one_fetch(
    short_lived: FaxWSSimulator, state: str
) -> None:
    """Seven callers arrive while the first one's fetch is held: they wait for it, and the
    token endpoint is hit once."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    stale = provider() if state != "never fetched" else None
    if state == "expired":
        clock.now += 10
    elif state == "invalidated":
        provider.invalidate()
    gate = Gate(provider)
    watched = provider._lock = Watched(provider._lock)  # type: ignore[assignment]
    got: list[str] = []
    callers = [threading.Thread(target=lambda: got.append(provider())) for _ in range(8)]
    callers[0].start()
    assert gate.began.wait(PATIENCE)
    run(callers[1:])
    # Each of the seven has looked at the cache under the lock and found nothing usable.
    watched.wait_for(lambda releases: sum(n for t, n in releases.items() if t != gate.fetcher) >= 7)
    assert got == []
    gate.release.set()
    assert joined(callers)
    assert len(got) == 8
    assert len(set(got)) == 1
    assert got[0] != stale
    assert short_lived.token_requests == provider.fetches == (1 if stale is None else 2)


def test_a_failed_fetch_fails_every_caller_waiting_for_it_with_its_own_error() -> None:
    """The endpoint refuses once for everyone waiting; each caller's error carries its own
    request id; the next call asks again."""
    with FaxWSSimulator() as sim:
        provider = ClientCredentials(sim.token_url, DEMO_CLIENT_ID, "wrong-secret")
        auth = BearerAuth(provider)
        gate = Gate(provider)
        watched = provider._lock = Watched(provider._lock)  # type: ignore[assignment]
        errors: dict[str, BaseException] = {}

        def call(rid: str) -> None:
            try:
                auth.bearer_token(rid)
            except AuthenticationError as exc:
                errors[rid] = exc

        callers = [threading.Thread(target=call, args=(f"rid-{n}",)) for n in range(4)]
        callers[0].start()
        assert gate.began.wait(PATIENCE)
        run(callers[1:])
        watched.wait_for(lambda r: sum(n for t, n in r.items() if t != gate.fetcher) >= 3)
        gate.release.set()
        assert joined(callers)
        assert sim.token_requests == 1
        assert sorted(errors) == [f"rid-{n}" for n in range(4)]
        assert len({id(e) for e in errors.values()}) == 4
        for rid, exc in errors.items():
            assert isinstance(exc, AuthenticationError)
            assert exc.request_id == rid
            assert exc.maybe_delivered is False
            assert "invalid_client" in str(exc)
            assert "wrong-secret" not in str(exc)
        with pytest.raises(AuthenticationError):
            provider()
        assert sim.token_requests == 2


# -- 401 ----------------------------------------------------------------------------------


def test_a_refused_token_is_never_handed_out_again(short_lived: FaxWSSimulator) -> None:
    """Also not while the next one is being fetched, although it has not expired yet."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    refused = provider()
    provider.invalidate()
    current = provider()
    assert current != refused
    assert short_lived.token_requests == 2

    clock.now += 7  # renewal due, `current` valid for 3 s more
    gate = Gate(provider)
    renewed: list[str] = []
    fetcher = threading.Thread(target=lambda: renewed.append(provider()))
    fetcher.start()
    assert gate.began.wait(PATIENCE)
    assert provider() == current  # still valid and not refused: used meanwhile
    provider.invalidate()  # now the service refuses it
    watched = provider._lock = Watched(provider._lock)  # type: ignore[assignment]
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(provider()))
    waiter.start()
    watched.wait_for(lambda releases: releases.get(waiter.ident or 0, 0) >= 1)
    assert got == []  # waiting for the new token, not handed the refused one
    gate.release.set()
    assert joined([fetcher, waiter])
    assert got == renewed
    assert got[0] not in (refused, current)
    assert short_lived.token_requests == 3


def test_401s_for_one_token_in_many_threads_cause_one_fetch(
    short_lived: FaxWSSimulator,
) -> None:
    """Eight threads hold the same token, which the service refuses. The first reports it
    and fetches a new one; then the other seven report it: each gets the new token, and
    nothing more is fetched."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    held = threading.Barrier(8)
    first_done = threading.Event()
    got: dict[int, str] = {}

    def thread(n: int) -> None:
        refused = provider()
        held.wait(PATIENCE)
        if n:
            assert first_done.wait(PATIENCE)
        provider.invalidate()  # the service answered 401 to `refused`
        got[n] = provider()
        assert got[n] != refused
        if not n:
            first_done.set()

    threads = [threading.Thread(target=thread, args=(n,)) for n in range(8)]
    run(threads)
    assert joined(threads)
    assert len(got) == 8
    assert len(set(got.values())) == 1
    assert short_lived.token_requests == provider.fetches == 2


def test_a_client_in_many_threads_recovers_from_401_with_one_fetch(
    faxws_simulator: FaxWSSimulator,
) -> None:
    """The real path: eight threads share a client whose cached token the service now
    refuses; each call is answered 401, invalidates and retries, and one token is fetched."""
    sim = faxws_simulator
    provider = ClientCredentials(sim.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    client = FaxClient(sim.url, user_id=DEMO_USER_ID, token=provider)
    client.send_fax(["+1 555 0100"], [PDF])
    sim.expire_tokens()  # the cached token is now refused
    start = threading.Barrier(8)
    failures: list[BaseException] = []

    def call() -> None:
        start.wait(PATIENCE)
        try:
            client.send_fax(["+1 555 0100"], [PDF])
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    run(threads)
    assert joined(threads)
    assert failures == []
    assert len(sim.jobs) == 9
    assert sim.token_requests == provider.fetches == 2
