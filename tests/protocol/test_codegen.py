"""The bindings generator: each schema construct on a WSDL of its own, the vendor's full WSDL (16
operations) and copies of it with other prefixes, refusals that name the construct and the type,
and requests written from generated classes that the vendor schema accepts."""

from __future__ import annotations

import ast
import base64
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from faxws import _codegen
from faxws._protocol import reader as _reader
from faxws._protocol import writer as _wire
from faxws.validation import Validator

ROOT = Path(__file__).resolve().parents[2]
VENDOR = Path(__file__).parents[1] / "fixtures" / "vendor" / "FaxWS.wsdl"

XS = "http://www.w3.org/2001/XMLSchema"
WSDL = "http://schemas.xmlsoap.org/wsdl/"
SOAP11 = "http://schemas.xmlsoap.org/wsdl/soap/"
NS = "urn:FaxWS"
QUALIFIED = ' elementFormDefault="qualified"'

RESPONSE = (
    '<xs:element name="{op}Response"><xs:complexType><xs:sequence>'
    '<xs:element name="ok" type="xs:boolean"/></xs:sequence></xs:complexType></xs:element>'
)


def small_wsdl(
    types: str,
    *,
    ops: tuple[str, ...] = ("Op",),
    schema_attrs: str = QUALIFIED,
    action: str = "",
    schemas: str | None = None,
) -> str:
    """A document/literal WSDL whose operations take element ``t:{op}`` and answer
    ``t:{op}Response`` (written here unless ``schemas`` replaces the whole wsdl:types content)."""
    messages = "\n".join(
        f'  <wsdl:message name="{op}In"><wsdl:part name="parameters" element="t:{op}"/>'
        f"</wsdl:message>\n"
        f'  <wsdl:message name="{op}Out"><wsdl:part name="parameters" element="t:{op}Response"/>'
        "</wsdl:message>"
        for op in ops
    )
    port = "\n".join(
        f'    <wsdl:operation name="{op}"><wsdl:input message="t:{op}In"/>'
        f'<wsdl:output message="t:{op}Out"/></wsdl:operation>'
        for op in ops
    )
    binding = "\n".join(
        f'    <wsdl:operation name="{op}"><soap:operation soapAction="{action}"/>'
        '<wsdl:input><soap:body use="literal"/></wsdl:input>'
        '<wsdl:output><soap:body use="literal"/></wsdl:output></wsdl:operation>'
        for op in ops
    )
    if schemas is None:
        responses = "".join(RESPONSE.format(op=op) for op in ops)
        schemas = (
            f'<xs:schema targetNamespace="{NS}"{schema_attrs}>\n{types}\n{responses}\n</xs:schema>'
        )
    return f"""<?xml version="1.0" encoding="utf-8"?>
<wsdl:definitions xmlns:wsdl="{WSDL}" xmlns:soap="{SOAP11}" xmlns:xs="{XS}"
                  xmlns:t="{NS}" targetNamespace="{NS}">
  <wsdl:types>
{schemas}
  </wsdl:types>
{messages}
  <wsdl:portType name="P">
{port}
  </wsdl:portType>
  <wsdl:binding name="B" type="t:P">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
{binding}
  </wsdl:binding>
</wsdl:definitions>
"""


def write(tmp_path: Path, text: str, name: str = "T.wsdl") -> Path:
    path = tmp_path / "wsdl" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def generate(tmp_path: Path, text: str) -> str:
    return _codegen.generate(write(tmp_path, text))


def import_module(code: str, path: Path, name: str) -> Any:
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    names: list[str] = []

    def loader(code: str) -> Any:
        name = f"codegen_case_{len(names)}"
        names.append(name)
        return import_module(code, tmp_path / f"{name}.py", name)

    yield loader
    for name in names:
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def vendor_code() -> str:
    return _codegen.generate(VENDOR)


