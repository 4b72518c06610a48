"""faxws.validate: envelopes and payloads against the schema, hostile documents included."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import responses
from lxml import etree

from conftest import (
    GOLDEN,
    URL,
    CaptureServer,
    Reply,
    Tripwire,
    http_reply,
    report_response,
    send_response,
)
from faxws import (
    BadInputError,
    FaxClient,
    ValidationIssue,
    _codegen,
    bindings,
    validation,
)
from faxws._protocol import writer as _wire
from faxws._protocol.xsd import NAMESPACE
from faxws.validation import Validator, default_validator, validate, validate_or_raise

ROOT = Path(__file__).resolve().parents[2]
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"


def report_doc(recipient_type: str = "1", extra: str = "") -> str:
    return (
        f'<soap:Envelope xmlns:soap="{SOAP}">\n<soap:Header/>\n<soap:Body>\n'
        '<GetFaxBroadcastReport xmlns="urn:FaxWS">\n<UserID>u</UserID>\n<strPIN/>\n'
        f"<JobId>J</JobId>\n<RecipientType>{recipient_type}</RecipientType>\n{extra}"
        "<RecipAddress/>\n</GetFaxBroadcastReport>\n</soap:Body>\n</soap:Envelope>\n"
    )


def send_doc(second_number: str = "<RecipFaxNumber>2</RecipFaxNumber>") -> bytes:
    item = "<RecipCompany/><RecipTitle/><RecipName/><RecipSecureCSID/>"
    return (
        '<SendFax xmlns="urn:FaxWS"><UserID>u</UserID><strPIN>1</strPIN>\n<Recipients>\n'
        f"<item><RecipFaxNumber>1</RecipFaxNumber>{item}</item>\n"
        f"<item>{second_number}{item}</item>\n</Recipients>\n<FaxJobFiles><item><FileIndex>1"
        "</FileIndex><FileTypeId>101</FileTypeId><FileData>JVBERg==</FileData></item>"
        "</FaxJobFiles></SendFax>"
    ).encode()


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*.xml")))
def test_golden_requests_are_valid(name: str) -> None:
    assert validate(GOLDEN / name) == []


@pytest.mark.parametrize(
    "body", [send_response(["J1", "J2"]), report_response(), report_response(False, -5019, "x")]
)
def test_response_documents_are_valid(body: bytes) -> None:
    assert validate(body) == []


def test_every_input_form_is_accepted(tmp_path: Path) -> None:
    text = report_doc("x")
    path = tmp_path / "r.xml"
    path.write_text(text)
    expected = [
        ValidationIssue(8, "/GetFaxBroadcastReport/RecipientType", "'x' is not a valid xs:int")
    ]
    assert validate(text) == expected
    assert validate(text.encode()) == expected
    assert validate(path) == expected
    assert validate(str(path)) == expected
    assert validate(etree.fromstring(text.encode())) == expected


def test_missing_element_is_named_with_its_position() -> None:
    issues = validate(send_doc(second_number=""))
    assert issues == [
        ValidationIssue(
            4,
            "/SendFax/Recipients/item[2]/RecipCompany",
            "RecipCompany is not expected here; expected RecipFaxNumber",
        )
    ]


def test_unexpected_extra_element() -> None:
    (issue,) = validate(report_doc(extra="<Color>red</Color>\n"))
    assert issue.path == "/GetFaxBroadcastReport/Color"
    assert issue.message == "Color is not expected here; expected RecipAddress"


def test_int_out_of_range() -> None:
    (issue,) = validate(report_doc("2147483648"))
    assert (issue.path, issue.message) == (
        "/GetFaxBroadcastReport/RecipientType",
        "'2147483648' is not a valid xs:int",
    )


@pytest.mark.parametrize(
    ("doc", "path", "words"),
    [
        (b'<GetFaxCoverList xmlns="urn:FaxWS"/>', "/GetFaxCoverList", "unknown root element"),
        (b'<SendFax xmlns="urn:Other"/>', "/SendFax", "is in namespace 'urn:Other'"),
        (b"<SendFax/>", "/SendFax", "is in no namespace"),
        (
            b'<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body/></e:Envelope>',
            "/Envelope",
            "SOAP 1.2",
        ),
        (
            f'<s:Envelope xmlns:s="{SOAP}"><s:Body/></s:Envelope>'.encode(),
            "/Envelope/Body",
            "holds 0 elements",
        ),
        (
            f'<s:Envelope xmlns:s="{SOAP}"><s:Header/></s:Envelope>'.encode(),
            "/Envelope",
            "optional Header and then a Body",
        ),
        (b"", "/", "empty"),
        (b"not xml", "/", "not well-formed"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "/", "not well-formed"),
    ],
)
def test_structural_problems(doc: bytes, path: str, words: str) -> None:
    (issue,) = validate(doc)
    assert issue.path == path
    assert words in issue.message


def test_validate_or_raise_carries_every_issue() -> None:
    doc = report_doc("x").replace("<JobId>J</JobId>", "<JobId>J</JobId><Junk/>")
    with pytest.raises(BadInputError) as info:
        validate_or_raise(doc)
    assert info.value.field == "/GetFaxBroadcastReport/Junk"
    assert len(info.value.issues) >= 1
    validate_or_raise(report_doc())  # a valid document raises nothing


# -- many issues ----------------------------------------------------------------------------


def files_doc(n: int, index: str = "x") -> bytes:
    """A SendFax with ``n`` files, one per line, each with ``index`` as its FileIndex: with
    the default, ``n`` issues among ``n`` same-named siblings."""
    item = f"<item><FileIndex>{index}</FileIndex><FileTypeId>101</FileTypeId><FileData>JVBERg=="
    return (
        '<SendFax xmlns="urn:FaxWS"><UserID>u</UserID><strPIN>1</strPIN><Recipients><item>'
        "<RecipFaxNumber>1</RecipFaxNumber><RecipCompany/><RecipTitle/><RecipName/>"
        "<RecipSecureCSID/></item></Recipients>\n<FaxJobFiles>\n"
        + f"{item}</FileData></item>\n" * n
        + "</FaxJobFiles></SendFax>"
    ).encode()


def mixed_doc(n: int, prefix: str = "") -> bytes:
    """Issues of every kind at several depths, among many siblings of one name and of
    several names, with comments between them; ``prefix`` (``f:``) makes libxml2 name the
    steps of its error paths (``f:item[3]``) instead of counting them (``*[3]``)."""
    p = prefix
    rest = f"<{p}RecipTitle/><{p}RecipName/><{p}RecipSecureCSID/>"
    recipients = []
    for i in range(n):
        if i % 3 == 0:  # no number, two companies: the first is not expected
            recipients.append(f"<{p}item><{p}RecipCompany/><{p}RecipCompany/>{rest}</{p}item>")
        elif i % 3 == 1:  # a stray element between the others
            recipients.append(
                f"<{p}item><{p}RecipFaxNumber>1</{p}RecipFaxNumber><{p}Junk/>"
                f"<{p}RecipCompany/>{rest}</{p}item>"
            )
        else:
            recipients.append(f"<!-- ok --><{p}item/>")  # nothing in it
    files = [
        f"<{p}item><{p}FileIndex>{'x' if i % 2 else i + 1}</{p}FileIndex><{p}FileTypeId>"
        f"{2**31 if i % 5 == 0 else 101}</{p}FileTypeId><{p}FileData>JVBERg==</{p}FileData>"
        f"</{p}item>"
        for i in range(n)
    ]
    xmlns = f'xmlns:{p[:-1]}="urn:FaxWS"' if p else 'xmlns="urn:FaxWS"'
    return (
        f"<{p}SendFax {xmlns}><{p}UserID>u</{p}UserID><{p}strPIN>1</{p}strPIN>\n"
        f"<{p}Recipients>\n" + "\n".join(recipients) + f"\n</{p}Recipients>\n"
        f"<{p}FaxJobFiles>" + "\n".join(files) + f"</{p}FaxJobFiles><{p}Extra/></{p}SendFax>"
    ).encode()


def sibling_scan_issues(payload: etree._Element) -> list[tuple[int, str, str]]:
    """The issues as the validator found them before it indexed the siblings: every error's
    node and path found by scanning its siblings again (the reference for paths)."""

    def resolve(path: str) -> etree._Element | None:
        steps = [s for s in path.split("/") if s]
        if not steps:
            return None
        node = payload
        for step in steps[1:]:
            m = validation._STEP.match(step)
            if m is None:
                return None
            children = [c for c in node if isinstance(c.tag, str)]
            if m.group("name") != "*":
                children = [c for c in children if etree.QName(c).localname == m.group("name")]
            pos = int(m.group("pos") or 1)
            if pos > len(children):
                return None
            node = children[pos - 1]
        return node

    def element_path(element: etree._Element) -> str:
        steps: list[str] = []
        node: etree._Element | None = element
        while node is not None:
            name = etree.QName(node).localname
            parent = node.getparent()
            if parent is not None and node is not payload:
                same = [c for c in parent if c.tag == node.tag]
                if len(same) > 1:
                    name += f"[{same.index(node) + 1}]"
            steps.append(name)
            if node is payload:
                break
            node = parent
        return "/" + "/".join(reversed(steps))

    schema = etree.XMLSchema(default_validator()._doc)
    assert not schema.validate(payload)
    found = []
    for error in schema.error_log:
        node = resolve(error.path or "")
        path = element_path(node if node is not None else payload)
        found.append((error.line, path, validation._readable(error.message, NAMESPACE)))
    return found


@pytest.mark.parametrize("prefix", ["", "f:"], ids=["default namespace", "prefixed"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["payload", "envelope"])
def test_paths_of_many_issues_are_those_of_a_sibling_scan(prefix: str, wrapped: bool) -> None:
    doc = mixed_doc(60, prefix)
    if wrapped:
        doc = f'<s:Envelope xmlns:s="{SOAP}"><s:Body>'.encode() + doc + b"</s:Body></s:Envelope>"
    root = etree.fromstring(doc)
    payload = root[0][0] if wrapped else root
    expected = sibling_scan_issues(payload)
    assert len(expected) > 100
    assert {path.count("[") for _, path, _ in expected} == {0, 1, 2}  # positions at two depths
    assert [(i.line, i.path, i.message) for i in validate(doc)] == expected
    assert [(i.line, i.path, i.message) for i in validate(root)] == expected


def test_a_header_after_the_body_is_refused() -> None:
    doc = (
        f'<s:Envelope xmlns:s="{SOAP}"><s:Body><GetFaxBroadcastReport xmlns="urn:FaxWS"/>'
        "</s:Body><s:Header/></s:Envelope>"
    ).encode()
    (issue,) = validate(doc)
    assert (issue.line, issue.path, issue.message) == (
        1,
        "/Envelope",
        "an Envelope holds an optional Header and then a Body, not Body, Header",
    )


def test_a_few_issues_among_many_siblings_keep_their_exact_form() -> None:
    assert [str(i) for i in validate(mixed_doc(4))] == [
        "3: /SendFax/Recipients/item[1]/RecipCompany[1]: RecipCompany is not expected here; "
        "expected RecipFaxNumber",
        "4: /SendFax/Recipients/item[2]/Junk: Junk is not expected here; expected RecipCompany",
        "5: /SendFax/Recipients/item[3]: missing child element; expected RecipFaxNumber",
        "6: /SendFax/Recipients/item[4]/RecipCompany[1]: RecipCompany is not expected here; "
        "expected RecipFaxNumber",
        "8: /SendFax/FaxJobFiles/item[1]/FileTypeId: '2147483648' is not a valid xs:int",
        "9: /SendFax/FaxJobFiles/item[2]/FileIndex: 'x' is not a valid xs:int",
        "11: /SendFax/FaxJobFiles/item[4]/FileIndex: 'x' is not a valid xs:int",
        "11: /SendFax/Extra: Extra is not expected here",
    ]


def python_lines_run(fn: Callable[[], object]) -> int:
    """How many lines of faxws/validation.py run during ``fn()``, each
    pass of a loop (a comprehension's too) counted: the modules' work, without a clock."""
    count = 0
    modules = {validation.__file__}

    def local(frame: Any, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: Any, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename in modules else None

    sys.settrace(calls)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def test_the_work_per_issue_does_not_grow_with_the_siblings() -> None:
    """250 and 2,000 issues among as many siblings: work that is linear in the issues grows
    8 times; scanning the siblings for every issue grew 64 times."""
    small, large = files_doc(250), files_doc(2000)
    validate(small)  # the schema compiled before counting
    few = python_lines_run(lambda: validate(small))
    many = python_lines_run(lambda: validate(large))
    assert few > 250
    assert many / few < 16, (few, many)


def test_8000_issues_take_seconds_not_minutes() -> None:
    """About 0.6 s here (libxml2 works out the path of every error among 8,000 siblings); 40 s
    when every issue scanned them again in Python. The bound is generous for slow machines."""
    doc = files_doc(8000)
    started = time.perf_counter()
    issues = validate(doc)
    elapsed = time.perf_counter() - started
    assert len(issues) == issues.total == 8000
    assert issues[-1] == ValidationIssue(
        8002, "/SendFax/FaxJobFiles/item[8000]/FileIndex", "'x' is not a valid xs:int"
    )
    assert elapsed < 10


def test_max_issues_keeps_the_first_and_counts_them_all() -> None:
    doc = mixed_doc(30)
    every = validate(doc)
    first = validate(doc, max_issues=5)
    assert first == every[:5]
    assert (first.total, first.truncated) == (len(every), True)
    assert (every.total, every.truncated) == (len(every), False)
    exactly = validate(doc, max_issues=len(every))
    assert exactly == every
    assert exactly.truncated is False
    assert validate(report_doc(), max_issues=1) == []
    assert validate(report_doc(), max_issues=1).total == 0
    structural = validate(b"<SendFax/>", max_issues=1)
    assert (len(structural), structural.total, structural.truncated) == (1, 1, False)
    with pytest.raises(BadInputError) as info:
        validate_or_raise(doc, max_issues=2)
    assert len(info.value.issues) == 2
    assert info.value.field == every[0].path


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_max_issues_must_be_a_whole_number_above_zero(value: object) -> None:
    with pytest.raises(BadInputError) as info:
        validate(report_doc("x"), max_issues=value)  # type: ignore[arg-type]
    assert info.value.field == "max_issues"


def test_schema_issues_of_a_parsed_payload_take_max_issues_too() -> None:
    payload = etree.fromstring(files_doc(10))
    issues = default_validator().schema_issues(payload, max_issues=3)
    assert [i.path for i in issues] == [
        f"/SendFax/FaxJobFiles/item[{n}]/FileIndex" for n in (1, 2, 3)
    ]
    assert issues.total == 10


# -- hostile documents ----------------------------------------------------------------------


def test_xxe_to_a_local_file_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "secret.txt"
    marker.write_text("MARKER-XXE-8812")
    doc = (
        f'<!DOCTYPE r [<!ENTITY x SYSTEM "file://{marker}">]>'
        '<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>&x;</UserID></GetFaxBroadcastReport>'
    )
    issues = validate(doc)
    assert [i.message for i in issues] == ["DTDs and entity declarations are not allowed"]
    assert "MARKER-XXE-8812" not in repr(issues)


EXTERNAL = {
    "external DTD": '<!DOCTYPE r SYSTEM "{url}"><r>&e;</r>',
    "external entity": '<!DOCTYPE r [<!ENTITY x SYSTEM "{url}">]><r>&x;</r>',
    "external parameter entity": '<!DOCTYPE r [<!ENTITY % p SYSTEM "{url}"> %p;]><r>&e;</r>',
}


def external_document(form: str, url: str, encoding: str) -> bytes:
    """A UTF-16 document slips past the byte scan for DOCTYPE and reaches the parser; a UTF-8
    one is what the byte scan refuses."""
    declaration = f'<?xml version="1.0" encoding="{encoding.upper()}"?>'
    return (declaration + EXTERNAL[form].format(url=url)).encode(encoding)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
@pytest.mark.parametrize("form", list(EXTERNAL))
def test_external_resources_on_disk_are_never_opened(
    tripwire: Tripwire, form: str, encoding: str
) -> None:
    issues = validate(external_document(form, tripwire.path.as_uri(), encoding))
    assert [i.message for i in issues] == ["DTDs and entity declarations are not allowed"]
    assert "TRIPPED" not in repr(issues)
    tripwire.close()  # settles the answer: an open during validate() was counted before it
    assert tripwire.opened is False


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
@pytest.mark.parametrize("form", list(EXTERNAL))
def test_external_resources_on_the_network_are_never_fetched(
    capture_server: Callable[[Reply], CaptureServer], form: str, encoding: str
) -> None:
    """libxml2 2.13 and later has no HTTP client; earlier ones (lxml 5 wheels) fetch unless
    the parser forbids the network."""
    server = capture_server(lambda raw: http_reply(b'<!ENTITY e "TRIPPED">'))
    issues = validate(external_document(form, f"{server.url}/evil.dtd", encoding))
    assert [i.message for i in issues] == ["DTDs and entity declarations are not allowed"]
    server.close()  # joins the accept loop: a connection made during validate() is counted
    assert server.captured.connections == 0


def test_billion_laughs_is_refused_quickly() -> None:
    lol = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    doc = f'<!DOCTYPE r [<!ENTITY l0 "lol">{lol}]><r>&l9;</r>'
    started = time.monotonic()
    assert validate(doc)[0].message == "DTDs and entity declarations are not allowed"
    # The refusal takes microseconds; expanding 10**9 entities would take far longer.
    assert time.monotonic() - started < 10


def test_deep_nesting_is_an_issue_not_a_crash() -> None:
    doc = "<a>" * 10000 + "</a>" * 10000
    (issue,) = validate(doc)
    assert "not well-formed" in issue.message
    assert "depth" in issue.message


# -- sharing and compiling ---------------------------------------------------------------------


def test_schema_is_compiled_once_and_shared_between_threads() -> None:
    """Each thread gets its own document's issues: a different value in every invalid one,
    and many issues in some, so that errors handed to the wrong thread would show."""
    assert default_validator() is default_validator()

    def doc(n: int) -> bytes | str:
        if n % 2:
            return report_doc()
        return files_doc(n % 7 * 20 + 1, index=f"x{n}") if n % 4 else report_doc(f"x{n}")

    expected = [validate(doc(n)) for n in range(400)]
    assert all(expected[n] == [] for n in range(1, 400, 2))
    assert all(f"'x{n}'" in expected[n][0].message for n in range(0, 400, 2))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda n: validate(doc(n)), range(400)))
    assert results == expected


# -- the client checks its own requests --------------------------------------------------------


def test_client_refuses_a_request_the_schema_refuses(mocked: responses.RequestsMock) -> None:
    """Code that builds binding objects itself is refused what the schema would refuse,
    naming the element, before anything is sent."""
    client = FaxClient("https://fax.example.com", user_id="u", pin="1")
    request = bindings.GetFaxBroadcastReport(
        user_id="u",
        str_pin="1",
        job_id="J",
        recipient_type="abc",  # type: ignore[arg-type]
        recip_address="",
    )
    with pytest.raises(BadInputError) as info:
        client._call(
            bindings.OPERATIONS["GetFaxBroadcastReport"], request, "rid-x", idempotent=True
        )
    assert (info.value.field, info.value.problem, info.value.request_id) == (
        "/GetFaxBroadcastReport/RecipientType",
        "must be an int, not str",
        "rid-x",
    )
    assert len(mocked.calls) == 0


def test_unknown_response_elements_are_logged_at_debug(
    mocked: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    body = report_response().replace(b"<WSError>", b"<Extra>1</Extra><WSError>")
    mocked.post(URL, body=body)
    caplog.set_level("DEBUG", logger="faxws")
    FaxClient("https://fax.example.com", user_id="u", pin="1").get_fax_broadcast_report("J")
    assert any(
        "ignoring unknown elements in /GetFaxBroadcastReportResponse: {urn:FaxWS}Extra"
        in r.getMessage()
        for r in caplog.records
    )


# -- the command -------------------------------------------------------------------------------


def run_validate(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faxws", "validate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_validate_prints_file_line_path_message(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.xml", tmp_path / "bad.xml"
    good.write_text(report_doc())
    bad.write_text(report_doc("x"))
    done = run_validate(str(good), str(bad))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{good}: valid",
        f"{bad}:8: /GetFaxBroadcastReport/RecipientType: 'x' is not a valid xs:int",
    ]
    assert run_validate(str(good)).returncode == 0


def test_cli_validate_json_and_stdin() -> None:
    done = run_validate("-", "--json", stdin=report_doc("x"))
    assert done.returncode == 1
    (result,) = json.loads(done.stdout)
    assert result["file"] == "-"
    assert result["valid"] is False
    assert result["issues"][0] == {
        "line": 8,
        "path": "/GetFaxBroadcastReport/RecipientType",
        "message": "'x' is not a valid xs:int",
    }


def test_cli_validate_shows_max_issues_and_says_how_many_there_were(tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.xml", tmp_path / "good.xml"
    bad.write_bytes(files_doc(250))
    good.write_text(report_doc())
    done = run_validate(str(bad), str(good), "--max-issues", "3")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{bad}:3: /SendFax/FaxJobFiles/item[1]/FileIndex: 'x' is not a valid xs:int",
        f"{bad}:4: /SendFax/FaxJobFiles/item[2]/FileIndex: 'x' is not a valid xs:int",
        f"{bad}:5: /SendFax/FaxJobFiles/item[3]/FileIndex: 'x' is not a valid xs:int",
        f"{bad}: 250 issues, the first 3 shown (--max-issues)",
        f"{good}: valid",
    ]
    assert done.stderr == ""


def test_cli_validate_shows_100_issues_by_default(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_bytes(files_doc(250))
    lines = run_validate(str(bad)).stdout.splitlines()
    assert len(lines) == 101
    assert (
        lines[99]
        == f"{bad}:102: /SendFax/FaxJobFiles/item[100]/FileIndex: 'x' is not a valid xs:int"
    )
    assert lines[100] == f"{bad}: 250 issues, the first 100 shown (--max-issues)"
    every = run_validate(str(bad), "--max-issues", "250").stdout.splitlines()
    assert len(every) == 250  # all of them: no count line


def test_cli_validate_json_with_max_issues(tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.xml", tmp_path / "good.xml"
    bad.write_bytes(files_doc(250))
    good.write_text(report_doc())
    done = run_validate(str(bad), str(good), "--json", "--max-issues", "2")
    assert done.returncode == 1
    assert json.loads(done.stdout) == [
        {
            "file": str(bad),
            "valid": False,
            "issues": [
                {
                    "line": 3,
                    "path": "/SendFax/FaxJobFiles/item[1]/FileIndex",
                    "message": "'x' is not a valid xs:int",
                },
                {
                    "line": 4,
                    "path": "/SendFax/FaxJobFiles/item[2]/FileIndex",
                    "message": "'x' is not a valid xs:int",
                },
            ],
            "total_issues": 250,
            "truncated": True,
        },
        {"file": str(good), "valid": True, "issues": [], "total_issues": 0, "truncated": False},
    ]


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "many", ""])
def test_cli_validate_max_issues_must_be_above_zero(tmp_path: Path, value: str) -> None:
    good = tmp_path / "good.xml"
    good.write_text(report_doc())
    message = "argument --max-issues: must be a whole number > 0"
    done = run_validate(str(good), "--max-issues", value)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == f"faxws validate: error: {message}"
    done = run_validate(str(good), "--json", f"--max-issues={value}")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["message"] == message


def test_cli_validate_unreadable_file_exits_2(tmp_path: Path) -> None:
    done = run_validate(str(tmp_path / "missing.xml"))
    assert done.returncode == 2
    assert "cannot read" in done.stderr


# -- changing the WSDL -------------------------------------------------------------------------


def test_an_optional_element_added_to_the_wsdl_flows_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wsdl_dir = tmp_path / "wsdl"
    shutil.copytree(ROOT / "wsdl", wsdl_dir)
    xsd = wsdl_dir / "FaxWS.xsd"
    xsd.write_text(
        xsd.read_text().replace(
            '<xs:element name="RecipSecureCSID" type="xs:string">',
            '<xs:element name="RecipVoiceNumber" type="xs:string" minOccurs="0">\n'
            "        <xs:annotation><xs:documentation>Voice number of the recipient."
            "</xs:documentation></xs:annotation>\n      </xs:element>\n"
            '      <xs:element name="RecipSecureCSID" type="xs:string">',
        )
    )
    out = tmp_path / "gen" / "bindings.py"
    out.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "faxws._codegen",
            "--wsdl",
            str(wsdl_dir / "FaxWS.wsdl"),
            "--output",
            str(out),
        ],
        check=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    code = out.read_text()
    assert "recip_voice_number: str | None = None" in code
    assert '"Voice number of the recipient."' in code
    spec = importlib.util.spec_from_file_location("edited_bindings", out)
    assert spec is not None
    assert spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "edited_bindings", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    names = [f.name for f in module.FaxJobRecipient.__xml__.fields]
    assert names == [
        "RecipFaxNumber",
        "RecipCompany",
        "RecipTitle",
        "RecipName",
        "RecipVoiceNumber",
        "RecipSecureCSID",
    ]
    recipient = module.FaxJobRecipient("+1 555 0100", "", "", "Bob", "", "+1 555 0199")
    request = module.SendFax(
        user_id="u",
        str_pin="1",
        recipients=module.FaxJobRecipients(item=(recipient,)),
        fax_job_files=module.FaxJobFiles(item=(module.FaxJobFile(1, 101, b"%PDF"),)),
    )
    body = b"".join(_wire.envelope(request))
    assert b"<RecipName>Bob</RecipName><RecipVoiceNumber>+1 555 0199</RecipVoiceNumber>" in body
    edited = Validator.from_path(xsd)
    assert edited.validate(body) == []
    assert validate(body) != []  # the shipped schema does not know the new element
    assert _codegen.generate(ROOT / "wsdl" / "FaxWS.wsdl") != code


def test_a_dtd_in_utf16_is_refused_too() -> None:
    doc = (
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY x "MARKER-U16">]>'
        '<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>&x;</UserID>'
        "</GetFaxBroadcastReport>"
    ).encode("utf-16")
    (issue,) = validate(doc)
    assert issue.message == "DTDs and entity declarations are not allowed"
    assert "MARKER-U16" not in repr(issue)
