"""Secrets never leak: not in logs at any level, exception messages, reprs or CLI output."""

from __future__ import annotations

import base64
import logging
import os
import re
import subprocess
import sys
import traceback
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from conftest import (
    ZEEP_RECIPIENT,
    CaptureServer,
    Face,
    envelope,
    fault_response,
    http_reply,
    report_response,
)
from faxws import FaxFile, FaxWSError
from faxws.errors import ProtocolError
from faxws.testing import Account, Fault, FaxWSSimulator

PIN = "PINMARK-3r9w"
TOKEN = "TOKMARK-7q2z"
SECRET = "SECMARK-5x1k"
USER = "mbx-secret-test"
MARKERS = (PIN, TOKEN, SECRET)


def test_no_secret_anywhere_across_client_cli_and_simulator(
    caplog: pytest.LogCaptureFixture,
    capture_server: type[CaptureServer],
    tmp_path: Path,
    make_face: Callable[[str], Face],
) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: faxws, requests, urllib3
    seen: list[str] = []
    account = Account(USER, pin=PIN, tokens=(TOKEN,), client_id="cid", client_secret=SECRET)
    pdf = FaxFile(b"%PDF-1.4", 101)

    def attempt(action: object) -> None:
        try:
            action()  # type: ignore[operator]
        except FaxWSError as exc:
            seen.extend([str(exc), repr(exc), exc.message, getattr(exc, "body_excerpt", "")])

    with FaxWSSimulator([account]) as sim:
        faces = (make_face("sync"), make_face("async"))  # each client, the same calls
        clients = []
        providers = []
        for face in faces:
            provider = face.provider(sim.token_url, "cid", SECRET)
            providers.append(provider)
            clients += [
                face.client(sim.url, user_id=USER, pin=PIN, retries=1, retry_backoff=0),
                face.client(sim.url, user_id=USER, token=TOKEN, retries=1, retry_backoff=0),
                face.client(sim.url, user_id=USER, token=provider, retries=1, retry_backoff=0),
            ]
        seen += [repr(c) for c in clients] + [repr(p) for p in providers]
        seen += [repr(account), repr(sim.accounts)]
        faults = [
            None,
            Fault.soap_fault(),
            Fault.ws_error(-1),
            Fault.html_500(),
            Fault.http_status(503),
            Fault.http_status(401),
            Fault.close_after_read(),
            Fault.reset_mid_response(),
        ]
        for client in clients:
            for fault in faults:
                if fault is not None:
                    sim.inject(fault, times=2)
                attempt(lambda c=client: c.send_fax(["+1 555 0100"], [pdf]))
                attempt(lambda c=client: c.get_fax_broadcast_report("SIM00000001"))
            attempt(lambda c=client: c.send_fax(["no digits"], [pdf]))  # bad input
        sim.expire_tokens()  # the providers' 401 path
        attempt(lambda: clients[2].send_fax(["+1 555 0100"], [pdf]))
        attempt(lambda: clients[5].send_fax(["+1 555 0100"], [pdf]))
        for face in faces:
            bad_pin = face.client(sim.url, user_id=USER, pin=PIN + "x")
            attempt(lambda c=bad_pin: c.get_fax_broadcast_report("J"))
            bad_secret = face.provider(sim.token_url, "cid", SECRET + "x")
            bad_client = face.client(sim.url, user_id=USER, token=bad_secret)
            attempt(lambda c=bad_client: c.send_fax(["+1 5"], [pdf]))
        issued_tokens = list(sim._state.issued)

        # The CLI, with --verbose, in every auth mode.
        pdf_path = tmp_path / "a.pdf"
        pdf_path.write_bytes(b"%PDF-1.4")
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
        env |= {"FAXWS_BASE_URL": sim.url, "FAXWS_USER_ID": USER}
        modes = [
            {"FAXWS_PIN": PIN},
            {"FAXWS_TOKEN": TOKEN},
            {
                "FAXWS_TOKEN_URL": sim.token_url,
                "FAXWS_CLIENT_ID": "cid",
                "FAXWS_CLIENT_SECRET": SECRET,
            },
            {"FAXWS_PIN": PIN + "-wrong"},
        ]
        for mode in modes:
            for args in (["send", "--to", "+1 555 0100", str(pdf_path)], ["report", "J1"]):
                for extra in ([], ["--json"]):
                    done = subprocess.run(
                        [sys.executable, "-m", "faxws", *args, "--verbose", *extra],
                        env=env | mode,
                        capture_output=True,
                        text=True,
                        timeout=60,
                        check=False,
                    )
                    seen += [done.stdout, done.stderr]

    # A hostile service that echoes the request (PIN included) into its fault.
    def echo_body(raw: bytes) -> bytes:
        body = raw.partition(b"\r\n\r\n")[2].decode()
        return http_reply(fault_response("c", escape(body[-300:])), "500 Internal Server Error")

    echo = capture_server(echo_body)
    for face in faces:
        echoed = face.client(echo.url, user_id=USER, pin=PIN)
        attempt(lambda c=echoed: c.get_fax_broadcast_report("J"))

    records = [r.getMessage() for r in caplog.records] + [
        str(r.args) for r in caplog.records if r.args
    ]
    everything = "\n".join(seen + records)
    assert "SendFax request_id=" in everything  # the logs were captured
    assert "***" in everything  # the echoing service's copy of the PIN was masked
    for marker in (*MARKERS, *issued_tokens):
        assert marker not in everything


