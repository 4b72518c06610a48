"""Thread scaling for ``make bench``: how much of its one-thread throughput one shared
``FaxClient`` keeps at 8 and 32 threads, against the same figure for the floor, and the
voluntary context switches each call costs.

The floor is plain requests: one ``Session`` whose pool holds a connection per thread, and the
report request (the same body bytes) prepared once and sent with ``Session.send``. FaxClient is
made with its defaults, so its default pool must fit 32 threads (the run counts urllib3's
"Connection pool is full" warnings). Scaling is the throughput at N threads divided by that at
one thread, report calls.

The calls run in one child process, its threads free to use every core as an application's
would, against async_bench's asyncio sink in its own process (which answers far faster than
either client calls). For each way and thread count a crew of threads lasts the whole run;
a slice shares some calls out among its threads, releases them together and times them until
the last is done (each thread calls in a loop, no executor in between). A round is several
slices of every way and thread count in turn (the first way alternating between rounds), so
that a slow spell of a busy machine falls on all alike; a round's rate is its median slice's,
and the ratio of the two scalings is taken per round. Context switches are each thread's own
(``getrusage`` ``RUSAGE_THREAD``), summed over the threads and divided by the calls.
``bench.py`` calls :func:`measure` and :func:`rows`.

    python benchmarks/threads_bench.py --table [--smoke]  # the rows alone, as in the README
    python benchmarks/threads_bench.py --child URL CALLS PER_THREAD SLICES ROUNDS  # prints JSON
"""

from __future__ import annotations

import json
import logging
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from async_bench import FLOOR_REPORT_BODY, HEADERS, PIN, USER, sink_process  # benchmarks/

THREADS = (1, 8, 32)
WAYS = ("faxws", "floor")
#: Threads share the process's figures where RUSAGE_THREAD is missing (not Linux).
_WHO = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


class _Crew:
    """``threads`` threads making one way's calls, slice after slice: each slice's calls are
    shared out, the threads released together and timed until the last is done. The threads
    and their connections last for the whole run, so a slice measures calls, not start-up."""

    def __init__(self, call: Callable[[], object], threads: int) -> None:
        self._call = call
        self._per_thread = 0
        self._start = threading.Barrier(threads + 1)
        self._done = threading.Barrier(threads + 1)
        self._switches = [0] * threads
        self._failures: list[BaseException] = []
        self._threads = [
            threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()
        self.run(2 * threads)  # every thread's connection open

    def _work(self, i: int) -> None:
        while True:
            try:
                self._start.wait()
            except threading.BrokenBarrierError:
                return
            before = resource.getrusage(_WHO).ru_nvcsw
            try:
                for _ in range(self._per_thread):
                    self._call()
            except BaseException as exc:
                self._failures.append(exc)
            self._switches[i] += resource.getrusage(_WHO).ru_nvcsw - before
            self._done.wait()

    def run(self, calls: int) -> tuple[float, int, int]:
        """(seconds, calls made, voluntary context switches of the crew) of one slice."""
        self._per_thread = max(1, calls // len(self._threads))
        before = sum(self._switches)
        self._start.wait()
        started = time.perf_counter()
        self._done.wait()
        elapsed = time.perf_counter() - started
        if self._failures:
            raise self._failures[0]
        return elapsed, self._per_thread * len(self._threads), sum(self._switches) - before

    def close(self) -> None:
        self._start.abort()
        for thread in self._threads:
            thread.join()


class _PoolFull(logging.Handler):
    """Counts urllib3's "Connection pool is full" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Connection pool is full" in record.getMessage():
            self.count += 1


@contextmanager
def _counting_pool_full() -> Iterator[_PoolFull]:
    handler = _PoolFull()
    log = logging.getLogger("urllib3.connectionpool")
    log.addHandler(handler)
    try:
        yield handler
    finally:
        log.removeHandler(handler)


def child(url: str, calls: int, per_thread: int, slices: int, rounds: int) -> None:
    """``rounds`` rounds of ``slices`` slices of each way and thread count, a slice being
    ``calls`` calls, or ``per_thread`` calls for each thread when that is more (a slice of a
    few calls per thread would time mostly the threads' start and finish)."""
    import requests
    import requests.adapters

    from faxws import FaxClient

    client = FaxClient(url, user_id=USER, pin=PIN)  # the default pool
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=max(THREADS)))
    request = requests.Request("POST", f"{url}/fax/v5", data=FLOOR_REPORT_BODY, headers=HEADERS)
    prepared = request.prepare()

    def floor() -> None:
        session.send(prepared).raise_for_status()

    def faxws() -> None:
        client.get_fax_broadcast_report("J1")

    fns = {"faxws": faxws, "floor": floor}
    rates: dict[str, list[float]] = {f"{w}_{n}": [] for w in WAYS for n in THREADS}
    switches: dict[str, list[float]] = {key: [] for key in rates}
    with _counting_pool_full() as pool_full:
        crews = {f"{w}_{n}": _Crew(fns[w], n) for w in WAYS for n in THREADS}
        for i in range(rounds):
            slice_rates: dict[str, list[float]] = {key: [] for key in crews}
            made = dict.fromkeys(crews, 0)
            switched = dict.fromkeys(crews, 0)
            # Slices of every way and thread count in turn, so that load that comes and goes
            # falls on all of them; a round's rate is the median slice's, so that a slice hit
            # by a burst of other work does not count more than any other.
            for _ in range(slices):
                for n in THREADS:
                    for way in WAYS if i % 2 == 0 else WAYS[::-1]:
                        key = f"{way}_{n}"
                        elapsed, count, switches_made = crews[key].run(max(calls, n * per_thread))
                        slice_rates[key].append(count / elapsed)
                        made[key] += count
                        switched[key] += switches_made
            for key in crews:
                rates[key].append(statistics.median(slice_rates[key]))
                switches[key].append(switched[key] / made[key])
        for crew in crews.values():
            crew.close()
    print(json.dumps({"rates": rates, "switches": switches, "pool_full": pool_full.count}))


# -- what bench.py calls --------------------------------------------------------------------


def measure(sink_url: str | None, smoke: bool) -> dict[str, Any]:
    """The rounds against ``sink_url``, or against an asyncio sink started here when None."""
    # Nine rounds: a round's ratio swings more here than in any other row (two scalings
    # divided, each a rate at N threads over one at 1), so its median needs more of them.
    sizes = (16, 1, 2, 3) if smoke else (100, 10, 8, 9)  # calls, per_thread, slices, rounds

    def run(url: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, __file__, "--child", url, *map(str, sizes)],
            capture_output=True,
            text=True,
            check=True,
        )
        figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return figures

    if sink_url is not None:
        figures = run(sink_url)
    else:
        with sink_process() as url:
            figures = run(url)
    return {**figures, "rounds": sizes[-1]}


