"""Validation of SOAP payloads against the FaxWS schema (``wsdl/FaxWS.xsd``).

>>> validate(b'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>u</UserID>'
...          b'</GetFaxBroadcastReport>')[0].message
'missing child element; expected strPIN'

A document is a whole SOAP 1.1 envelope (Envelope, optional Header, Body with exactly one
payload element) or a bare payload element; any request or response element of the schema.
Hostile documents (a DTD, entities, external references, non-XML) give an issue; nothing is
ever fetched or expanded, and the parser's size and depth limits stay on.

The schema is compiled once per process and shared between threads; libxml2 keeps the last
validation's errors on the schema object, so validations are serialized by a lock.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from lxml import etree

from faxws import _resources
from faxws._xsd import NAMESPACE
from faxws.errors import BadInputError

__all__ = ["ValidationIssue", "validate", "validate_or_raise"]

SOAP11_NS = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP12_NS = "http://www.w3.org/2003/05/soap-envelope"

Document = bytes | str | os.PathLike[str] | etree._Element


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One problem found in a document."""

    line: int
    """Line number in the document (1-based), or 0 when unknown."""
    path: str
    """Element path such as ``/SendFax/Recipients/item[2]/RecipFaxNumber``."""
    message: str

    def __str__(self) -> str:
        return f"{self.line}: {self.path}: {self.message}"


_lock = threading.Lock()
_schema: etree.XMLSchema | None = None


def schema() -> etree.XMLSchema:
    """The compiled FaxWS schema (compiled on first use, once per process)."""
    global _schema
    if _schema is None:
        with _lock:
            if _schema is None:
                parser = etree.XMLParser(resolve_entities=False, no_network=True)
                _schema = etree.XMLSchema(etree.fromstring(_resources.read_xsd(), parser))
    return _schema


def _global_elements() -> frozenset[str]:
    from faxws.bindings import ELEMENTS

    return frozenset(ELEMENTS)


# -- paths and messages -----------------------------------------------------------------------


def element_path(element: etree._Element, root: etree._Element | None = None) -> str:
    """``/SendFax/Recipients/item[2]/RecipFaxNumber``: local names from ``root`` down, with a
    position where an element has same-named siblings."""
    steps: list[str] = []
    node: etree._Element | None = element
    while node is not None:
        name = etree.QName(node).localname
        parent = node.getparent()
        if parent is not None and node is not root:
            same = [c for c in parent if c.tag == node.tag]
            if len(same) > 1:
                name += f"[{same.index(node) + 1}]"
        steps.append(name)
        if node is root:
            break
        node = parent
    return "/" + "/".join(reversed(steps))


_STEP = re.compile(r"^(?:(?P<prefix>[^:\[\]]+):)?(?P<name>[^:\[\]]+)(?:\[(?P<pos>\d+)\])?$")


def _resolve(root: etree._Element, path: str) -> etree._Element | None:
    """Find the node of a libxml2 error path (``/*/*[3]/f:item[2]``) below ``root``."""
    steps = [s for s in path.split("/") if s]
    if not steps:
        return None
    node = root
    for step in steps[1:]:
        m = _STEP.match(step)
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


_REWRITES = [
    (
        re.compile(r"Element '([^']+)': This element is not expected\. Expected is \( (.+?) \)\."),
        r"\1 is not expected here; expected \2",
    ),
    (re.compile(r"Element '([^']+)': This element is not expected\."), r"\1 is not expected here"),
    (
        re.compile(r"Element '([^']+)': Missing child element\(s\)\. Expected is \( (.+?) \)\."),
        r"missing child element; expected \2",
    ),
    (
        re.compile(r"Element '([^']+)': '(.*)' is not a valid value of the atomic type '(.+?)'\."),
        r"'\2' is not a valid \3",
    ),
    (
        re.compile(
            r"Element '([^']+)': No matching global declaration available for the "
            r"validation root\."
        ),
        r"\1 is not an element of the schema",
    ),
    (re.compile(r"^Element '([^']+)': "), ""),
]


def _readable(message: str) -> str:
    text = message.replace("{" + NAMESPACE + "}", "").strip()
    for pattern, replacement in _REWRITES:
        new = pattern.sub(replacement, text)
        if new != text:
            return new.rstrip(".")
    return text.rstrip(".")


# -- validation ---------------------------------------------------------------------------------


def schema_issues(payload: etree._Element) -> list[ValidationIssue]:
    """Check one payload element (and what it holds) against the schema."""
    xsd = schema()
    with _lock:
        valid = xsd.validate(payload)
        errors: list[etree._LogEntry] = list(xsd.error_log)  # type: ignore[call-overload]
    if valid:
        return []
    issues = []
    for error in errors:
        node = _resolve(payload, error.path or "")
        path = element_path(node, payload) if node is not None else element_path(payload, payload)
        issues.append(ValidationIssue(error.line, path, _readable(error.message)))
    return issues


