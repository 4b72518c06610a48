"""With a database, a job's life goes on across a restart: its plan, schedule, expiry,
reference, notify settings, cancel and push state are kept, and its times are the clock's."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import requests
from simulated_calls import (
    START,
    cancel,
    job_ids,
    pdf,
    real_time,
    send,
    send_ex,
    simple_status,
    vendor_time,
)

from faxws.testing import FaxWSSimulator, ManualClock

HOUR, DAY = 3600.0, 86400.0


def test_a_restart_continues_every_life_where_it_was(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite"
    clock = ManualClock(START)
    with FaxWSSimulator(db=db, clock=clock) as sim:
        (scheduled,) = job_ids(
            send_ex(
                sim,
                "+1 555 0100",
                reference_id="R-1",
                job_schedule_start_date=vendor_time(HOUR),
                job_expiry_date=vendor_time(5 * HOUR),
                sender_name="Ann",
                notify_type=1,
                notify_destination="ops@example.test",
                notify_auth_password="kept-but-never-shown",
            )
        )
        (running,) = job_ids(send(sim, "+1 555 0101", documents=(pdf(3),)))
        replanned, cancelled = job_ids(send(sim, "+1 555 0102", "+1 555 0103"))
        sim.set_outcome(replanned, "never-ends")
        clock.advance(3)
        assert cancel(sim, cancelled).return_ is True
        clock.advance(2)  # the running job is sending its second page
        ids = (scheduled, running, replanned, cancelled)
        before_jobs = sim.jobs
        before = real_time(sim, *ids)
        before_progress = [sim.progress(i) for i in ids]
    with FaxWSSimulator(db=db, clock=clock) as sim:
        assert sim.jobs == before_jobs  # details, pages, schedule and expiry included
        assert sim.jobs[0]._notify_password == "kept-but-never-shown"
        assert real_time(sim, *ids) == before
        assert [sim.progress(i) for i in ids] == before_progress
        assert simple_status(sim, "JRI-R-1") == 3
        clock.advance(DAY)
        after = real_time(sim, *ids)
        assert [(i.fax_job_status_id, i.status_description) for i in after] == [
            (1, "Delivered"),
            (1, "Delivered"),
            (2, "Expired"),
            (2, "Cancelled"),
        ]
        assert after[0].fax_delivery_date_time == vendor_time((HOUR + 17) / 4)
        assert after[1].fax_delivery_date_time == vendor_time((2 + 5 + 30) / 4)
        shown = requests.get(f"{sim.url}/api/jobs/{replanned}", timeout=30).json()
        assert [r["outcome"] for r in shown["recipients"]] == ["never-ends", "delivered"]
        assert shown["recipients"][1]["cancelled_at"] == "2030-01-02T03:04:08.000Z"


def test_pruned_and_cleared_jobs_leave_nothing_of_their_lives_behind(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite"

    def kept() -> list[str]:
        with sqlite3.connect(db) as connection:
            return [row[0] for row in connection.execute("SELECT job_id FROM tracks ORDER BY 1")]

    with FaxWSSimulator(db=db, clock=ManualClock(START), max_jobs=2) as sim:
        for _ in range(3):
            send(sim, "+1 555 0100")
        assert kept() == ["SIM00000002", "SIM00000003"]
        requests.delete(sim.url + "/api/jobs", headers={"X-FaxWS-Client": "t"}, timeout=30)
        assert kept() == []


def test_a_database_of_an_earlier_version_is_served_with_lives_from_its_numbers(
    tmp_path: Path,
) -> None:
    db = tmp_path / "inbox.sqlite"
    with sqlite3.connect(db) as connection:
        connection.executescript(
            "CREATE TABLE jobs (number INTEGER PRIMARY KEY, job TEXT NOT NULL);"
            "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
        )
        old = {
            "id": "1",
            "job_ids": ["SIM00000001", "SIM00000002"],
            "user_id": "mbx0000000000",
            "auth_mode": "pin",
            "request_id": None,
            "received_at": START,
            "recipients": [["+1 555 0100", "", "", "", ""], ["+1 500 555 0006", "", "", "", ""]],
            "files": [],
            "deviations": [],
        }
        connection.execute("INSERT INTO jobs VALUES (1, ?)", (json.dumps(old),))
        connection.execute("INSERT INTO counters VALUES ('last_id', 1), ('job_counter', 2)")
    with FaxWSSimulator(db=db, clock=ManualClock(START + DAY)) as sim:
        items = real_time(sim, "SIM00000001", "SIM00000002")
        assert [(i.fax_job_status_id, i.status_description) for i in items] == [
            (1, "Delivered"),
            (2, "Failed: the number is not a fax machine"),
        ]
        assert job_ids(send(sim, "+1 555 0100")) == ["SIM00000003"]
