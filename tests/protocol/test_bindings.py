"""The generated bindings: up to date with the WSDL, and the same model zeep builds from it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from conftest import GOLDEN
from faxws import _codegen, bindings

ROOT = Path(__file__).resolve().parents[2]


def test_committed_bindings_match_the_wsdl() -> None:
    generated = _codegen.generate(ROOT / "wsdl" / "FaxWS.wsdl")
    assert generated == (ROOT / "src" / "faxws" / "bindings.py").read_text(encoding="utf-8")


def generate_in_a_new_process(hash_seed: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "faxws._codegen", "--wsdl", str(ROOT / "wsdl" / "FaxWS.wsdl")],
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_generation_is_deterministic() -> None:
    """Each process hashes strings differently, so iterating a set or a hash-ordered mapping
    anywhere in the generator shows up as a difference between these runs; two runs in one
    process would agree."""
    first, *others = [generate_in_a_new_process(seed) for seed in ("0", "1", "2", "3")]
    assert "class SendFax:" in first
    for other in others:
        assert other == first


def test_operations_and_orders_come_from_the_wsdl() -> None:
    ops = bindings.OPERATIONS
    assert list(ops) == [
        "SendFax",
        "GetFaxBroadcastReport",
        "SendFaxEx",
        "SimpleGetFaxStatus",
        "GetFaxStatus",
        "GetRealTimeFaxStatusEx2",
        "CancelFax",
    ]
    assert ops["SendFax"].output is bindings.FaxSendResponse
    assert all(op.soap_action == "" for op in ops.values())
    names = [f.name for f in bindings.GetFaxBroadcastReport.__xml__.fields]
    assert names == ["UserID", "strPIN", "JobId", "RecipientType", "RecipAddress"]


@pytest.mark.parametrize(
    ("xml", "attr"),
    [
        ("RecipFaxNumber", "recip_fax_number"),
        ("strPIN", "str_pin"),
        ("UserID", "user_id"),
        ("TTFP", "ttfp"),
        ("return", "return_"),
        ("WSError", "ws_error"),
        ("RecipSecureCSID", "recip_secure_csid"),
    ],
)
def test_attribute_names(xml: str, attr: str) -> None:
    assert _codegen.attr_name(xml) == attr


def _shape(element: Any) -> tuple[str, str, list[Any]]:
    children = [c for c in element if isinstance(c.tag, str)]
    text = "" if children else (element.text or "")
    return (element.tag, text, [_shape(c) for c in children])


def _zeep_payload(operation: str, **values: Any) -> Any:
    import zeep

    client = zeep.Client(str(ROOT / "wsdl" / "FaxWS.wsdl"))
    env = client.create_message(client.service, operation, **values)
    return env.find("{http://schemas.xmlsoap.org/soap/envelope/}Body")[0]


def _our_payload(name: str) -> Any:
    root = etree.fromstring((GOLDEN / name).read_bytes())
    return root.find("{http://schemas.xmlsoap.org/soap/envelope/}Body")[0]


def test_send_fax_wire_form_has_the_same_infoset_as_zeeps_message() -> None:
    recipients = {
        "item": [
            {
                "RecipFaxNumber": "+1 555 0100",
                "RecipCompany": "ACME & Sons",
                "RecipTitle": "Dr",
                "RecipName": "Bob <B>",
                "RecipSecureCSID": "",
            },
            {
                "RecipFaxNumber": "+44 20 7946 0000",
                "RecipCompany": "",
                "RecipTitle": "",
                "RecipName": "",
                "RecipSecureCSID": "CSID-9",
            },
        ]
    }
    files = {
        "item": [
            {"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF-1.4\n%golden\n"},
            {"FileIndex": 2, "FileTypeId": 105, "FileData": b"hello fax\n"},
        ]
    }
    theirs = _zeep_payload(
        "SendFax",
        UserID="mbx1234567890",
        strPIN="s3cret-PIN",
        Recipients=recipients,
        FaxJobFiles=files,
    )
    assert _shape(_our_payload("send_fax_pin.xml")) == _shape(theirs)


def test_report_wire_form_has_the_same_infoset_as_zeeps_message() -> None:
    theirs = _zeep_payload(
        "GetFaxBroadcastReport",
        UserID="mbx1234567890",
        strPIN="",
        JobId="JOB-42",
        RecipientType=1,
        RecipAddress="ops@example.com",
    )
    assert _shape(_our_payload("report_oauth.xml")) == _shape(theirs)


def test_every_schema_element_and_type_is_documented() -> None:
    xs = "{http://www.w3.org/2001/XMLSchema}"
    root = etree.parse(str(ROOT / "wsdl" / "FaxWS.xsd")).getroot()
    nodes = list(root.iter(f"{xs}element", f"{xs}complexType"))
    assert len(nodes) > 20
    for node in nodes:
        if node.tag == f"{xs}complexType" and node.get("name") is None:
            continue  # an element's anonymous type: the element carries the line
        doc = node.find(f"{xs}annotation/{xs}documentation")
        assert doc is not None, node.get("name")
        assert doc.text, node.get("name")
        assert doc.text.strip(), node.get("name")


def test_the_namespace_and_soap_action_come_from_the_generated_bindings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A WSDL with another namespace and soapAction: the core writes and reads what its
    bindings say, not constants."""
    import importlib

    from faxws._protocol import reader as _reader
    from faxws._protocol import soap as _soap
    from faxws._protocol import writer as _wire

    for name in ("FaxWS.wsdl", "FaxWS.xsd"):
        text = (ROOT / "wsdl" / name).read_text(encoding="utf-8").replace("urn:FaxWS", "urn:Other")
        if name == "FaxWS.wsdl":
            text = text.replace('soapAction=""', 'soapAction="urn:Other#Report"', 1)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "other_bindings.py").write_text(
        _codegen.generate(tmp_path / "FaxWS.wsdl"), encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    other = importlib.import_module("other_bindings")
    request = other.GetFaxBroadcastReport(
        user_id="u", str_pin="1", job_id="J", recipient_type=0, recip_address=""
    )
    body = b"".join(_wire.envelope(request))
    assert b'<GetFaxBroadcastReport xmlns="urn:Other">' in body
    actions = {op.soap_action for op in other.OPERATIONS.values()}
    assert "urn:Other#Report" in actions
    assert _soap.request_headers("r", None, "urn:Other#Report")["SOAPAction"] == (
        '"urn:Other#Report"'
    )
    answer = (
        b'<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>'
        b'<GetFaxBroadcastReportResponse xmlns="urn:Other"><return>true</return>'
        b"<WSError><ErrorCode>0</ErrorCode><ErrorString/></WSError>"
        b"</GetFaxBroadcastReportResponse></s:Body></s:Envelope>"
    )
    operation = other.OPERATIONS["GetFaxBroadcastReport"]
    result = _reader.interpret(operation, 200, answer, "r", lambda t: t)
    assert result.return_ is True
