"""The simulator's figures for ``make bench``: report calls per second under 16 concurrent
keep-alive clients against the floor, the server CPU each call costs, and a report call with
300,000 jobs against one with 10.

The simulator runs as ``faxws serve --quiet`` runs it (default settings, no log line: the
floor writes none either; the line ``faxws serve`` writes by default is measured apart, see
the README). The floor is a minimal standard-library server (``ThreadingHTTPServer``,
``BaseHTTPRequestHandler``, HTTP/1.1 keep-alive, Nagle off) that reads each request and
answers the simulator's own report answer, byte for byte. Each server runs in its own process
on one core; the load comes from this process, on another core when there is one: 16
keep-alive connections driven by one thread over raw sockets, each sending the same prebuilt
GetFaxBroadcastReport request (PIN mode, for a job that exists) as soon as its last answer
arrived, so that the servers are what is measured (the load costs about a third of what the
floor does per call). Both servers are warmed first; then each round measures both, taking
turns in alternating order, and a round's ratio is the simulator's rate over the floor's.
Rounds are short and many, so that a busy spell of a shared machine falls on few of them;
the figure is the median of the rounds' ratios, with their minimum and maximum. Server CPU
per call is the server process's user and system time (``/proc``) over the round's calls.

The lookup figure times report calls one at a time over one connection to two simulators in
their own processes, one holding 300,000 jobs and one holding 10, taking turns.

    python benchmarks/simulator_bench.py --table [--smoke]  # the rows alone
    python benchmarks/simulator_bench.py --floor ANSWER     # the floor (prints its port)
    python benchmarks/simulator_bench.py --jobs N           # a simulator holding N jobs
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CLIENTS = 16
#: Jobs held for the lookup figure, against a simulator holding :data:`FEW`.
MANY, FEW = 300_000, 10


def _cores() -> tuple[int | None, int | None]:
    """The core for the load and the one for the servers (None: not pinned)."""
    if not hasattr(os, "sched_getaffinity"):
        return None, None
    cores = sorted(os.sched_getaffinity(0))
    return (cores[0], cores[-1]) if len(cores) > 1 else (None, None)


def _on_core(core: int | None) -> Callable[[], None] | None:
    """What pins a child process to ``core`` before it starts (None: nothing to do)."""
    if core is None:
        return None
    return lambda: os.sched_setaffinity(0, {core})


@contextmanager
def _this_process_on(core: int | None) -> Iterator[None]:
    if core is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _cpu_seconds(pid: int) -> float:
    """User and system time of a process, all its threads."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the request and the answer -------------------------------------------------------------


def report_request(host: str, port: int, job_id: str) -> bytes:
    """A GetFaxBroadcastReport request in the contract's form, whole, as faxws writes it."""
    from faxws._protocol.soap import PATH, request_headers
    from faxws._protocol.writer import envelope
    from faxws.bindings import GetFaxBroadcastReport
    from faxws.testing import DEMO_PIN, DEMO_USER_ID

    body = envelope(GetFaxBroadcastReport(DEMO_USER_ID, DEMO_PIN, job_id, 0, "")).whole
    assert body is not None
    headers = {"Host": f"{host}:{port}", **request_headers("bench-1", None)}
    headers["Content-Length"] = str(len(body))
    head = f"POST {PATH} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (head + "\r\n").encode() + body


def _exchange(sock: socket.socket, request: bytes) -> tuple[bytes, bytes]:
    """Send one request on a blocking socket; the answer's head and body."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = _content_length(head)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        body += chunk
    return head, body


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ValueError("an answer without Content-Length")


# -- the servers (their own processes) ------------------------------------------------------


class _Floor(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    answer = b""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/soap+xml; charset=utf-8")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)


def serve_floor(answer_path: str) -> None:
    _Floor.answer = Path(answer_path).read_bytes()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Floor)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def serve_jobs(count: int) -> None:
    """A simulator holding ``count`` jobs (one recipient each, no document); prints its port
    and the id of the job in the middle, then serves until stdin closes or SIGTERM."""
    from faxws.bindings import FaxJobFiles, FaxJobRecipient, FaxJobRecipients, SendFax
    from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

    sim = FaxWSSimulator(max_jobs=max(count, 1))
    state = sim._state  # filled directly: 300,000 SendFax calls would take minutes
    middle = ""
    for n in range(count):
        recipient = FaxJobRecipient(f"+1 555 {n:07d}", "", "", "", "")
        request = SendFax(DEMO_USER_ID, DEMO_PIN, FaxJobRecipients((recipient,)), FaxJobFiles(()))
        job = state.new_job(request, "pin", None, [])
        if n == count // 2:
            middle = job.job_ids[0]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with sim:
        print(json.dumps({"port": sim.port, "job_id": middle}), flush=True)
        sys.stdin.read()


@contextmanager
def _process(args: list[str], core: int | None) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A server process on ``core``, and the first line it printed."""
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=_on_core(core),  # only sets the child's core, before it starts
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{args} did not start")
        yield proc, line
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


