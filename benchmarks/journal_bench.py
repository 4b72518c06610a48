"""The send journal's figures for ``make bench``: what the journal costs per fax on SQLite
against a bare ``send_fax`` loop, the throughput of 8 worker processes on one PostgreSQL
journal against 8 bare loops, and how many status calls tracking makes per fax and round.

Every way sends the same document (:data:`DOCUMENT_SIZE` bytes, a PDF name, one recipient)
as SendFaxEx with a ReferenceId to one sink in its own process: an asyncio server that reads
each request and answers as the service does, a SendFaxEx answer with a new job id and a TTFP
of one second; a status call (GetRealTimeFaxStatusEx2) answers each job in progress until it
was asked :data:`FINAL_AFTER` times (twice in smoke sizes), then delivered; a look-up by
ReferenceId (SimpleGetFaxStatus) finds the job. The sink counts what it answered (a plain
``GET /counts``): the tracking figure counts calls where they arrive, and the benchmark fails if
any ReferenceId was sent twice. The journal runs as users run it: ``Batch`` over a store from
``open_journal``, its defaults kept, on stores that keep their durability: SQLite in a temporary
folder (the move to sending synced with ``synchronous=FULL``, as the store does; the row names
the folder's file system), and PostgreSQL started from the machine's binaries as the journal's
tests start it (tests/journal/postgres_server.py) but with ``fsync`` and ``full_page_writes`` on
again.

1. Cost per fax (SQLite): N rows added (each a FaxSpec, its document read for the digest) and
   sent by ``Batch.run(workers=1, wait=False)`` on a fresh journal file, against a loop of the
   same N ``FaxClient.send_fax(..., options=JobOptions(reference_id=...))`` calls; both in one
   child process with one client, taking turns, the first way alternating between rounds.
   The ratio is wall time over wall time, per round.
2. 8 processes (PostgreSQL): N rows added to a fresh schema first (not counted), then 8
   processes, each ``Batch.run(workers=1, wait=False)`` on that journal, against 8 processes
   each sending N/8 faxes in a bare loop, taking turns. Every process opens its client (and
   journal) and makes one call before all are released together; a way's time runs from the
   release until its last process returned (the rate until the sink answered the last fax is
   shown beside it, and the processes' CPU time per fax). The ratio is the journal's rate
   over the loops'. Without PostgreSQL's binaries the row says it was not measured (unless
   ``CI`` or ``FAXWS_REQUIRE_POSTGRES`` is set: then the benchmark fails).
3. Tracking: M rows sent and tracked to delivery by ``Batch.run(workers=4, wait=True)``; the
   sink's status calls (and look-ups) over M times the rounds each fax was polled (every job
   is asked exactly FINAL_AFTER times, which the benchmark checks). The floor is one call per
   status batch of job ids (100).

    python benchmarks/journal_bench.py --table [--smoke]  # the rows alone
    python benchmarks/journal_bench.py --sink FINAL_AFTER  # the sink (prints its port)
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
USER, PIN = "mbx0000000000", "0000"
#: The document every way sends: a PDF of about two pages.
DOCUMENT_SIZE = 100 * 1024
NUMBER = "+1 555 0100"
#: A job's status is final (delivered) on this ask: every fax is polled this many rounds.
FINAL_AFTER = 3
#: Job ids per status call at best (the runner's batch): the tracking figure's floor.
STATUS_BATCH = 100
PROCESSES = 8
TRACK_WORKERS = 4
TTFP = 1

_HEAD = f'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="{SOAP}"><soap:Header/>'
SEND_ANSWER = (
    _HEAD + '<soap:Body><FaxSendExResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds>'
    "<item><JobId>{job_id}</JobId></item></FaxJobIds><TTFP>{ttfp}</TTFP><WSError><ErrorCode>0"
    "</ErrorCode><ErrorString/></WSError></FaxSendExResponse></soap:Body></soap:Envelope>"
)
STATUS_ANSWER = (
    _HEAD + '<soap:Body><RealTimeFaxStatusEx2Response xmlns="urn:FaxWS"><return>true</return>'
    "<FaxStatusList>{items}</FaxStatusList><WSError><ErrorCode>0</ErrorCode><ErrorString/>"
    "</WSError></RealTimeFaxStatusEx2Response></soap:Body></soap:Envelope>"
)
IN_PROGRESS = (
    "<item><FaxJobId>{job_id}</FaxJobId><FaxJobStatusId>3</FaxJobStatusId><StatusDescription>"
    "In progress: sending</StatusDescription><RecipientState>2</RecipientState>"
    "<RecipientCurrentPageCount>1</RecipientCurrentPageCount><RecipientTotalPageCount>2"
    "</RecipientTotalPageCount><FaxDeliveryDateTime/><FaxDeliveryDuration>0</FaxDeliveryDuration>"
    "<RemoteFaxCSID/><ReferenceId>{reference}</ReferenceId><Error><ErrorCode>0</ErrorCode>"
    "<ErrorString/></Error></item>"
)
DELIVERED = (
    "<item><FaxJobId>{job_id}</FaxJobId><FaxJobStatusId>1</FaxJobStatusId><StatusDescription>"
    "Delivered</StatusDescription><RecipientState>4</RecipientState><RecipientCurrentPageCount>2"
    "</RecipientCurrentPageCount><RecipientTotalPageCount>2</RecipientTotalPageCount>"
    "<FaxDeliveryDateTime>2026-01-05T10:00:00+00:00</FaxDeliveryDateTime><FaxDeliveryDuration>"
    "41</FaxDeliveryDuration><RemoteFaxCSID>+15550100</RemoteFaxCSID><ReferenceId>{reference}"
    "</ReferenceId><Error><ErrorCode>0</ErrorCode><ErrorString/></Error></item>"
)
UNKNOWN = (
    "<item><FaxJobId>{job_id}</FaxJobId><FaxJobStatusId>0</FaxJobStatusId><StatusDescription/>"
    "<RecipientState>0</RecipientState><RecipientCurrentPageCount>0</RecipientCurrentPageCount>"
    "<RecipientTotalPageCount>0</RecipientTotalPageCount><FaxDeliveryDateTime/>"
    "<FaxDeliveryDuration>0</FaxDeliveryDuration><RemoteFaxCSID/><ReferenceId/><Error><ErrorCode>"
    "-5019</ErrorCode><ErrorString>Invalid Job ID</ErrorString></Error></item>"
)
REFERENCE_ANSWER = (
    _HEAD + '<soap:Body><SimpleFaxStatusResponse xmlns="urn:FaxWS"><return>{status}</return>'
    "</SimpleFaxStatusResponse></soap:Body></soap:Envelope>"
)


# -- the sink (its own process) -------------------------------------------------------------


class _Counts:
    """What the sink answered: sends, status calls (and the job ids they asked), reference
    look-ups; each job's ReferenceId and how often it was asked."""

    def __init__(self, final_after: int) -> None:
        self.final_after = final_after
        self.sends = 0
        self.status_calls = 0
        self.job_asks = 0
        self.lookups = 0
        self.resent = 0  # sends of a ReferenceId sent before
        self.last_send = 0.0
        self.references: dict[str, str] = {}
        self.by_reference: dict[str, str] = {}
        self.asks: dict[str, int] = {}

    def answer(self, head: bytes, tail: bytes) -> bytes:
        """The answer to a request of which ``head`` and ``tail`` are the first and the last
        bytes of the body (the same bytes when it is small)."""
        if b"<SendFaxEx" in head:
            return self.send(tail)
        if b"<GetRealTimeFaxStatusEx2" in head:
            return self.status(tail)
        if b"<SimpleGetFaxStatus" in head:
            return self.lookup(tail)
        raise ValueError(f"the sink answers no such call: {head[:300]!r}")

    def send(self, tail: bytes) -> bytes:
        self.sends += 1
        job_id = f"J{self.sends:08d}"
        reference = _between(tail, b"<ReferenceId>", b"</ReferenceId>")
        self.references[job_id] = reference
        if reference:
            self.resent += reference in self.by_reference
            self.by_reference[reference] = job_id
        self.last_send = time.monotonic()
        return SEND_ANSWER.format(job_id=job_id, ttfp=TTFP).encode()

    def status(self, body: bytes) -> bytes:
        self.status_calls += 1
        items = []
        for raw in body.split(b"<JobId>")[1:]:
            job_id = raw.partition(b"</JobId>")[0].decode()
            self.job_asks += 1
            reference = self.references.get(job_id)
            if reference is None:
                items.append(UNKNOWN.format(job_id=job_id))
                continue
            self.asks[job_id] = asked = self.asks.get(job_id, 0) + 1
            form = DELIVERED if asked >= self.final_after else IN_PROGRESS
            items.append(form.format(job_id=job_id, reference=reference))
        return STATUS_ANSWER.format(items="".join(items)).encode()

    def lookup(self, body: bytes) -> bytes:
        self.lookups += 1
        reference = _between(body, b"<JobId>JRI-", b"</JobId>")
        job_id = self.by_reference.get(reference)
        if job_id is None:  # the service's "Invalid Job ID"
            return REFERENCE_ANSWER.format(status=-5019).encode()
        done = self.asks.get(job_id, 0) >= self.final_after
        return REFERENCE_ANSWER.format(status=1 if done else 3).encode()

    def json(self) -> bytes:
        fields = ("sends", "status_calls", "job_asks", "lookups", "resent", "last_send")
        return json.dumps({name: getattr(self, name) for name in fields}).encode()


