"""Calls to the simulator in the bindings' own terms, for the tests of a fax's life: each
request is written by faxws's envelope writer and each answer checked against the schema and
read back into its binding."""

from __future__ import annotations

from dataclasses import fields as fields_of
from datetime import datetime, timezone
from typing import Any

import requests

from faxws._protocol import assumptions as vendor
from faxws._protocol.reader import parse_document, read_payload, soap_payload
from faxws._protocol.writer import envelope
from faxws.bindings import (
    OPERATIONS,
    CancelFax,
    FaxJob,
    FaxJobFile,
    FaxJobFiles,
    FaxJobId,
    FaxJobIds,
    FaxJobRecipient,
    FaxJobRecipients,
    GetFaxStatus,
    GetRealTimeFaxStatusEx2,
    RealTimeFaxStatusEx2,
    SendFax,
    SendFaxEx,
    SimpleGetFaxStatus,
    WSError,
)
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator, ManualClock
from faxws.validation import validate

#: The manual clock's start in these tests: 2030-01-02T03:04:05Z.
START = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp()
HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}
OK = WSError(0, "")
INVALID = WSError(-5019, "Invalid Job ID")
ENDED = WSError(vendor.JOB_ENDED, vendor.JOB_ENDED_TEXT)
PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"


def pdf(pages: int) -> bytes:
    objects = "".join(f"{n} 0 obj << /Type /Page /Parent 1 0 R >> endobj\n" for n in range(pages))
    return f"%PDF-1.4\n1 0 obj << /Type /Pages /Count {pages} >> endobj\n{objects}%%EOF\n".encode()


def vendor_time(seconds_after_start: float) -> str:
    """The vendor's form of the moment ``seconds_after_start`` after :data:`START`."""
    moment = datetime.fromtimestamp(START + seconds_after_start, timezone.utc)
    return vendor.format_datetime(moment)


def move_to(clock: ManualClock, seconds: float) -> None:
    """Set ``clock`` to exactly ``seconds`` after :data:`START`."""
    clock.advance(START + seconds - clock.now())


def call(sim: FaxWSSimulator, request: Any, headers: dict[str, str] | None = None) -> Any:
    """POST ``request``; the answer, as its binding."""
    answer = requests.post(
        f"{sim.url}/fax/v5",
        data=b"".join(envelope(request)),
        headers={**HEADERS, **(headers or {})},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert validate(answer.content) == []
    output = OPERATIONS[type(request).__name__].output
    return read_payload(soap_payload(parse_document(answer.content)), output)


def details(**fields: Any) -> FaxJob:
    """A FaxJob with every field empty (or 0) but those given."""
    values: dict[str, Any] = {
        f.name: 0 if f.type == "int" else "" for f in fields_of(FaxJob) if f.name[:5] != "user_"
    }
    return FaxJob(**{**values, **fields})


def _recipients(numbers: tuple[str, ...]) -> FaxJobRecipients:
    return FaxJobRecipients(tuple(FaxJobRecipient(n, "", "", "", "") for n in numbers))


def _files(documents: tuple[bytes, ...]) -> FaxJobFiles:
    return FaxJobFiles(tuple(FaxJobFile(i, 101, d) for i, d in enumerate(documents, 1)))


def send(sim: FaxWSSimulator, *numbers: str, documents: tuple[bytes, ...] = (PDF,)) -> Any:
    request = SendFax(DEMO_USER_ID, DEMO_PIN, _recipients(numbers), _files(documents))
    return call(sim, request)


def send_ex(
    sim: FaxWSSimulator,
    *numbers: str,
    documents: tuple[bytes, ...] = (PDF,),
    user: tuple[str, str] = (DEMO_USER_ID, DEMO_PIN),
    **fields: Any,
) -> Any:
    request = SendFaxEx(*user, _recipients(numbers), _files(documents), details(**fields))
    return call(sim, request)


def job_ids(answer: Any) -> list[str]:
    return [item.job_id for item in answer.fax_job_ids.item]


def simple_status(sim: FaxWSSimulator, job_id: str, user: tuple[str, str] | None = None) -> int:
    answer = call(sim, SimpleGetFaxStatus(*(user or (DEMO_USER_ID, DEMO_PIN)), job_id))
    return int(answer.return_)


def statuses(sim: FaxWSSimulator, *ids: str) -> Any:
    wanted = FaxJobIds(tuple(FaxJobId(i) for i in ids))
    return call(sim, GetFaxStatus(DEMO_USER_ID, DEMO_PIN, wanted))


def real_time(sim: FaxWSSimulator, *ids: str) -> list[RealTimeFaxStatusEx2]:
    wanted = FaxJobIds(tuple(FaxJobId(i) for i in ids))
    answer = call(sim, GetRealTimeFaxStatusEx2(DEMO_USER_ID, DEMO_PIN, wanted))
    assert (answer.return_, answer.ws_error) == (True, OK)
    return list(answer.fax_status_list.item)


def cancel(sim: FaxWSSimulator, job_id: str) -> Any:
    return call(sim, CancelFax(DEMO_USER_ID, DEMO_PIN, job_id))
