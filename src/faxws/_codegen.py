"""Generate :mod:`faxws.bindings` from the WSDL and XSD (``make bindings``).

zeep parses the WSDL and is the model of the operations and types: binding, soapAction,
input and output elements, children in order, occurrences and built-in types. The
``xs:documentation`` lines, which zeep does not keep, are read from the schema files with lxml.
The output is deterministic (no timestamps, schema order) and formatted with ruff.

Usage: ``python -m faxws._codegen [--wsdl PATH] [--output PATH]``; without ``--output`` the
module is written to standard output.
"""

from __future__ import annotations

import argparse
import keyword
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

XS = "http://www.w3.org/2001/XMLSchema"
WSDL = "http://schemas.xmlsoap.org/wsdl/"

#: Built-in XML Schema types the bindings support, with their Python annotation.
PY_TYPES = {
    "string": "str",
    "int": "int",
    "long": "int",
    "boolean": "bool",
    "base64Binary": "Binary",
}


class CodegenError(Exception):
    """The WSDL uses a construct the generator does not support."""


def attr_name(xml_name: str) -> str:
    """``RecipFaxNumber`` -> ``recip_fax_number``; ``return`` -> ``return_``."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", xml_name).lower()
    return snake + "_" if keyword.iskeyword(snake) else snake


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_documentation(wsdl_path: Path) -> dict[tuple[str, str], str]:
    """Documentation per (owner, child): owner is a complexType or top-level element name,
    child is "" for the owner itself."""
    docs: dict[tuple[str, str], str] = {}
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    paths = [wsdl_path, *sorted(wsdl_path.parent.glob("*.xsd"))]
    for path in paths:
        root = etree.parse(str(path), parser).getroot()
        for owner in root.iter(f"{{{XS}}}complexType", f"{{{XS}}}element"):
            name = owner.get("name")
            parent = owner.getparent()
            if name is None or parent is None or parent.tag != f"{{{XS}}}schema":
                continue
            docs[(name, "")] = _doc_of(owner)
            for child in owner.iter(f"{{{XS}}}element"):
                if child is not owner and child.get("name"):
                    docs[(name, child.get("name", ""))] = _doc_of(child)
        for op in root.iter(f"{{{WSDL}}}operation"):
            doc = op.find(f"{{{WSDL}}}documentation")
            if doc is not None and doc.text:
                docs[("operation", op.get("name", ""))] = _one_line(doc.text)
    return docs


def _doc_of(node: Any) -> str:
    texts = node.xpath("./xs:annotation/xs:documentation/text()", namespaces={"xs": XS})
    return _one_line(" ".join(str(t) for t in texts))


@dataclass
class _Field:
    attr: str
    name: str
    xsd_type: str
    complex_name: str
    min_occurs: int
    max_occurs: int | None
    doc: str

    @property
    def annotation(self) -> str:
        base = self.complex_name or PY_TYPES[self.xsd_type]
        if self.max_occurs != 1:
            return f"tuple[{base}, ...]"
        if self.min_occurs == 0:
            return f"{base} | None"
        return base


@dataclass
class _Class:
    name: str
    doc: str
    fields: list[_Field]


@dataclass
class _Operation:
    name: str
    soap_action: str
    input: str
    output: str
    doc: str


class _Model:
    """What the generator reads out of zeep's parsed WSDL."""

    def __init__(self, wsdl_path: Path) -> None:
        import zeep  # only the generator needs zeep

        self.docs = read_documentation(wsdl_path)
        client = zeep.Client(str(wsdl_path))  # type: ignore[no-untyped-call]
        self.namespace = ""
        self.classes: dict[str, _Class] = {}
        self.operations: list[_Operation] = []
        bindings = list(client.wsdl.bindings.values())
        if len(bindings) != 1:
            raise CodegenError(f"expected one binding, found {len(bindings)}")
        for name, op in bindings[0]._operations.items():
            in_el, out_el = op.input.body, op.output.body
            if in_el is None or out_el is None:
                raise CodegenError(f"operation {name}: input and output must be one element")
            self.namespace = etree.QName(in_el.qname).namespace or ""
            self._add_element(in_el)
            self._add_element(out_el)
            self.operations.append(
                _Operation(
                    name=name,
                    soap_action=op.soapaction or "",
                    input=in_el.type.name,
                    output=out_el.type.name,
                    doc=self.docs.get(("operation", name), ""),
                )
            )

    def _add_element(self, element: Any) -> None:
        self._add_type(element.type, etree.QName(element.qname).localname)

    def _add_type(self, xsd_type: Any, owner: str) -> str:
        name = xsd_type.name or owner
        if name in self.classes:
            return str(name)
        nested = xsd_type.elements_nested
        if len(nested) != 1 or type(nested[0][1]).__name__ != "Sequence":
            raise CodegenError(f"type {name}: only an xs:sequence of elements is supported")
        if xsd_type.attributes:
            raise CodegenError(f"type {name}: attributes are not supported")
        fields: list[_Field] = []
        for child_name, child in xsd_type.elements:
            if type(child).__name__ != "Element":
                raise CodegenError(f"type {name}: {child_name} is not a plain element")
            child_type = child.type
            if child_type.qname is not None and etree.QName(child_type.qname).namespace == XS:
                xsd_name = etree.QName(child_type.qname).localname
                if xsd_name not in PY_TYPES:
                    raise CodegenError(f"{name}/{child_name}: xs:{xsd_name} is not supported")
                complex_name = ""
            else:
                xsd_name = ""
                complex_name = self._add_type(child_type, f"{name}{child_name}")
            max_occurs = None if child.max_occurs == "unbounded" else int(child.max_occurs)
            fields.append(
                _Field(
                    attr=attr_name(child_name),
                    name=child_name,
                    xsd_type=xsd_name,
                    complex_name=complex_name,
                    min_occurs=int(child.min_occurs),
                    max_occurs=max_occurs,
                    doc=self.docs.get((name, child_name), ""),
                )
            )
        # Inserted after the children: classes come out in dependency order.
        self.classes[name] = _Class(name=name, doc=self.docs.get((name, ""), ""), fields=fields)
        return str(name)


