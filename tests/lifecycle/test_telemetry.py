"""OpenTelemetry: with the ``otel`` extra each operation call is one CLIENT span named by the
operation (its retries inside it), carrying the server's address, the request and activity
ids and, on failure, the error's type, WSError code and whether the request may have been
delivered; never a fax number, a name, the PIN, a token, a password or a document. Without
opentelemetry the calls work the same and nothing of it is imported.

The SDK's TracerProvider is set as the global provider once for the session (faxws's tracer
is a proxy that follows it), recording only while a test here runs; each test reads the
spans an in-memory exporter kept."""

from __future__ import annotations

import base64
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lifecycle_support import PDF
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Sampler, SamplingResult
from opentelemetry.trace import SpanKind, StatusCode

from conftest import Face
from faxws import (
    BadInputError,
    FaxFile,
    FaxWSError,
    FileType,
    JobOptions,
    Notify,
    Recipient,
    ServiceError,
    TransportError,
)
from faxws._protocol import assumptions as vendor
from faxws.testing import Account, Fault, FaxWSSimulator, ManualClock

PIN = "PINMARK-4t8q"
TOKEN = "TOKMARK-9w2e"
USER = "mbx-telemetry"
ACCOUNT = Account(USER, pin=PIN, tokens=(TOKEN,))
NUMBER = "+1 555 0142"
NAME = "NAMEMARK Ann"
PASSWORD = "PWMARK-hook"
DOCUMENT = PDF + b"% DOCMARK-77\n"
DELIVERED_AFTER = 2 + 5 + 10


class Switch(Sampler):
    """Records spans only while a test here runs: the provider stays for the session (a
    global provider cannot be replaced), and the other tests' calls stay as cheap as ever."""

    on = False

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return (ALWAYS_ON if self.on else ALWAYS_OFF).should_sample(*args, **kwargs)

    def get_description(self) -> str:
        return "Switch"


SWITCH = Switch()


