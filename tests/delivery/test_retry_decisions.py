"""The waits between attempts, for both callers: full jitter under a doubling bound capped at
60 s (or retry_backoff), a 503's Retry-After honoured (seconds or an HTTP date, capped) for
calls that may be retried, and never a retry that was not allowed already. Every exchange is
answered by a MockTransport and every wait is recorded, not slept."""

from __future__ import annotations

import email.utils
import math
import random
from collections.abc import Callable
from typing import Any

import pytest

from conftest import Face, report_response
from faxws import ClientOptions, FaxFile, HTTPStatusError
from faxws._http.async_caller import AsyncCaller
from faxws._http.shared import retry_after
from faxws._http.sync_caller import SyncCaller
from faxws.transport import MockTransport, Request, Response


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits both callers ask for, in order (none is slept)."""
    asked: list[float] = []

    async def wait_async(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(SyncCaller, "wait", staticmethod(asked.append))
    monkeypatch.setattr(AsyncCaller, "wait", staticmethod(wait_async))
    return asked


def busy_then_done(busy: int, status: int = 503, headers: dict[str, str] | None = None) -> Any:
    """A handler answering ``busy`` times ``status`` (with ``headers``), then a report."""
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        if len(seen) <= busy:
            return Response(status, headers or {}, b"busy")
        return Response(200, {}, report_response())

    handler.seen = seen  # type: ignore[attr-defined]
    return handler


def client(face: Face, handler: Callable[[Request], Response], **settings: Any) -> Any:
    options = ClientOptions(transport=MockTransport(handler), **settings)
    return face.client("https://fax.example.com", user_id="u", pin="1", options=options)


@pytest.mark.parametrize(
    ("random_value", "fraction"),
    [(0.0, 0.0), (0.25, 0.25), (1.0, 1.0), (7.0, 1.0), (-1.0, 0.0), (math.nan, 0.0)],
    ids=["zero", "quarter", "one", "above-one", "below-zero", "nan"],
)
def test_each_wait_is_a_fraction_of_a_doubling_bound_capped_at_60_s(
    face: Face, waits: list[float], random_value: float, fraction: float
) -> None:
    # Bounds 20, 40, then 80 capped at 60.
    handler = busy_then_done(3)
    settings = {"retries": 3, "retry_backoff": 20, "retry_random": lambda: random_value}
    client(face, handler, **settings).get_fax_broadcast_report("J1")
    assert waits == [20 * fraction, 40 * fraction, 60 * fraction]
    # A backoff longer than 60 s is its own cap.
    waits.clear()
    settings["retry_backoff"] = 100
    client(face, busy_then_done(2), **settings).get_fax_broadcast_report("J1")
    assert waits == [100 * fraction, 100 * fraction]


def test_the_default_jitter_stays_within_each_bound(face: Face, waits: list[float]) -> None:
    rounds = 20
    for _ in range(rounds):
        handler = busy_then_done(3)
        client(face, handler, retries=3, retry_backoff=1).get_fax_broadcast_report("J1")
    assert len(waits) == 3 * rounds
    for n, bound in enumerate([1, 2, 4]):
        ours = waits[n::3]
        assert all(0 <= w <= bound for w in ours)
    assert len(set(waits)) > 1  # random, not the bound each time


def _date(offset: float) -> str:
    return email.utils.formatdate(1_000_000_000 + offset, usegmt=True)


FAR_PAST = email.utils.formatdate(0, usegmt=True)
FAR_FUTURE = email.utils.formatdate(4_102_444_800, usegmt=True)  # 2100


@pytest.mark.parametrize(
    ("status", "value", "backoff", "wait"),
    [
        (503, "0", 1, 0.0),
        (503, "7", 1, 7.0),
        (503, " 12 ", 1, 12.0),
        (503, "120", 1, 60.0),
        (503, "120", 100, 100.0),
        (503, "9" * 400, 1, 60.0),
        (503, "9" * 5000, 1, 60.0),
        (503, "0" * 5000 + "7", 1, 7.0),
        (503, FAR_PAST, 1, 0.0),
        (503, FAR_FUTURE, 1, 60.0),
        (503, "soon", 1, 0.5),
        (503, "1.5", 1, 0.5),
        (503, "-5", 1, 0.5),
        (503, "²", 1, 0.5),
        (502, "7", 1, 0.5),
        (504, "7", 1, 0.5),
    ],
    ids=[
        "zero",
        "seconds",
        "spaces",
        "too-large",
        "too-large-long-backoff",
        "huge",
        "past-ints-digit-limit",
        "leading-zeros",
        "past-date",
        "far-date",
        "garbage",
        "fraction",
        "negative",
        "superscript",
        "502-ignores-it",
        "504-ignores-it",
    ],
)
def test_retry_after_on_a_503_replaces_the_wait_up_to_the_cap(
    face: Face, waits: list[float], status: int, value: str, backoff: float, wait: float
) -> None:
    """Seconds or an HTTP date; what is neither, or comes with another status, leaves the
    jittered wait (here half of the bound)."""
    handler = busy_then_done(1, status, {"Retry-After": value})
    settings = {"retries": 1, "retry_backoff": backoff, "retry_random": lambda: 0.5}
    assert client(face, handler, **settings).get_fax_broadcast_report("J1").job_id == "J1"
    assert waits == [wait]
    assert len(handler.seen) == 2


def test_a_send_answered_503_with_retry_after_is_still_not_sent_again(
    face: Face, waits: list[float]
) -> None:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return Response(503, {"Retry-After": "0"}, b"busy")

    with pytest.raises(HTTPStatusError) as info:
        client(face, handler, retries=3).send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)])
    assert info.value.maybe_delivered is True
    assert len(seen) == 1
    assert waits == []
    # The same answer to a report is retried (within its budget).
    with pytest.raises(HTTPStatusError):
        client(face, handler, retries=3).get_fax_broadcast_report("J1")
    assert len(seen) == 1 + 4
    assert waits == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("value", "wait"),
    [
        (_date(30), 30.0),
        (_date(30).replace("GMT", "-0000"), 30.0),
        (_date(-30), 0.0),
        (_date(3600), 60.0),
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 0.0),
        ("Mon, 99 Nov 2024 08:49:37 GMT", None),
        ("", None),
        (None, None),
    ],
    ids=["date", "no-zone", "past", "capped", "rfc1123", "rfc850", "bad-day", "empty", "none"],
)
def test_retry_after_reads_dates_against_the_clock(value: str | None, wait: float | None) -> None:
    assert retry_after(value, 60.0, now=lambda: 1_000_000_000.0) == wait


def test_a_random_source_may_be_any_function(face: Face, waits: list[float]) -> None:
    source = random.Random(7)
    expected = random.Random(7)
    settings = {"retries": 2, "retry_backoff": 3, "retry_random": source.random}
    client(face, busy_then_done(2), **settings).get_fax_broadcast_report("J1")
    assert waits == [3 * expected.random(), 6 * expected.random()]
