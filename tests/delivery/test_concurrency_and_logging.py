"""Sharing a client between threads, and what the logs may (and may not) contain."""

from __future__ import annotations

import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import responses
from requests import PreparedRequest

from conftest import (
    URL,
    CaptureServer,
    Face,
    http_reply,
    report_response,
    send_response,
)
from faxws import FaxClient, FaxFile, FaxWSError, Recipient


def echo_request_id(request: PreparedRequest) -> tuple[int, dict[str, str], bytes]:
    """Answer with a job id made of the request id, so each result can be matched."""
    rid = request.headers["x-ch-request-id"]
    return 200, {"x-ch-activity-id": f"act-{rid}"}, send_response([f"JOB-{rid}"])


def test_eight_threads_share_one_client(mocked: responses.RequestsMock) -> None:
    mocked.add_callback(responses.POST, URL, callback=echo_request_id)
    client = FaxClient("https://fax.example.com", user_id="mbx1", token="tok")

    def call(n: int) -> tuple[str, str, str, str | None]:
        rid = f"t{n}"
        result = client.send_fax([Recipient("+1 555 0100")], [FaxFile(b"%PDF", 101)], rid)
        return rid, result.request_id, result.job_ids[0], result.activity_id

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(call, range(400)))
    assert len(outcomes) == 400
    for rid, result_rid, job_id, activity in outcomes:
        assert (result_rid, job_id, activity) == (rid, f"JOB-{rid}", f"act-{rid}")
    sent = sorted(c.request.headers["x-ch-request-id"] for c in mocked.calls)
    assert sent == sorted(f"t{n}" for n in range(400))


#: The thread count the README documents for one client with the default pool.
DOCUMENTED_THREADS = 32


def test_the_default_pool_fits_the_documented_threads(
    capture_server: type[CaptureServer], caplog: pytest.LogCaptureFixture
) -> None:
    """32 threads share a default client, in rounds: every call of a round in flight at once
    (the server answers none until it holds all 32), and every thread done with it (its
    connection back in the pool) before the next starts. The pool keeps every connection, so
    the rounds after the first open none, and urllib3 never discards one ("Connection pool is
    full")."""
    rounds = 4
    together = threading.Barrier(DOCUMENTED_THREADS, timeout=20)
    round_done = threading.Barrier(DOCUMENTED_THREADS, timeout=20)

    def answer_all_at_once(raw: bytes) -> bytes:
        try:
            together.wait()
        except threading.BrokenBarrierError:
            return b""  # close unanswered: the calls fail rather than wait
        return http_reply(report_response())

    server = capture_server(answer_all_at_once)
    caplog.set_level(logging.WARNING, logger="urllib3")
    with FaxClient(server.url, user_id="mbx1", token="tok") as client:

        def calls(_: int) -> None:
            for _ in range(rounds):
                client.get_fax_broadcast_report("J1")
                round_done.wait()

        with ThreadPoolExecutor(DOCUMENTED_THREADS) as pool:
            list(pool.map(calls, range(DOCUMENTED_THREADS)))
    assert len(server.captured.requests) == DOCUMENTED_THREADS * rounds
    assert server.captured.connections == DOCUMENTED_THREADS
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


PIN = "PIN-MARKER-93a1"
TOKEN = "TOKEN-MARKER-5be2"
CONTENT = b"CONTENT-MARKER-77d0"


@pytest.mark.parametrize("creds", [{"pin": PIN}, {"token": TOKEN}], ids=["pin", "oauth2"])
def test_no_secret_or_content_in_logs_at_debug(
    capture_server: type[CaptureServer],
    caplog: pytest.LogCaptureFixture,
    creds: dict[str, str],
    face: Face,
) -> None:
    answers = [
        http_reply(send_response(["J1"]), extra="x-ch-activity-id: act-1\r\n"),
        http_reply(b"<oops", "500 Internal Server Error"),
    ]
    server = capture_server(lambda raw: answers.pop(0))
    caplog.set_level(logging.DEBUG)  # the root logger: requests', urllib3's, aiohttp's, ours
    client = face.client(server.url, user_id="mbx1", **creds)
    client.send_fax(["+1 555 0100"], [FaxFile(CONTENT, 101)], "rid-log")
    with pytest.raises(FaxWSError) as info:
        client.send_fax(["+1 555 0100"], [FaxFile(CONTENT, 101)], "rid-log2")
    texts = [r.getMessage() for r in caplog.records] + [str(info.value), repr(info.value)]
    texts.append(repr(client))
    joined = "\n".join(texts)
    encoded = __import__("base64").b64encode(CONTENT).decode()
    for secret in (PIN, TOKEN, CONTENT.decode(), encoded):
        assert secret not in joined
    ours = [r.getMessage() for r in caplog.records if r.name == "faxws"]
    assert any(re.search(r"SendFax request_id=rid-log HTTP 200, \d+ bytes", m) for m in ours)
    assert any("rid-log2" in m and "HTTP 500" in m for m in ours)


def test_faxws_logger_has_a_null_handler() -> None:
    handlers = logging.getLogger("faxws").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
