"""Generate typed bindings (:mod:`faxws.bindings`) from a FaxWS WSDL (``make bindings``).

The WSDL and its schemas are read with lxml, not zeep, whose model flattens constructs
(choices, extensions, attributes) the bindings must refuse by name: any construct not handled
stops the generator with a :class:`CodegenError` naming it and where it is. The output is
deterministic and formatted by the pinned ruff.

Usage: ``python -m faxws._codegen [--wsdl PATH] [--output PATH]`` (default: standard output).
"""

from __future__ import annotations

import argparse
import keyword
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import etree

XS = "http://www.w3.org/2001/XMLSchema"
WSDL = "http://schemas.xmlsoap.org/wsdl/"
SOAP11 = "http://schemas.xmlsoap.org/wsdl/soap/"

#: The ruff release that formats the bindings; pyproject.toml pins the same one (a test checks).
RUFF_VERSION = "0.17.6"

#: Built-in XML Schema types the bindings support, with their Python annotation. The wire
#: writer and the response reader know exactly these.
PY_TYPES = {
    "string": "str",
    "int": "int",
    "long": "int",
    "boolean": "bool",
    "base64Binary": "Binary",
}

# Module-level names of the generated module and the names its annotations use: a class or an
# attribute named like one of them would shadow it, so such names get a trailing underscore.
_RESERVED = frozenset(
    {"annotations", "dataclass", "ClassVar", "Final", "BinaryContent", "Operation", "XmlField"}
    | {"Any", "Mapping", "XmlType", "NAMESPACE", "Binary", "OPERATIONS", "ELEMENTS"}
    | {"str", "int", "bool", "bytes", "tuple", "None"}
)

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True, remove_pis=True
)

QName = tuple[str, str]


class CodegenError(Exception):
    """The WSDL uses a construct the generator does not support, or is not readable."""


_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def attr_name(xml_name: str) -> str:
    """``RecipFaxNumber`` -> ``recip_fax_number``; ``return`` -> ``return_``."""
    snake = _WORD_BREAK.sub("_", xml_name).lower()
    snake = snake.replace("-", "_").replace(".", "_")
    return snake + "_" if keyword.iskeyword(snake) else snake


def _python_name(name: str, reserved: frozenset[str] | set[str], what: str) -> str:
    if not name.isidentifier() or name.startswith("__"):
        # A leading "__" would be name-mangled inside the class bodies that refer to it.
        raise CodegenError(f"{what}: {name!r} cannot be a Python name")
    if keyword.iskeyword(name) or name in reserved:
        return name + "_"
    return name


