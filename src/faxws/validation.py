"""Validation of SOAP payloads against the FaxWS schema (``wsdl/FaxWS.xsd``).

A document is a SOAP 1.1 envelope (optional Header, Body with exactly one payload element) or
a bare payload element. Hostile documents (a DTD, entities, non-XML) give an issue: nothing is
fetched or expanded, and the parser's size and depth limits stay on. The schema is compiled
once per process; a thread validating while others do uses a compiled copy of its own.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lxml import etree

from faxws import _resources
from faxws._protocol import safexml as _safexml
from faxws._protocol.soap import SOAP11_NS, SOAP12_NS
from faxws.errors import BadInputError

__all__ = ["ValidationIssue", "ValidationIssues", "Validator", "validate", "validate_or_raise"]


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


class ValidationIssues(list[ValidationIssue]):
    """The issues of a document, in the order libxml2 found them, and how many there were:
    ``total`` is larger than ``len(issues)`` when ``max_issues`` left some out."""

    total: int
    """How many issues the document has, also those not in the list."""

    def __init__(self, issues: Iterable[ValidationIssue] = (), total: int | None = None) -> None:
        super().__init__(issues)
        self.total = len(self) if total is None else total

    @property
    def truncated(self) -> bool:
        """True when ``max_issues`` left issues out."""
        return self.total > len(self)


def _check_max_issues(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInputError("max_issues", "must be a whole number > 0, or None for every issue")
    return value


XS_NS = "http://www.w3.org/2001/XMLSchema"


class Validator:
    """A compiled schema and the checks around it, safe to share between threads: the
    shipped schema, or another copy (``Validator.from_path(xsd)``)."""

    def __init__(self, xsd: bytes | None = None, *, base_url: str | None = None) -> None:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        data = xsd if xsd is not None else _resources.read_xsd()
        doc = etree.fromstring(data, parser, base_url=base_url)  # type: ignore[arg-type]  # lxml's default is None
        self.namespace = doc.get("targetNamespace") or ""
        self.elements = frozenset(
            str(e.get("name")) for e in doc.findall(f"{{{XS_NS}}}element") if e.get("name")
        )
        self.binary_elements = _binary_elements(doc)
        self._doc = doc
        # Compiled copies not in use (see _validate); the first now, so a bad schema fails here.
        self._idle = [etree.XMLSchema(doc)]

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Validator:
        from pathlib import Path  # kept off the command line's import path

        p = Path(path)
        return cls(p.read_bytes(), base_url=p.resolve().as_uri())

    def validate(self, document: Document, *, max_issues: int | None = None) -> ValidationIssues:
        """See :func:`validate`."""
        _check_max_issues(max_issues)
        payload = _payload(document)
        if isinstance(payload, ValidationIssues):
            return payload
        qname = etree.QName(payload)
        if qname.localname not in self.elements:
            known = ", ".join(sorted(self.elements))
            message = f"unknown root element; expected one of {known}"
            return _one(_line(payload), f"/{qname.localname}", message)
        if qname.namespace != self.namespace:
            where = f"namespace {qname.namespace!r}" if qname.namespace else "no namespace"
            message = f"{qname.localname} is in {where}, not {self.namespace!r}"
            return _one(_line(payload), f"/{qname.localname}", message)
        return self.schema_issues(payload, max_issues=max_issues)

    def validate_or_raise(self, document: Document, *, max_issues: int | None = None) -> None:
        """See :func:`validate_or_raise`."""
        issues = self.validate(document, max_issues=max_issues)
        if issues:
            raise BadInputError(issues[0].path, issues[0].message, issues=issues)

    def schema_issues(
        self, payload: etree._Element, *, max_issues: int | None = None
    ) -> ValidationIssues:
        """Check one payload element (and what it holds) against the schema alone; see
        :func:`validate` for ``max_issues``."""
        limit = _check_max_issues(max_issues)
        errors = self._validate(payload)
        tree = _Tree(payload)
        readable: dict[str, str] = {}  # the same few messages come back for many elements
        issues = ValidationIssues(total=len(errors))
        for error in errors[:limit]:
            steps = tuple(s for s in (error.path or "").split("/") if s)[1:]
            node = tree.walk(payload, steps)
            message = readable.get(error.message)
            if message is None:
                message = readable[error.message] = _readable(error.message, self.namespace)
            path = tree.path(node if node is not None else payload)
            issues.append(ValidationIssue(error.line, path, message))
        return issues

    def is_valid(self, payload: etree._Element) -> bool:
        """Whether ``payload`` (and what it holds) is valid against the schema: as
        :meth:`schema_issues` finding none, without building the list."""
        return not self._validate(payload)

    def _validate(self, payload: etree._Element) -> list[etree._LogEntry]:
        """libxml2's errors for ``payload``, in the order it found them (none when valid).

        lxml keeps the error log on the schema object, so a copy used by two threads at once
        could hand one the other's errors: each call takes a compiled copy no other thread is
        using (compiled in a fraction of a millisecond, and kept), so nothing waits.
        """
        try:
            schema = self._idle.pop()  # list.pop and list.append are atomic
        except IndexError:
            schema = etree.XMLSchema(self._doc)
        try:
            if schema.validate(payload):
                return []
            return list(schema.error_log)  # type: ignore[call-overload,no-any-return]
        finally:
            self._idle.append(schema)


def _binary_elements(doc: etree._Element) -> frozenset[str]:
    """The local names the schema declares as xs:base64Binary, and as nothing else."""
    binary: set[str] = set()
    other: set[str] = set()
    for element in doc.iter(f"{{{XS_NS}}}element"):
        name = element.get("name")
        if not name:
            continue
        prefix, _, local = (element.get("type") or "").rpartition(":")
        is_binary = local == "base64Binary" and element.nsmap.get(prefix or None) == XS_NS
        (binary if is_binary else other).add(name)
    return frozenset(binary - other)


def path_of(root: etree._Element, element: etree._Element) -> str:
    """The path of ``element`` below ``root`` as issues name it
    (``/SendFax/Recipients/item[2]/RecipFaxNumber``)."""
    return _Tree(root).path(element)


_default: Validator | None = None
_default_lock = threading.Lock()


def default_validator() -> Validator:
    """The validator of the shipped schema, compiled on first use, once per process."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Validator()
    return _default


