"""Jobs kept across restarts with a database, and nothing kept without one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

from faxws import FaxClient, FaxFile, FileType, Recipient, ServiceError, SoapFaultError
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
        "lock",
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
    assert kept == ["3", "4"]
    with FaxWSSimulator(db=db) as sim:
        assert [job.id for job in sim.jobs] == kept
        answer = requests.delete(sim.url + "/api/jobs", headers={"X-FaxWS-Client": "t"}, timeout=30)
        assert answer.status_code == 200
    assert [p.name for p in (tmp_path / "inbox.sqlite.files").iterdir()] == ["lock"]
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


def test_one_database_serves_one_simulator(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite"
    with FaxWSSimulator(db=db) as first:
        with pytest.raises(BadInputError, match=r"^db: .* is in use by another simulator"):
            FaxWSSimulator(db=db).start()
        send(first, FaxFile(PDF, FileType.PDF))  # undisturbed
        assert first.jobs[0].files[0].data == PDF
    with FaxWSSimulator(db=db) as again:  # free once the first stopped
        assert len(again.jobs) == 1


def test_a_relative_path_finds_its_documents_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    with FaxWSSimulator(db="inbox.sqlite") as sim:
        send(sim, FaxFile(PDF, FileType.PDF))
    monkeypatch.chdir(tmp_path / "elsewhere")
    with FaxWSSimulator(db="../inbox.sqlite") as sim:
        assert sim.jobs[0].files[0].data == PDF


def test_a_job_the_database_refuses_is_a_server_fault_and_not_kept(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "inbox.sqlite"
    with FaxWSSimulator(db=db) as sim:
        blocker = sqlite3.connect(db, timeout=0.1)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            with (
                FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client,
                pytest.raises(SoapFaultError) as info,
            ):
                client.send_fax(["+1 5"], [FaxFile(os.urandom(100_000), 1)])
        finally:
            blocker.rollback()
            blocker.close()
        assert info.value.fault_code == "soap:Server"
        assert "the simulator cannot keep the job" in info.value.fault_string
        assert sim.jobs == []
        assert [p.name for p in (tmp_path / "inbox.sqlite.files").iterdir()] == ["lock", "spool"]
        send(sim, FaxFile(PDF, FileType.PDF))  # and it goes on once the database is free
        assert sim.jobs[0].id == "1"


def test_a_database_of_something_else_is_bad_input(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "inbox.sqlite"
    with FaxWSSimulator(db=db):
        pass
    with sqlite3.connect(db) as raw:
        raw.execute("INSERT INTO jobs (number, job) VALUES (1, 'not json')")
    raw.close()
    with pytest.raises(BadInputError, match=r"^db: cannot be read: holds jobs it cannot read"):
        FaxWSSimulator(db=db).start()
    with pytest.raises(BadInputError, match=r"^db: cannot be read"):  # and it let go of it
        FaxWSSimulator(db=db).start()


def test_a_smaller_max_jobs_prunes_at_start(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite"
    with FaxWSSimulator(db=db) as sim:
        for _ in range(3):
            send(sim, FaxFile(PDF, FileType.PDF))
    with FaxWSSimulator(db=db, max_jobs=1) as sim:
        assert [job.id for job in sim.jobs] == ["3"]
    with FaxWSSimulator(db=db) as sim:
        assert [job.id for job in sim.jobs] == ["3"]


def test_a_database_in_a_missing_folder_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "deeper"
    with pytest.raises(BadInputError) as info:
        FaxWSSimulator(db=missing / "inbox.sqlite").start()
    assert str(info.value) == (
        f"db: {missing / 'inbox.sqlite'}: the folder {missing} does not exist (create it first)"
    )
    assert not (tmp_path / "missing").exists()  # nothing made on the way
    a_file = tmp_path / "a-file"
    a_file.write_bytes(b"")
    with pytest.raises(BadInputError) as info:
        FaxWSSimulator(db=a_file / "inbox.sqlite").start()
    assert str(info.value) == f"db: {a_file / 'inbox.sqlite'}: {a_file} is not a folder"


def test_faxws_serve_says_which_folder_is_missing(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", "--db", "nope/inbox.sqlite"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2  # a usage error
    assert "db: nope/inbox.sqlite: the folder nope does not exist (create it first)" in (
        done.stderr
    )
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []
