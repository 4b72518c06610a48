"""The client does not parse its requests back for a schema check: whatever it sends, the
schema accepts. These tests are the proof. Arbitrary input (any text, any number, values of
the wrong type) goes through the public calls of both clients; each call either refuses it
with BadInputError before anything reaches the transport, or hands the transport a body that
``faxws.validate`` (the XSD, with lxml) finds valid, byte for byte."""

from __future__ import annotations

import asyncio
import copy
import enum
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import report_response, send_response
from faxws import (
    AsyncFaxClient,
    BadInputError,
    FaxClient,
    FaxFile,
    FaxWSError,
    Recipient,
    bindings,
)
from faxws._protocol.writer import Body, envelope
from faxws.validation import validate

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same inputs on every CI run
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: Characters at the edges of what XML and the checks allow, mixed into arbitrary text.
EDGES = [
    "&", "<", ">", "]]>", '"', "'", "\t", "\n", "\r", "\x00", "\x01", "\x1f", "\x7f", "\x85",
    "\ud7ff", "\ud800", "\udfff", "\ue000", "\ufffd", "\ufffe", "\uffff", "\u2028", "\u2029",
    "\U00010000", "\U0010ffff", " ", "0", "+1 555 0100", "\u0663",
]  # fmt: skip
TEXT = st.one_of(
    st.text(max_size=12),
    st.lists(st.sampled_from(EDGES), max_size=4).map("".join),
    st.tuples(st.text(max_size=4), st.sampled_from(EDGES), st.text(max_size=4)).map("".join),
)
NUMBER = st.one_of(
    st.integers(-(2**31) - 2, 2**31 + 1),
    st.sampled_from([-(2**31), 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 0, 1]),
)
WRONG = st.sampled_from([None, 1.5, b"x", True, ["x"], object()])
ANY_TEXT = st.one_of(TEXT, TEXT, TEXT, WRONG)
ANY_NUMBER = st.one_of(NUMBER, NUMBER, NUMBER, WRONG, TEXT)


class RefusedError(Exception):
    """The input could not even be made into a Recipient or a FaxFile."""


def _made(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except BadInputError as exc:
        raise RefusedError from exc


@st.composite
def recipient(draw: st.DrawFn) -> Callable[[], Any]:
    if draw(st.booleans()):
        number = draw(ANY_TEXT)
        return lambda: number  # a plain string is a fax number
    fields = [draw(ANY_TEXT) for _ in range(5)]
    return lambda: _made(lambda: Recipient(*fields))


@st.composite
def fax_file(draw: st.DrawFn) -> Callable[[], Any]:
    data = draw(st.binary(min_size=0, max_size=8))
    file_type = draw(ANY_NUMBER)
    index = draw(st.one_of(st.none(), ANY_NUMBER))
    return lambda: _made(lambda: FaxFile(data, file_type, index))


class CapturedError(FaxWSError):
    """Raised by the stand-in transport: the body reached it (a FaxWSError, so the call
    passes it through as it is)."""

    def __init__(self, body: bytes) -> None:
        super().__init__("sent")
        self.body = body


def _sync_call(operation: str, payload: bytes | Any, length: int, *args: Any, **kw: Any) -> Any:
    body = payload if isinstance(payload, bytes) else b"".join(payload)
    assert len(body) == length
    raise CapturedError(body)


async def _async_call(operation: str, body: Body, *args: Any, **kw: Any) -> Any:
    raise CapturedError(b"".join(body))


def _outcome(face: str, call: Callable[[Any], Any]) -> bytes | None:
    """The body the transport was handed, or None when the client refused the input."""
    if face == "sync":
        client: Any = FaxClient("https://fax.example.com", user_id="u", pin="1")
        client._caller.call = _sync_call
        run: Callable[[Any], Any] = lambda c: call(c)  # noqa: E731
    else:
        client = AsyncFaxClient("https://fax.example.com", user_id="u", pin="1")
        client._caller.call = _async_call
        run = lambda c: asyncio.run(call(c))  # noqa: E731
    refused: BadInputError | None = None
    try:
        run(client)
    except RefusedError:
        return None
    except BadInputError as exc:
        refused = exc  # inside the call: it must carry the request id
    except CapturedError as sent:
        return sent.body
    finally:
        if face == "sync":
            client.close()
    assert refused is not None, "the call neither refused its input nor reached the transport"
    assert refused.request_id is not None
    return None


FACES = pytest.mark.parametrize("face", ["sync", "async"])


@FACES
@SETTINGS
@given(recipients=st.lists(recipient(), max_size=3), files=st.lists(fax_file(), max_size=3))
def test_every_send_fax_the_client_sends_is_valid(
    face: str, recipients: list[Callable[[], Any]], files: list[Callable[[], Any]]
) -> None:
    def call(client: Any) -> Any:
        return client.send_fax([r() for r in recipients], [f() for f in files])

    body = _outcome(face, call)
    if body is not None:
        assert validate(body) == [], body


@FACES
@SETTINGS
@given(
    user_id=ANY_TEXT,
    pin=ANY_TEXT,
    job_id=ANY_TEXT,
    narrow=st.one_of(st.none(), st.tuples(ANY_NUMBER, ANY_TEXT)),
)
def test_every_report_request_the_client_sends_is_valid(
    face: str, user_id: Any, pin: Any, job_id: Any, narrow: tuple[Any, Any] | None
) -> None:
    def call(client: Any) -> Any:
        if narrow is None:
            return client.get_fax_broadcast_report(job_id)
        return client.get_fax_broadcast_report(job_id, *narrow)

    def with_account(client_class: Any) -> Any:
        try:
            return client_class("https://fax.example.com", user_id=user_id, pin=pin)
        except BadInputError as exc:
            raise RefusedError from exc

    # The account goes through the constructor: the same checks, then the same call.
    def construct(client: Any) -> Any:
        made = with_account(type(client))
        made._caller.call = client._caller.call
        try:
            return call(made)
        finally:
            if face == "sync":
                made.close()

    body = _outcome(face, construct)
    if body is not None:
        assert validate(body) == [], body


def test_the_edges_are_drawn() -> None:
    """The property tests above reach both outcomes, and refusals for each reason: a check
    that refused everything (or nothing) would pass them without proving anything."""
    sent = _outcome("sync", lambda c: c.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)]))
    assert sent is not None
    assert validate(sent) == []
    for bad in ("+1 555\x00", "+1 555\ud800", "+1 555\ufffe", "+1 555\n0100", "no digits"):
        assert _outcome("sync", lambda c, b=bad: c.send_fax([b], [FaxFile(b"x", 101)])) is None


