"""What the benchmark modules share: a server in a child process, CPU per call measured with
the ways compared taking turns, and a large document sent each way in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ServerProcess:
    """``python SCRIPT --sink`` in a child process, which prints its port; the context gives
    its base URL and ends the process on the way out."""

    def __init__(self, script: str) -> None:
        self.script = script

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, self.script, "--sink"], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        return f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def proc_status(field: str) -> int:
    """A memory figure of this process from /proc/self/status (such as VmHWM), in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def cpu_per_call(
    fns: dict[str, Callable[[], object]], n: int, rounds: int, *, warm: int = 20, step: int = 10
) -> dict[str, list[float]]:
    """CPU seconds per call of each function, one figure per round. Within a round the
    functions take turns in slices of ``step`` calls, so that a slow spell of a busy machine
    falls on all of them alike rather than on one."""
    for fn in fns.values():
        for _ in range(min(warm, n)):
            fn()
    step = max(1, min(step, n))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        spent = dict.fromkeys(fns, 0.0)
        for _ in range(max(1, n // step)):
            for name, fn in fns.items():
                started = time.process_time()
                for _ in range(step):
                    fn()
                spent[name] += time.process_time() - started
        for name in fns:
            samples[name].append(spent[name] / (max(1, n // step) * step))
    return samples


def large_document(
    script: str, ways: tuple[str, ...], url: str, size: int, rounds: int
) -> dict[str, Any]:
    """A random file of ``size`` bytes sent to ``url`` by ``python SCRIPT --child-large WAY
    URL PATH`` for each way in turn, a fresh process each, round after round; each child
    prints one JSON line as its last. {"size": size, way: [each round's line, ...]}."""
    out: dict[str, Any] = {"size": size, **{way: [] for way in ways}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scan.pdf"
        block = os.urandom(1 << 20)
        with open(path, "wb") as fh:
            for _ in range(size // len(block)):
                fh.write(block)
            fh.write(block[: size % len(block)])
        for _ in range(rounds):
            for way in ways:
                done = subprocess.run(
                    [sys.executable, script, "--child-large", way, url, str(path)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                out[way].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out