# A PIN with every character that escaping or encoding changes.
ODD_PIN = "PINMARK&<>\"'%+ /é\\\tZü"
ODD_TOKEN = "TOKMARK%2B&amp;"
ODD_SECRET = "SECMARK&<'é %"


def forms(secret: str) -> dict[str, str]:
    """How a server or a formatter may echo a secret back."""
    from urllib.parse import quote, quote_plus
    from xml.sax.saxutils import escape, quoteattr

    return {
        "raw": secret,
        "xml": escape(secret),
        "xml attribute": quoteattr(secret)[1:-1],
        "xml numeric": "".join(f"&#{ord(c)};" if c in "&<>\"'" else c for c in secret),
        "url": quote(secret, safe=""),
        "url plus": quote_plus(secret),
        "url lower hex": re.sub(
            "%[0-9A-F]{2}", lambda m: m.group().lower(), quote(secret, safe="")
        ),
        "json": __import__("json").dumps(secret)[1:-1],
        "repr": repr(secret)[1:-1],
        "url latin-1": quote(secret, safe="", encoding="latin-1"),
        "nfd": unicodedata.normalize("NFD", secret),
        # As HTTP Basic and other base64 carry it: alone, or after a user name (at another
        # offset in its 3-byte group), padded or not, in either alphabet.
        "base64": b64(secret),
        "base64 url-safe unpadded": b64(secret, urlsafe=True).rstrip("="),
        "base64 of user:secret": b64(f"{USER}:{secret}"),
        "base64 of u:secret url-safe": b64(f"u:{secret}", urlsafe=True),
    }