# -- the writer refuses what the schema refuses, beyond the text the client checks --------------


def _report(**overrides: Any) -> bindings.GetFaxBroadcastReport:
    values: dict[str, Any] = {
        "user_id": "u",
        "str_pin": "1",
        "job_id": "J",
        "recipient_type": 0,
        "recip_address": "",
    }
    values.update(overrides)
    return bindings.GetFaxBroadcastReport(**values)


def _send(**overrides: Any) -> bindings.SendFax:
    recipient = bindings.FaxJobRecipient("+1 555 0100", "", "", "", "")
    values: dict[str, Any] = {
        "user_id": "u",
        "str_pin": "1",
        "recipients": bindings.FaxJobRecipients(item=(recipient,)),
        "fax_job_files": bindings.FaxJobFiles(item=(bindings.FaxJobFile(1, 101, b"%PDF"),)),
    }
    values.update(overrides)
    return bindings.SendFax(**values)


INT_RANGE = "is outside -2147483648..2147483647 (xs:int)"
ONE = bindings.FaxJobRecipient("1", "", "", "", "")
REPORT_TYPE = "/GetFaxBroadcastReport/RecipientType"
WRITER_REFUSALS = [
    (_report(recipient_type="0"), REPORT_TYPE, "must be an int, not str"),
    (_report(recipient_type=True), REPORT_TYPE, "must be an int, not bool"),
    (_report(recipient_type=2**31), REPORT_TYPE, f"{2**31} {INT_RANGE}"),
    (_report(recipient_type=None), REPORT_TYPE, "is required"),
    (_report(job_id=7), "/GetFaxBroadcastReport/JobId", "must be a str, not int"),
    (_report(user_id=None), "/GetFaxBroadcastReport/UserID", "is required"),
    (
        _send(recipients=bindings.FaxJobRecipients(item=())),
        "/SendFax/Recipients/item",
        "holds 0 items, at least 1 required",
    ),
    (
        _send(recipients=bindings.FaxJobRecipients(item=[ONE, "x"])),  # type: ignore[arg-type]
        "/SendFax/Recipients/item[2]",
        "must be a FaxJobRecipient, not str",
    ),
    (
        _send(
            recipients=bindings.FaxJobRecipients(
                item=(ONE, bindings.FaxJobRecipient("2", "", None, "", ""))  # type: ignore[arg-type]
            )
        ),
        "/SendFax/Recipients/item[2]/RecipTitle",
        "is required",
    ),
    (
        _send(fax_job_files=bindings.FaxJobFiles(item=(bindings.FaxJobFile(1, 101, "text"),))),  # type: ignore[arg-type]
        "/SendFax/FaxJobFiles/item[1]/FileData",
        "must be bytes, not str",
    ),
    (
        _send(fax_job_files=bindings.FaxJobFiles(item=(bindings.FaxJobFile(1, 2**40, b"x"),))),
        "/SendFax/FaxJobFiles/item[1]/FileTypeId",
        f"{2**40} {INT_RANGE}",
    ),
]


