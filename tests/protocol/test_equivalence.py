"""The client does not parse its requests back for a schema check: whatever it sends, the
schema accepts. These tests are the proof. Arbitrary input (any text, any number, values of
the wrong type) goes through the public calls of both clients; each call either refuses it
with BadInputError before anything reaches the transport, or hands the transport a body that
``faxws.validate`` (the XSD, with lxml) finds valid, byte for byte."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import send_response
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


def _rows_written(rows: list[Any], *, by_rows: bool) -> object:
    """The body (or the refusal) for a SendFax naming ``rows``, written by the rows writer
    or (``by_rows`` False) by the general writer alone."""
    from faxws._protocol import writer as _wire

    recipient = _wire.writer(bindings.FaxJobRecipient)
    tags = recipient._text_tags
    if not by_rows:
        recipient._text_tags = None
    request = _send(recipients=_wire.as_values(bindings.FaxJobRecipients, (tuple(rows),)))
    try:
        return b"".join(envelope(request))
    except BadInputError as exc:
        return ("refused", exc.field, exc.problem)
    finally:
        recipient._text_tags = tags


class _OwnStr(str):
    """A str subclass whose str() differs from its text."""

    def __str__(self) -> str:
        return "other"


_TEXT = st.text(st.sampled_from("ab&<>' \"\u00e9"), max_size=4)
_ANY_VALUE = st.one_of(
    _TEXT, st.integers(-(2**64), 2**64), st.none(), st.sampled_from([_OwnStr("x&"), 1.5, b"x"])
)
_MOSTLY_TEXT = st.one_of(_TEXT, _TEXT, _TEXT, _ANY_VALUE)
_ROW = st.one_of(
    st.tuples(*[_MOSTLY_TEXT] * 5),
    st.tuples(*[_TEXT] * 5),
    st.tuples(*[_TEXT] * 5).map(lambda row: bindings.FaxJobRecipient(*row)),
    st.lists(_TEXT, max_size=6).map(tuple),  # a tuple of the wrong length
)


@SETTINGS
@given(rows=st.lists(_ROW, min_size=1, max_size=4))
def test_many_recipients_are_written_alike_by_the_rows_writer(rows: list[Any]) -> None:
    """Recipients (by the thousand) are written by a function made for their type; whatever
    the values, the bytes (or the refusal) are those of the general writer."""
    from faxws._protocol import writer as _wire

    assert _wire.writer(bindings.FaxJobRecipient)._text_tags is not None
    assert _rows_written(rows, by_rows=True) == _rows_written(rows, by_rows=False)


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


# -- answers: the one reader reads what an independent reading finds -----------------------------

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


def _expected(data: bytes, operation: str) -> object:
    """What the answer holds, read by local names with lxml's XPath: the job ids and TTFP of
    a success, or the ServiceError's code and text."""
    from lxml import etree

    root = etree.fromstring(data)

    def texts(name: str) -> list[str]:
        return [e.text or "" for e in root.iter(f"{{urn:FaxWS}}{name}")]

    code = int(texts("ErrorCode")[0].strip() or "0")
    ok = texts("return")[0].strip() in ("true", "1")
    if not ok or code != 0:
        message = texts("ErrorString")[0].strip() or ("" if ok else "the service returned false")
        return ("ServiceError", code, message)
    if operation == "SendFax":
        return (tuple(texts("JobId")), int(texts("TTFP")[0]))
    return True


@SETTINGS
@given(answer=valid_answer())
def test_a_valid_answer_reads_what_it_holds(answer: tuple[bytes, str]) -> None:
    from faxws import ServiceError
    from faxws._protocol.reader import interpret

    data, operation = answer
    assert validate(data) == []
    try:
        result = interpret(bindings.OPERATIONS[operation], 200, data, "r", str)
    except ServiceError as exc:
        outcome: object = ("ServiceError", exc.code, exc.error_string)
    else:
        outcome = (
            (tuple(i.job_id for i in result.fax_job_ids.item), result.ttfp)
            if operation == "SendFax"
            else result.return_
        )
    assert outcome == _expected(data, operation)


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
    from faxws._http.shared import Response

    class Growing(list[str]):
        def __len__(self) -> int:
            return super().__len__() + (1 if getattr(self, "built", False) else 0)

    numbers = Growing(["+1 555 0100", "+1 555 0101"])
    client = FaxClient("https://fax.example.com", user_id="u", pin="1")

    def answer(*args: Any, **kw: Any) -> Response:
        numbers.built = True  # type: ignore[attr-defined]
        return Response(200, {}, send_response(["J1", "J2"]), 0.0)

    client._caller.call = answer
    caplog.set_level("WARNING", logger="faxws")
    assert client.send_fax(numbers, [FaxFile(b"%PDF", 101)]).job_ids == ("J1", "J2")
    assert not [r for r in caplog.records if "job ids for" in r.getMessage()]


