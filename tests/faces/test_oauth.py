"""ClientCredentials under concurrency: short-lived tokens reused, no caller waiting while a
token it may use exists, one fetch for everyone who needs one, and 401s handled once.

Every test drives the provider's clock by hand and orders threads with events and
barriers; each wait has a generous time-out that only a broken provider reaches.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from faxws import AuthenticationError, FaxClient, FaxFile, FileType, ProtocolError
from faxws.auth import BearerAuth
from faxws.oauth import (
    RENEWAL_RETRY_SECONDS,
    AsyncClientCredentials,
    ClientCredentials,
    _lifetime,
    _Token,
)
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


def renew_at_once(provider: ClientCredentials) -> None:
    """Renewals run in the calling thread, before the call returns the current token: the
    test sees each one land."""
    provider._in_background = lambda renew: renew()


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
        renew_at_once(provider)
        first = provider()
        clock.now += renewal - 0.01
        assert provider() == first
        assert sim.token_requests == 1
        clock.now += 0.01
        during = provider()
        assert sim.token_requests == 2
        # Still valid, the token is used while the next one is fetched; expired, not.
        assert (during == first) is (renewal < lifetime)
        assert provider() != first


def test_short_lived_tokens_are_reused_for_most_of_their_life(
    short_lived: FaxWSSimulator,
) -> None:
    """1,000 calls spread over 100 s of 10-second tokens: one fetch every 5 s, not one per
    call (a lifetime at or below the leeway used to make every call fetch)."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    renew_at_once(provider)
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
    """The caller that finds renewal due goes on with the current token, which is still
    valid, while a thread of the provider's fetches the next one (held at the gate); four
    others make 50 calls each and finish meanwhile, with the current token too."""
    clock = Clock()
    provider = provider_for(short_lived, clock)
    first = provider()
    clock.now += 7  # renewal due (at 5 s), the token valid until 10 s
    gate = Gate(provider)
    assert provider() == first  # the renewing caller did not wait for the fetch
    assert gate.began.wait(PATIENCE)
    assert gate.fetcher != threading.get_ident()

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
    clock.now += 3  # expired: the next caller has the renewal's token, waiting if need be
    renewed = provider()
    assert renewed != first
    assert short_lived.token_requests == provider.fetches == 2


def test_the_async_provider_hands_out_a_valid_token_while_a_task_renews_it(
    short_lived: FaxWSSimulator,
) -> None:
    """The task that finds renewal due, and the tasks after it, get the current token, still
    valid, without waiting, while a task of the provider's fetches the next one."""
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
        during = [await asyncio.wait_for(provider(), PATIENCE) for _ in range(4)]
        renewing = provider._fetching
        assert renewing is not None
        assert await loop.run_in_executor(None, gate.began.wait, PATIENCE)
        try:
            during.append(await asyncio.wait_for(provider(), PATIENCE))
        finally:
            gate.release.set()
        await asyncio.wait_for(renewing, PATIENCE)
        return first, during, await provider()

    first, during, renewed = asyncio.run(main())
    assert during == [first] * 5
    assert renewed != first
    assert short_lived.token_requests == provider.fetches == 2
    provider.close()


# -- a renewal that fails while the token is valid -------------------------------------------

SECRET = "client-s3cret"


