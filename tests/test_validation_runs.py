"""The run-aware validation (faxws._runs) gives exactly what plain validation gives.

Plain validation is ``Validator._issues(payload, limit, runs=None)`` (also what
``schema_issues`` and an lxml element given to ``validate`` get); the run-aware way is
``runs=N``: an element with more than N element children makes it worth taking, when a few
of them have issues (``sample=False``: whatever they have). Here N is mostly 0, so that
small documents take it too, and the documents are parsed twice, once for each way, since
the run-aware way marks the tree it is given.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from lxml import etree

from faxws import _runs, validation
from faxws.validation import RUN, ValidationIssues, Validator, default_validator, validate

SETTINGS = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,  # the same documents on every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
NAMESPACES = (
    f'xmlns="urn:FaxWS" xmlns:f="urn:FaxWS" xmlns:o="urn:other" xmlns:xsi="{XSI}" '
    'xmlns:xs="http://www.w3.org/2001/XMLSchema"'
)


def payload_of(root: etree._Element) -> etree._Element:
    if etree.QName(root).localname == "Envelope":
        return root[-1][0]
    return root


def parsed(doc: bytes) -> etree._Element:
    root, issues = validation._parse(doc)
    assert root is not None, issues
    return payload_of(root)


Issues = tuple[list[tuple[int, str, str]], int, bool]


def as_tuples(issues: ValidationIssues) -> Issues:
    """The issues with their lines, paths and messages, how many in all, whether truncated."""
    return [(i.line, i.path, i.message) for i in issues], issues.total, issues.truncated


def both_ways(
    doc: bytes,
    validator: Validator | None = None,
    runs: int = 0,
    limit: int | None = None,
    sample: bool = False,
) -> tuple[Issues, Issues, str]:
    """The issues the plain way, the run-aware way, and which way the latter took."""
    validator = validator or default_validator()
    plain = validator._issues(parsed(doc), limit, runs=None)
    payload = parsed(doc)
    other = parsed(doc)
    found = validator._run_records(other, validation._Tree(other), runs, sample=sample)
    way = "plain" if found is None else "runs"
    fast = validator._issues(payload, limit, runs=runs, sample=sample)
    assert etree.tostring(payload) == etree.tostring(parsed(doc))  # no mark left behind
    return as_tuples(plain), as_tuples(fast), way


# -- documents of the FaxWS schema ----------------------------------------------------------

TEXT = st.sampled_from(["1", "x", "", " 7 ", "2147483648", "-1", "JVBERg==", "!!", "a b"])


@dataclass(frozen=True)
class Style:
    """The ways a document's elements get it wrong: ``CLEAN`` ones keep to what the run-aware
    way covers (the issues are many all the same), ``MESSY`` ones add what sends a document
    the plain way (xsi: attributes, a prefix on some elements only, text between items)."""

    names: st.SearchStrategy[str]  # a format of the tag: {p} the prefix, {n} the name
    attributes: st.SearchStrategy[str]
    fillers: st.SearchStrategy[str]  # between elements


CLEAN = Style(
    st.sampled_from(["{p}Junk", '{n} xmlns="urn:other"', "{p}{n}"]),
    st.sampled_from([' a="1"', ' f:a="1"', ' o:a="x"']),
    st.sampled_from(["", "", "\n", "  ", "<!-- c -->", "<?pi x?>", "\n" * 3, "text"]),
)
MESSY = Style(
    st.sampled_from(["f:{n}", "o:{n}", '{n} xmlns=""', "{p}Junk", "xsi:{n}"]),
    st.sampled_from(
        [' a="1"', ' xsi:nil="true"', ' xsi:type="xs:string"', ' xsi:x="1"', f' {_runs.MARK}="0"']
    ),
    st.sampled_from(["", "", "\n", "text", "<!-- c -->", "\n" * 3]),
)
#: Between an item's fields: text there is the item's own issue, which the run-aware way
#: places (the item is validated alone).
IN_ITEM = st.sampled_from(["", "\n", "text", "<!-- c -->"])


@st.composite
def element(draw: st.DrawFn, style: Style, name: str, content: str, prefix: str) -> str:
    """``<name>content</name>``, or one of many ways to get it wrong."""
    tag = prefix + name
    if draw(st.integers(0, 9)) == 0:
        tag = draw(style.names).format(p=prefix, n=name)
    attributes = draw(style.attributes) if draw(st.integers(0, 6)) == 0 else ""
    if draw(st.integers(0, 9)) == 0:
        content = draw(st.sampled_from(["", "<x/>", "<FileIndex>1</FileIndex>", content * 2]))
    return f"<{tag}{attributes}>{content}</{tag.split(' ')[0]}>"


Fields = list[tuple[str, st.SearchStrategy[str]]]


@st.composite
def record(draw: st.DrawFn, style: Style, fields: Fields, prefix: str) -> str:
    """One item: its fields in order, some of them dropped, doubled, moved or foreign."""
    parts = [draw(element(style, name, draw(value), prefix)) for name, value in fields]
    for edit in draw(st.lists(st.integers(0, 4), max_size=2)):
        at = draw(st.integers(0, max(len(parts) - 1, 0)))
        if edit == 0 and parts:
            del parts[at]
        elif edit == 1 and parts:
            parts.insert(at, parts[at])
        elif edit == 2:
            parts.insert(at, f"<{prefix}Junk/>")
        elif edit == 3 and len(parts) > 1:
            parts[0], parts[-1] = parts[-1], parts[0]
        else:
            parts.insert(at, draw(IN_ITEM))
    return "".join(parts)


FILE = [("FileIndex", TEXT), ("FileTypeId", TEXT), ("FileData", TEXT)]
RECIPIENT = [
    (name, st.sampled_from(["1", "", "x"]))
    for name in ("RecipFaxNumber", "RecipCompany", "RecipTitle", "RecipName", "RecipSecureCSID")
]
JOB = [("JobId", st.sampled_from(["J1", ""]))]


@st.composite
def run(draw: st.DrawFn, style: Style, name: str, fields: Fields, p: str) -> str:
    """A parent and its run of items, mostly alike (the ones libxml2 is slow on)."""
    count = draw(st.sampled_from([0, 1, 2, 3, 5, 8, 66, 70]))
    alike = draw(record(style, fields, p))
    items = []
    for _ in range(count):
        body = alike if draw(st.integers(0, 3)) else draw(record(style, fields, p))
        filler = draw(style.fillers) if draw(st.integers(0, 19)) == 0 else "\n"
        items.append(draw(element(style, "item", body, p)) + filler)
    attributes = draw(style.attributes) if draw(st.integers(0, 5)) == 0 else ""
    return f"<{p}{name}{attributes}>{''.join(items)}</{p}{name}>"


@st.composite
def faxws_documents(draw: st.DrawFn) -> bytes:
    style = MESSY if draw(st.integers(0, 3)) == 0 else CLEAN
    p = draw(st.sampled_from(["", "", "f:"]))
    kind = draw(st.sampled_from(["SendFax", "SendFax", "FaxSendResponse"]))
    if kind == "SendFax":
        fields = [
            draw(element(style, "UserID", "u", p)),
            draw(element(style, "strPIN", "1", p)),
            draw(run(style, "Recipients", RECIPIENT, p)),
            draw(run(style, "FaxJobFiles", FILE, p)),
        ]
    else:
        fields = [
            draw(element(style, "return", draw(st.sampled_from(["true", "x"])), p)),
            draw(run(style, "FaxJobIds", JOB, p)),
            draw(element(style, "TTFP", draw(TEXT), p)),
            draw(element(style, "WSError", "<ErrorCode>0</ErrorCode><ErrorString/>", p)),
        ]
    if draw(st.integers(0, 3)) == 0:  # one field dropped, or an element after the last
        at = draw(st.integers(0, len(fields) - 1))
        if draw(st.booleans()):
            del fields[at]
        else:
            fields.append(f"<{p}Extra/>")
    filler = draw(style.fillers)
    body = f"<{p}{kind} {NAMESPACES}>{filler}{filler.join(fields)}</{p}{kind}>"
    if draw(st.integers(0, 3)) == 0:
        body = f'<s:Envelope xmlns:s="{SOAP}"><s:Body>{body}</s:Body></s:Envelope>'
    return body.encode()


@SETTINGS
@given(faxws_documents(), st.sampled_from([None, None, 1, 3]), st.booleans())
def test_runs_give_what_plain_validation_gives(doc: bytes, limit: int | None, sample: bool) -> None:
    plain, fast, way = both_ways(doc, limit=limit, sample=sample)
    event(f"{way}, {'with' if plain[1] else 'without'} issues")
    assert fast == plain


# -- a schema with runs inside runs ---------------------------------------------------------

NESTED_XSD = b"""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:t="urn:t"
    targetNamespace="urn:t" elementFormDefault="qualified">
  <xs:complexType name="Node">
    <xs:sequence>
      <xs:element name="label" type="xs:int"/>
      <xs:element name="node" type="t:Node" minOccurs="0" maxOccurs="unbounded"/>
      <xs:choice minOccurs="0" maxOccurs="unbounded">
        <xs:element name="leaf" type="xs:int"/>
        <xs:element name="pair">
          <xs:complexType>
            <xs:sequence><xs:element name="v" type="xs:int" maxOccurs="2"/></xs:sequence>
            <xs:attribute name="k" type="xs:int"/>
          </xs:complexType>
        </xs:element>
      </xs:choice>
      <xs:element name="end" type="xs:string"/>
    </xs:sequence>
    <xs:attribute name="id" type="xs:int" use="required"/>
    <xs:attribute name="note" type="xs:string"/>
  </xs:complexType>
  <xs:element name="tree" type="t:Node"/>
