"""Validation of SOAP payloads against the FaxWS schema (``wsdl/FaxWS.xsd``).

The schema is compiled once per process. libxml2 keeps the last validation's errors on the
schema object, so validations are serialized by a lock; they are short (file data is never
part of what the client validates).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from lxml import etree

from faxws import _resources
from faxws._reader import ReadError, parse_document
from faxws.errors import BadInputError

__all__ = ["ValidationIssue"]


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


def element_path(element: etree._Element) -> str:
    """``/SendFax/Recipients/item[2]/RecipFaxNumber``: local names, positions where needed."""
    steps: list[str] = []
    node: etree._Element | None = element
    while node is not None:
        name = etree.QName(node).localname
        parent = node.getparent()
        if parent is not None:
            same = [c for c in parent if c.tag == node.tag]
            if len(same) > 1:
                name += f"[{same.index(node) + 1}]"
        steps.append(name)
        node = parent
    return "/" + "/".join(reversed(steps))


def schema_issues(payload: etree._Element) -> list[ValidationIssue]:
    """Check one payload element (its own document) against the schema."""
    tree = etree.ElementTree(payload)
    xsd = schema()
    with _lock:
        valid = xsd.validate(tree)
        errors: list[etree._LogEntry] = list(xsd.error_log)  # type: ignore[call-overload]
    if valid:
        return []
    issues = []
    for error in errors:
        path = ""
        if error.path:
            found = tree.xpath(error.path)
            if isinstance(found, list) and found and isinstance(found[0], etree._Element):
                path = element_path(found[0])
        issues.append(ValidationIssue(error.line, path, _readable(error.message)))
    return issues


def _readable(message: str) -> str:
    # libxml2 spells names as {namespace}local; the namespace is always ours here.
    return message.replace("{urn:FaxWS}", "")


def check_request(skeleton: bytes, request_id: str) -> None:
    """Raise BadInputError when a request envelope's payload does not fit the schema."""
    try:
        root = parse_document(skeleton)
    except ReadError as exc:  # pragma: no cover - the writer always writes XML
        raise BadInputError("request", exc.message, request_id=request_id) from None
    payload = root[1][0]
    issues = schema_issues(payload)
    if issues:
        first = issues[0]
        raise BadInputError(
            first.path or "request", first.message, request_id=request_id, issues=issues
        )