def schema_issues(payload: etree._Element, *, max_issues: int | None = None) -> ValidationIssues:
    """Check one payload element against the shipped schema."""
    return default_validator().schema_issues(payload, max_issues=max_issues)


_STEP = re.compile(r"^(?:(?P<prefix>[^:\[\]]+):)?(?P<name>[^:\[\]]+)(?:\[(?P<pos>\d+)\])?$")


class _Tree:
    """Children, sibling positions and paths below ``root``, each worked out once per parent
    (or element) and kept, so that the paths of N errors among many siblings cost
    O(document + N), not O(N x siblings). One object serves one unchanged document."""

    def __init__(self, root: etree._Element) -> None:
        self.root = root
        # Per parent, its element children by local name, and all of them under "*".
        self._named: dict[etree._Element, dict[str, list[etree._Element]]] = {}
        # An element's position among the siblings of its tag; per parent, the count of each.
        self._index: dict[etree._Element, int] = {}
        self._counts: dict[etree._Element, dict[object, int]] = {}
        self._paths: dict[etree._Element, str] = {}

    def named(self, node: etree._Element, name: str) -> list[etree._Element]:
        table = self._named.get(node)
        if table is None:
            table = self._named[node] = {"*": [c for c in node if isinstance(c.tag, str)]}
            for child in table["*"]:
                table.setdefault(etree.QName(child).localname, []).append(child)
        return table.get(name, [])

    def walk(self, node: etree._Element, steps: tuple[str, ...]) -> etree._Element | None:
        """The node the steps of a libxml2 error path (``/*/*[3]/f:item[2]``) lead to from
        ``node``, the element of the first step (None when there is none such)."""
        for step in steps:
            m = _STEP.match(step)
            if m is None:
                return None
            children = self.named(node, m.group("name"))
            pos = int(m.group("pos") or 1)
            if pos > len(children):
                return None
            node = children[pos - 1]
        return node

    def path(self, element: etree._Element) -> str:
        """``/SendFax/Recipients/item[2]/RecipFaxNumber``: local names from the root down, with
        a position where an element has same-named siblings (kept for the next call)."""
        chain: list[etree._Element] = []
        prefix = ""
        node: etree._Element | None = element
        while node is not None:
            known = self._paths.get(node)
            if known is not None:
                prefix = known
                break
            chain.append(node)
            if node is self.root:
                break
            node = node.getparent()
        for node in reversed(chain):
            prefix += "/" + self._step(node)
            self._paths[node] = prefix
        return prefix

    def _step(self, node: etree._Element) -> str:
        name: str = etree.QName(node).localname
        parent = node.getparent()
        if parent is None or node is self.root:
            return name
        index = self._index.get(node)
        if index is None:
            counts: dict[object, int] = {}
            for child in parent:
                counts[child.tag] = self._index[child] = counts.get(child.tag, 0) + 1
            self._counts[parent] = counts
            index = self._index[node]
        return f"{name}[{index}]" if self._counts[parent][node.tag] > 1 else name


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