def _between(data: bytes, start: bytes, end: bytes) -> str:
    at = data.rfind(start)
    if at < 0:
        return ""
    return data[at + len(start) : data.find(end, at)].decode()


#: Bytes of a request's body kept at each end: the call's name is in its head, a SendFaxEx's
#: ReferenceId in its tail (after the documents); a status call's body is kept whole.
KEEP = 64 * 1024


class _Sink(asyncio.Protocol):
    """Reads each request (head, then Content-Length bytes: a small body kept whole, a large
    one's ends) and answers it; ``GET /counts`` answers the counts as JSON."""

    counts: _Counts

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport
        self.buffer = b""
        self.left = -1  # body bytes still to come; -1 while reading a head
        self.method = b""
        self.first = b""
        self.last = b""

    def data_received(self, data: bytes) -> None:
        while data:
            if self.left < 0:
                self.buffer += data
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head, data = self.buffer[:end], self.buffer[end + 4 :]
                self.buffer = b""
                self.method = head.split(b" ", 1)[0]
                self.left = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        self.left = int(value)
                self.first = self.last = b""
            taken = min(self.left, len(data))
            if taken:
                piece, data = data[:taken], data[taken:]
                if len(self.first) < KEEP:
                    self.first += piece[: KEEP - len(self.first)]
                self.last = (self.last + piece)[-KEEP:]
                self.left -= taken
            if self.left == 0:
                self.left = -1
                self.respond()

    def respond(self) -> None:
        if self.method == b"GET":
            body, kind = self.counts.json(), b"application/json"
        else:
            body, kind = self.counts.answer(self.first, self.last), b"text/xml; charset=utf-8"
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (kind, len(body), body)
        )


