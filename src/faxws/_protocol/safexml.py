"""The ways faxws parses XML it did not write: responses, and documents to validate.

A document with a DOCTYPE or an entity declaration is refused before it reaches the parser,
so no DTD is read and no entity is declared, expanded or fetched. The parser itself forbids
network access and keeps libxml2's size and depth limits (no ``huge_tree``).

Small answers in plain ASCII may first be read by the standard library's parser (see
:func:`parse_plain`); whatever it does not take, lxml parses as above.
"""

from __future__ import annotations

import re
import threading
import xml.etree.ElementTree as ElementTree

from lxml import etree

_local = threading.local()


def parser() -> etree.XMLParser:
    """The hardened parser of the calling thread (lxml parsers keep per-parse state)."""
    found: etree.XMLParser | None = getattr(_local, "parser", None)
    if found is None:
        found = etree.XMLParser(
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        _local.parser = found
    return found


def push_parser(target: object) -> etree.XMLParser:
    """A parser with the same settings feeding ``target`` (an lxml parser target), for a
    document read in chunks; a target sees DOCTYPEs through its ``doctype`` method."""
    return etree.XMLParser(
        target=target,  # type: ignore[arg-type]  # the stubs' protocol is stricter than lxml
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
    )


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
    """The first namespace error of the last parse with ``used`` (an undeclared prefix),
    which libxml2 reports without failing: the element keeps ``prefix:name`` as its tag,
    which no reader can interpret, so such a document is refused like malformed XML."""
    return first_namespace_error(used.error_log)


def first_namespace_error(log: etree._ListErrorLog) -> tuple[int, str] | None:
    """The first namespace error in ``log`` (a parser's ``error_log``, or the
    ``feed_error_log`` of one fed in chunks, whose target never sees the prefix)."""
    for entry in log:
        if entry.domain == etree.ErrorDomains.NAMESPACE and entry.level >= etree.ErrorLevels.ERROR:
            return entry.line, entry.message
    return None


# An XML declaration that says nothing a parser could read differently: version 1.0, and an
# encoding (if any) in which ASCII bytes are ASCII text.
_PLAIN_DECLARATION = re.compile(
    rb"<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*(['\"])1\.0\1"
    rb"(?:[ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*(['\"])(?i:utf-8|us-ascii)\2)?"
    rb"(?:[ \t\r\n]+standalone[ \t\r\n]*=[ \t\r\n]*(['\"])(?:yes|no)\3)?"
    rb"[ \t\r\n]*\?>"
)
# Where "xmlns" is a namespace declaration, the name it declares (quotes kept out).
_DECLARED = re.compile(rb"xmlns(?::[^\s=<>]*)?[ \t\r\n]*=[ \t\r\n]*(?:\"([^\"<]*)\"|'([^'<]*)')")


def parse_plain(data: bytes, namespaces: frozenset[bytes]) -> ElementTree.Element | None:
    """The document element of ``data``, parsed by the standard library's ElementTree
    (expat), when ``data`` is plain: ASCII without NUL bytes (which expat would take for
    UTF-16 with every high byte zero), no DOCTYPE, a declaration (if any) of version 1.0 in
    UTF-8 or US-ASCII, declarations of the ``namespaces`` named only (libxml2 refuses a name
    that is not a URI, which expat takes), and no other attribute. None for anything else,
    including what expat finds malformed.

    Why: lxml hands over the interpreter lock three times for every document it parses (a
    lock, the parse, a callback), and each time a thread waiting for the lock may take it;
    ElementTree keeps it. For a small answer that is most of what a call costs other threads.
    A caller reads what this gives with the same code as lxml's elements (tags in the same
    ``{namespace}local`` form; comments and processing instructions dropped, text around them
    joined, as the lxml parser above does) and takes lxml's way whenever this gives None: what
    libxml2 alone would refuse (a namespace name that is not a URI, an ``xml:id`` that is not
    a name) never reaches expat."""
    if not data.isascii() or b"\0" in data or dtd_offset(data) >= 0:
        return None
    if data.startswith(b"<?xml") and _PLAIN_DECLARATION.match(data) is None:
        return None
    declarations = data.count(b"xmlns")
    if declarations:
        names = [a or b for a, b in _DECLARED.findall(data)]
        if len(names) != declarations or not namespaces.issuperset(names):
            return None
    parser = ElementTree.XMLParser()  # noqa: S314 (no DTD: no entity can be declared)
    try:
        parser.feed(data)
        root: ElementTree.Element = parser.close()
    except Exception:  # whatever expat makes of it, lxml's reading decides
        return None
    for element in root.iter():
        if element.attrib:
            return None
    return root