@pytest.mark.parametrize(("request_", "path", "problem"), WRITER_REFUSALS)
def test_the_writer_refuses_what_the_schema_refuses(
    request_: object, path: str, problem: str
) -> None:
    with pytest.raises(BadInputError) as info:
        envelope(request_)
    assert (info.value.field, info.value.problem) == (path, problem)


def _written(cls: type[Any], values: tuple[Any, ...], *, made: bool) -> object:
    from faxws._protocol import writer as _wire

    top = _wire.writer(cls)
    single = top._single
    if not made:
        top._single = None
    try:
        return _wire.envelope_of(cls, values).whole
    except BadInputError as exc:
        return ("refused", exc.field, exc.problem)
    finally:
        top._single = single


class _OwnStr(str):
    """A str subclass whose str() differs from its text."""

    def __str__(self) -> str:
        return "other"


_ANY_VALUE = st.one_of(
    st.text(st.sampled_from("ab&<>' \"\u00e9"), max_size=4),
    st.integers(-(2**64), 2**64),
    st.booleans(),
    st.none(),
    st.sampled_from([_OwnStr("x&"), 1.5, b"x"]),
)


_TEXT = st.text(st.sampled_from("ab&<>' \"\u00e9"), max_size=4)
_MOSTLY_TEXT = st.one_of(_TEXT, _TEXT, _TEXT, _ANY_VALUE)
_INT_EDGES = st.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63])
_MOSTLY_INT = st.one_of(st.integers(-(2**32), 2**32), _INT_EDGES, _ANY_VALUE)


@SETTINGS
@given(values=st.tuples(_MOSTLY_TEXT, _MOSTLY_TEXT, _MOSTLY_TEXT, _MOSTLY_INT, _MOSTLY_TEXT))
def test_a_type_of_single_values_is_written_alike_by_its_made_function(
    values: tuple[Any, ...],
) -> None:
    """A report request (single strings and an int) is written by a function made for its
    type; whatever the values, the bytes (or the refusal) are those of the general writer."""
    from faxws._protocol import writer as _wire

    cls = bindings.GetFaxBroadcastReport
    assert _wire.writer(cls)._single is not None
    assert _written(cls, values, made=True) == _written(cls, values, made=False)


def test_a_request_the_writer_writes_is_valid() -> None:
    for request_ in (_report(), _send()):
        assert validate(b"".join(envelope(request_))) == []


def test_the_clients_tuple_forms_follow_the_bindings_order() -> None:
    """The client writes recipients and files as tuples of values: their order must be the
    order of the bindings' fields, or values would land in the wrong elements."""
    from faxws import client

    fields = [f.attr for f in bindings.FaxJobRecipient.__xml__.fields]
    recipient = Recipient("+1 555 0100", "Company", "Title", "Name", "CSID")
    by_field = dict(zip(fields, client._RECIPIENT_VALUES(recipient), strict=True))
    assert by_field == {
        "recip_fax_number": "+1 555 0100",
        "recip_company": "Company",
        "recip_title": "Title",
        "recip_name": "Name",
        "recip_secure_csid": "CSID",
    }
    (row,) = client._files([FaxFile(b"%PDF", 101, index=7)])
    files = dict(zip([f.attr for f in bindings.FaxJobFile.__xml__.fields], row, strict=True))
    assert (files["file_index"], files["file_type_id"]) == (7, 101)


# -- answers the schema finds valid are read by a shorter path: the same values ----------------

XML_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\ufffe\uffff"),
    max_size=8,
).filter(lambda t: not any(ord(c) < 0x20 and c not in "\t\n\r" for c in t))


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@st.composite
def valid_answer(draw: st.DrawFn) -> tuple[bytes, str]:
    """A valid FaxSendResponse or GetFaxBroadcastReportResponse, with any prefixes, white
    space and values the schema allows."""
    p = draw(st.sampled_from(["", "f:", "ns1:"]))
    ns = f' xmlns{":" + p[:-1] if p else ""}="urn:FaxWS"'
    ws = draw(st.sampled_from(["", " ", "\n  "]))

    def el(name: str, text: str) -> str:
        return (
            f"<{p}{name}/>"
            if text == "" and draw(st.booleans())
            else (f"<{p}{name}>{text}</{p}{name}>")
        )

    flag = draw(st.sampled_from(["true", "false", "1", "0", " true ", "\n0\n"]))
    code = str(draw(st.integers(-(2**31), 2**31 - 1)))
    error = (
        f"<{p}WSError>{ws}{el('ErrorCode', f' {code} ')}{ws}"
        f"{el('ErrorString', _esc(draw(XML_TEXT)))}{ws}</{p}WSError>"
    )
    if draw(st.booleans()):
        ids = "".join(
            f"<{p}item>{ws}{el('JobId', _esc(j))}{ws}</{p}item>{ws}"
            for j in draw(st.lists(XML_TEXT, max_size=5))
        )
        ttfp = draw(st.integers(-(2**63), 2**63 - 1))
        body = (
            f"<{p}FaxSendResponse{ns}>{ws}{el('return', flag)}{ws}<{p}FaxJobIds>{ws}{ids}"
            f"</{p}FaxJobIds>{ws}{el('TTFP', f'{ws}{ttfp}{ws}')}{ws}{error}{ws}"
            f"</{p}FaxSendResponse>"
        )
        operation = "SendFax"
    else:
        body = (
            f"<{p}GetFaxBroadcastReportResponse{ns}>{ws}{el('return', flag)}{ws}{error}{ws}"
            f"</{p}GetFaxBroadcastReportResponse>"
        )
        operation = "GetFaxBroadcastReport"
    envelope_ = (
        '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap='
        f'"http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>{body}</soap:Body>'
        "</soap:Envelope>"
    )
    return envelope_.encode(), operation