def b64(text: str, *, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(text.encode()).decode()


@pytest.mark.parametrize("form", sorted(forms(ODD_PIN)))
@pytest.mark.parametrize("where", ["fault", "html", "ws-error", "status line"])
def test_an_echoed_pin_is_masked_in_every_form(
    capture_server: type[CaptureServer],
    form: str,
    where: str,
    face: Face,
) -> None:
    echoed = forms(ODD_PIN)[form]
    text = escape(echoed) if where != "html" else echoed

    def answer(raw: bytes) -> bytes:
        if where == "fault":
            return http_reply(fault_response("c", text), "500 Internal Server Error")
        if where == "ws-error":
            from conftest import report_response

            return http_reply(report_response(ok=False, code=-1, text=text))
        if where == "status line":
            return f"HTTP/1.1 {echoed}\r\n\r\n".encode()
        return http_reply(f"<html>{text}</html>".encode(), "502 Bad Gateway")

    server = capture_server(answer)
    client = face.client(server.url, user_id=USER, pin=ODD_PIN, retries=0)
    with pytest.raises(FaxWSError) as info:
        client.get_fax_broadcast_report("J1")
    error = info.value
    attributes = ("body_excerpt", "fault_string", "error_string")
    shown = " ".join(
        [str(error), repr(error), error.message]
        + [str(getattr(error, name, "") or "") for name in attributes]
    )
    for value in forms(ODD_PIN).values():
        assert value not in shown, (form, value)


@pytest.mark.parametrize("form", sorted(forms(ODD_SECRET)))
def test_an_echoed_client_secret_is_masked_in_every_form(
    capture_server: type[CaptureServer],
    form: str,
    face: Face,
) -> None:
    import json

    echoed = forms(ODD_SECRET)[form]
    body = json.dumps({"error": f"invalid_client {echoed}"}).encode()
    server = capture_server(lambda raw: http_reply(body, "401 Unauthorized"))
    provider = face.provider(f"{server.url}/token", "cid", ODD_SECRET)
    with pytest.raises(FaxWSError) as info:
        face.fetch_token(provider)
    for value in forms(ODD_SECRET).values():
        assert value not in str(info.value)
    assert ODD_SECRET not in repr(provider)


@pytest.mark.parametrize("form", sorted(forms(ODD_TOKEN)))
def test_an_echoed_token_is_masked_in_every_form(
    capture_server: type[CaptureServer],
    form: str,
    face: Face,
) -> None:
    echoed = forms(ODD_TOKEN)[form]
    server = capture_server(
        lambda raw: http_reply(fault_response("c", escape(echoed)), "500 Internal Server Error")
    )
    client = face.client(server.url, user_id=USER, token=ODD_TOKEN, retries=0)
    with pytest.raises(FaxWSError) as info:
        client.get_fax_broadcast_report("J1")
    for value in forms(ODD_TOKEN).values():
        assert value not in str(info.value)


def test_secrets_echoed_in_headers_or_a_status_line_reach_no_log_result_or_traceback(
    caplog: pytest.LogCaptureFixture,
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    from conftest import report_response

    caplog.set_level(logging.DEBUG)  # the root logger: faxws, requests, urllib3
    answers = {
        "activity id": http_reply(report_response(), extra=f"x-ch-activity-id: {PIN}\r\n"),
        "header line without a colon": http_reply(report_response(), extra=f"{PIN}\r\n"),
        "status line": f"HTTP/1.1 {PIN}\r\n\r\n".encode(),
        # Past where messages are cut short: a secret must be masked before the cut.
        "long status line": f"HTTP/1.1 2x0 {'a' * 56}{PIN}\r\n\r\n".encode(),
        "long header line": http_reply(report_response(), extra=f"{'a' * 40}{PIN}\r\n"),
    }
    shown: list[str] = []
    errors: dict[str, FaxWSError] = {}
    for name, answer in answers.items():
        server = capture_server(lambda raw, a=answer: a)
        client = face.client(server.url, user_id=USER, pin=PIN, retries=0)
        try:
            shown.append(repr(client.get_fax_broadcast_report("J1")))
        except FaxWSError as exc:
            errors[name] = exc
            shown.extend(traceback.format_exception(exc))
    assert sorted(errors) == [
        "header line without a colon",
        "long header line",
        "long status line",
        "status line",
    ]
    assert all(e.maybe_delivered for e in errors.values())
    # Nor kept as the context of the error (which a debugger or a logger could show).
    assert all(e.__context__ is None and e.__cause__ is None for e in errors.values())
    shown += [r.getMessage() for r in caplog.records]
    shown += [
        "".join(traceback.format_exception(*r.exc_info)) for r in caplog.records if r.exc_info
    ]
    assert "***" in "\n".join(shown)  # the activity id was there, masked
    text = "\n".join(shown)
    assert not [PIN[i : i + 6] for i in range(len(PIN) - 5) if PIN[i : i + 6] in text]


def test_a_utf16_error_page_is_read_as_text_and_masked(
    capture_server: type[CaptureServer],
    face: Face,
) -> None:
    page = f"<html>error for {PIN}</html>".encode("utf-16")
    server = capture_server(lambda raw: http_reply(page, "502 Bad Gateway"))
    client = face.client(server.url, user_id=USER, pin=PIN, retries=0)
    with pytest.raises(FaxWSError) as info:
        client.get_fax_broadcast_report("J1")
    assert "error for ***" in info.value.body_excerpt  # type: ignore[attr-defined]


@pytest.mark.parametrize("secret", ["PINé-77", "pa\u0301ss-ß-€"])
def test_a_secret_read_back_as_latin_1_is_masked_too(secret: str) -> None:
    """An HTTP stack reads a status line or header as Latin-1: a secret echoed there arrives
    as its UTF-8 bytes read that way."""
    from faxws._protocol.redact import redact as mask

    echoed = f"HTTP/1.1 200 {secret.encode().decode('latin-1')} ok"
    assert mask(echoed, [secret]) == "HTTP/1.1 200 *** ok"


# -- secrets a server writes into the markup of its answer -------------------------------------
# Messages and log records that quote a tag, a namespace, the parser's own words or a value
# reach the caller through one boundary per call, which masks them whatever they say. Each
# case runs against every face that reads answers: FaxClient, AsyncFaxClient and zeep's.


def _envelope(payload: str) -> str:
    return envelope(payload).decode()


def _report(namespace: str = "urn:FaxWS", extra: str = "", code: str = "0") -> str:
    return _envelope(
        f'<f:GetFaxBroadcastReportResponse xmlns:f="{namespace}"><f:return>true</f:return>'
        f"<f:WSError><f:ErrorCode>{code}</f:ErrorCode><f:ErrorString/></f:WSError>{extra}"
        "</f:GetFaxBroadcastReportResponse>"
    )


def _sent(ttfp: str) -> str:
    return _envelope(
        '<f:FaxSendResponse xmlns:f="urn:FaxWS"><f:return>true</f:return><f:FaxJobIds><f:item>'
        f"<f:JobId>J1</f:JobId></f:item></f:FaxJobIds><f:TTFP>{ttfp}</f:TTFP><f:WSError>"
        "<f:ErrorCode>0</f:ErrorCode><f:ErrorString/></f:WSError></f:FaxSendResponse>"
    )


def _statuses(job_id: str) -> str:
    return _envelope(
        '<FaxStatusResponse xmlns="urn:FaxWS"><return>true</return><FaxStatusList><item>'
        f"<FaxJobId>{job_id}</FaxJobId><FaxJobStatusId>1</FaxJobStatusId><StatusDescription/>"
        "<Error><ErrorCode>0</ErrorCode><ErrorString/></Error></item></FaxStatusList>"
        "<WSError><ErrorCode>0</ErrorCode><ErrorString/></WSError></FaxStatusResponse>"
    )


@dataclass(frozen=True)
class Markup:
    """An answer ``body`` quoting a secret in its markup. ``says``: what the error (or the
    DEBUG log, when ``error`` is None) shows, the secret masked; ``operation``: the call."""

    body: Callable[[str], str]
    error: type[FaxWSError] | None
    says: Callable[[str], str]
    operation: str = "report"
    faces: tuple[str, ...] = ("sync", "async", "zeep")


MARKUP = {
    "the root element is named by it": Markup(
        lambda s: f"<{s}/>",
        ProtocolError,
        lambda m: f"the response is not a SOAP envelope (root element {m})",
    ),
    "the root element's namespace holds it": Markup(
        lambda s: f'<x:Envelope xmlns:x="urn:{s}"/>',
        ProtocolError,
        lambda m: f"(root element {{urn:{m}}}Envelope)",
    ),
    "the answer element's namespace holds it": Markup(
        lambda s: _report(f"urn:echo:{s}"),
        ProtocolError,
        lambda m: f"{{urn:echo:{m}}}GetFaxBroadcastReportResponse",
    ),
    "the parser names it: mismatched tags": Markup(
        lambda s: f"<soap><{s}></soap>",
        ProtocolError,
        lambda m: f"Opening and ending tag mismatch: {m} line 1",
    ),
    "the parser names it: an undeclared prefix": Markup(
        lambda s: f"<{s}:Envelope/>",
        ProtocolError,
        lambda m: f"Namespace prefix {m} on Envelope is not defined",
    ),
    "an unknown element's namespace holds it": Markup(
        lambda s: _report(extra=f'<e:Echo xmlns:e="urn:echo:{s}"/>'),
        None,
        lambda m: (
            f"ignoring unknown elements in /GetFaxBroadcastReportResponse: {{urn:echo:{m}}}Echo"
        ),
        faces=("sync", "async"),  # zeep's face refuses what the WSDL's schema does not allow
    ),
    # Values quoted cut short: masked before the cut, else the cut leaves part of the secret.
    "an integer holds it where the quote is cut": Markup(
        lambda s: _sent("9" * 30 + s),
        ProtocolError,
        lambda m: f"/FaxSendResponse/TTFP is not an integer: '{'9' * 30}{m}'",
        operation="send",
        faces=("sync", "async"),  # zeep reads values itself, after the schema check
    ),
    "an unasked job's id holds it where the quote is cut": Markup(
        lambda s: _statuses("J" * 70 + s),
        ProtocolError,
        lambda m: f"the status answer names job '{'J' * 70}{m}' though it was not asked for",
        operation="status",
        faces=("sync", "async"),  # no status calls of faxws's own through zeep
    ),
    "the WSError's ErrorCode holds it": Markup(
        lambda s: _report(code=s),
        ProtocolError,
        lambda m: f"the WSError's ErrorCode '{m}' is not an int",
    ),
}
MARKUP_CASES = [(case, face) for case, markup in MARKUP.items() for face in markup.faces]


def _call(make_face: Callable[[str], Face], face: str, url: str, op: str, **auth: str) -> object:
    """One call of ``op`` through ``face``: FaxClient, AsyncFaxClient or zeep's client."""
    if face == "zeep":
        from faxws.zeep import make_client

        zeep_client = make_client(url, user_id=USER, retries=0, **auth)
        try:
            if op == "send":
                files = [{"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF-1.4"}]
                return zeep_client.service.SendFax(
                    Recipients={"item": [ZEEP_RECIPIENT]}, FaxJobFiles={"item": files}
                )
            return zeep_client.service.GetFaxBroadcastReport(
                JobId="J1", RecipientType=1, RecipAddress="a@example.com"
            )
        finally:
            zeep_client.transport.close()
    client = make_face(face).client(url, user_id=USER, retries=0, **auth)
    if op == "send":
        return client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)])
    if op == "status":
        return client.get_fax_status(["J1"])
    return client.get_fax_broadcast_report("J1")


