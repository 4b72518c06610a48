"""Reading a request as the service reads it: the server's half of the wire, with no I/O.

A body is fed in chunks, or given whole when it is small. The tree is built without the
documents' base64 text: each ``FileData`` is decoded as it arrives and handed to a writer the
caller supplies (the simulator's spool), so a large request is never held whole. The parse
has the hardening of :mod:`faxws._protocol.safexml` (no DTD, entities or network access), and bounds
of its own that stop junk from building a large tree. What is wrong with a request ends up in
:attr:`RequestReader.refusal`; nothing here raises to the caller.
"""

from __future__ import annotations

import base64
import codecs
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from lxml import etree

from faxws._protocol import safexml as _safexml
from faxws._protocol.soap import CONTENT_TYPE, MEDIA_TYPE, SOAP11_NS
from faxws.bindings import NAMESPACE, OPERATIONS

__all__ = [
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_TEXT",
    "Base64Decoder",
    "DocumentSink",
    "Envelope",
    "Refusal",
    "RequestReader",
    "deviations",
    "operation_named",
    "sniff_operation",
]

#: Bounds of a request's XML apart from the documents' base64: a SOAP request is a few
#: dozen elements, so these only stop junk from building a large tree.
MAX_DEPTH = 64
MAX_ELEMENTS = 50_000
MAX_TEXT = 4 * 1024 * 1024
MAX_ATTRIBUTES = 64  # on one element (lxml's tree builder is quadratic in them)

