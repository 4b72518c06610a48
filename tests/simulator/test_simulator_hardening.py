"""The simulator stays up and correct under odd input: any credential, any encoding, any
method, many connections at once, and a stop() that leaves no thread behind."""

from __future__ import annotations

import base64
import errno
import http.client
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
import requests
from lxml import etree

from crowded import ALLOWED, IDS, REASON, REFUSED, envelope
from faxws import AuthenticationError, BadInputError, FaxClient, FaxFile, FileType
from faxws._protocol.redact import secret_forms
from faxws.oauth import ClientCredentials
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Account, Fault, FaxWSSimulator

PDF = FaxFile(b"%PDF-1.4 hardening", FileType.PDF)
SOAP_HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``condition`` until it holds; a generous deadline only turns a hang into a failure."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def report_xml(user: str = DEMO_USER_ID, pin: str = DEMO_PIN, doctype: str = "") -> str:
    return (
        f'<?xml version="1.0" encoding="{{enc}}"?>{doctype}'
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
        f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{user}</UserID><strPIN>{pin}</strPIN>'
        "<JobId>J</JobId><RecipientType>0</RecipientType><RecipAddress/>"
        "</GetFaxBroadcastReport></soap:Body></soap:Envelope>"
    )


def send_fax_xml(doctype: str = "", file_data: str = "JVBERg==") -> str:
    return (
        f'<?xml version="1.0" encoding="{{enc}}"?>{doctype}'
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
        f'<SendFax xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID><strPIN>{DEMO_PIN}</strPIN>'
        "<Recipients><item><RecipFaxNumber>+1 555 0100</RecipFaxNumber><RecipCompany/>"
        "<RecipTitle/><RecipName/><RecipSecureCSID/></item></Recipients>"
        "<FaxJobFiles><item><FileIndex>1</FileIndex><FileTypeId>101</FileTypeId>"
        f"<FileData>{file_data}</FileData></item></FaxJobFiles></SendFax></soap:Body>"
        "</soap:Envelope>"
    )


def encoded(template: str, encoding: str) -> bytes:
    label = {"utf-16-le": "UTF-16", "utf-16-be": "UTF-16", "utf-16": "UTF-16"}.get(
        encoding, encoding.upper()
    )
    return template.replace("{enc}", label).encode(encoding)


def fault_string(content: bytes) -> str:
    return str(etree.fromstring(content).findtext(".//faultstring"))


# -- credentials ---------------------------------------------------------------------------

NON_ASCII = Account(
    "mbx-ünïcode",
    pin="pïn-€-1",
    tokens=("tok-ascii",),
    client_id="clïent-ü",
    client_secret="sécret-€-ß",
)


def test_non_ascii_pin_and_client_secret_compare_correctly() -> None:
    with FaxWSSimulator([NON_ASCII, Account("mbx-ascii", pin="1234")]) as sim:
        # The right non-ASCII PIN is accepted ...
        ok = FaxClient(sim.url, user_id=NON_ASCII.user_id, pin="pïn-€-1")
        assert ok.send_fax(["+1 555 0100"], [PDF]).job_ids
        # ... a wrong one, or a non-ASCII guess at an ASCII PIN, is a clean 401.
        for user, pin in [(NON_ASCII.user_id, "pïn-€-2"), ("mbx-ascii", "12€4")]:
            with pytest.raises(AuthenticationError) as info:
                FaxClient(sim.url, user_id=user, pin=pin).get_fax_broadcast_report("J")
            assert info.value.status_code == 401
        # The token endpoint, with the credentials in the form body ...
        provider = ClientCredentials(sim.token_url, "clïent-ü", "sécret-€-ß")
        client = FaxClient(sim.url, user_id=NON_ASCII.user_id, token=provider)
        assert client.send_fax(["+1 555 0100"], [PDF]).job_ids
        # ... and with HTTP Basic (UTF-8, RFC 7617), right and wrong.
        for secret, status in [("sécret-€-ß", 200), ("sécret-€-s", 401)]:
            basic = base64.b64encode(f"clïent-ü:{secret}".encode()).decode()
            r = requests.post(
                sim.token_url,
                data={"grant_type": "client_credentials"},
                headers={"Authorization": f"Basic {basic}"},
                timeout=30,
            )
            assert r.status_code == status
        assert len(sim.jobs) == 2


