"""A fax's life on the command line: `faxws status`, `faxws cancel`, `faxws send` with job
options and with --wait, what `faxws report` says it returns, `faxws serve --time-scale`.

Run in a subprocess against the simulator, a large time scale making a life take milliseconds,
or in-process where the wait's clock and sleeping are the test's (the simulator's ManualClock
moved with them), so that what each poll sees is fixed."""

from __future__ import annotations

import io
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

import pytest

from faxws import FaxClient, FaxFile, FileType, JobOptions
from faxws.pytest_plugin import SimulatorFactory
from faxws.status import RealTimeFaxStatus
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator, ManualClock

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
#: Simulated seconds per second: a busy number's three attempts end within milliseconds.
FAST = 100_000
BUSY, NEVER_ENDS = "+1 500 555 0001", "+1 500 555 0007"
NOTIFY_PASSWORD = "NOTIFY-PW-never-shown-93"
NOT_RETURNED = (
    "The service accepted the request; the report itself is not returned by this call: it is "
    "delivered by the service out of band, and its format is not published."
)


def faxws(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faxws", *args],
        env={**CLEAN_ENV, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def pin_env(sim: FaxWSSimulator) -> dict[str, str]:
    return {"FAXWS_BASE_URL": sim.url, "FAXWS_USER_ID": DEMO_USER_ID, "FAXWS_PIN": DEMO_PIN}


def pdf_of(pages: int) -> bytes:
    return b"%PDF-1.4\n" + b"<< /Type /Page >>\n" * pages


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "letter.pdf"
    path.write_bytes(pdf_of(1))
    return path


@pytest.fixture
def fast(faxws_simulator_factory: SimulatorFactory) -> FaxWSSimulator:
    return faxws_simulator_factory(time_scale=FAST)


@pytest.fixture
def stepped(faxws_simulator_factory: SimulatorFactory) -> tuple[FaxWSSimulator, ManualClock]:
    """A simulator whose jobs move on only when the test moves its clock."""
    clock = ManualClock()
    return faxws_simulator_factory(clock=clock), clock


def ended_jobs(sim: FaxWSSimulator, clock: ManualClock, *numbers: str) -> list[str]:
    """Job ids of a send to ``numbers`` that has ended (the clock moved past every attempt)."""
    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        sent = client.send_fax(
            list(numbers),
            [FaxFile(pdf_of(1), FileType.PDF)],
            options=JobOptions(reference_id="ref-ended"),
        )
    clock.advance(3600)
    return list(sent.job_ids)


# -- faxws status -----------------------------------------------------------------------------


def test_status_shows_a_table_and_exits_0_whatever_the_jobs_states(
    stepped: tuple[FaxWSSimulator, ManualClock],
) -> None:
    sim, clock = stepped
    delivered, busy = ended_jobs(sim, clock, "+1 555 0100", BUSY)
    done = faxws("status", delivered, busy, "SIM404", "--request-id", "st-1", env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "JOB ID",
        "STATUS",
        "PAGES",
        "DESCRIPTION",
        "DELIVERED AT",
    ]
    rows = [re.split(r"\s{2,}", line) for line in lines[1:4]]
    assert rows[0][:4] == [delivered, "succeeded", "1/1", "Delivered"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", rows[0][4])
    assert rows[1] == [busy, "failed", "0/1", "Failed: the line was busy", "-"]
    assert rows[2] == ["SIM404", "not found", "0/0", "Invalid Job ID", "-"]
    assert lines[4:] == ["Request id:  st-1", "Activity id: -"]
    [request] = sim.requests_for("GetRealTimeFaxStatusEx2")
    assert request.header("x-ch-request-id") == "st-1"


def test_status_json_has_every_field_of_each_job(
    stepped: tuple[FaxWSSimulator, ManualClock],
) -> None:
    sim, clock = stepped
    delivered, busy = ended_jobs(sim, clock, "+1 555 0100", BUSY)
    done = faxws("status", delivered, busy, "--json", env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"statuses", "request_id", "activity_id", "execution_time_ms"}
    first, second = data["statuses"]
    every = {f.name for f in fields(RealTimeFaxStatus)} | {"final"}
    assert set(first) == set(second) == every
    assert (first["job_id"], first["status"], first["status_id"], first["final"]) == (
        delivered,
        "succeeded",
        1,
        True,
    )
    assert (first["pages_sent"], first["pages_total"], first["reference_id"]) == (1, 1, "ref-ended")
    assert first["delivered_at"] == first["delivered_at_text"]
    assert (second["status"], second["description"], second["delivered_at"]) == (
        "failed",
        "Failed: the line was busy",
        None,
    )


def test_status_by_reference_found_or_not(stepped: tuple[FaxWSSimulator, ManualClock]) -> None:
    sim, clock = stepped
    ended_jobs(sim, clock, "+1 555 0100")
    env = pin_env(sim)
    found = faxws("status", "--reference", "ref-ended", "--request-id", "ref-1", env=env)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0] == "Reference ref-ended: found, succeeded."
    [request] = sim.requests_for("SimpleGetFaxStatus")
    assert b"<JobId>JRI-ref-ended</JobId>" in request.body
    missing = faxws("status", "--reference", "ref-other", env=env)
    assert missing.returncode == 0, missing.stderr
    assert missing.stdout.splitlines()[0].startswith("Reference ref-other: not found.")
    as_json = json.loads(faxws("status", "--reference", "ref-ended", "--json", env=env).stdout)
    assert {k: as_json[k] for k in ("reference_id", "found", "status", "status_id")} == {
        "reference_id": "ref-ended",
        "found": True,
        "status": "succeeded",
        "status_id": 1,
    }
    as_json = json.loads(faxws("status", "--reference", "ref-other", "--json", env=env).stdout)
    assert (as_json["found"], as_json["status"]) == (False, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status"], "give one or more JOB_ID, or --reference REF"),
        (["status", "J1", "--reference", "R"], "give JOB_ID or --reference, not both"),
        (["cancel"], "the following arguments are required: JOB_ID"),
    ],
)
def test_status_and_cancel_usage_errors(args: list[str], message: str) -> None:
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", "FAXWS_PIN": "1"}
    done = faxws(*args, env=env)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith(f"error: {message}")
    done = faxws(*args, "--json", env=env)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"].endswith(message)


# -- faxws cancel -----------------------------------------------------------------------------


def test_cancel_is_accepted_for_a_job_that_has_not_ended(
    stepped: tuple[FaxWSSimulator, ManualClock],
) -> None:
    sim, _clock = stepped
    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        first, second = client.send_fax(
            ["+1 555 0100", "+1 555 0101"], [FaxFile(pdf_of(1), FileType.PDF)]
        ).job_ids
    done = faxws("cancel", first, "--request-id", "cx-1", env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [f"Cancel of job {first} accepted.", "Request id:  cx-1"]
    done = faxws("cancel", second, "--json", env=pin_env(sim))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["job_id"], data["accepted"]) == (second, True)
    assert sim.requests_for("CancelFax")[0].header("x-ch-request-id") == "cx-1"


def test_cancel_of_a_job_that_ended_is_a_service_error(
    stepped: tuple[FaxWSSimulator, ManualClock],
) -> None:
    sim, clock = stepped
    [job] = ended_jobs(sim, clock, "+1 555 0100")
    done = faxws("cancel", job, "--request-id", "cx-2", env=pin_env(sim))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "faxws cancel: ServiceError: service error -9001: The job has already ended "
        "(HTTP 200, request id cx-2)\n"
    )
    done = faxws("cancel", job, "--json", env=pin_env(sim))
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["code"], error["message"]) == (
        "ServiceError",
        -9001,
        "service error -9001: The job has already ended",
    )