async def _serve(final_after: int) -> None:
    _Sink.counts = _Counts(final_after)
    server = await asyncio.get_running_loop().create_server(_Sink, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


@contextmanager
def _sink(final_after: int) -> Iterator[str]:
    """The sink in its own process; its base URL."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--sink", str(final_after)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        if not port:
            raise RuntimeError("the journal benchmark's sink did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def sink_counts(url: str) -> dict[str, Any]:
    """The sink's counts so far (plain http.client: no proxy from the environment)."""
    host, port = url.rpartition("/")[2].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", "/counts")
        answer = conn.getresponse()
        counts: dict[str, Any] = json.loads(answer.read())
        return counts
    finally:
        conn.close()


# -- what every child shares ----------------------------------------------------------------


def _document(folder: Path) -> Path:
    path = folder / "letter.pdf"
    if not path.exists():
        path.write_bytes(b"%PDF-1.4\n" + os.urandom(DOCUMENT_SIZE - 9))
    return path


def _settled(path: Path) -> None:
    """Wait until ``path`` is older than the journal's settling time: a document a batch sends
    was written before it, while one written within that time is read again at each use (its
    times cannot yet tell a later write apart), a cost for the first seconds of a new file."""
    from faxws.journal._payload import SETTLED_NS

    age = time.time_ns() - max(path.stat().st_mtime_ns, path.stat().st_ctime_ns)
    if age < SETTLED_NS:
        time.sleep((SETTLED_NS - age) / 1e9 + 0.05)


def _client(url: str) -> Any:
    from faxws import FaxClient

    return FaxClient(url, user_id=USER, pin=PIN)


def _bare_loop(client: Any, document: Path, n: int) -> None:
    """N faxes as a caller without a journal sends them: each its own ReferenceId."""
    from faxws import FaxFile, JobOptions, Recipient

    for _ in range(n):
        options = JobOptions(reference_id=uuid.uuid4().hex)
        client.send_fax([Recipient(NUMBER)], [FaxFile(document, 101)], options=options)


def _add(batch: Any, document: Path, n: int, prefix: str = "fax") -> None:
    """N rows, each its own FaxSpec (as a manifest's rows are), the same document, added as
    the README shows and the command line adds a manifest: ``Batch.add_many``."""
    from faxws import Recipient
    from faxws.journal import FaxSpec, FileSpec

    batch.add_many(
        (
            f"{prefix}-{i:06d}",
            FaxSpec(recipients=(Recipient(NUMBER),), files=(FileSpec(document),)),
        )
        for i in range(n)
    )


def _sent(summary: Any, n: int) -> None:
    from faxws.journal import State

    if summary.counts.get(State.SUBMITTED, 0) + summary.counts.get(State.DELIVERED, 0) != n:
        raise RuntimeError(f"the journal's run ended with {summary.counts}, not {n} sent")


def _run_child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"journal_bench {args[0]} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _filesystem(path: Path) -> str:
    """The type of the file system holding ``path`` (from /proc/mounts), or "?"."""
    best, kind = "", "?"
    try:
        with open("/proc/mounts") as fh:
            for line in fh:
                fields = line.split()
                mount = fields[1]
                inside = str(path).startswith(mount.rstrip("/") + "/") or str(path) == mount
                if inside and len(mount) > len(best):
                    best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


# -- 1. cost per fax on SQLite --------------------------------------------------------------


def child_sqlite(url: str, n: int, rounds: int) -> None:
    from faxws.journal import Batch, open_journal

    client = _client(url)
    with tempfile.TemporaryDirectory(prefix="faxws-journal-bench-") as tmp:
        folder = Path(tmp)
        document = _document(folder)
        times: dict[str, list[float]] = {"journal": [], "bare": []}

        def bare() -> float:
            started = time.perf_counter()
            _bare_loop(client, document, n)
            return time.perf_counter() - started

        def journal(name: str, count: int) -> float:
            store = open_journal(folder / f"{name}.db")
            try:
                started = time.perf_counter()
                batch = Batch(store, client)
                _add(batch, document, count)
                summary = batch.run(workers=1, wait=False)
                elapsed = time.perf_counter() - started
            finally:
                store.close()
            _sent(summary, count)
            return elapsed

        _bare_loop(client, document, 10)  # warm: imports, the connection
        journal("warm", 10)
        _settled(document)
        for r in range(rounds):
            ways = [("bare", bare), ("journal", lambda r=r: journal(f"round-{r}", n))]
            for name, way in ways if r % 2 == 0 else ways[::-1]:
                times[name].append(way())
        fs = _filesystem(folder)
    print(json.dumps({**times, "n": n, "filesystem": fs}))


# -- 2. 8 processes on PostgreSQL ------------------------------------------------------------


@contextmanager
def _postgres() -> Iterator[Any]:
    """A PostgreSQL server started as the journal's tests start theirs, but durable again
    (``fsync`` and ``full_page_writes`` on, as a production server runs); None when the
    server's binaries are missing, unless ``CI`` or ``FAXWS_REQUIRE_POSTGRES`` is set."""
    sys.path.insert(0, str(ROOT / "tests" / "journal"))
    import postgres_server

    bindir = postgres_server.find_bindir()
    if bindir is None:
        required = [name for name in postgres_server.REQUIRED if os.environ.get(name)]
        if required:
            raise RuntimeError(f"{postgres_server.INSTALL} ({' and '.join(required)} set)")
        yield None
        return
    server = postgres_server.PostgresServer(bindir)
    try:
        server.start()
        for setting in ("fsync", "full_page_writes"):
            server.execute(f"ALTER SYSTEM SET {setting} = on")
        server.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while server.execute("SHOW fsync") != [("on",)] or server.execute(
            "SHOW full_page_writes"
        ) != [("on",)]:
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark's PostgreSQL server kept fsync off")
            time.sleep(0.05)
        yield server
    finally:
        server.stop()


def child_process(way: str, url: str, target: str, count: int, document: str) -> None:
    """One of the 8 processes: ready once its client (and journal) made a first call, then
    sends when a line arrives on stdin; prints when it started and ended (monotonic) and the
    CPU time it spent meanwhile."""
    client = _client(url)
    client.get_real_time_fax_status(["warm"])  # the connection open
    store: Any = None
    if way == "journal":
        from faxws.journal import Batch, open_journal

        store = open_journal(target)
        store.counts_by_state()
    print("ready", flush=True)
    sys.stdin.readline()
    cpu = time.process_time()
    started = time.monotonic()
    if way == "journal":
        Batch(store, client).run(workers=1, wait=False)
    else:
        _bare_loop(client, Path(document), count)
    ended = time.monotonic()
    cpu = time.process_time() - cpu
    if store is not None:
        store.close()
    print(json.dumps({"started": started, "ended": ended, "cpu": cpu}), flush=True)


def _together(args: list[str], count: int) -> tuple[float, list[dict[str, Any]]]:
    """``count`` processes of ``args``, released together once all are ready; the release
    time and what each printed."""
    command = [sys.executable, __file__, *args]
    procs = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(count)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a journal benchmark process did not start: {args[:2]}")
        released = time.monotonic()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"a journal benchmark process failed: {args[:2]}")
            results.append(json.loads(line))
    except BaseException:
        for proc in procs:
            proc.kill()
        raise
    finally:
        for proc in procs:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
            proc.wait(60)
    failed = [proc.returncode for proc in procs if proc.returncode != 0]
    if failed:
        raise RuntimeError(f"journal benchmark processes ended with {failed}: {args[:2]}")
    return released, results