@SETTINGS
@given(answer=valid_answer())
def test_a_valid_answer_reads_the_same_by_either_path(answer: tuple[bytes, str]) -> None:
    from faxws._protocol.reader import _reader, parse_document, soap_payload

    data, operation = answer
    payload = soap_payload(parse_document(data))
    reader = _reader(bindings.OPERATIONS[operation].output)
    assert validate(data) == []
    assert reader.trusts(payload)
    assert reader.trusted(payload) == reader.read(payload, [])


def _read_alike(operation: str, status: int, data: bytes) -> None:
    """Both short ways (either parser) come to what the general reading comes to."""
    general = _interpret_outcome(operation, status, data, short=False)
    assert _interpret_outcome(operation, status, data, short=True) == general
    assert _interpret_outcome(operation, status, data, short=True, keep_lock=False) == general


def _mutate(root: Any, data: st.DataObject) -> None:
    """Up to three edits anywhere below ``root``: children swapped, an unknown element, a
    comment, a value changed, an element dropped or doubled."""
    from lxml import etree

    elements = [root, *root.iterdescendants()]
    for _ in range(data.draw(st.integers(0, 3))):
        target = data.draw(st.sampled_from(elements))
        edit = data.draw(st.sampled_from(["swap", "unknown", "comment", "text", "drop", "copy"]))
        children = list(target)
        if edit == "swap" and len(children) > 1:
            i, j = data.draw(st.permutations(range(len(children))))[:2]
            children[i].addnext(etree.Element("marker"))
            marker = children[i].getnext()
            children[j].addnext(children[i])
            marker.addnext(children[j])
            target.remove(marker)
        elif edit == "unknown":
            target.insert(data.draw(st.integers(0, len(children))), etree.Element("{urn:FaxWS}X"))
        elif edit == "comment":
            target.insert(data.draw(st.integers(0, len(children))), etree.Comment("c"))
        elif edit == "text" and not children:
            target.text = data.draw(st.sampled_from(["x", "2147483648", "", " 1 ", "false", "7"]))
        elif edit == "drop" and children:
            target.remove(data.draw(st.sampled_from(children)))
        elif edit == "copy" and children:
            child = data.draw(st.sampled_from(children))
            child.addnext(copy.deepcopy(child))


def _interpret_outcome(
    operation: str, status: int, data: bytes, *, short: bool, keep_lock: bool = True
) -> object:
    """What ``interpret`` makes of an answer: the short way where it applies (with the
    parser ``keep_lock`` chooses), or (short False) lxml's general reading alone, the
    standard library's parser not even tried."""
    from faxws._protocol import reader as _reader
    from faxws._protocol import safexml as _safexml

    redact: Callable[[str], str] = lambda text: text  # noqa: E731
    made, plain = _reader._answer_reader, _safexml.parse_plain
    if not short:
        _reader._answer_reader = lambda cls: lambda root: None  # type: ignore[assignment]
        _safexml.parse_plain = lambda data, namespaces: None  # type: ignore[assignment]
    try:
        return _reader.interpret(
            bindings.OPERATIONS[operation], status, data, "r", redact, keep_lock=keep_lock
        )
    except FaxWSError as exc:
        return (type(exc).__name__, str(exc))
    finally:
        _reader._answer_reader, _safexml.parse_plain = made, plain


@SETTINGS
@given(answer=valid_answer(), data=st.data())
def test_successful_answers_are_read_alike_by_the_made_reader(
    answer: tuple[bytes, str], data: st.DataObject
) -> None:
    """Small answers are read by a function made per output class when they are successes
    written as answers are; every other answer goes the general way. The outcome (the
    result, or the error) is the same either way, for valid answers and edited ones."""
    from lxml import etree

    raw, operation = answer
    root = etree.fromstring(raw)
    _mutate(root, data)
    # In US-ASCII, other characters are written as references: the answer is plain ASCII,
    # which the standard library's parser reads first (faxws._protocol.safexml.parse_plain).
    encoding = data.draw(st.sampled_from(["utf-8", "us-ascii"]))
    edited = etree.tostring(root, xml_declaration=True, encoding=encoding)
    status = data.draw(st.sampled_from([200, 200, 200, 202, 500]))
    _read_alike(operation, status, edited)


#: Edits of an answer's text: content where an element's content may be (which often leaves
#: it well-formed), attributes in start tags, and anything anywhere (which often does not).
CONTENT = [
    "<!--c-->", "<?pi x?>", "<![CDATA[<&>]]>", "&amp;", "&#65;", "&#x1F600;", " ", "\n",
    "\r\n", "\t", "<x/>", "<f:x/>", '<x xmlns="urn:FaxWS"/>', "<return>true</return>", "x",
    "0", "1", "true", "<WSError/>", "&#0;", "&bogus;", "\x7f", "\xe9",
]  # fmt: skip
ATTRIBUTES = ['a="1"', 'xmlns:g="urn:FaxWS"', 'xmlns=""', 'xmlns="urn:FaxWS"', 'g:a="1"']
ANYTHING = [
    "<", ">", "/", "&", ";", "=", '"', "!", "?", "-", "]", ":", "&lt;", "<!DOCTYPE a>",
    '<!ENTITY e "x">', "<?xml?>", 'encoding="utf-16"', "\x00", "\ud800",
]  # fmt: skip


@SETTINGS
@given(answer=valid_answer(), data=st.data())
def test_answers_edited_as_bytes_are_read_alike_by_either_parser(
    answer: tuple[bytes, str], data: st.DataObject
) -> None:
    """Whatever bytes an answer holds, reading it the short way (the standard library's
    parser and the made reader, where they take it) comes to what lxml's general reading
    comes to: the same result or the same error. The edits leave some answers well-formed
    and make others malformed, oddly declared or not namespace-well-formed."""
    raw, operation = answer
    # Values as references: the answer is ASCII, as the standard library's parser takes it.
    text = "".join(c if c.isascii() else f"&#{ord(c)};" for c in raw.decode())
    if data.draw(st.booleans()):  # a success, which only the short way could read
        text = re.sub(r"<((?:\w+:)?return)/>", r"<\1>true</\1>", text)
        text = re.sub(r"(return>)[^<]*<", r"\1true<", text)
        text = re.sub(r"(ErrorCode>)[^<]*<", r"\g<1>0<", text)
    for _ in range(data.draw(st.integers(1, 3))):
        ends = [i + 1 for i, c in enumerate(text) if c == ">"][1:-1]  # inside the envelope
        # Where a start tag ends: a ">" after a "<" that opens no end tag, declaration or
        # processing instruction, and not after "/".
        starts = [
            i
            for i, c in enumerate(text)
            if c == ">"
            and text[i - 1] != "/"
            and (opened := text.rfind("<", 0, i)) >= 0
            and text[opened + 1 : opened + 2] not in ("/", "?", "!")
        ]
        kind = data.draw(st.sampled_from(["content", "content", "attribute", "anything"]))
        if kind == "content":
            at = data.draw(st.sampled_from(ends))
            piece = "".join(data.draw(st.lists(st.sampled_from(CONTENT), min_size=1, max_size=3)))
        elif kind == "attribute":
            at = data.draw(st.sampled_from(starts))
            piece = " " + data.draw(st.sampled_from(ATTRIBUTES))
        else:
            at = data.draw(st.integers(0, len(text)))
            piece = data.draw(st.sampled_from(ANYTHING + CONTENT))
        cut = data.draw(st.sampled_from([0, 0, 0, 1, 3])) if kind == "anything" else 0
        text = text[:at] + piece + text[at + cut :]
    edited = text.encode("utf-8", "surrogatepass")
    _read_alike(operation, 200, edited)


@pytest.mark.parametrize(
    "data",
    [
        b'<?xml version="1.0" encoding="utf-8"?><a>x</a>',
        b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<a>x</a>",
        b'<?xml version="1.0"?><a>x</a>',
        b'<?xml version="1.0" encoding="US-ASCII"?><a>x</a>',
        b"<a>x</a>",
        b"\n<a>x</a>",
    ],
)
def test_plain_answers_are_parsed_by_the_standard_library(data: bytes) -> None:
    from faxws._protocol.reader import PLAIN_NAMESPACES
    from faxws._protocol.safexml import parse_plain

    root = parse_plain(data, PLAIN_NAMESPACES)
    assert root is not None
    assert (root.tag, root.text) == ("a", "x")


