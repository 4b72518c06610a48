"""The simulator: strict like the service, observable, and able to fail on purpose."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from lxml import etree

from faxws import (
    AuthenticationError,
    BadInputError,
    FaxClient,
    FaxFile,
    FileType,
    HTTPStatusError,
    RequestTimeoutError,
    ServiceError,
    SoapFaultError,
    TransportError,
    oauth,
)
from faxws.oauth import ClientCredentials
from faxws.testing import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_PIN,
    DEMO_TOKEN,
    DEMO_USER_ID,
    Account,
    Fault,
    FaxWSSimulator,
)
from faxws.validation import validate

PDF = FaxFile(b"%PDF-1.4 simulated", FileType.PDF)
HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}


def pin_client(sim: FaxWSSimulator, **kw: object) -> FaxClient:
    return FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, **kw)  # type: ignore[arg-type]


def token_client(sim: FaxWSSimulator, **kw: object) -> FaxClient:
    return FaxClient(sim.url, user_id=DEMO_USER_ID, token=DEMO_TOKEN, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [pin_client, token_client], ids=["pin", "oauth2"])
def test_both_operations_in_both_modes(faxws_simulator: FaxWSSimulator, make: object) -> None:
    client = make(faxws_simulator)  # type: ignore[operator]
    result = client.send_fax(["+1 555 0100", "+1 555 0101"], [PDF], request_id="rid-s")
    assert len(result.job_ids) == 2
    assert len(set(result.job_ids)) == 2
    assert result.ttfp == 1  # the queue's 2 simulated seconds at 4 a second, rounded up
    assert result.activity_id
    job = faxws_simulator.jobs[0]
    assert job.job_ids == result.job_ids
    assert job.files[0].data == b"%PDF-1.4 simulated"
    assert job.files[0].file_type == 101
    assert job.request_id == "rid-s"
    assert job.auth_mode == ("pin" if make is pin_client else "oauth2")
    report = client.get_fax_broadcast_report(result.job_ids[1], request_id="rid-r")
    assert report.request_id == "rid-r"


def test_every_response_echoes_request_id_and_has_tracing_headers(
    faxws_simulator: FaxWSSimulator,
) -> None:
    body = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="http://schemas.'
        b'xmlsoap.org/soap/envelope/"><soap:Header/><soap:Body><GetFaxBroadcastReport '
        b'xmlns="urn:FaxWS"><UserID>mbx0000000000</UserID><strPIN>0000</strPIN><JobId>NOPE'
        b"</JobId><RecipientType>0</RecipientType><RecipAddress/></GetFaxBroadcastReport>"
        b"</soap:Body></soap:Envelope>"
    )
    r = requests.post(
        f"{faxws_simulator.url}/fax/v5",
        data=body,
        headers={**HEADERS, "x-ch-request-id": "echo-me"},
        timeout=30,
    )
    assert r.status_code == 200
    assert r.headers["x-ch-request-id"] == "echo-me"
    assert int(r.headers["x-ch-execution-time"]) >= 0
    assert len(r.headers["x-ch-activity-id"]) == 36
    assert validate(r.content) == []
    assert b"<ErrorCode>-5019</ErrorCode><ErrorString>Invalid Job ID</ErrorString>" in r.content


def test_responses_validate_against_the_schema(faxws_simulator: FaxWSSimulator) -> None:
    client = pin_client(faxws_simulator)
    job = client.send_fax(["+1 555 0100"], [PDF]).job_ids[0]
    client.get_fax_broadcast_report(job)
    faxws_simulator.inject(Fault.ws_error(-42, "quota"), operation="SendFax")
    with pytest.raises(ServiceError):
        client.send_fax(["+1 555 0100"], [PDF])
    # Replay each request and validate what the simulator answers.
    for request in list(faxws_simulator.requests):
        r = requests.post(
            f"{faxws_simulator.url}/fax/v5", data=request.body, headers=HEADERS, timeout=30
        )
        assert r.status_code == 200
        assert validate(r.content) == [], r.content


def test_unknown_job_gives_5019(faxws_simulator: FaxWSSimulator) -> None:
    with pytest.raises(ServiceError) as info:
        pin_client(faxws_simulator).get_fax_broadcast_report("SIM99999999")
    assert (info.value.code, info.value.error_string) == (-5019, "Invalid Job ID")


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/fax/v5", {}, 405),
        ("PUT", "/fax/v5", HEADERS, 405),
        ("POST", "/fax/v4", HEADERS, 404),
        ("POST", "/other", HEADERS, 404),
        ("POST", "/", HEADERS, 405),  # the inbox
        ("POST", "/fax/v5", {"Content-Type": "application/json", "SOAPAction": ""}, 415),
    ],
)
def test_http_level_strictness(
    faxws_simulator: FaxWSSimulator,
    method: str,
    path: str,
    headers: dict[str, str],
    status: int,
) -> None:
    r = requests.request(
        method, faxws_simulator.url + path, data=b"<x/>", headers=headers, timeout=30
    )
    assert r.status_code == status
    if status == 405:
        assert r.headers["Allow"] == ("GET, HEAD" if path == "/" else "POST")


def _fault_of(r: requests.Response) -> str:
    root = etree.fromstring(r.content)
    return str(root.findtext(".//faultstring"))


def _post(
    sim: FaxWSSimulator, body: bytes, headers: dict[str, str] | None = None
) -> requests.Response:
    return requests.post(f"{sim.url}/fax/v5", data=body, headers=headers or HEADERS, timeout=30)


def _report_body(extra_child: str = "", user: str = DEMO_USER_ID, pin: str = DEMO_PIN) -> bytes:
    return (
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
        f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{user}</UserID><strPIN>{pin}</strPIN>'
        f"<JobId>J</JobId><RecipientType>{extra_child or '0'}</RecipientType><RecipAddress/>"
        "</GetFaxBroadcastReport></soap:Body></soap:Envelope>"
    ).encode()


def test_client_faults(faxws_simulator: FaxWSSimulator) -> None:
    sim = faxws_simulator
    r = _post(sim, b"<soap:Envelope")
    assert "malformed XML" in _fault_of(r)
    r = _post(sim, _report_body().replace(b"GetFaxBroadcastReport", b"GetFaxCoverList"))
    assert _fault_of(r) == "the operation GetFaxCoverList is not simulated"
    r = _post(sim, _report_body().replace(b'"urn:FaxWS"', b'"urn:Other"'))
    assert _fault_of(r) == "unknown operation {urn:Other}GetFaxBroadcastReport"
    r = _post(sim, _report_body("many"))
    assert _fault_of(r) == "/GetFaxBroadcastReport/RecipientType: 'many' is not a valid xs:int"
    assert b"soap:Client" in r.content


@pytest.mark.parametrize(
    ("headers", "pin", "words"),
    [
        ({"Authorization": f"Bearer {DEMO_TOKEN}"}, DEMO_PIN, "strPIN must be empty"),
        ({}, "", "no credentials"),
        ({}, "9999", "wrong user id or PIN"),
        ({"Authorization": "Bearer unknown"}, "", "unknown or expired"),
        ({"Authorization": "Basic dTpw"}, "", "Bearer"),
    ],
    ids=["both", "neither", "wrong-pin", "unknown-token", "basic"],
)
def test_authentication_rules(
    faxws_simulator: FaxWSSimulator, headers: dict[str, str], pin: str, words: str
) -> None:
    r = _post(faxws_simulator, _report_body(pin=pin), {**HEADERS, **headers})
    assert r.status_code == 401
    assert words in _fault_of(r)


def test_expired_token_is_refused(faxws_simulator: FaxWSSimulator) -> None:
    token = faxws_simulator.issue_token(DEMO_USER_ID, lifetime=60)
    client = FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, token=token)
    client.send_fax(["+1 555 0100"], [PDF])
    faxws_simulator.expire_tokens()
    with pytest.raises(AuthenticationError) as info:
        client.send_fax(["+1 555 0100"], [PDF])
    assert "expired" in str(info.value)


def test_configured_accounts() -> None:
    account = Account("mbx42", pin="4242", tokens=("tok-42",))
    with FaxWSSimulator([account]) as sim:
        FaxClient(sim.url, user_id="mbx42", pin="4242").send_fax(["+1 555 0100"], [PDF])
        FaxClient(sim.url, user_id="mbx42", token="tok-42").send_fax(["+1 555 0100"], [PDF])
        with pytest.raises(AuthenticationError):
            FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN).send_fax(["+1 5"], [PDF])
        assert "4242" not in repr(account)


def test_inspection_and_reset(faxws_simulator: FaxWSSimulator) -> None:
    client = pin_client(faxws_simulator)
    client.send_fax(["+1 555 0100"], [PDF], request_id="inspect-1")
    request = faxws_simulator.requests[0]
    assert (request.method, request.path, request.operation) == ("POST", "/fax/v5", "SendFax")
    assert request.header("X-CH-REQUEST-ID") == "inspect-1"
    assert request.body.startswith(b'<?xml version="1.0" encoding="utf-8"?>')
    assert faxws_simulator.connections == 1
    faxws_simulator.reset()
    assert (faxws_simulator.requests, faxws_simulator.jobs, faxws_simulator.connections) == (
        [],
        [],
        0,
    )


FAULTS = [
    (Fault.html_500(), HTTPStatusError, True),
    (Fault.http_status(502), HTTPStatusError, True),
    (Fault.http_status(503), HTTPStatusError, True),
    (Fault.http_status(504), HTTPStatusError, True),
    (Fault.soap_fault("soap:Server", "boom"), SoapFaultError, True),
    (Fault.soap_fault("soap:Client", "bad"), SoapFaultError, False),
    (Fault.ws_error(-5001, "busy"), ServiceError, False),
    (Fault.close_before_read(), TransportError, True),
    (Fault.close_after_read(), TransportError, True),
]


@pytest.mark.parametrize(
    ("fault", "error", "maybe_delivered"),
    FAULTS,
    ids=[f"{f[0].kind}{getattr(f[0], 'status', '')}" for f in FAULTS],
)
def test_injected_faults_on_send_fax_map_to_typed_errors(
    faxws_simulator: FaxWSSimulator, fault: Fault, error: type[Exception], maybe_delivered: bool
) -> None:
    operation = None if fault.kind == "close_before_read" else "SendFax"
    faxws_simulator.inject(fault, operation=operation)
    client = pin_client(faxws_simulator, retries=2, retry_backoff=0)
    with pytest.raises(error) as info:
        client.send_fax(["+1 555 0100"], [PDF], request_id="rid-fault")
    assert info.value.request_id == "rid-fault"
    assert info.value.maybe_delivered is maybe_delivered
    assert len(faxws_simulator.requests) == 1  # never sent twice
    # The fault was used up: the next call succeeds.
    assert client.send_fax(["+1 555 0100"], [PDF]).job_ids


def test_injected_fault_applies_only_to_its_operation(faxws_simulator: FaxWSSimulator) -> None:
    faxws_simulator.inject(Fault.http_status(503), operation="GetFaxBroadcastReport", times=1)
    client = pin_client(faxws_simulator, retries=0)
    job = client.send_fax(["+1 555 0100"], [PDF]).job_ids[0]
    with pytest.raises(HTTPStatusError):
        client.get_fax_broadcast_report(job)
    client.get_fax_broadcast_report(job)


def test_report_recovers_from_transient_faults_by_retrying(
    faxws_simulator: FaxWSSimulator,
) -> None:
    client = pin_client(faxws_simulator, retries=2, retry_backoff=0.01)
    job = client.send_fax(["+1 555 0100"], [PDF]).job_ids[0]
    faxws_simulator.inject(Fault.http_status(503), operation="GetFaxBroadcastReport", times=2)
    assert client.get_fax_broadcast_report(job, request_id="same").request_id == "same"
    reports = faxws_simulator.requests_for("GetFaxBroadcastReport")
    assert [r.header("x-ch-request-id") for r in reports] == ["same"] * 3


def test_delay_and_read_timeout(faxws_simulator: FaxWSSimulator) -> None:
    # stop() wakes the delayed handler when the fixture ends.
    faxws_simulator.inject(Fault.delay_response(600), operation="SendFax")
    client = pin_client(faxws_simulator, timeout=(2, 0.2))
    started = time.monotonic()
    with pytest.raises(RequestTimeoutError) as info:
        client.send_fax(["+1 555 0100"], [PDF])
    assert info.value.maybe_delivered is True
    assert time.monotonic() - started < 300  # the read timeout ended the wait, not the delay


def test_delay_within_timeout_succeeds(faxws_simulator: FaxWSSimulator) -> None:
    faxws_simulator.inject(Fault.delay_response(0.2), operation="SendFax")
    assert pin_client(faxws_simulator).send_fax(["+1 555 0100"], [PDF]).job_ids


def test_close_before_read_cannot_target_one_operation(faxws_simulator: FaxWSSimulator) -> None:
    with pytest.raises(ValueError, match="cannot be limited"):
        faxws_simulator.inject(Fault.close_before_read(), operation="SendFax")


# -- OAuth 2.0 ---------------------------------------------------------------------------------


def test_token_provider_fetches_caches_and_the_service_accepts(
    faxws_simulator: FaxWSSimulator,
) -> None:
    provider = ClientCredentials(faxws_simulator.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    client = FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, token=provider)
    for _ in range(3):
        client.send_fax(["+1 555 0100"], [PDF])
    assert provider.fetches == 1
    assert faxws_simulator.token_requests == 1
    assert DEMO_CLIENT_SECRET not in repr(provider)


def test_token_provider_refreshes_before_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached token is used until ``leeway`` seconds before it expires, then renewed
    while it is still valid. The provider's clock is moved by hand, and renewals run before
    the call that starts one returns, so nothing waits."""
    now = [1000.0]
    monkeypatch.setattr(oauth, "time", SimpleNamespace(monotonic=lambda: now[0]))
    with FaxWSSimulator(token_lifetime=100) as sim:
        provider = ClientCredentials(sim.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, leeway=30)
        provider._in_background = lambda renew: renew()
        first = provider()
        now[0] += 69.9  # 0.1 s before renewal is due (lifetime 100 minus leeway 30)
        assert provider() == first
        assert (provider.fetches, sim.token_requests) == (1, 1)
        now[0] += 0.2  # due: renewed, although the simulator still accepts the first token
        assert provider() == first  # still valid: used while the next one is fetched
        second = provider()
        assert second != first
        assert (provider.fetches, sim.token_requests) == (2, 2)
        assert sim._state.user_for_token(first) == DEMO_USER_ID
        assert provider() == second  # and the new one is cached in turn
        assert provider.fetches == 2


