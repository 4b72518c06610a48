"""Ctrl-C during `faxws send`: the fax may already be with the service, so the command says so,
with the request id, instead of ending silently."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
#: Long enough that the answer cannot arrive before the signal, however loaded the machine.
HOLD_SECONDS = 30.0
MAYBE_DELIVERED = (
    "faxws send: interrupted (request id {}); the fax may have been delivered; do not send it "
    "again before checking: ask the service about its request id"
)


def wait_for(condition: Callable[[], object], proc: subprocess.Popen[str], what: str) -> None:
    """Poll ``condition`` until it holds; fail if the process ends first or after 30 s."""
    deadline = time.monotonic() + 30
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"faxws ended (exit {proc.returncode}) before {what}: {out} {err}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within 30 s")
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("extra", "given_id"),
    [([], None), (["--json"], None), (["--json", "--request-id", "ctrl-c-7"], "ctrl-c-7")],
    ids=["text", "json", "json-given-id"],
)
def test_ctrl_c_during_send_says_the_fax_may_have_been_delivered(
    faxws_simulator: FaxWSSimulator, tmp_path: Path, extra: list[str], given_id: str | None
) -> None:
    pdf = tmp_path / "letter.pdf"
    pdf.write_bytes(b"%PDF-1.4 interrupted")
    faxws_simulator.inject(Fault.delay_response(HOLD_SECONDS), operation="SendFax")
    env = {
        **CLEAN_ENV,
        "FAXWS_BASE_URL": faxws_simulator.url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_PIN": DEMO_PIN,
    }
    with subprocess.Popen(
        [sys.executable, "-m", "faxws", "send", "--to", "+1 555 0100", str(pdf), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            wait_for(
                lambda: faxws_simulator.requests_for("SendFax"), proc, "the simulator got the job"
            )
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    [request] = faxws_simulator.requests_for("SendFax")
    request_id = request.header("x-ch-request-id")
    assert request_id is not None
    if given_id is None:
        assert uuid.UUID(request_id).version == 4  # chosen by the CLI, so it can be reported
    else:
        assert request_id == given_id
    assert proc.returncode == 130
    assert err.splitlines() == [MAYBE_DELIVERED.format(request_id)]
    if "--json" in extra:
        assert json.loads(out) == {
            "error": {
                "type": "Interrupted",
                "message": "interrupted",
                "request_id": request_id,
                "status_code": None,
                "maybe_delivered": True,
                "exit_code": 130,
                "outcome": "the fax may have been delivered",
                "next_step": "do not send it again before checking: ask the service about its "
                "request id",
            }
        }
    else:
        assert out == ""


class _InterruptedRead(io.RawIOBase):
    """Standard input on which the user presses Ctrl-C."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: object) -> int:
        raise KeyboardInterrupt


def test_ctrl_c_before_sending_says_nothing_was_sent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from faxws.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_InterruptedRead())))
    previous = signal.getsignal(signal.SIGINT)
    code = main(
        [
            "send",
            "--to",
            "+1 555 0100",
            "-",
            "--file-type",
            "pdf",
            "--base-url",
            "http://127.0.0.1:9",
            "--user-id",
            "u",
            "--pin",
            "PIN-1",
            "--request-id",
            "early-1",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 130
    assert err.splitlines() == [
        "faxws send: interrupted (request id early-1); the fax was not sent"
    ]
    error = json.loads(out)["error"]
    assert (error["type"], error["maybe_delivered"], error["request_id"]) == (
        "Interrupted",
        False,
        "early-1",
    )
    assert signal.getsignal(signal.SIGINT) is previous  # the handler is left as it was