@pytest.fixture(scope="session")
def exporter() -> InMemorySpanExporter:
    """The session's exporter, on the global SDK provider (set here unless one already is)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider(sampler=SWITCH)
        trace.set_tracer_provider(provider)
    found = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(found))
    return found


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    SWITCH.on = True
    try:
        yield exporter
    finally:
        SWITCH.on = False
        exporter.clear()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock) -> Iterator[FaxWSSimulator]:
    with FaxWSSimulator([ACCOUNT], clock=clock, time_scale=1.0) as started:
        yield started


def client_of(sim: FaxWSSimulator, face: Face, **kwargs: Any) -> Any:
    kwargs.setdefault("pin", PIN)
    return face.client(sim.url, user_id=USER, retry_backoff=0, **kwargs)


def finished(spans: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(spans.get_finished_spans())


def faxws_spans(spans: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in finished(spans) if s.instrumentation_scope.name == "faxws"]


def document() -> FaxFile:
    return FaxFile(DOCUMENT, FileType.PDF)


def test_each_call_is_one_client_span_named_by_its_operation(
    sim: FaxWSSimulator, face: Face, clock: ManualClock, spans: InMemorySpanExporter
) -> None:
    client = client_of(sim, face)
    sent = client.send_fax([NUMBER], [document()], options=JobOptions())
    plain = client.send_fax([NUMBER], [document()])
    ids = [*sent.job_ids, *plain.job_ids]
    client.get_fax_status(ids)
    client.get_real_time_fax_status(ids)
    client.get_status_by_reference(sent.reference_id)
    cancelled = client.cancel_fax(plain.job_ids[0])
    clock.advance(DELIVERED_AFTER)
    client.wait_for_delivery(ids, timeout=5)
    made = faxws_spans(spans)
    assert [s.name for s in made] == [
        "SendFaxEx",
        "SendFax",
        "GetFaxStatus",
        "GetRealTimeFaxStatusEx2",
        "SimpleGetFaxStatus",
        "CancelFax",
        "GetRealTimeFaxStatusEx2",
    ]
    sent_ids = [r.header("x-ch-request-id") for r in sim.requests]
    assert [s.attributes["faxws.request_id"] for s in made] == sent_ids
    for span in made:
        attributes = span.attributes or {}
        assert span.kind is SpanKind.CLIENT
        assert span.status.status_code is StatusCode.UNSET
        assert attributes["rpc.system"] == "soap"
        assert attributes["rpc.method"] == span.name
        assert (attributes["server.address"], attributes["server.port"]) == (
            "127.0.0.1",
            sim.port,
        )
        assert attributes["faxws.activity_id"]
        assert "error.type" not in attributes
        assert "faxws.maybe_delivered" not in attributes
    first, second, *_, cancel, _ = made
    assert (first.attributes or {})["faxws.activity_id"] == sent.activity_id
    assert (second.attributes or {})["faxws.activity_id"] == plain.activity_id
    assert (cancel.attributes or {})["faxws.activity_id"] == cancelled.activity_id


def test_each_batch_is_a_span_of_its_own(
    sim: FaxWSSimulator, face: Face, spans: InMemorySpanExporter
) -> None:
    client = client_of(sim, face)
    ids = list(client.send_fax([NUMBER] * 5, [document()]).job_ids)
    spans.clear()
    client.get_fax_status(ids, batch_size=2)
    made = faxws_spans(spans)
    assert [s.name for s in made] == ["GetFaxStatus"] * 3
    asked = [r.header("x-ch-request-id") for r in sim.requests_for("GetFaxStatus")]
    assert [s.attributes["faxws.request_id"] for s in made] == asked
    assert len(set(asked)) == 3


def test_retries_are_inside_the_one_span_of_the_call(
    sim: FaxWSSimulator, face: Face, spans: InMemorySpanExporter
) -> None:
    client = client_of(sim, face, retries=2)
    sim.inject(Fault.http_status(503), operation="GetFaxStatus", times=2)
    client.get_fax_status(["SIM00000001"], request_id="retried")
    (span,) = faxws_spans(spans)
    assert span.name == "GetFaxStatus"
    assert span.attributes["faxws.request_id"] == "retried"
    assert span.status.status_code is StatusCode.UNSET
    assert [r.status for r in sim.requests_for("GetFaxStatus")] == [503, 503, 200]


def test_a_service_error_marks_its_span_with_the_code(
    sim: FaxWSSimulator, face: Face, clock: ManualClock, spans: InMemorySpanExporter
) -> None:
    client = client_of(sim, face)
    (job,) = client.send_fax([NUMBER], [document()]).job_ids
    clock.advance(DELIVERED_AFTER)
    spans.clear()
    with pytest.raises(ServiceError) as caught:
        client.cancel_fax(job, request_id="too-late")
    (span,) = faxws_spans(spans)
    attributes = span.attributes or {}
    assert span.name == "CancelFax"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "ServiceError"
    assert attributes["error.type"] == "ServiceError"
    assert attributes["faxws.ws_error_code"] == caught.value.code == vendor.JOB_ENDED
    assert attributes["faxws.maybe_delivered"] is False
    assert attributes["faxws.request_id"] == "too-late"
    assert attributes["faxws.activity_id"]  # the service answered


def test_a_lost_answer_marks_its_span_maybe_delivered(
    sim: FaxWSSimulator, face: Face, spans: InMemorySpanExporter
) -> None:
    client = client_of(sim, face)
    sim.inject(Fault.reset_mid_response(), operation="SendFaxEx")
    with pytest.raises(TransportError) as caught:
        client.send_fax([NUMBER], [document()], "lost-1", options=JobOptions())
    (span,) = faxws_spans(spans)
    attributes = span.attributes or {}
    assert span.name == "SendFaxEx"
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == type(caught.value).__name__
    assert attributes["faxws.maybe_delivered"] is True
    assert attributes["faxws.request_id"] == "lost-1"
    assert "faxws.ws_error_code" not in attributes
    assert "faxws.activity_id" not in attributes  # no answer


def test_a_bad_argument_makes_no_span(face: Face, spans: InMemorySpanExporter) -> None:
    client = face.client("https://fax.example.com", user_id=USER, pin=PIN)
    with pytest.raises(BadInputError):
        client.get_fax_status([])
    with pytest.raises(BadInputError):
        client.cancel_fax("")
    assert faxws_spans(spans) == []


def test_a_call_inside_the_callers_span_is_its_child(
    sim: FaxWSSimulator, face: Face, spans: InMemorySpanExporter
) -> None:
    client = client_of(sim, face)
    with trace.get_tracer("the-application").start_as_current_span("checkout") as parent:
        client.get_status_by_reference("any")
    (span,) = faxws_spans(spans)
    assert span.parent is not None
    assert span.parent.span_id == parent.get_span_context().span_id
    assert span.context.trace_id == parent.get_span_context().trace_id


def test_no_span_shows_a_number_a_name_a_secret_or_a_document(
    sim: FaxWSSimulator, face: Face, spans: InMemorySpanExporter
) -> None:
    options = JobOptions(
        reference_id="ref-telemetry",
        sender_name=NAME,
        notify=Notify("https://hooks.example.test/", user="hook", password=PASSWORD),
    )
    recipients = [Recipient(NUMBER, name=NAME, company="ACME")]
    for client in (client_of(sim, face), client_of(sim, face, pin=None, token=TOKEN)):
        sent = client.send_fax(recipients, [document()], options=options)
        client.get_fax_status(list(sent.job_ids))
        client.get_real_time_fax_status(list(sent.job_ids))
        echo = f"refused {NUMBER} {NAME} {PIN} {TOKEN} {PASSWORD}"
        for operation in ("SendFaxEx", "GetFaxStatus", "CancelFax"):
            sim.inject(Fault.soap_fault("soap:Server", echo), operation=operation)
        sim.inject(Fault.ws_error(-5001, echo), operation="GetRealTimeFaxStatusEx2")
        calls = (
            lambda c=client: c.send_fax(recipients, [document()], options=options),
            lambda c=client, s=sent: c.get_fax_status(list(s.job_ids)),
            lambda c=client, s=sent: c.cancel_fax(s.job_ids[0]),
            lambda c=client, s=sent: c.get_real_time_fax_status(list(s.job_ids)),
        )
        for call in calls:
            with pytest.raises(FaxWSError):
                call()
    made = faxws_spans(spans)
    assert len(made) == 2 * 7
    shown = []
    for span in made:
        shown += [span.name, str(span.status.description)]
        shown += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
        for event in span.events:
            shown += [event.name, *(f"{k}={v}" for k, v in (event.attributes or {}).items())]
        for link in span.links:
            shown += [f"{k}={v}" for k, v in (link.attributes or {}).items()]
    text = "\n".join(shown)
    assert "faxws.ws_error_code=-5001" in text  # the failures were recorded
    markers = [
        "555 0142",
        "5550142",
        "NAMEMARK",
        PIN,
        TOKEN,
        PASSWORD,
        "DOCMARK",
        base64.b64encode(DOCUMENT).decode()[:24],
    ]
    assert [m for m in markers if m in text] == []


def test_without_opentelemetry_the_calls_work_and_nothing_of_it_is_imported(
    tmp_path: Path,
) -> None:
    script = textwrap.dedent(
        """
        import asyncio
        import sys

        sys.modules["opentelemetry"] = None  # as if the otel extra were not installed

        from faxws import AsyncFaxClient, FaxClient, FaxFile, JobOptions, ServiceError
        from faxws import _telemetry
        from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

        with FaxWSSimulator() as sim:
            with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as client:
                sent = client.send_fax(
                    ["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)], options=JobOptions()
                )
                (status,) = client.get_fax_status(list(sent.job_ids))
                client.cancel_fax(sent.job_ids[0])
                try:
                    client.cancel_fax(sent.job_ids[0])
                except ServiceError as exc:
                    assert exc.code == -9001, exc
                else:
                    raise AssertionError("a second cancel was accepted")

            async def main():
                async with AsyncFaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as a:
                    (real,) = await a.get_real_time_fax_status(list(sent.job_ids))
                    found = await a.get_status_by_reference(sent.reference_id)
                    return real, found

            real, found = asyncio.run(main())
        assert real.description == "Cancelled", real
        assert found.found, found
        assert _telemetry._tracer is None
        loaded = [m for m, v in sys.modules.items() if m.startswith("opentelemetry") and v]
        assert loaded == [], loaded
        print("ok", status.status_id)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "3"]