class Endpoint:
    """A token endpoint played by the test on the provider's clock: each fetch while it is up
    issues the next token (tok-1, tok-2...), valid for 60 s and due for renewal at 30 s;
    while it is down, each fetch fails as a 503 does."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.down = False
        self.fetches = 0
        self.issued = 0

    def __call__(self) -> _Token:
        self.fetches += 1
        if self.down:
            raise ProtocolError("the token endpoint answered HTTP 503", status_code=503)
        self.issued += 1
        now = self.clock.now
        return _Token(f"tok-{self.issued}", now + 60, now + 30)


def renewal_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_failed_renewal_fails_no_call_while_the_token_is_valid(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past renew_at, a renewal starts away from the caller, which goes on with the current
    token; when the endpoint fails, no call fails: the failure is logged (without secrets)
    and the renewal tried again RENEWAL_RETRY_SECONDS later, not on every call."""
    caplog.set_level(logging.WARNING, logger="faxws")
    clock = Clock()
    provider = ClientCredentials("https://login.example.com/token", "cid", SECRET)
    provider._clock = clock
    endpoint = provider._fetch = Endpoint(clock)  # type: ignore[assignment]
    held: list[Callable[[], None]] = []  # renewals started, run when the test says
    provider._in_background = held.append

    assert provider() == "tok-1"
    clock.now += 40  # renewal due since 30 s; valid until 60 s
    endpoint.down = True
    assert [provider() for _ in range(3)] == ["tok-1"] * 3
    assert len(held) == 1  # one renewal, and no caller waited for it
    assert endpoint.fetches == 1

    held.pop()()  # the endpoint answers 503
    assert endpoint.fetches == 2
    [warning] = renewal_warnings(caplog)
    assert "ProtocolError" in warning
    assert "HTTP 503" in warning
    assert SECRET not in caplog.text
    assert "tok-1" not in caplog.text

    clock.now += RENEWAL_RETRY_SECONDS - 0.01
    assert [provider() for _ in range(5)] == ["tok-1"] * 5
    assert held == []  # not tried again on every call
    clock.now += 0.01
    endpoint.down = False
    assert provider() == "tok-1"
    held.pop()()
    assert provider() == "tok-2"
    assert endpoint.fetches == 3


def test_the_async_provider_fails_no_call_when_a_renewal_fails_while_the_token_is_valid(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As the thread-safe provider: the renewal is a task of its own that no caller awaits."""
    caplog.set_level(logging.WARNING, logger="faxws")
    clock = Clock()
    provider = AsyncClientCredentials("https://login.example.com/token", "cid", SECRET)
    provider._grant._clock = clock
    endpoint = provider._grant._fetch = Endpoint(clock)  # type: ignore[assignment]

    async def main() -> None:
        assert await provider() == "tok-1"
        clock.now += 40  # renewal due since 30 s; valid until 60 s
        endpoint.down = True
        assert [await provider() for _ in range(3)] == ["tok-1"] * 3
        renewing = provider._fetching
        assert renewing is not None
        assert endpoint.fetches == 1  # no caller waited for the renewal

        with pytest.raises(ProtocolError):
            await renewing  # the endpoint answers 503
        assert endpoint.fetches == 2
        [warning] = renewal_warnings(caplog)
        assert "ProtocolError" in warning
        assert SECRET not in caplog.text

        clock.now += RENEWAL_RETRY_SECONDS - 0.01
        assert [await provider() for _ in range(5)] == ["tok-1"] * 5
        assert provider._fetching is None  # not tried again on every call
        clock.now += 0.01
        endpoint.down = False
        assert await provider() == "tok-1"
        renewing = provider._fetching
        assert renewing is not None
        await renewing
        assert await provider() == "tok-2"
        assert endpoint.fetches == 3

    asyncio.run(main())


def test_once_the_token_expires_a_failed_fetch_fails_the_call() -> None:
    """After failed renewals, a caller whose token has expired waits for a fetch of its own
    (the pause between renewals is not its), and gets its failure."""
    clock = Clock()
    provider = ClientCredentials("https://login.example.com/token", "cid", SECRET)
    provider._clock = clock
    endpoint = provider._fetch = Endpoint(clock)  # type: ignore[assignment]
    provider._in_background = lambda renew: renew()
    assert provider() == "tok-1"
    endpoint.down = True
    clock.now += 59
    assert provider() == "tok-1"  # renewal failed; still valid for 1 s
    clock.now += 1
    with pytest.raises(ProtocolError):
        provider()
    assert endpoint.fetches == 3
    endpoint.down = False
    assert provider() == "tok-2"


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
    assert provider() == current  # still valid and not refused: used while it is renewed
    assert gate.began.wait(PATIENCE)
    assert provider() == current
    provider.invalidate()  # now the service refuses it
    watched = provider._lock = Watched(provider._lock)  # type: ignore[assignment]
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(provider()))
    waiter.start()
    watched.wait_for(lambda releases: releases.get(waiter.ident or 0, 0) >= 1)
    assert got == []  # waiting for the new token, not handed the refused one
    gate.release.set()
    assert joined([waiter])
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