ENVELOPE = f"{{{SOAP11_NS}}}Envelope"
BODY = f"{{{SOAP11_NS}}}Body"
# Where document content sits: its base64 is decoded as it arrives, never kept as text.
_FILE_DATA = (
    ENVELOPE,
    BODY,
    f"{{{NAMESPACE}}}SendFax",
    f"{{{NAMESPACE}}}FaxJobFiles",
    f"{{{NAMESPACE}}}item",
    f"{{{NAMESPACE}}}FileData",
)
_ITEMS = "/".join(_FILE_DATA[1:5])  # from the Envelope down to each file item
_HEADER = f"{{{SOAP11_NS}}}Header"
_PARTS = frozenset({ENVELOPE, _HEADER, BODY})
_CONTRACT_DECLARATION = b'<?xml version="1.0" encoding="utf-8"?>'
_CONTRACT_PREFIXES = frozenset({"soap"})  # of the envelope's own elements
# Each operation's payload element by its full tag.
_OPERATION_TAGS = {f"{{{NAMESPACE}}}{name}": name for name in OPERATIONS}
_PROLOG = 256  # bytes kept from the start of a body: enough for its XML declaration
_DECLARATION = re.compile(rb"""<\?xml\s[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")

#: Where decoded bytes go.
Writer = Callable[[bytes], None]


class DocumentSink(Protocol):
    """Where one document's decoded bytes go: written in pieces, closed when its FileData
    ends. Either may raise OSError (a server-side refusal)."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Refusal:
    """Why a request cannot be served: the client's fault (malformed, out of bounds, bad
    base64), or, with ``server_side``, the writer's (``message`` is its OSError's text)."""

    message: str
    server_side: bool = False


class _StopError(Exception):
    """Raised inside the parser target to stop the parse; the message names the problem."""


class Base64Decoder:
    """One ``xs:base64Binary`` value decoded in pieces: whitespace anywhere, padding only at
    the very end. Raises :class:`ValueError` naming ``where`` for anything else."""

    _FLUSH = 256 * 1024  # characters gathered before decoding
    _SPACE = re.compile(r"[ \t\r\n]+")

    def __init__(self, where: str, out: Writer) -> None:
        self._where = where
        self._out = out
        self._pending: list[str] = []
        self._pending_len = 0
        self._carry = ""
        self._padded = False

    def write(self, text: str) -> None:
        self._pending.append(text)
        self._pending_len += len(text)
        if self._pending_len >= self._FLUSH:
            self._decode(final=False)

    def finish(self) -> None:
        self._decode(final=True)

    def _decode(self, final: bool) -> None:
        text = self._SPACE.sub("", self._carry + "".join(self._pending))
        self._pending.clear()
        self._pending_len = 0
        if not final:
            # Whole quanta only: padding can then appear only at the very end.
            cut = len(text) - len(text) % 4
            text, self._carry = text[:cut], text[cut:]
        if not text:
            return
        if self._padded or (final and len(text) % 4):
            raise ValueError(f"{self._where}: not a valid xs:base64Binary")
        try:
            data = base64.b64decode(text, validate=True)
        except ValueError:  # binascii.Error, or a non-ASCII character
            raise ValueError(f"{self._where}: not a valid xs:base64Binary") from None
        self._padded = text.endswith("=")
        self._out(data)


def operation_named(tag: str) -> str | None:
    """The operation a payload element stands for, or None for any other element."""
    return _OPERATION_TAGS.get(tag)


def sniff_operation(body: bytes) -> str | None:
    """The operation name, read cheaply from the start of the Body, for records of requests
    that were not parsed."""
    marker = body.find(b"Body>")
    if marker < 0:
        return None
    head = body[marker + 5 : marker + 200]
    for name in OPERATIONS:
        for candidate in (b"<" + name.encode() + b" ", b"<" + name.encode() + b">"):
            if head.lstrip().startswith(candidate):
                return name
        if b":" + name.encode() in head[:100]:
            return name
    return None


class _Document:
    """One FileData: its text decoded into its sink, which is closed when it ends, so that
    a request never holds more than one document open."""

    def __init__(self, where: str, sink: DocumentSink) -> None:
        self._sink = sink
        self._decoder = Base64Decoder(where, sink.write)
        self.write = self._decoder.write

    def finish(self) -> None:
        self._decoder.finish()
        self._sink.close()


_UTF32_SPACES = {
    codecs.BOM_UTF32_LE: {c.encode("utf-32-le") for c in " \t\r\n"},
    codecs.BOM_UTF32_BE: {c.encode("utf-32-be") for c in " \t\r\n"},
}


def _without_utf32_bom(data: bytes, *, final: bool) -> bytes | None:
    """``data`` without a UTF-32 byte order mark and the white space after it (libxml2's
    push parser knows UTF-32 only by a first ``<``); None while more bytes are needed."""
    if len(data) < 4:
        return data if final else None
    spaces = _UTF32_SPACES.get(data[:4])
    if spaces is None:
        return data
    start = 4
    while data[start : start + 4] in spaces:
        start += 4
    if len(data) < start + 4 and not final:
        return None
    return data[start:]


class _Target:
    """lxml parser target for a streamed request: builds the tree without the documents'
    text, refuses DTDs (``doctype`` is called for any DOCTYPE, whatever the document's
    encoding) and junk beyond the bounds."""

    def __init__(self, reader: RequestReader) -> None:
        self._reader = reader
        self._builder: Any = etree.TreeBuilder()  # the stubs lack start()'s nsmap
        self._stack: list[str] = []
        self._elements = 0
        self._text = 0
        self._items = 0
        self._document: _Document | None = None
        self.operation: str | None = None
        self.refusal: Refusal | None = None

    def _refuse(self, message: str) -> _StopError:
        self.refusal = self.refusal or Refusal(message)
        return _StopError(message)

    def _count_text(self, length: int) -> None:
        self._text += length
        if self._text > MAX_TEXT:
            raise self._refuse(f"the request holds more than {MAX_TEXT} characters of text")

    def start(self, tag: str, attrib: Mapping[str, str], nsmap: Any = None) -> None:
        self._elements += 1
        if self._elements > MAX_ELEMENTS:
            raise self._refuse(f"the request has more than {MAX_ELEMENTS} elements")
        if len(self._stack) >= MAX_DEPTH:
            raise self._refuse(f"the request is nested deeper than {MAX_DEPTH} elements")
        if len(attrib) > MAX_ATTRIBUTES:
            raise self._refuse(f"an element has more than {MAX_ATTRIBUTES} attributes")
        for value in attrib.values():
            self._count_text(len(value))
        self._stack.append(tag)
        depth = len(self._stack)
        if depth == 3 and self.operation is None and self._stack[:2] == [ENVELOPE, BODY]:
            self.operation = operation_named(tag)
        if depth == 5 and tuple(self._stack) == _FILE_DATA[:5]:
            self._items += 1
        elif depth == 6 and tuple(self._stack) == _FILE_DATA:
            self._document = self._guard(self._reader._decoder, self._items)
        # lxml hands the default namespace's prefix over as "", TreeBuilder wants None.
        prefixes = {k or None: v for k, v in nsmap.items()} if nsmap else None
        self._builder.start(tag, dict(attrib), prefixes)

    def data(self, text: str) -> None:
        if self._document is not None and len(self._stack) == len(_FILE_DATA):
            self._guard(self._document.write, text)
            return
        self._count_text(len(text))
        self._builder.data(text)

    def end(self, tag: str) -> None:
        if self._document is not None and len(self._stack) == len(_FILE_DATA):
            document, self._document = self._document, None
            self._guard(document.finish)
        self._stack.pop()
        self._builder.end(tag)

    def _guard(self, call: Callable[..., Any], *args: Any) -> Any:
        # lxml may not pass an exception raised here on, so the reason is kept first.
        try:
            return call(*args)
        except ValueError as exc:
            raise self._refuse(str(exc)) from None
        except OSError as exc:
            self.refusal = self.refusal or Refusal(str(exc.strerror or exc), server_side=True)
            raise _StopError(self.refusal.message) from None

    def doctype(self, *args: object) -> None:
        raise self._refuse("DTDs are not allowed")

    def close(self) -> etree._Element:
        root: etree._Element = self._builder.close()
        return root


class Envelope:
    """A SOAP 1.1 envelope's parts, found in one pass over it: the prefixes of its own
    elements (Envelope, Header, Body), the Header when it is the first element, the first
    Body, that Body's first element (the payload) and how many elements the Body holds."""

    __slots__ = (
        "body",
        "count",
        "elements",
        "header",
        "payload",
        "payload_tag",
        "prefixed",
        "prefixes",
        "root",
    )

    def __init__(self, root: etree._Element) -> None:
        self.root = root
        prefixes: set[str | None] = {root.prefix}
        header = body = payload = None
        count = 0
        first = True
        for child in root:
            tag = child.tag
            if not isinstance(tag, str):
                continue  # an entity reference or the like
            if tag in _PARTS:
                prefixes.add(child.prefix)
                if body is None and tag == BODY:
                    body = child
            if first:
                first = False
                if tag == _HEADER:
                    header = child
        payload_tag = None
        if body is not None:
            for element in body:
                tag = element.tag
                if isinstance(tag, str):
                    count += 1
                    if payload is None:
                        payload, payload_tag = element, tag
        # The payload's elements, kept while the request is served (their Python objects
        # are made once, not again by each reader), and the first with a prefix.
        self.elements: list[etree._Element] = []
        self.prefixed: etree._Element | None = None
        self.payload_tag: str | None = payload_tag  # kept: lxml spells it out each time
        if payload is not None:
            self.elements = list(payload.iter())
            for element in self.elements:
                # The prefix first: it is None for nearly every element, and cheap to ask.
                if element.prefix is not None and isinstance(element.tag, str):
                    self.prefixed = element
                    break
        self.prefixes = prefixes
        self.header: etree._Element | None = header
        self.body: etree._Element | None = body
        self.payload: etree._Element | None = payload
        self.count = count


def envelope_of(root: etree._Element | None) -> Envelope | None:
    """The parts of ``root`` when it is a SOAP 1.1 envelope."""
    return Envelope(root) if root is not None and root.tag == ENVELOPE else None


class RequestReader:
    """One request body, parsed as the service would: :meth:`feed` and :meth:`close` for a
    streamed body, or :meth:`parse` for a whole one. ``documents(item_number)`` gives the
    sink for each document's decoded bytes, closed as soon as its FileData ends (it may
    raise OSError: a server-side refusal). Both ways apply the same bounds and refusals.

    Afterwards :attr:`root` is the tree (each ``FileData`` empty), with :attr:`envelope`
    its parts when it is a SOAP 1.1 envelope, or :attr:`refusal` says why there is none."""

    __slots__ = (
        "_documents",
        "_parser",
        "_start",
        "_target",
        "envelope",
        "prolog",
        "refusal",
        "root",
    )

    def __init__(self, documents: Callable[[int], DocumentSink], *, stream: bool) -> None:
        self._documents = documents
        self.root: etree._Element | None = None
        self.envelope: Envelope | None = None
        self.refusal: Refusal | None = None
        self._target: _Target | None = None
        self._parser: etree.XMLParser | None = None
        self._start: bytes | None = b""
        #: The body's first bytes, for :func:`deviations` (its XML declaration).
        self.prolog = b""
        if stream:
            self._target = _Target(self)
            self._parser = _safexml.push_parser(cast(Any, self._target))

    def _decoder(self, item: int) -> _Document:
        where = f"/SendFax/FaxJobFiles/item[{item}]/FileData"
        return _Document(where, self._documents(item))

    @property
    def operation(self) -> str | None:
        """The operation the body names, as far as it was read."""
        if self._target is not None and self._target.operation is not None:
            return self._target.operation
        if self.envelope is not None and self.envelope.payload_tag is not None:
            return operation_named(self.envelope.payload_tag)
        return None

    def feed(self, chunk: bytes) -> None:
        """The next chunk of a streamed body."""
        if len(self.prolog) < _PROLOG:
            self.prolog += chunk[: _PROLOG - len(self.prolog)]
        if self._parser is None or self.refusal is not None:
            return
        if self._start is not None:
            # libxml2's push parser reads UTF-32 by its first characters, but not its BOM:
            # the first bytes are gathered, however the body is split, to look for one.
            self._start += chunk
            ready = _without_utf32_bom(self._start, final=False)
            if ready is None:
                return
            chunk, self._start = ready, None
        try:
            self._parser.feed(chunk)
        except Exception as exc:  # lxml re-raises what the target raised
            self._fail(exc)
            return
        self._check_namespaces()

    def close(self) -> None:
        """The end of a streamed body."""
        if self._parser is None or self.refusal is not None:
            return
        try:
            if self._start:
                self._parser.feed(_without_utf32_bom(self._start, final=True) or b"")
            parser = self._parser
            root = parser.close()
        except Exception as exc:
            self._fail(exc)
            return
        self._parser = parser
        self._check_namespaces()
        if self.refusal is None:
            self._found(root)
        self._parser = None

    def _check_namespaces(self) -> None:
        # A target never sees an undeclared prefix (the name arrives without it): libxml2
        # reports it only to the parser's log, and the whole parse refuses it too.
        assert self._parser is not None
        problem = _safexml.first_namespace_error(self._parser.feed_error_log)
        if problem is not None:
            self._parser = None
            self.refusal = Refusal(f"malformed XML: {problem[1]}")

    def parse(self, body: bytes) -> None:
        """A whole body: one parse by the hardened parser, with the same refusals."""
        self.prolog = body[:_PROLOG]
        # As _safexml.dtd_offset finds them; a body without "!" has neither (one quick
        # look). bytes.find, not ``in``: ``in`` first tries its operand as an integer and
        # builds and drops a TypeError before it searches.
        if body.find(b"!") >= 0 and (b"<!DOCTYPE" in body or b"<!ENTITY" in body):
            self.refusal = Refusal("DTDs are not allowed")
            return
        parser = _safexml.parser()
        try:
            root = etree.fromstring(body, parser)
        except Exception as exc:
            self._fail(exc)
            return
        utf8 = _read_as_utf8(body)  # then the byte scan found any DTD
        if not utf8 and _safexml.has_dtd(root):  # one in an encoding it cannot read
            self.refusal = Refusal("DTDs are not allowed")
            return
        problem: tuple[int, str] | str | None = _safexml.namespace_error(parser)
        if problem is None and not (utf8 and _too_small_to_exceed_bounds(body)):
            problem = _beyond_bounds(root)
        if problem is not None:
            self.refusal = Refusal(
                problem if isinstance(problem, str) else f"malformed XML: {problem[1]}"
            )
            return
        if utf8 and body.find(b"FileData") < 0:
            self._found(root)  # no document to decode
            return
        try:
            for item_number, item in enumerate(root.iterfind(_ITEMS), 1):
                for element in item.iterfind(_FILE_DATA[-1]):
                    decoder = self._decoder(item_number)
                    decoder.write(element.text or "")
                    decoder.finish()
                    # Checked here; the schema check sees none, as for a streamed body.
                    element.text = None
        except ValueError as exc:
            self.refusal = Refusal(str(exc))
            return
        except OSError as exc:
            self.refusal = Refusal(str(exc.strerror or exc), server_side=True)
            return
        self._found(root)

    def _found(self, root: etree._Element) -> None:
        self.root = root
        self.envelope = envelope_of(root)

    def _fail(self, exc: Exception) -> None:
        self._parser = None
        self._start = None
        if self._target is not None and self._target.refusal is not None:
            self.refusal = self._target.refusal
        else:
            message = exc.msg if isinstance(exc, etree.XMLSyntaxError) else str(exc)
            self.refusal = Refusal(f"malformed XML: {message}")


def _read_as_utf8(body: bytes) -> bool:
    """Whether libxml2 reads ``body`` as UTF-8: it starts with ``<`` and a byte that is not
    zero (no byte order mark, not UTF-16 or UTF-32) and declares UTF-8 or no encoding.
    Then every ``<``, ``=`` and element name in the document is those very bytes in the
    body."""
    if body.startswith(_CONTRACT_DECLARATION):  # the usual body: one look, not three
        return True
    if not body.startswith(b"<") or body.startswith(b"<\0"):
        return False
    if not body.startswith(b"<?xml"):
        return True
    match = _DECLARATION.match(body)
    return match is None or match.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8")


#: The fewest bytes of a well-formed document nested deeper than MAX_DEPTH: each of the
#: MAX_DEPTH elements around the innermost takes at least ``<a>`` and ``</a>`` (7 bytes),
#: the innermost at least ``<a/>`` (4). A shorter body has fewer elements than MAX_ELEMENTS
#: too (each takes at least 4 bytes).
_DEEPER = 7 * MAX_DEPTH + 4


def _too_small_to_exceed_bounds(body: bytes) -> bool:
    """For a body read as UTF-8: each element starts with a ``<`` and each attribute has an
    ``=``, so a body with no more ``<`` than the smallest bound on elements (the depth) and
    no more ``=`` than there may be attributes on one element cannot exceed a bound. A body
    shorter than :data:`_DEEPER` needs no ``<`` count (a pass over it saved)."""
    if body.count(b"=") > MAX_ATTRIBUTES:
        return False
    return len(body) < _DEEPER or body.count(b"<") <= MAX_DEPTH


def _beyond_bounds(root: etree._Element) -> str | None:
    """The streamed parse's bounds, for a tree parsed whole: the same refusals either way."""
    elements = 0
    depth = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        if event == "end":
            depth -= 1
            continue
        depth += 1
        elements += 1
        if elements > MAX_ELEMENTS:
            return f"the request has more than {MAX_ELEMENTS} elements"
        if depth > MAX_DEPTH:
            return f"the request is nested deeper than {MAX_DEPTH} elements"
        if len(element.attrib) > MAX_ATTRIBUTES:
            return f"an element has more than {MAX_ATTRIBUTES} attributes"
    return None


def deviations(
    content_type: str | None, soap_action: str | None, prolog: bytes, parts: Envelope | None
) -> tuple[str, ...]:
    """How a request differs from the contract's exact form, one sentence each: the
    Content-Type and SOAPAction headers, the XML declaration (from the body's first bytes),
    and, for a parsed SOAP 1.1 envelope (``parts``), the envelope's prefix, its empty
    soap:Header, and the payload in the default namespace. Empty for a request in the
    contract's form."""
    found = []
    if content_type is None:
        found.append(f"Content-Type is missing; the contract requires {CONTENT_TYPE}")
    elif content_type != CONTENT_TYPE and not _is_contract_type(content_type):
        found.append(f"Content-Type is {content_type}; the contract requires {CONTENT_TYPE}")
    if soap_action is None:
        found.append("SOAPAction is missing; the contract requires it, with an empty value")
    elif soap_action != "":
        found.append(f"SOAPAction is {soap_action}; the contract requires an empty value")
    if not prolog.startswith(_CONTRACT_DECLARATION):  # else the contract's own declaration
        text = prolog.lstrip(codecs.BOM_UTF8)
        other = _other_encoding(prolog)
        if other is not None:
            found.append(f"the body is in {other}; the contract requires UTF-8")
        elif not text.startswith(b"<?xml"):
            found.append(
                "the body does not start with an XML declaration in UTF-8; "
                "the contract requires one"
            )
        else:
            match = _DECLARATION.match(text)
            encoding = match.group(1).decode() if match else None
            if encoding is None or encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
                found.append(
                    f"the XML declaration's encoding is {encoding or 'not given'}; "
                    "the contract requires UTF-8"
                )
    if parts is None:
        return tuple(found)
    if parts.prefixes != _CONTRACT_PREFIXES:
        shown = ", ".join(sorted("no prefix" if p is None else p for p in parts.prefixes))
        found.append(f"the envelope's elements have the prefix {shown}; the contract uses soap")
    header = parts.header
    if header is None:
        found.append("the envelope has no soap:Header; the contract requires an empty one")
    elif len(header) or (header.text or "").strip():
        found.append("the soap:Header is not empty; the contract requires an empty one")
    prefixed = parts.prefixed
    if prefixed is not None:
        found.append(
            f"{etree.QName(prefixed).localname} has the prefix {prefixed.prefix}; the "
            f"contract puts {NAMESPACE} in the default namespace"
        )
    return tuple(found)


def _is_contract_type(value: str) -> bool:
    media, *params = (part.strip().lower() for part in value.split(";"))
    # charset="utf-8" is the same parameter, quoted.
    params = [p.replace(" ", "").replace('"', "") for p in params]
    return media == MEDIA_TYPE and params == ["charset=utf-8"]


def _other_encoding(prolog: bytes) -> str | None:
    """UTF-16 or UTF-32, by a byte order mark or the zero bytes around a first ``<``."""
    for marks, name in (
        ((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, b"<\0\0\0", b"\0\0\0<"), "UTF-32"),
        ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, b"<\0", b"\0<"), "UTF-16"),
    ):
        if prolog.startswith(marks):
            return name
    return None
