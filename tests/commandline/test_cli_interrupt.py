"""Ctrl-C during `faxws send`: the fax may already be with the service, so the command says so,
with the request id, instead of ending silently."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator
from scripted import Conn, ScriptedServer

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


def interrupted(
    args: list[str], env: dict[str, str], ready: Callable[[int], object], what: str
) -> tuple[int, str, str]:
    """``faxws ARGS`` sent SIGINT (Ctrl-C) once ``ready(pid)``: its exit code, stdout and
    stderr."""
    with subprocess.Popen(
        [sys.executable, "-m", "faxws", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            wait_for(lambda: ready(proc.pid), proc, what)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return proc.returncode, out, err


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
    code, out, err = interrupted(
        ["send", "--to", "+1 555 0100", str(pdf), *extra],
        env,
        lambda _: faxws_simulator.requests_for("SendFax"),
        "the simulator got the job",
    )
    [request] = faxws_simulator.requests_for("SendFax")
    request_id = request.header("x-ch-request-id")
    assert request_id is not None
    if given_id is None:
        assert uuid.UUID(request_id).version == 4  # chosen by the CLI, so it can be reported
    else:
        assert request_id == given_id
    assert code == 130
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


# -- whether a byte was written decides what Ctrl-C says ------------------------------------

NOT_SENT = "faxws {}: interrupted (request id r-int); {}"


def _connecting(pid: int, port: int) -> bool:
    """Whether process ``pid`` is opening a connection to 127.0.0.1:``port`` (its SYN sent,
    unanswered): one of its sockets is in that state in Linux's socket table."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    inodes = {link[len("socket:[") : -1] for link in links if link.startswith("socket:[")}
    wanted = f":{port:04X}"
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as table:
            for row in table.read().splitlines()[1:]:
                fields = row.split()  # local, remote address, state, ..., inode
                if fields[2].endswith(wanted) and fields[3] == "02" and fields[9] in inodes:
                    return True
    return False


@contextmanager
def _unanswered_port() -> Iterator[int]:
    """A port whose listener's queue is full: a connection to it is never set up."""
    listener = socket.socket()
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        yield port
    finally:
        for sock in [*fillers, listener]:
            sock.close()


def _interrupt(
    args: list[str], env: dict[str, str], ready: Callable[[int], object]
) -> tuple[int, str, str]:
    return interrupted(
        [*args, "--request-id", "r-int", "--timeout", "60"],
        {**CLEAN_ENV, **env},
        ready,
        "the moment to press Ctrl-C",
    )


COMMANDS = {
    "send": (["send", "--to", "+1 555 0100", "LETTER", "--reference", "inv-3"],
             "the fax was not sent",
             "the fax may have been delivered; do not send it again before checking with: "
             "faxws status --reference inv-3"),
    "cancel": (["cancel", "SIM1"], "nothing was sent",
               "the cancel may have reached the service; see whether the job ended with: "
               "faxws status SIM1"),
}  # fmt: skip


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's socket table")
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("moment", ["connecting", "fetching-a-token", "request-written"])
def test_ctrl_c_says_the_request_may_have_gone_only_once_a_byte_was_written(
    tmp_path: Path,
    serve: Callable[..., ScriptedServer],
    moment: str,
    command: str,
    json_flag: list[str],
) -> None:
    """Stopped while connecting, or while an OAuth token was fetched, nothing was sent: the
    fax was not sent. Once the request was written, it may have been delivered."""
    letter = tmp_path / "letter.pdf"
    letter.write_bytes(b"%PDF-1.4 interrupted")
    args, not_sent, maybe = COMMANDS[command]
    args = [str(letter) if a == "LETTER" else a for a in args] + json_flag
    env = {"FAXWS_USER_ID": DEMO_USER_ID}
    got = threading.Event()

    def hold(conn: Conn) -> None:
        conn.read_head()
        got.set()
        conn.hold()

    with contextlib.ExitStack() as stack:
        if moment == "connecting":
            port = stack.enter_context(_unanswered_port())
            env |= {"FAXWS_BASE_URL": f"http://127.0.0.1:{port}", "FAXWS_PIN": DEMO_PIN}
            code, out, err = _interrupt(args, env, lambda pid: _connecting(pid, port))
        elif moment == "fetching-a-token":
            endpoint = serve(hold).url()
            env |= {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_TOKEN_URL": endpoint + "/t"}
            env |= {"FAXWS_CLIENT_ID": "c", "FAXWS_CLIENT_SECRET": "s"}
            code, out, err = _interrupt(args, env, lambda pid: got.is_set())
        else:
            env |= {"FAXWS_BASE_URL": serve(hold).url(), "FAXWS_PIN": DEMO_PIN}
            code, out, err = _interrupt(args, env, lambda pid: got.is_set())
    written = moment == "request-written"
    prog = args[0]
    assert code == 130
    assert err.splitlines()[-1].startswith(f"faxws {prog}: interrupted (request id r-int")
    assert err.splitlines()[-1].endswith("; " + (maybe if written else not_sent))
    if json_flag:
        error = json.loads(out)["error"]
        assert (error["maybe_delivered"], error["exit_code"]) == (written, 130)
        assert error["outcome"] == (maybe if written else not_sent).split(";")[0]
    else:
        assert out == ""


def test_ctrl_c_just_after_a_write_returned_says_the_fax_may_have_gone(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A signal handled as the socket's write returns, before the transport recorded the
    bytes it wrote: the request says none was written, yet they are with the server."""
    from faxws.cli import main

    letter = tmp_path / "letter.pdf"
    letter.write_bytes(b"%PDF-1.4 interrupted")
    server = serve(lambda conn: conn.read_request())
    write = socket.socket.send

    def written_then_interrupted(self: socket.socket, data: Any, *args: Any) -> int:
        write(self, data, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(socket.socket, "send", written_then_interrupted)
    code = main(
        ["send", "--to", "+1 555 0100", str(letter), "--base-url", server.url(), "--user-id",
         "u", "--pin", "PIN-1", "--request-id", "r-int", "--json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 130
    assert err.splitlines() == [MAYBE_DELIVERED.format("r-int")]
    assert json.loads(out)["error"]["maybe_delivered"] is True
