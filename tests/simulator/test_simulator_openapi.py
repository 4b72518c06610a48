"""The REST API against its OpenAPI document (/api/openapi.json): every route served is
described and every route described is served, with the query parameters it takes; every
described call, made, answers a described status with a body its schema accepts; HEAD answers
as GET without the body; an unknown query parameter is refused naming it."""

from __future__ import annotations

import io
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from event_stream import EventStream
from schema_check import KEYWORDS, problems, resolve, schemas_in

from faxws import FaxClient, FaxFile, FileType, JobOptions, Notify, Recipient
from faxws.errors import AuthenticationError
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator, ManualClock
from faxws.testing._api import ROUTES

PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
CLIENT = {"X-FaxWS-Client": "tests"}
METHODS = ("get", "head", "post", "put", "delete", "patch", "options", "trace")


def tiff() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    pages = [Image.new("1", (64, 32), 1), Image.new("1", (64, 32), 0)]
    pages[0].save(out, "TIFF", compression="group3", save_all=True, append_images=pages[1:])
    return out.getvalue()


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    """A simulator holding one of everything: jobs by SendFax and SendFaxEx (a reference, a
    push that fails), a TIFF, a refused request, a pending fault."""
    clock = ManualClock(1_900_000_000.0)
    with FaxWSSimulator(clock=clock) as sim:
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, retries=0) as c:
            c.send_fax(
                [Recipient("+1 555 0100", name="Ann"), "+1 500 555 0001"],
                [FaxFile(PDF, FileType.PDF)],
                request_id="order-1",
            )
            options = JobOptions(
                reference_id="ref-7",
                notify=Notify("http://127.0.0.1:9/push", user="u", password="NOTIFY-SECRET-5"),
            )
            c.send_fax(["+1 555 0101"], [FaxFile(PDF, FileType.PDF)], options=options)
            c.send_fax(["+1 555 0102"], [FaxFile(tiff(), FileType.TIFF_G3)])
        clock.advance(3600)  # job 2 ended; its push was tried
        assert sim.wait_for_pushes(60)
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
            c.send_fax(["+1 500 555 0007"], [FaxFile(PDF, FileType.PDF)])  # job 4: never ends
        with (
            FaxClient(sim.url, user_id=DEMO_USER_ID, pin="9999", retries=0) as c,
            pytest.raises(AuthenticationError),
        ):
            c.get_fax_broadcast_report("SIM00000001")
        sim.inject(Fault.soap_fault("soap:Server", "down"), operation="CancelFax", times=2)
        yield sim


@pytest.fixture
def document(sim: FaxWSSimulator) -> dict[str, Any]:
    answer = requests.get(sim.url + "/api/openapi.json", timeout=30)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    found: dict[str, Any] = answer.json()
    return found


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def query_names(document: dict[str, Any], path: str, op: dict[str, Any]) -> set[str]:
    shared = document["paths"][path].get("parameters", [])
    return {p["name"] for p in (*shared, *op.get("parameters", ())) if p["in"] == "query"}


def test_the_document_is_openapi_3_1_and_every_schema_is_checked(
    document: dict[str, Any],
) -> None:
    assert document["openapi"] == "3.1.0"
    assert document["info"]["title"]
    for schema in schemas_in(document):
        assert set(resolve(document, schema)) <= KEYWORDS
    for path, _method, op in operations(document):
        assert "default" in op["responses"]
        names = re.findall(r"\{(\w+)\}", path)
        declared = [
            p["name"]
            for p in (*document["paths"][path].get("parameters", ()), *op.get("parameters", ()))
            if p["in"] == "path"
        ]
        assert sorted(names) == sorted(declared), path


def test_every_route_served_is_described_with_its_parameters_and_no_other(
    document: dict[str, Any],
) -> None:
    served = {
        (route.path, method.lower()): set(takes)
        for route in ROUTES
        for method, (_, takes) in route.methods.items()
    }
    served |= {(path, "head"): takes for (path, method), takes in served.items() if method == "get"}
    described = {
        (path, method): query_names(document, path, op) for path, method, op in operations(document)
    }
    assert described == served


def concrete(path: str) -> str:
    """A described path made to name things that exist in the fixture's simulator."""
    values = {
        "/api/jobs/{id}/files/{index}/preview": "/api/jobs/3/files/1/preview",
        "/api/jobs/{id}/outcome": "/api/jobs/4/outcome",
        "/api/requests/{id}": "/api/requests/1",
    }
    return values.get(path) or path.replace("{id}", "1").replace("{index}", "1")


