"""Jobs kept across restarts with a database, and nothing kept without one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

from faxws import FaxClient, FaxFile, FileType, Recipient, ServiceError
from faxws.errors import BadInputError
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

PDF = b"%PDF-1.4 kept"


def send(sim: FaxWSSimulator, *files: FaxFile, name: str = "Ann") -> list[str]:
    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        return list(client.send_fax([Recipient("+1 555 0100", name=name)], list(files)).job_ids)


def test_a_restart_keeps_jobs_and_documents(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite"
    large = os.urandom(300_000)
    with FaxWSSimulator(db=db) as sim:
        first = send(sim, FaxFile(PDF, FileType.PDF), FaxFile(large, 1))
        second = send(sim, FaxFile(PDF, FileType.PDF), name="Bob")
        before = sim.jobs
    assert sorted(p.name for p in (tmp_path / "inbox.sqlite.files").iterdir()) == [
        "job-1-file-1.bin",
        "job-1-file-2.bin",
        "job-2-file-1.bin",
    ]  # and no spool left over
    with FaxWSSimulator(db=db) as sim:
        assert sim.jobs == before
        assert [f.data for f in sim.jobs[0].files] == [PDF, large]
        assert sim.job(first[0]) == before[0]
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            client.get_fax_broadcast_report(second[0])  # known after the restart
        listing = requests.get(sim.url + "/api/jobs", timeout=30).json()
        assert [j["id"] for j in listing["jobs"]] == ["2", "1"]
        assert requests.get(sim.url + "/api/jobs/1/files/2", timeout=30).content == large
        assert "Bob" in requests.get(sim.url + "/", timeout=30).text
        third = send(sim, FaxFile(PDF, FileType.PDF))
        assert third == ["SIM00000003"]  # numbering goes on
        assert sim.jobs[-1].id == "3"


def test_clearing_and_pruning_reach_the_database(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite"
    with FaxWSSimulator(db=db, max_jobs=2) as sim:
        for _ in range(4):
            send(sim, FaxFile(PDF, FileType.PDF))
        kept = [job.id for job in sim.jobs]
    assert 2 <= len(kept) <= 3
    with FaxWSSimulator(db=db) as sim:
        assert [job.id for job in sim.jobs] == kept
        answer = requests.delete(sim.url + "/api/jobs", headers={"X-FaxWS-Client": "t"}, timeout=30)
        assert answer.status_code == 200
    assert list((tmp_path / "inbox.sqlite.files").iterdir()) == []
    with FaxWSSimulator(db=db) as sim:
        assert sim.jobs == []
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            with pytest.raises(ServiceError):
                client.get_fax_broadcast_report("SIM00000001")
            assert send(sim, FaxFile(PDF, FileType.PDF)) == ["SIM00000001"]
        assert sim.jobs[0].id == "5"  # job numbers are never reused


def test_without_a_database_nothing_outlives_stop(tmp_path: Path) -> None:
    with FaxWSSimulator() as sim:
        send(sim, FaxFile(os.urandom(300_000), 1))
        path = sim.jobs[0].files[0].path
        assert path is not None
        assert path.exists()
    assert not path.exists()
    assert not path.parent.exists()


def test_a_database_that_cannot_be_opened_is_bad_input(tmp_path: Path) -> None:
    not_a_db = tmp_path / "file.sqlite"
    not_a_db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(BadInputError, match=r"^db: cannot be opened"):
        FaxWSSimulator(db=not_a_db).start()