def processes(url: str, n: int, rounds: int) -> dict[str, Any] | None:
    """Rounds of 8 journal processes and 8 bare loops taking turns (None without a server)."""
    from faxws.journal import Batch, open_journal

    each = n // PROCESSES
    out: dict[str, Any] = {"n": each * PROCESSES, "processes": PROCESSES}
    for name in ("journal", "bare", "journal_cpu", "bare_cpu", "journal_sent", "add"):
        out[name] = []
    client = _client(url)
    with _postgres() as server, tempfile.TemporaryDirectory(prefix="faxws-journal-") as tmp:
        if server is None:
            return None
        document = _document(Path(tmp))
        _settled(document)
        for r in range(rounds):
            for way in ("bare", "journal") if r % 2 == 0 else ("journal", "bare"):
                dsn = "-"
                if way == "journal":
                    server.execute(f"CREATE SCHEMA bench_{r}")
                    dsn = server.dsn(f"bench_{r}")
                    store = open_journal(dsn)
                    try:
                        started = time.perf_counter()
                        _add(Batch(store, client), document, out["n"])
                        out["add"].append(time.perf_counter() - started)
                    finally:
                        store.close()
                before = sink_counts(url)
                args = ["--child-process", way, url, dsn, str(each), str(document)]
                released, results = _together(args, PROCESSES)
                after = sink_counts(url)
                if after["sends"] - before["sends"] != out["n"]:
                    sent = after["sends"] - before["sends"]
                    raise RuntimeError(f"{way}: {sent} faxes sent, not {out['n']}")
                ended = max(result["ended"] for result in results)
                out[way].append(out["n"] / (ended - released))
                out[f"{way}_cpu"].append(sum(result["cpu"] for result in results) / out["n"])
                if way == "journal":
                    # the rate until the last fax was answered, before the runs noticed
                    out["journal_sent"].append(out["n"] / (after["last_send"] - released))
    client.close()
    return out