@pytest.fixture(scope="module")
def vendor(vendor_code: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path = tmp_path_factory.mktemp("vendor") / "vendor_bindings.py"
    yield import_module(vendor_code, path, "vendor_bindings")
    sys.modules.pop("vendor_bindings", None)


def schema_validator(wsdl_path: Path) -> Validator:
    """The WSDL's own schema (the first xs:schema in wsdl:types), for checking requests."""
    root = etree.parse(str(wsdl_path)).getroot()
    schema = root.find(f"{{{WSDL}}}types/{{{XS}}}schema")
    assert schema is not None
    return Validator(etree.tostring(schema), base_url=wsdl_path.resolve().as_uri())


def payload(request: Any) -> str:
    body = b"".join(_wire.envelope(request)).decode()
    return body.split("<soap:Body>", 1)[1].rsplit("</soap:Body>", 1)[0]


def fields(cls: Any) -> list[tuple[object, ...]]:
    return [
        (
            f.attr,
            f.name,
            f.xsd_type,
            f.complex_type.__name__ if f.complex_type else None,
            f.min_occurs,
            f.max_occurs,
        )
        for f in cls.__xml__.fields
    ]


def classes(code: str) -> list[str]:
    return re.findall(r"^class (\w+):", code, re.MULTILINE)


# -- each construct on a WSDL of its own -------------------------------------------------------


BUILT_INS = """
<xs:element name="Op"><xs:complexType><xs:sequence>
  <xs:element name="Text" type="xs:string"/>
  <xs:element name="Count" type="xs:int" minOccurs="1" maxOccurs="1"/>
  <xs:element name="Big" type="xs:long"/>
  <xs:element name="Flag" type="xs:boolean"/>
  <xs:element name="Data" type="xs:base64Binary"/>
  <xs:element name="Note" type="xs:string" minOccurs="0"/>
  <xs:element name="Tags" type="xs:string" maxOccurs="unbounded"/>
  <xs:element name="Few" type="xs:int" minOccurs="0" maxOccurs="3"/>
</xs:sequence></xs:complexType></xs:element>
"""


def test_built_in_types_and_occurrences(tmp_path: Path, load: Callable[[str], Any]) -> None:
    code = generate(tmp_path, small_wsdl(BUILT_INS))
    for line in (
        "    text: str\n",
        "    count: int\n",
        "    big: int\n",
        "    flag: bool\n",
        "    data: Binary\n",
        "    tags: tuple[str, ...]\n",
        "    few: tuple[int, ...]\n",
        "    note: str | None = None\n",
    ):
        assert line in code
    m = load(code)
    assert fields(m.Op) == [
        ("text", "Text", "string", None, 1, 1),
        ("count", "Count", "int", None, 1, 1),
        ("big", "Big", "long", None, 1, 1),
        ("flag", "Flag", "boolean", None, 1, 1),
        ("data", "Data", "base64Binary", None, 1, 1),
        ("note", "Note", "string", None, 0, 1),
        ("tags", "Tags", "string", None, 1, None),
        ("few", "Few", "int", None, 0, 3),
    ]
    request = m.Op(
        text="a<b", count=-1, big=2**40, flag=True, data=b"\x00\xff", tags=("x", "y"), few=()
    )
    assert payload(request) == (
        '<Op xmlns="urn:FaxWS"><Text>a&lt;b</Text><Count>-1</Count><Big>1099511627776</Big>'
        "<Flag>true</Flag><Data>AP8=</Data><Tags>x</Tags><Tags>y</Tags></Op>"
    )
    validator = schema_validator(tmp_path / "wsdl" / "T.wsdl")
    assert validator.validate(b"".join(_wire.envelope(request))) == []
    with_note = m.Op("t", 1, 2, False, b"", ("x",), (1, 2, 3), note="n")
    assert payload(with_note) == (
        '<Op xmlns="urn:FaxWS"><Text>t</Text><Count>1</Count><Big>2</Big><Flag>false</Flag>'
        "<Data></Data><Note>n</Note><Tags>x</Tags><Few>1</Few><Few>2</Few><Few>3</Few></Op>"
    )
    assert validator.validate(b"".join(_wire.envelope(with_note))) == []


NESTED = """
<xs:complexType name="Address"><xs:sequence>
  <xs:element name="City" type="xs:string"/>
</xs:sequence></xs:complexType>
<xs:element name="Op"><xs:complexType><xs:sequence>
  <xs:element name="Home" type="t:Address"/>
  <xs:element name="Extra"><xs:complexType><xs:sequence>
    <xs:element name="Key" type="xs:string"/>
    <xs:element name="Deeper"><xs:complexType><xs:sequence>
      <xs:element name="Leaf" type="xs:int"/>
    </xs:sequence></xs:complexType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
  <xs:element name="Others" type="t:Address" minOccurs="0" maxOccurs="unbounded"/>
</xs:sequence></xs:complexType></xs:element>
"""


def test_named_anonymous_and_nested_types(tmp_path: Path, load: Callable[[str], Any]) -> None:
    code = generate(tmp_path, small_wsdl(NESTED))
    # Dependency order: a class comes after every class its fields name.
    assert classes(code) == ["Address", "OpExtraDeeper", "OpExtra", "Op", "OpResponse"]
    m = load(code)
    assert fields(m.Op) == [
        ("home", "Home", "", "Address", 1, 1),
        ("extra", "Extra", "", "OpExtra", 1, 1),
        ("others", "Others", "", "Address", 0, None),
    ]
    assert m.OpExtra.__xml__.name == "Extra"
    request = m.Op(
        home=m.Address("Oslo"),
        extra=m.OpExtra(key="k", deeper=m.OpExtraDeeper(leaf=7)),
        others=(m.Address("Rome"), m.Address("")),
    )
    assert payload(request) == (
        '<Op xmlns="urn:FaxWS"><Home><City>Oslo</City></Home><Extra><Key>k</Key><Deeper>'
        "<Leaf>7</Leaf></Deeper></Extra><Others><City>Rome</City></Others>"
        "<Others><City/></Others></Op>"
    )
    validator = schema_validator(tmp_path / "wsdl" / "T.wsdl")
    assert validator.validate(b"".join(_wire.envelope(request))) == []


REFS = """
<xs:element name="Note" type="xs:string"/>
<xs:element name="Stamp"><xs:complexType><xs:sequence>
  <xs:element name="At" type="xs:long"/>
</xs:sequence></xs:complexType></xs:element>
<xs:complexType name="WSError"><xs:sequence>
  <xs:element name="ErrorCode" type="xs:int"/>
</xs:sequence></xs:complexType>
<xs:element name="WSError" type="t:WSError"/>
<xs:complexType name="OpType"><xs:sequence>
  <xs:element ref="t:Note"/>
  <xs:element ref="t:Stamp" minOccurs="0"/>
  <xs:element ref="t:WSError" maxOccurs="2"/>
</xs:sequence></xs:complexType>
<xs:element name="Op" type="t:OpType"/>
"""


def test_element_refs_and_elements_of_a_named_type(
    tmp_path: Path, load: Callable[[str], Any]
) -> None:
    code = generate(tmp_path, small_wsdl(REFS))
    # Op (element) and OpType (type) are two classes with the same fields; the element WSError
    # and the type WSError are one; the simple element Note is a field, not a class.
    assert classes(code) == ["Stamp", "WSError", "Op", "OpResponse", "OpType"]
    m = load(code)
    expected = [
        ("note", "Note", "string", None, 1, 1),
        ("stamp", "Stamp", "", "Stamp", 0, 1),
        ("ws_error", "WSError", "", "WSError", 1, 2),
    ]
    assert fields(m.Op) == fields(m.OpType) == expected
    assert (m.Op.__xml__.name, m.OpType.__xml__.name) == ("Op", "OpType")
    assert m.OPERATIONS["Op"].input is m.Op
    request = m.Op(note="n", ws_error=(m.WSError(7),), stamp=m.Stamp(5))
    assert payload(request) == (
        '<Op xmlns="urn:FaxWS"><Note>n</Note><Stamp><At>5</At></Stamp>'
        "<WSError><ErrorCode>7</ErrorCode></WSError></Op>"
    )
    validator = schema_validator(tmp_path / "wsdl" / "T.wsdl")
    assert validator.validate(b"".join(_wire.envelope(request))) == []


def test_empty_sequence_and_empty_complex_type(tmp_path: Path, load: Callable[[str], Any]) -> None:
    types = (
        '<xs:element name="Op"><xs:complexType><xs:sequence>\n</xs:sequence></xs:complexType>'
        '</xs:element><xs:element name="Ping"><xs:complexType/></xs:element>'
    )
    m = load(generate(tmp_path, small_wsdl(types, ops=("Op", "Ping"))))
    assert m.Op.__xml__.fields == m.Ping.__xml__.fields == ()
    assert payload(m.Op()) == '<Op xmlns="urn:FaxWS"></Op>'
    validator = schema_validator(tmp_path / "wsdl" / "T.wsdl")
    assert validator.validate(b"".join(_wire.envelope(m.Ping()))) == []


DEFAULTS = """
<xs:element name="Op"><xs:complexType><xs:sequence>
  <xs:element name="Id" type="xs:string"/>
  <xs:element name="From" type="xs:int" default="-1"/>
  <xs:element name="Loud" type="xs:boolean" default="true" nillable="true"/>
  <xs:element name="Label" type="xs:string" default='say "hi" \\ there'/>
  <xs:element name="Maybe" type="xs:int" minOccurs="0" default="5"/>
  <xs:element name="Items" type="xs:string" minOccurs="0" maxOccurs="unbounded" nillable="true"/>
</xs:sequence></xs:complexType></xs:element>
"""


def test_defaults_and_nillable(tmp_path: Path, load: Callable[[str], Any]) -> None:
    m = load(generate(tmp_path, small_wsdl(DEFAULTS)))
    # A required element's default becomes the Python default; an optional element stays None
    # (an absent element has no value). nillable changes nothing: values are always written.
    request = m.Op(id="x", items=())
    assert (request.from_, request.loud, request.label, request.maybe) == (
        -1,
        True,
        'say "hi" \\ there',
        None,
    )
    assert payload(request) == (
        '<Op xmlns="urn:FaxWS"><Id>x</Id><From>-1</From><Loud>true</Loud>'
        '<Label>say "hi" \\ there</Label></Op>'
    )
    validator = schema_validator(tmp_path / "wsdl" / "T.wsdl")
    assert validator.validate(b"".join(_wire.envelope(request))) == []


def test_imports_includes_and_an_import_without_location(
    tmp_path: Path, load: Callable[[str], Any]
) -> None:
    (tmp_path / "wsdl" / "parts").mkdir(parents=True)
    (tmp_path / "wsdl" / "parts" / "main.xsd").write_text(
        f'<xs:schema xmlns:xs="{XS}" xmlns:t="{NS}" targetNamespace="{NS}"{QUALIFIED}>'
        '<xs:include schemaLocation="common.xsd"/>'
        '<xs:element name="Op"><xs:complexType><xs:sequence>'
        '<xs:element name="Price" type="t:Money"/></xs:sequence></xs:complexType></xs:element>'
        f"{RESPONSE.format(op='Op')}</xs:schema>"
    )
    # No targetNamespace: an included schema takes the including one's.
    (tmp_path / "wsdl" / "parts" / "common.xsd").write_text(
        f'<xs:schema xmlns:xs="{XS}"{QUALIFIED}><xs:include schemaLocation="main.xsd"/>'
        '<xs:complexType name="Money"><xs:sequence><xs:element name="Cents" type="xs:long"/>'
        "</xs:sequence></xs:complexType></xs:schema>"
    )
    schemas = (
        f'<xs:schema><xs:import namespace="http://schemas.xmlsoap.org/soap/encoding/"/>'
        f'<xs:import namespace="{NS}" schemaLocation="parts/main.xsd"/></xs:schema>'
    )
    code = generate(tmp_path, small_wsdl("", schemas=schemas))
    assert classes(code) == ["Money", "Op", "OpResponse"]
    m = load(code)
    assert payload(m.Op(m.Money(5))) == '<Op xmlns="urn:FaxWS"><Price><Cents>5</Cents></Price></Op>'


def test_names_that_python_cannot_take_as_they_are(
    tmp_path: Path, load: Callable[[str], Any]
) -> None:
    types = """
<xs:complexType name="item"><xs:sequence>
  <xs:element name="class" type="xs:string"/>
</xs:sequence></xs:complexType>
<xs:complexType name="str"><xs:sequence>
  <xs:element name="Recip-Fax.No" type="xs:string"/>
</xs:sequence></xs:complexType>
<xs:element name="Op"><xs:complexType><xs:sequence>
  <xs:element name="item" type="t:item" minOccurs="0"/>
  <xs:element name="int" type="xs:int" minOccurs="0"/>
  <xs:element name="Text" type="t:str"/>
</xs:sequence></xs:complexType></xs:element>
"""
    code = generate(tmp_path, small_wsdl(types))
    # A class named str would change what every "str" annotation means; an attribute named like
    # a class would hide it inside the class body.
    assert classes(code) == ["item", "str_", "Op", "OpResponse"]
    m = load(code)
    assert fields(m.Op) == [
        ("item_", "item", "", "item", 0, 1),
        ("int_", "int", "int", None, 0, 1),
        ("text", "Text", "", "str_", 1, 1),
    ]
    assert fields(m.item) == [("class_", "class", "string", None, 1, 1)]
    assert m.str_.__xml__.name == "str"
    request = m.Op(text=m.str_(recip_fax_no="1"), item_=m.item(class_="c"), int_=3)
    assert payload(request) == (
        '<Op xmlns="urn:FaxWS"><item><class>c</class></item><int>3</int>'
        "<Text><Recip-Fax.No>1</Recip-Fax.No></Text></Op>"
    )


def test_operations_in_binding_order_with_their_soap_actions(
    tmp_path: Path, load: Callable[[str], Any]
) -> None:
    types = "".join(
        f'<xs:element name="{op}"><xs:complexType><xs:sequence/></xs:complexType></xs:element>'
        for op in ("Zeta", "Alpha", "Mid")
    )
    text = small_wsdl(types, ops=("Zeta", "Alpha", "Mid"), action="urn:act")
    m = load(generate(tmp_path, text))
    assert list(m.OPERATIONS) == ["Zeta", "Alpha", "Mid"]
    assert list(m.ELEMENTS) == [
        "Zeta",
        "ZetaResponse",
        "Alpha",
        "AlphaResponse",
        "Mid",
        "MidResponse",
    ]
    assert {op.soap_action for op in m.OPERATIONS.values()} == {"urn:act"}
    assert m.OPERATIONS["Alpha"].output is m.AlphaResponse


def _field_docstrings(code: str, class_name: str) -> dict[str, str]:
    (cls,) = [
        node
        for node in ast.parse(code).body
        if isinstance(node, ast.ClassDef) and node.name == class_name
    ]
    docs = {}
    for before, after in zip(cls.body, cls.body[1:], strict=False):
        if isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name):
            assert isinstance(after, ast.Expr)
            assert isinstance(after.value, ast.Constant)
            docs[before.target.id] = after.value.value
    return docs