</xs:schema>"""

NESTED = Validator(NESTED_XSD)


def test_the_nested_schema_has_runs_inside_runs() -> None:
    schemas = NESTED._run_schemas()
    assert schemas is not None
    # node, leaf, pair, v (maxOccurs 2): nodes hold all four, pairs hold vs
    assert schemas.nested == [True, False, True, False]


NODE_ATTRIBUTES = st.sampled_from(
    ['id="1"', 'id="1"', 'id="1"', "", 'id="x"', 'id="1" note="n"', 'id="1" bad="1"']
)
CHILD = st.sampled_from(
    ["<leaf>1</leaf>", "<leaf>x</leaf>", '<pair k="1"><v>1</v></pair>', "<pair k='x'><v>y</v>"
     "<v>2</v><v>3</v></pair>", "<pair>text<v>1</v></pair>", "<pair/>", "<junk/>",
     "<!-- c -->", "\n"]
)  # fmt: skip


#: Text in a node (where it is reported matters), a label out of place, and our mark on an
#: element sampling validates (so takes marks off again).
MESSY_CHILD = st.sampled_from(
    ["text", "<label>1</label>", f'<pair><v {_runs.MARK}="3">1</v></pair>']
)


@st.composite
def node(draw: st.DrawFn, messy: bool, depth: int = 0) -> str:
    """A tree of nodes with labels, leaves, pairs and an end: any of them wrong or missing,
    attributes missing or wrong, elements out of place; text in a node when ``messy``."""
    parts = []
    if draw(st.integers(0, 6)):
        parts.append(f"<label>{draw(st.sampled_from(['1', '1', 'x']))}</label>")
    if depth < 3:
        parts.extend(draw(st.lists(node(messy, depth + 1), max_size=3 if depth else 6)))
    parts.extend(draw(st.lists(CHILD, max_size=6)))
    if draw(st.integers(0, 4)) and depth < 3:
        parts.extend(draw(st.lists(node(messy, depth + 1), max_size=2)))
    if draw(st.integers(0, 5)):
        parts.append("<end/>")
    if draw(st.integers(0, 8)) == 0:
        extra = draw(MESSY_CHILD if messy else CHILD)
        parts.insert(draw(st.integers(0, len(parts))), extra)
    tag = "tree" if depth == 0 else "node"
    return f"<{tag} {draw(NODE_ATTRIBUTES)}>{''.join(parts)}</{tag}>"


@SETTINGS
@given(st.booleans().flatmap(node), st.sampled_from([0, 0, 2]), st.booleans())
def test_runs_inside_runs_give_what_plain_validation_gives(
    tree: str, runs: int, sample: bool
) -> None:
    doc = tree.replace("<tree ", '<tree xmlns="urn:t" ', 1).encode()
    plain, fast, way = both_ways(doc, NESTED, runs, sample=sample)
    event(f"{way}, {'with' if plain[1] else 'without'} issues")
    assert fast == plain


# -- hand-picked documents ------------------------------------------------------------------


def files(n: int, index: str = "x", *, item: str = "item", attrs: str = "", lead: str = "") -> str:
    one = (
        f"<{item}{attrs}><FileIndex>{index}</FileIndex><FileTypeId>101</FileTypeId>"
        f"<FileData>JVBERg==</FileData></{item.split(' ')[0]}>\n"
    )
    return (
        f'<SendFax xmlns="urn:FaxWS" xmlns:f="urn:FaxWS">{lead}<UserID>u</UserID>'
        "<strPIN>1</strPIN><Recipients><item><RecipFaxNumber>1</RecipFaxNumber><RecipCompany/>"
        "<RecipTitle/><RecipName/><RecipSecureCSID/></item></Recipients>\n<FaxJobFiles>\n"
        + one * n
        + "</FaxJobFiles></SendFax>"
    )


def response(ids: int, after: str = "<TTFP>1</TTFP><WSError><ErrorCode>0</ErrorCode>") -> str:
    return (
        '<FaxSendResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds>\n'
        + "<item><JobId>J</JobId><Junk/></item>\n" * ids
        + f"</FaxJobIds>{after}</FaxSendResponse>"
    )


def envelope(doc: str) -> str:
    return f'<s:Envelope xmlns:s="{SOAP}"><s:Header/><s:Body>{doc}</s:Body></s:Envelope>'


def at(doc: str, n: int, old: str, new: str) -> str:
    """``doc`` with the n-th ``old`` made ``new``."""
    parts = doc.split(old)
    return old.join(parts[:n]) + new + old.join(parts[n:])


def prefixed_item(doc: str, n: int) -> str:
    """``doc`` with its n-th item written ``f:item``."""
    start = doc.index("<item>", at(doc, n, "<item>", "@").index("@") - 1)
    end = doc.index("</item>", start)
    return doc[:start] + "<f:item>" + doc[start + 6 : end] + "</f:item>" + doc[end + 7 :]


EMPTY_ITEM = "<FileIndex>x</FileIndex><FileTypeId>101</FileTypeId><FileData>JVBERg==</FileData>"
CASES: dict[str, tuple[str, Validator, str]] = {
    "the benchmark's document": (files(200), default_validator(), "runs"),
    "valid": (files(200, "1"), default_validator(), "runs"),
    "prefixed": (
        files(100).replace("<", "<f:").replace("<f:/", "</f:"),
        default_validator(),
        "runs",
    ),
    "in an envelope": (envelope(files(100)), default_validator(), "runs"),
    "an attribute on each item": (files(100, attrs=' a="1"'), default_validator(), "runs"),
    "an attribute on the parent, before its items' issues": (
        files(100).replace("<FaxJobFiles>", '<FaxJobFiles a="1">'),
        default_validator(),
        "runs",
    ),
    "a stray element in the middle of the run: the rest is not checked": (
        at(files(100), 50, "<item>", "<Junk/><item>"),
        default_validator(),
        "runs",
    ),
    "an item in another namespace in the middle of the run": (
        at(files(100), 50, "<item>", '<item xmlns="urn:other">'),
        default_validator(),
        "runs",
    ),
    "missing children at the parent's end, after its items' issues": (
        response(100, after=""),
        default_validator(),
        "runs",
    ),
    "issues after the run": (
        response(100, after="<TTFP>x</TTFP><WSError/>"),
        default_validator(),
        "runs",
    ),
    "empty items past line 65535 (libxml2 asks the neighbours for the line)": (
        files(100, attrs=' a="1"', lead="\n" * 70_000).replace(EMPTY_ITEM, ""),
        default_validator(),
        "runs",
    ),
    "runs inside runs": (
        '<tree xmlns="urn:t" id="1"><label>1</label>'
        + '<node id="x"><label>y</label><leaf>z</leaf><pair><v>1</v><v>2</v><v>3</v></pair></node>'
        * 80
        + "<leaf>1</leaf><leaf>x</leaf></tree>",
        NESTED,
        "runs",
    ),
    "text between the items, reported where it is": (
        at(at(files(100), 50, "<item>", "text<item>"), 3, "<item>", "<!--c-->\n t <item>"),
        default_validator(),
        "runs",
    ),
    "an xsi:nil": (
        at(files(100), 9, "<item>", f'<item xmlns:xsi="{XSI}" xsi:nil="1">'),
        default_validator(),
        "plain",
    ),
    "prefixed and unprefixed items side by side": (
        prefixed_item(files(100), 9),
        default_validator(),
        "plain",
    ),
    "a prefix too long for libxml2's paths": (
        files(100)
        .replace('xmlns:f="urn:FaxWS"', f'xmlns:{"p" * 90}="urn:FaxWS"')
        .replace("<item>", f"<{'p' * 90}:item>")
        .replace("</item>", f"</{'p' * 90}:item>"),
        default_validator(),
        "plain",
    ),
    "our mark already there": (
        at(files(100), 3, "<item>", f'<item {_runs.MARK}="0">'),
        default_validator(),
        "plain",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hand_picked_documents(name: str) -> None:
    doc, validator, expected_way = CASES[name]
    plain, fast, way = both_ways(doc.encode(), validator, RUN)
    assert fast == plain
    assert way == expected_way
    assert plain[1] > 0 or name == "valid"


def test_a_document_with_our_mark_inside_a_sampled_element() -> None:
    """Sampling validates a few elements on their own, and takes the marks off inside them
    again: a document carrying the mark itself is not sampled at all."""
    pair = f'<pair><v {_runs.MARK}="3">1</v></pair>'
    doc = '<tree xmlns="urn:t" id="1"><label>1</label>' + pair * 80 + "<end/></tree>"
    plain, fast, way = both_ways(doc.encode(), NESTED, RUN, sample=True)
    assert (fast, way) == (plain, "plain")
    assert plain[1] == 80  # the mark is an attribute the schema does not know


def test_a_schema_the_steps_do_not_cover_is_validated_the_plain_way() -> None:
    xsd = NESTED_XSD.replace(
        b'<xs:element name="end" type="xs:string"/>', b'<xs:any namespace="##other"/>'
    )
    validator = Validator(xsd)
    assert validator._run_schemas() is None
    doc = '<tree xmlns="urn:t" id="1"><label>1</label>' + '<node id="x"/>' * 80 + "</tree>"
    plain, fast, way = both_ways(doc.encode(), validator, RUN)
    assert (fast, way) == (plain, "plain")


def test_an_element_given_by_the_caller_is_left_as_it_is() -> None:
    """The run-aware way marks the tree it validates: only a tree it parsed itself."""
    doc = files(100).encode()
    root = etree.fromstring(doc)
    before = etree.tostring(root)
    assert validate(root) == validate(doc)
    assert etree.tostring(root) == before


def way(doc: str) -> str:
    payload = parsed(doc.encode())
    found = default_validator()._run_records(payload, validation._Tree(payload), RUN)
    return "plain" if found is None else "runs"


def test_the_benchmark_document_takes_the_run_aware_way() -> None:
    doc = files(8000)
    assert way(doc) == "runs"
    issues = validate(doc.encode())
    assert issues[-1].path == "/SendFax/FaxJobFiles/item[8000]/FileIndex"
    assert issues.total == 8000


def test_runs_take_the_run_aware_way_when_a_few_of_their_elements_have_issues() -> None:
    """Plain validation is quicker without issues among the siblings, or with few."""
    assert way(files(8000, "1")) == "plain"
    assert way(at(files(8000, "1"), 4000, "<item>", "<Junk/><item>")) == "plain"
    assert way(files(65)) == "runs"
    assert way(files(64)) == "plain"  # not a run
    assert way(files(8000, "1", attrs=' a="1"')) == "runs"
    parts = files(900, "1").split("<FileIndex>1")  # every third file's index wrong
    doc = "".join(
        p + ("<FileIndex>x" if i % 3 == 1 else "<FileIndex>1") for i, p in enumerate(parts[:-1])
    )
    assert way(doc + parts[-1]) == "runs"
    assert validate(doc + parts[-1]).total == 300


def test_threads_validating_runs_at_once_each_get_their_own() -> None:
    docs = [files(100 + i, "x" if i % 2 else "1").encode() for i in range(8)]
    expected = [as_tuples(default_validator()._issues(parsed(d), None, runs=None)) for d in docs]
    start = threading.Barrier(8)

    def check(i: int) -> bool:
        start.wait()
        return all(as_tuples(validate(docs[i])) == expected[i] for _ in range(20))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(check, range(8)))


@pytest.mark.parametrize(
    "change",
    [
        lambda x: x.replace(b"<xs:sequence>", b'<xs:sequence><xs:any processContents="lax"/>', 1),
        lambda x: x.replace(b'type="xs:int"/>', b'type="xs:ID"/>', 1),
        lambda x: x.replace(b'name="note" type="xs:string"', b'name="note" default="n"'),
        lambda x: x.replace(
            b'<xs:element name="end" type="xs:string"/>', b'<xs:element name="end"/>'
        ),
    ],
    ids=["a wildcard", "an ID", "a default value", "xs:anyType"],
)
def test_schema_constructs_the_steps_do_not_cover(change: Callable[[bytes], bytes]) -> None:
    assert Validator(change(NESTED_XSD))._run_schemas() is None
