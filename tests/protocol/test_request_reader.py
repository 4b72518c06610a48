"""The core's reading of requests (the service's half of the wire): the same tree, documents
and refusals whether a body is fed whole or in chunks of any size."""

from __future__ import annotations

import base64
import codecs
from collections.abc import Callable

import pytest
from lxml import etree

from faxws._protocol.request_reader import (
    MAX_ATTRIBUTES,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_TEXT,
    Base64Decoder,
    DocumentSink,
    Refusal,
    RequestReader,
    sniff_operation,
)

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"


def send_fax(*files: str, extra: str = "", operation: str = "SendFax") -> bytes:
    items = "".join(
        f"<item><FileIndex>{i}</FileIndex><FileTypeId>101</FileTypeId><FileData>{text}"
        "</FileData></item>"
        for i, text in enumerate(files, 1)
    )
    return (
        f'<soap:Envelope xmlns:soap="{SOAP}"><soap:Body><{operation} xmlns="urn:FaxWS">'
        f"<UserID>u</UserID><strPIN>p</strPIN>{extra}<FaxJobFiles>{items}</FaxJobFiles>"
        f"</{operation}></soap:Body></soap:Envelope>"
    ).encode()


class Sink:
    """A document's bytes, and whether it was closed; counts how many are open at once."""

    open_now = 0
    most_open = 0

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        Sink.open_now += 1
        Sink.most_open = max(Sink.most_open, Sink.open_now)

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.data += data

    def close(self) -> None:
        if not self.closed:
            Sink.open_now -= 1
        self.closed = True


def read(
    body: bytes, chunk: int | None, sinks: Callable[[int], DocumentSink] | None = None
) -> tuple[RequestReader, dict[int, bytes]]:
    """``body`` fed whole (chunk None) or ``chunk`` bytes at a time."""
    documents: dict[int, Sink] = {}

    def new(item: int) -> Sink:
        documents[item] = Sink()
        return documents[item]

    reader = RequestReader(sinks or new)
    step = chunk or max(len(body), 1)
    for start in range(0, len(body), step):
        reader.feed(body[start : start + step])
    reader.close()
    if reader.refusal is None:
        assert all(sink.closed for sink in documents.values())
    return reader, {k: bytes(v.data) for k, v in documents.items()}


WAYS = [None, 1, 7, 4096]


@pytest.mark.parametrize("operation", ["SendFax", "SendFaxEx"])
@pytest.mark.parametrize("chunk", WAYS)
def test_documents_are_decoded_and_left_out_of_the_tree(chunk: int | None, operation: str) -> None:
    first, second = bytes(range(256)) * 3, b"%PDF-1.4 second"
    wrapped = "\n ".join(base64.b64encode(first).decode()[i : i + 76] for i in range(0, 1024, 76))
    body = send_fax(wrapped, base64.b64encode(second).decode(), operation=operation)
    reader, documents = read(body, chunk)
    assert reader.refusal is None
    assert documents == {1: first, 2: second}
    assert reader.operation == operation
    assert reader.root is not None
    texts = [e.text for e in reader.root.iter("{urn:FaxWS}FileData")]
    assert texts == [None, None]