# -- 3. tracking ----------------------------------------------------------------------------


def child_tracking(url: str, m: int, rounds: int) -> None:
    from faxws.journal import Batch, State, open_journal

    client = _client(url)
    out: dict[str, Any] = {"calls": [], "lookups": [], "asks": [], "seconds": [], "m": m}
    with tempfile.TemporaryDirectory(prefix="faxws-journal-bench-") as tmp:
        folder = Path(tmp)
        document = _document(folder)
        for r in range(rounds):
            store = open_journal(folder / f"track-{r}.db")
            try:
                batch = Batch(store, client)
                _add(batch, document, m)
                before = sink_counts(url)
                started = time.perf_counter()
                summary = batch.run(workers=TRACK_WORKERS, wait=True)
                out["seconds"].append(time.perf_counter() - started)
                after = sink_counts(url)
            finally:
                store.close()
            if summary.counts.get(State.DELIVERED, 0) != m:
                raise RuntimeError(f"tracking ended with {summary.counts}, not {m} delivered")
            out["calls"].append(after["status_calls"] - before["status_calls"])
            out["lookups"].append(after["lookups"] - before["lookups"])
            out["asks"].append(after["job_asks"] - before["job_asks"])
    print(json.dumps(out))


# -- what bench.py calls --------------------------------------------------------------------