BODIES: dict[tuple[str, str], Any] = {
    ("/api/jobs/{id}/outcome", "put"): {"outcome": "busy"},
    ("/api/faults", "post"): {"fault": "http_status", "status": 503, "times": 2},
}
# The calls that change things go last, the one that clears everything at the very end.
ORDER = {"get": 0, "head": 0, "put": 1, "post": 2, "delete": 3}


def check_answer(
    document: dict[str, Any], op: dict[str, Any], answer: requests.Response, at: str
) -> None:
    responses = op["responses"]
    described = responses.get(str(answer.status_code)) or responses["default"]
    assert str(answer.status_code) in responses, (at, answer.status_code, answer.text[:300])
    if answer.request.method == "HEAD":
        assert "content" not in described  # no body is described, and none came
        return
    media = answer.headers.get("Content-Type", "").split(";")[0]
    content = described.get("content", {})
    schema = content.get(media, content.get("*/*", {})).get("schema")
    assert schema is not None, (at, media)
    if media == "application/json":
        assert problems(document, schema, answer.json()) == [], at


def test_every_call_described_is_served_and_answers_as_described(
    sim: FaxWSSimulator, document: dict[str, Any]
) -> None:
    calls = sorted(
        operations(document),
        key=lambda o: (o[0] == "/api/reset", ORDER[o[1]], "{" not in o[0]),
    )
    for path, method, op in calls:
        url = sim.url + concrete(path)
        at = f"{method.upper()} {path}"
        if (path, method) == ("/api/events", "get"):
            with EventStream(sim.port) as stream:
                assert stream.status == 200
                assert "Content-Type: text/event-stream; charset=utf-8" in stream.head
                assert "text/event-stream" in op["responses"]["200"]["content"]
                assert stream.next_event()[0] == "change"
            continue
        body = BODIES.get((path, method))
        if "requestBody" in op:
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            assert problems(document, schema, body) == [], at
        answer = requests.request(method.upper(), url, json=body, headers=CLIENT, timeout=30)
        assert answer.status_code < 400, (at, answer.status_code, answer.text[:300])
        check_answer(document, op, answer, at)


def test_head_answers_as_get_without_a_body(sim: FaxWSSimulator, document: dict[str, Any]) -> None:
    for path, method, _op in operations(document):
        if method != "get" or path == "/api/events":
            continue
        url = sim.url + concrete(path)
        got = requests.get(url, timeout=30)
        head = requests.head(url, timeout=30)
        assert head.status_code == got.status_code, path
        assert head.content == b""
        same = {k: v for k, v in got.headers.items() if k != "Date"}
        assert {k: v for k, v in head.headers.items() if k != "Date"} == same, path