@pytest.mark.parametrize("auth", ["pin", "token"])
@pytest.mark.parametrize(("case", "face"), MARKUP_CASES, ids=[f"{f}: {c}" for c, f in MARKUP_CASES])
def test_a_secret_in_an_answers_markup_is_masked_in_errors_and_logs(
    caplog: pytest.LogCaptureFixture,
    capture_server: type[CaptureServer],
    make_face: Callable[[str], Face],
    case: str,
    face: str,
    auth: str,
) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: faxws, requests, urllib3, zeep
    markup = MARKUP[case]
    secret = PIN if auth == "pin" else TOKEN
    server = capture_server(lambda raw: http_reply(markup.body(secret).encode()))
    shown: list[str] = []
    error: FaxWSError | None = None
    try:
        shown.append(repr(_call(make_face, face, server.url, markup.operation, **{auth: secret})))
    except FaxWSError as exc:
        error = exc
        attributes = ("message", "body_excerpt", "fault_string", "error_string")
        shown += [str(exc), repr(exc), *(str(getattr(exc, a, "")) for a in attributes)]
        shown += traceback.format_exception(exc)
    assert type(error) is (markup.error or type(None)), error
    shown += [r.getMessage() for r in caplog.records] + [str(r.args) for r in caplog.records]
    text = "\n".join(shown)
    assert markup.says("***") in text
    assert not [secret[i : i + 6] for i in range(len(secret) - 5) if secret[i : i + 6] in text]