def _docstring(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') or "Not documented."
    return [f'{indent}"""{text}"""']


def _render(model: _Model, source: str) -> str:
    out: list[str] = [
        f"# Generated from {source} by `make bindings` (python -m faxws._codegen).",
        "# Do not edit: change the WSDL or XSD and regenerate.",
        '"""Typed bindings of the FaxWS schema: a frozen dataclass per element and type."""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass",
        "from typing import ClassVar, Final",
        "",
        "from faxws._xsd import BinaryContent, Operation, XmlField, XmlType",
        "",
        f'NAMESPACE: Final = "{model.namespace}"',
        "",
        "#: base64Binary content: bytes, or content streamed while sending.",
        "Binary = bytes | BinaryContent",
    ]
    for cls in model.classes.values():
        out += ["", "", "@dataclass(frozen=True, slots=True)", f"class {cls.name}:"]
        out += _docstring(cls.doc, "    ")
        out.append("")
        required = [f for f in cls.fields if f.min_occurs > 0 or f.max_occurs != 1]
        optional = [f for f in cls.fields if f not in required]
        for f in required + optional:
            default = " = None" if f in optional else ""
            out.append(f"    {f.attr}: {f.annotation}{default}")
            out += _docstring(f.doc, "    ")
        out += [
            "",
            "    __xml__: ClassVar[XmlType] = XmlType(",
            f'        "{cls.name}",',
            "        (",
        ]
        for f in cls.fields:
            complex_ref = f.complex_name or "None"
            max_occurs = "None" if f.max_occurs is None else str(f.max_occurs)
            out.append(
                f'            XmlField("{f.attr}", "{f.name}", "{f.xsd_type}", {complex_ref}, '
                f"{f.min_occurs}, {max_occurs}),"
            )
        out += ["        ),", "    )"]
    out += ["", "", "#: Operations of the binding, by name.", "OPERATIONS: Final = {"]
    for op in model.operations:
        out += [
            f'    "{op.name}": Operation(',
            f'        "{op.name}",',
            f'        "{op.soap_action}",',
            f"        {op.input},",
            f"        {op.output},",
            f'        "{op.doc}",',
            "    ),",
        ]
    out += [
        "}",
        "",
        "#: Classes of the top-level elements, by element name.",
        "ELEMENTS: Final = {",
    ]
    for name in _top_level(model):
        out.append(f'    "{name}": {name},')
    out += ["}", ""]
    return "\n".join(out)


def _top_level(model: _Model) -> Iterable[str]:
    for op in model.operations:
        yield op.input
        yield op.output


def _format(code: str) -> str:
    """Format with ruff, so the output is what the project's formatter keeps."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ruff", "format", "--line-length", "100", "-"],
            input=code,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:  # pragma: no cover - no interpreter to run
        raise CodegenError(f"cannot run ruff to format the bindings: {exc}") from exc
    if done.returncode != 0:
        raise CodegenError(f"ruff could not format the bindings: {done.stderr.strip()}")
    return done.stdout


def generate(wsdl_path: Path, source_name: str | None = None) -> str:
    """Return the bindings module for ``wsdl_path``."""
    source = source_name or f"{wsdl_path.parent.name}/{wsdl_path.name}"
    return _format(_render(_Model(wsdl_path), source))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faxws._codegen", description=__doc__)
    parser.add_argument("--wsdl", type=Path, default=Path("wsdl/FaxWS.wsdl"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        code = generate(args.wsdl)
    except CodegenError as exc:
        print(f"faxws codegen: {exc}", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(code)
    else:
        args.output.write_text(code, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