def test_head_of_the_event_stream_ends_after_its_headers(sim: FaxWSSimulator) -> None:
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as sock:
        sock.sendall(b"HEAD /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while chunk := sock.recv(4096):  # the connection closes after the headers
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"Content-Type: text/event-stream" in head
    assert rest == b""


def test_errors_are_described_too(sim: FaxWSSimulator, document: dict[str, Any]) -> None:
    ops = {(path, method): op for path, method, op in operations(document)}
    for method, path, described, url in (
        ("get", "/api/jobs/{id}", "/api/jobs/{id}", "/api/jobs/77"),
        ("get", "/api/jobs/{id}/timeline", "/api/jobs/{id}/timeline", "/api/jobs/77/timeline"),
        ("get", "/api/requests/{id}", "/api/requests/{id}", "/api/requests/999999"),
        ("get", "/api/jobs", "/api/jobs", "/api/jobs?limit=0"),
        ("put", "/api/jobs/{id}/outcome", "", "/api/jobs/1/outcome"),
        ("get", "/api/jobs/{id}/files/{index}/preview", "", "/api/jobs/1/files/1/preview"),
        ("get", "/api/jobs/{id}/files/{index}/preview", "", "/api/jobs/3/files/1/preview?page=9"),
        ("delete", "/api/jobs", "", "/api/jobs"),  # no header
    ):
        answer = requests.request(method.upper(), sim.url + url, json=None, timeout=30)
        assert answer.status_code >= 400, url
        check_answer(document, ops[(path, method)], answer, f"{method} {url} ({described})")


def test_an_unknown_query_parameter_is_refused_naming_it(
    sim: FaxWSSimulator, document: dict[str, Any]
) -> None:
    for path, method, op in operations(document):
        if method == "head":
            continue
        url = sim.url + concrete(path) + "?limit=1&colour=red&size=9&token="
        answer = requests.request(method.upper(), url, headers=CLIENT, timeout=30)
        takes = sorted(query_names(document, path, op))
        unknown = ", ".join(sorted({"colour", "size", "limit"} - set(takes)))
        plural = "s" if "," in unknown else ""
        listed = (
            ", ".join(next(r for r in ROUTES if r.path == path).methods[method.upper()][1])
            or "no query parameters"
        )
        assert (answer.status_code, answer.json()) == (
            400,
            {
                "error": f"unknown query parameter{plural} {unknown}: {method.upper()} {path} "
                f"takes {listed}"
            },
        ), path
        check_answer(document, op, answer, path)


def test_paths_not_described_are_not_served(sim: FaxWSSimulator) -> None:
    for path in ("/api/", "/api/jobs/", "/api/jobs/1/files", "/api/job", "/api/faults/1"):
        answer = requests.get(sim.url + path, timeout=30)
        assert (answer.status_code, answer.json()) == (
            404,
            {"error": f"no such resource: {path}"},
        )


def refused_values(schema: dict[str, Any]) -> list[str]:
    """Query values the parameter's schema refuses, as a query can spell them."""
    values: list[str] = []
    if "enum" in schema:
        values += [v for v in ("", "2", "yes", "1 ") if v not in schema["enum"]]
    kind = schema.get("type")
    if kind in ("integer", "number"):
        # Spellings Python's int() or float() would take, and values beyond the bounds.
        values += ["", "x", "1_0", " 1", "1 ", "\u0661", "0x10"]
        if kind == "integer":
            values += ["1.5", "1e2"]
        if "minimum" in schema:
            values.append(str(schema["minimum"] - 1))
        if "maximum" in schema:
            values.append(str(schema["maximum"] + 1))
    if "maxLength" in schema:
        values.append("a" * (schema["maxLength"] + 1))
    return values


def taken_values(schema: dict[str, Any]) -> list[str]:
    values = [str(v) for v in schema.get("enum", ())]
    values += [str(schema[bound]) for bound in ("minimum", "maximum") if bound in schema]
    if "maxLength" in schema:
        values += ["", "a" * schema["maxLength"]]
    return values


def test_every_query_parameter_refuses_what_its_schema_refuses(
    sim: FaxWSSimulator, document: dict[str, Any]
) -> None:
    """Each described parameter takes what its schema takes and answers 400 to anything
    else: the description is the contract a generated client trusts."""
    checked = 0
    for path, method, op in operations(document):
        if method != "get" or path == "/api/events":
            continue
        for parameter in op.get("parameters", ()):
            name, schema = parameter["name"], parameter["schema"]
            for value in refused_values(schema):
                answer = requests.get(
                    sim.url + concrete(path), params={name: value}, headers=CLIENT, timeout=30
                )
                assert answer.status_code == 400, (path, name, value, answer.status_code)
                assert answer.json()["error"].startswith(f"{name} must be"), (path, name, value)
                check_answer(document, op, answer, f"{path}?{name}={value!r}")
                checked += 1
            for value in taken_values(schema):
                answer = requests.get(
                    sim.url + concrete(path), params={name: value}, headers=CLIENT, timeout=30
                )
                assert answer.status_code != 400, (path, name, value, answer.text)
    assert checked >= 40


def test_every_operation_describes_its_refusal_of_a_page_of_another_site(
    sim: FaxWSSimulator, document: dict[str, Any]
) -> None:
    foreign = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": ""}
    for path, method, op in operations(document):
        at = f"{method.upper()} {path}"
        with requests.request(
            method.upper(),
            sim.url + concrete(path),
            json=BODIES.get((path, method)),
            headers={**CLIENT, **foreign},
            timeout=30,
            stream=True,  # an event stream served would never end
        ) as answer:
            assert answer.status_code == 403, at
            check_answer(document, op, answer, at)
            if method != "head":
                assert answer.json() == {"error": f"{method.upper()} from another site is refused"}