@pytest.mark.parametrize(
    "data",
    [
        '<?xml version="1.0" encoding="utf-8"?><a>\u00e9</a>'.encode(),  # not ASCII
        "<a>\u00e9</a>".encode("latin-1"),
        b'<?xml version="1.0" encoding="utf-16"?><a>x</a>',  # ASCII bytes, declared otherwise
        b'<?xml version="1.0" encoding="iso-8859-1"?><a>x</a>',
        b'<?xml version="1.1"?><a>x</a>',
        b'<?xml-stylesheet href="s.xsl"?><a>x</a>',
        b'<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>',
        b"<a>&undeclared;</a>",
        b"<p:a>x</p:a>",  # an undeclared prefix
        b"<a>x</b>",
        b"",
        b"\xef\xbb\xbf<a>x</a>",  # a byte-order mark is not ASCII
    ],
)
def test_anything_else_is_left_to_lxml(data: bytes) -> None:
    from faxws._protocol.reader import PLAIN_NAMESPACES
    from faxws._protocol.safexml import parse_plain

    assert parse_plain(data, PLAIN_NAMESPACES) is None


def _redeclared(declaration: str, text: str = "x") -> str:
    """The report answer with ``text`` as its ErrorString and another XML declaration."""
    data = report_response(text=text).decode()
    return data.replace('<?xml version="1.0" encoding="UTF-8"?>', declaration, 1)


_DTD = '<!DOCTYPE a [<!ENTITY e "expanded">]>'


@pytest.mark.parametrize(
    "data",
    [
        # What libxml2 refuses and expat would take: a namespace name that is not a URI, an
        # xml:id that is not a name, or one given twice.
        report_response().replace(b"<return>", b'<return xmlns:p="a b">'),
        report_response().replace(b"<return>", b'<return xmlns:p="%">'),
        report_response().replace(b'xmlns="urn:FaxWS"', b'xmlns="urn:FaxWS" xmlns:q="a^b"'),
        report_response().replace(b"<return>", b'<return xml:id="1">'),
        report_response().replace(b"<return>", b'<return xml:id="">'),
        report_response()
        .replace(b"<return>", b'<return xml:id="a">')
        .replace(b"<WSError>", b'<WSError xml:id="a">'),
        # UTF-16 without a byte-order mark is ASCII bytes (every high byte zero): expat would
        # read it as UTF-16, and the DTD in it, which the byte scan cannot see.
        _redeclared("").encode("utf-16-le"),
        _redeclared("").encode("utf-16-be"),
        _redeclared('<?xml version="1.0" encoding="UTF-16"?>' + _DTD, "&e;").encode("utf-16-le"),
        # ... with an encoding expat cannot load (it raised, where lxml reads the answer)
        _redeclared('<?xml version="1.0" encoding="rot13"?>').encode("utf-16-le"),
        _redeclared('<?xml version="1.0" encoding="big5"?>').encode("utf-16-le"),
    ],
)
def test_what_only_libxml2_refuses_or_reads_is_left_to_it(data: bytes) -> None:
    from faxws._protocol.reader import PLAIN_NAMESPACES
    from faxws._protocol.safexml import parse_plain

    assert parse_plain(data, PLAIN_NAMESPACES) is None
    _read_alike("GetFaxBroadcastReport", 200, data)
    short = _interpret_outcome("GetFaxBroadcastReport", 200, data, short=True)
    assert "expanded" not in repr(short)


def test_the_standard_library_gives_the_text_lxml_gives() -> None:
    """Comments and processing instructions dropped, the text around them joined, CDATA and
    references read as text, tags as {namespace}local: as the lxml parser faxws uses."""
    from lxml import etree

    from faxws._protocol.reader import PLAIN_NAMESPACES
    from faxws._protocol.safexml import parse_plain, parser

    soap = "http://schemas.xmlsoap.org/soap/envelope/"
    data = (
        f'<r xmlns="urn:FaxWS" xmlns:p="{soap}"><a>x<!--c-->y<?pi z?>z<![CDATA[<&>]]>&#65;&amp;'
        "</a><p:b>\r\n t </p:b><c/></r>"
    ).encode()
    plain = parse_plain(data, PLAIN_NAMESPACES)
    assert plain is not None
    lx = etree.fromstring(data, parser())
    assert [(e.tag, e.text) for e in plain.iter()] == [(e.tag, e.text) for e in lx.iter()]
    tags = ["{urn:FaxWS}r", "{urn:FaxWS}a", f"{{{soap}}}b", "{urn:FaxWS}c"]
    assert [e.tag for e in plain.iter()] == tags