def test_documentation_and_strings_are_written_as_valid_literals(
    tmp_path: Path, load: Callable[[str], Any]
) -> None:
    texts = {
        "Op": 'Ends with a quote "',
        "A": 'Triple """ quotes, one \' and a backslash \\ then \\N{x} \\u0041 \\',
        "B": "Non-ASCII: café, 日本, 🚀; invisible: \u200f; C1: \x85x \x9f;  spaced\tout",
        "C": "\\",
    }

    def doc(name: str) -> str:
        escaped = texts[name].replace("&", "&amp;").replace("<", "&lt;")
        escaped = "".join(
            ch if ch.isprintable() or ch == " " else f"&#{ord(ch)};" for ch in escaped
        )
        return f"<xs:annotation><xs:documentation>{escaped}</xs:documentation></xs:annotation>"

    types = (
        f'<xs:element name="Op">{doc("Op")}<xs:complexType><xs:sequence>'
        + "".join(f'<xs:element name="{n}" type="xs:string">{doc(n)}</xs:element>' for n in "ABC")
        + "</xs:sequence></xs:complexType></xs:element>"
    )
    text = small_wsdl(types, action="urn:a&quot;b\\c'd").replace(
        '<wsdl:operation name="Op"><wsdl:input',
        '<wsdl:operation name="Op"><wsdl:documentation>Say "hi" \\ bye &lt;3 """'
        "</wsdl:documentation><wsdl:input",
    )
    code = generate(tmp_path, text)
    m = load(code)

    def one_line(s: str) -> str:
        return " ".join(s.split())

    assert m.Op.__doc__ == one_line(texts["Op"])
    assert _field_docstrings(code, "Op") == {n.lower(): one_line(texts[n]) for n in "ABC"}
    assert m.OPERATIONS["Op"].soap_action == "urn:a\"b\\c'd"
    assert m.OPERATIONS["Op"].documentation == 'Say "hi" \\ bye <3 """'
    assert "\u200f" not in code  # unprintable characters are escapes, not raw characters


