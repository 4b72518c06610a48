"""The async client's figures for ``make bench``: throughput against the threaded FaxClient
and against the floor (bare aiohttp posting a prebuilt body), at 64 concurrent report calls
and at one call at a time, and the extra memory of a large document.

Every way of calling runs in one child process pinned to one core, taking turns in each
round (so drift hits all alike), against an asyncio sink in its own process (on another core
when there is one): a sink that answers tens of thousands of calls a second, so the client is
what is measured. ``bench.py`` calls :func:`measure` and turns the figures into rows.

    python benchmarks/async_bench.py --sink            # the sink (prints its port)
    python benchmarks/async_bench.py --child URL N R C # one run of the rounds (prints JSON)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
USER, PIN = "mbx0000000000", "0000"
REPORT_RESPONSE = (
    f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP}"><soap:Body>'
    '<GetFaxBroadcastReportResponse xmlns="urn:FaxWS"><return>true</return><WSError>'
    "<ErrorCode>0</ErrorCode><ErrorString/></WSError></GetFaxBroadcastReportResponse>"
    "</soap:Body></soap:Envelope>"
).encode()
SEND_RESPONSE = (
    f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP}"><soap:Body>'
    '<FaxSendResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds><item><JobId>J1</JobId>'
    "</item></FaxJobIds><TTFP>30</TTFP><WSError><ErrorCode>0</ErrorCode><ErrorString/>"
    "</WSError></FaxSendResponse></soap:Body></soap:Envelope>"
).encode()
FLOOR_REPORT_BODY = (
    f'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="{SOAP}"><soap:Header/>'
    f'<soap:Body><GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{USER}</UserID><strPIN>{PIN}'
    "</strPIN><JobId>J1</JobId><RecipientType>0</RecipientType><RecipAddress/>"
    "</GetFaxBroadcastReport></soap:Body></soap:Envelope>"
).encode()
HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}
CONCURRENCY = 64


def _pin(cpu: int) -> None:
    """Run on one core (the last one for the sink, the first for the clients)."""
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


# -- the sink (its own process) -------------------------------------------------------------


class _Sink(asyncio.Protocol):
    """Reads each request (head, then Content-Length bytes, counted not kept) and answers a
    fixed valid response: the report answer, or the SendFax one."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport
        self.head = b""
        self.left = -1  # body bytes still to come; -1 while reading a head
        self.answer = REPORT_RESPONSE

    def data_received(self, data: bytes) -> None:
        while data:
            if self.left < 0:
                self.head += data
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    return
                head, data = self.head[:end], self.head[end + 4 :]
                self.head = b""
                self.left = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        self.left = int(value)
                first = data[: min(len(data), 400)]
                self.answer = SEND_RESPONSE if b"<SendFax" in first else REPORT_RESPONSE
            taken = min(self.left, len(data))
            self.left -= taken
            data = data[taken:]
            if self.left == 0:
                self.left = -1
                self.transport.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(self.answer), self.answer)
                )


async def _serve() -> None:
    server = await asyncio.get_running_loop().create_server(_Sink, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


class AsyncSinkProcess:
    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--sink"], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        return f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# -- the measurements (a child process, one core) -------------------------------------------


async def _rate(call: Callable[[], Awaitable[object]], calls: int, concurrency: int) -> float:
    """Calls per second, ``concurrency`` of them in flight at a time."""
    queue = iter(range(calls))

    async def worker() -> None:
        for _ in queue:
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return calls / (time.perf_counter() - started)


def _threaded_rate(call: Callable[[], object], calls: int, threads: int) -> float:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: call(), range(threads * 2)))  # every connection, warm
        started = time.perf_counter()
        list(pool.map(lambda _: call(), range(calls)))
        return calls / (time.perf_counter() - started)