def test_answers_as_written_are_read_without_lxml(monkeypatch: pytest.MonkeyPatch) -> None:
    """A successful answer as the service writes it is read without lxml, which would hand
    the interpreter lock to another thread three times; a failure still takes lxml's way."""
    from faxws._protocol import reader as _reader
    from faxws._protocol import safexml as _safexml

    def no_lxml() -> None:
        raise AssertionError("lxml parsed the answer")

    monkeypatch.setattr(_safexml, "parser", no_lxml)
    report = _reader.interpret(bindings.GET_FAX_BROADCAST_REPORT, 200, report_response(), "r", str)
    assert report.return_ is True
    sent = _reader.interpret(bindings.SEND_FAX, 200, send_response(["J1", "J2"]), "r", str)
    assert [item.job_id for item in sent.fax_job_ids.item] == ["J1", "J2"]
    # as gSOAP writes an envelope: the encoding and schema namespaces declared too
    toolkit = report_response().replace(
        b"<SOAP-ENV:Envelope ",
        b'<SOAP-ENV:Envelope xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" '
        b'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        b'xmlns:xsd="http://www.w3.org/2001/XMLSchema" ',
    )
    assert toolkit != report_response()
    assert _reader.interpret(bindings.GET_FAX_BROADCAST_REPORT, 200, toolkit, "r", str).return_
    with pytest.raises(AssertionError, match="lxml parsed"):
        _reader.interpret(bindings.SEND_FAX, 200, send_response([], ok=False), "r", str)