def measure(*, smoke: bool) -> dict[str, Any]:
    """Every figure's rounds against one sink; the sink must have seen no ReferenceId twice."""
    rounds = 3 if smoke else 5
    n, n_processes, m = (40, 80, 100) if smoke else (500, 2400, 1000)
    # a fax polled twice in smoke sizes: each round of tracking takes about 4 s, not 10
    final_after = 2 if smoke else FINAL_AFTER
    with _sink(final_after) as url:
        cost = _run_child(["--child-sqlite", url, str(n), str(rounds)])
        many = processes(url, n_processes, rounds)
        tracking = _run_child(["--child-tracking", url, str(m), str(rounds)])
        resent = sink_counts(url)["resent"]
    if resent:
        raise RuntimeError(f"the sink was sent {resent} ReferenceIds a second time")
    # the figure's rounds: a job answered final is never asked again
    if any(asks != m * final_after for asks in tracking["asks"]):
        raise RuntimeError(f"tracking asked {tracking['asks']} job ids, not {m * final_after}")
    return {
        "rounds": rounds,
        "document": DOCUMENT_SIZE,
        "final_after": final_after,
        "cost": cost,
        "processes": many,
        "tracking": tracking,
    }


def _spread(values: list[float], unit: str, scale: float = 1.0, digits: int = 2) -> str:
    shown = [v * scale for v in values]
    return (
        f"{statistics.median(shown):.{digits}f}{unit} "
        f"(min {min(shown):.{digits}f}, max {max(shown):.{digits}f})"
    )


def _row(
    figure: str, value: str, baseline: str, ratios: list[float], target: str, met: bool
) -> dict[str, Any]:
    return {
        "figure": figure,
        "value": value,
        "baseline": baseline,
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "target": target,
        "met": met,
    }


