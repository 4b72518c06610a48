"""The `faxws` command, run for real in a subprocess against the simulator."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from faxws.pytest_plugin import SimulatorFactory
from faxws.testing import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_PIN,
    DEMO_TOKEN,
    DEMO_USER_ID,
    Fault,
    FaxWSSimulator,
)

ROOT = Path(__file__).resolve().parents[2]
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}


def faxws(
    *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faxws", *args],
        env={**CLEAN_ENV, **(env or {})},
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "letter.pdf"
    path.write_bytes(b"%PDF-1.4 cli test")
    return path


def pin_env(sim: FaxWSSimulator) -> dict[str, str]:
    return {"FAXWS_BASE_URL": sim.url, "FAXWS_USER_ID": DEMO_USER_ID, "FAXWS_PIN": DEMO_PIN}


@pytest.fixture
def fixed_ttfp_simulator(faxws_simulator_factory: SimulatorFactory) -> FaxWSSimulator:
    """A simulator answering a fixed TTFP of 30 s, as the human output below shows it."""
    return faxws_simulator_factory(ttfp=30)


def test_send_human_output(fixed_ttfp_simulator: FaxWSSimulator, pdf: Path) -> None:
    faxws_simulator = fixed_ttfp_simulator
    done = faxws(
        "send",
        "--to",
        "+1 555 0100",
        "--name",
        "Ada",
        "--to",
        "+1 555 0101",
        str(pdf),
        env=pin_env(faxws_simulator),
    )
    assert done.returncode == 0, done.stderr
    [job] = faxws_simulator.jobs
    [request] = faxws_simulator.requests
    request_id = request.header("x-ch-request-id")
    assert request_id is not None
    assert uuid.UUID(request_id).version == 4  # chosen by the CLI, since none was given
    assert job.request_id == request_id
    assert len(job.job_ids) == 2
    lines = done.stdout.splitlines()
    assert lines[:-1] == [
        "Sent 1 file(s) to 2 recipient(s).",
        f"  +1 555 0100  job {job.job_ids[0]}",
        f"  +1 555 0101  job {job.job_ids[1]}",
        "TTFP:        30 s",
        f"Request id:  {request_id}",
    ]
    # The simulator does not record the activity ids it answers with: only their form is known.
    assert re.fullmatch(r"Activity id: [0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", lines[-1])
    assert job.recipients[0].recip_name == "Ada"
    assert job.files[0].data == b"%PDF-1.4 cli test"
    assert job.files[0].file_type == 101
    assert done.stderr == ""


def test_send_human_output_with_a_given_request_id(
    fixed_ttfp_simulator: FaxWSSimulator, pdf: Path
) -> None:
    faxws_simulator = fixed_ttfp_simulator
    done = faxws(
        "send",
        "--to",
        "+1 555 0100",
        str(pdf),
        "--request-id",
        "cli-1",
        env=pin_env(faxws_simulator),
    )
    assert done.returncode == 0, done.stderr
    [job] = faxws_simulator.jobs
    assert faxws_simulator.requests[0].header("x-ch-request-id") == "cli-1"
    assert done.stdout.splitlines()[1:4] == [
        f"  +1 555 0100  job {job.job_ids[0]}",
        "TTFP:        30 s",
        "Request id:  cli-1",
    ]


def test_send_json_and_report_json(faxws_simulator: FaxWSSimulator, pdf: Path) -> None:
    env = pin_env(faxws_simulator)
    sent = json.loads(faxws("send", "--to", "+1 555 0100", str(pdf), "--json", env=env).stdout)
    assert sent["job_ids"] == list(faxws_simulator.jobs[0].job_ids)
    assert sent["files"] == [{"name": "letter.pdf", "size": 17, "file_type": 101}]
    done = faxws(
        "report",
        sent["job_ids"][0],
        "--recipient-type",
        "1",
        "--address",
        "ops@example.com",
        "--json",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["job_id"], report["recipient_type"], report["recip_address"]) == (
        sent["job_ids"][0],
        1,
        "ops@example.com",
    )
    assert report["request_id"] == faxws_simulator.requests[-1].header("x-ch-request-id")


def test_flags_win_over_environment(faxws_simulator: FaxWSSimulator, pdf: Path) -> None:
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "nobody", "FAXWS_PIN": "wrong"}
    done = faxws(
        "send",
        "--base-url",
        faxws_simulator.url,
        "--user-id",
        DEMO_USER_ID,
        "--token",
        DEMO_TOKEN,
        "--to",
        "+1 555 0100",
        str(pdf),
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert faxws_simulator.jobs[0].auth_mode == "oauth2"


def test_client_credentials_from_the_environment(
    faxws_simulator: FaxWSSimulator, pdf: Path
) -> None:
    env = {
        "FAXWS_BASE_URL": faxws_simulator.url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_TOKEN_URL": faxws_simulator.token_url,
        "FAXWS_CLIENT_ID": DEMO_CLIENT_ID,
        "FAXWS_CLIENT_SECRET": DEMO_CLIENT_SECRET,
    }
    done = faxws("send", "--to", "+1 555 0100", str(pdf), "-v", env=env)
    assert done.returncode == 0, done.stderr
    assert faxws_simulator.token_requests == 1
    assert DEMO_CLIENT_SECRET not in done.stdout + done.stderr
    assert "SendFax request_id=" in done.stderr  # --verbose logs the exchange


def test_service_error_exits_1(faxws_simulator: FaxWSSimulator) -> None:
    done = faxws("report", "SIM404", "--request-id", "cli-404", env=pin_env(faxws_simulator))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == (
        "faxws report: ServiceError: service error -5019: Invalid Job ID "
        "(HTTP 200, request id cli-404)"
    )


@pytest.mark.parametrize(
    ("fault_code", "code", "maybe"), [("soap:Client", 1, False), ("soap:Server", 5, True)]
)
def test_a_fault_exits_1_when_refused_and_5_when_the_fax_may_have_gone(
    faxws_simulator: FaxWSSimulator, pdf: Path, fault_code: str, code: int, maybe: bool
) -> None:
    faxws_simulator.inject(Fault.soap_fault(fault_code, "down"), operation="SendFax")
    done = faxws("send", "--to", "+1 555 0100", str(pdf), "--json", env=pin_env(faxws_simulator))
    assert done.returncode == code
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["fault_code"], error["status_code"]) == (
        "SoapFaultError",
        fault_code,
        500,
    )
    assert (error["maybe_delivered"], error["exit_code"]) == (maybe, code)
    [line] = done.stderr.splitlines()
    assert ("; the fax may have been delivered; " in line) is maybe
    assert line.endswith("; the fax was not sent") is not maybe


def test_bad_input_exits_2_and_sends_nothing(
    faxws_simulator: FaxWSSimulator, tmp_path: Path
) -> None:
    odd = tmp_path / "notes.xyz"
    odd.write_bytes(b"x")
    done = faxws("send", "--to", "+1 555 0100", str(odd), env=pin_env(faxws_simulator))
    assert done.returncode == 2
    assert done.stderr == (
        "faxws send: BadInputError: --file-type: cannot infer the type of 'notes.xyz' from its "
        "extension '.xyz'; pass --file-type\n"
    )
    assert faxws_simulator.requests == []


@pytest.mark.parametrize(
    "args",
    [
        ["send", "x.pdf"],  # no --to
        ["report"],  # no job id
        ["frobnicate"],
    ],
)
def test_bad_usage_exits_2(args: list[str]) -> None:
    done = faxws(*args)
    assert done.returncode == 2
    assert "usage:" in done.stderr


def test_missing_settings_and_conflicting_credentials_exit_2(pdf: Path) -> None:
    done = faxws("report", "J1", "--user-id", "u", "--pin", "1")
    assert (done.returncode, "no service URL" in done.stderr) == (2, True)
    done = faxws(
        "report",
        "J1",
        "--base-url",
        "http://127.0.0.1:9",
        "--user-id",
        "u",
        "--pin",
        "1",
        "--token",
        "t",
    )
    assert (done.returncode, "exactly one kind of credential" in done.stderr) == (2, True)


@pytest.mark.parametrize("empty", ["FAXWS_PIN", "FAXWS_CLIENT_SECRET", "FAXWS_TOKEN_URL"])
def test_an_empty_variable_is_no_credential(faxws_simulator: FaxWSSimulator, empty: str) -> None:
    env = {
        "FAXWS_BASE_URL": faxws_simulator.url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_TOKEN": DEMO_TOKEN,
        empty: "",
    }
    done = faxws("report", "SIM1", "--json", env=env)
    # The token is the one credential: the empty variable is as if unset.
    assert done.returncode == 1, done.stderr  # the service answered: no such job
    assert json.loads(done.stdout)["error"]["type"] == "ServiceError"
    assert faxws_simulator.requests[0].header("authorization") == f"Bearer {DEMO_TOKEN}"


def test_an_empty_token_is_no_credential_either(faxws_simulator: FaxWSSimulator) -> None:
    env = {**pin_env(faxws_simulator), "FAXWS_TOKEN": "", "FAXWS_CLIENT_ID": ""}
    done = faxws("report", "SIM1", env=env)
    assert done.returncode == 1, done.stderr
    assert "Invalid Job ID" in done.stderr
    assert faxws_simulator.requests[0].header("authorization") is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"FAXWS_PIN": ""},
            "faxws report: error: give exactly one kind of credential: a token, a PIN, or the "
            "client credentials (--token-url, --client-id, --client-secret) (FAXWS_PIN is set "
            "but empty, and an empty variable counts as unset)",
        ),
        (
            {"FAXWS_PIN": "", "FAXWS_TOKEN": ""},
            "faxws report: error: give exactly one kind of credential: a token, a PIN, or the "
            "client credentials (--token-url, --client-id, --client-secret) (FAXWS_TOKEN and "
            "FAXWS_PIN are set but empty, and an empty variable counts as unset)",
        ),
        (
            {"FAXWS_BASE_URL": "", "FAXWS_PIN": "1234"},
            "faxws report: error: no service URL: pass --base-url or set FAXWS_BASE_URL "
            "(FAXWS_BASE_URL is set but empty, and an empty variable counts as unset)",
        ),
        (
            {"FAXWS_USER_ID": "", "FAXWS_PIN": "1234"},
            "faxws report: error: no user id: pass --user-id or set FAXWS_USER_ID "
            "(FAXWS_USER_ID is set but empty, and an empty variable counts as unset)",
        ),
    ],
    ids=["pin", "pin-and-token", "base-url", "user-id"],
)
def test_when_nothing_else_is_given_the_message_names_the_empty_variable(
    env: dict[str, str], message: str
) -> None:
    done = faxws(
        "report", "J1", env={"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", **env}
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [message]


#: Every setting's variable, by how it is tried: blank while the others are complete.
_SETTINGS = ["FAXWS_TOKEN", "FAXWS_PIN", "FAXWS_TOKEN_URL", "FAXWS_CLIENT_ID"]
_SETTINGS += ["FAXWS_CLIENT_SECRET", "FAXWS_SCOPE", "FAXWS_NOTIFY_PASSWORD"]


@pytest.mark.parametrize("value", ["", " ", "\t  "], ids=["empty", "space", "blanks"])
@pytest.mark.parametrize("variable", _SETTINGS)
def test_an_empty_or_blank_variable_is_as_if_unset(
    faxws_simulator: FaxWSSimulator, variable: str, value: str
) -> None:
    """``FAXWS_PIN=" "`` is no credential, no scope, no secret to mask: a blank value masked
    would turn every space of every message into ***."""
    env = {**pin_env(faxws_simulator), variable: value}
    if variable == "FAXWS_PIN":
        env["FAXWS_TOKEN"] = DEMO_TOKEN
    done = faxws("report", "SIM1", "--request-id", "r-blank", env=env)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr == (
        "faxws report: ServiceError: service error -5019: Invalid Job ID (HTTP 200, request id "
        "r-blank)\n"
    )
    expected = f"Bearer {DEMO_TOKEN}" if variable == "FAXWS_PIN" else None
    assert faxws_simulator.requests[0].header("authorization") == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"FAXWS_PIN": " "},
            "faxws report: error: give exactly one kind of credential: a token, a PIN, or the "
            "client credentials (--token-url, --client-id, --client-secret) (FAXWS_PIN is set "
            "to spaces only, and an empty or blank variable counts as unset)",
        ),
        (
            {"FAXWS_PIN": "", "FAXWS_TOKEN": "\t"},
            "faxws report: error: give exactly one kind of credential: a token, a PIN, or the "
            "client credentials (--token-url, --client-id, --client-secret) (FAXWS_PIN is set "
            "but empty and FAXWS_TOKEN is set to spaces only, and an empty or blank variable "
            "counts as unset)",
        ),
        (
            {"FAXWS_BASE_URL": "  ", "FAXWS_PIN": "1234"},
            "faxws report: error: no service URL: pass --base-url or set FAXWS_BASE_URL "
            "(FAXWS_BASE_URL is set to spaces only, and an empty or blank variable counts as "
            "unset)",
        ),
        (
            {"FAXWS_USER_ID": " ", "FAXWS_PIN": "1234"},
            "faxws report: error: no user id: pass --user-id or set FAXWS_USER_ID "
            "(FAXWS_USER_ID is set to spaces only, and an empty or blank variable counts as "
            "unset)",
        ),
        (
            {"FAXWS_TOKEN_URL": "https://a.example/t", "FAXWS_CLIENT_ID": "c",
             "FAXWS_CLIENT_SECRET": " "},
            "faxws report: error: client credentials need --client-secret as well "
            "(FAXWS_CLIENT_SECRET is set to spaces only, and an empty or blank variable counts "
            "as unset)",
        ),
    ],
    ids=["pin", "pin-and-token", "base-url", "user-id", "client-secret"],
)  # fmt: skip
def test_when_nothing_else_is_given_the_message_names_the_blank_variable(
    env: dict[str, str], message: str
) -> None:
    done = faxws(
        "report", "J1", env={"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", **env}
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [message]


def test_authentication_failure_exits_3(faxws_simulator: FaxWSSimulator) -> None:
    env = {**pin_env(faxws_simulator), "FAXWS_PIN": "PIN-NOT-RIGHT-123"}
    done = faxws("report", "J1", env=env)
    assert done.returncode == 3
    assert "AuthenticationError" in done.stderr
    assert "PIN-NOT-RIGHT-123" not in done.stderr + done.stdout


def test_transport_failure_exits_4(refused_port: int) -> None:
    done = faxws(
        "report",
        "J1",
        "--base-url",
        f"http://127.0.0.1:{refused_port}",
        "--user-id",
        "u",
        "--pin",
        "1",
        "--timeout",
        "2",
    )
    assert done.returncode == 4
    assert "ConnectError" in done.stderr


@pytest.mark.parametrize("command", [[], ["send"], ["report"], ["serve"], ["validate"]])
def test_help_everywhere_with_an_example(command: list[str]) -> None:
    done = faxws(*command, "--help")
    assert done.returncode == 0
    assert "example:" in done.stdout
    assert "usage: faxws" in done.stdout


class Lines:
    """A stream read line by line by a thread, so that waiting for a line has a time-out."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._seen: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, timeout: float = 30.0) -> str:
        """The next line; fails after ``timeout`` seconds or at the end of the stream."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout} s; so far: {self._seen}") from None
        if line is None:
            self._queue.put(None)
            raise AssertionError(f"the stream ended; so far: {self._seen}")
        self._seen.append(line)
        return line

    def join(self, timeout: float = 30.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the stream did not end"

    def rest(self, timeout: float = 30.0) -> str:
        """Everything up to the end of the stream (the process must be ending)."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the stream did not end"
        while (line := self._queue.get_nowait()) is not None:
            self._seen.append(line)
        self._queue.put(None)
        return "".join(self._seen)