@pytest.mark.parametrize(
    ("operation", "old", "new"),
    [
        ("GetFaxBroadcastReport", b"</WSError>", b"</WSError><WSError/>"),  # one too many
        ("GetFaxBroadcastReport", b"</WSError>", b"</WSError><Later/>"),  # unknown, logged
        ("GetFaxBroadcastReport", b"<return>true", b"<return>false"),  # ServiceError
        ("GetFaxBroadcastReport", b"<ErrorCode>0", b"<ErrorCode>-5019"),  # ServiceError
        ("GetFaxBroadcastReport", b"<ErrorCode>0", b"<ErrorCode>x"),  # not an int
        ("GetFaxBroadcastReport", b"<return>true", b"<return> 1 "),  # still true
        ("GetFaxBroadcastReport", b"<SOAP-ENV:Body>", b"<SOAP-ENV:Header/><SOAP-ENV:Body>"),
        ("SendFax", b"<f:TTFP>45", b"<f:TTFP>9223372036854775808"),  # out of range
        ("SendFax", b"</f:FaxJobIds>", b"</f:FaxJobIds><f:FaxJobIds/>"),
        ("SendFax", b"<f:JobId>J1</f:JobId>", b"<f:JobId>J1</f:JobId><f:Extra/>"),  # logged
        ("SendFax", b"<f:item><f:JobId>J1", b"<f:item><!--c--><f:JobId>J1"),
    ],
)
def test_answers_off_the_short_way_are_read_as_before(
    operation: str, old: bytes, new: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    data = send_response(["J1"]) if operation == "SendFax" else report_response()
    assert old in data
    data = data.replace(old, new)
    outcomes, logs = [], []
    for short, keep_lock in ((False, True), (True, True), (True, False)):
        caplog.clear()
        with caplog.at_level("DEBUG", logger="faxws"):
            outcomes.append(
                _interpret_outcome(operation, 200, data, short=short, keep_lock=keep_lock)
            )
        logs.append([r.getMessage() for r in caplog.records])
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert logs[0] == logs[1] == logs[2]


def test_the_made_reader_reads_the_answers_as_written() -> None:
    from faxws._protocol.reader import _answer_reader, parse_document

    for data, cls in (
        (send_response(["J1", "J2"], ttfp=30), bindings.FaxSendResponse),
        (report_response(), bindings.GetFaxBroadcastReportResponse),
    ):
        data = data.replace(b"f:", b"").replace(b"xmlns:f=", b"xmlns=")
        assert _answer_reader(cls)(parse_document(data)) is not None


@pytest.mark.parametrize(
    "edit",
    [
        (b"<TTFP>30</TTFP>", b"<TTFP>30</TTFP><Extra/>"),  # unknown element: general path
        (b"<JobId>J1</JobId>", b"<JobId>J1</JobId><JobId>J2</JobId>"),  # too many
        (b"<TTFP>30</TTFP>", b"<TTFP>x</TTFP>"),  # not a long
    ],
)
def test_an_answer_the_schema_refuses_takes_the_general_path(edit: tuple[bytes, bytes]) -> None:
    from conftest import send_response
    from faxws._protocol.reader import _reader, parse_document, soap_payload

    data = send_response(["J1"], ttfp=30).replace(b"f:", b"").replace(b"xmlns:f=", b"xmlns=")
    assert edit[0] in data
    payload = soap_payload(parse_document(data.replace(*edit)))
    assert not _reader(bindings.FaxSendResponse).trusts(payload)


# -- found by attacking the above: each a case of its class --------------------------------------


class _Adds(str):
    """Like markupsafe.Markup: its own + escapes the other side."""

    def __add__(self, other: object) -> str:
        return str.__add__(self, str(other).replace("<", "&lt;"))

    def __radd__(self, other: object) -> str:
        return str(other).replace("<", "&lt;") + str(self)


class _Falsy(str):
    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0


class _Named(str):
    def __str__(self) -> str:
        return "something else"

    def __format__(self, spec: str) -> str:
        return "something else"


class _Member(str, enum.Enum):
    MAIN = "ACME"


@pytest.mark.parametrize("kind", [_Adds, _Falsy, _Named, lambda text: _Member(text)])
@FACES
def test_a_str_subclass_is_sent_as_its_text(face: str, kind: Callable[[str], str]) -> None:
    """Whatever a str subclass does with +, bool(), len(), str() or format(), the bytes sent
    are those of its text, as for a plain str."""

    def call(company: str) -> Callable[[Any], Any]:
        recipient = Recipient("+1 555 0100", company=company, name="Bob")
        return lambda c: c.send_fax([recipient, "+1 555 0101"], [FaxFile(b"%PDF", 101)])

    plain = _outcome(face, call("ACME"))
    assert plain is not None
    assert _outcome(face, call(kind("ACME"))) == plain


def test_a_recipient_subclass_cannot_skip_the_checks() -> None:
    class Lenient(Recipient):
        def __post_init__(self) -> None:
            pass

    for recipient, field, problem in [
        (Lenient("+1 555 0100", name="Dr.\x0cNo"), "recipients[0].name", "contains U+000C"),
        (Lenient("---"), "recipients[0].fax_number", "'---' has no digits"),
        (Lenient("+1 555 0100", title=7), "recipients[0].title", "must be a str, not int"),  # type: ignore[arg-type]
    ]:
        client = FaxClient("https://fax.example.com", user_id="u", pin="1")
        client._caller.call = _sync_call
        with pytest.raises(BadInputError) as info:
            client.send_fax([recipient], [FaxFile(b"%PDF", 101)])
        client.close()
        assert info.value.field == field
        assert info.value.problem.startswith(problem)


def test_the_job_id_count_is_that_of_the_request_sent(caplog: pytest.LogCaptureFixture) -> None:
    """A sequence whose length changes after the request was built (another thread editing
    the caller's list) does not make a right answer look wrong."""
    from faxws._http.shared import RawResponse

    class Growing(list[str]):
        def __len__(self) -> int:
            return super().__len__() + (1 if getattr(self, "built", False) else 0)

    numbers = Growing(["+1 555 0100", "+1 555 0101"])
    client = FaxClient("https://fax.example.com", user_id="u", pin="1")

    def answer(*args: Any, **kw: Any) -> RawResponse:
        numbers.built = True  # type: ignore[attr-defined]
        return RawResponse(200, {}, send_response(["J1", "J2"]), 0.0)

    client._caller.call = answer
    caplog.set_level("WARNING", logger="faxws")
    assert client.send_fax(numbers, [FaxFile(b"%PDF", 101)]).job_ids == ("J1", "J2")
    assert not [r for r in caplog.records if "job ids for" in r.getMessage()]


@pytest.mark.parametrize("padding", [0, 3000])
def test_an_integer_of_many_leading_zeros_is_read_alike_by_both_paths(padding: int) -> None:
    """The general reader refuses integers of more than 25 characters; the path for valid
    answers of 2 KiB or more does too, so the answer's size decides nothing."""
    from faxws import ProtocolError
    from faxws._protocol.reader import interpret

    data = send_response(["J1"], ttfp=45).replace(b">45<", b">" + b"0" * 30 + b"45<")
    data = data.replace(b"</f:FaxSendResponse>", b"</f:FaxSendResponse>" + b" " * padding)
    assert len(data) >= 2048 or padding == 0
    with pytest.raises(ProtocolError) as info:
        interpret(bindings.SEND_FAX, 200, data, "rid", str)
    assert info.value.message == "/FaxSendResponse/TTFP is not an integer: '" + "0" * 30 + "45'"


def test_an_empty_type_is_written_as_before() -> None:
    from dataclasses import dataclass
    from typing import ClassVar

    from faxws._protocol.xsd import XmlField, XmlType

    @dataclass(frozen=True)
    class Empty:
        __xml__: ClassVar[XmlType] = XmlType("Empty", ())

    @dataclass(frozen=True)
    class Holder:
        item: tuple[Empty, ...]
        __xml__: ClassVar[XmlType] = XmlType(
            "Holder", (XmlField("item", "item", "", Empty, 0, None),)
        )

    body = b"".join(envelope(Holder((Empty(), Empty()))))
    assert b'<Holder xmlns="urn:FaxWS"><item></item><item></item></Holder>' in body


def test_a_lone_surrogate_past_the_checks_is_refused_with_nothing_chained() -> None:
    request = bindings.GetFaxBroadcastReport("u", "SECRET-PIN", "J\ud800", 0, "")
    with pytest.raises(BadInputError) as info:
        envelope(request)
    assert (info.value.field, info.value.problem) == (
        "/GetFaxBroadcastReport",
        "contains U+D800, which XML cannot carry",
    )
    assert info.value.__context__ is None
    assert info.value.__cause__ is None