# -- faxws send with job options --------------------------------------------------------------

OPTIONS = [
    "--reference",
    "inv-2041",
    "--start-at",
    "2020-01-01T09:00:00+01:00",  # past: starts at once
    "--sender-name",
    "Ada",
    "--sender-company",
    "ACME",
    "--sender-phone",
    "+1 555 0199",
    "--sender-fax",
    "+1 555 0198",
    "--sender-csid",
    "ACME FAX",
    "--cover-name",
    "standard",
    "--cover-subject",
    "Invoice",
    "--cover-text",
    "Please pay",
    "--resolution",
    "fine",
]


def test_send_with_job_options_is_a_send_fax_ex_showing_its_reference(
    faxws_simulator: FaxWSSimulator, pdf: Path
) -> None:
    env = pin_env(faxws_simulator)
    done = faxws("send", "--to", "+1 555 0100", str(pdf), *OPTIONS, env=env)
    assert done.returncode == 0, done.stderr
    [job] = faxws_simulator.jobs
    assert job.operation == "SendFaxEx"
    assert job.details is not None
    got = {name: getattr(job.details, name) for name in ("sender_name", "sender_company")}
    got.update(cover_subject=job.details.cover_subject, resolution=job.details.resolution)
    assert got == {
        "sender_name": "Ada",
        "sender_company": "ACME",
        "cover_subject": "Invoice",
        "resolution": "fine",
    }
    assert (job.details.sender_csid, job.details.cover_text) == ("ACME FAX", "Please pay")
    assert job.details.job_schedule_start_date == "2020-01-01T09:00:00+01:00"
    assert job.reference_id == "inv-2041"
    assert "Reference:   inv-2041" in done.stdout.splitlines()
    sent = json.loads(
        faxws("send", "--to", "+1 555 0100", str(pdf), "--json", *OPTIONS, env=env).stdout
    )
    assert sent["reference_id"] == "inv-2041"
    # Without options: a SendFax, and no reference in the output.
    plain = json.loads(faxws("send", "--to", "+1 555 0100", str(pdf), "--json", env=env).stdout)
    assert "reference_id" not in plain
    assert faxws_simulator.jobs[-1].operation == "SendFax"


