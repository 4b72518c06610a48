"""Standard SOAP clients are served, and how their requests differ from the contract's form is
recorded; in strict mode each difference is a SOAP Client fault naming it. faxws's own
clients are in the contract's form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import zeep
import zeep.exceptions
from lxml import etree

from faxws import FaxClient, FaxFile, FileType
from faxws.pytest_plugin import SimulatorFactory
from faxws.testing import DEMO_PIN, DEMO_TOKEN, DEMO_USER_ID, Account, FaxWSSimulator
from faxws.zeep import make_client

VENDOR = Path(__file__).parents[1] / "fixtures" / "vendor" / "FaxWS.wsdl"
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
CONTRACT_HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}
DECLARATION = '<?xml version="1.0" encoding="utf-8"?>\n'
PAYLOAD = (
    f'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{DEMO_USER_ID}</UserID>'
    f"<strPIN>{DEMO_PIN}</strPIN><JobId>J1</JobId><RecipientType>0</RecipientType>"
    "<RecipAddress/></GetFaxBroadcastReport>"
)
CONTRACT_BODY = (
    f'{DECLARATION}<soap:Envelope xmlns:soap="{SOAP}"><soap:Header/><soap:Body>{PAYLOAD}'
    "</soap:Body></soap:Envelope>"
)


def variant(
    headers: dict[str, str | None] | None = None, body: Callable[[str], str] | None = None
) -> tuple[dict[str, str], bytes]:
    merged = {**CONTRACT_HEADERS, **(headers or {})}
    text = body(CONTRACT_BODY) if body else CONTRACT_BODY
    return {k: v for k, v in merged.items() if v is not None}, text.encode()


# (name, request, the one deviation it has)
DEVIATIONS = [
    (
        "SOAP 1.1 content type",
        variant({"Content-Type": "text/xml; charset=utf-8"}),
        "Content-Type is text/xml; charset=utf-8; the contract requires "
        "application/soap+xml; charset=utf-8",
    ),
    (
        "no charset",
        variant({"Content-Type": "application/soap+xml"}),
        "Content-Type is application/soap+xml; the contract requires "
        "application/soap+xml; charset=utf-8",
    ),
    (
        "SOAP 1.2 action parameter",
        variant({"Content-Type": 'application/soap+xml; charset=utf-8; action=""'}),
        'Content-Type is application/soap+xml; charset=utf-8; action=""; the contract requires '
        "application/soap+xml; charset=utf-8",
    ),
    (
        "quoted SOAPAction",
        variant({"SOAPAction": '""'}),
        'SOAPAction is ""; the contract requires an empty value',
    ),
    (
        "no SOAPAction",
        variant({"SOAPAction": None}),
        "SOAPAction is missing; the contract requires it, with an empty value",
    ),
    (
        "no XML declaration",
        variant(body=lambda b: b.replace(DECLARATION, "")),
        "the body does not start with an XML declaration in UTF-8; the contract requires one",
    ),
    (
        "declared Latin-1",
        variant(body=lambda b: b.replace("utf-8", "ISO-8859-1")),
        "the XML declaration's encoding is ISO-8859-1; the contract requires UTF-8",
    ),
    (
        "another envelope prefix",
        variant(
            body=lambda b: b.replace("soap:", "soap-env:").replace("xmlns:soap=", "xmlns:soap-env=")
        ),
        "the envelope's elements have the prefix soap-env; the contract uses soap",
    ),
    (
        "no soap:Header",
        variant(body=lambda b: b.replace("<soap:Header/>", "")),
        "the envelope has no soap:Header; the contract requires an empty one",
    ),
    (
        "a soap:Header with content",
        variant(body=lambda b: b.replace("<soap:Header/>", "<soap:Header><x/></soap:Header>")),
        "the soap:Header is not empty; the contract requires an empty one",
    ),
    (
        "prefixed payload",
        variant(
            body=lambda b: b.replace(
                PAYLOAD,
                PAYLOAD.replace("<", "<ns0:")
                .replace("<ns0:/", "</ns0:")
                .replace(
                    'ns0:GetFaxBroadcastReport xmlns="urn:FaxWS"',
                    'ns0:GetFaxBroadcastReport xmlns:ns0="urn:FaxWS"',
                ),
            )
        ),
        "GetFaxBroadcastReport has the prefix ns0; the contract puts urn:FaxWS in the default "
        "namespace",
    ),
]
DEVIATIONS += [
    (
        "another prefix on the Body",
        variant(
            body=lambda b: b.replace("<soap:Body>", f'<s:Body xmlns:s="{SOAP}">').replace(
                "</soap:Body>", "</s:Body>"
            )
        ),
        "the envelope's elements have the prefix s, soap; the contract uses soap",
    ),
    (
        "UTF-16",
        (
            dict(CONTRACT_HEADERS),
            CONTRACT_BODY.replace("utf-8", "utf-16").encode("utf-16"),
        ),
        "the body is in UTF-16; the contract requires UTF-8",
    ),
]
IDS = [d[0] for d in DEVIATIONS]


def post(sim: FaxWSSimulator, request: tuple[dict[str, str], bytes]) -> requests.Response:
    headers, body = request
    return requests.post(f"{sim.url}/fax/v5", data=body, headers=headers, timeout=30)


def fault_string(response: requests.Response) -> str:
    return str(etree.fromstring(response.content).findtext(".//faultstring"))


@pytest.fixture
def job_id(faxws_simulator: FaxWSSimulator) -> str:
    client = FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
    with client:
        return client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", FileType.PDF)]).job_ids[0]


@pytest.mark.parametrize(("request_", "deviation"), [d[1:] for d in DEVIATIONS], ids=IDS)
def test_by_default_a_deviation_is_served_and_recorded(
    faxws_simulator: FaxWSSimulator, request_: tuple[dict[str, str], bytes], deviation: str
) -> None:
    response = post(faxws_simulator, request_)
    assert response.status_code == 200, response.text
    assert b"GetFaxBroadcastReportResponse" in response.content
    assert faxws_simulator.requests[-1].deviations == (deviation,)


@pytest.mark.parametrize(("request_", "deviation"), [d[1:] for d in DEVIATIONS], ids=IDS)
def test_in_strict_mode_a_deviation_is_a_client_fault_naming_it(
    faxws_simulator_factory: SimulatorFactory,
    request_: tuple[dict[str, str], bytes],
    deviation: str,
) -> None:
    sim = faxws_simulator_factory(strict=True)
    response = post(sim, request_)
    assert response.status_code == 500
    assert b"soap:Client" in response.content
    assert fault_string(response) == f"the request differs from the contract's form: {deviation}"
    assert sim.requests[-1].deviations == (deviation,)


SAME_FORM = {
    "the contract's": variant(),
    "charset quoted": variant({"Content-Type": 'application/soap+xml; charset="utf-8"'}),
    "charset in capitals": variant({"Content-Type": "application/soap+xml; charset=UTF-8"}),
    "single-quoted declaration": variant(body=lambda b: b.replace('"1.0"', "'1.0'")),
}


@pytest.mark.parametrize("form", sorted(SAME_FORM))
@pytest.mark.parametrize("strict", [False, True])
def test_the_contracts_form_has_no_deviation(
    faxws_simulator_factory: SimulatorFactory, strict: bool, form: str
) -> None:
    sim = faxws_simulator_factory(strict=strict)
    response = post(sim, SAME_FORM[form])
    assert response.status_code == 200
    assert sim.requests[-1].deviations == ()


def test_every_deviation_is_named_at_once(faxws_simulator_factory: SimulatorFactory) -> None:
    sim = faxws_simulator_factory(strict=True)
    request = variant(
        {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '""'},
        lambda b: b.replace("<soap:Header/>", ""),
    )
    assert fault_string(post(sim, request)) == (
        "the request differs from the contract's form: Content-Type is text/xml; charset=utf-8; "
        'the contract requires application/soap+xml; charset=utf-8 | SOAPAction is ""; the '
        "contract requires an empty value | the envelope has no soap:Header; the contract "
        "requires an empty one"
    )


def test_another_media_type_is_still_refused(faxws_simulator: FaxWSSimulator) -> None:
    response = post(faxws_simulator, variant({"Content-Type": "application/json"}))
    assert response.status_code == 415


# -- real clients ---------------------------------------------------------------------------


def plain_zeep(sim: FaxWSSimulator) -> Any:
    """zeep's own client from the vendor's WSDL, as any team would build it."""
    session = requests.Session()
    session.trust_env = False
    client = zeep.Client(str(VENDOR), transport=zeep.Transport(session=session))
    return client.create_service(
        "{https://ws.concordfax.com/fax/v5/FaxWS.wsdl}FaxWS", f"{sim.url}/fax/v5"
    )


def zeep_send(service: Any) -> Any:
    recipient = dict.fromkeys(("RecipCompany", "RecipTitle", "RecipName", "RecipSecureCSID"), "")
    return service.SendFax(
        UserID=DEMO_USER_ID,
        strPIN=DEMO_PIN,
        Recipients={"item": [{"RecipFaxNumber": "+1 555 0100", **recipient}]},
        FaxJobFiles={"item": [{"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF-1.4"}]},
    )


ZEEP_DEVIATIONS = (
    "Content-Type is text/xml; charset=utf-8; the contract requires "
    "application/soap+xml; charset=utf-8",
    'SOAPAction is ""; the contract requires an empty value',
    "the envelope's elements have the prefix soap-env; the contract uses soap",
    "the envelope has no soap:Header; the contract requires an empty one",
    "SendFax has the prefix ns0; the contract puts urn:FaxWS in the default namespace",
)


def test_plain_zeep_from_the_vendor_wsdl_is_served(faxws_simulator: FaxWSSimulator) -> None:
    answer = zeep_send(plain_zeep(faxws_simulator))
    assert answer["return"] is True
    job = faxws_simulator.jobs[0]
    assert answer.FaxJobIds.item[0].JobId == job.job_ids[0]
    assert job.files[0].data == b"%PDF-1.4"
    assert job.deviations == ZEEP_DEVIATIONS
    assert faxws_simulator.requests[-1].deviations == ZEEP_DEVIATIONS


def test_plain_zeep_in_strict_mode_gets_a_fault_naming_each_deviation(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    sim = faxws_simulator_factory(strict=True)
    with pytest.raises(zeep.exceptions.Fault) as info:
        zeep_send(plain_zeep(sim))
    assert info.value.message == "the request differs from the contract's form: " + " | ".join(
        ZEEP_DEVIATIONS
    )
    assert sim.jobs == []


def test_an_operation_the_simulator_does_not_serve_is_a_fault_naming_it(
    faxws_simulator: FaxWSSimulator,
) -> None:
    with pytest.raises(zeep.exceptions.Fault) as info:
        plain_zeep(faxws_simulator).GetFaxCoverList(UserID=DEMO_USER_ID, strPIN=DEMO_PIN)
    assert info.value.message == "the operation GetFaxCoverList is not simulated"


@pytest.mark.parametrize("mode", ["pin", "token"])
@pytest.mark.parametrize("face", ["FaxClient", "zeep-packaged", "zeep-vendor"])
def test_faxws_clients_pass_strict_mode(
    faxws_simulator_factory: SimulatorFactory, face: str, mode: str
) -> None:
    sim = faxws_simulator_factory(strict=True)
    creds: dict[str, str] = {"pin": DEMO_PIN} if mode == "pin" else {"token": DEMO_TOKEN}
    if face == "FaxClient":
        with FaxClient(sim.url, user_id=DEMO_USER_ID, **creds) as client:  # type: ignore[arg-type]
            job = client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", FileType.PDF)]).job_ids[0]
            client.get_fax_broadcast_report(job)
    else:
        wsdl = VENDOR if face == "zeep-vendor" else None
        zclient = make_client(sim.url, user_id=DEMO_USER_ID, wsdl=wsdl, **creds)  # type: ignore[arg-type]
        recipient = dict.fromkeys(
            ("RecipCompany", "RecipTitle", "RecipName", "RecipSecureCSID"), ""
        )
        answer = zclient.service.SendFax(
            Recipients={"item": [{"RecipFaxNumber": "+1 555 0100", **recipient}]},
            FaxJobFiles={"item": [{"FileIndex": 1, "FileTypeId": 101, "FileData": b"%PDF"}]},
        )
        zclient.service.GetFaxBroadcastReport(
            JobId=answer.FaxJobIds.item[0].JobId, RecipientType=0, RecipAddress=""
        )
    assert [r.deviations for r in sim.requests] == [(), ()]
    assert sim.jobs[0].deviations == ()


def test_the_factory_starts_simulators_with_accounts_and_stops_them(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    sim = faxws_simulator_factory([Account("mbx1", pin="1234")], ttfp=7)
    with FaxClient(sim.url, user_id="mbx1", pin="1234") as client:
        assert client.send_fax(["+1 5"], [FaxFile(b"%PDF", FileType.PDF)]).ttfp == 7
    assert sim.strict is False


def test_the_session_simulator_is_shared(faxws_simulator_session: FaxWSSimulator) -> None:
    with FaxClient(faxws_simulator_session.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
        client.send_fax(["+1 5"], [FaxFile(b"%PDF", FileType.PDF)])
    assert faxws_simulator_session.jobs
