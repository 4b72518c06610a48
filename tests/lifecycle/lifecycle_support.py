"""What the tests of a fax's life after submission share: a one-page document, the two schemas
every request must satisfy, a service played by a function (behind MockTransport) that
answers each operation from a table of statuses, and a stand-in for the client's clock so
that waiting for delivery takes no real time."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lxml import etree

from conftest import Face
from faxws import ClientOptions, FaxFile, FaxWSError, FileType
from faxws._protocol import assumptions as vendor
from faxws._protocol.writer import envelope
from faxws.bindings import (
    CancelFaxResponse,
    FaxJobId,
    FaxJobIds,
    FaxSendExResponse,
    FaxSendResponse,
    FaxStatus,
    FaxStatusList,
    FaxStatusResponse,
    RealTimeFaxStatusEx2,
    RealTimeFaxStatusEx2List,
    RealTimeFaxStatusEx2Response,
    SimpleFaxStatusResponse,
    WSError,
)
from faxws.testing import ManualClock
from faxws.transport import MockTransport, Request, Response
from faxws.validation import ValidationIssues, Validator, validate

#: One page, as the simulator counts pages.
PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
USER, PIN = "mbx1234567890", "pin-7391"
VENDOR_WSDL = Path(__file__).parents[1] / "fixtures" / "vendor" / "FaxWS.wsdl"
NS = "{urn:FaxWS}"
OK = WSError(0, "")
#: Description of each documented status id, as the fake service gives it.
DESCRIPTIONS = {1: "Delivered", 2: "Failed", 3: "In progress"}


def document() -> FaxFile:
    return FaxFile(PDF, FileType.PDF)


@functools.cache
def vendor_validator() -> Validator:
    """The schema in the vendor's own WSDL (its first xs:schema)."""
    root = etree.parse(str(VENDOR_WSDL)).getroot()
    schema = root.find(
        "{http://schemas.xmlsoap.org/wsdl/}types/{http://www.w3.org/2001/XMLSchema}schema"
    )
    assert schema is not None
    return Validator(etree.tostring(schema), base_url=VENDOR_WSDL.resolve().as_uri())


def schema_issues(body: bytes) -> dict[str, ValidationIssues]:
    """What the vendor's schema and faxws's own find wrong with a request body (both empty
    for a valid one)."""
    return {"vendor": vendor_validator().validate(body), "faxws": validate(body)}


def payload(body: bytes) -> etree._Element:
    """The element inside the SOAP Body."""
    root = etree.fromstring(body)
    found = root.find("{http://schemas.xmlsoap.org/soap/envelope/}Body")
    assert found is not None
    assert len(found) == 1
    return found[0]


def operation_of(body: bytes) -> str:
    return etree.QName(payload(body)).localname


def asked_ids(body: bytes) -> list[str]:
    """The JobId of each item a status request asks about, in order."""
    return [e.text or "" for e in payload(body).iter(f"{NS}JobId")]


def field(body: bytes, name: str) -> str | None:
    """The text of the first element ``name`` (in urn:FaxWS) of a request, or None."""
    found = payload(body).find(f".//{NS}{name}")
    return None if found is None else found.text or ""


def answer(obj: object, status: int = 200, **headers: str) -> Response:
    """A response carrying ``obj`` (a response binding) written by faxws's own writer."""
    return Response(status, {"x-ch-activity-id": "act-1", **headers}, b"".join(envelope(obj)))