def class_name(xml_name: str, what: str) -> str:
    """The Python class of a type or element: its XML name, made a safe identifier."""
    name = xml_name.replace("-", "_").replace(".", "_")
    return _python_name(name, _RESERVED, what)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape(text: str) -> str:
    """Text for the inside of a double-quoted (or triple-quoted) literal: no text can end it
    early; unprintable characters as escapes, printable non-ASCII as it is (UTF-8)."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def _str(text: str) -> str:
    return f'"{_escape(text)}"'


def _is(node: etree._Element, ns: str, *names: str) -> bool:
    q = etree.QName(node)
    return q.namespace == ns and q.localname in names


def _children(node: etree._Element) -> list[etree._Element]:
    return [c for c in node if isinstance(c.tag, str)]


def _construct(node: etree._Element) -> str:
    """``xs:choice``, ``xs:attribute 'lang'``, ``xs:complexContent/xs:extension``..."""
    q = etree.QName(node)
    prefix = {XS: "xs", WSDL: "wsdl", SOAP11: "soap"}.get(q.namespace or "", q.namespace)
    text = f"{prefix}:{q.localname}" if prefix else q.localname
    if q.localname in ("complexContent", "simpleContent"):
        inner = [etree.QName(c).localname for c in _children(node) if not _is(c, XS, "annotation")]
        text += "".join(f"/xs:{i}" for i in inner)
    name = node.get("name") or node.get("ref")
    return f"{text} {name!r}" if name else text


def _text(node: etree._Element) -> str:
    return _one_line("".join(str(t) for t in node.itertext()))


def _documentation(node: etree._Element) -> str:
    docs = node.findall(f"{{{XS}}}annotation/{{{XS}}}documentation")
    return _one_line(" ".join(_text(d) for d in docs))


def _resolve(node: etree._Element, value: str, what: str) -> QName:
    """A QName-valued attribute, resolved with the namespaces in scope at ``node``."""
    prefix, _, local = value.strip().rpartition(":")
    namespace = node.nsmap.get(prefix or None)
    if namespace is None and prefix:
        raise CodegenError(f"{what}: the prefix {prefix!r} of {value!r} is not declared")
    return (namespace or "", local)


def _occurs(node: etree._Element, what: str) -> tuple[int, int | None]:
    try:
        low = int(node.get("minOccurs", "1"))
        high_text = node.get("maxOccurs", "1").strip()
        high = None if high_text == "unbounded" else int(high_text)
    except ValueError:
        raise CodegenError(f"{what}: minOccurs or maxOccurs is not a number") from None
    if low < 0 or (high is not None and (high < 1 or high < low)):
        raise CodegenError(f"{what}: minOccurs {low} and maxOccurs {high} cannot be expressed")
    return low, high


@dataclass
class _Schema:
    namespace: str
    qualified: bool
    """elementFormDefault="qualified": local elements are in the namespace."""


@dataclass
class _Field:
    name: str
    xsd_type: str
    complex_name: str
    min_occurs: int
    max_occurs: int | None
    doc: str
    default: str | None = None
    """Python literal of an XSD default, for a required single element."""

    @property
    def annotation(self) -> str:
        base = self.complex_name or PY_TYPES[self.xsd_type]
        if self.max_occurs != 1:
            return f"tuple[{base}, ...]"
        if self.min_occurs == 0:
            return f"{base} | None"
        return base

    @property
    def required(self) -> bool:
        return self.default is None and (self.min_occurs > 0 or self.max_occurs != 1)


@dataclass
class _Class:
    name: str
    xml_name: str
    doc: str
    fields: list[_Field]


@dataclass
class _Operation:
    name: str
    soap_action: str
    input: QName
    output: QName
    doc: str


class _Schemas:
    """Every xs:schema of the WSDL and of the files it imports or includes, by QName."""

    def __init__(self, wsdl_root: etree._Element, wsdl_path: Path) -> None:
        self.types: dict[QName, tuple[etree._Element, _Schema]] = {}
        self.simple_types: dict[QName, etree._Element] = {}
        self.elements: dict[QName, tuple[etree._Element, _Schema]] = {}
        self.order: list[tuple[str, QName]] = []
        """("type" | "element", name) in document order, imports where they stand."""
        self.unlocated: set[str] = set()
        """Namespaces imported without a schemaLocation (nothing to read)."""
        self._loaded: set[Path] = {wsdl_path.resolve()}
        for types in wsdl_root.findall(f"{{{WSDL}}}types"):
            for node in _children(types):
                if not _is(node, XS, "schema"):
                    raise CodegenError(f"wsdl:types: {_construct(node)} is not supported")
                self._add(node, wsdl_path, None)

    def _add(self, schema: etree._Element, path: Path, chameleon: str | None) -> None:
        namespace = schema.get("targetNamespace", chameleon or "")
        info = _Schema(namespace, schema.get("elementFormDefault") == "qualified")
        for node in _children(schema):
            kind, q = etree.QName(node).localname, (namespace, node.get("name", ""))
            if not _is(node, XS, *_SCHEMA_CHILDREN):
                raise CodegenError(f"schema {namespace}: {_construct(node)} is not supported")
            if kind in ("import", "include"):
                location = node.get("schemaLocation")
                if location is None and kind == "import":
                    self.unlocated.add(node.get("namespace", ""))
                    continue
                if location is None:
                    raise CodegenError(f"schema {namespace}: xs:include without schemaLocation")
                target = self._load(location, path)
                if target is not None:
                    root, target_path = target
                    self._add(root, target_path, namespace if kind == "include" else None)
            elif kind == "simpleType":
                self._define(kind, q)
                self.simple_types[q] = node
            elif kind == "complexType":
                self._define(kind, q)
                self.types[q] = (node, info)
                self.order.append(("type", q))
            elif kind == "element":
                if q in self.elements:
                    raise CodegenError(f"element {q[1]} is defined twice in {namespace!r}")
                self.elements[q] = (node, info)
                self.order.append(("element", q))

    def _define(self, kind: str, q: QName) -> None:
        if q in self.types or q in self.simple_types:
            raise CodegenError(f"{kind} {q[1]}: a type of that name is defined twice in {q[0]!r}")

    def _load(self, location: str, base: Path) -> tuple[etree._Element, Path] | None:
        url = urlsplit(location)
        if url.scheme not in ("", "file"):
            raise CodegenError(
                f"schemaLocation {location!r}: only local files are read (nothing is fetched)"
            )
        path = (base.parent / unquote(url.path)).resolve()
        if path in self._loaded:
            return None
        self._loaded.add(path)
        root = _parse(path)
        if not _is(root, XS, "schema"):
            raise CodegenError(f"{location}: not an XML Schema document")
        return root, path


# Of the definitions that are not types (attribute, attributeGroup, group, notation) only a
# reference to one matters, and it is refused where it is.
_SCHEMA_CHILDREN = frozenset(
    {"import", "include", "complexType", "simpleType", "element", "annotation"}
    | {"attribute", "attributeGroup", "group", "notation"}
)
_ELEMENT_ATTRIBUTES = frozenset(
    {"name", "type", "ref", "minOccurs", "maxOccurs", "nillable", "default", "form", "id"}
    | {"block", "final", "abstract", "fixed"}
)


def _parse(path: Path) -> etree._Element:
    try:
        return etree.parse(str(path), _PARSER).getroot()
    except OSError as exc:
        raise CodegenError(f"cannot read {path.name}: {exc}") from None
    except etree.XMLSyntaxError as exc:
        raise CodegenError(f"cannot parse {path.name}: {exc}") from None


def _read_operations(defs: etree._Element) -> list[_Operation]:
    if not _is(defs, WSDL, "definitions"):
        raise CodegenError("not a WSDL 1.1 document (no wsdl:definitions root)")
    imported = defs.find(f"{{{WSDL}}}import")
    if imported is not None:
        raise CodegenError(f"wsdl:import of {imported.get('location')!r} is not supported")
    tns = defs.get("targetNamespace", "")
    messages = {(tns, m.get("name", "")): m for m in defs.findall(f"{{{WSDL}}}message")}
    port_types = {(tns, p.get("name", "")): p for p in defs.findall(f"{{{WSDL}}}portType")}
    bindings = [
        b for b in defs.findall(f"{{{WSDL}}}binding") if b.find(f"{{{SOAP11}}}binding") is not None
    ]
    if len(bindings) != 1:
        raise CodegenError(f"expected one SOAP 1.1 binding, found {len(bindings)}")
    binding = bindings[0]
    style = binding.find(f"{{{SOAP11}}}binding").get("style", "document")  # type: ignore[union-attr]
    port_type = port_types.get(_resolve(binding, binding.get("type", ""), "wsdl:binding"))
    if port_type is None:
        raise CodegenError(f"binding {binding.get('name')}: its portType is not defined")
    abstract: dict[str, etree._Element] = {}
    for op in port_type.findall(f"{{{WSDL}}}operation"):
        if op.get("name", "") in abstract:
            raise CodegenError(
                f"operation {op.get('name')}: overloaded operations are not supported"
            )
        abstract[op.get("name", "")] = op
    operations = []
    for op in binding.findall(f"{{{WSDL}}}operation"):
        name = op.get("name", "")
        what = f"operation {name}"
        if name not in abstract:
            raise CodegenError(f"{what}: not in the portType")
        soap_op = op.find(f"{{{SOAP11}}}operation")
        action = soap_op.get("soapAction", "") if soap_op is not None else ""
        op_style = soap_op.get("style", style) if soap_op is not None else style
        if op_style != "document":
            raise CodegenError(f"{what}: style {op_style!r} is not supported (document only)")
        parts: dict[str, QName] = {}
        for direction in ("input", "output"):
            concrete = op.find(f"{{{WSDL}}}{direction}")
            message_ref = abstract[name].find(f"{{{WSDL}}}{direction}")
            if concrete is None or message_ref is None:
                raise CodegenError(f"{what}: no {direction} (one-way operations are not supported)")
            _check_body(concrete, f"{what} {direction}")
            message = messages.get(_resolve(message_ref, message_ref.get("message", ""), what))
            if message is None:
                raise CodegenError(f"{what}: the {direction} message is not defined")
            parts[direction] = _message_element(message)
        for node in [*op, *abstract[name]]:
            if isinstance(node.tag, str) and _is(node, WSDL, "fault"):
                raise CodegenError(f"{what}: {_construct(node)} is not supported")
        docs = [
            _text(d)
            for holder in (abstract[name], op)
            for d in holder.findall(f"{{{WSDL}}}documentation")
        ]
        doc = docs[0] if docs else ""
        operations.append(_Operation(name, action, parts["input"], parts["output"], doc))
    if not operations:
        raise CodegenError("the binding has no operations")
    return operations


def _check_body(node: etree._Element, what: str) -> None:
    for child in _children(node):
        if _is(child, WSDL, "documentation"):
            continue
        if not _is(child, SOAP11, "body"):
            raise CodegenError(f"{what}: {_construct(child)} is not supported")
        if child.get("use", "literal") != "literal":
            raise CodegenError(f"{what}: use={child.get('use')!r} is not supported (literal only)")


def _message_element(message: etree._Element) -> QName:
    what = f"message {message.get('name')}"
    parts = message.findall(f"{{{WSDL}}}part")
    if len(parts) != 1:
        raise CodegenError(f"{what}: {len(parts)} parts; one part (an element) is supported")
    element = parts[0].get("element")
    if element is None:
        raise CodegenError(f"{what}: a part with a type (rpc style) is not supported")
    return _resolve(parts[0], element, what)


class _Model:
    """Operations and classes, in dependency order, read from a WSDL."""

    def __init__(self, wsdl_path: Path) -> None:
        root = _parse(wsdl_path)
        self.operations = _read_operations(root)
        self.schemas = _Schemas(root, wsdl_path)
        self.namespace = self.operations[0].input[0]
        self.classes: dict[str, _Class] = {}
        self._claims: dict[str, str] = {}
        self._class_of: dict[tuple[str, QName], str] = {}
        self._type_fields: dict[QName, list[_Field]] = {}
        self._busy: set[tuple[str, QName]] = set()
        for op in self.operations:
            for q in (op.input, op.output):
                if q[0] != self.namespace:
                    raise CodegenError(
                        f"operation {op.name}: element {q[1]} is in {q[0]!r}, not in "
                        f"{self.namespace!r}; the bindings write one namespace"
                    )
                self.element_class(q)
        # Every type and element of the namespace, also those no operation uses yet.
        for kind, q in self.schemas.order:
            if q[0] != self.namespace:
                continue
            if kind == "type":
                self._type_class(q)
            elif self._has_complex_content(q):
                self.element_class(q)

    def _has_complex_content(self, q: QName) -> bool:
        node, _ = self.schemas.elements[q]
        if node.find(f"{{{XS}}}complexType") is not None:
            return True
        type_ref = node.get("type")
        return type_ref is not None and _resolve(node, type_ref, "") in self.schemas.types

    def _claim(self, name: str, what: str) -> str:
        other = self._claims.setdefault(name, what)
        if other != what:
            raise CodegenError(f"{other} and {what} would both be the class {name}")
        return name

    def _lookup_element(self, q: QName, what: str) -> tuple[etree._Element, _Schema]:
        found = self.schemas.elements.get(q)
        if found is None:
            raise CodegenError(f"{what}: element {{{q[0]}}}{q[1]} is not defined")
        node, _ = found
        for attr in ("substitutionGroup", "fixed"):
            if node.get(attr) is not None:
                raise CodegenError(f"element {q[1]}: {attr} is not supported")
        if node.get("abstract", "false") not in ("false", "0"):
            raise CodegenError(f"element {q[1]}: abstract elements are not supported")
        return found

    def element_class(self, q: QName) -> str:
        """The class of a top-level element (an operation's input or output, or a ref)."""
        key = ("element", q)
        if key in self._class_of:
            return self._class_of[key]
        what = f"element {q[1]}"
        node, schema = self._lookup_element(q, what)
        anonymous, type_ref = _declared_type(node, what)
        if type_ref is not None:
            tq = _resolve(node, type_ref, what)
            if tq not in self.schemas.types:
                raise CodegenError(f"{what}: its type {type_ref} is not a complex type")
            if tq[1] == q[1]:
                # <element name="T" type="tns:T"/>: the type's class has the element's name.
                self._class_of[key] = self._type_class(tq)
                return self._class_of[key]
            fields = self._fields_of_type(tq)
            doc = _documentation(node) or _documentation(self.schemas.types[tq][0])
        elif anonymous is not None:
            fields = []
            doc = _documentation(node) or _documentation(anonymous)
        name = self._claim(class_name(q[1], what), what)
        self._class_of[key] = name
        if anonymous is not None:
            self._busy.add(key)
            fields = self._complex_fields(anonymous, schema, name, what)
            self._busy.discard(key)
        # Added after its children: classes come out in dependency order.
        self.classes[name] = _Class(name, q[1], doc, fields)
        return name

    def _type_class(self, q: QName) -> str:
        key = ("type", q)
        if key in self._class_of:
            return self._class_of[key]
        what = f"complexType {q[1]}"
        name = self._claim(class_name(q[1], what), what)
        fields = self._fields_of_type(q)
        self._class_of[key] = name
        self.classes[name] = _Class(name, q[1], _documentation(self.schemas.types[q][0]), fields)
        return name

    def _fields_of_type(self, q: QName) -> list[_Field]:
        if q in self._type_fields:
            return self._type_fields[q]
        if q[0] != self.namespace:
            raise CodegenError(f"complexType {q[1]} is in {q[0]!r}; one namespace is supported")
        key = ("type", q)
        if key in self._busy:
            raise CodegenError(f"complexType {q[1]}: recursive types are not supported")
        self._busy.add(key)
        node, schema = self.schemas.types[q]
        what = f"complexType {q[1]}"
        fields = self._complex_fields(node, schema, class_name(q[1], what), what)
        self._busy.discard(key)
        self._type_fields[q] = fields
        return fields

    def _complex_fields(
        self, node: etree._Element, schema: _Schema, owner: str, what: str
    ) -> list[_Field]:
        for attr in ("mixed", "abstract"):
            if node.get(attr, "false") not in ("false", "0"):
                raise CodegenError(f"{what}: {attr}={node.get(attr)!r} is not supported")
        content = [c for c in _children(node) if not _is(c, XS, "annotation")]
        for i, child in enumerate(content):
            # Named: the first child that is not the one xs:sequence (an attribute after it...).
            if not _is(child, XS, "sequence") or i > 0:
                raise CodegenError(f"{what}: {_construct(child)} is not supported")
        if not content:
            return []  # an empty complex type: the element has no children
        sequence = content[0]
        if _occurs(sequence, what) != (1, 1):
            raise CodegenError(f"{what}: minOccurs/maxOccurs on xs:sequence are not supported")
        fields = []
        for child in _children(sequence):
            if _is(child, XS, "annotation"):
                continue
            if not _is(child, XS, "element"):
                raise CodegenError(f"{what}: {_construct(child)} in xs:sequence is not supported")
            fields.append(self._field(child, schema, owner, what))
        return fields

    def _field(self, node: etree._Element, schema: _Schema, owner: str, what: str) -> _Field:
        ref = node.get("ref")
        name = node.get("name", "") if ref is None else ref.rpartition(":")[2]
        where = f"{what}, element {name}"
        for attr in node.attrib:
            if "}" not in attr and attr not in _ELEMENT_ATTRIBUTES:
                raise CodegenError(f"{where}: the attribute {attr!r} is not supported")
        if node.get("fixed") is not None:
            raise CodegenError(f"{where}: fixed values are not supported")
        low, high = _occurs(node, where)
        if ref is not None:
            q = _resolve(node, ref, where)
            if q[0] != self.namespace:
                raise CodegenError(f"{where}: element ref {ref} is not in {self.namespace!r}")
            decl, _ = self._lookup_element(q, where)
            doc = _documentation(node) or _documentation(decl)
            if decl.find(f"{{{XS}}}complexType") is not None:
                if ("element", q) in self._busy:
                    raise CodegenError(f"{where}: recursive types are not supported")
                xsd_type, complex_name = "", self.element_class(q)
            else:
                xsd_type, complex_name = self._child_type(decl, name, owner, schema, where)
            default = decl.get("default")
        else:
            form = node.get("form", "qualified" if schema.qualified else "unqualified")
            if form != "qualified" or schema.namespace != self.namespace:
                raise CodegenError(
                    f"{where}: a local element outside the namespace {self.namespace!r} "
                    "(form or elementFormDefault unqualified) is not supported"
                )
            doc = _documentation(node)
            xsd_type, complex_name = self._child_type(node, name, owner, schema, where)
            default = node.get("default")
        literal = None
        if default is not None and low == 1 and high == 1:
            literal = _default_literal(default, xsd_type, where)
        return _Field(name, xsd_type, complex_name, low, high, doc, literal)

    def _child_type(
        self, node: etree._Element, name: str, owner: str, schema: _Schema, where: str
    ) -> tuple[str, str]:
        """(built-in type, "") or ("", class name) of an element declaration."""
        anonymous, type_ref = _declared_type(node, where)
        if anonymous is not None:
            nested = owner + name[:1].upper() + name[1:]
            cls = self._claim(class_name(nested, where), f"{where} (anonymous type)")
            fields = self._complex_fields(anonymous, schema, cls, f"{where} (anonymous type)")
            doc = _documentation(anonymous) or _documentation(node)
            self.classes[cls] = _Class(cls, name, doc, fields)
            return "", cls
        assert type_ref is not None  # _declared_type refuses an element with neither
        q = _resolve(node, type_ref, where)
        if q[0] == XS:
            if q[1] not in PY_TYPES:
                supported = ", ".join(f"xs:{t}" for t in PY_TYPES)
                raise CodegenError(
                    f"{where}: the built-in type xs:{q[1]} is not supported ({supported} are)"
                )
            return q[1], ""
        if q in self.schemas.types:
            if q[0] != self.namespace:
                raise CodegenError(f"{where}: type {type_ref} is not in {self.namespace!r}")
            return "", self._type_class(q)
        if q in self.schemas.simple_types:
            raise CodegenError(
                f"{where}: xs:simpleType {q[1]} ({_describe_simple(self.schemas.simple_types[q])}) "
                "is not supported"
            )
        if q[0] in self.schemas.unlocated:
            raise CodegenError(
                f"{where}: type {type_ref} is in {q[0]!r}, imported without a schemaLocation"
            )
        raise CodegenError(f"{where}: type {type_ref} is not defined")


def _declared_type(node: etree._Element, what: str) -> tuple[etree._Element | None, str | None]:
    """An element declaration's anonymous complex type and ``type`` attribute (not both None)."""
    for child in _children(node):
        if not _is(child, XS, "annotation", "complexType"):
            raise CodegenError(f"{what}: {_construct(child)} is not supported")
    anonymous = node.find(f"{{{XS}}}complexType")
    type_ref = node.get("type")
    if anonymous is None and type_ref is None:
        raise CodegenError(f"{what}: no type (xs:anyType) is not supported")
    return anonymous, type_ref


def _describe_simple(node: etree._Element) -> str:
    parts = [_construct(c) for c in _children(node) if not _is(c, XS, "annotation")]
    for restriction in node.findall(f"{{{XS}}}restriction"):
        parts += sorted({_construct(f) for f in _children(restriction)})
    return ", ".join(parts)


def _default_literal(value: str, xsd_type: str, where: str) -> str:
    try:
        if xsd_type in ("int", "long"):
            return repr(int(value.strip()))
        if xsd_type == "boolean":
            return {"true": "True", "1": "True", "false": "False", "0": "False"}[value.strip()]
    except (ValueError, KeyError):
        raise CodegenError(f"{where}: the default {value!r} is not an xs:{xsd_type}") from None
    if xsd_type == "string":
        return _str(value)
    raise CodegenError(f"{where}: a default value for this type is not supported")


def _docstring(text: str) -> str:
    return f'    """{_escape(text or "Not documented.")}"""'


_HEADER = '''\
# Generated from {source} by `make bindings` (python -m faxws._codegen).
# Do not edit: change the WSDL or XSD and regenerate.
"""Typed bindings of the FaxWS schema: a frozen dataclass per element and type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from faxws._protocol.xsd import BinaryContent, Operation, XmlField, XmlType

NAMESPACE: Final = {namespace}

#: base64Binary content: bytes, or content streamed while sending.
Binary = bytes | BinaryContent'''


def _render(model: _Model, source: str) -> str:
    """The module, laid out loosely: ruff formats it (trailing commas keep one item a line)."""
    out = [_HEADER.format(source=_one_line(source), namespace=_str(model.namespace))]
    reserved = _RESERVED | set(model.classes)
    for cls in model.classes.values():
        attrs: dict[str, str] = {}
        for f in cls.fields:
            attr = _python_name(attr_name(f.name), reserved, f"{cls.xml_name}, element {f.name}")
            if attr in attrs:
                raise CodegenError(
                    f"{cls.xml_name}: elements {attrs[attr]} and {f.name} would both be the "
                    f"attribute {attr}"
                )
            attrs[attr] = f.name
        attr_of = dict(zip((id(f) for f in cls.fields), attrs, strict=True))
        out += ["", "", "@dataclass(frozen=True, slots=True)", f"class {cls.name}:"]
        out += [_docstring(cls.doc), ""]
        for f in sorted(cls.fields, key=lambda f: not f.required):  # the required ones first
            default = "" if f.required else f" = {f.default or 'None'}"
            out += [f"    {attr_of[id(f)]}: {f.annotation}{default}", _docstring(f.doc)]
        xml_fields = "".join(
            f"XmlField({_str(attr_of[id(f)])}, {_str(f.name)}, {_str(f.xsd_type)}, "
            f"{f.complex_name or 'None'}, {f.min_occurs}, {f.max_occurs}), "
            for f in cls.fields
        )
        out += [
            "",
            f"    __xml__: ClassVar[XmlType] = XmlType({_str(cls.xml_name)}, ({xml_fields}),)",
        ]
    # Each operation is a typed constant (Operation[Request, Response]), so that a client's
    # call returns the output class without a cast; OPERATIONS maps the names to them.
    constants: dict[str, str] = {}
    for op in model.operations:
        constant = _python_name(
            _WORD_BREAK.sub("_", op.name).upper(),
            reserved | set(constants.values()),
            f"operation {op.name}",
        )
        constants[op.name] = constant
        classes = f"{model.element_class(op.input)}, {model.element_class(op.output)}"
        out += [
            "",
            "",
            f"{constant}: Final = Operation({_str(op.name)}, {_str(op.soap_action)}, {classes}, "
            f"{_str(op.doc)},)",
        ]
    elements = {q[1]: q for op in model.operations for q in (op.input, op.output)}
    out += [
        "",
        "#: Operations of the binding, by name.",
        "OPERATIONS: Final[Mapping[str, Operation[Any, Any]]] = {"
        + "".join(f"{_str(name)}: {constant}, " for name, constant in constants.items())
        + "}",
        "",
        "#: Classes of the top-level elements, by element name.",
        "ELEMENTS: Final = {"
        + "".join(f"{_str(name)}: {model.element_class(q)}, " for name, q in elements.items())
        + "}",
        "",
    ]
    return "\n".join(out)


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "ruff", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:  # pragma: no cover - no interpreter to run
        raise CodegenError(f"cannot run ruff to format the bindings: {exc}") from exc


def _format(code: str) -> str:
    """Format with the pinned ruff, with the project's settings given explicitly (not read from
    a configuration file), so the output does not depend on the directory it is made in."""
    found = _ruff("--version").stdout.split()
    if found[1:2] != [RUFF_VERSION]:
        have = found[1] if len(found) > 1 else "no ruff"
        raise CodegenError(
            f"the bindings are formatted with ruff {RUFF_VERSION} (pinned in pyproject.toml), "
            f"found {have}: pip install 'ruff=={RUFF_VERSION}'"
        )
    settings = ("--isolated", "--line-length=100", "--target-version=py310")
    done = _ruff("format", *settings, "--stdin-filename=bindings.py", "-", stdin=code)
    if done.returncode != 0:
        raise CodegenError(f"ruff could not format the bindings: {done.stderr.strip()}")
    return done.stdout


def generate(wsdl_path: Path) -> str:
    """Return the bindings module for ``wsdl_path``."""
    source = f"{wsdl_path.resolve().parent.name}/{wsdl_path.name}"
    return _format(_render(_Model(wsdl_path), source))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faxws._codegen", description=__doc__)
    parser.add_argument("--wsdl", type=Path, default=Path("wsdl/FaxWS.wsdl"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        code = generate(args.wsdl)
    except CodegenError as exc:
        print(f"faxws codegen: {args.wsdl}: {exc}", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(code)
    else:
        args.output.write_text(code, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
