"""Load: 16 threads share one client (and 64 tasks one async client) for 2,000 SendFax calls
to the simulator."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from faxws import AsyncFaxClient, FaxClient, FaxFile, FileType
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

THREADS = 16
CALLS = 2000


def test_sixteen_threads_two_thousand_send_fax_calls() -> None:
    pdf = FaxFile(b"%PDF-1.4 load test", FileType.PDF)
    with FaxWSSimulator() as sim:
        client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, max_connections=THREADS)

        def call(n: int) -> tuple[str, str, tuple[str, ...]]:
            rid = f"load-{n:04d}"
            result = client.send_fax([f"+1 555 {n:04d}"], [pdf], request_id=rid)
            return rid, result.request_id, result.job_ids

        with ThreadPoolExecutor(THREADS) as pool:
            outcomes = list(pool.map(call, range(CALLS)))

        assert len(outcomes) == CALLS  # zero errors: any would have raised
        assert all(rid == result_rid for rid, result_rid, _ in outcomes)
        jobs = sim.jobs
        assert len(jobs) == CALLS
        by_request = {job.request_id: job for job in jobs}
        for rid, _, job_ids in outcomes:
            job = by_request[rid]
            assert job.job_ids == job_ids
            assert job.recipients[0].recip_fax_number == f"+1 555 {rid[-4:]}"
        assert len({j for _, _, ids in outcomes for j in ids}) == CALLS
        assert sim.connections <= THREADS + 4  # connections are reused


def test_sixty_four_tasks_two_thousand_send_fax_calls_on_one_async_client() -> None:
    pdf = FaxFile(b"%PDF-1.4 load test", FileType.PDF)
    tasks, connections = 64, 16
    with FaxWSSimulator() as sim:

        async def main() -> list[tuple[str, str, tuple[str, ...]]]:
            outcomes: list[tuple[str, str, tuple[str, ...]]] = []
            queue = iter(range(CALLS))
            async with AsyncFaxClient(
                sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, max_connections=connections
            ) as client:

                async def worker() -> None:
                    for n in queue:
                        rid = f"load-{n:04d}"
                        result = await client.send_fax([f"+1 555 {n:04d}"], [pdf], request_id=rid)
                        outcomes.append((rid, result.request_id, result.job_ids))

                await asyncio.gather(*(worker() for _ in range(tasks)))
            return outcomes

        outcomes = asyncio.run(main())
        assert len(outcomes) == CALLS  # zero errors: any would have raised
        assert all(rid == result_rid for rid, result_rid, _ in outcomes)
        by_request = {job.request_id: job for job in sim.jobs}
        assert len(by_request) == CALLS
        for rid, _, job_ids in outcomes:
            job = by_request[rid]
            assert job.job_ids == job_ids
            assert job.recipients[0].recip_fax_number == f"+1 555 {rid[-4:]}"
        assert len({j for _, _, ids in outcomes for j in ids}) == CALLS
        assert sim.connections <= connections  # at most the pool's size, reused