def test_a_job_option_without_reference_sends_one_made_and_shows_it(
    faxws_simulator: FaxWSSimulator, pdf: Path
) -> None:
    done = faxws(
        "send", "--to", "+1 555 0100", str(pdf), "--cover-subject", "Hi", "--json",
        env=pin_env(faxws_simulator),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)["reference_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    assert faxws_simulator.jobs[0].reference_id == made


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--start-at", "2025-06-02T08:00:00"),  # no offset
        ("--start-at", "tomorrow"),
        ("--expires-at", "2025-13-02T08:00:00+02:00"),
    ],
)
def test_a_date_without_offset_is_a_usage_error_naming_the_option(
    faxws_simulator: FaxWSSimulator, pdf: Path, flag: str, value: str
) -> None:
    message = (
        f"argument {flag}: must be an ISO 8601 date and time with an offset, "
        "e.g. 2025-06-02T08:00:00+02:00"
    )
    args = ["send", "--to", "+1 555 0100", str(pdf), flag, value]
    done = faxws(*args, env=pin_env(faxws_simulator))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"faxws send: error: {message}"
    done = faxws(*args, "--json", env=pin_env(faxws_simulator))
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"] == message
    assert faxws_simulator.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--notify-user", "u"], "--notify-user needs --notify-url"),
        (["--notify-url", "ftp://x.example/"], "--notify-url must be an http:// or https:// URL"),
        (["--wait-timeout", "5"], "--wait-timeout needs --wait"),
        (["--start-at", "2099-01-01T00:00:00Z"], "--start-at: is more than 4 days ahead"),
        (["--reference", "x" * 65], "--reference: must be printable ASCII"),
    ],
)
def test_job_option_usage_errors_name_the_option(
    faxws_simulator: FaxWSSimulator, pdf: Path, args: list[str], message: str
) -> None:
    done = faxws("send", "--to", "+1 555 0100", str(pdf), *args, env=pin_env(faxws_simulator))
    assert done.returncode == 2
    assert message in done.stderr
    assert faxws_simulator.requests == []


