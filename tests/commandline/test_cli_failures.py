"""One description of each failure: whatever `--json` says of a failure (the exit code, maybe
delivered, the request id, the reference, what to do next, the command that checks), the line
on stderr says too, for every command that sends a request and every kind of failure. And
the exit codes by meaning, documented once.

Run in-process against the simulator, each failure twice (text, then --json) with one request
id, so that the two runs' lines on stderr must be the same."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from faxws import FaxClient
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator

SEND = ["send", "--to", "+1 555 0100", "PDF"]
#: Every command that sends a request to the service, with the client call it makes.
COMMANDS = {
    "send": (SEND, "send_fax"),
    "send-reference": ([*SEND, "--reference", "inv 7"], "send_fax"),
    "status": (["status", "SIM00000001"], "get_real_time_fax_status"),
    "status-reference": (["status", "--reference", "inv-7"], "get_status_by_reference"),
    "cancel": (["cancel", "SIM00000001"], "cancel_fax"),
    "report": (["report", "SIM00000001"], "get_fax_broadcast_report"),
}


@dataclass(frozen=True)
class Case:
    """A way to fail: a fault the simulator answers with (as often as the client tries), or
    what a client call raises; and the exit code it means."""

    fault: Fault | None
    raises: type[BaseException] | None
    code: int
    maybe: bool
    #: None: the client call raises; else the transport, once it wrote a byte or none.
    written: bool | None = None


FAILURES = {
    "http-503": Case(Fault.http_status(503), None, 5, True),
    "html-500": Case(Fault.html_500(), None, 5, True),
    "soap-server-fault": Case(Fault.soap_fault("soap:Server", "busy"), None, 5, True),
    "closed-after-read": Case(Fault.close_after_read(), None, 5, True),
    "reset": Case(Fault.reset_mid_response(), None, 5, True),
    "read-time-out": Case(Fault.delay_response(1.0), None, 5, True),
    "soap-client-fault": Case(Fault.soap_fault("soap:Client", "bad"), None, 1, False),
    "service-error": Case(Fault.ws_error(-5040, "refused"), None, 1, False),
    "http-404": Case(Fault.http_status(404), None, 1, False),
    "http-401": Case(Fault.http_status(401), None, 3, False),
    "refused-connection": Case(None, None, 4, False),
    "ctrl-c-after-a-byte": Case(None, KeyboardInterrupt, 130, True, written=True),
    "ctrl-c-before-a-byte": Case(None, KeyboardInterrupt, 130, False, written=False),
    "unexpected-while-sending": Case(None, RuntimeError, 5, True),
}


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> Run:
    from faxws import cli

    code = cli.main(args)
    out, err = capsys.readouterr()
    return Run(code, out, err)


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "letter.pdf"
    path.write_bytes(b"%PDF-1.4 failures")
    return path


def agreeing(text: Run, as_json: Run) -> tuple[str, dict[str, Any]]:
    """The failure's line and its JSON error, once checked to say the same things."""
    assert text.stdout == ""
    [line] = text.stderr.splitlines()
    assert as_json.stderr == text.stderr  # the same words, whatever stdout gets
    error: dict[str, Any] = json.loads(as_json.stdout)["error"]
    assert text.code == as_json.code == error["exit_code"]
    rid = error["request_id"]
    assert (rid is not None and f"request id {rid}" in line) or "request id" not in line
    for key in ("outcome", "next_step", "check"):
        assert error.get(key) is None or f"; {error[key]}" in line or error[key] in line, key
    reference = error.get("reference_id")
    assert (f"reference id {reference}" in line) is (reference is not None)
    maybe = error["maybe_delivered"]
    assert ("may have been delivered" in line or "may have reached" in line) is maybe
    assert maybe is ("may have" in (error["outcome"] or ""))
    return line, error


