"""Job options: checked where they are made, written as the vendor's FaxJob element."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from faxws import BadInputError
from faxws._protocol import assumptions as vendor
from faxws.jobs import JobOptions, Notify, job_details

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("kwargs", "field", "problem"),
    [
        ({"reference_id": ""}, "reference_id", "must not be empty"),
        ({"reference_id": "a" * 65}, "reference_id", "at most 64"),
        ({"reference_id": "ré"}, "reference_id", "printable ASCII"),
        ({"reference_id": "a\nb"}, "reference_id", "line break"),
        ({"start_at": datetime(2026, 11, 26, 12)}, "start_at", "time zone"),
        ({"expires_at": "2026-11-27"}, "expires_at", "time zone"),
        ({"start_at": NOW, "expires_at": NOW}, "expires_at", "after start_at"),
        ({"sender_name": "\x00"}, "sender_name", "XML cannot carry"),
        ({"cover_text": 5}, "cover_text", "must be a str"),
        ({"notify": "https://example.test/"}, "notify", "must be a Notify"),
    ],
)
def test_bad_options_name_the_field(kwargs: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(BadInputError) as caught:
        JobOptions(**kwargs)
    assert caught.value.field == field
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"destination": ""}, "notify.destination"),
        ({"destination": "https://x.test/", "kind": "none"}, "notify.kind"),
        ({"destination": "https://x.test/", "kind": "fax"}, "notify.kind"),
        ({"destination": "https://x.test/", "include_image": 1}, "notify.include_image"),
        ({"destination": "https://x.test/", "password": "a\rb"}, "notify.password"),
    ],
)
def test_bad_notify_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(BadInputError) as caught:
        Notify(**kwargs)
    assert caught.value.field == field


def test_the_notify_password_is_never_shown() -> None:
    notify = Notify("https://x.test/", user="hook", password="s3cret-pass")
    options = JobOptions(notify=notify)
    assert "s3cret-pass" not in repr(notify)
    assert "s3cret-pass" not in repr(options)


def test_an_immediate_job_is_written_with_empty_dates() -> None:
    job = job_details(JobOptions(), "ref-1", NOW)
    assert job.job_schedule_start_type == vendor.SCHEDULE_IMMEDIATE
    assert (job.job_schedule_start_date, job.job_expiry_date) == ("", "")
    assert job.reference_id == "ref-1"
    assert (job.notify_type, job.notify_destination, job.notify_auth_password) == (0, "", "")


def test_a_scheduled_job_is_written_in_the_vendor_date_form() -> None:
    start = datetime(2026, 11, 27, 9, 30, 5, tzinfo=timezone(timedelta(hours=-8)))
    job = job_details(JobOptions(start_at=start, expires_at=start + timedelta(days=1)), "r", NOW)
    assert job.job_schedule_start_type == vendor.SCHEDULE_AT
    assert job.job_schedule_start_date == "2026-11-27T09:30:05-08:00"
    assert job.job_expiry_date == "2026-11-28T09:30:05-08:00"


def test_notification_options_are_written_as_the_notify_fields() -> None:
    notify = Notify("https://hooks.test/fax", user="u", password="p", include_image=True)
    job = job_details(JobOptions(notify=notify), "r", NOW)
    assert job.notify_type == vendor.NOTIFY_TYPES["post"]
    assert job.notify_include_delivered_image == 1
    assert (job.notify_destination, job.notify_auth_user, job.notify_auth_password) == (
        "https://hooks.test/fax",
        "u",
        "p",
    )


def test_the_schedule_limits_are_checked_before_sending() -> None:
    with pytest.raises(BadInputError, match="more than 4 days ahead") as caught:
        job_details(JobOptions(start_at=NOW + timedelta(days=4, seconds=1)), "r", NOW)
    assert caught.value.field == "start_at"
    job_details(JobOptions(start_at=NOW + timedelta(days=4)), "r", NOW)
    job_details(JobOptions(start_at=NOW - timedelta(days=30)), "r", NOW)  # starts at once
    with pytest.raises(BadInputError, match="more than 2 days after") as caught:
        job_details(JobOptions(expires_at=NOW + timedelta(days=2, minutes=2)), "r", NOW)
    assert caught.value.field == "expires_at"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2007-11-30T06:03:15-08:00", datetime(2007, 11, 30, 14, 3, 15, tzinfo=timezone.utc)),
        ("2007-11-30T06:03:15+00:00", datetime(2007, 11, 30, 6, 3, 15, tzinfo=timezone.utc)),
        ("", None),
        ("2007-11-30T06:03:15", None),
        ("2007-11-30 06:03:15-08:00", None),
        ("2007-13-30T06:03:15-08:00", None),
        ("\uff12\uff10\uff10\uff17-11-30T06:03:15-08:00", None),
    ],
)
def test_vendor_datetimes(text: str, expected: datetime | None) -> None:
    assert vendor.parse_datetime(text) == expected
    if expected is not None:
        assert vendor.parse_datetime(vendor.format_datetime(expected)) == expected


def test_vendor_datetimes_are_written_in_the_vendor_form_whatever_the_value() -> None:
    odd = timezone(timedelta(hours=5, minutes=30, seconds=15))
    cases = [
        (datetime(987, 1, 2, 3, 4, 5, 999, tzinfo=timezone.utc), "0987-01-02T03:04:05+00:00"),
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=odd), "2026-01-01T21:33:50+00:00"),
    ]
    for value, text in cases:
        assert vendor.format_datetime(value) == text
        assert vendor.parse_datetime(text) == value.replace(microsecond=0)


def test_generated_reference_ids_are_distinct_and_plain() -> None:
    ids = {vendor.new_reference_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and i.isalnum() and i.isascii() for i in ids)
