"""The simulator's clock and time scale stay where every moment can be written as a date: a
ManualClock reads from 1970 to the year 9999, the time scale is at most 1e9, and values
beyond (an int too large for a float too) are refused naming the argument. A moment the
simulator still cannot write as a date (a slow scale's expiry) is shown as its number."""

from __future__ import annotations

import math

import pytest
import requests

from faxws import FaxClient, FaxFile, FileType
from faxws.errors import BadInputError
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator, ManualClock
from faxws.testing._clock import LATEST

HUGE = pytest.param(10**400, id="10**400")  # no float holds it
FROM_0_TO_9999 = "start: must be seconds since the epoch from 0 to 253402300799"


@pytest.mark.parametrize(
    ("start", "message"),
    [
        pytest.param(10**400, FROM_0_TO_9999, id="10**400"),
        pytest.param(-(10**400), FROM_0_TO_9999, id="-10**400"),
        (LATEST + 1, FROM_0_TO_9999),
        (-1, FROM_0_TO_9999),
        (1e300, FROM_0_TO_9999),
        (math.nan, "start: must be a finite number of seconds, not nan"),
        (math.inf, "start: must be a finite number of seconds, not inf"),
        ("1", "start: must be a finite number of seconds, not '1'"),
    ],
)
def test_a_start_no_date_can_show_is_refused(start: object, message: str) -> None:
    with pytest.raises(BadInputError) as caught:
        ManualClock(start)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)
    assert len(str(caught.value)) < 200


def test_the_first_and_last_moments_are_readings() -> None:
    assert ManualClock(0).now() == 0.0
    assert ManualClock(LATEST).now() == float(LATEST)


@pytest.mark.parametrize("step", [HUGE, 1e300, LATEST, 101])
def test_an_advance_beyond_the_year_9999_is_refused_and_the_clock_stays(step: float) -> None:
    clock = ManualClock(LATEST - 100)
    with pytest.raises(BadInputError) as caught:
        clock.advance(step)
    assert str(caught.value).startswith("seconds: must not move the clock beyond the year 9999")
    assert clock.now() == LATEST - 100
    assert clock.advance(100) == LATEST


@pytest.mark.parametrize("scale", [HUGE, pytest.param(10**5000, id="10**5000"), 1e9 * 1.01, 1e300])
def test_a_time_scale_above_1e9_is_refused(scale: float) -> None:
    with pytest.raises(BadInputError) as caught:
        FaxWSSimulator(time_scale=scale)
    assert str(caught.value).startswith("time_scale: must be at most 1e+09, not ")
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize(
    "scale", [0, -1, pytest.param(-(10**5000), id="-10**5000"), math.nan, math.inf, -math.inf]
)
def test_a_time_scale_not_above_0_or_not_finite_is_refused(scale: float) -> None:
    with pytest.raises(BadInputError, match=r"^time_scale: must be a finite number above 0"):
        FaxWSSimulator(time_scale=scale)


def test_the_largest_time_scale_is_accepted() -> None:
    assert FaxWSSimulator(time_scale=10**9).time_scale == 1e9


def test_moments_beyond_the_year_9999_are_shown_as_numbers_not_dropped() -> None:
    """A slow scale puts a job's expiry past the year 9999: the API and the inbox answer."""
    with FaxWSSimulator(clock=ManualClock(LATEST - 100), time_scale=1e-3) as sim:
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, retries=0) as client:
            client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", FileType.PDF)])
        answer = requests.get(sim.url + "/api/jobs", timeout=30)
        assert answer.status_code == 200
        (job,) = answer.json()["jobs"]
        assert job["received_at"] == "9999-12-31T23:58:19.000Z"
        assert float(job["expires_at"]) > LATEST
        for page in ("/", "/jobs/1", "/api/jobs/1"):
            assert requests.get(sim.url + page, timeout=30).status_code == 200