# -- what the generator refuses, by name -------------------------------------------------------


def op_with(children: str) -> str:
    """Element Op (the operation's input) with these children in its sequence."""
    return (
        '<xs:element name="Op"><xs:complexType><xs:sequence>'
        f"{children}</xs:sequence></xs:complexType></xs:element>"
    )


CHOICE = (
    '<xs:complexType name="Pick"><xs:choice><xs:element name="A" type="xs:string"/>'
    '<xs:element name="B" type="xs:int"/></xs:choice></xs:complexType>'
)

UNSUPPORTED_SCHEMAS = [
    pytest.param(
        CHOICE,
        ["complexType Pick", "xs:choice"],
        id="choice",
    ),
    pytest.param(
        '<xs:complexType name="Bag"><xs:all><xs:element name="A" type="xs:string"/></xs:all>'
        "</xs:complexType>",
        ["complexType Bag", "xs:all"],
        id="all",
    ),
    pytest.param(
        '<xs:complexType name="Tagged"><xs:sequence><xs:element name="A" type="xs:string"/>'
        '</xs:sequence><xs:attribute name="lang" type="xs:string"/></xs:complexType>',
        ["complexType Tagged", "xs:attribute 'lang'"],
        id="attribute",
    ),
    pytest.param(
        '<xs:complexType name="Open"><xs:sequence><xs:any processContents="lax"/></xs:sequence>'
        "</xs:complexType>",
        ["complexType Open", "xs:any"],
        id="any",
    ),
    pytest.param(
        '<xs:group name="G"><xs:sequence><xs:element name="A" type="xs:string"/></xs:sequence>'
        '</xs:group><xs:complexType name="Grouped"><xs:sequence><xs:group ref="t:G"/>'
        "</xs:sequence></xs:complexType>",
        ["complexType Grouped", "xs:group 't:G'"],
        id="group",
    ),
    pytest.param(
        '<xs:complexType name="Outer"><xs:sequence><xs:sequence>'
        '<xs:element name="A" type="xs:string"/></xs:sequence></xs:sequence></xs:complexType>',
        ["complexType Outer", "xs:sequence"],
        id="nested sequence",
    ),
    pytest.param(
        '<xs:complexType name="Base"><xs:sequence><xs:element name="A" type="xs:string"/>'
        '</xs:sequence></xs:complexType><xs:complexType name="Derived"><xs:complexContent>'
        '<xs:extension base="t:Base"><xs:sequence><xs:element name="B" type="xs:string"/>'
        "</xs:sequence></xs:extension></xs:complexContent></xs:complexType>",
        ["complexType Derived", "xs:complexContent/xs:extension"],
        id="extension",
    ),
    pytest.param(
        '<xs:complexType name="Amount"><xs:simpleContent><xs:extension base="xs:int">'
        '<xs:attribute name="unit" type="xs:string"/></xs:extension></xs:simpleContent>'
        "</xs:complexType>",
        ["complexType Amount", "xs:simpleContent/xs:extension"],
        id="simple content",
    ),
    pytest.param(
        '<xs:complexType name="Prose" mixed="true"><xs:sequence>'
        '<xs:element name="B" type="xs:string"/></xs:sequence></xs:complexType>',
        ["complexType Prose", "mixed='true'"],
        id="mixed",
    ),
    pytest.param(
        '<xs:complexType name="Twice"><xs:sequence maxOccurs="2">'
        '<xs:element name="A" type="xs:string"/></xs:sequence></xs:complexType>',
        ["complexType Twice", "xs:sequence"],
        id="repeated sequence",
    ),
    pytest.param(
        '<xs:simpleType name="Color"><xs:restriction base="xs:string">'
        '<xs:enumeration value="red"/><xs:enumeration value="blue"/></xs:restriction>'
        "</xs:simpleType>" + op_with('<xs:element name="Paint" type="t:Color"/>'),
        ["element Op, element Paint", "xs:simpleType Color", "xs:enumeration"],
        id="enumeration",
    ),
    pytest.param(
        op_with(
            '<xs:element name="Size"><xs:simpleType><xs:restriction base="xs:int">'
            '<xs:maxInclusive value="9"/></xs:restriction></xs:simpleType></xs:element>'
        ),
        ["element Op, element Size", "xs:simpleType"],
        id="inline restriction",
    ),
    pytest.param(
        op_with('<xs:element name="Blob"/>'),
        ["element Op, element Blob", "xs:anyType"],
        id="no type",
    ),
    pytest.param(
        op_with('<xs:element name="Pin" type="xs:string" fixed="0000"/>'),
        ["element Op, element Pin", "fixed"],
        id="fixed",
    ),
    pytest.param(
        op_with('<xs:element name="Local" type="xs:string" form="unqualified"/>'),
        ["element Op, element Local", "unqualified"],
        id="unqualified form",
    ),
    pytest.param(
        '<xs:complexType name="Node"><xs:sequence>'
        '<xs:element name="Child" type="t:Node" minOccurs="0"/></xs:sequence></xs:complexType>',
        ["complexType Node", "recursive"],
        id="recursive type",
    ),
    pytest.param(
        '<xs:complexType name="Thing"><xs:sequence/></xs:complexType>'
        '<xs:element name="Op"><xs:complexType><xs:sequence><xs:element name="Thing">'
        "<xs:complexType><xs:sequence/></xs:complexType></xs:element></xs:sequence>"
        '</xs:complexType></xs:element><xs:element name="OpThing">'
        "<xs:complexType><xs:sequence/></xs:complexType></xs:element>",
        ["element OpThing", "element Op, element Thing (anonymous type)", "class OpThing"],
        id="two classes of one name",
    ),
    pytest.param(
        op_with(
            '<xs:element name="Fax-No" type="xs:string"/><xs:element name="FaxNo" type="xs:int"/>'
        ),
        ["Op: elements Fax-No and FaxNo", "attribute fax_no"],
        id="two attributes of one name",
    ),
    pytest.param(
        op_with('<xs:element name="__slots__" type="xs:string"/>'),
        ["Op, element __slots__", "cannot be a Python name"],
        id="dunder name",
    ),
    pytest.param(
        '<xs:import namespace="http://schemas.xmlsoap.org/soap/encoding/"/>'
        + op_with(
            '<xs:element name="Items" type="enc:Array" '
            'xmlns:enc="http://schemas.xmlsoap.org/soap/encoding/"/>'
        ),
        ["element Op, element Items", "enc:Array", "imported without a schemaLocation"],
        id="soap encoding array",
    ),
    pytest.param(
        op_with('<xs:element name="Mystery" type="t:Nowhere"/>'),
        ["element Op, element Mystery", "t:Nowhere is not defined"],
        id="undefined type",
    ),
    pytest.param(
        op_with('<xs:element name="Who" type="undeclared:T"/>'),
        ["element Op, element Who", "prefix 'undeclared'"],
        id="undeclared prefix",
    ),
    pytest.param(
        '<xs:element name="Head" type="xs:string"/>'
        '<xs:element name="Sub" type="xs:string" substitutionGroup="t:Head"/>'
        + op_with('<xs:element ref="t:Sub"/>'),
        ["element Sub", "substitutionGroup"],
        id="substitution group",
    ),
]