def _readable(message: str, namespace: str) -> str:
    text = message.replace("{" + namespace + "}", "").strip()
    for pattern, replacement in _REWRITES:
        new = pattern.sub(replacement, text)
        if new != text:
            return new.rstrip(".")
    return text.rstrip(".")


def _one(line: int, path: str, message: str) -> ValidationIssues:
    return ValidationIssues([ValidationIssue(line, path, message)])


def _line(element: etree._Element) -> int:
    line = element.sourceline
    return line if isinstance(line, int) else 0


def _read(path: str | os.PathLike[str]) -> bytes:
    # Not pathlib: it is not imported on the command line's path otherwise.
    with open(path, "rb") as f:
        return f.read()


_UNPARSED = {
    "doctype": "DTDs and entity declarations are not allowed",
    "dtd": "DTDs and entity declarations are not allowed",
    "syntax": "not well-formed XML: {}",
    "namespace": "not namespace-well-formed XML: {}",
    "other": "the document cannot be parsed: {}",
}


def _root(document: Document) -> etree._Element | ValidationIssues:
    """The root element of ``document``, or the issue that it cannot be parsed."""
    if isinstance(document, etree._Element):
        return document
    if isinstance(document, bytes):
        data = document
    elif isinstance(document, str) and document.lstrip("\ufeff \t\r\n").startswith("<"):
        data = document.encode("utf-8")
    elif isinstance(document, (str, os.PathLike)):
        data = _read(document)
    else:
        raise BadInputError(
            "document",
            f"must be bytes, XML text, a path or an lxml element, not {type(document).__name__}",
        )
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n"):
        return _one(0, "/", "the document is empty")
    try:
        return _safexml.parse(data)
    except _safexml.Unparsed as exc:
        line = exc.line or (1 if exc.kind == "dtd" else 0)
        return _one(line, "/", _UNPARSED[exc.kind].format(exc.detail))


_HEADER = f"{{{SOAP11_NS}}}Header"
_BODY = f"{{{SOAP11_NS}}}Body"


def _payload(document: Document) -> etree._Element | ValidationIssues:
    """The payload element of ``document`` (the root, or the one element of an envelope's
    Body), or the issue that there is none."""
    root = _root(document)
    if isinstance(root, ValidationIssues):
        return root
    if root.tag == f"{{{SOAP12_NS}}}Envelope":
        return _one(_line(root), "/Envelope", "a SOAP 1.2 envelope; FaxWS uses SOAP 1.1")
    if root.tag != f"{{{SOAP11_NS}}}Envelope":
        return root
    children = [c for c in root if isinstance(c.tag, str)]
    if [c.tag for c in children] not in ([_BODY], [_HEADER, _BODY]):
        names = ", ".join(etree.QName(c).localname for c in children) or "nothing"
        message = f"an Envelope holds an optional Header and then a Body, not {names}"
        return _one(_line(root), "/Envelope", message)
    for part, path in ((root, "/Envelope"), (children[-1], "/Envelope/Body")):
        # Validating the payload copies its ancestors' namespace declarations, at a cost
        # growing with the square of them.
        if _safexml.crowded(part):
            message = (
                f"has more than {_safexml.MAX_ATTRIBUTES} attributes "
                "(namespace declarations included)"
            )
            return _one(_line(part), path, message)
    payloads = [c for c in children[-1] if isinstance(c.tag, str)]
    if len(payloads) != 1:
        message = f"the Body holds {len(payloads)} elements; exactly one is expected"
        return _one(_line(children[-1]), "/Envelope/Body", message)
    return payloads[0]


def validate(document: Document, *, max_issues: int | None = None) -> ValidationIssues:
    """The problems of ``document`` (bytes, XML text: a ``str`` starting with ``<``, a path,
    or an lxml element) against the shipped schema; a path that cannot be read raises
    ``OSError``. ``max_issues`` (a whole number > 0, or None for all) keeps the first issues;
    ``total`` still counts every one."""
    return default_validator().validate(document, max_issues=max_issues)


def validate_or_raise(document: Document, *, max_issues: int | None = None) -> None:
    """Raise :class:`~faxws.errors.BadInputError` carrying every issue (or the first
    ``max_issues``), when there are any."""
    default_validator().validate_or_raise(document, max_issues=max_issues)


# ``faxws validate``'s output moved to the command line's package; its name here still works.
if TYPE_CHECKING:
    from faxws.cli._validate import validate_documents as validate_documents
else:

    def __getattr__(name: str) -> object:
        if name == "validate_documents":
            from faxws.cli._validate import validate_documents

            return validate_documents
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