def _ratios(ours: list[float], theirs: list[float]) -> list[float]:
    # a time or a rate is never 0, but a table of any figures must not divide by it
    return [a / max(b, 1e-12) for a, b in zip(ours, theirs, strict=True)]


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the table (the fields of bench.Row): medians of per-round ratios."""
    kib = figures["document"] // 1024
    cost = figures["cost"]
    n = cost["n"]
    ratios = _ratios(cost["journal"], cost["bare"])
    extra = statistics.median(j - b for j, b in zip(cost["journal"], cost["bare"], strict=True))
    out = [
        _row(
            f"journal: cost per fax on SQLite ({cost['filesystem']}), add + Batch.run "
            f"(1 worker) vs a bare send_fax loop, {n} faxes of {kib} KiB",
            f"{_spread([t / n for t in cost['journal']], ' ms', 1e3)}; "
            f"+{extra / n * 1e3:.2f} ms a fax",
            f"bare loop {_spread([t / n for t in cost['bare']], ' ms', 1e3)}",
            ratios,
            "<= 1.25x",
            statistics.median(ratios) <= 1.25,
        )
    ]
    many = figures["processes"]
    if many is None:
        out.append(
            _row(
                "journal: 8 processes on PostgreSQL vs 8 bare loops, faxes per second",
                "not measured: PostgreSQL's server binaries were not found",
                "-",
                [0.0],
                ">= 0.8x",
                False,
            )
        )
    else:
        ratios = _ratios(many["journal"], many["bare"])
        out.append(
            _row(
                f"journal: {many['processes']} processes on PostgreSQL (Batch.run, 1 worker "
                f"each) vs {many['processes']} bare loops, {many['n']} faxes per second",
                f"{_spread(many['journal'], '/s', digits=0)} (all answered at "
                f"{statistics.median(many['journal_sent']):.0f}/s); CPU "
                f"{_spread(many['journal_cpu'], ' ms a fax', 1e3)}",
                f"bare loops {_spread(many['bare'], '/s', digits=0)}; CPU "
                f"{_spread(many['bare_cpu'], ' ms a fax', 1e3)}",
                ratios,
                ">= 0.8x",
                statistics.median(ratios) >= 0.8,
            )
        )
    track = figures["tracking"]
    m, polled = track["m"], figures["final_after"]
    # every job is answered final on its FINAL_AFTER-th ask: each fax is polled that often
    per_fax_round = [
        (calls + lookups) / (m * polled)
        for calls, lookups in zip(track["calls"], track["lookups"], strict=True)
    ]
    floor = 1 / STATUS_BATCH
    value = statistics.median(per_fax_round)
    out.append(
        _row(
            f"journal: status calls per fax per polling round, {m} faxes tracked to delivery "
            f"(Batch.run, {TRACK_WORKERS} workers, {polled} rounds each)",
            f"{value:.4f} (1 call per {1 / max(value, 1e-12):.0f} faxes); "
            f"{_spread(track['seconds'], ' s a run', digits=1)}",
            f"floor {floor:.4f} (1 call per {STATUS_BATCH} job ids)",
            [v / floor for v in per_fax_round],
            "<= 1/50 (0.0200)",
            value <= 1 / 50,
        )
    )
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--sink"]:
        asyncio.run(_serve(int(argv[1])))
    elif argv[:1] == ["--child-sqlite"]:
        child_sqlite(argv[1], int(argv[2]), int(argv[3]))
    elif argv[:1] == ["--child-process"]:
        child_process(argv[1], argv[2], argv[3], int(argv[4]), argv[5])
    elif argv[:1] == ["--child-tracking"]:
        child_tracking(argv[1], int(argv[2]), int(argv[3]))
    elif argv[:1] == ["--table"]:
        for row in rows(measure(smoke=argv[1:2] == ["--smoke"])):
            print(
                f"| {row['figure']} | {row['ratio']:.2f}x ({row['ratio_min']:.2f}-"
                f"{row['ratio_max']:.2f}x) | {row['target']} | {'yes' if row['met'] else 'NO'} "
                f"| {row['value']} | {row['baseline']} |"
            )
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