@pytest.mark.parametrize(("types", "expected"), UNSUPPORTED_SCHEMAS)
def test_an_unsupported_schema_construct_is_refused_by_name(
    tmp_path: Path, types: str, expected: list[str]
) -> None:
    if '<xs:element name="Op"' not in types:
        types += op_with('<xs:element name="X" type="xs:string"/>')
    with pytest.raises(_codegen.CodegenError) as caught:
        generate(tmp_path, small_wsdl(types, ops=("Op",)))
    for fragment in expected:
        assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        pytest.param(f"xs:{t}", [f"xs:{t}"], id=t)
        for t in ("dateTime", "double", "short", "unsignedInt", "decimal", "anyURI", "anyType")
    ],
)
def test_a_built_in_type_the_wire_does_not_know_is_refused(
    tmp_path: Path, types: str, expected: list[str]
) -> None:
    with pytest.raises(_codegen.CodegenError) as caught:
        generate(tmp_path, small_wsdl(op_with(f'<xs:element name="When" type="{types}"/>')))
    assert "element Op, element When" in str(caught.value)
    assert expected[0] in str(caught.value)


def test_an_unqualified_schema_is_refused(tmp_path: Path) -> None:
    text = small_wsdl(op_with('<xs:element name="A" type="xs:string"/>'), schema_attrs="")
    with pytest.raises(_codegen.CodegenError, match=r"element Op, element A: .*unqualified"):
        generate(tmp_path, text)


OTHER = (
    f'<xs:schema targetNamespace="urn:other" xmlns:o="urn:other"{QUALIFIED}>'
    '<xs:complexType name="Ext"><xs:sequence/></xs:complexType>'
    '<xs:element name="Op"><xs:complexType><xs:sequence/></xs:complexType></xs:element>'
    "</xs:schema>"
)


def test_a_second_namespace_is_refused(tmp_path: Path) -> None:
    # The envelope writer puts every element in one default namespace.
    ours = op_with('<xs:element name="A" type="o:Ext" xmlns:o="urn:other"/>')
    schemas = (
        f'<xs:schema targetNamespace="{NS}"{QUALIFIED}>{ours}{RESPONSE.format(op="Op")}'
        f"</xs:schema>{OTHER}"
    )
    with pytest.raises(_codegen.CodegenError, match=r"element A: type o:Ext is not in 'urn:F"):
        generate(tmp_path / "type", small_wsdl("", schemas=schemas))
    wrapped = '<xs:element name="Wrapped" type="o:Ext" xmlns:o="urn:other"/>'
    with pytest.raises(_codegen.CodegenError, match=r"complexType Ext is in 'urn:other'"):
        generate(
            tmp_path / "element", small_wsdl("", schemas=schemas.replace(ours, wrapped + PLAIN))
        )
    text = small_wsdl("", schemas=schemas.replace(ours, "")).replace(
        'element="t:Op"/>', 'element="o:Op" xmlns:o="urn:other"/>'
    )
    with pytest.raises(_codegen.CodegenError, match=r"operation Op: element OpResponse is in"):
        generate(tmp_path / "operation", text)


