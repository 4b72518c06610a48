"""The ways faxws parses XML it did not write: responses, and documents to validate. A DOCTYPE
or entity declaration is refused before the parser sees it, so no DTD is read and no entity
declared, expanded or fetched; the parser forbids network access and keeps libxml2's size and
depth limits (no ``huge_tree``)."""

from __future__ import annotations

import functools
import threading

from lxml import etree

_local = threading.local()
_hardened = functools.partial(
    etree.XMLParser,
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    dtd_validation=False,
    huge_tree=False,
)


def parser() -> etree.XMLParser:
    """The hardened parser of the calling thread (lxml parsers keep per-parse state)."""
    found: etree.XMLParser | None = getattr(_local, "parser", None)
    if found is None:
        found = _hardened(remove_comments=True, remove_pis=True)
        _local.parser = found
    return found


def push_parser(target: object) -> etree.XMLParser:
    """A parser with the same settings feeding ``target`` (an lxml parser target), for a
    document read in chunks; a target sees DOCTYPEs through its ``doctype`` method."""
    # The stubs' protocol for a target is stricter than lxml.
    return _hardened(target=target)  # type: ignore[arg-type]


#: Attributes on one element, its namespace declarations included (they are attributes in
#: XML's terms). lxml's tree builder takes time growing with the square of them, and so does
#: validating an element against a schema with the declarations of its ancestors.
MAX_ATTRIBUTES = 64


def crowded(element: etree._Element) -> bool:
    """Whether ``element`` has more than :data:`MAX_ATTRIBUTES` attributes and namespace
    declarations of its own (not inherited ones). lxml tells them only by walking the element:
    the walk stops at its first child, or as soon as the count passes the bound."""
    count = len(element.attrib)
    if count > MAX_ATTRIBUTES:
        return True
    if count + len(element.nsmap) <= MAX_ATTRIBUTES:
        return False  # its own declarations are among those in scope: the common case, cheap
    for event, _ in etree.iterwalk(element, events=("start-ns", "start")):
        if event == "start":  # after the element's own declarations
            return False
        count += 1
        if count > MAX_ATTRIBUTES:
            return True
    return False


def dtd_offset(data: bytes) -> int:
    """Where a DOCTYPE or entity declaration starts in ``data``, or -1 when there is none."""
    offsets = [i for i in (data.find(b"<!DOCTYPE"), data.find(b"<!ENTITY")) if i >= 0]
    return min(offsets) if offsets else -1


def has_dtd(root: etree._Element) -> bool:
    """True when a parsed document has a DTD after all (one the byte scan cannot see, as in
    a UTF-16 document); its entities were not expanded, but the document is refused."""
    docinfo = root.getroottree().docinfo
    return docinfo.internalDTD is not None or bool(docinfo.doctype)


def namespace_error(used: etree.XMLParser) -> tuple[int, str] | None:
    """The first namespace error (an undeclared prefix) of the last parse with ``used``, which
    libxml2 does not fail: a tag ``prefix:name`` no reader can interpret is refused as malformed."""
    return first_namespace_error(used.error_log)


def first_namespace_error(log: etree._ListErrorLog) -> tuple[int, str] | None:
    """The first namespace error in ``log`` (a parser's ``error_log``, or the
    ``feed_error_log`` of one fed in chunks, whose target never sees the prefix)."""
    for entry in log:
        if entry.domain == etree.ErrorDomains.NAMESPACE and entry.level >= etree.ErrorLevels.ERROR:
            return entry.line, entry.message
    return None


class Unparsed(Exception):  # noqa: N818 (the reason, worded by each caller)
    """Why untrusted XML was not parsed. ``kind``: ``"doctype"`` (a DOCTYPE or entity
    declaration in the bytes), ``"dtd"`` (one the parser found after all), ``"syntax"``,
    ``"namespace"`` (an undeclared prefix) or ``"other"``; ``line`` where, 0 when unknown."""

    def __init__(self, kind: str, detail: str = "", line: int = 0) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.line = kind, detail, line


def parse(data: bytes) -> etree._Element:
    """The document element of untrusted XML, parsed by :func:`parser` after the byte scan
    for DTDs; raises :class:`Unparsed` for anything refused."""
    offset = dtd_offset(data)
    if offset >= 0:
        raise Unparsed("doctype", line=data[:offset].count(b"\n") + 1)
    used = parser()
    try:
        root = etree.fromstring(data, used)
    except etree.XMLSyntaxError as exc:
        raise Unparsed("syntax", str(exc.msg), exc.lineno or 0) from None
    except (ValueError, etree.LxmlError) as exc:
        raise Unparsed("other", str(exc)) from None
    problem = namespace_error(used)
    if problem is not None:
        raise Unparsed("namespace", problem[1], problem[0])
    if has_dtd(root):
        raise Unparsed("dtd")
    return root