@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_text_and_json_say_the_same_of_every_failure(
    faxws_simulator: FaxWSSimulator,
    refused_port: int,
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    failure: str,
) -> None:
    sim = faxws_simulator
    case = FAILURES[failure]
    args, call = COMMANDS[command]
    args = [str(pdf) if a == "PDF" else a for a in args]
    url = f"http://127.0.0.1:{refused_port}" if failure == "refused-connection" else sim.url
    for name, value in {
        "FAXWS_BASE_URL": url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_PIN": DEMO_PIN,
    }.items():
        monkeypatch.setenv(name, value)
    if case.raises is not None and case.written is None:
        raising = case.raises

        def raise_it(*_args: Any, **_kwargs: Any) -> Any:
            raise raising("failed in the call")

        monkeypatch.setattr(FaxClient, call, raise_it)
    elif case.raises is not None:
        from faxws._http.sync_transport import HttpTransport

        raising, written = case.raises, case.written

        def on_the_wire(self: Any, request: Any) -> Any:
            request.written = written
            raise raising("failed on the wire")

        monkeypatch.setattr(HttpTransport, "post", on_the_wire)
    runs = []
    for extra in ([], ["--json"]):
        sim.reset()
        if case.fault is not None:
            sim.inject(case.fault, times=10)  # whatever the client tries again
        given = [*args, "--request-id", f"rid-{command}", "--timeout", "0.3", *extra]
        runs.append(run_main(given, capsys))
    line, error = agreeing(*runs)
    assert error["exit_code"] == case.code, line
    assert error["maybe_delivered"] is case.maybe
    assert error["request_id"] == f"rid-{command}"
    assert line.startswith(f"faxws {args[0]}: ")
    if args[0] != "send":
        return
    # The fax: whether it may have gone, what not to do, and how to check, in both.
    if case.maybe:
        assert "; the fax may have been delivered; do not send it again before checking" in line
        if command == "send-reference":
            assert error["check"] == "faxws status --reference 'inv 7'"
            assert line.endswith("; do not send it again before checking with: " + error["check"])
        else:
            assert "check" not in error
            assert line.endswith("; do not send it again before checking: ask the service about "
                                 "its request id")  # fmt: skip
    else:
        assert "check" not in error
        assert error["outcome"] in ("the fax was not sent", "nothing was sent")


