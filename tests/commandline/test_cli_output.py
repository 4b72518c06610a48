"""`faxws` when its output cannot be written: a full disk, a closed pipe, a closed descriptor,
an encoding that cannot hold the text. Once a request may have reached the service, the
command must not end as if nothing was sent: it exits 5 with one line on stderr naming the
request id (and the job ids when known), never a traceback. Run for real in a subprocess
against the simulator, since what fails is the process's own standard output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator

#: Standard output block-buffered, as users have it: what a failed write leaves in the buffer
#: is flushed again at exit (PYTHONUNBUFFERED, which a CI may set, would hide that).
CLEAN_ENV = {
    k: v for k, v in os.environ.items() if not k.startswith("FAXWS_") and k != "PYTHONUNBUFFERED"
}
EXIT_MAYBE_SENT = 5
#: What Python prints when it cannot flush a stream at exit (and exits 120 instead).
NOISE = ("Traceback", "Exception ignored", "Error in sys.excepthook")


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stderr.splitlines()


def faxws(*args: str, env: dict[str, str], stdout: str = "pipe", stderr: str = "pipe") -> Ran:
    """Runs ``faxws ARGS`` with standard output (and error) of the kind named: ``pipe`` (read
    here), ``full`` (/dev/full: every write fails with ENOSPC), ``closed-pipe`` (a pipe whose
    reader is gone: EPIPE) or ``closed`` (no descriptor at all)."""
    command = [sys.executable, "-m", "faxws", *args]
    with ExitStack() as stack:

        def target(kind: str) -> Any:
            if kind == "pipe":
                return subprocess.PIPE
            if kind == "full":
                return stack.enter_context(open("/dev/full", "wb"))
            if kind == "closed-pipe":
                read, write = os.pipe()
                os.close(read)
                stack.callback(os.close, write)
                return write
            raise AssertionError(kind)

        if stdout == "closed":
            command = ["sh", "-c", 'exec "$@" >&-', "sh", *command]
            out = None
        else:
            out = target(stdout)
        done = subprocess.run(
            command,
            stdout=out,
            stderr=target(stderr),
            env={**CLEAN_ENV, **env},
            timeout=60,
            check=False,
        )
    return Ran(
        done.returncode,
        (done.stdout or b"").decode("utf-8"),
        (done.stderr or b"").decode("utf-8"),
    )


def pin_env(url: str) -> dict[str, str]:
    return {"FAXWS_BASE_URL": url, "FAXWS_USER_ID": DEMO_USER_ID, "FAXWS_PIN": DEMO_PIN}


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "letter.pdf"
    path.write_bytes(b"%PDF-1.4 output test")
    return path


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator() as simulator:
        yield simulator


def assert_quiet(ran: Ran) -> None:
    for noise in NOISE:
        assert noise not in ran.stderr + ran.stdout, ran.stderr


BROKEN = ["full", "closed-pipe", "closed"]
MODES = {"text": [], "json": ["--json"]}


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("stdout", BROKEN)
def test_a_sent_fax_whose_outcome_cannot_be_written_exits_5(
    sim: FaxWSSimulator, pdf: Path, stdout: str, mode: str, buffered: bool
) -> None:
    ran = faxws(
        "send",
        "--to",
        "+1 555 0100",
        "--name",
        "Zoë",
        "--to",
        "+1 555 0101",
        str(pdf),
        *MODES[mode],
        env={**pin_env(sim.url), **({} if buffered else {"PYTHONUNBUFFERED": "1"})},
        stdout=stdout,
    )
    [job] = sim.jobs  # the fax went out, exactly once
    request_id = sim.requests[-1].header("x-ch-request-id")
    assert ran.code == EXIT_MAYBE_SENT, ran.stderr
    [line] = ran.lines
    assert line.startswith("faxws send: the fax was sent, but its outcome could not be written")
    assert f"job ids {job.job_ids[0]}, {job.job_ids[1]}; request id {request_id})" in line
    assert "do not send it again" in line
    assert_quiet(ran)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("stdout", BROKEN)
def test_a_report_whose_outcome_cannot_be_written_exits_5(
    sim: FaxWSSimulator, stdout: str, mode: str
) -> None:
    from faxws import FaxClient, FaxFile

    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        [job_id] = client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)]).job_ids
    ran = faxws(
        "report",
        job_id,
        "--recipient-type",
        "1",
        "--address",
        "zoë@example.com",
        "--request-id",
        "report-out-1",
        *MODES[mode],
        env=pin_env(sim.url),
        stdout=stdout,
    )
    assert ran.code == EXIT_MAYBE_SENT, ran.stderr
    assert sim.requests_for("GetFaxBroadcastReport")  # it reached the service
    assert ran.lines == [
        "faxws report: the report was requested, but its outcome could not be written to "
        f"standard output ({reason(stdout)}) (job id {job_id}; request id report-out-1)"
    ]
    assert_quiet(ran)


def reason(kind: str) -> str:
    return {
        "full": os.strerror(28),  # ENOSPC
        "closed-pipe": os.strerror(32),  # EPIPE
        "closed": os.strerror(9),  # EBADF
    }[kind]


MAYBE_DELIVERED = [
    pytest.param(Fault.http_status(503), "SendFax", id="send-503"),
    pytest.param(Fault.soap_fault("soap:Server", "down"), "SendFax", id="send-server-fault"),
    pytest.param(Fault.close_after_read(), "SendFax", id="send-closed-after-read"),
    pytest.param(Fault.soap_fault("soap:Server", "down"), "GetFaxBroadcastReport", id="report"),
]


@pytest.mark.parametrize("stdout", BROKEN)
@pytest.mark.parametrize(("fault", "operation"), MAYBE_DELIVERED)
def test_an_error_that_may_have_been_delivered_and_cannot_be_written_exits_5(
    sim: FaxWSSimulator, pdf: Path, fault: Fault, operation: str, stdout: str
) -> None:
    sim.inject(fault, operation=operation)
    args = (
        ["send", "--to", "+1 555 0100", str(pdf)]
        if operation == "SendFax"
        else ["report", "SIM00000001", "--recipient-type", "1", "--address", "a@example.com"]
    )
    ran = faxws(*args, "--json", "--request-id", "maybe-1", env=pin_env(sim.url), stdout=stdout)
    assert sim.requests_for(operation)
    assert ran.code == EXIT_MAYBE_SENT, ran.stderr
    [line] = ran.lines
    command = "send" if operation == "SendFax" else "report"
    maybe = (
        "the fax may have been delivered"
        if command == "send"
        else "the request may have reached the service"
    )
    assert line.startswith(f"faxws {command}: ")
    assert (
        f"; {maybe}, but its outcome could not be written to standard output ({reason(stdout)})"
        in line
    )
    assert "request id maybe-1)" in line
    if command == "send":
        assert line.endswith(
            "; do not send it again before checking: ask the service about its request id"
        )
    assert_quiet(ran)


def test_an_error_that_may_have_been_delivered_with_stderr_failing_exits_5(
    sim: FaxWSSimulator, pdf: Path
) -> None:
    """The only place the error goes in text mode is stderr: when it cannot be written, the
    exit code still says the fax may have gone."""
    sim.inject(Fault.http_status(503), operation="SendFax")
    ran = faxws("send", "--to", "+1 555 0100", str(pdf), env=pin_env(sim.url), stderr="full")
    assert sim.requests_for("SendFax")
    assert (ran.code, ran.stdout) == (EXIT_MAYBE_SENT, "")


@pytest.mark.parametrize("stderr", ["full", "closed-pipe"])
def test_a_sent_fax_whose_log_cannot_be_written_exits_5(
    sim: FaxWSSimulator, pdf: Path, stderr: str
) -> None:
    ran = faxws("send", "--to", "+1 555 0100", str(pdf), "-v", env=pin_env(sim.url), stderr=stderr)
    [job] = sim.jobs
    assert ran.code == EXIT_MAYBE_SENT
    assert f"  +1 555 0100  job {job.job_ids[0]}" in ran.stdout.splitlines()  # the outcome is out


@pytest.mark.parametrize("stdout", ["full", "closed-pipe"])
@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(["send", "--to", "+1 555 0100", "FILE"], 1, id="refused"),
        pytest.param(["send", "--to", "+1 555 0100", "FILE", "--pin"], 2, id="usage"),
        pytest.param(["send", "--to", "+1 555 0100", "nowhere.pdf"], 2, id="bad-input"),
    ],
)
def test_an_error_of_a_request_that_was_not_delivered_keeps_its_code(
    sim: FaxWSSimulator, pdf: Path, args: list[str], code: int, stdout: str
) -> None:
    """Nothing was delivered: the exit code stays what the error is, and the line says the
    output could not be written."""
    sim.inject(Fault.soap_fault("soap:Client", "refused"), operation="SendFax")
    args = [str(pdf) if a == "FILE" else a for a in args]
    ran = faxws(*args, "--json", env=pin_env(sim.url), stdout=stdout)
    assert ran.code == code, ran.stderr
    assert ran.lines[-1].endswith(
        f"; the output could not be written to standard output ({reason(stdout)})"
    )
    assert len([line for line in ran.lines if line.startswith("faxws send: ")]) == 1
    assert len(sim.jobs) == 0
    assert_quiet(ran)


@pytest.mark.parametrize("stdout", ["full", "closed-pipe", "closed"])
@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"], ["send", "--help"], ["validate", "REQUEST"]],
    ids=["help", "version", "send-help", "validate"],
)
def test_commands_that_send_nothing_fail_in_one_line(
    tmp_path: Path, args: list[str], stdout: str
) -> None:
    request = tmp_path / "request.xml"
    request.write_text("<not-soap/>")
    args = [str(request) if a == "REQUEST" else a for a in args]
    ran = faxws(*args, env={}, stdout=stdout)
    assert ran.code == 1
    [line] = ran.lines
    assert line.endswith(f"the output could not be written to standard output ({reason(stdout)})")
    assert_quiet(ran)


def test_output_the_stream_cannot_encode_is_escaped(sim: FaxWSSimulator) -> None:
    """An ASCII stdout (a C locale, PYTHONIOENCODING=ascii) gets backslash escapes for what it
    cannot hold; a UTF-8 one gets the text unchanged."""
    from faxws import FaxClient, FaxFile

    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        [job_id] = client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)]).job_ids
    args = ["report", job_id, "--recipient-type", "1", "--address", "zoë@example.com"]
    ascii_ = faxws(*args, env={**pin_env(sim.url), "PYTHONIOENCODING": "ascii"})
    assert (ascii_.code, ascii_.stderr) == (0, "")
    assert f"Report requested for job {job_id} for zo\\xeb@example.com (type 1)." in ascii_.stdout
    utf8 = faxws(*args, env={**pin_env(sim.url), "PYTHONIOENCODING": "utf-8"})
    assert (utf8.code, utf8.stderr) == (0, "")
    assert f"Report requested for job {job_id} for zoë@example.com (type 1)." in utf8.stdout


@pytest.mark.parametrize("mode", list(MODES))
def test_job_ids_the_stream_cannot_encode_are_escaped(
    capture_server: Any, pdf: Path, mode: str
) -> None:
    from conftest import http_reply, send_response

    server = capture_server(lambda raw: http_reply(send_response(["JOB-É1"])))
    ran = faxws(
        "send",
        "--to",
        "+1 555 0100",
        str(pdf),
        *MODES[mode],
        env={**pin_env(server.url), "PYTHONIOENCODING": "ascii"},
    )
    assert (ran.code, ran.stderr) == (0, "")
    if mode == "json":
        assert json.loads(ran.stdout)["job_ids"] == ["JOB-É1"]
    else:
        assert "  +1 555 0100  job JOB-\\xc91" in ran.stdout.splitlines()


def test_a_failure_after_the_answer_still_says_the_fax_was_sent(
    sim: FaxWSSimulator,
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Whatever fails once the service has answered (here: closing the client) ends with
    exit 5 and the job ids, not as an unexpected failure."""
    from faxws import cli
    from faxws.client import FaxClient

    close = FaxClient.close

    def failing_close(self: FaxClient) -> None:
        close(self)
        raise RuntimeError("cannot close")

    monkeypatch.setattr(FaxClient, "close", failing_close)
    for name, value in pin_env(sim.url).items():
        monkeypatch.setenv(name, value)
    code = cli.main(["send", "--to", "+1 555 0100", str(pdf), "--json", "--request-id", "r-9"])
    out, err = capsys.readouterr()
    [job] = sim.jobs
    assert code == EXIT_MAYBE_SENT
    assert json.loads(out)["job_ids"] == list(job.job_ids)  # what was sent is still shown
    assert err.splitlines() == [
        "faxws send: the fax was sent, but the command then failed (RuntimeError: cannot "
        f"close) (job id {job.job_ids[0]}; request id r-9); do not send it again; check it "
        f"with: faxws status {job.job_ids[0]}"
    ]


def test_validate_documents_keeps_its_place_in_faxws_validation(tmp_path: Path) -> None:
    """``faxws.validation.validate_documents`` is the command's own function, and writes to
    the streams it is given."""
    import io

    from faxws import validation
    from faxws.cli import _validate

    bad = tmp_path / "bad.xml"
    bad.write_text('<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>u</UserID></x>')
    good = Path(__file__).resolve().parents[1] / "golden" / "report_pin.xml"
    out, err = io.StringIO(), io.StringIO()
    assert validation.validate_documents is _validate.validate_documents
    code = validation.validate_documents([str(good), str(bad)], as_json=False, out=out, err=err)
    assert code == 1
    assert out.getvalue().splitlines()[0] == f"{good}: valid"
    assert out.getvalue().splitlines()[1].startswith(f"{bad}:1: /: not well-formed XML: ")
    assert err.getvalue() == ""