@pytest.mark.parametrize("extra", [[], ["--verbose"], ["--json"], ["--json", "--verbose"]])
def test_the_notify_password_comes_from_the_environment_and_is_never_shown(
    faxws_simulator: FaxWSSimulator, pdf: Path, extra: list[str]
) -> None:
    env = {**pin_env(faxws_simulator), "FAXWS_NOTIFY_PASSWORD": NOTIFY_PASSWORD}
    notify = ["--notify-url", "https://hooks.example/fax", "--notify-user", "hook"]
    done = faxws("send", "--to", "+1 555 0100", str(pdf), *notify, *extra, env=env)
    assert done.returncode == 0, done.stderr
    [job] = faxws_simulator.jobs
    assert job.details is not None
    assert (job.details.notify_destination, job.details.notify_auth_user) == (
        "https://hooks.example/fax",
        "hook",
    )
    assert job._notify_password == NOTIFY_PASSWORD  # it was sent
    assert NOTIFY_PASSWORD not in done.stdout + done.stderr
    # Nor in a failure that quotes what it was given.
    faxws_simulator.inject(
        Fault.ws_error(-1, f"bad password {NOTIFY_PASSWORD}"), operation="SendFaxEx"
    )
    done = faxws("send", "--to", "+1 555 0100", str(pdf), *notify, *extra, env=env)
    assert done.returncode == 1
    assert "bad password" in done.stdout + done.stderr
    assert NOTIFY_PASSWORD not in done.stdout + done.stderr


def test_the_notify_password_is_no_flag(pdf: Path) -> None:
    done = faxws("send", "--to", "+1 555 0100", str(pdf), "--notify-password", "x")
    assert done.returncode == 2
    assert "unrecognized arguments: --notify-password (values are not shown)" in done.stderr


def test_an_uncertain_send_says_its_reference_and_how_to_check_it(
    faxws_simulator: FaxWSSimulator, pdf: Path
) -> None:
    faxws_simulator.inject(Fault.http_status(503), operation="SendFaxEx", times=2)
    args = ["send", "--to", "+1 555 0100", str(pdf), "--reference", "inv 7", "--request-id", "u-1"]
    done = faxws(*args, env=pin_env(faxws_simulator))
    assert (done.returncode, done.stdout) == (5, "")
    assert done.stderr.splitlines() == [
        "faxws send: HTTPStatusError: HTTP 503 without a SOAP answer (request id u-1; "
        "reference id inv 7); the fax may have been delivered; do not send it again before "
        "checking with: faxws status --reference 'inv 7'"
    ]
    done = faxws(*args, "--json", env=pin_env(faxws_simulator))
    assert done.returncode == 5
    error = json.loads(done.stdout)["error"]
    assert (error["maybe_delivered"], error["reference_id"], error["check"]) == (
        True,
        "inv 7",
        "faxws status --reference 'inv 7'",
    )
    assert error["next_step"] == (
        "do not send it again before checking with: faxws status --reference 'inv 7'"
    )