def _spread(values: list[float], unit: str = "x") -> str:
    return f"{statistics.median(values):.2f}{unit} ({min(values):.2f}-{max(values):.2f})"


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the table (the fields of bench.Row): each ratio is the median of the
    per-round ratios, with their minimum and maximum."""
    rates, switches = figures["rates"], figures["switches"]
    out: list[dict[str, Any]] = []
    for n in THREADS[1:]:
        scaling = {
            way: [a / b for a, b in zip(rates[f"{way}_{n}"], rates[f"{way}_1"], strict=True)]
            for way in WAYS
        }
        ratios = [a / b for a, b in zip(scaling["faxws"], scaling["floor"], strict=True)]
        ratio = statistics.median(ratios)
        full = f"; pool full {figures['pool_full']}x" if n == max(THREADS) else ""
        out.append(
            {
                "figure": f"thread scaling, {n} threads / 1, report calls: one shared "
                "FaxClient (default pool) vs floor",
                "value": f"{_spread(scaling['faxws'])}, "
                f"{statistics.median(rates[f'faxws_{n}']):.0f}/s{full}",
                "baseline": f"floor {_spread(scaling['floor'])}, "
                f"{statistics.median(rates[f'floor_{n}']):.0f}/s",
                "ratio": ratio,
                "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "target": ">= 0.9x",
                "met": ratio >= 0.9,
            }
        )
    for n in THREADS[1:]:
        ours, theirs = switches[f"faxws_{n}"], switches[f"floor_{n}"]
        ratios = [a / b for a, b in zip(ours, theirs, strict=True) if b > 0]
        if not ratios:  # the floor never switched: any switch of ours is infinitely more
            ratios = [float("inf") if max(ours) > 0 else 1.0]
        out.append(
            {
                "figure": f"voluntary context switches per report call, {n} threads",
                "value": _spread(ours, ""),
                "baseline": f"floor {_spread(theirs, '')}",
                "ratio": statistics.median(ratios),
                "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "target": "-",
                "met": True,
            }
        )
    return out


def _table(rows_: list[dict[str, Any]]) -> str:
    lines = [
        "| figure | ratio | min-max | target | faxws | baseline |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows_:
        lines.append(
            f"| {r['figure']} | **{r['ratio']:.2f}x** | {r['ratio_min']:.2f}-{r['ratio_max']:.2f}x "
            f"| {r['target']} | {r['value']} | {r['baseline']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], *map(int, sys.argv[3:7]))
    elif sys.argv[1:2] == ["--table"]:
        print(_table(rows(measure(None, smoke="--smoke" in sys.argv))))
    else:
        sys.exit(__doc__)
