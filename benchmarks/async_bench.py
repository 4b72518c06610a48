"""The async client's figures for ``make bench``: throughput against the threaded FaxClient
and against the floor (bare aiohttp posting a prebuilt body), at 64 concurrent report calls
and at one call at a time, and the extra memory of a large document against the floor's (bare
aiohttp streaming it in the same chunks). Each ratio is taken per round; a row gives their
median, minimum and maximum.

Every way of calling runs in one child process pinned to one core, taking turns in each
round (so drift hits all alike), against an asyncio sink in its own process (on another core
when there is one): a sink that answers tens of thousands of calls a second, so the client is
what is measured. ``bench.py`` calls :func:`measure` and turns the figures into rows.

    python benchmarks/async_bench.py --sink            # the sink (prints its port)
    python benchmarks/async_bench.py --child URL N R C # one run of the rounds (prints JSON)
    python benchmarks/async_bench.py --child-large WAY URL PATH  # one large send (faxws, floor)
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from _common import ServerProcess, large_document, proc_status  # benchmarks/

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


def sink_process() -> ServerProcess:
    """The asyncio sink in its own process (the context gives its URL)."""
    return ServerProcess(__file__)


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


def child_large(way: str, url: str, path: str) -> None:
    """Send ``path`` once the way named; print the extra peak memory and the time. The floor
    streams the same body with bare aiohttp: the file read and encoded in the same 768 KiB
    chunks off the event loop (as the client does, so the loop is never blocked for long),
    with its Content-Length given."""
    import aiohttp
    from bench import CHUNK, SEND_HEAD, SEND_TAIL, floor_send_body  # benchmarks/

    from faxws import AsyncFaxClient, FaxFile

    def encoded(fh: Any) -> bytes:
        return base64.b64encode(fh.read(CHUNK))

    async def streamed() -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        yield SEND_HEAD
        with open(path, "rb") as fh:
            while chunk := await loop.run_in_executor(None, encoded, fh):
                yield chunk
        yield SEND_TAIL

    async def main() -> tuple[int, float]:
        async with (
            AsyncFaxClient(url, user_id=USER, pin=PIN) as client,
            aiohttp.ClientSession() as session,
        ):

            async def floor_post(data: Any, length: int) -> None:
                headers = {**HEADERS, "Content-Length": str(length)}
                async with session.post(f"{url}/fax/v5", data=data, headers=headers) as answer:
                    answer.raise_for_status()
                    await answer.read()

            send: Callable[[], Awaitable[object]]
            if way == "faxws":
                await client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)])  # warm up
                document = FaxFile.from_path(path)

                def send() -> Awaitable[object]:
                    return client.send_fax(["+1 555 0100"], [document])

            else:
                small = floor_send_body(b"JVBERg==")
                await floor_post(small, len(small))  # warm up
                size = os.path.getsize(path)
                length = len(SEND_HEAD) + 4 * ((size + 2) // 3) + len(SEND_TAIL)

                def send() -> Awaitable[object]:
                    return floor_post(streamed(), length)

            baseline = proc_status("VmRSS")
            try:
                with open("/proc/self/clear_refs", "w") as fh:
                    fh.write("5")  # reset the peak RSS to the current RSS
            except OSError:
                pass
            started = time.perf_counter()
            await send()
            wall = time.perf_counter() - started
            return max(0, proc_status("VmHWM") - baseline), wall

    extra, wall = asyncio.run(main())
    print(json.dumps({"way": way, "size": os.path.getsize(path), "extra": extra, "wall": wall}))


# -- what bench.py calls --------------------------------------------------------------------

LARGE_WAYS = ("faxws", "floor")


def measure(sink_url: str, size: int, *, smoke: bool) -> dict[str, Any]:
    """Throughput rounds against an asyncio sink; a document of ``size`` bytes sent to
    ``sink_url`` each way in turn, in a fresh process each, round after round."""
    calls, rounds = (100, 3) if smoke else (3000, 5)
    with sink_process() as url:
        done = subprocess.run(
            [sys.executable, __file__, "--child", url, str(calls), str(rounds), str(CONCURRENCY)],
            capture_output=True,
            text=True,
            check=True,
        )
    rates: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    large = large_document(__file__, LARGE_WAYS, sink_url, size, rounds)
    return {"rates": rates, "large": large, "calls": calls, "rounds": rounds}


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


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the table (the fields of bench.Row): each ratio the median of the
    per-round ratios, with their minimum and maximum."""
    r = figures["rates"]
    med = {name: statistics.median(values) for name, values in r.items()}

    def per_round(ours: str, theirs: str) -> list[float]:
        return [a / b for a, b in zip(r[ours], r[theirs], strict=True)]

    vs_threads, vs_floor, one = (
        per_round("async", "threaded"),
        per_round("async", "floor"),
        per_round("async_1", "sync_1"),
    )
    large = figures["large"]
    size = large["size"]
    extra = {way: [sent["extra"] for sent in large[way]] for way in LARGE_WAYS}
    share = statistics.median(extra["faxws"]) / size
    floor_extra = statistics.median(extra["floor"])
    head = f"throughput, {CONCURRENCY} concurrent report calls, one core: AsyncFaxClient"
    return [
        _row(
            f"{head} vs FaxClient ({CONCURRENCY} threads)",
            f"{med['async']:.0f}/s",
            f"FaxClient {med['threaded']:.0f}/s",
            vs_threads,
            ">= 2.5x (aim 4x)",
            statistics.median(vs_threads) >= 2.5,
        ),
        _row(
            f"{head} vs floor",
            f"{med['async']:.0f}/s",
            f"floor (aiohttp) {med['floor']:.0f}/s",
            vs_floor,
            "-",
            True,
        ),
        _row(
            "throughput, 1 call at a time: AsyncFaxClient vs FaxClient",
            f"{med['async_1']:.0f}/s",
            f"FaxClient {med['sync_1']:.0f}/s",
            one,
            ">= 1x",
            statistics.median(one) >= 1,
        ),
        _row(
            f"large document {size / (1 << 20):.1f} MiB: AsyncFaxClient extra peak memory",
            f"{statistics.median(extra['faxws']) / (1 << 20):.1f} MiB ({share:.2f}x the file)",
            f"floor (aiohttp) {floor_extra / (1 << 20):.1f} MiB ({floor_extra / size:.2f}x)",
            # a floor that needed no new page at all would divide by zero
            [a / max(4096, b) for a, b in zip(extra["faxws"], extra["floor"], strict=True)],
            "<= 0.25x the file",
            share <= 0.25,
        ),
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sink"]:
        _pin((os.cpu_count() or 1) - 1)
        asyncio.run(_serve())
    elif sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1:2] == ["--child-large"]:
        child_large(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
