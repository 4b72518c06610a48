"""`faxws send -`: the document from standard input, spooled so a large one is not held in
memory."""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
MiB = 1024 * 1024


def send(sim: FaxWSSimulator, *args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {
        **CLEAN_ENV,
        "FAXWS_BASE_URL": sim.url,
        "FAXWS_USER_ID": DEMO_USER_ID,
        "FAXWS_PIN": DEMO_PIN,
    }
    return subprocess.run(
        [sys.executable, "-m", "faxws", "send", "--to", "+1 555 0100", *args],
        input=stdin,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("size", [17, 9 * MiB + 5], ids=["in-memory", "spooled-to-disk"])
def test_send_reads_the_document_from_stdin(faxws_simulator: FaxWSSimulator, size: int) -> None:
    data = random.Random(size).randbytes(size)
    done = send(faxws_simulator, "-", "--file-type", "pdf", "--json", stdin=data)
    assert done.returncode == 0, done.stderr
    [job] = faxws_simulator.jobs
    [received] = job.files
    assert (received.file_type, len(received.data)) == (101, size)
    assert received.data == data
    assert json.loads(done.stdout)["files"] == [{"name": "<stdin>", "size": size, "file_type": 101}]


def test_stdin_and_a_path_together(faxws_simulator: FaxWSSimulator, tmp_path: Path) -> None:
    path = tmp_path / "cover.pdf"
    path.write_bytes(b"%PDF-1.4 cover")
    done = send(faxws_simulator, str(path), "-", "--file-type", "pdf", stdin=b"%PDF-1.4 body")
    assert done.returncode == 0, done.stderr
    assert [f.data for f in faxws_simulator.jobs[0].files] == [b"%PDF-1.4 cover", b"%PDF-1.4 body"]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["-"], b"%PDF", "reading a document from standard input (-) needs --file-type"),
        (["-", "-", "--file-type", "pdf"], b"%PDF", "standard input (-) can be given only once"),
        (["-", "--file-type", "pdf"], b"", "FILE -: standard input is empty"),
    ],
    ids=["no-file-type", "twice", "empty"],
)
def test_stdin_misuse_is_a_usage_error(
    faxws_simulator: FaxWSSimulator, args: list[str], stdin: bytes, message: str
) -> None:
    done = send(faxws_simulator, *args, "--json", stdin=stdin)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"] == message
    assert message in done.stderr.decode()
    assert faxws_simulator.requests == []


def test_a_large_stdin_document_is_spooled_not_held_in_memory() -> None:
    from faxws.cli import spool_stdin
    from faxws.models import FaxFile

    size = 48 * MiB
    chunk = random.Random(1).randbytes(MiB)
    read_fd, write_fd = os.pipe()

    def write() -> None:
        # A reader that gave up closes its end: that ends the writer too.
        with open(write_fd, "wb") as pipe, contextlib.suppress(BrokenPipeError):
            for _ in range(size // MiB):
                pipe.write(chunk)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with open(read_fd, "rb") as source:
            tracemalloc.start()
            try:
                spooled = spool_stdin(source)
                document = FaxFile(spooled, 101)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    finally:
        writer.join(60)
        assert not writer.is_alive()
    with spooled:
        assert document.size == size
        spooled.seek(size - MiB)
        assert spooled.read() == chunk
    assert peak < 12 * MiB  # a few MiB in memory, the rest on disk