@pytest.mark.parametrize("reference", [None, "inv-8"])
def test_ctrl_c_during_a_send_with_options_names_its_reference(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pdf: Path,
    reference: str | None,
) -> None:
    from faxws._http.sync_transport import HttpTransport
    from faxws.cli import main

    given: list[JobOptions] = []
    send_fax = FaxClient.send_fax

    def watched(self: FaxClient, *args: Any, options: JobOptions, **kwargs: Any) -> Any:
        given.append(options)
        return send_fax(self, *args, options=options, **kwargs)

    def interrupted(self: HttpTransport, request: Any) -> Any:
        request.written = True  # the request has gone, or part of it
        raise KeyboardInterrupt

    monkeypatch.setattr(FaxClient, "send_fax", watched)
    monkeypatch.setattr(HttpTransport, "post", interrupted)
    args = ["send", "--to", "+1 555 0100", str(pdf), "--cover-subject", "Hi", "--request-id", "i-1"]
    args += ["--base-url", "http://127.0.0.1:9", "--user-id", "u", "--pin", "1"]
    code = main(args + ([] if reference is None else ["--reference", reference]))
    _out, err = capsys.readouterr()
    [options] = given
    made = options.reference_id
    assert made is not None
    assert made == reference or re.fullmatch(r"[0-9a-f]{32}", made)
    assert code == 130
    assert err == (
        f"faxws send: interrupted (request id i-1; reference id {made}); the fax may have been "
        f"delivered; do not send it again before checking with: faxws status --reference {made}\n"
    )


def test_a_send_refused_for_sure_names_no_check(faxws_simulator: FaxWSSimulator, pdf: Path) -> None:
    faxws_simulator.inject(Fault.ws_error(-5040, "too far"), operation="SendFaxEx")
    done = faxws(
        "send", "--to", "+1 555 0100", str(pdf), "--reference", "r-9", "--json",
        env=pin_env(faxws_simulator),
    )  # fmt: skip
    error = json.loads(done.stdout)["error"]
    assert (error["maybe_delivered"], error["reference_id"]) == (False, "r-9")
    assert "check" not in error
    assert "faxws status" not in done.stderr


# -- faxws send --wait, run for real ----------------------------------------------------------


