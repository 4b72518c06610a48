"""The simulator's REST API: every endpoint, its errors, and what it never shows."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from typing import Any

import pytest
import requests
from wire import exchange

from faxws import AuthenticationError, FaxClient, FaxFile, FileType, Recipient, ServiceError
from faxws.pytest_plugin import SimulatorFactory
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Account, Fault, FaxWSSimulator, ManualClock

PDF = b"%PDF-1.4 first page"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
CLIENT = {"X-FaxWS-Client": "tests"}


def client(sim: FaxWSSimulator) -> FaxClient:
    return FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, retry_backoff=0)


def get(sim: FaxWSSimulator, path: str, **kwargs: Any) -> requests.Response:
    return requests.get(sim.url + path, timeout=60, **kwargs)


def test_jobs_are_listed_newest_first_with_every_field(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    clock = ManualClock(1_800_000_000.0)  # 2027-01-15T08:00:00Z
    faxws_simulator = faxws_simulator_factory(clock=clock)
    with client(faxws_simulator) as c:
        c.send_fax(
            [Recipient("+1 555 0100", company="ACME", title="Dr", name="Ann", secure_csid="C1")],
            [FaxFile(PDF, FileType.PDF), FaxFile(PNG, 120)],
            request_id="order-1",
        )
        c.send_fax(["+1 555 0101", "+1 555 0102"], [FaxFile(PDF, FileType.PDF)])
    answer = get(faxws_simulator, "/api/jobs")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    listing = answer.json()
    assert listing["total"] == 2
    second, first = listing["jobs"]
    assert first == {
        "id": "1",
        "job_ids": ["SIM00000001"],
        "user_id": DEMO_USER_ID,
        "auth_mode": "pin",
        "request_id": "order-1",
        "received_at": "2027-01-15T08:00:00.000Z",
        "operation": "SendFax",
        "reference_id": "",
        "pages": 2,
        "scheduled_start": "2027-01-15T08:00:00.000Z",
        "expires_at": "2027-01-15T20:00:00.000Z",  # 2 simulated days at 4 a second
        "details": None,
        "recipients": [
            {
                "fax_number": "+1 555 0100",
                "company": "ACME",
                "title": "Dr",
                "name": "Ann",
                "secure_csid": "C1",
                "job_id": "SIM00000001",
                "status": 3,
                "description": "In progress: queued",
                "recipient_state": 0,
                "pages_sent": 0,
                "pages_total": 2,
                "attempts": 0,
                "outcome": "delivered",
                "outcome_pages": None,
                "ended_at": None,
                "delivery_date_time": "",
                "duration": 0,
                "remote_csid": "",
                "cancelled_at": None,
                "push": None,
            }
        ],
        "files": [
            {
                "index": 1,
                "file_type": 101,
                "size": len(PDF),
                "sha256": hashlib.sha256(PDF).hexdigest(),
            },
            {
                "index": 2,
                "file_type": 120,
                "size": len(PNG),
                "sha256": hashlib.sha256(PNG).hexdigest(),
            },
        ],
        "deviations": [],
    }
    assert (second["id"], second["job_ids"]) == ("2", ["SIM00000002", "SIM00000003"])
    one = get(faxws_simulator, "/api/jobs/2").json()
    assert one == second
    assert [j["id"] for j in get(faxws_simulator, "/api/jobs?limit=1").json()["jobs"]] == ["2"]


def test_a_document_comes_back_byte_for_byte(faxws_simulator: FaxWSSimulator) -> None:
    large = os.urandom(3 * 1024 * 1024)  # spooled to disk by the simulator
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF), FaxFile(PNG, 120), FaxFile(large, 1)])
    pdf, png, raw = (get(faxws_simulator, f"/api/jobs/1/files/{i}") for i in (1, 2, 3))
    assert (pdf.content, png.content, raw.content) == (PDF, PNG, large)
    assert (pdf.headers["Content-Type"], png.headers["Content-Type"]) == (
        "application/pdf",
        "image/png",
    )
    assert pdf.headers["Content-Disposition"] == 'inline; filename="job-1-file-1.pdf"'
    assert raw.headers["Content-Type"] == "application/octet-stream"
    assert raw.headers["Content-Disposition"] == 'attachment; filename="job-1-file-3.bin"'
    assert all(r.headers["Content-Security-Policy"] == "sandbox" for r in (png, raw))
    assert all(r.headers["X-Content-Type-Options"] == "nosniff" for r in (pdf, png, raw))
    download = get(faxws_simulator, "/api/jobs/1/files/1?download=1")
    assert download.headers["Content-Disposition"].startswith("attachment;")


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/api/jobs/9", 404, "no job 9"),
        ("/api/jobs/1/files/7", 404, "job 1 has no file 7"),
        ("/api/nothing", 404, "no such resource: /api/nothing"),
        ("/api/jobs?min=-1", 400, "min must be from 0 to 100000"),
        ("/api/jobs?min=x", 400, "min must be a whole number"),
        ("/api/jobs?min=1&timeout=nan", 400, "timeout must be from 0 to 300 seconds"),
        ("/api/jobs?min=1&timeout=301", 400, "timeout must be from 0 to 300 seconds"),
        ("/api/jobs?limit=0", 400, "limit must be from 1 to 100000"),
        ("/api/requests?limit=many", 400, "limit must be a whole number"),
        ("/api/jobs?limit=1_0", 400, "limit must be a whole number"),
        ("/api/jobs?limit=%D9%A3", 400, "limit must be a whole number"),
        ("/api/jobs?min=1&timeout=1_0", 400, "timeout must be a number of seconds"),
        ("/api/jobs?min=1&timeout=%D9%A3", 400, "timeout must be a number of seconds"),
        ("/api/jobs?min=1&timeout=%203", 400, "timeout must be a number of seconds"),
        ("/api/jobs/1/files/1?download=yes", 400, "download must be 0 or 1"),
        (
            "/api/jobs?=1",
            400,
            'unknown query parameter "": GET /api/jobs takes min, timeout, limit, q',
        ),
    ],
)
def test_bad_lookups_get_a_json_error_naming_the_problem(
    faxws_simulator: FaxWSSimulator, path: str, status: int, error: str
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    answer = get(faxws_simulator, path)
    assert (answer.status_code, answer.json()) == (status, {"error": error})


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/api/jobs", "GET, HEAD, DELETE"),
        ("POST", "/api/jobs/1", "GET, HEAD, DELETE"),
        ("PUT", "/api/faults", "GET, HEAD, POST, DELETE"),
        ("GET", "/api/reset", "POST"),
    ],
)
def test_other_methods_are_not_allowed(
    faxws_simulator: FaxWSSimulator, method: str, path: str, allow: str
) -> None:
    answer = requests.request(method, faxws_simulator.url + path, headers=CLIENT, timeout=60)
    assert (answer.status_code, answer.headers["Allow"]) == (405, allow)


def test_waiting_for_jobs(faxws_simulator: FaxWSSimulator) -> None:
    listings: list[dict[str, Any]] = []
    waiter = threading.Thread(
        target=lambda: listings.append(get(faxws_simulator, "/api/jobs?min=2&timeout=120").json())
    )
    waiter.start()
    with client(faxws_simulator) as c:
        for _ in range(2):
            c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    waiter.join(120)
    assert not waiter.is_alive()
    assert listings[0]["total"] == 2
    # Not enough jobs within the time-out: what there is.
    assert get(faxws_simulator, "/api/jobs?min=5&timeout=0.1").json()["total"] == 2


def test_stop_ends_a_wait_for_jobs() -> None:
    outcome: list[object] = []
    with FaxWSSimulator() as sim:
        url = sim.url

        def wait() -> None:
            try:
                outcome.append(
                    requests.get(url + "/api/jobs?min=1&timeout=300", timeout=120).json()
                )
            except requests.RequestException as exc:
                outcome.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        # stop() (leaving the block) wakes the wait however far it got.
    waiter.join(120)
    assert not waiter.is_alive()
    assert len(outcome) == 1


@pytest.mark.parametrize("leaves", ["close", "reset"])
def test_a_wait_for_jobs_ends_within_a_check_of_its_client_going_away(
    faxws_simulator: FaxWSSimulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    leaves: str,
) -> None:
    """A client that gave up does not hold its thread for the rest of its time-out (each
    such wait would be a thread held five minutes, however many clients came and went)."""
    import socket
    import struct

    from faxws.testing import _events

    caplog.set_level("INFO", logger="faxws.simulator")
    state = faxws_simulator._state
    waiting: list[threading.Thread] = []
    started = threading.Event()
    wait_for_jobs = state.wait_for_jobs

    def watched(count: int, timeout: float) -> bool:
        waiting.append(threading.current_thread())
        started.set()
        return wait_for_jobs(count, timeout)

    monkeypatch.setattr(state, "wait_for_jobs", watched)
    sock = socket.create_connection(("127.0.0.1", faxws_simulator.port), timeout=30)
    sock.sendall(b"GET /api/jobs?min=5&timeout=300 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert started.wait(30)
    if leaves == "reset":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    waiting[0].join(_events.CHECK * 10)  # not the 300 s asked for
    assert not waiting[0].is_alive()
    lines = [r.getMessage() for r in caplog.records if r.name == "faxws.simulator"]
    assert lines == ["GET /api/jobs - no answer: the client went away request_id=-"]
    # A client still there waits on, and gets its answer.
    assert get(faxws_simulator, "/api/jobs?min=1&timeout=1.5").json()["total"] == 0


@pytest.mark.parametrize(
    ("path", "broken", "body"),
    [
        (
            "/api/openapi.json",
            "faxws.testing._openapi.document",
            '{"error": "the simulator failed: RuntimeError: broken on purpose"}',
        ),
        (
            "/",
            "faxws.testing._inbox._Page.inbox",
            "the simulator failed: RuntimeError: broken on purpose\n",
        ),
        (
            "/jobs/1",
            "faxws.testing._inbox.file_kind",
            "the simulator failed: RuntimeError: broken on purpose\n",
        ),
        (
            "/api/jobs/1/files/1",
            "faxws.testing._api.file_kind",
            '{"error": "the simulator failed: RuntimeError: broken on purpose"}',
        ),
    ],
)
def test_a_route_that_fails_answers_500_saying_how(
    faxws_simulator: FaxWSSimulator,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    broken: str,
    body: str,
) -> None:
    """Rather than the connection closing unanswered; the simulator serves on."""
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(broken, fail)
    answer = get(faxws_simulator, path)
    assert (answer.status_code, answer.text) == (500, body)
    assert answer.headers["Connection"] == "close"
    monkeypatch.undo()
    assert get(faxws_simulator, path).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api/jobs"),
        ("DELETE", "/api/jobs/1"),
        ("DELETE", "/api/requests"),
        ("DELETE", "/api/faults"),
        ("POST", "/api/reset"),
    ],
)
def test_clearing_needs_a_header_a_page_of_another_site_cannot_send(
    faxws_simulator: FaxWSSimulator, method: str, path: str
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    faxws_simulator.inject(Fault.http_status(503), operation="CancelFax")
    url = faxws_simulator.url + path
    refused = requests.request(method, url, timeout=60)
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": f"{method} needs a JSON body or an X-FaxWS-Client header"},
    )
    # With the header, but a browser says another site sent it.
    for foreign in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        refused = requests.request(method, url, headers={**CLIENT, **foreign}, timeout=60)
        assert (refused.status_code, refused.json()) == (
            403,
            {"error": f"{method} from another site is refused"},
        ), foreign
    assert (len(faxws_simulator.jobs), len(faxws_simulator.requests)) == (1, 1)
    assert len(faxws_simulator._state.faults.pending()) == 1
    own = {"Origin": faxws_simulator.url, "Sec-Fetch-Site": "same-origin", **CLIENT}
    assert requests.request(method, url, headers=own, timeout=60).status_code == 200


def test_each_delete_clears_one_kind_of_thing_and_reset_clears_all(
    faxws_simulator: FaxWSSimulator,
) -> None:
    def state() -> tuple[int, int, int]:
        sim = faxws_simulator
        return len(sim.jobs), len(sim.requests), len(sim._state.faults.pending())

    def call(method: str, path: str) -> Any:
        answer = requests.request(method, faxws_simulator.url + path, headers=CLIENT, timeout=60)
        assert answer.status_code == 200, answer.text
        return answer.json()

    with client(faxws_simulator) as c:
        for _ in range(3):
            c.send_fax(["+1 5", "+1 6"], [FaxFile(PDF, FileType.PDF)])
    faxws_simulator.inject(Fault.http_status(503), operation="CancelFax", times=2)
    faxws_simulator.inject(Fault.html_500(), operation="GetFaxStatus")
    assert state() == (3, 3, 2)
    assert call("DELETE", "/api/jobs/SIM00000003") == {
        "deleted": True,
        "id": "2",
        "job_ids": ["SIM00000003", "SIM00000004"],
    }
    assert call("DELETE", "/api/jobs/1") == {
        "deleted": True,
        "id": "1",
        "job_ids": ["SIM00000001", "SIM00000002"],
    }
    assert [j.id for j in faxws_simulator.jobs] == ["3"]
    assert get(faxws_simulator, "/api/jobs/1").status_code == 404
    gone = requests.delete(faxws_simulator.url + "/api/jobs/1", headers=CLIENT, timeout=60)
    assert (gone.status_code, gone.json()) == (404, {"error": "no job 1"})
    with client(faxws_simulator) as c, pytest.raises(ServiceError) as info:
        c.get_fax_broadcast_report("SIM00000001")  # unknown to the operations too
    assert info.value.code == -5019
    assert state() == (1, 4, 2)
    assert call("DELETE", "/api/faults") == {"cleared": True, "faults": 2}
    assert state() == (1, 4, 0)
    assert call("DELETE", "/api/requests") == {"cleared": True, "requests": 4}
    assert state() == (1, 0, 0)
    assert call("DELETE", "/api/jobs") == {"cleared": True, "jobs": 1}
    assert state() == (0, 0, 0)
    with client(faxws_simulator) as c:
        assert c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)]).job_ids == ("SIM00000001",)
    faxws_simulator.inject(Fault.html_500())
    assert call("POST", "/api/reset") == {"cleared": True, "jobs": 1, "requests": 1, "faults": 1}
    assert state() == (0, 0, 0)


def test_faults_are_injected_for_an_operation(faxws_simulator: FaxWSSimulator) -> None:
    spec = {"fault": "ws_error", "code": -42, "text": "quota", "operation": "SendFax", "times": 2}
    answer = requests.post(faxws_simulator.url + "/api/faults", json=spec, timeout=60)
    assert (answer.status_code, answer.json()) == (
        201,
        {"fault": "ws_error", "operation": "SendFax", "times": 2},
    )
    with client(faxws_simulator) as c:
        for _ in range(2):
            with pytest.raises(ServiceError) as info:
                c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
            assert (info.value.code, info.value.error_string) == (-42, "quota")
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    assert [r.fault for r in faxws_simulator.requests] == ["ws_error", "ws_error", None]


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (
            {"fault": "nope"},
            "fault must be one of close_after_read, close_before_read, delay_response, html_500, "
            "http_status, reset_mid_response, slow_drip, soap_fault, ws_error",
        ),
        ({"fault": "http_status"}, "http_status takes status"),
        ({"fault": "http_status", "status": 700}, "status must be from 200 to 599, not 700"),
        (
            {"fault": "delay_response", "seconds": -1},
            "seconds: must be a finite number of seconds above 0, not -1",
        ),
        ({"fault": "html_500", "times": 0}, "times must be a whole number of at least 1, not 0"),
        ({"fault": "html_500", "times": "2"}, "times must be a whole number"),
        (
            {"fault": "html_500", "operation": "GetFaxCoverList"},
            "unknown operation 'GetFaxCoverList'",
        ),
        (
            {"fault": "close_before_read", "operation": "SendFax"},
            "close_before_read cannot be limited to one operation",
        ),
        (["html_500"], "the body must be a JSON object"),
        # Each would have left the call it applied to without an answer.
        (
            {"fault": "ws_error", "code": 2**31, "text": "x"},
            "code: 2147483648 is outside -2147483648..2147483647",
        ),
        ({"fault": "ws_error", "code": 1.5}, "code: must be an int, not float"),
        (
            {"fault": "soap_fault", "code": "Client", "text": "bad \ud800"},
            "text: contains U+D800, which XML cannot carry",
        ),
        ({"fault": "soap_fault", "text": 7}, "text: must be a str, not int"),
        (
            {"fault": "delay_response", "seconds": 1e300},
            "seconds: must be at most 86400 seconds, not 1e+300",
        ),
        (
            {"fault": "slow_drip", "seconds": 1e300},
            "seconds: must be at most 86400 seconds, not 1e+300",
        ),
    ],
)
def test_bad_fault_specs_are_refused_naming_the_problem(
    faxws_simulator: FaxWSSimulator, spec: Any, error: str
) -> None:
    answer = requests.post(faxws_simulator.url + "/api/faults", json=spec, timeout=60)
    assert (answer.status_code, answer.json()) == (400, {"error": error})
    assert get(faxws_simulator, "/api/faults").json() == {"faults": []}


def test_faults_need_a_json_body(faxws_simulator: FaxWSSimulator) -> None:
    form = requests.post(
        faxws_simulator.url + "/api/faults", data={"fault": "html_500"}, timeout=60
    )
    assert (form.status_code, form.json()) == (403, {"error": "POST needs a JSON body"})
    broken = requests.post(
        faxws_simulator.url + "/api/faults",
        data=b"{",
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert (broken.status_code, broken.json()) == (400, {"error": "the body is not valid JSON"})


SECRET_PIN = "pin-SECRET-4711"
SECRET_TOKEN = "tok-SECRET-0815"


def test_requests_are_listed_with_every_secret_masked(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    sim = faxws_simulator_factory([Account("mbx1", pin=SECRET_PIN, tokens=(SECRET_TOKEN,))])
    with FaxClient(sim.url, user_id="mbx1", pin=SECRET_PIN) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)], request_id="r-pin")
    with FaxClient(sim.url, user_id="mbx1", token=SECRET_TOKEN) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)], request_id="r-token")
    with (
        FaxClient(sim.url, user_id="mbx1", pin=SECRET_PIN + "x", retries=0) as c,
        pytest.raises(AuthenticationError),
    ):
        c.get_fax_broadcast_report("J")
    answer = get(sim, "/api/requests")
    assert SECRET_PIN not in answer.text
    assert SECRET_TOKEN not in answer.text
    listing = answer.json()
    assert listing["total"] == 3
    bad, bearer, pin = listing["requests"]
    assert (pin["request_id"], pin["operation"], pin["status"]) == ("r-pin", "SendFax", 200)
    assert "<strPIN>***</strPIN>" in pin["body"]
    assert bearer["headers"]["Authorization"] == "Bearer ***"
    assert (bad["status"], bad["refusal"]) == (401, "wrong user id or PIN")
    assert ISO.match(pin["received_at"])
    assert pin["deviations"] == []
    assert pin["body_size"] == len(pin["body"].replace("***", SECRET_PIN).encode())


def test_the_api_and_inbox_are_not_recorded_as_requests(faxws_simulator: FaxWSSimulator) -> None:
    get(faxws_simulator, "/api/jobs")
    get(faxws_simulator, "/")
    assert faxws_simulator.requests == []


def test_beyond_loopback_a_token_is_required() -> None:
    assert FaxWSSimulator(host="0.0.0.0").api_token is not None  # noqa: S104
    assert FaxWSSimulator(host="127.0.0.1").api_token is None
    with FaxWSSimulator(api_token="api-SECRET-1") as sim:
        for path in ("/api/jobs", "/", "/jobs/1"):
            refused = get(sim, path)
            assert refused.status_code == 401
            assert "token" in refused.text
        wrong = get(sim, "/api/jobs", headers={"X-FaxWS-Token": "api-SECRET-2"})
        assert wrong.status_code == 401
        assert get(sim, "/api/jobs", headers={"X-FaxWS-Token": "api-SECRET-1"}).status_code == 200
        assert get(sim, "/api/jobs?token=api-SECRET-1").status_code == 200
        page = get(sim, "/?token=api-SECRET-1")
        assert page.status_code == 200
        assert 'href="/api/jobs?token=api-SECRET-1"' in page.text
        # The service itself is not behind the token.
        with client(sim) as c:
            c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
        assert json.loads(get(sim, "/api/jobs?token=api-SECRET-1").text)["total"] == 1


def _every_route() -> list[tuple[str, str]]:
    from faxws.testing._api import ROUTES

    calls = []
    for route in ROUTES:
        path = route.path.replace("{id}", "1").replace("{index}", "1")
        for method in route.allowed().split(", "):
            calls.append((method, path))
    return [*calls, ("GET", "/"), ("HEAD", "/"), ("GET", "/jobs/1"), ("GET", "/requests/1")]


@pytest.mark.parametrize(("method", "path"), _every_route())
def test_every_route_and_method_of_the_inbox_and_api_needs_the_token(
    method: str, path: str
) -> None:
    """HEAD and the event stream too; nothing is changed or held by a call refused."""
    with FaxWSSimulator(api_token="api-SECRET-6") as sim:
        with client(sim) as c:
            c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
        sim.inject(Fault.http_status(503), operation="CancelFax")
        held = (len(sim.jobs), len(sim.requests), len(sim._state.faults.pending()))
        body = {"outcome": "busy"} if path.endswith("/outcome") else {"fault": "html_500"}
        for headers, query in (
            ({}, ""),
            ({"X-FaxWS-Token": "api-SECRET-7"}, ""),
            ({"X-FaxWS-Token": "API-SECRET-6"}, ""),
            ({}, "?token="),
            ({}, "?token=api-SECRET-"),
        ):
            with requests.request(
                method,
                sim.url + path + query,
                headers={**CLIENT, **headers},
                json=body if method in ("POST", "PUT") else None,
                timeout=60,
                stream=True,  # an event stream served would never end
            ) as answer:
                assert answer.status_code == 401, (headers, query)
                if method != "HEAD":
                    assert answer.text == (
                        "the inbox and API need the token faxws serve printed (?token=...)\n"
                    )
        assert (len(sim.jobs), len(sim.requests), len(sim._state.faults.pending())) == held
        assert sim._streams == 0
        with requests.request(
            method,
            sim.url + path + "?token=api-SECRET-6",
            headers=CLIENT,
            json=body if method in ("POST", "PUT") else None,
            timeout=60,
            stream=True,
        ) as answer:
            assert answer.status_code != 401


def test_the_oldest_jobs_and_records_are_forgotten_beyond_their_bounds(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    sim = faxws_simulator_factory(max_jobs=10, max_requests=10)
    large = os.urandom(200_000)  # on disk: forgetting the job removes its file
    with client(sim) as c:
        first = c.send_fax(["+1 5"], [FaxFile(large, 1)])
        path = sim.jobs[0].files[0].path
        assert path is not None
        assert path.exists()
        for _ in range(24):
            c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
        with pytest.raises(ServiceError) as info:
            c.get_fax_broadcast_report(first.job_ids[0])
        assert info.value.code == -5019
    assert 10 <= len(sim.jobs) <= 11
    assert 10 <= len(sim.requests) <= 11
    assert sim.jobs[-1].id == "25"  # numbers are never reused
    assert not path.exists()
    assert get(sim, "/api/jobs/1").status_code == 404
    assert get(sim, "/api/jobs/25").status_code == 200


@pytest.mark.parametrize("option", ["max_jobs", "max_requests"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_bounds_must_be_whole_numbers(option: str, value: object) -> None:
    from faxws.errors import BadInputError

    with pytest.raises(BadInputError, match=f"^{option}: must be a whole number of at least 1"):
        FaxWSSimulator(**{option: value})  # type: ignore[arg-type]


class NoScan(list):  # type: ignore[type-arg]
    """A list that fails when walked: what a call does may append and count, never scan."""

    def __iter__(self) -> Any:
        raise AssertionError("a call scanned every record")

    def __reversed__(self) -> Any:
        raise AssertionError("a call scanned every record")

    def __contains__(self, item: object) -> bool:
        raise AssertionError("a call scanned every record")

    def index(self, *args: Any) -> int:
        raise AssertionError("a call scanned every record")


def test_calls_look_jobs_up_by_key_without_scanning(faxws_simulator: FaxWSSimulator) -> None:
    state = faxws_simulator._state
    with client(faxws_simulator) as c:
        job = c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)]).job_ids[0]
        with state.lock:
            state.jobs = NoScan(state.jobs)
            state.requests = NoScan(state.requests)
        c.get_fax_broadcast_report(job)
        with pytest.raises(ServiceError):
            c.get_fax_broadcast_report("SIM99999999")
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    assert len(state.jobs) == 2
    assert len(state.requests) == 4


def test_the_api_answers_only_to_its_own_host_names(faxws_simulator: FaxWSSimulator) -> None:
    rebound = {"Host": f"evil.example:{faxws_simulator.port}", **CLIENT}
    for method, path in (("GET", "/api/jobs"), ("DELETE", "/api/jobs"), ("GET", "/")):
        answer = requests.request(method, faxws_simulator.url + path, headers=rebound, timeout=60)
        assert answer.status_code == 403, (method, path)
    for host in ("localhost", "127.0.0.1", f"127.0.0.1:{faxws_simulator.port}"):
        assert get(faxws_simulator, "/api/jobs", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ("Transfer-Encoding: chunked", b"411"),
        ("Content-Length: -5", b"400"),
        ("Content-Length: 1_0", b"400"),
        ("Content-Length: +10", b"400"),
    ],
)
def test_a_body_without_a_plain_length_is_refused_and_never_read_as_a_request(
    faxws_simulator: FaxWSSimulator, header: str, status: bytes
) -> None:
    smuggled = b"DELETE /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-FaxWS-Client: x\r\n\r\n"
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    body = b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n"
    answer = exchange(
        faxws_simulator,
        b"POST /fax/v5 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/xml\r\n"
        + header.encode()
        + b"\r\n\r\n"
        + body,
    )
    assert answer.startswith(b"HTTP/1.1 " + status)
    assert answer.count(b"HTTP/1.1 ") == 1  # nothing after it was taken for a request
    assert len(faxws_simulator.jobs) == 1


def test_secrets_a_client_puts_anywhere_are_masked_in_jobs_and_pages(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    sim = faxws_simulator_factory([Account("mbx1", pin=SECRET_PIN)], api_token="api-SECRET-9")
    with FaxClient(sim.url, user_id="mbx1", pin=SECRET_PIN) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)], request_id=f"rid-{SECRET_PIN}")
    requests.post(
        sim.url + "/fax/v5",
        data=b"<x/>",
        headers={
            "Content-Type": "text/xml",
            "SOAPAction": SECRET_PIN,
            "X-FaxWS-Token": "api-SECRET-9",
        },
        timeout=60,
    )
    token = {"X-FaxWS-Token": "api-SECRET-9"}
    shown = [
        get(sim, path, headers=token).text
        for path in ("/api/jobs", "/api/requests", "/", "/jobs/1")
    ] + [repr(sim.jobs), repr(sim.requests)]
    for text in shown:
        assert SECRET_PIN not in text
        # The pages hold the token for whoever came with it (their links, their search and
        # their script use it); nowhere else is it shown.
        held = r'[?&](amp;)?token=api-SECRET-9|data-token="api-SECRET-9"|value="api-SECRET-9"'
        assert "api-SECRET-9" not in re.sub(held, "", text)
    assert sim.jobs[0].request_id == "rid-***"


def test_files_need_distinct_indexes(faxws_simulator: FaxWSSimulator) -> None:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap='
        '"http://schemas.xmlsoap.org/soap/envelope/"><soap:Header/><soap:Body>'
        f'<SendFax xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID><strPIN>{DEMO_PIN}</strPIN>'
        "<Recipients><item><RecipFaxNumber>+1 5</RecipFaxNumber><RecipCompany/><RecipTitle/>"
        "<RecipName/><RecipSecureCSID/></item></Recipients><FaxJobFiles>"
        + "<item><FileIndex>1</FileIndex><FileTypeId>101</FileTypeId><FileData>QUJD</FileData>"
        "</item>" * 2 + "</FaxJobFiles></SendFax></soap:Body></soap:Envelope>"
    )
    answer = requests.post(
        faxws_simulator.url + "/fax/v5",
        data=body.encode(),
        headers={"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""},
        timeout=60,
    )
    assert answer.status_code == 500
    assert b"FileIndex 1 is given to more than one file" in answer.content
    assert faxws_simulator.jobs == []


def test_every_request_gets_one_log_line_even_when_the_server_refuses_its_first_line(
    faxws_simulator: FaxWSSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="faxws.simulator")
    long_line = b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"
    assert exchange(faxws_simulator, long_line).startswith(b"HTTP/1.1 414")
    escape = b"GET /\x1b[2Jfake HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ch-request-id: a\x1bb\r\n\r\n"
    assert exchange(faxws_simulator, escape).startswith(b"HTTP/1.1 404")
    lines = [r.getMessage() for r in caplog.records if r.name == "faxws.simulator"]
    assert lines == [
        "- - - 414 request_id=-",
        "GET /\\x1b[2Jfake - 404 request_id=a\\x1bb",
    ]