# -- DTDs in any encoding --------------------------------------------------------------------

ENCODINGS = ["utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32"]
DOCTYPES = {
    "plain": "<!DOCTYPE soap:Envelope>",
    "internal-entity": '<!DOCTYPE soap:Envelope [<!ENTITY e "x">]>',
    "external": '<!DOCTYPE soap:Envelope SYSTEM "http://127.0.0.1:9/x.dtd">',
}


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("doctype", list(DOCTYPES))
def test_dtd_is_refused_in_any_encoding(
    faxws_simulator: FaxWSSimulator, encoding: str, doctype: str
) -> None:
    body = encoded(send_fax_xml(DOCTYPES[doctype]), encoding)
    r = requests.post(f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=30)
    assert r.status_code == 500
    assert "DTD" in fault_string(r.content)
    assert faxws_simulator.jobs == []


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_requests_in_other_encodings_are_still_served(
    faxws_simulator: FaxWSSimulator, encoding: str
) -> None:
    body = encoded(send_fax_xml(), encoding)
    r = requests.post(f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=30)
    assert r.status_code == 200, r.content
    assert faxws_simulator.jobs[0].files[0].data == b"%PDF"


# -- methods -------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["TRACE", "post", "FOO", "CONNECT", "OPTIONS", "PATCH", "GET"])
@pytest.mark.parametrize("path", ["/fax/v5", "/connect/token"])
def test_other_methods_get_405_with_allow(
    faxws_simulator: FaxWSSimulator, method: str, path: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", faxws_simulator.port, timeout=30)
    try:
        conn.request(method, path, body=b"<x/>", headers={"Content-Length": "4"})
        response = conn.getresponse()
        response.read()
        assert response.status == 405
        assert response.getheader("Allow") == "POST"
    finally:
        conn.close()


# -- token lifetimes -------------------------------------------------------------------------


@pytest.mark.parametrize("lifetime", [math.inf, -math.inf, math.nan, 0, -1, 0.0, "60", True])
def test_token_lifetime_must_be_finite_and_positive(lifetime: object) -> None:
    with pytest.raises(BadInputError) as info:
        FaxWSSimulator(token_lifetime=lifetime)  # type: ignore[arg-type]
    assert info.value.field == "token_lifetime"
    sim = FaxWSSimulator()
    with pytest.raises(BadInputError) as info:
        sim.issue_token(DEMO_USER_ID, lifetime=lifetime)  # type: ignore[arg-type]
    assert info.value.field == "lifetime"


def test_fractional_and_large_token_lifetimes_work() -> None:
    with FaxWSSimulator(token_lifetime=1e9) as sim:
        r = requests.post(
            sim.token_url,
            data={"grant_type": "client_credentials"},
            auth=("demo-client", "demo-secret"),
            timeout=30,
        )
        assert (r.status_code, r.json()["expires_in"]) == (200, 1_000_000_000)
        token = sim.issue_token(DEMO_USER_ID, lifetime=0.5)
        assert FaxClient(sim.url, user_id=DEMO_USER_ID, token=token)


# -- connections -----------------------------------------------------------------------------


def test_listen_backlog_holds_many_simultaneous_connections() -> None:
    """While the accept loop is held up, 64 connections still complete their handshake in the
    kernel's queue instead of waiting for SYN retries (the old backlog of 5 held 6)."""
    sockets: list[socket.socket] = []
    with FaxWSSimulator() as sim:
        try:
            with sim._lock:  # the accept loop registers each connection under this lock
                for _ in range(64):
                    sockets.append(socket.create_connection(("127.0.0.1", sim.port), timeout=3))
        finally:
            for sock in sockets:
                sock.close()
    assert len(sockets) == 64


def _raw_request(body: bytes, extra: str = "") -> bytes:
    head = (
        "POST /fax/v5 HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml; charset=utf-8\r\n"
        f"SOAPAction: \r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before the response"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = dict(line.partition(b":")[::2] for line in head.split(b"\r\n")[1:])
    length = int(next(v for k, v in fields.items() if k.lower() == b"content-length"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return head


def _connect(sim: FaxWSSimulator) -> socket.socket:
    return socket.create_connection(("127.0.0.1", sim.port), timeout=30)


def test_stop_joins_every_handler_thread() -> None:
    before = set(threading.enumerate())
    sim = FaxWSSimulator().start()
    clients: list[socket.socket] = []
    try:
        sim.inject(Fault.delay_response(600), operation="SendFax")
        sim.inject(Fault.slow_drip(600), operation="GetFaxBroadcastReport")
        parked = _connect(sim)  # a request parked in a delay
        parked.sendall(_raw_request(encoded(send_fax_xml(), "utf-8")))
        wait_for(lambda: len(sim.requests) == 1, "the SendFax to be parked")
        dripping = _connect(sim)  # a response being dripped
        dripping.sendall(_raw_request(encoded(report_xml(), "utf-8")))
        assert dripping.recv(1) == b"H"
        idle = _connect(sim)  # a kept-alive connection between requests
        idle.sendall(_raw_request(encoded(report_xml(), "utf-8")))
        _read_response(idle)
        half = _connect(sim)  # a body that stops halfway
        half.sendall(_raw_request(b"<soap:Envelope" + b" " * 986)[:-900])
        silent = _connect(sim)  # connected, nothing sent
        clients += [parked, dripping, idle, half, silent]
        wait_for(lambda: sim.connections == 5, "the connections to be accepted")
        started = time.monotonic()
    finally:
        sim.stop()
    stopped_in = time.monotonic() - started
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for sock in clients:
        sock.close()
    assert left == []
    assert stopped_in < 60  # far below the 600 s the faults would have held the threads


# -- masking ---------------------------------------------------------------------------------

TRICKY = {
    "ascii": ("P&<>'\"in-42", "tok-Mask-9x", "s&c<r>t-9", "WRONG-p&n-7"),
    "non-ascii": ("P&<>'\"in-é-42", "tok-Mask-9x", "s&c<r>t-€", "WRONG-p&n-ü"),
}


def _all_forms(*values: str) -> set[str]:
    forms: set[str] = set()
    for value in values:
        forms |= secret_forms(value)
    return forms


@pytest.mark.parametrize("kind", list(TRICKY))
def test_reprs_of_records_mask_secrets(kind: str) -> None:
    pin, token, client_secret, wrong_pin = TRICKY[kind]
    account = Account(
        "mbx-mask", pin=pin, tokens=(token,), client_id="cid-mask", client_secret=client_secret
    )
    with FaxWSSimulator([account]) as sim:
        FaxClient(sim.url, user_id="mbx-mask", pin=pin).send_fax(["+1 555"], [PDF])
        FaxClient(sim.url, user_id="mbx-mask", token=token).send_fax(["+1 555"], [PDF])
        provider = ClientCredentials(sim.token_url, "cid-mask", client_secret)
        issued = provider()
        FaxClient(sim.url, user_id="mbx-mask", token=provider).get_fax_broadcast_report(
            sim.jobs[0].job_ids[0]
        )
        with pytest.raises(AuthenticationError):
            FaxClient(sim.url, user_id="mbx-mask", pin=wrong_pin).get_fax_broadcast_report("J")
        # A Basic header on the service path, and a UTF-16 body.
        requests.post(
            f"{sim.url}/fax/v5",
            data=encoded(report_xml("mbx-mask", escape(pin, {'"': "&quot;"})), "utf-16"),
            headers={
                **SOAP_HEADERS,
                "Authorization": "Basic " + base64.b64encode(b"u:pw-Basic-7").decode(),
            },
            timeout=30,
        )
        records = sim.requests
        shown = "\n".join(
            [repr(records), str(records), repr(sim.jobs), repr(sim.accounts)]
            + [repr(r.masked_headers()) for r in records]
        )
        assert len(records) == 5
        assert "***" in shown
        secrets = [pin, token, client_secret, issued, wrong_pin, "pw-Basic-7"]
        secrets.append(base64.b64encode(b"u:pw-Basic-7").decode())
        for form in _all_forms(*secrets):
            assert form not in shown, form
        # The records themselves keep what arrived, for tests that look at it.
        assert records[1].header("Authorization") == f"Bearer {token}"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
@pytest.mark.parametrize("size", ["small", "large"])
def test_external_dtd_on_disk_is_never_opened(
    faxws_simulator: FaxWSSimulator, tmp_path: Path, encoding: str, size: str
) -> None:
    """A reader that opened the named pipe would block in open() until a writer comes: the
    non-blocking open for writing below succeeds exactly when somebody has it open."""
    pipe = tmp_path / "external.dtd"
    os.mkfifo(pipe)
    data = "QUJD" * (100_000 if size == "large" else 1)  # large bodies are parsed as they arrive
    doctype = f'<!DOCTYPE soap:Envelope SYSTEM "{pipe.as_uri()}">'
    body = encoded(send_fax_xml(doctype, file_data=data), encoding)
    try:
        r = requests.post(
            f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=10
        )
        answer = (r.status_code, fault_string(r.content))
    except requests.Timeout:
        answer = (0, "no answer")
    try:
        fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        opened = exc.errno != errno.ENXIO  # ENXIO: no reader
    else:
        os.close(fd)  # the end of file lets the reader go
        opened = True
    assert not opened, "the simulator opened the external DTD"
    assert answer == (500, "DTDs are not allowed")


# -- documents -------------------------------------------------------------------------------

DOCUMENT = bytes(range(256)) * 4000 + b"end"  # about 1 MiB: a streamed, spooled body


@pytest.mark.parametrize("size", [1000, len(DOCUMENT)], ids=["small", "large"])
@pytest.mark.parametrize("lines", [False, True], ids=["one-line", "mime-lines"])
def test_documents_are_decoded_byte_for_byte(
    faxws_simulator: FaxWSSimulator, size: int, lines: bool
) -> None:
    document = DOCUMENT[:size]
    text = (base64.encodebytes if lines else base64.b64encode)(document).decode()
    body = encoded(send_fax_xml(file_data=text), "utf-8")
    r = requests.post(f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=30)
    assert r.status_code == 200, r.content
    (received,) = faxws_simulator.jobs[0].files
    assert received.data == document
    assert received.size == size


BAD_BASE64 = {
    "padding-inside": "QUJD" * 10 + "QQ==" + "QUJD" * 10,
    "bad-character": "QUJD" * 10 + "QU!D",
    "truncated": "QUJD" * 10 + "QUJ",
    "non-ascii": "QUJD" * 10 + "QUJé",
}


@pytest.mark.parametrize("padding", [0, 300_000], ids=["small", "large"])
@pytest.mark.parametrize("case", list(BAD_BASE64))
def test_invalid_base64_is_a_client_fault_naming_the_document(
    faxws_simulator: FaxWSSimulator, case: str, padding: int
) -> None:
    # Leading whitespace makes a large body without changing the document.
    body = encoded(send_fax_xml(file_data=" " * padding + BAD_BASE64[case]), "utf-8")
    r = requests.post(f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=30)
    assert r.status_code == 500
    assert fault_string(r.content) == (
        "/SendFax/FaxJobFiles/item[1]/FileData: not a valid xs:base64Binary"
    )
    assert faxws_simulator.jobs == []


def _send_fax_payload() -> str:
    template = send_fax_xml()
    return template[template.index("<SendFax ") : template.index("</soap:Body>")]


@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in REFUSED], ids=IDS["refused"]
)
def test_an_element_crowded_with_attributes_or_declarations_is_a_client_fault(
    faxws_simulator: FaxWSSimulator, attributes: int, declarations: int
) -> None:
    body = envelope(_send_fax_payload(), attributes, declarations)
    r = requests.post(f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=30)
    assert (r.status_code, fault_string(r.content)) == (500, f"an element has {REASON}")
    assert faxws_simulator.jobs == []


@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in ALLOWED], ids=IDS["allowed"]
)
def test_an_element_at_the_bound_of_attributes_and_declarations_is_served(
    faxws_simulator: FaxWSSimulator, attributes: int, declarations: int
) -> None:
    body = envelope(_send_fax_payload(), attributes, declarations)
    r = requests.post(f"{faxws_simulator.url}/fax/v5", data=body, headers=SOAP_HEADERS, timeout=30)
    assert r.status_code == 200
    assert len(faxws_simulator.jobs) == 1