def child(url: str, calls: int, rounds: int, concurrency: int) -> None:
    _pin(0)
    import aiohttp

    from faxws import AsyncFaxClient, FaxClient

    rates: dict[str, list[float]] = {
        "threaded": [],
        "async": [],
        "floor": [],
        "sync_1": [],
        "async_1": [],
    }
    threaded = FaxClient(url, user_id=USER, pin=PIN, max_connections=concurrency)
    single = FaxClient(url, user_id=USER, pin=PIN)

    async def run_round() -> None:
        async with (
            AsyncFaxClient(url, user_id=USER, pin=PIN, max_connections=concurrency) as client,
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session,
        ):

            async def floor() -> None:
                async with session.post(
                    f"{url}/fax/v5", data=FLOOR_REPORT_BODY, headers=HEADERS
                ) as response:
                    await response.read()

            def report() -> Awaitable[object]:
                return client.get_fax_broadcast_report("J1")

            await _rate(report, concurrency * 2, concurrency)  # every connection, warm
            await _rate(floor, concurrency * 2, concurrency)
            rates["async"].append(await _rate(report, calls, concurrency))
            rates["floor"].append(await _rate(floor, calls, concurrency))
            rates["async_1"].append(await _rate(report, max(calls // 4, 20), 1))

    for _ in range(rounds):
        rates["threaded"].append(
            _threaded_rate(lambda: threaded.get_fax_broadcast_report("J1"), calls, concurrency)
        )
        asyncio.run(run_round())
        single.get_fax_broadcast_report("J1")  # warm
        started = time.perf_counter()
        n = max(calls // 4, 20)
        for _ in range(n):
            single.get_fax_broadcast_report("J1")
        rates["sync_1"].append(n / (time.perf_counter() - started))
    threaded.close()
    single.close()
    print(json.dumps(rates))


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def child_large(url: str, path: str) -> None:
    """Send ``path`` once with AsyncFaxClient; print the extra peak memory and the time."""
    from faxws import AsyncFaxClient, FaxFile

    async def main() -> tuple[int, float]:
        async with AsyncFaxClient(url, user_id=USER, pin=PIN) as client:
            await client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)])  # warm up
            document = FaxFile.from_path(path)
            baseline = _status("VmRSS")
            try:
                with open("/proc/self/clear_refs", "w") as fh:
                    fh.write("5")  # reset the peak RSS to the current RSS
            except OSError:
                pass
            started = time.perf_counter()
            await client.send_fax(["+1 555 0100"], [document])
            wall = time.perf_counter() - started
            return max(0, _status("VmHWM") - baseline), wall

    extra, wall = asyncio.run(main())
    print(json.dumps({"size": os.path.getsize(path), "extra": extra, "wall": wall}))


# -- what bench.py calls --------------------------------------------------------------------


def measure(sink_url: str, size: int, *, smoke: bool) -> dict[str, Any]:
    """Throughput rounds against an asyncio sink; a document of ``size`` bytes sent to
    ``sink_url``."""
    calls, rounds = (100, 3) if smoke else (3000, 5)
    with AsyncSinkProcess() as url:
        done = subprocess.run(
            [sys.executable, __file__, "--child", url, str(calls), str(rounds), str(CONCURRENCY)],
            capture_output=True,
            text=True,
            check=True,
        )
    rates: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scan.pdf"
        block = os.urandom(1 << 20)
        with open(path, "wb") as fh:
            for _ in range(size // len(block)):
                fh.write(block)
            fh.write(block[: size % len(block)])
        large = subprocess.run(
            [sys.executable, __file__, "--child-large", sink_url, str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
    return {
        "rates": rates,
        "large": json.loads(large.stdout.strip().splitlines()[-1]),
        "calls": calls,
        "rounds": rounds,
    }


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f}/s (min {min(values):.0f}, max {max(values):.0f})"


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the table (the fields of bench.Row), medians of the rounds compared."""
    r = figures["rates"]
    med = {name: statistics.median(values) for name, values in r.items()}
    per_round = [a / t for a, t in zip(r["async"], r["threaded"], strict=True)]
    large = figures["large"]
    share = large["extra"] / large["size"]
    return [
        {
            "figure": f"throughput, {CONCURRENCY} concurrent report calls, one core: "
            f"AsyncFaxClient vs FaxClient ({CONCURRENCY} threads)",
            "value": _spread(r["async"]),
            "baseline": f"FaxClient {_spread(r['threaded'])}; per round "
            f"{min(per_round):.2f}x-{max(per_round):.2f}x",
            "ratio": med["async"] / med["threaded"],
            "target": ">= 2.5x (aim 4x)",
            "met": med["async"] / med["threaded"] >= 2.5,
        },
        {
            "figure": f"throughput, {CONCURRENCY} concurrent report calls, one core: "
            "AsyncFaxClient vs floor (aiohttp, prebuilt body)",
            "value": _spread(r["async"]),
            "baseline": f"floor {_spread(r['floor'])}",
            "ratio": med["async"] / med["floor"],
            "target": "-",
            "met": True,
        },
        {
            "figure": "throughput, 1 call at a time: AsyncFaxClient vs FaxClient",
            "value": _spread(r["async_1"]),
            "baseline": f"FaxClient {_spread(r['sync_1'])}",
            "ratio": med["async_1"] / med["sync_1"],
            "target": ">= 1x",
            "met": med["async_1"] >= med["sync_1"],
        },
        {
            "figure": f"large document {large['size'] / (1 << 20):.1f} MiB: AsyncFaxClient "
            "extra peak memory / file size",
            "value": f"{share:.2f}x ({large['extra'] / (1 << 20):.1f} MiB)",
            "baseline": f"in {large['wall']:.3f} s",
            "ratio": share,
            "target": "<= 0.25x",
            "met": share <= 0.25,
        },
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sink"]:
        _pin((os.cpu_count() or 1) - 1)
        asyncio.run(_serve())
    elif sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1:2] == ["--child-large"]:
        child_large(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
