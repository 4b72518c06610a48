"""Validation of SOAP payloads against the FaxWS schema (``wsdl/FaxWS.xsd``).

>>> validate(b'<GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>u</UserID>'
...          b'</GetFaxBroadcastReport>')[0].message
'missing child element; expected strPIN'

A document is a whole SOAP 1.1 envelope (Envelope, optional Header, Body with exactly one
payload element) or a bare payload element; any request or response element of the schema.
Hostile documents (a DTD, entities, external references, non-XML) give an issue; nothing is
ever fetched or expanded, and the parser's size and depth limits stay on.

The schema is compiled once per process and shared between threads without a lock for the
verdict; the errors of an invalid document are read under a lock (see ``schema_issues``).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from lxml import etree

from faxws import _resources, _safexml
from faxws._soap import SOAP11_NS, SOAP12_NS
from faxws._xsd import NAMESPACE
from faxws.errors import BadInputError

__all__ = ["ValidationIssue", "Validator", "validate", "validate_or_raise"]


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


XS_NS = "http://www.w3.org/2001/XMLSchema"


class Validator:
    """A compiled schema and the checks around it. Safe to share between threads.

    ``Validator()`` uses the schema shipped with faxws; ``Validator.from_path(xsd)`` another
    copy (for example an edited schema, before regenerating the bindings).
    """

    def __init__(self, xsd: bytes | None = None, *, base_url: str | None = None) -> None:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        data = xsd if xsd is not None else _resources.read_xsd()
        doc = (
            etree.fromstring(data, parser, base_url=base_url)
            if base_url is not None
            else etree.fromstring(data, parser)
        )
        self.namespace = doc.get("targetNamespace") or ""
        self.elements = frozenset(
            str(e.get("name")) for e in doc.findall(f"{{{XS_NS}}}element") if e.get("name")
        )
        self._doc = doc
        self._schema = etree.XMLSchema(doc)
        self._reporter: etree.XMLSchema | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Validator:
        p = Path(path)
        return cls(p.read_bytes(), base_url=p.resolve().as_uri())

    def validate(self, document: Document) -> list[ValidationIssue]:
        """See :func:`validate`."""
        root, issues = _load(document)
        if root is None:
            return issues
        return self._check(root)

    def validate_or_raise(self, document: Document) -> None:
        """See :func:`validate_or_raise`."""
        _raise_issues(self.validate(document))

    def schema_issues(self, payload: etree._Element) -> list[ValidationIssue]:
        """Check one payload element (and what it holds) against the schema alone."""
        # The verdict is safe to get without a lock: each validation runs in its own libxml2
        # context. The error log is not: lxml keeps it on the schema object and clears it on
        # every call. So a second compiled copy, used only under the lock and only for the
        # rare invalid document, reads the errors, and valid documents never wait.
        if self._schema.validate(payload):
            return []
        with self._lock:
            if self._reporter is None:
                self._reporter = etree.XMLSchema(self._doc)
            self._reporter.validate(payload)
            errors: list[etree._LogEntry] = list(self._reporter.error_log)  # type: ignore[call-overload]
        issues = []
        for error in errors:
            node = _resolve(payload, error.path or "")
            path = element_path(node if node is not None else payload, payload)
            issues.append(
                ValidationIssue(error.line, path, _readable(error.message, self.namespace))
            )
        return issues

    def _check(self, root: etree._Element) -> list[ValidationIssue]:
        qname = etree.QName(root)
        if qname.namespace == SOAP12_NS and qname.localname == "Envelope":
            return [
                ValidationIssue(
                    _line(root), "/Envelope", "a SOAP 1.2 envelope; FaxWS uses SOAP 1.1"
                )
            ]
        if qname.namespace == SOAP11_NS and qname.localname == "Envelope":
            payload, issues = _envelope_payload(root)
            if payload is None:
                return issues
            root = payload
        return self._check_payload(root)

    def _check_payload(self, payload: etree._Element) -> list[ValidationIssue]:
        qname = etree.QName(payload)
        line = _line(payload)
        if qname.localname not in self.elements:
            known = ", ".join(sorted(self.elements))
            return [
                ValidationIssue(
                    line, f"/{qname.localname}", f"unknown root element; expected one of {known}"
                )
            ]
        if qname.namespace != self.namespace:
            where = f"namespace {qname.namespace!r}" if qname.namespace else "no namespace"
            return [
                ValidationIssue(
                    line,
                    f"/{qname.localname}",
                    f"{qname.localname} is in {where}, not {self.namespace!r}",
                )
            ]
        return self.schema_issues(payload)


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


def schema_issues(payload: etree._Element) -> list[ValidationIssue]:
    """Check one payload element against the shipped schema."""
    return default_validator().schema_issues(payload)


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


def _readable(message: str, namespace: str = NAMESPACE) -> str:
    text = message.replace("{" + namespace + "}", "").strip()
    for pattern, replacement in _REWRITES:
        new = pattern.sub(replacement, text)
        if new != text:
            return new.rstrip(".")
    return text.rstrip(".")


# -- validation ---------------------------------------------------------------------------------


def _parse(data: bytes) -> tuple[etree._Element | None, list[ValidationIssue]]:
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        return None, [ValidationIssue(0, "/", "the document is empty")]
    dtd = _safexml.dtd_offset(data)
    if dtd >= 0:
        line = data[:dtd].count(b"\n") + 1
        return None, [ValidationIssue(line, "/", "DTDs and entity declarations are not allowed")]
    try:
        parser = _safexml.parser()
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        return None, [ValidationIssue(line, "/", f"not well-formed XML: {exc.msg}")]
    problem = _safexml.namespace_error(parser)
    if problem is not None:
        line, message = problem
        return None, [ValidationIssue(line, "/", f"not namespace-well-formed XML: {message}")]
    if _safexml.has_dtd(root):
        return None, [ValidationIssue(1, "/", "DTDs and entity declarations are not allowed")]
    return root, []


def _line(element: etree._Element) -> int:
    line = element.sourceline
    return line if isinstance(line, int) else 0


def _envelope_payload(
    envelope: etree._Element,
) -> tuple[etree._Element | None, list[ValidationIssue]]:
    children = [c for c in envelope if isinstance(c.tag, str)]
    header, body = f"{{{SOAP11_NS}}}Header", f"{{{SOAP11_NS}}}Body"
    tags = [c.tag for c in children]
    if tags not in ([body], [header, body]):
        names = ", ".join(etree.QName(c).localname for c in children) or "nothing"
        return None, [
            ValidationIssue(
                _line(envelope),
                "/Envelope",
                f"an Envelope holds an optional Header and then a Body, not {names}",
            )
        ]
    body_el = children[-1]
    payloads = [c for c in body_el if isinstance(c.tag, str)]
    if len(payloads) != 1:
        return None, [
            ValidationIssue(
                _line(body_el),
                "/Envelope/Body",
                f"the Body holds {len(payloads)} elements; exactly one is expected",
            )
        ]
    return payloads[0], []


def _raise_issues(issues: list[ValidationIssue], request_id: str | None = None) -> None:
    if issues:
        first = issues[0]
        raise BadInputError(first.path, first.message, request_id=request_id, issues=issues)


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
    """The problems of ``document`` against the shipped schema (empty when valid).

    ``document`` is bytes, XML text (a ``str`` starting with ``<``), a path (``str`` or
    ``os.PathLike``), or an lxml element. A path that cannot be read raises ``OSError``.
    """
    return default_validator().validate(document)


def validate_or_raise(document: Document) -> None:
    """Raise :class:`~faxws.errors.BadInputError` carrying every issue, when there are any."""
    default_validator().validate_or_raise(document)


def check_request(skeleton: bytes, request_id: str) -> None:
    """Raise BadInputError when a request the client wrote does not fit the schema."""
    root, issues = _parse(skeleton)
    if root is not None:
        issues = default_validator()._check(root)
    _raise_issues(issues, request_id)


# -- the command line -----------------------------------------------------------------------


def validate_documents(
    names: Sequence[str], *, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """``faxws validate``: 0 all valid, 1 any invalid, 2 a file cannot be read."""
    import json  # only this command needs it; kept off the import path

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
