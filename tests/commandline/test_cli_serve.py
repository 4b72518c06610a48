"""`faxws serve` can be waited for: the file of --ready-file, or the first line of --json,
says the server listens. Each is waited on as a script would (polling with a deadline, never
a fixed sleep), against a real `faxws serve` process, and then sent to."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from faxws.testing import DEMO_PIN, DEMO_USER_ID

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
DEADLINE = 30.0


def poll(condition: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    """Until ``condition`` holds; fails when the server ends first or after DEADLINE."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"faxws serve ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {DEADLINE} s")
        time.sleep(0.01)


@contextmanager
def serve(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``faxws serve --port 0 --quiet ARGS``, stopped and reaped at the end whatever happened."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", "--quiet", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=CLEAN_ENV,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=DEADLINE)


def first_line(stream: IO[str]) -> str:
    """The first line of ``stream``, read by a thread so that waiting for it has a deadline."""
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True)
    reader.start()
    try:
        line = lines.get(timeout=DEADLINE)
    except queue.Empty:
        pytest.fail(f"no line within {DEADLINE} s")
    reader.join(DEADLINE)
    return line


def send_to(url: str, pdf: Path) -> subprocess.CompletedProcess[str]:
    env = {**CLEAN_ENV, "FAXWS_BASE_URL": url, "FAXWS_USER_ID": DEMO_USER_ID}
    return subprocess.run(
        [sys.executable, "-m", "faxws", "send", "--to", "+1 555 0100", str(pdf), "--json"],
        env={**env, "FAXWS_PIN": DEMO_PIN},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "letter.pdf"
    path.write_bytes(b"%PDF-1.4 ready")
    return path


def test_the_ready_file_says_it_listens_and_goes_when_it_stops(tmp_path: Path, pdf: Path) -> None:
    ready = tmp_path / "ready.json"
    with serve("--ready-file", str(ready), "--json") as proc:
        poll(lambda: ready.exists() and ready.stat().st_size > 0, proc, "ready file")
        info = json.loads(ready.read_text())
        assert stat.S_IMODE(ready.stat().st_mode) == 0o600  # it may hold the API token
        assert proc.stdout is not None
        assert json.loads(first_line(proc.stdout)) == info  # the same object as --json's line
        assert info["url"].startswith("http://127.0.0.1:")
        assert info["inbox_url"] == info["url"] + "/"
        sent = send_to(info["url"], pdf)
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["job_ids"] == ["SIM00000001"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(DEADLINE) == 0
    assert not ready.exists()
    assert list(tmp_path.iterdir()) == [pdf]  # no temporary file left beside it


def test_the_first_line_of_json_says_it_listens(pdf: Path) -> None:
    with serve("--json") as proc:
        assert proc.stdout is not None
        info = json.loads(first_line(proc.stdout))  # flushed at once: no wait beyond it
        sent = send_to(info["url"], pdf)
        assert sent.returncode == 0, sent.stderr
        proc.terminate()
        assert proc.wait(DEADLINE) == 0


def test_the_ci_recipe_waits_for_the_ready_file_then_sends(tmp_path: Path, pdf: Path) -> None:
    """`faxws serve --ready-file ready.json &` then `until [ -s ready.json ]`, as a CI script
    has it (the port is 0 here, so that tests can run side by side)."""
    script = """
        faxws serve --port 0 --quiet --ready-file ready.json &
        tries=0
        until [ -s ready.json ]; do
          tries=$((tries + 1)); [ "$tries" -lt 600 ] || exit 90
          sleep 0.05
        done
        url=$(python -c 'import json; print(json.load(open("ready.json"))["url"])')
        FAXWS_BASE_URL=$url faxws send --to "+1 555 0100" letter.pdf --json > sent.json
        kill %1
        wait %1 || true
        test ! -e ready.json
    """
    bin_dir = os.path.dirname(sys.executable)
    env = {**CLEAN_ENV, "FAXWS_USER_ID": DEMO_USER_ID, "FAXWS_PIN": DEMO_PIN}
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=pdf.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((pdf.parent / "sent.json").read_text())["job_ids"] == ["SIM00000001"]


def test_a_stale_ready_file_is_removed_before_it_listens(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    ready.write_text('{"url": "http://127.0.0.1:1"}\n')  # left by a server that was killed
    with serve("--ready-file", str(ready), "--port", "0") as proc:
        poll(lambda: '127.0.0.1:1"' not in _text(ready), proc, "a new ready file")
        info = json.loads(ready.read_text())
        assert info["url"] != "http://127.0.0.1:1"
        proc.terminate()
        assert proc.wait(DEADLINE) == 0
    assert not ready.exists()


def _text(path: Path, missing: str = '127.0.0.1:1"') -> str:
    """The file's text; ``missing`` (which the caller's poll does not take for done) while it
    is not there yet, or no longer: read once, never after a look that found it."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return missing


def test_a_ready_file_in_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", "--ready-file",
         str(tmp_path / "nowhere" / "ready.json"), "--json"],
        env=CLEAN_ENV, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"] == "--ready-file: its folder does not exist"
    assert done.stderr == "faxws serve: error: --ready-file: its folder does not exist\n"


def test_the_ready_file_is_written_whole_beside_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written to a file in the same folder, then linked to its path: a script never reads it
    half written, the link cannot cross file systems, and unlike a rename it replaces no file
    that took the path meanwhile."""
    from faxws.cli import _serve

    seen: list[tuple[str, str, bool]] = []
    link = os.link

    def watched(source: Any, target: Any) -> None:
        seen.append((os.path.dirname(source), Path(source).read_text(), Path(target).exists()))
        link(source, target)

    monkeypatch.setattr(os, "link", watched)
    path = tmp_path / "ready.json"
    ready = _serve._ReadyFile(str(path))
    ready.publish('{"url": "u"}')
    assert seen == [(str(tmp_path), '{"url": "u"}\n', False)]
    assert path.read_text() == '{"url": "u"}\n'
    assert list(tmp_path.iterdir()) == [path]
    ready.remove()
    assert not path.exists()


def test_a_ready_file_replaced_by_another_is_left_alone(tmp_path: Path) -> None:
    from faxws.cli import _serve

    path = tmp_path / "ready.json"
    ready = _serve._ReadyFile(str(path))
    ready.publish("{}")
    path.unlink()
    path.write_text("another server's\n")
    ready.remove()
    assert path.read_text() == "another server's\n"


def test_a_port_in_use_suggests_port_0(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    ready.write_text('{"url": "http://127.0.0.1:1"}\n')  # stale: it must not say "ready"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "faxws", "serve", "--port", str(port), "--ready-file",
             str(ready)],
            env=CLEAN_ENV, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 2
    assert not ready.exists()
    assert done.stderr == (
        f"faxws serve: cannot listen on 127.0.0.1:{port}: {os.strerror(98)}; choose another "
        "--port, or --port 0 for any free one\n"
    )


def test_the_readiness_signal_is_documented() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "faxws", "serve", "--help"],
        env=CLEAN_ENV, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    text = " ".join(done.stdout.split())
    assert "--ready-file PATH" in text
    assert "faxws serve --port 8080 --ready-file ready.json &" in done.stdout
    assert 'until [ -s ready.json ]; do kill -0 "$SERVER" || exit 1; sleep 0.1; done' in done.stdout
    assert "the JSON object that --json prints as its first line" in text


# -- what is at the ready file's path: refused before anything listens, never touched -------


def _snapshot(folder: Path) -> dict[str, object]:
    """Each entry of ``folder``: a link's target, a folder, a file's bytes, or its kind."""
    seen: dict[str, object] = {}
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            seen[entry.name] = ("link", os.readlink(entry))
        elif entry.is_dir():
            seen[entry.name] = ("folder", _snapshot(entry))
        elif entry.is_file():
            seen[entry.name] = ("file", entry.read_bytes())
        else:
            seen[entry.name] = ("other", stat.S_IFMT(entry.lstat().st_mode))
    return seen


_LINK = (
    "ready.json is a symbolic link, which is neither followed nor removed; give the path of a file"
)
_NOT_READY = (
    "ready.json exists and is no ready file; it is not replaced: remove it, or give another path"
)


def _link_to_a_file(folder: Path) -> str:
    (folder / "victim").write_text("not ours\n")
    (folder / "ready.json").symlink_to(folder / "victim")
    return _LINK


def _link_to_nothing(folder: Path) -> str:
    (folder / "ready.json").symlink_to(folder / "missing")
    return _LINK


def _link_to_a_stale_file(folder: Path) -> str:
    (folder / "old.json").write_text('{"url": "http://127.0.0.1:1"}\n')
    (folder / "ready.json").symlink_to("old.json")
    return _LINK


def _a_folder(folder: Path) -> str:
    (folder / "ready.json").mkdir()
    (folder / "ready.json" / "kept").write_text("x")
    return "ready.json is a folder"


def _not_a_ready_file(folder: Path) -> str:
    (folder / "ready.json").write_text("my notes, not a server's\n")
    return _NOT_READY


def _json_without_url(folder: Path) -> str:
    (folder / "ready.json").write_text('{"name": "package.json, say"}\n')
    return _NOT_READY


def _a_fifo(folder: Path) -> str:
    os.mkfifo(folder / "ready.json")
    return "ready.json is not a regular file"


PATHS: dict[str, Callable[[Path], str]] = {
    "link-to-a-file": _link_to_a_file,
    "link-to-nothing": _link_to_nothing,
    "link-to-a-stale-file": _link_to_a_stale_file,
    "folder": _a_folder,
    "not-a-ready-file": _not_a_ready_file,
    "json-without-url": _json_without_url,
    "fifo": _a_fifo,
}


@pytest.mark.parametrize("case", list(PATHS))
def test_what_is_at_the_path_and_is_not_a_stale_ready_file_is_refused_and_left_alone(
    tmp_path: Path, case: str
) -> None:
    """Refused as a usage error before the server listens (stdout holds only the error), and
    nothing there is followed, replaced or removed."""
    folder = tmp_path / "run"
    folder.mkdir()
    message = PATHS[case](folder)
    before = _snapshot(folder)
    done = subprocess.run(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", "--ready-file", "ready.json",
         "--json"],
        cwd=folder, env=CLEAN_ENV, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout) == {"error": json.loads(done.stdout)["error"]}  # no start line
    assert json.loads(done.stdout)["error"]["message"] == f"--ready-file: {message}"
    assert done.stderr == f"faxws serve: error: --ready-file: {message}\n"
    assert _snapshot(folder) == before


@pytest.mark.parametrize("text", ['{"url": "http://127.0.0.1:1"}\n', ""], ids=["ready", "empty"])
def test_a_stale_ready_file_or_an_empty_one_is_replaced(tmp_path: Path, text: str) -> None:
    ready = tmp_path / "ready.json"
    ready.write_text(text)
    with serve("--ready-file", str(ready)) as proc:
        poll(lambda: "token_url" in _text(ready), proc, "a new ready file")
        proc.terminate()
        assert proc.wait(DEADLINE) == 0
    assert list(tmp_path.iterdir()) == []


def test_a_second_server_with_the_same_ready_file_is_refused(tmp_path: Path) -> None:
    """The first one's file says where it listens: the second does not take it over (a
    script would send to the wrong server, and the first's file would go when either stops)."""
    ready = tmp_path / "ready.json"
    with serve("--ready-file", str(ready)) as first:
        poll(lambda: ready.exists() and ready.stat().st_size > 0, first, "ready file")
        written = ready.read_text()
        url = json.loads(written)["url"]
        second = subprocess.run(
            [sys.executable, "-m", "faxws", "serve", "--port", "0", "--ready-file", str(ready)],
            env=CLEAN_ENV, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert second.returncode == 2
        assert second.stdout == ""  # it never listened
        assert second.stderr == (
            f"faxws serve: error: --ready-file: {ready} is the ready file of a server that is "
            f"running ({url}); stop it, or give another path\n"
        )
        assert ready.read_text() == written
        first.terminate()
        assert first.wait(DEADLINE) == 0
    assert not ready.exists()


def test_the_file_of_a_killed_server_is_removed_by_the_next(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    with serve("--ready-file", str(ready)) as first:
        poll(lambda: ready.exists() and ready.stat().st_size > 0, first, "ready file")
        old = json.loads(ready.read_text())["url"]
        first.kill()  # SIGKILL: no chance to remove it
        first.wait(DEADLINE)
    assert ready.exists()
    with serve("--ready-file", str(ready)) as second:
        # the stale file is removed before the new one is written: neither is the new one
        poll(lambda: old not in _text(ready, missing=old), second, "its own ready file")
        second.send_signal(signal.SIGINT)
        assert second.wait(DEADLINE) == 0
    assert list(tmp_path.iterdir()) == []


def test_a_folder_it_cannot_write_in_is_a_usage_error_before_it_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a read-only folder refuses it (the tests may run as root, whom no mode stops)."""
    import tempfile

    from faxws import cli
    from faxws.testing import FaxWSSimulator

    def refused(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, os.strerror(13))

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("the server started")

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    monkeypatch.setattr(FaxWSSimulator, "start", never)
    code = cli.main(["serve", "--port", "0", "--ready-file", str(tmp_path / "ready.json")])
    assert code == 2
    assert capsys.readouterr().err == (
        f"faxws serve: error: --ready-file: cannot write in its folder: {os.strerror(13)}\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_blank_pin_variable_gives_the_named_user_no_pin(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "faxws", "serve", "--port", "0", "--user-id", "u"],
        env={**CLEAN_ENV, "FAXWS_PIN": "  "}, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "faxws serve: error: give the user a --pin, a --token or --client-id/--client-secret\n"
    )


def test_a_file_that_took_the_path_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    from faxws.cli import _serve

    path = tmp_path / "ready.json"
    ready = _serve._ReadyFile(str(path))
    path.write_text("another's\n")
    with pytest.raises(FileExistsError):
        ready.publish('{"url": "u"}')
    ready.remove()
    assert [p.name for p in tmp_path.iterdir()] == ["ready.json"]
    assert path.read_text() == "another's\n"


def test_without_hard_links_the_ready_file_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from faxws.cli import _serve

    def unsupported(*args: object) -> None:
        raise PermissionError(1, os.strerror(1))

    monkeypatch.setattr(os, "link", unsupported)
    path = tmp_path / "ready.json"
    ready = _serve._ReadyFile(str(path))
    ready.publish('{"url": "u"}')
    assert [p.name for p in tmp_path.iterdir()] == ["ready.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ready.remove()
    assert list(tmp_path.iterdir()) == []
