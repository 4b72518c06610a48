"""What happens to a job can be set per job id, before or during its life, through the REST
API (``PUT /api/jobs/{id}/outcome``) or ``sim.set_outcome``; the API's job JSON and the inbox
show where each recipient's job is, from the same status the SOAP answers give."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from simulated_calls import (
    START,
    job_ids,
    pdf,
    real_time,
    send,
    send_ex,
    simple_status,
    vendor_time,
)

from faxws._protocol import assumptions as vendor
from faxws.errors import BadInputError
from faxws.testing import FaxWSSimulator, ManualClock

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def sim(clock: ManualClock) -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator(clock=clock) as started:
        yield started


def put_outcome(sim: FaxWSSimulator, key: str, body: Any) -> requests.Response:
    return requests.put(f"{sim.url}/api/jobs/{key}/outcome", json=body, timeout=30)


def recipient(sim: FaxWSSimulator, job_id: str) -> dict[str, Any]:
    job = requests.get(f"{sim.url}/api/jobs/{job_id}", timeout=30).json()
    return next(r for r in job["recipients"] if r["job_id"] == job_id)


def test_an_outcome_set_before_the_life_starts_plays_out(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100", documents=(pdf(3),)))
    answer = put_outcome(sim, job_id, {"outcome": "fails-after-pages", "pages": 2})
    assert answer.status_code == 200
    shown = answer.json()["recipients"][0]
    assert (shown["outcome"], shown["outcome_pages"], shown["status"]) == (
        "fails-after-pages",
        2,
        3,
    )
    clock.advance(2 * 86400 / 4)
    (item,) = real_time(sim, job_id)
    assert (item.fax_job_status_id, item.status_description) == (
        2,
        "Failed: the call dropped during transmission",
    )
    assert (item.recipient_current_page_count, item.recipient_total_page_count) == (2, 3)


def test_an_outcome_set_during_the_life_applies_from_then_on(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    first, second = job_ids(send(sim, "+1 555 0100", "+1 555 0101", documents=(pdf(3),)))
    clock.advance(12 / 4)  # both are sending their first page
    assert put_outcome(sim, first, {"outcome": "busy"}).status_code == 200
    shown = recipient(sim, first)
    assert (shown["status"], shown["recipient_state"], shown["attempts"]) == (
        3,
        vendor.RECIPIENT_RETRY_WAIT,
        1,
    )
    # Rejected at the dial by the new plan: it ends at the moment of the change.
    assert put_outcome(sim, second, {"outcome": "rejected"}).status_code == 200
    shown = recipient(sim, second)
    assert (shown["status"], shown["description"]) == (2, "Failed: the number is not a fax machine")
    assert shown["ended_at"] == "2030-01-02T03:04:08.000Z"  # START + 3 s
    assert simple_status(sim, second) == 2


def test_a_jobs_number_sets_every_recipient_and_ended_jobs_keep_theirs(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    ids = job_ids(send(sim, "+1 555 0100", "+1 555 0101"))
    answer = put_outcome(sim, "1", {"outcome": "never-ends"})
    assert [r["outcome"] for r in answer.json()["recipients"]] == ["never-ends", "never-ends"]
    sim.set_outcome(ids[1], "delivered")
    clock.advance(17 / 4)
    assert [simple_status(sim, i) for i in ids] == [3, 1]
    refused = put_outcome(sim, "1", {"outcome": "busy"})
    assert (refused.status_code, refused.json()) == (
        409,
        {"error": f"job {ids[1]} has ended: its outcome cannot change"},
    )
    assert recipient(sim, ids[0])["outcome"] == "never-ends"  # nothing changed
    with pytest.raises(BadInputError, match="has ended"):
        sim.set_outcome(ids[1], "busy")


OUTCOME_NAMES = (
    "delivered, busy, no-answer, busy-then-delivered, fails-after-pages, slow, rejected, never-ends"
)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"outcome": "sunny"}, f"outcome must be one of {OUTCOME_NAMES}"),
        ({}, f"outcome must be one of {OUTCOME_NAMES}"),
        ({"outcome": 3}, f"outcome must be one of {OUTCOME_NAMES}"),
        ({"outcome": "busy", "pages": 2}, "pages applies only to fails-after-pages"),
        (
            {"outcome": "fails-after-pages", "pages": -1},
            "pages must be a whole number from 0 to 10000",
        ),
        (
            {"outcome": "fails-after-pages", "pages": True},
            "pages must be a whole number from 0 to 10000",
        ),
        (
            {"outcome": "fails-after-pages", "pages": "2"},
            "pages must be a whole number from 0 to 10000",
        ),
        (
            {"outcome": "busy", "colour": "red"},
            "unknown field 'colour': the fields are outcome and pages",
        ),
        (["busy"], "the body must be a JSON object"),
    ],
)
def test_a_bad_outcome_gets_400_naming_the_problem(
    sim: FaxWSSimulator, body: Any, error: str
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100"))
    answer = put_outcome(sim, job_id, body)
    assert (answer.status_code, answer.json()) == (400, {"error": error})
    assert recipient(sim, job_id)["outcome"] == "delivered"


def test_the_outcome_route_refuses_unknown_jobs_other_methods_and_bodies_not_json(
    sim: FaxWSSimulator,
) -> None:
    (job_id,) = job_ids(send(sim, "+1 555 0100"))
    missing = put_outcome(sim, "SIM99999999", {"outcome": "busy"})
    assert (missing.status_code, missing.json()) == (404, {"error": "no job SIM99999999"})
    url = f"{sim.url}/api/jobs/{job_id}/outcome"
    assert requests.get(url, timeout=30).headers["Allow"] == "PUT"
    form = requests.put(url, data={"outcome": "busy"}, timeout=30)  # a page could send this
    assert (form.status_code, form.json()) == (403, {"error": "PUT needs a JSON body"})
    with pytest.raises(BadInputError, match="no job SIM99999999"):
        sim.set_outcome("SIM99999999", "busy")
    with pytest.raises(BadInputError, match="outcome must be one of"):
        sim.set_outcome(job_id, "sunny")


def test_the_job_json_shows_the_schedule_details_and_each_recipients_progress(
    sim: FaxWSSimulator, clock: ManualClock
) -> None:
    (job_id,) = job_ids(
        send_ex(
            sim,
            "+1 555 0100",
            reference_id="order-9",
            job_schedule_start_date=vendor_time(3600),
            sender_name="Ann",
            notify_type=3,
            notify_destination="https://hooks.example.test/fax",
            notify_auth_user="hook",
            notify_auth_password="s3cret-Push!",
        )
    )
    job = requests.get(f"{sim.url}/api/jobs/1", timeout=30).json()
    assert (job["operation"], job["reference_id"]) == ("SendFaxEx", "order-9")
    assert job["scheduled_start"] == "2030-01-02T03:19:05.000Z"  # an hour at 4 a second
    assert job["expires_at"] == "2030-01-02T15:19:05.000Z"  # 2 days after the start
    assert job["details"]["sender_name"] == "Ann"
    assert job["details"]["notify_auth_user"] == "hook"
    assert job["details"]["notify_auth_password"] == "***"
    assert recipient(sim, job_id)["push"] == {
        "state": "pending",
        "attempts": 0,
        "result": "",
        "at": None,
        "next_at": None,
    }
    assert "s3cret-Push!" not in requests.get(f"{sim.url}/api/jobs", timeout=30).text


def test_the_inbox_shows_each_recipients_job_live(sim: FaxWSSimulator, clock: ManualClock) -> None:
    ids = job_ids(send_ex(sim, "+1 555 0100", "+1 500 555 0006", reference_id="order-9"))
    inbox = requests.get(sim.url + "/", timeout=30).text
    for shown in (*ids, "order-9", '<span class="s3">In progress: queued</span>', "pages 0/1"):
        assert shown in inbox
    version = re.search(r'data-version="([^"]+)"', inbox)
    assert version is not None
    clock.advance(17 / 4)
    inbox = requests.get(sim.url + "/", timeout=30).text
    assert f'{ids[0]}</code> <span class="s1">Delivered</span>' in inbox
    assert f'{ids[1]}</code> <span class="s2">Failed: the number is not a fax machine' in inbox
    assert f'data-version="{version.group(1)}"' not in inbox  # the clock moved: a new version
    page = requests.get(sim.url + "/jobs/1", timeout=30).text
    assert "pages 1/1" in page
    assert vendor_time(17 / 4) in page
    assert "Attempt 1: the number is not a fax machine; failed" in page
    assert requests.get(sim.url + "/jobs/1/progress", timeout=30).status_code == 404


def test_the_inbox_never_shows_a_push_password(sim: FaxWSSimulator) -> None:
    send_ex(
        sim,
        "+1 555 0100",
        notify_type=3,
        notify_destination="http://127.0.0.1:9/hook",
        notify_auth_password="s3cret-Push!",
    )
    for path in ("/", "/jobs/1", "/requests/1", "/api/requests", "/api/jobs"):
        text = requests.get(sim.url + path, timeout=30).text
        assert "s3cret-Push!" not in text, path
    (request,) = requests.get(sim.url + "/api/requests", timeout=30).json()["requests"]
    assert "<NotifyAuthPassword>***</NotifyAuthPassword>" in request["body"]