def test_wait_exits_0_when_every_fax_was_delivered(fast: FaxWSSimulator, pdf: Path) -> None:
    done = faxws(
        "send", "--to", "+1 555 0100", "--to", "+1 555 0101", str(pdf), "--wait",
        env=pin_env(fast),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert "\r" not in done.stdout  # not a terminal: plain lines
    final = lines[lines.index("Final status:") + 1 :]
    jobs = fast.jobs[0].job_ids
    assert [re.split(r"\s{2,}", line.strip())[:4] for line in final] == [
        [jobs[0], "+1 555 0100", "succeeded", "1/1 pages"],
        [jobs[1], "+1 555 0101", "succeeded", "1/1 pages"],
    ]
    assert lines[0] == "Sent 1 file(s) to 2 recipient(s)."  # the send's answer comes first


def test_wait_exits_6_when_a_fax_failed(fast: FaxWSSimulator, pdf: Path) -> None:
    args = ["send", "--to", "+1 555 0100", "--to", BUSY, str(pdf), "--wait"]
    done = faxws(*args, env=pin_env(fast))
    assert done.returncode == 6, done.stderr
    busy = fast.jobs[0].job_ids[1]
    assert done.stderr == (
        f"faxws send: the fax was sent, but 1 of 2 job(s) failed: {busy} "
        "(Failed: the line was busy)\n"
    )
    assert re.split(r"\s{2,}", done.stdout.splitlines()[-1].strip())[:5] == [
        busy,
        BUSY,
        "failed",
        "0/1 pages",
        "Failed: the line was busy",
    ]
    done = faxws(*args, "--json", env=pin_env(fast))
    assert done.returncode == 6
    data = json.loads(done.stdout)
    assert data["job_ids"] == list(fast.jobs[1].job_ids)
    assert data["wait"]["outcome"] == "failed"
    assert data["wait"]["failed"] == [fast.jobs[1].job_ids[1]]
    assert [s["status"] for s in data["wait"]["statuses"]] == ["succeeded", "failed"]


def test_wait_exits_7_when_it_times_out(fast: FaxWSSimulator, pdf: Path) -> None:
    args = ["send", "--to", NEVER_ENDS, str(pdf), "--wait", "--wait-timeout", "0.2"]
    done = faxws(*args, env=pin_env(fast))
    assert done.returncode == 7, done.stderr
    [job] = fast.jobs[0].job_ids
    assert done.stderr == (
        f"faxws send: the fax was sent, but 1 of 1 job(s) had not ended after 0.2 s; "
        f"check later with: faxws status {job}\n"
    )
    done = faxws(*args, "--json", env=pin_env(fast))
    assert done.returncode == 7
    wait = json.loads(done.stdout)["wait"]
    assert (wait["outcome"], wait["pending"]) == ("timed_out", list(fast.jobs[1].job_ids))


#: A status poll that fails, whatever way: the fax was sent all the same.
POLL_FAILURES = {
    "http-503": (Fault.http_status(503), "HTTPStatusError", "HTTP 503 without a SOAP answer"),
    "soap-server": (Fault.soap_fault("soap:Server", "busy"), "SoapFaultError",
                    "SOAP fault soap:Server: busy"),
    "soap-client": (Fault.soap_fault("soap:Client", "bad"), "SoapFaultError",
                    "SOAP fault soap:Client: bad"),
    "reset": (Fault.reset_mid_response(), "TransportError", "the connection failed after"),
    "http-401": (Fault.http_status(401), "AuthenticationError",
                 "the service rejected the credentials"),
}  # fmt: skip


@pytest.mark.parametrize("failure", list(POLL_FAILURES))
def test_wait_exits_7_when_a_poll_fails_and_both_outputs_say_so(
    fast: FaxWSSimulator, pdf: Path, failure: str
) -> None:
    """Not 5 ("may have been delivered": the fax was sent, its job ids are known) and not a
    JSON answer silent about the failure: the wait's outcome is "error", with the error, in
    --json as in the line, which says how to check."""
    fault, kind, message = POLL_FAILURES[failure]
    args = ["send", "--to", "+1 555 0100", str(pdf), "--wait", "--timeout", "2"]
    runs = []
    for extra in ([], ["--json"]):
        fast.reset()
        fast.inject(fault, operation="GetRealTimeFaxStatusEx2", times=10)
        done = faxws(*args, *extra, env=pin_env(fast))
        [job_id] = fast.jobs[0].job_ids
        runs.append(done)
        assert done.returncode == 7, done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"faxws send: the fax was sent, but waiting failed: {kind}: ")
        assert message in line
        assert line.endswith(
            f"; 1 of 1 job(s) had not ended; check later with: faxws status {job_id}"
        )
        assert "may have been delivered" not in line
    text, as_json = runs
    assert "Last status seen:" in text.stdout
    wait = json.loads(as_json.stdout)["wait"]
    assert (wait["outcome"], wait["pending"], wait["failed"]) == ("error", [job_id], [])
    error = wait["error"]
    assert error["type"] == kind
    assert error["message"] in as_json.stderr
    assert f"request id {error['request_id']}" in as_json.stderr


def test_wait_timeout_must_be_seconds_above_0(pdf: Path) -> None:
    done = faxws("send", "--to", "1", str(pdf), "--wait", "--wait-timeout", "0", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"] == (
        "argument --wait-timeout: must be a finite number of seconds > 0"
    )