# -- the load ---------------------------------------------------------------------------------


def _load(port: int, request: bytes, calls: int) -> tuple[float, int]:
    """``calls`` requests over :data:`CLIENTS` keep-alive connections, each sent as soon as
    the connection's last answer arrived; requests per second, and how many were not 200.

    Kept cheap: epoll directly, one non-blocking send per request (a request fits the
    socket buffer: one is in flight per connection at a time), and the answer's length
    found with one search."""
    poller = select.epoll()
    socks: dict[int, socket.socket] = {}
    for _ in range(CLIENTS):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _exchange(sock, request)  # the connection and its server thread, ready
        sock.setblocking(False)
        socks[sock.fileno()] = sock
    buffers = dict.fromkeys(socks, b"")
    sent = done = failed = 0
    started = time.perf_counter()
    for fd, sock in socks.items():
        if sent < calls:
            _send(sock, request)
            sent += 1
        poller.register(fd, select.EPOLLIN)
    while done < calls:
        for fd, _ in poller.poll():
            data = buffers[fd] + socks[fd].recv(65536)
            if len(data) == len(buffers[fd]):
                raise ConnectionError("the server closed a connection")
            while (end := data.find(b"\r\n\r\n")) >= 0:
                at = data.find(b"\r\nContent-Length: ", 0, end)
                length = int(data[at + 18 : data.find(b"\r", at + 18)]) if at >= 0 else -1
                if length < 0:
                    length = _content_length(data[:end])
                size = end + 4 + length
                if len(data) < size:
                    break
                failed += not data.startswith(b"HTTP/1.1 200 ")
                data = data[size:]
                done += 1
                if sent < calls:
                    _send(socks[fd], request)
                    sent += 1
            buffers[fd] = data
    elapsed = time.perf_counter() - started
    poller.close()
    for sock in socks.values():
        sock.close()
    return calls / elapsed, failed


def _send(sock: socket.socket, data: bytes) -> None:
    sent = sock.send(data)
    if sent < len(data):  # the socket buffer was full after all: wait for it
        sock.setblocking(True)
        sock.sendall(data[sent:])
        sock.setblocking(False)


def _sequential(sock: socket.socket, request: bytes, calls: int) -> float:
    """Seconds per call, one call at a time over one keep-alive connection."""
    started = time.perf_counter()
    for _ in range(calls):
        head, _ = _exchange(sock, request)
        if not head.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"the report call failed: {head[:40]!r}")
    return (time.perf_counter() - started) / calls


# -- what bench.py calls --------------------------------------------------------------------


def _throughput(calls: int, rounds: int) -> dict[str, Any]:
    from faxws import FaxClient, FaxFile
    from faxws.testing import DEMO_PIN, DEMO_USER_ID

    load_core, server_core = _cores()
    serve = [sys.executable, "-m", "faxws", "serve", "--port", "0", "--json", "--quiet"]
    with (
        tempfile.TemporaryDirectory() as tmp,
        _process(serve, server_core) as (sim, line),
        _this_process_on(load_core),
    ):
        url = json.loads(line)["url"]
        host, port = url.rpartition("/")[2].rsplit(":", 1)
        with FaxClient(url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
            job_id = client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)]).job_ids[0]
        request = report_request(host, int(port), job_id)
        with socket.create_connection((host, int(port))) as sock:
            head, answer = _exchange(sock, request)
        if not head.startswith(b"HTTP/1.1 200 ") or b"<return>true</return>" not in answer:
            raise RuntimeError(f"the simulator refused the report call: {head[:40]!r}")
        answer_path = Path(tmp) / "answer.xml"
        answer_path.write_bytes(answer)
        floor_args = [sys.executable, __file__, "--floor", str(answer_path)]
        with _process(floor_args, server_core) as (floor, floor_line):
            ports = {"simulator": int(port), "floor": int(floor_line)}
            pids = {"simulator": sim.pid, "floor": floor.pid}
            rates: dict[str, list[float]] = {"simulator": [], "floor": []}
            cpu: dict[str, list[float]] = {"simulator": [], "floor": []}
            for name in ports:  # both warm: steady state, not their first requests
                _load(ports[name], request, max(calls, 100))
            for n in range(rounds):
                order = ("simulator", "floor") if n % 2 == 0 else ("floor", "simulator")
                for name in order:
                    before = _cpu_seconds(pids[name])
                    rate, failed = _load(ports[name], request, calls)
                    if failed:
                        raise RuntimeError(f"{name}: {failed} of {calls} calls were not 200")
                    rates[name].append(rate)
                    cpu[name].append((_cpu_seconds(pids[name]) - before) / calls)
    return {"rates": rates, "cpu": cpu, "calls": calls, "rounds": rounds, "clients": CLIENTS}