@contextmanager
def serve(
    *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], Lines, Lines]]:
    """``faxws serve --port 0 ARGS``, with its stdout and stderr read by threads; killed and
    reaped at the end whatever happened."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**CLEAN_ENV, **(env or {})},
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        yield proc, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        out.join()  # the readers end with the process, before their pipes are closed
        err.join()
        proc.stdout.close()
        proc.stderr.close()


def test_serve_prints_url_and_stops_cleanly_on_sigint() -> None:
    from faxws import FaxClient, FaxFile

    with serve("--json") as (proc, out, err):
        info = json.loads(out.next())
        assert info["url"].startswith("http://127.0.0.1:")
        assert (info["user_id"], info["pin"]) == (DEMO_USER_ID, DEMO_PIN)
        with FaxClient(info["url"], user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert "received 1 request(s), 1 job(s)" in err.rest()


def test_serve_does_not_echo_a_callers_own_secrets() -> None:
    with serve("--user-id", "mbx9", "--pin", "MY-OWN-PIN-77", "--token", "MY-OWN-TOKEN-88") as (
        proc,
        out,
        err,
    ):
        text = "".join(out.next() for _ in range(7))
        assert "mbx9" in text
        assert "MY-OWN-PIN-77" not in text
        assert "MY-OWN-TOKEN-88" not in text
        proc.terminate()
        assert proc.wait(30) == 0
        assert "MY-OWN" not in out.rest() + err.rest()


@pytest.mark.parametrize("strict", [False, True])
def test_serve_strict_refuses_what_the_default_serves(strict: bool) -> None:
    import requests

    body = (
        '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap='
        '"http://schemas.xmlsoap.org/soap/envelope/"><soap:Header/><soap:Body>'
        f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID>'
        f"<strPIN>{DEMO_PIN}</strPIN><JobId>J</JobId><RecipientType>0</RecipientType>"
        "<RecipAddress/></GetFaxBroadcastReport></soap:Body></soap:Envelope>"
    )
    headers = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '""'}
    with serve("--json", *(["--strict"] if strict else [])) as (proc, out, _err):
        info = json.loads(out.next())
        assert info["strict"] is strict
        answer = requests.post(f"{info['url']}/fax/v5", data=body, headers=headers, timeout=30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    assert answer.status_code == (500 if strict else 200)
    assert (b"the request differs from the contract's form" in answer.content) is strict


def test_serve_beyond_loopback_prints_the_token_its_inbox_and_api_need() -> None:
    import requests

    with serve("--json", "--host", "0.0.0.0") as (proc, out, _err):  # noqa: S104
        info = json.loads(out.next())
        token = info["api_token"]
        assert isinstance(token, str)
        assert len(token) >= 20
        assert info["inbox_url"].endswith(f"/?token={token}")
        local = "http://127.0.0.1:" + info["url"].rsplit(":", 1)[1]
        assert requests.get(f"{local}/api/jobs", timeout=30).status_code == 401
        assert requests.get(f"{local}/api/jobs?token={token}", timeout=30).json()["total"] == 0
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0


def test_serve_on_loopback_needs_no_token() -> None:
    with serve("--json") as (proc, out, _err):
        info = json.loads(out.next())
        assert info["api_token"] is None
        assert info["inbox_url"] == info["url"] + "/"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0


def test_serve_logs_one_line_per_request_and_never_a_secret() -> None:
    import requests

    from faxws import FaxClient, FaxFile

    pin, token = "PIN-LOGGED-NEVER-41", "TOKEN-LOGGED-NEVER-42"
    with serve("--json", "--user-id", "mbx9", "--pin", pin, "--token", token) as (
        proc,
        out,
        err,
    ):
        url = json.loads(out.next())["url"]
        with FaxClient(url, user_id="mbx9", pin=pin) as client:
            client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)], request_id="r-1")
        with FaxClient(url, user_id="mbx9", token=token) as client:
            client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)], request_id=token)
        requests.get(f"{url}/api/jobs?token={token}", timeout=30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        text = err.rest()
    lines = [line.split(" ", 2)[2] for line in text.splitlines() if " /" in line]
    assert lines == [
        "POST /fax/v5 SendFax 200 request_id=r-1",
        "POST /fax/v5 SendFax 200 request_id=***",
        "GET /api/jobs - 200 request_id=-",
    ]
    assert "NEVER" not in text


CLIENT_VARIABLES = {
    "FAXWS_BASE_URL": "https://fax.example.com",
    "FAXWS_USER_ID": "mbx1234567890",
    "FAXWS_TOKEN": "ENV-TOKEN-MARKER-31",
    "FAXWS_PIN": "ENV-PIN-MARKER-32",
    "FAXWS_TOKEN_URL": "https://login.example.com/connect/token",
    "FAXWS_CLIENT_ID": "env-client-id",
    "FAXWS_CLIENT_SECRET": "ENV-SECRET-MARKER-33",
    "FAXWS_SCOPE": "FaxWS",
}


def test_serve_starts_with_the_client_variables_exported() -> None:
    from faxws import FaxClient, FaxFile
    from faxws.cli import ENV

    assert set(CLIENT_VARIABLES) == set(ENV.values())  # every variable the client reads
    with serve("--json", env=CLIENT_VARIABLES) as (proc, out, err):
        info = json.loads(out.next())
        assert info["user_id"] == DEMO_USER_ID  # the client's variables are not its account
        with FaxClient(info["url"], user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        text = json.dumps(info) + out.rest() + err.rest()
    assert "received 1 request(s), 1 job(s)" in text
    assert "MARKER" not in text


def test_make_demo_script_runs_end_to_end() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=CLEAN_ENV,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "job ids:    SIM00000001, SIM00000002" in out
    assert "Authorization: Bearer ***" in out
    assert "file 1: type 101" in out
    assert out.rstrip().endswith("Demo complete.")
    assert DEMO_PIN not in out.replace("0000000", "")  # the PIN is never shown


@pytest.mark.parametrize("shell", [["bash", "-euo", "pipefail"], ["sh", "-eu"]], ids=["bash", "sh"])
def test_the_commands_make_demo_prints_can_be_pasted(tmp_path: Path, shell: list[str]) -> None:
    """Each command the demo shows, pasted into bash or a POSIX sh (dash) as it is, runs: in a
    folder with the demo's hello.pdf, with the settings it names, against a simulator."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import demo
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=CLEAN_ENV,
    )
    assert done.returncode == 0, done.stderr
    commands = [line[2:] for line in done.stdout.splitlines() if line.startswith("$ ")]
    assert [c.split()[:2] for c in commands] == [["faxws", "send"], ["faxws", "report"]]
    (tmp_path / "hello.pdf").write_bytes(demo.sample_pdf())
    bin_dir = os.path.dirname(sys.executable)
    with FaxWSSimulator() as sim:
        env = {**CLEAN_ENV, **pin_env(sim), "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
        for command in commands:
            pasted = subprocess.run(
                [*shell, "-c", command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert pasted.returncode == 0, (command, pasted.stderr)
        [job] = sim.jobs
    assert [(r.recip_fax_number, r.recip_name) for r in job.recipients] == [
        ("+1 555 0100", "Ada"),
        ("+1 555 0101", "Grace"),
    ]
    assert job.files[0].data == demo.sample_pdf()
    # The settings it says to export, for one's own simulator once the demo's is gone.
    [export] = [line.strip() for line in done.stdout.splitlines() if line.startswith("  export ")]
    shown = subprocess.run(
        [*shell, "-c", export + '; printf "%s %s" "$FAXWS_BASE_URL" "$FAXWS_USER_ID"'],
        env=CLEAN_ENV, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shown.stdout == f"http://127.0.0.1:8080 {DEMO_USER_ID}", shown.stderr