class _Lines:
    """A stream read by a thread, so that waiting for a line has a time-out."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, prefix: str) -> None:
        while True:
            line = self._queue.get(timeout=30)
            assert line is not None, f"the stream ended; so far: {self.seen}"
            self.seen.append(line)
            if line.startswith(prefix):
                return

    def rest(self) -> str:
        self._thread.join(30)
        assert not self._thread.is_alive()
        while (line := self._queue.get_nowait()) is not None:
            self.seen.append(line)
        return "".join(self.seen)


def test_ctrl_c_while_waiting_says_the_fax_was_sent_and_how_to_check(
    fast: FaxWSSimulator, pdf: Path
) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "faxws", "send", "--to", NEVER_ENDS, str(pdf), "--wait"],
        env={**CLEAN_ENV, **pin_env(fast)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        out = _Lines(proc.stdout)
        try:
            out.until("Waiting up to 3600 s for 1 job(s) to end")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(60) == 130
            err = proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        text = out.rest()
    [job] = fast.jobs[0].job_ids
    assert err == (
        "faxws send: interrupted while waiting: the fax was sent; check it later with: "
        f"faxws status {job}\n"
    )
    assert f"  +1 500 555 0007  job {job}\n" in text


# -- faxws send --wait in-process, on the test's clock ----------------------------------------


class FakeTime:
    """Stands in for the ``time`` module of the wait: each sleep moves this clock by what was
    asked and the simulator's by ``step`` seconds, so each poll sees a fixed moment of the
    simulated life; the sleep numbered ``interrupt_at`` raises KeyboardInterrupt instead."""

    def __init__(self, clock: ManualClock, step: float, interrupt_at: int | None = None) -> None:
        self.now = 1000.0
        self.sleeps = 0
        self._clock, self._step, self._interrupt_at = clock, step, interrupt_at

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        if self.sleeps == self._interrupt_at:
            raise KeyboardInterrupt
        self.now += seconds
        self._clock.advance(self._step)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_in_process(
    monkeypatch: pytest.MonkeyPatch, sim: FaxWSSimulator, fake: FakeTime, *args: str
) -> int:
    import faxws.client
    from faxws.cli import main

    for key, value in pin_env(sim).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(faxws.client, "time", fake)  # the client's wait_for_delivery polls
    return main(["send", *args, "--wait"])


@pytest.fixture
def three_pages(tmp_path: Path) -> Path:
    path = tmp_path / "three.pdf"
    path.write_bytes(pdf_of(3))
    return path


def test_wait_writes_a_line_per_change_when_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stepped: tuple[FaxWSSimulator, ManualClock],
    three_pages: Path,
) -> None:
    sim, clock = stepped
    fake = FakeTime(clock, step=1.0)  # 4 simulated seconds a poll: a page takes 10
    code = run_in_process(monkeypatch, sim, fake, "--to", "+1 555 0100", str(three_pages))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = out.splitlines()
    start = lines.index(
        "Waiting up to 3600 s for 1 job(s) to end (Ctrl-C stops waiting, not the fax)..."
    )
    end = lines.index("Final status:")
    progress = lines[start + 1 : end]
    [job] = sim.jobs[0].job_ids
    assert all(line.startswith(f"  {job}  +1 555 0100  ") for line in progress)
    assert all(a != b for a, b in itertools.pairwise(progress))  # only changes
    assert len(progress) < fake.sleeps  # polls that saw no change wrote nothing
    pages = [re.search(r"(\d)/3 pages", line).group(1) for line in progress]  # type: ignore[union-attr]
    assert pages == sorted(pages)
    assert {"0", "1", "2", "3"} <= set(pages)
    assert "in progress" in progress[0]
    assert " succeeded " in progress[-1]
    assert lines[end + 1] == progress[-1]


def test_wait_on_a_terminal_rewrites_one_line(
    monkeypatch: pytest.MonkeyPatch,
    stepped: tuple[FaxWSSimulator, ManualClock],
    three_pages: Path,
) -> None:
    sim, clock = stepped
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    fake = FakeTime(clock, step=1.0)
    code = run_in_process(monkeypatch, sim, fake, "--to", "+1 555 0100", str(three_pages))
    assert code == 0
    text = terminal.getvalue()
    waiting, _, after = text.partition("(Ctrl-C stops waiting, not the fax)...\n")
    live, _, final = after.partition("Final status:\n")
    assert live.count("\r") >= 4
    assert "\n" not in live  # one line, rewritten in place
    assert "+1 555 0100: in progress 1/3" in live
    assert "+1 555 0100: succeeded 3/3" in live
    assert live.endswith("\r")  # cleared before the final lines
    assert " succeeded " in final
    assert waiting.startswith("Sent 1 file(s) to 1 recipient(s).")


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_while_waiting_in_process(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stepped: tuple[FaxWSSimulator, ManualClock],
    pdf: Path,
    as_json: bool,
) -> None:
    sim, clock = stepped
    fake = FakeTime(clock, step=1.0, interrupt_at=2)  # after one poll
    extra = ["--json"] if as_json else []
    code = run_in_process(monkeypatch, sim, fake, "--to", "+1 555 0100", str(pdf), *extra)
    out, err = capsys.readouterr()
    [job] = sim.jobs[0].job_ids
    assert code == 130
    assert err == (
        "faxws send: interrupted while waiting: the fax was sent; check it later with: "
        f"faxws status {job}\n"
    )
    if as_json:
        data: dict[str, Any] = json.loads(out)
        assert data["job_ids"] == [job]
        assert (data["wait"]["outcome"], data["wait"]["pending"]) == ("interrupted", [job])
        assert data["wait"]["statuses"][0]["status"] == "in_progress"
    else:
        assert f"  +1 555 0100  job {job}" in out
        assert out.splitlines()[-2] == "Last status seen:"


def test_ctrl_c_after_the_send_answered_keeps_its_answer(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stepped: tuple[FaxWSSimulator, ManualClock],
    pdf: Path,
) -> None:
    """Before the wait has begun: the answer is kept, and the line says how to check."""
    from faxws.cli import _wait

    sim, clock = stepped

    def interrupted(*args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(_wait, "wait", interrupted)
    code = run_in_process(
        monkeypatch, sim, FakeTime(clock, step=1.0), "--to", "+1 555 0100", str(pdf)
    )
    out, err = capsys.readouterr()
    [job] = sim.jobs[0].job_ids
    assert code == 130
    assert (
        err
        == f"faxws send: interrupted: the fax was sent; check it later with: faxws status {job}\n"
    )
    assert f"  +1 555 0100  job {job}" in out


# -- faxws report, faxws serve --time-scale, the exit codes -----------------------------------


def test_report_says_what_it_does_not_return(faxws_simulator: FaxWSSimulator) -> None:
    with FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        [job] = client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", FileType.PDF)]).job_ids
    done = faxws("report", job, env=pin_env(faxws_simulator))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [f"Report requested for job {job}.", NOT_RETURNED]
    data = json.loads(faxws("report", job, "--json", env=pin_env(faxws_simulator)).stdout)
    assert data["note"] == NOT_RETURNED
    helped = faxws("report", "--help")
    assert " ".join(helped.stdout.split()).count(NOT_RETURNED) == 1


def _serve_first_lines(*args: str, count: int) -> list[str]:
    with subprocess.Popen(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", "--quiet", *args],
        env=CLEAN_ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        out = _Lines(proc.stdout)
        try:
            for _ in range(count):
                out.until("")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        return [line.rstrip("\n") for line in out.seen]


@pytest.mark.parametrize(("args", "scale"), [([], 4.0), (["--time-scale", "1000"], 1000.0)])
def test_serve_shows_its_time_scale(args: list[str], scale: float) -> None:
    [line] = _serve_first_lines(*args, "--json", count=1)
    assert json.loads(line)["time_scale"] == scale
    lines = _serve_first_lines(*args, count=6)
    assert f"  time scale:     {scale:g} simulated seconds per second" in lines


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "fast"])
def test_serve_time_scale_must_be_a_finite_number_above_0(value: str) -> None:
    done = faxws("serve", "--time-scale", value, "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"] == (
        "argument --time-scale: must be a finite number > 0"
    )


def test_the_exit_codes_of_waiting_are_documented() -> None:
    text = faxws("send", "--help").stdout
    assert re.search(r"^  6 +send --wait: the fax was sent, but a job failed", text, re.M)
    assert re.search(r"^  7 +send --wait: the fax was sent, but a job had not ended", text, re.M)