@pytest.mark.parametrize("padding", [0, 3000])
def test_an_integer_of_many_leading_zeros_is_refused_whatever_the_size(padding: int) -> None:
    """The reader refuses integers of more than 25 characters, in small answers and large."""
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


#: Elements of FaxWS (or not), a comment, and text ("#" and the text).
_NODE = st.sampled_from(["item", "JobId", "Other", "{urn:Else}item", "comment", "#x", "# "])
_TREE = st.recursive(
    st.tuples(_NODE, st.just(())),
    lambda children: st.tuples(_NODE, st.lists(children, max_size=3).map(tuple)),
    max_leaves=12,
)
_AS_WRITTEN = st.lists(st.text(st.sampled_from("J1 \u00e9"), max_size=3), max_size=6).map(
    lambda ids: tuple(("item", (("JobId", (("#" + j, ()),)),)) for j in ids)
)


def _build(parent: Any, nodes: tuple[Any, ...]) -> None:
    from lxml import etree

    for name, children in nodes:
        if name == "comment":
            parent.append(etree.Comment("c"))
        elif name[0] == "#":
            if len(parent):
                parent[-1].tail = (parent[-1].tail or "") + name[1:]
            else:
                parent.text = (parent.text or "") + name[1:]
        else:
            child = etree.SubElement(parent, name if name[0] == "{" else f"{{urn:FaxWS}}{name}")
            _build(child, children)


@SETTINGS
@given(nodes=st.one_of(_AS_WRITTEN, st.lists(_TREE, max_size=4).map(tuple)))
# The tags in order those of two items, the second inside the first's job id.
@example(nodes=(("item", ()), ("JobId", (("item", ()), ("JobId", ())))))
@example(nodes=(("item", (("JobId", (("item", (("JobId", ()),)),)),)),))
def test_many_job_ids_are_read_alike_by_the_list_reader(nodes: tuple[Any, ...]) -> None:
    """Job ids (by the thousand) are read in one pass when the list is exactly as answers
    write it; whatever the list holds, the result (or the refusal) is the general reading's."""
    from lxml import etree

    from faxws._protocol.reader import ReadError, _reader, read_payload

    element = etree.Element("{urn:FaxWS}FaxJobIds")
    _build(element, nodes)
    reader = _reader(bindings.FaxJobIds)

    def outcome() -> object:
        try:
            return read_payload(element, bindings.FaxJobIds)
        except ReadError as exc:
            return ("refused", exc.message)

    fast = outcome()
    one_pass, reader._list = reader._list, None
    try:
        assert outcome() == fast
    finally:
        reader._list = one_pass


class _Translates(str):
    """Its own translate() does not escape: it writes other markup."""

    def translate(self, table: Any) -> str:
        return "x</RecipName><Injected>1</Injected><RecipName>y"


class _ClaimsStr(str):
    """Claims to be exactly a str, and formats as markup."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str

    def __format__(self, spec: str) -> str:
        return "</JobId><Injected/><JobId>"

    def __str__(self) -> str:
        return "</JobId><Injected/><JobId>"


class _OwnInt(int):
    """Claims to be an int, and says another number when asked."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int

    def __int__(self) -> int:
        return 2**40

    def __format__(self, spec: str) -> str:
        return "<Injected/>"


@pytest.mark.parametrize("text", ["Tom & Jerry", "Tom and Jerry"])
@pytest.mark.parametrize("kind", [_Translates, _ClaimsStr])
def test_a_str_subclass_is_written_as_the_characters_it_holds(kind: type[str], text: str) -> None:
    """Whatever a subclass does with translate(), __class__, format() or str(), both writers
    write the characters it holds, escaped, and the request stays valid."""
    many = [("+1 555 0100", "", "", kind(text), "")] * 3
    plain = [("+1 555 0100", "", "", text, "")] * 3
    for by_rows in (True, False):
        assert _rows_written(many, by_rows=by_rows) == _rows_written(plain, by_rows=by_rows)
    report = b"".join(envelope(_report(job_id=kind(text))))
    assert report == b"".join(envelope(_report(job_id=text)))
    assert validate(report) == []


def test_an_int_subclass_is_written_as_the_number_it_holds() -> None:
    body = b"".join(envelope(_report(recipient_type=_OwnInt(3))))
    assert body == b"".join(envelope(_report(recipient_type=3)))