def test_the_reported_case_a_503_on_send_says_the_fax_may_have_gone(
    faxws_simulator: FaxWSSimulator,
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """HTTP 503 without a SOAP answer after a SendFaxEx: exit 5, and the text says what --json
    says: maybe delivered, not to send it again before checking, and the command that checks."""
    for name, value in {
        "FAXWS_BASE_URL": faxws_simulator.url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_PIN": DEMO_PIN,
    }.items():
        monkeypatch.setenv(name, value)
    faxws_simulator.inject(Fault.http_status(503), operation="SendFaxEx")
    args = ["send", "--to", "+1 555 0100", str(pdf), "--reference", "inv-9", "--request-id", "r-1"]
    ran = run_main(args, capsys)
    assert (ran.code, ran.stdout) == (5, "")
    assert ran.stderr == (
        "faxws send: HTTPStatusError: HTTP 503 without a SOAP answer (request id r-1; "
        "reference id inv-9); the fax may have been delivered; do not send it again before "
        "checking with: faxws status --reference inv-9\n"
    )
    faxws_simulator.inject(Fault.http_status(503), operation="SendFaxEx")
    ran = run_main([*args, "--json"], capsys)
    assert ran.code == 5
    assert json.loads(ran.stdout) == {
        "error": {
            "type": "HTTPStatusError",
            "message": "HTTP 503 without a SOAP answer",
            "request_id": "r-1",
            "status_code": 503,
            "maybe_delivered": True,
            "exit_code": 5,
            "outcome": "the fax may have been delivered",
            "next_step": "do not send it again before checking with: "
            "faxws status --reference inv-9",
            "reference_id": "inv-9",
            "check": "faxws status --reference inv-9",
        }
    }


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["send", "--to", "+1 555 0100"], 2),  # no FILE: argparse
        (["send", "--to", "+1 555 0100", "letter.xyz"], 2),  # bad input
        (["report", "J1", "--base-url", "http://127.0.0.1:9", "--user-id", "u"], 2),  # usage
    ],
    ids=["argparse", "bad-input", "usage"],
)
def test_usage_errors_agree_too(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
) -> None:
    (tmp_path / "letter.xyz").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    for name in ("FAXWS_BASE_URL", "FAXWS_USER_ID", "FAXWS_PIN", "FAXWS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FAXWS_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("FAXWS_USER_ID", "u")
    text, as_json = run_main(args, capsys), run_main([*args, "--json"], capsys)
    assert text.stdout == ""
    assert as_json.stderr == text.stderr
    error = json.loads(as_json.stdout)["error"]
    assert text.code == as_json.code == error["exit_code"] == code
    assert error["maybe_delivered"] is False
    assert error["message"] in text.stderr.splitlines()[-1]


def test_an_unexpected_failure_before_sending_exits_1_saying_nothing_was_sent(
    pdf: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from faxws.cli import _client

    def broken(args: object) -> object:
        raise RuntimeError("no client")

    monkeypatch.setattr(_client, "make_client", broken)
    args = ["send", "--to", "+1 555 0100", str(pdf), "--request-id", "r-2"]
    text, as_json = run_main(args, capsys), run_main([*args, "--json"], capsys)
    assert text.stderr == (
        "faxws send: RuntimeError: no client (request id r-2); the fax was not sent\n"
    )
    assert as_json.stderr == text.stderr
    error = json.loads(as_json.stdout)["error"]
    assert (text.code, error["exit_code"], error["maybe_delivered"]) == (1, 1, False)
    assert error["outcome"] == "the fax was not sent"


# -- the exit codes, by meaning, documented once -------------------------------------------


def exit_codes_help() -> dict[int, str]:
    """Each code of the help's table, with its text."""
    from faxws.cli._output import EXIT_CODES_HELP

    table: dict[int, str] = {}
    code = None
    for line in EXIT_CODES_HELP.splitlines()[1:]:
        found = re.match(r"  (\d+) +(.*)", line)
        if found:
            code = int(found.group(1))
            table[code] = found.group(2)
        elif line.startswith("       ") and code is not None:
            table[code] += " " + line.strip()
        else:
            code = None
    return table


def test_the_exit_codes_are_documented_once_by_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    from faxws.cli import _output, build_parser

    table = exit_codes_help()
    constants = {
        value for name, value in vars(_output).items() if name.startswith("EXIT_") and
        isinstance(value, int)
    }  # fmt: skip
    assert set(table) == constants
    assert "the service answered and refused" in table[1]
    assert "nothing was sent; trying again is safe" in table[4]
    for words in ("may have", "do not send it again before checking", "soap:Server", "5xx"):
        assert words in table[5]
    assert _output.EXIT_CODES_HELP in build_parser().format_help()


def test_every_client_error_has_its_exit_code_in_the_table() -> None:
    """A new kind of error is given its code by meaning, not by falling to a default."""
    import faxws.errors
    from faxws.cli._output import CODES

    kinds = {
        name
        for name in faxws.errors.__all__
        if issubclass(getattr(faxws.errors, name), faxws.errors.FaxWSError)
    }
    assert set(CODES) == kinds


# -- authentication messages: "(HTTP 401)" once, on every face -------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_the_status_of_a_refused_credential_is_said_once(
    faxws_simulator: FaxWSSimulator, status: int
) -> None:
    import asyncio

    from faxws import AsyncFaxClient, AuthenticationError
    from faxws.zeep import make_client

    sim = faxws_simulator
    errors: list[AuthenticationError] = []

    def caught(call: Callable[[], object]) -> None:
        sim.inject(Fault.http_status(status))
        with pytest.raises(AuthenticationError) as raised:
            call()
        errors.append(raised.value)

    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        caught(lambda: client.get_fax_broadcast_report("J1", request_id="r-s"))

    async def through_async() -> None:
        async with AsyncFaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            await client.get_fax_broadcast_report("J1", request_id="r-a")

    caught(lambda: asyncio.run(through_async()))
    zeep_client = make_client(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
    caught(lambda: zeep_client.service.GetFaxBroadcastReport(
        UserID="", strPIN="", JobId="J1", RecipientType=0, RecipAddress=""
    ))  # fmt: skip
    zeep_client.transport.close()
    for error in errors:
        assert str(error).count(f"HTTP {status}") == 1, str(error)
        assert error.status_code == status
        assert str(error).startswith("the service rejected the credentials (HTTP ")


def test_the_command_says_a_refused_credential_once(
    faxws_simulator: FaxWSSimulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FAXWS_BASE_URL", faxws_simulator.url)
    monkeypatch.setenv("FAXWS_USER_ID", DEMO_USER_ID)
    monkeypatch.setenv("FAXWS_PIN", "not-the-pin")
    ran = run_main(["report", "J1", "--request-id", "r-3"], capsys)
    assert ran.code == 3
    assert ran.stderr == (
        "faxws report: AuthenticationError: the service rejected the credentials: wrong user "
        "id or PIN (HTTP 401, request id r-3)\n"
    )


@pytest.mark.parametrize("body", [b"{}", b"<html>no</html>"], ids=["no-error-code", "html"])
def test_a_token_endpoints_refusal_says_its_status_once(
    face: Any, capture_server: Callable[..., Any], body: bytes
) -> None:
    """A token endpoint that refuses without an error code is named by its status, once."""
    from faxws import AuthenticationError

    head = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
    answer = f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
    server = capture_server(lambda raw: answer)
    provider = face.provider(f"{server.url}/connect/token", "client", "secret")
    with pytest.raises(AuthenticationError) as refused:
        face.fetch_token(provider)
    assert str(refused.value) == "the token endpoint refused the client credentials: HTTP 401"
    assert refused.value.status_code == 401


def test_an_http_status_is_said_once_and_others_keep_theirs() -> None:
    from faxws.errors import HTTPStatusError, ServiceError

    error = HTTPStatusError("HTTP 503 without a SOAP answer", request_id="r", status_code=503)
    assert str(error) == "HTTP 503 without a SOAP answer (request id r)"
    error = HTTPStatusError("HTTP 5030 x", status_code=503)  # another number is not its status
    assert str(error) == "HTTP 5030 x (HTTP 503)"
    assert str(ServiceError(-5019, "Invalid Job ID", request_id="r", status_code=200)) == (
        "service error -5019: Invalid Job ID (HTTP 200, request id r)"
    )