def test_whatever_leaves_a_call_passes_through_its_mask(caplog: pytest.LogCaptureFixture) -> None:
    """The boundary of a call masks every error text and every record of the faxws logger,
    whatever message a future change writes; records outside a call are left alone."""
    from faxws._http.shared import call_boundary
    from faxws._log import logger

    caplog.set_level(logging.DEBUG)

    def call() -> None:
        with call_boundary("rid-1", lambda text: text.replace(PIN, "***")):
            logger.debug("a new record quoting %s", PIN)
            raise ProtocolError(f"a new message quoting {PIN}", body_excerpt=f"<{PIN}/>")

    with pytest.raises(ProtocolError) as info:
        call()
    logger.debug("outside a call: %s", "as written")
    assert info.value.request_id == "rid-1"
    assert str(info.value) == "a new message quoting *** (request id rid-1)"
    assert info.value.args == ("a new message quoting ***",)
    assert info.value.body_excerpt == "<***/>"
    records = [(r.getMessage(), r.args) for r in caplog.records]
    assert records == [
        ("a new record quoting ***", ()),
        ("outside a call: as written", ("as written",)),
    ]


# -- base64 spellings --------------------------------------------------------------------------


@pytest.mark.parametrize("urlsafe", [False, True], ids=["standard", "url-safe"])
@pytest.mark.parametrize("before", ["", "u", "u:", "mbx1:", "user:", "a-user:"])
@pytest.mark.parametrize("secret", [PIN, ODD_PIN, "seven!!"])
def test_base64_of_a_secret_inside_any_text_loses_every_character_only_the_secret_spells(
    secret: str, before: str, urlsafe: bool
) -> None:
    """Whatever precedes and follows the secret (so at each of the three offsets in a 3-byte
    group), the base64 characters made of the secret's bits alone are masked, as one run;
    the characters around it, which hold bits of their neighbours too, stay."""
    from faxws._protocol.redact import redact as mask

    start, end = len(before.encode()), len(before.encode()) + len(secret.encode())
    encoded = b64(f"{before}{secret}:and more", urlsafe=urlsafe)
    first, last = -(-start * 8 // 6), end * 8 // 6  # characters of the secret's bits only
    assert mask(f"auth {encoded} end", [secret]) == f"auth {encoded[:first]}***{encoded[last:]} end"


@pytest.mark.parametrize(
    ("secret", "masked_at"),
    [("123456", [0]), ("12345", []), ("1234", [])],
)
def test_short_secrets_are_masked_in_base64_only_where_their_run_has_8_characters(
    secret: str, masked_at: list[int]
) -> None:
    """A run shorter than 8 characters would mask chance matches: a 6-byte secret is masked
    only where it starts a 3-byte group, a shorter one never (7 bytes or more: everywhere)."""
    from faxws._protocol.redact import redact as mask

    for offset in range(3):
        encoded = b64("x" * offset + secret)
        assert (mask(encoded, [secret]) != encoded) == (offset in masked_at), offset


@pytest.mark.parametrize("auth", ["pin", "token"])
@pytest.mark.parametrize("face", ["sync", "async", "zeep"])
def test_base64_spellings_echoed_in_a_fault_are_masked_in_every_face(
    capture_server: type[CaptureServer], make_face: Callable[[str], Face], face: str, auth: str
) -> None:
    secret = PIN if auth == "pin" else TOKEN
    echoed = f"basic {b64(f'{USER}:{secret}')}, bearer {b64(secret, urlsafe=True)}"
    server = capture_server(
        lambda raw: http_reply(fault_response("c", echoed), "500 Internal Server Error")
    )
    with pytest.raises(FaxWSError) as info:
        _call(make_face, face, server.url, "report", **{auth: secret})
    shown = f"{info.value} {info.value.fault_string}"  # type: ignore[attr-defined]
    assert shown.count("***") == 4
    for spelling in (b64(f"{USER}:{secret}"), b64(secret, urlsafe=True)):
        assert spelling[-12:-4] not in shown


# -- the token provider's own secrets, echoed by the service ----------------------------------


@pytest.mark.parametrize("face", ["sync", "async", "zeep"])
def test_the_client_secret_echoed_by_the_service_is_masked_in_every_face(
    caplog: pytest.LogCaptureFixture,
    capture_server: type[CaptureServer],
    make_face: Callable[[str], Face],
    face: str,
) -> None:
    """A client given one of faxws's token providers masks what the provider authenticates
    with too: its client secret, and ``id:secret`` as HTTP Basic carries it (whole, the
    client id's part included), in errors and in the DEBUG log of the activity id."""
    caplog.set_level(logging.DEBUG)
    echoes = iter(
        [
            fault_response("c", f"secret {SECRET}, basic {b64(f'cid:{SECRET}')}"),
            report_response(),
        ]
    )

    def answer(raw: bytes) -> bytes:
        if raw.startswith(b"POST /token"):
            return http_reply(b'{"access_token": "at-1", "token_type": "Bearer"}')
        return http_reply(next(echoes), "200 OK", extra=f"x-ch-activity-id: {SECRET}\r\n")

    server = capture_server(answer)
    provider = make_face("async" if face == "async" else "sync").provider(
        f"{server.url}/token", "cid", SECRET
    )
    with pytest.raises(FaxWSError) as info:
        _call(make_face, face, server.url, "report", token=provider)
    fault = info.value.fault_string  # type: ignore[attr-defined]
    assert fault.startswith("secret ***, basic ***")
    assert b64("cid:")[:4] not in fault  # the Basic form is masked from its start
    _call(make_face, face, server.url, "report", token=provider)  # the activity id is logged
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "(activity id ***)" in logged
    assert SECRET not in f"{info.value}\n{logged}"