def _parse(data: bytes) -> tuple[etree._Element | None, list[ValidationIssue]]:
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        return None, [ValidationIssue(0, "/", "the document is empty")]
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        line = data[: max(data.find(b"<!DOCTYPE"), data.find(b"<!ENTITY"))].count(b"\n") + 1
        return None, [ValidationIssue(line, "/", "DTDs and entity declarations are not allowed")]
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        return None, [ValidationIssue(line, "/", f"not well-formed XML: {exc.msg}")]
    return root, []


def _line(element: etree._Element) -> int:
    line = element.sourceline
    return line if isinstance(line, int) else 0


def _check(root: etree._Element) -> list[ValidationIssue]:
    qname = etree.QName(root)
    line: int = _line(root)
    if qname.namespace == SOAP12_NS and qname.localname == "Envelope":
        return [ValidationIssue(line, "/Envelope", "a SOAP 1.2 envelope; FaxWS uses SOAP 1.1")]
    if qname.namespace == SOAP11_NS and qname.localname == "Envelope":
        return _check_envelope(root)
    return _check_payload(root)


def _check_envelope(envelope: etree._Element) -> list[ValidationIssue]:
    children = [c for c in envelope if isinstance(c.tag, str)]
    header, body = f"{{{SOAP11_NS}}}Header", f"{{{SOAP11_NS}}}Body"
    tags = [c.tag for c in children]
    if tags not in ([body], [header, body]):
        names = ", ".join(etree.QName(c).localname for c in children) or "nothing"
        return [
            ValidationIssue(
                _line(envelope),
                "/Envelope",
                f"an Envelope holds an optional Header and then a Body, not {names}",
            )
        ]
    body_el = children[-1]
    payloads = [c for c in body_el if isinstance(c.tag, str)]
    if len(payloads) != 1:
        return [
            ValidationIssue(
                _line(body_el),
                "/Envelope/Body",
                f"the Body holds {len(payloads)} elements; exactly one is expected",
            )
        ]
    return _check_payload(payloads[0])


def _check_payload(payload: etree._Element) -> list[ValidationIssue]:
    qname = etree.QName(payload)
    line: int = _line(payload)
    if qname.localname not in _global_elements():
        known = ", ".join(sorted(_global_elements()))
        return [
            ValidationIssue(
                line, f"/{qname.localname}", f"unknown root element; expected one of {known}"
            )
        ]
    if qname.namespace != NAMESPACE:
        where = f"namespace {qname.namespace!r}" if qname.namespace else "no namespace"
        return [
            ValidationIssue(
                line, f"/{qname.localname}", f"{qname.localname} is in {where}, not {NAMESPACE!r}"
            )
        ]
    return schema_issues(payload)


def _load(document: Document) -> tuple[etree._Element | None, list[ValidationIssue]]:
    if isinstance(document, etree._Element):
        return document, []
    if isinstance(document, bytes):
        return _parse(document)
    if isinstance(document, str) and document.lstrip("\ufeff \t\r\n").startswith("<"):
        return _parse(document.encode("utf-8"))
    if isinstance(document, (str, os.PathLike)):
        return _parse(Path(document).read_bytes())
    raise BadInputError(
        "document",
        f"must be bytes, XML text, a path or an lxml element, not {type(document).__name__}",
    )


def validate(document: Document) -> list[ValidationIssue]:
    """The problems of ``document`` (empty when valid).

    ``document`` is bytes, XML text (a ``str`` starting with ``<``), a path (``str`` or
    ``os.PathLike``), or an lxml element. A path that cannot be read raises ``OSError``.
    """
    root, issues = _load(document)
    if root is None:
        return issues
    return _check(root)


def validate_or_raise(document: Document) -> None:
    """Raise :class:`~faxws.errors.BadInputError` carrying every issue, when there are any."""
    issues = validate(document)
    if issues:
        first = issues[0]
        raise BadInputError(first.path, first.message, issues=issues)


def check_request(skeleton: bytes, request_id: str) -> None:
    """Raise BadInputError when a request the client wrote does not fit the schema."""
    root, issues = _parse(skeleton)
    if root is not None:
        issues = _check(root)
    if issues:
        first = issues[0]
        raise BadInputError(first.path, first.message, request_id=request_id, issues=issues)


# -- the command line -----------------------------------------------------------------------


def validate_documents(
    names: Sequence[str], *, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """``faxws validate``: 0 all valid, 1 any invalid, 2 a file cannot be read."""
    results: list[dict[str, object]] = []
    unreadable = invalid = False
    for name in names:
        try:
            data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            unreadable = True
            print(f"{name}: cannot read: {exc.strerror or exc}", file=err)
            results.append({"file": name, "error": f"cannot read: {exc.strerror or exc}"})
            continue
        issues = validate(data)
        invalid = invalid or bool(issues)
        results.append({"file": name, "valid": not issues, "issues": [asdict(i) for i in issues]})
        if not as_json:
            for issue in issues:
                print(f"{name}:{issue.line}: {issue.path}: {issue.message}", file=out)
            if not issues:
                print(f"{name}: valid", file=out)
    if as_json:
        out.write(json.dumps(results, indent=2) + "\n")
    return 2 if unreadable else 1 if invalid else 0
