"""An element's attributes and namespace declarations count together against one bound, in
every reader that bounds them, and the count comes before the work that grows with the
square of them: an element with thousands is refused at once."""

from __future__ import annotations

from typing import Any

import pytest
from lxml import etree

from crowded import ALLOWED, IDS, REASON, REFUSED, envelope
from faxws._protocol.reader import payload_of
from faxws._protocol.request_reader import MAX_ATTRIBUTES, RequestReader
from faxws.errors import ProtocolError
from faxws.validation import Validator, validate

SEND_FAX = (
    '<SendFax xmlns="urn:FaxWS"><UserID>u</UserID><strPIN>p</strPIN><FaxJobFiles><item>'
    "<FileIndex>1</FileIndex><FileTypeId>101</FileTypeId><FileData>QUJD</FileData></item>"
    "</FaxJobFiles></SendFax>"
)
ANSWER = (
    '<CancelFaxResponse xmlns="urn:FaxWS"><return>true</return><WSError><ErrorCode>0</ErrorCode>'
    "<ErrorString/></WSError></CancelFaxResponse>"
)


class _Sink:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def read_request(body: bytes, chunk: int | None) -> RequestReader:
    reader = RequestReader(lambda item: _Sink())
    step = chunk or len(body)
    for start in range(0, len(body), step):
        reader.feed(body[start : start + step])
    reader.close()
    return reader


class CountingBuilder(etree.TreeBuilder):
    """lxml's tree builder, keeping the most attributes and declarations one element brought."""

    most = 0

    def start(self, tag: Any, attrib: Any, nsmap: Any = None) -> Any:
        CountingBuilder.most = max(CountingBuilder.most, len(attrib) + len(nsmap or {}))
        return super().start(tag, attrib, nsmap)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[CountingBuilder]:
    CountingBuilder.most = 0
    monkeypatch.setattr(etree, "TreeBuilder", CountingBuilder)
    return CountingBuilder


@pytest.mark.parametrize("chunk", [None, 1000])
@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in REFUSED], ids=IDS["refused"]
)
def test_the_request_reader_refuses_before_the_tree_builder_sees_them(
    counted: type[CountingBuilder], attributes: int, declarations: int, chunk: int | None
) -> None:
    reader = read_request(envelope(SEND_FAX, attributes, declarations), chunk)
    assert reader.root is None
    assert reader.refusal is not None
    assert reader.refusal.message == f"an element has {REASON}"
    assert counted.most <= MAX_ATTRIBUTES


@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in ALLOWED], ids=IDS["allowed"]
)
def test_the_request_reader_takes_an_element_at_the_bound(
    counted: type[CountingBuilder], attributes: int, declarations: int
) -> None:
    reader = read_request(envelope(SEND_FAX, attributes, declarations), None)
    assert reader.refusal is None
    assert counted.most == MAX_ATTRIBUTES


@pytest.mark.parametrize("on", ["Envelope", "Body"])
@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in REFUSED], ids=IDS["refused"]
)
def test_the_answer_reader_refuses_a_crowded_ancestor_of_the_payload(
    attributes: int, declarations: int, on: str
) -> None:
    with pytest.raises(ProtocolError) as info:
        payload_of(200, envelope(ANSWER, attributes, declarations, on), "rid", str)
    assert str(info.value).startswith(f"the response's {on} has {REASON}")


@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in ALLOWED], ids=IDS["allowed"]
)
def test_the_answer_reader_takes_an_element_at_the_bound(
    attributes: int, declarations: int
) -> None:
    payload = payload_of(200, envelope(ANSWER, attributes, declarations), "rid", str)
    assert payload.tag == "{urn:FaxWS}CancelFaxResponse"


@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in REFUSED], ids=IDS["refused"]
)
def test_validation_refuses_before_the_schema_sees_the_payload(
    monkeypatch: pytest.MonkeyPatch, attributes: int, declarations: int
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the payload went to the schema")

    monkeypatch.setattr(Validator, "schema_issues", never)
    issues = validate(envelope(ANSWER, attributes, declarations))
    assert [(i.path, i.message) for i in issues] == [("/Envelope/Body", f"has {REASON}")]


@pytest.mark.parametrize(
    ("attributes", "declarations"), [c[1:] for c in ALLOWED], ids=IDS["allowed"]
)
def test_validation_takes_an_element_at_the_bound(attributes: int, declarations: int) -> None:
    assert validate(envelope(ANSWER, attributes, declarations)) == []