PLAIN = op_with('<xs:element name="A" type="xs:string"/>')

UNSUPPORTED_WSDL = [
    pytest.param(
        'style="document"', 'style="rpc"', ["operation Op", "style 'rpc'"], id="rpc style"
    ),
    pytest.param(
        '<wsdl:input><soap:body use="literal"/>',
        '<wsdl:input><soap:body use="encoded"/>',
        ["operation Op input", "use='encoded'"],
        id="encoded",
    ),
    pytest.param(
        '<wsdl:part name="parameters" element="t:Op"/>',
        '<wsdl:part name="parameters" element="t:Op"/><wsdl:part name="more" element="t:Op"/>',
        ["message OpIn", "2 parts"],
        id="two parts",
    ),
    pytest.param(
        'element="t:Op"/>',
        'type="xs:string"/>',
        ["message OpIn", "type (rpc style)"],
        id="type part",
    ),
    pytest.param(
        '<wsdl:input><soap:body use="literal"/>',
        '<wsdl:input><soap:body use="literal"/><soap:header message="t:OpIn" part="parameters" '
        'use="literal"/>',
        ["operation Op input", "soap:header"],
        id="soap header",
    ),
    pytest.param(
        '<wsdl:output message="t:OpOut"/></wsdl:operation>',
        '<wsdl:output message="t:OpOut"/><wsdl:fault name="Oops" message="t:OpOut"/>'
        "</wsdl:operation>",
        ["operation Op", "wsdl:fault 'Oops'"],
        id="fault",
    ),
    pytest.param(
        '<wsdl:input message="t:OpIn"/><wsdl:output message="t:OpOut"/>',
        '<wsdl:input message="t:OpIn"/>',
        ["operation Op", "no output"],
        id="one-way",
    ),
    pytest.param(
        '<soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>',
        '<s12:binding xmlns:s12="http://schemas.xmlsoap.org/wsdl/soap12/" style="document" '
        'transport="http://schemas.xmlsoap.org/soap/http"/>',
        ["one SOAP 1.1 binding, found 0"],
        id="soap 1.2 only",
    ),
    pytest.param(
        "<wsdl:types>",
        '<wsdl:import namespace="urn:other" location="other.wsdl"/><wsdl:types>',
        ["wsdl:import", "other.wsdl"],
        id="wsdl import",
    ),
    pytest.param(
        f'<xs:schema targetNamespace="{NS}"{QUALIFIED}>',
        f'<xs:schema targetNamespace="{NS}"{QUALIFIED}><xs:import namespace="urn:x" '
        'schemaLocation="https://schemas.example.invalid/x.xsd"/>',
        ["https://schemas.example.invalid/x.xsd", "only local files"],
        id="remote schema",
    ),
    pytest.param(
        f'<xs:schema targetNamespace="{NS}"{QUALIFIED}>',
        f'<xs:schema targetNamespace="{NS}"{QUALIFIED}><xs:include schemaLocation="gone.xsd"/>',
        ["cannot read gone.xsd"],
        id="missing schema file",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UNSUPPORTED_WSDL)
def test_an_unsupported_wsdl_construct_is_refused_by_name(
    tmp_path: Path, old: str, new: str, expected: list[str]
) -> None:
    text = small_wsdl(PLAIN)
    assert old in text
    with pytest.raises(_codegen.CodegenError) as caught:
        generate(tmp_path, text.replace(old, new, 1))
    for fragment in expected:
        assert fragment in str(caught.value)


def test_the_command_line_names_the_construct_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, small_wsdl(CHOICE + PLAIN))
    out = tmp_path / "out.py"
    done = subprocess.run(
        [sys.executable, "-m", "faxws._codegen", "--wsdl", str(path), "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "complexType Pick: xs:choice is not supported" in done.stderr
    assert not out.exists()


# -- the vendor's WSDL ---------------------------------------------------------------------------


def _vendor_tree() -> etree._Element:
    return etree.parse(str(VENDOR)).getroot()


def test_the_fixture_names_its_public_source() -> None:
    head = VENDOR.read_text(encoding="utf-8")[:800]
    assert "wix-incubator/libfax" in head
    assert "rajesh-kambala/BBOS" in head


def test_vendor_wsdl_gives_all_16_operations(vendor: Any) -> None:
    root = _vendor_tree()
    binding_ops = [op.get("name") for op in root.findall(f"{{{WSDL}}}binding/{{{WSDL}}}operation")]
    assert len(binding_ops) == 16
    assert list(vendor.OPERATIONS) == binding_ops
    assert {"GetFaxStatus", "CancelFax", "SendFax", "GetFaxBroadcastReport"} <= set(binding_ops)
    parts = {
        m.get("name"): m.find(f"{{{WSDL}}}part").get("element").split(":")[1]  # type: ignore[union-attr]
        for m in root.findall(f"{{{WSDL}}}message")
    }
    for pt_op in root.findall(f"{{{WSDL}}}portType/{{{WSDL}}}operation"):
        op = vendor.OPERATIONS[pt_op.get("name")]
        in_msg = pt_op.find(f"{{{WSDL}}}input").get("message").split(":")[1]  # type: ignore[union-attr]
        out_msg = pt_op.find(f"{{{WSDL}}}output").get("message").split(":")[1]  # type: ignore[union-attr]
        assert op.input.__xml__.name == parts[in_msg]
        assert op.output.__xml__.name == parts[out_msg]
        assert op.soap_action == ""
        assert op.documentation == f"Service definition of function FaxWS__{op.name}"
    assert vendor.NAMESPACE == "urn:FaxWS"
    assert vendor.OPERATIONS["SendFax"].output is vendor.FaxSendResponse


def _expected_children(node: etree._Element) -> list[tuple[str, str, int, int | None]]:
    out = []
    for el in node.iterfind(f".//{{{XS}}}sequence/{{{XS}}}element"):
        local = el.get("type", "").split(":")[1]
        high = el.get("maxOccurs", "1")
        out.append(
            (
                el.get("name", ""),
                local,
                int(el.get("minOccurs", "1")),
                None if high == "unbounded" else int(high),
            )
        )
    return out


def test_every_vendor_type_and_element_is_a_class_with_its_children_in_order(
    vendor: Any,
) -> None:
    schema = _vendor_tree().find(f"{{{WSDL}}}types/{{{XS}}}schema")
    assert schema is not None
    declared = [
        node
        for node in schema
        if isinstance(node.tag, str) and etree.QName(node).localname in ("complexType", "element")
    ]
    assert len(declared) == 57
    for node in declared:
        cls = getattr(vendor, node.get("name", ""))
        assert cls.__xml__.name == node.get("name")
        got = [
            (
                f.name,
                f.xsd_type or f.complex_type.__xml__.name,
                f.min_occurs,
                f.max_occurs,
            )
            for f in cls.__xml__.fields
        ]
        assert got == _expected_children(node), node.get("name")
    assert vendor.CheckService.__xml__.fields == ()


def test_vendor_classes_agree_with_zeeps_reading_of_the_wsdl(vendor: Any) -> None:
    import zeep

    client = zeep.Client(str(VENDOR))
    for name, cls in vars(vendor).items():
        xml = getattr(cls, "__xml__", None)
        if xml is None or not isinstance(cls, type):
            continue
        try:
            zeep_type = client.get_element(f"{{{NS}}}{xml.name}").type
        except zeep.exceptions.LookupError:
            zeep_type = client.get_type(f"{{{NS}}}{xml.name}")
        theirs = [(n, e.min_occurs, e.max_occurs) for n, e in zeep_type.elements]
        ours = [
            (f.name, f.min_occurs, "unbounded" if f.max_occurs is None else f.max_occurs)
            for f in xml.fields
        ]
        assert ours == theirs, name


def test_defaults_of_the_vendor_schema(vendor: Any) -> None:
    request = vendor.FaxBroadcastStatusRequest(job_id="J1")
    assert (request.start_recipient_id, request.end_recipient_id, request.recipient_status) == (
        -1,
        -1,
        -1,
    )


QNAME_ATTRIBUTES = ("type", "element", "message", "binding", "ref", "base")


def reprefixed(
    source: Path, root_nsmap: dict[str | None, str], schema_nsmap: dict[str | None, str] | None
) -> bytes:
    """The same WSDL with other namespace prefixes (QName values rewritten to match), attributes
    in reverse order and no comments."""

    def copy(node: etree._Element, parent: etree._Element | None) -> etree._Element:
        nsmap = schema_nsmap if node.tag == f"{{{XS}}}schema" else None
        new = (
            etree.Element(node.tag, nsmap=root_nsmap)
            if parent is None
            else etree.SubElement(parent, node.tag, nsmap=nsmap)
        )
        for name, value in reversed(node.attrib.items()):
            if name in QNAME_ATTRIBUTES:
                prefix, _, local = value.rpartition(":")
                namespace = node.nsmap.get(prefix or None)
                (new_prefix,) = [p for p, ns in new.nsmap.items() if ns == namespace][:1]
                value = f"{new_prefix}:{local}" if new_prefix else local
            new.set(name, value)
        new.text, new.tail = node.text, node.tail
        for child in node:
            if isinstance(child.tag, str):
                copy(child, new)
        return new

    root = copy(etree.parse(str(source)).getroot(), None)
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


TNS = "https://ws.concordfax.com/fax/v5/FaxWS.wsdl"


@pytest.mark.parametrize(
    ("root_nsmap", "schema_nsmap"),
    [
        pytest.param(
            {"w": WSDL, "s": XS, "f": NS, "t": TNS, "soap": SOAP11}, None, id="all prefixed"
        ),
        # The schema's default namespace is urn:FaxWS: its type references carry no prefix.
        pytest.param(
            {None: WSDL, "x": XS, "fx": NS, "tns": TNS, "soap11": SOAP11},
            {None: NS, "x": XS},
            id="unprefixed types",
        ),
    ],
)
def test_a_copy_with_other_prefixes_and_attribute_order_gives_the_same_module(
    tmp_path: Path,
    vendor_code: str,
    root_nsmap: dict[str | None, str],
    schema_nsmap: dict[str | None, str] | None,
) -> None:
    text = reprefixed(VENDOR, root_nsmap, schema_nsmap)
    assert b'type="xsd:int"' not in text
    assert b'<definitions name="FaxWS"' not in text
    copy = tmp_path / "vendor" / "FaxWS.wsdl"
    copy.parent.mkdir()
    copy.write_bytes(text)
    assert _codegen.generate(copy) == vendor_code


def _example(cls: Any, optional: bool) -> Any:
    """An instance with every required field (and every optional one when asked) filled."""
    values = {"string": "v", "int": 1, "long": 2**40, "boolean": True, "base64Binary": b"\x00pdf"}
    kwargs = {}
    for f in cls.__xml__.fields:
        if f.min_occurs == 0 and not optional and not f.repeated:
            continue
        one = _example(f.complex_type, optional) if f.complex_type else values[f.xsd_type]
        kwargs[f.attr] = (one, one) if f.repeated else one
    return cls(**kwargs)


@pytest.fixture(scope="module")
def vendor_validator() -> Validator:
    return schema_validator(VENDOR)


@pytest.mark.parametrize("optional", [False, True], ids=["required only", "everything"])
def test_every_vendor_request_is_written_valid_against_the_vendor_schema(
    vendor: Any, vendor_validator: Validator, optional: bool
) -> None:
    for name, op in vendor.OPERATIONS.items():
        body = b"".join(_wire.envelope(_example(op.input, optional)))
        assert vendor_validator.validate(body) == [], name


def test_vendor_only_requests_round_trip(vendor: Any, vendor_validator: Validator) -> None:
    m = vendor
    status = m.GetFaxStatus(
        user_id="mbx1234567890",
        str_pin="",
        fax_job_ids=m.FaxJobIds(item=(m.FaxJobId("J1"), m.FaxJobId("JRI-42"))),
    )
    cancel = m.CancelFax(user_id="mbx1234567890", str_pin="1234", job_id="J1")
    assert payload(status) == (
        '<GetFaxStatus xmlns="urn:FaxWS"><UserID>mbx1234567890</UserID><strPIN/><FaxJobIds>'
        "<item><JobId>J1</JobId></item><item><JobId>JRI-42</JobId></item></FaxJobIds>"
        "</GetFaxStatus>"
    )
    assert payload(cancel) == (
        '<CancelFax xmlns="urn:FaxWS"><UserID>mbx1234567890</UserID><strPIN>1234</strPIN>'
        "<JobId>J1</JobId></CancelFax>"
    )
    for request in (status, cancel):
        body = b"".join(_wire.envelope(request))
        assert vendor_validator.validate(body) == []
        # The check can fail: without strPIN the vendor schema refuses the same request.
        assert (
            vendor_validator.validate(
                body.replace(b"<strPIN/>", b"").replace(b"<strPIN>1234</strPIN>", b"")
            )
            != []
        )

    answer = (
        f'<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/" xmlns:f="{NS}"><S:Body>'
        "<f:FaxStatusResponse><f:return>true</f:return><f:FaxStatusList><f:item>"
        "<f:FaxJobId>J1</f:FaxJobId><f:FaxJobStatusId>3</f:FaxJobStatusId>"
        "<f:StatusDescription>In progress</f:StatusDescription><f:Error><f:ErrorCode>0"
        "</f:ErrorCode><f:ErrorString/></f:Error></f:item></f:FaxStatusList><f:WSError>"
        "<f:ErrorCode>0</f:ErrorCode><f:ErrorString/></f:WSError></f:FaxStatusResponse>"
        "</S:Body></S:Envelope>"
    ).encode()
    result = _reader.read_payload(
        _reader.soap_payload(_reader.parse_document(answer)), m.OPERATIONS["GetFaxStatus"].output
    )
    (item,) = result.fax_status_list.item
    assert (item.fax_job_id, item.fax_job_status_id, item.error.error_code) == ("J1", 3, 0)


def test_a_vendor_send_fax_ex_carries_its_document(vendor: Any) -> None:
    job = _example(vendor.FaxJob, optional=False)
    request = vendor.SendFaxEx(
        user_id="u",
        str_pin="p",
        recipients=vendor.FaxJobRecipients(item=(_example(vendor.FaxJobRecipient, False),)),
        fax_job_files=vendor.FaxJobFiles(item=(vendor.FaxJobFile(1, 101, b"%PDF-1.4"),)),
        job_details=job,
    )
    encoded = base64.b64encode(b"%PDF-1.4").decode()
    assert f"<FileData>{encoded}</FileData>" in payload(request)


# -- module quality, tools and pins --------------------------------------------------------------


def test_generated_modules_pass_mypy_strict(tmp_path: Path, vendor_code: str) -> None:
    names = small_wsdl(
        '<xs:complexType name="item"><xs:sequence><xs:element name="class" type="xs:string"/>'
        '</xs:sequence></xs:complexType><xs:complexType name="str"><xs:sequence/>'
        "</xs:complexType>"
        + op_with(
            '<xs:element name="item" type="t:item" minOccurs="0"/>'
            '<xs:element name="int" type="xs:int" minOccurs="0"/>'
            '<xs:element name="Text" type="t:str"/>'
        )
    )
    modules = {
        "vendor_bindings.py": vendor_code,
        "names_bindings.py": generate(tmp_path / "names", names),
        "built_in_bindings.py": generate(tmp_path / "built_in", small_wsdl(BUILT_INS)),
        "defaults_bindings.py": generate(tmp_path / "defaults", small_wsdl(DEFAULTS)),
        "refs_bindings.py": generate(
            tmp_path / "refs", small_wsdl(REFS + NESTED.replace("Op", "Nest"))
        ),
    }
    for file_name, code in modules.items():
        (tmp_path / file_name).write_text(code, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version=3.10",
            f"--cache-dir={tmp_path / '.mypy_cache'}",
            *modules,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_generator_does_not_need_zeep() -> None:
    code = (
        "import sys; sys.modules['zeep'] = None\n"  # any import of zeep fails
        "from pathlib import Path\n"
        "from faxws import _codegen\n"
        f"assert 'class GetFaxStatus:' in _codegen.generate(Path({str(VENDOR)!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


def test_ruff_is_pinned_exactly_to_the_release_that_formats_the_bindings() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'"ruff([^"]*)"', pyproject) == [f"=={_codegen.RUFF_VERSION}"]
    assert importlib.metadata.version("ruff") == _codegen.RUFF_VERSION


def test_another_ruff_release_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_codegen, "RUFF_VERSION", "0.0.1")
    with pytest.raises(_codegen.CodegenError, match=r"ruff 0\.0\.1 \(pinned in pyproject\.toml\)"):
        _codegen.generate(ROOT / "wsdl" / "FaxWS.wsdl")


def test_output_does_not_depend_on_the_working_directory(tmp_path: Path) -> None:
    # ruff is given the settings, not left to find a configuration file near the caller.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ruff]\nline-length = 40\n[tool.ruff.format]\nquote-style = "single"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "faxws._codegen", "--wsdl", str(ROOT / "wsdl" / "FaxWS.wsdl")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "src" / "faxws" / "bindings.py").read_text(encoding="utf-8")


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    assert make is not None, "make runs the test suite, so it is installed"
    # -o: the virtualenv counts as set up (this interpreter runs the generator instead).
    return subprocess.run(
        [
            make,
            "--no-print-directory",
            "-o",
            ".venv/.test-installed",
            f"PY={sys.executable}",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_make_bindings_takes_a_wsdl_and_an_output(tmp_path: Path, vendor_code: str) -> None:
    out = tmp_path / "vendor_bindings.py"
    done = _make("bindings", f"WSDL={VENDOR}", f"OUTPUT={out}")
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == vendor_code


def test_make_check_bindings_checks_the_packaged_pair_whatever_wsdl_says(tmp_path: Path) -> None:
    done = _make("check-bindings", f"WSDL={VENDOR}", f"OUTPUT={tmp_path / 'x.py'}")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "x.py").exists()
