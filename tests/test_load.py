"""Load: 16 threads share one client for 2,000 SendFax calls to the simulator."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from faxws import FaxClient, FaxFile, FileType
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