def _lookup(many: int, calls: int, rounds: int) -> dict[str, Any]:
    load_core, server_core = _cores()
    times: dict[str, list[float]] = {"many": [], "few": []}
    jobs = [sys.executable, __file__, "--jobs"]
    with (
        _process([*jobs, str(many)], server_core) as (_, many_line),
        _process([*jobs, str(FEW)], server_core) as (_, few_line),
        _this_process_on(load_core),
    ):
        socks = {}
        requests = {}
        try:
            for name, line in (("many", many_line), ("few", few_line)):
                info = json.loads(line)
                socks[name] = socket.create_connection(("127.0.0.1", info["port"]))
                socks[name].setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                requests[name] = report_request("127.0.0.1", info["port"], info["job_id"])
                _sequential(socks[name], requests[name], max(calls // 4, 20))  # warm
            for n in range(rounds):
                for name in ("many", "few") if n % 2 == 0 else ("few", "many"):
                    times[name].append(_sequential(socks[name], requests[name], calls))
        finally:
            for sock in socks.values():
                sock.close()
    return {"times": times, "jobs": [many, FEW], "calls": calls, "rounds": rounds}


def measure(*, smoke: bool) -> dict[str, Any]:
    """Throughput rounds against the floor, and the lookup rounds."""
    # Enough calls that a round's CPU time spans several clock ticks even in smoke sizes.
    calls, rounds = (1_000, 3) if smoke else (2_000, 25)
    many, lookups, lookup_rounds = (3_000, 100, 3) if smoke else (MANY, 1_000, 9)
    return {
        "throughput": _throughput(calls, rounds),
        "lookup": _lookup(many, lookups, lookup_rounds),
    }


def _spread(values: list[float], unit: str = "/s", scale: float = 1.0, digits: int = 0) -> str:
    shown = [v * scale for v in values]
    return (
        f"{statistics.median(shown):.{digits}f}{unit} "
        f"(min {min(shown):.{digits}f}, max {max(shown):.{digits}f})"
    )


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the table (the fields of bench.Row): medians of per-round ratios."""
    t = figures["throughput"]
    rates, cpu = t["rates"], t["cpu"]
    per_round = [s / f for s, f in zip(rates["simulator"], rates["floor"], strict=True)]
    # Server CPU is counted in whole clock ticks: a floor's round that no tick fell in took
    # less than one, which bounds the ratio rather than dividing by zero.
    tick = 1 / os.sysconf("SC_CLK_TCK") / t["calls"]
    cpu_round = [s / max(f, tick) for s, f in zip(cpu["simulator"], cpu["floor"], strict=True)]
    ratio = statistics.median(per_round)
    lookup = figures["lookup"]
    many, few = lookup["times"]["many"], lookup["times"]["few"]
    lookup_round = [m / f for m, f in zip(many, few, strict=True)]
    lookup_ratio = statistics.median(lookup_round)
    return [
        {
            "figure": f"simulator: report calls per second, {t['clients']} keep-alive clients, "
            "faxws serve vs floor (stdlib ThreadingHTTPServer, fixed answer)",
            "value": _spread(rates["simulator"]),
            "baseline": f"floor {_spread(rates['floor'])}",
            "ratio": ratio,
            "ratio_min": min(per_round),
            "ratio_max": max(per_round),
            "target": ">= 0.8x",
            "met": ratio >= 0.8,
        },
        {
            "figure": "simulator: server CPU per report call, faxws serve vs floor",
            "value": _spread(cpu["simulator"], " us", 1e6),
            "baseline": f"floor {_spread(cpu['floor'], ' us', 1e6)}",
            "ratio": statistics.median(cpu_round),
            "ratio_min": min(cpu_round),
            "ratio_max": max(cpu_round),
            "target": "-",
            "met": True,
        },
        {
            "figure": f"simulator: report call holding {lookup['jobs'][0]:,} jobs vs "
            f"{lookup['jobs'][1]:,}",
            "value": _spread(many, " ms", 1e3, 3),
            "baseline": f"{lookup['jobs'][1]:,} jobs {_spread(few, ' ms', 1e3, 3)}",
            "ratio": lookup_ratio,
            "ratio_min": min(lookup_round),
            "ratio_max": max(lookup_round),
            "target": "<= 1.2x",
            "met": lookup_ratio <= 1.2,
        },
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--floor"]:
        serve_floor(sys.argv[2])
    elif sys.argv[1:2] == ["--jobs"]:
        serve_jobs(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--table"]:
        for row in rows(measure(smoke=sys.argv[2:3] == ["--smoke"])):
            print(
                f"| {row['figure']} | {row['ratio']:.2f}x ({row['ratio_min']:.2f}-"
                f"{row['ratio_max']:.2f}x) | {row['target']} | {'yes' if row['met'] else 'NO'} "
                f"| {row['value']} | {row['baseline']} |"
            )
    else:
        sys.exit(__doc__)