BAD = [
    ("DTD", b'<!DOCTYPE x [<!ENTITY e "x">]>' + send_fax("QQ=="), "DTDs are not allowed"),
    ("padding inside", send_fax("QQ==QQ=="), "item[1]/FileData: not a valid xs:base64Binary"),
    ("not base64", send_fax("QQ*="), "item[1]/FileData: not a valid xs:base64Binary"),
    ("length", send_fax("QUJD", "QUJDR"), "item[2]/FileData: not a valid xs:base64Binary"),
    ("not XML", b"<soap:Envelope", "malformed XML"),
    (
        "too deep",
        b"<a>" * (MAX_DEPTH + 1) + b"</a>" * (MAX_DEPTH + 1),
        f"nested deeper than {MAX_DEPTH}",
    ),
    (
        "too deep, shortest",
        b"<a>" * MAX_DEPTH + b"<a/>" + b"</a>" * MAX_DEPTH,
        f"nested deeper than {MAX_DEPTH}",
    ),
    (
        "too many elements",
        b"<a>" + b"<b/>" * MAX_ELEMENTS + b"</a>",
        f"more than {MAX_ELEMENTS} elements",
    ),
    (
        "too many attributes",
        b"<a " + b" ".join(b'x%d="1"' % i for i in range(MAX_ATTRIBUTES + 1)) + b"/>",
        f"an element has more than {MAX_ATTRIBUTES} attributes",
    ),
    (
        "namespace names count as text",
        b"<a>" + b'<b xmlns:p="urn:%s"/>' % (b"x" * (MAX_TEXT // 2)) * 3 + b"</a>",
        f"more than {MAX_TEXT} characters of text",
    ),
    (
        "undeclared element prefix",
        send_fax("QUJD").replace(b"<soap:Body>", b"<soap:Header><x:Foo/></soap:Header><soap:Body>"),
        "Namespace prefix x on Foo is not defined",
    ),
    (
        "undeclared attribute prefix",
        send_fax("QUJD").replace(b"<soap:Body>", b'<soap:Body x:foo="1">'),
        "Namespace prefix x for foo on Body is not defined",
    ),
]


@pytest.mark.parametrize("chunk", [None, 1024, 65536])
@pytest.mark.parametrize(("body", "reason"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_streamed_bodies_are_refused_with_the_reason(
    body: bytes, reason: str, chunk: int | None
) -> None:
    reader, _ = read(body, chunk)
    assert reader.root is None
    assert reader.refusal is not None
    assert not reader.refusal.server_side
    assert reason in reader.refusal.message


@pytest.mark.parametrize("chunk", WAYS)
@pytest.mark.parametrize(
    "body", [b"", b"<a></b>", b"<a>&e;</a>", b"<a><b x:c='1'/></a>", b"<a>\n<x:b/></a>"]
)
def test_malformed_xml_is_refused_as_a_whole_parse_words_it(chunk: int | None, body: bytes) -> None:
    # The parser's first error and where, not the unfinished tree's complaint at the end.
    with pytest.raises(etree.XMLSyntaxError) as info:
        etree.fromstring(body)
    assert ", line " in info.value.msg
    reader, _ = read(body, chunk)
    assert reader.refusal == Refusal(f"malformed XML: {info.value.msg}")


@pytest.mark.parametrize("chunk", WAYS)
def test_depth_is_bounded_in_the_shortest_bodies_too(chunk: int | None) -> None:
    # 7 bytes for each element around the innermost, 4 for it: the fewest a body nested
    # deeper than the bound can have.
    deepest = b"<a>" * MAX_DEPTH + b"<a/>" + b"</a>" * MAX_DEPTH
    assert len(deepest) == 7 * MAX_DEPTH + 4
    reader, _ = read(deepest, chunk)
    assert reader.refusal is not None
    assert f"nested deeper than {MAX_DEPTH}" in reader.refusal.message
    allowed = b"<a>" * (MAX_DEPTH - 1) + b"<a/>" + b"</a>" * (MAX_DEPTH - 1)
    reader, _ = read(allowed, chunk)
    assert reader.refusal is None


class FullDisk(Sink):
    def __init__(self, fail_on: str) -> None:
        super().__init__()
        self.fail_on = fail_on

    def write(self, data: bytes) -> None:
        if self.fail_on == "write":
            raise OSError(28, "No space left on device")

    def close(self) -> None:
        super().close()
        if self.fail_on == "close":  # the last bytes, buffered, are written at close
            raise OSError(28, "No space left on device")


@pytest.mark.parametrize("fail_on", ["write", "close"])
@pytest.mark.parametrize("chunk", WAYS)
def test_a_sink_that_fails_is_a_server_side_refusal(chunk: int | None, fail_on: str) -> None:
    reader, _ = read(send_fax("QUJD"), chunk, lambda item: FullDisk(fail_on))
    assert reader.root is None
    assert reader.refusal == Refusal("No space left on device", server_side=True)


@pytest.mark.parametrize("chunk", WAYS)
def test_each_document_is_closed_when_its_file_data_ends(chunk: int | None) -> None:
    Sink.open_now = Sink.most_open = 0
    reader, documents = read(send_fax(*["QUJD"] * 20), chunk)
    assert reader.refusal is None
    assert len(documents) == 20
    assert Sink.most_open == 1


@pytest.mark.parametrize("lead", ["", "\n", " \t\r\n"])
@pytest.mark.parametrize("codec", ["utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("chunk", [None, 1, 3, 5, 4096])
def test_utf32_with_a_byte_order_mark_is_read_however_split(
    chunk: int | None, codec: str, lead: str
) -> None:
    bom = codecs.BOM_UTF32_LE if codec.endswith("le") else codecs.BOM_UTF32_BE
    body = bom + (lead + send_fax("QUJD").decode()).encode(codec)
    reader, documents = read(body, chunk)
    assert reader.refusal is None
    assert documents == {1: b"ABC"}


def test_the_decoder_takes_any_split_of_the_text() -> None:
    data = bytes(range(256)) * 2048  # more than one flush of text
    text = base64.b64encode(data).decode()
    for step in (1, 5, 4096, 300_001):
        out = bytearray()
        decoder = Base64Decoder("/x", out.extend)
        for start in range(0, len(text), step):
            decoder.write(text[start : start + step])
        decoder.finish()
        assert bytes(out) == data, step


def test_the_operation_is_sniffed_from_a_body_that_was_not_parsed() -> None:
    assert sniff_operation(send_fax("QUJD")) == "SendFax"
    assert sniff_operation(b"<s:Envelope><s:Body><x:GetFaxBroadcastReport>") == (
        "GetFaxBroadcastReport"
    )
    assert sniff_operation(b"<s:Envelope><s:Body><Other/>") is None
    assert sniff_operation(b"no body") is None


def test_the_tree_matches_a_plain_parse_apart_from_the_documents() -> None:
    body = send_fax("QUJD", extra="<!-- note --><Recipients><item/></Recipients>")
    streamed, _ = read(body, 5)
    plain = etree.fromstring(body)
    for element in plain.iter("{urn:FaxWS}FileData"):
        element.text = None
    assert streamed.root is not None
    without_comments = etree.tostring(plain).replace(b"<!-- note -->", b"")
    assert etree.tostring(streamed.root).replace(b"<!-- note -->", b"") == without_comments