def test_token_provider_fetches_a_new_token_after_401(faxws_simulator: FaxWSSimulator) -> None:
    provider = ClientCredentials(faxws_simulator.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    client = FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, token=provider)
    client.send_fax(["+1 555 0100"], [PDF])
    faxws_simulator.expire_tokens()  # the cached token is now refused
    result = client.send_fax(["+1 555 0100"], [PDF], request_id="after-401")
    assert result.request_id == "after-401"
    assert provider.fetches == 2
    statuses = [r.header("Authorization") for r in faxws_simulator.requests]
    assert len(statuses) == 3
    assert statuses[1] != statuses[2]


def test_token_provider_bad_client_secret(faxws_simulator: FaxWSSimulator) -> None:
    provider = ClientCredentials(faxws_simulator.token_url, DEMO_CLIENT_ID, "wrong-secret-xyz")
    client = FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, token=provider)
    with pytest.raises(AuthenticationError) as info:
        client.send_fax(["+1 555 0100"], [PDF])
    assert "invalid_client" in str(info.value)
    assert "wrong-secret-xyz" not in str(info.value)
    assert faxws_simulator.requests == []


def test_token_provider_is_thread_safe(faxws_simulator: FaxWSSimulator) -> None:
    from concurrent.futures import ThreadPoolExecutor

    provider = ClientCredentials(faxws_simulator.token_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    with ThreadPoolExecutor(8) as pool:
        tokens = set(pool.map(lambda _: provider(), range(64)))
    assert len(tokens) == 1
    assert provider.fetches == 1


def test_token_endpoint_speaks_rfc6749(faxws_simulator: FaxWSSimulator) -> None:
    r = requests.post(
        faxws_simulator.token_url,
        data={"grant_type": "client_credentials", "scope": "FaxWS offline_access"},
        auth=(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
        timeout=30,
    )
    assert r.status_code == 200
    data = r.json()
    assert data["token_type"] == "Bearer"
    assert data["expires_in"] == 3600
    assert r.headers["Cache-Control"] == "no-store"
    r = requests.post(faxws_simulator.token_url, data={"grant_type": "password"}, timeout=30)
    assert (r.status_code, r.json()["error"]) == (400, "unsupported_grant_type")


def test_slow_drip_is_cut_off_by_the_read_timeout(faxws_simulator: FaxWSSimulator) -> None:
    faxws_simulator.inject(Fault.slow_drip(20.0), operation="SendFax")
    client = pin_client(faxws_simulator, timeout=(2, 0.5))
    started = time.monotonic()
    with pytest.raises(RequestTimeoutError) as info:
        client.send_fax(["+1 555 0100"], [PDF])
    assert "took longer than 0.5 s" in str(info.value)
    assert info.value.maybe_delivered is True
    assert time.monotonic() - started < 15  # cut off well before the drip's 20 s
    assert len(faxws_simulator.requests) == 1


def test_short_slow_drip_within_the_timeout_succeeds(faxws_simulator: FaxWSSimulator) -> None:
    faxws_simulator.inject(Fault.slow_drip(0.3), operation="GetFaxBroadcastReport")
    client = pin_client(faxws_simulator, timeout=(10, 120))
    job = client.send_fax(["+1 555 0100"], [PDF]).job_ids[0]
    assert client.get_fax_broadcast_report(job).job_id == job


def test_refused_requests_are_recorded_too(faxws_simulator: FaxWSSimulator) -> None:
    requests.get(f"{faxws_simulator.url}/fax/v5", timeout=30)
    requests.post(f"{faxws_simulator.url}/wrong", data=b"<x/>", headers=HEADERS, timeout=30)
    got = [(r.method, r.path, r.body, r.operation) for r in faxws_simulator.requests]
    assert got == [("GET", "/fax/v5", b"", None), ("POST", "/wrong", b"<x/>", None)]


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Fault.delay_response(0), BadInputError, "seconds: must be a finite number"),
        (lambda: Fault.slow_drip(float("nan")), BadInputError, "seconds: must be a finite"),
        (lambda: Fault.slow_drip("1"), BadInputError, "seconds: must be a number of seconds"),
        (lambda: Fault.http_status(99), ValueError, "status must be from 200 to 599, not 99"),
        (lambda: Fault.http_status(600), ValueError, "status must be from 200 to 599, not 600"),
        (lambda: Fault.http_status("503"), TypeError, "status must be an int"),
        (lambda: Fault.ws_error("-1"), BadInputError, "code: must be an int, not str"),
        # What a fault later writes must be valid: ErrorCode is an xs:int, ...
        (
            lambda: Fault.ws_error(2**31),
            BadInputError,
            "code: 2147483648 is outside -2147483648..2147483647",
        ),
        (
            lambda: Fault.ws_error(-(2**31) - 1),
            BadInputError,
            "code: -2147483649 is outside -2147483648..2147483647",
        ),
        # ... texts are ones XML can carry, ...
        (lambda: Fault.ws_error(1, "a\ud800"), BadInputError, "text: contains U+D800"),
        (lambda: Fault.ws_error(1, None), BadInputError, "text: must be a str, not NoneType"),  # type: ignore[arg-type]
        (lambda: Fault.soap_fault("soap:Server", "\x00"), BadInputError, "text: contains U+0000"),
        (lambda: Fault.soap_fault("soap:Server", "\ufffe"), BadInputError, "text: contains U+FFFE"),
        (lambda: Fault.soap_fault("", "x"), BadInputError, "code: must not be empty"),
        (lambda: Fault.soap_fault("a\nb", "x"), BadInputError, "code: contains a line break"),
        (lambda: Fault.soap_fault(1, "x"), BadInputError, "code: must be a str, not int"),  # type: ignore[arg-type]
        # ... and a thread can wait the seconds.
        (
            lambda: Fault.delay_response(86_400.5),
            BadInputError,
            "seconds: must be at most 86400 seconds, not 86400.5",
        ),
        (
            lambda: Fault.slow_drip(1e300),
            BadInputError,
            "seconds: must be at most 86400 seconds, not 1e+300",
        ),
        (lambda: Fault.delay_response(10**400), BadInputError, "seconds: must be a finite number"),
    ],
)
def test_faults_are_checked_when_built(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        build()


@pytest.mark.parametrize(
    ("fault", "error", "said"),
    [
        (Fault.ws_error(2**31 - 1, "most"), ServiceError, (2**31 - 1, "most")),
        (Fault.ws_error(-(2**31), "least"), ServiceError, (-(2**31), "least")),
        (
            Fault.soap_fault("Client", "two\nlines \U0001f4e0"),
            SoapFaultError,
            ("Client", "two\nlines \U0001f4e0"),
        ),
    ],
    ids=["largest int", "smallest int", "text over lines"],
)
def test_faults_at_the_edges_of_their_checks_are_answered(
    faxws_simulator: FaxWSSimulator, fault: Fault, error: type[Exception], said: tuple[object, str]
) -> None:
    faxws_simulator.inject(fault, operation="SendFax")
    with pytest.raises(error) as info:
        pin_client(faxws_simulator, retries=0).send_fax(["+1 555 0100"], [PDF])
    got: Any = info.value
    if isinstance(got, ServiceError):
        assert (got.code, got.error_string) == said
    else:
        assert (got.fault_code, got.fault_string) == said


def test_the_longest_delay_is_accepted() -> None:
    assert Fault.delay_response(86_400).seconds == Fault.slow_drip(86_400).seconds == 86_400


@pytest.mark.parametrize(
    ("fault", "operation", "times", "message"),
    [
        (Fault.html_500(), None, 0, "times must be a whole number of at least 1, not 0"),
        (Fault.html_500(), None, True, "times must be a whole number of at least 1, not True"),
        (Fault.html_500(), "Nope", 1, "unknown operation 'Nope'"),
        (Fault.close_before_read(), "SendFax", 1, "cannot be limited to one operation"),
    ],
)
def test_injections_are_checked(
    faxws_simulator: FaxWSSimulator, fault: Fault, operation: str | None, times: int, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        faxws_simulator.inject(fault, operation=operation, times=times)


def test_only_a_fault_of_one_kind_can_be_injected(faxws_simulator: FaxWSSimulator) -> None:
    with pytest.raises(TypeError, match="one of Fault's class methods"):
        faxws_simulator.inject(Fault())


def test_a_call_the_simulator_fails_to_answer_gets_a_server_fault(
    faxws_simulator: FaxWSSimulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Rather than the connection closing unanswered, which leaves the client waiting or
    guessing; the failure is logged with its traceback, and the simulator serves on."""

    def fail(*args: object) -> None:
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr("faxws.testing._http.document", fail)
    client = pin_client(faxws_simulator, retries=0)
    failed = "the simulator failed: RuntimeError: broken on purpose"
    with (
        caplog.at_level(logging.ERROR, logger="faxws.simulator"),
        pytest.raises(SoapFaultError) as info,
    ):
        client.send_fax(["+1 555 0100"], [PDF])
    assert (info.value.status_code, info.value.fault_code) == (500, "soap:Server")
    assert info.value.fault_string == failed
    assert (faxws_simulator.requests[-1].status, faxws_simulator.requests[-1].refusal) == (
        500,
        failed,
    )
    logged = [r.getMessage() for r in caplog.records if r.name == "faxws.simulator"]
    assert len(logged) == 1
    assert logged[0].startswith(failed + "\nTraceback (most recent call last):")
    monkeypatch.undo()
    assert client.send_fax(["+1 555 0100"], [PDF]).job_ids


def test_send_fax_answers_the_ttfp_the_guide_says(faxws_simulator: FaxWSSimulator) -> None:
    guide = (Path(__file__).parents[2] / "docs" / "simulator.md").read_text(encoding="utf-8")
    said = re.search(r"SendFax stores the job and answers .*?TTFP (\d+)", guide, re.S)
    assert said is not None
    result = pin_client(faxws_simulator).send_fax(["+1 555 0100"], [PDF])
    assert result.ttfp == int(said.group(1))