class Service:
    """The FaxWS service played by a function: give :attr:`transport` to a client.

    ``status_of`` gives a job id's status id (None: an unknown id, answered -5019 item by
    item); ``reverse`` answers real-time statuses in the reverse order of the ids asked; a
    send answers a job id per recipient (``J1``, ``J2``, ...) and ``ttfp``. Each request is
    kept in :attr:`requests`; :attr:`script` holds what to answer (a Response) or raise (a
    FaxWSError) to the next requests, before the service itself answers.
    """

    def __init__(
        self,
        status_of: Callable[[str], int | None] | dict[str, int] | None = None,
        *,
        ttfp: int = 0,
        reference_status: int = vendor.JOB_NOT_FOUND,
        reverse: bool = False,
    ) -> None:
        table = {} if status_of is None else status_of
        self.status_of: Callable[[str], int | None] = (
            table.get if isinstance(table, dict) else table
        )
        self.ttfp = ttfp
        self.reference_status = reference_status
        self.reverse = reverse
        self.script: list[Response | FaxWSError] = []
        self.requests: list[Request] = []
        self.transport = MockTransport(self)
        self._sent = 0

    def __call__(self, request: Request) -> Response:
        assert isinstance(request.body, bytes)
        self.requests.append(request)
        if self.script:
            next_one = self.script.pop(0)
            if isinstance(next_one, FaxWSError):
                raise next_one
            return next_one
        return self.answer(request.body)

    def bodies(self) -> list[bytes]:
        return [bytes(r.body) for r in self.requests]  # type: ignore[arg-type]

    def operations(self) -> list[str]:
        return [operation_of(body) for body in self.bodies()]

    def answer(self, body: bytes) -> Response:
        name = operation_of(body)
        if name in ("SendFax", "SendFaxEx"):
            count = len(payload(body).findall(f"{NS}Recipients/{NS}item"))
            ids = FaxJobIds(tuple(FaxJobId(f"J{self._sent + i + 1}") for i in range(count)))
            self._sent += count
            cls = FaxSendResponse if name == "SendFax" else FaxSendExResponse
            return answer(cls(True, ids, self.ttfp, OK))
        if name == "GetFaxStatus":
            items = tuple(self._status(j) for j in asked_ids(body))
            return answer(FaxStatusResponse(True, FaxStatusList(items), OK))
        if name == "GetRealTimeFaxStatusEx2":
            rows = tuple(self._real_time(j) for j in asked_ids(body))
            rows = rows[::-1] if self.reverse else rows
            return answer(RealTimeFaxStatusEx2Response(True, RealTimeFaxStatusEx2List(rows), OK))
        if name == "SimpleGetFaxStatus":
            return answer(SimpleFaxStatusResponse(self.reference_status))
        if name == "CancelFax":
            return answer(CancelFaxResponse(True, OK))
        raise AssertionError(f"not served here: {name}")

    def _status(self, job_id: str) -> FaxStatus:
        status = self.status_of(job_id)
        if status is None:
            unknown = WSError(vendor.JOB_NOT_FOUND, vendor.JOB_NOT_FOUND_TEXT)
            return FaxStatus(job_id, vendor.UNKNOWN_JOB_STATUS, "", unknown)
        return FaxStatus(job_id, status, DESCRIPTIONS.get(status, "?"), OK)

    def _real_time(self, job_id: str) -> RealTimeFaxStatusEx2:
        s = self._status(job_id)
        done = int(s.fax_job_status_id == 1)
        return RealTimeFaxStatusEx2(
            s.fax_job_id,
            s.fax_job_status_id,
            s.status_description,
            0,
            done,
            1,
            "",
            0,
            "",
            "",
            s.error,
        )


def mock_client(face: Face, service: Service, **settings: Any) -> Any:
    """A client of ``face`` (PIN mode) that ``service`` answers, retrying at once."""
    settings.setdefault("retry_backoff", 0)
    options = ClientOptions(transport=service.transport, **settings)
    return face.client("https://fax.example.com", user_id=USER, pin=PIN, options=options)


class FakeTime:
    """Stands in for the ``time`` and ``asyncio`` modules of faxws.client, so that
    ``wait_for_delivery`` sleeps on a clock the test owns: each sleep moves the clock at once
    (and the simulator's ManualClock with it, when one is given), and is recorded."""

    def __init__(self, simulator_clock: ManualClock | None = None) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self._simulator_clock = simulator_clock

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        # A waiting loop whose sleeps stopped moving the clock would never end.
        assert len(self.sleeps) < 1000, "too many sleeps: the wait does not move on"
        self.sleeps.append(seconds)
        self.now += seconds
        if self._simulator_clock is not None:
            self._simulator_clock.advance(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def install(self, monkeypatch: Any) -> FakeTime:
        import types

        import faxws.client

        monkeypatch.setattr(faxws.client, "time", self)
        monkeypatch.setattr(faxws.client, "asyncio", types.SimpleNamespace(sleep=self.async_sleep))
        return self
