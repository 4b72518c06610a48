"""Secrets never leak: not in logs at any level, exception messages, reprs or CLI output."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import traceback
import unicodedata
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from conftest import CaptureServer, Face, fault_response, http_reply
from faxws import FaxFile, FaxWSError
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
    }


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
