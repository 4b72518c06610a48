"""The simulator's memory stays bounded: large documents are spooled to disk while they are
decoded, request bodies are kept only within a budget, and junk costs nothing lasting.

Memory is measured as the resident set size of a simulator running in its own process
(``/proc/self/status``; the peak is reset with ``/proc/self/clear_refs`` just before each
measured step), so libxml2's allocations count too, and the client's do not.
"""

from __future__ import annotations

import hashlib
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from faxws import FaxClient, FaxFile, FileType
from faxws.oauth import ClientCredentials
from faxws.testing import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_PIN,
    DEMO_USER_ID,
    FaxWSSimulator,
)
from faxws.testing import _state as simulator_state

MIB = 1 << 20
SOAP_HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}

linux_only = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="measures RSS through /proc"
)

CHILD = """
import hashlib, sys
from faxws.testing import FaxWSSimulator

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

with FaxWSSimulator() as sim:
    print(sim.url, flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "reset-peak":
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            print(status("VmRSS"), flush=True)
        elif command == "memory":
            print(status("VmRSS"), status("VmHWM"), flush=True)
        elif command == "last-file":
            data = sim.jobs[-1].files[0].data
            print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
            del data
        else:
            break
"""


class Simulator:
    """A simulator in a child process, answering one line per command."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.url = self._line()
        except BaseException:
            self.proc.kill()  # no child left behind when it never starts
            self.close()
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())

    def _line(self) -> str:
        try:
            return self._lines.get(timeout=120)
        except queue.Empty:
            raise AssertionError("the simulator process did not answer") from None

    def ask(self, command: str) -> list[int | str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return [int(w) if w.isdigit() else w for w in self._line().split()]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=120)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
def child() -> Iterator[Simulator]:
    sim = Simulator()
    try:
        yield sim
    finally:
        sim.close()


def peak_growth(sim: Simulator, step: object) -> tuple[int, int]:
    """(peak growth, lasting growth) of the simulator's RSS over ``step()``, in bytes."""
    (before,) = sim.ask("reset-peak")
    step()  # type: ignore[operator]
    rss, hwm = sim.ask("memory")
    return int(hwm) - int(before), int(rss) - int(before)


def warm_up(sim: Simulator) -> None:
    # Imports, the schema and the first thread's arena: paid once, not per document.
    client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
    client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4 warm-up" * 4096, FileType.PDF)])


@linux_only
def test_a_100_mib_fax_costs_a_fraction_of_its_size(child: Simulator, tmp_path: Path) -> None:
    warm_up(child)
    document = tmp_path / "large.pdf"
    with document.open("wb") as f:
        for _ in range(100):
            f.write(os.urandom(MIB))
    digest = hashlib.sha256(document.read_bytes()).hexdigest()
    client = FaxClient(child.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, timeout=(10, 600))
    peak, lasting = peak_growth(
        child, lambda: client.send_fax(["+1 555 0100"], [FaxFile.from_path(document)])
    )
    print(f"100 MiB fax: peak +{peak / MIB:.1f} MiB, lasting +{lasting / MIB:.1f} MiB")
    assert child.ask("last-file") == [100 * MIB, digest]
    assert peak <= 25 * MIB  # 0.25x of the document
    assert lasting <= 25 * MIB


def _post_raw(
    url: str, path: str, headers: dict[str, str], body: Iterator[bytes], size: int
) -> int:
    """POST a body of ``size`` bytes from ``body`` over a plain socket; the status answered."""
    host, port = url.removeprefix("http://").split(":")
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sock.sendall(head.encode())
        for chunk in body:
            sock.sendall(chunk)
        answer = b""
        while b"\r\n" not in answer:
            data = sock.recv(4096)
            assert data, "closed without an answer"
            answer += data
    return int(answer.split()[1])


def _repeat(piece: bytes, size: int) -> Iterator[bytes]:
    """Exactly ``size`` bytes of ``piece`` repeated, in chunks of about 1 MiB."""
    chunk = piece * (MIB // len(piece))
    for _ in range(size // len(chunk)):
        yield chunk
    yield (piece * (size % len(chunk) // len(piece) + 1))[: size % len(chunk)]


JUNK = 100 * MIB
HEAD = (
    b'<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
    b'<SendFax xmlns="urn:FaxWS"><UserID>mbx0000000000</UserID><strPIN>0000</strPIN>'
    b"<Recipients><item><RecipFaxNumber>+1</RecipFaxNumber><RecipCompany/><RecipTitle/>"
    b"<RecipName/><RecipSecureCSID/></item></Recipients><FaxJobFiles><item>"
    b"<FileIndex>1</FileIndex><FileTypeId>101</FileTypeId><FileData>"
)


def _with_head(head: bytes, filler: bytes) -> Iterator[bytes]:
    yield head
    yield from _repeat(filler, JUNK - MIB)
    yield b" " * (MIB - len(head))


JUNK_CASES = {
    # (path, headers, body, expected status)
    "elsewhere": ("/elsewhere", {}, lambda: _repeat(b"junk", JUNK), 404),
    "not-xml": ("/fax/v5", SOAP_HEADERS, lambda: _repeat(b"\x00junk", JUNK), 500),
    "one-huge-text": ("/fax/v5", SOAP_HEADERS, lambda: _with_head(b"<a>", b"text"), 500),
    "many-elements": ("/fax/v5", SOAP_HEADERS, lambda: _with_head(b"<a>", b"<b/>"), 500),
    "deep-nesting": ("/fax/v5", SOAP_HEADERS, lambda: _with_head(b"<a>", b"<b>"), 500),
    "bad-base64": ("/fax/v5", SOAP_HEADERS, lambda: _with_head(HEAD, b"QUJD!!!!"), 500),
    "unfinished-base64": ("/fax/v5", SOAP_HEADERS, lambda: _with_head(HEAD, b"QUJD"), 500),
}


@linux_only
@pytest.mark.parametrize("case", list(JUNK_CASES))
def test_junk_bodies_do_not_grow_memory(child: Simulator, case: str) -> None:
    warm_up(child)
    path, headers, body, status = JUNK_CASES[case]

    def junk() -> None:
        for _ in range(3):
            assert _post_raw(child.url, path, headers, body(), JUNK) == status

    peak, lasting = peak_growth(child, junk)
    print(f"junk {case}: peak +{peak / MIB:.1f} MiB, lasting +{lasting / MIB:.1f} MiB")
    assert lasting < 64 * MIB
    assert peak < 64 * MIB


# -- in process: what is kept --------------------------------------------------------------


def _report(job: str) -> bytes:
    return (
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
        f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID>'
        f"<strPIN>{DEMO_PIN}</strPIN><JobId>{job}</JobId><RecipientType>0</RecipientType>"
        "<RecipAddress/></GetFaxBroadcastReport></soap:Body></soap:Envelope>"
    ).encode()


def test_retained_request_bodies_are_capped_and_metadata_stays() -> None:
    size = len(_report("J0"))
    with FaxWSSimulator(retained_body_bytes=2 * size + size // 2) as sim:
        for n in range(5):  # the newest two fit the budget
            requests.post(
                f"{sim.url}/fax/v5", data=_report(f"J{n}"), headers=SOAP_HEADERS, timeout=30
            )
        requests.post(f"{sim.url}/elsewhere", data=b"x" * 5000, timeout=30)  # over the budget
        records = sim.requests
        assert [r.operation for r in records] == ["GetFaxBroadcastReport"] * 5 + [None]
        assert [r.body_retained for r in records] == [False, False, False, True, True, False]
        assert all(r.body == b"" for r in records if not r.body_retained)
        assert b"<JobId>J4</JobId>" in records[4].body
        assert [r.body_size for r in records[:5]] == [size] * 5
        assert records[5].body_size == 5000
        assert [r.path for r in records] == ["/fax/v5"] * 5 + ["/elsewhere"]
        assert records[0].header("Content-Type") == SOAP_HEADERS["Content-Type"]
        assert records[3].body == _report("J3")
        assert sum(len(r.body) for r in records) <= 2 * size + size // 2
    assert FaxWSSimulator().retained_body_bytes == 8 * MIB  # the documented default


def test_no_bodies_kept_at_all_when_asked() -> None:
    with FaxWSSimulator(retained_body_bytes=0) as sim:
        provider = ClientCredentials(sim.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        client = FaxClient(sim.url, user_id=DEMO_USER_ID, token=provider)
        client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", FileType.PDF)])
        (record,) = sim.requests
        assert (record.body, record.body_retained, record.operation) == (b"", False, "SendFax")
        assert record.body_size > 0
        assert sim.jobs[0].files[0].data == b"%PDF-1.4"


def test_large_documents_are_spooled_to_disk_and_removed_at_stop() -> None:
    large = bytes(range(256)) * 4096 + b"tail"  # 1 MiB: above SPOOL_THRESHOLD
    with FaxWSSimulator() as sim:
        client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        client.send_fax(["+1 555 0100"], [FaxFile(large, FileType.PDF)])
        client.send_fax(["+1 555 0101"], [FaxFile(b"small", FileType.PDF)])
        first, second = (job.files[0] for job in sim.jobs)
        assert first.data == large
        assert first.path is not None
        assert first.path.read_bytes() == large
        assert (first.size, first.sha256) == (len(large), hashlib.sha256(large).hexdigest())
        with first.open() as f:
            assert f.read(4) == large[:4]
        assert (second.path, second.data, second.size) == (None, b"small", 5)  # in memory
        spool = first.path.parent
        sim.reset()  # forgotten jobs take their files with them
        assert not first.path.exists()
        client.send_fax(["+1 555 0102"], [FaxFile(large, FileType.PDF)])
        third = sim.jobs[0].files[0]
        assert third.path is not None
        assert third.path.parent == spool
    assert not spool.exists()
    with pytest.raises(FileNotFoundError, match="stopped or reset"):
        _ = third.data


def test_small_documents_in_memory_stay_within_their_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(simulator_state, "DOCUMENT_MEMORY", 50_000)
    document = b"%PDF" + bytes(20_000)
    with FaxWSSimulator() as sim:
        client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        for _ in range(4):
            client.send_fax(["+1 555 0100"], [FaxFile(document, FileType.PDF)])
        files = [job.files[0] for job in sim.jobs]
        assert [f.path is None for f in files] == [True, True, False, False]
        assert all(f.data == document for f in files)
        sim.reset()  # frees the budget
        client.send_fax(["+1 555 0100"], [FaxFile(document, FileType.PDF)])
        assert sim.jobs[0].files[0].path is None
