"""Reading a request as the service reads it: the server's half of the wire, with no I/O.

A body is fed in chunks of any size. The tree is built without the documents' base64 text:
each ``FileData`` is decoded as it arrives and handed to a sink the caller supplies (the
simulator's spool), so a large request is never held whole. The parse has the hardening of
:mod:`faxws._protocol.safexml` (no DTD, entities or network access), and bounds of its own that
stop junk from building a large tree. What is wrong with a request ends up in
:attr:`RequestReader.refusal`; nothing here raises to the caller.
"""

from __future__ import annotations

import base64
import codecs
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lxml import etree

from faxws._protocol import safexml as _safexml
from faxws._protocol.soap import CONTENT_TYPE, MEDIA_TYPE, SOAP11_NS
from faxws.bindings import NAMESPACE, OPERATIONS

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_TEXT",
    "OPERATION_TAGS",
    "Base64Decoder",
    "DocumentSink",
    "Refusal",
    "RequestReader",
    "deviations",
    "sniff_operation",
    "wide_codec",
]

#: Bounds of a request's XML apart from the documents' base64: a SOAP request is a few
#: dozen elements, so these only stop junk from building a large tree.
MAX_DEPTH = 64
MAX_ELEMENTS = 50_000
MAX_TEXT = 4 * 1024 * 1024
#: On one element, its namespace declarations included (see :mod:`.safexml`).
MAX_ATTRIBUTES = _safexml.MAX_ATTRIBUTES

ENVELOPE = f"{{{SOAP11_NS}}}Envelope"
BODY = f"{{{SOAP11_NS}}}Body"
# Where document content sits (Envelope/Body/<a send>/FaxJobFiles/item/FileData): its
# base64 is decoded as it arrives, never kept as text.
_SENDS = frozenset({f"{{{NAMESPACE}}}SendFax", f"{{{NAMESPACE}}}SendFaxEx"})
_FILES = (f"{{{NAMESPACE}}}FaxJobFiles", f"{{{NAMESPACE}}}item", f"{{{NAMESPACE}}}FileData")
_FILE_DEPTH = 6


def _on_file_path(stack: list[str]) -> bool:
    depth = len(stack)
    return (
        depth >= 5
        and stack[2] in _SENDS
        and tuple(stack[3:]) == _FILES[: depth - 3]
        and stack[:2] == [ENVELOPE, BODY]
    )


_HEADER = f"{{{SOAP11_NS}}}Header"
_PARTS = frozenset({ENVELOPE, _HEADER, BODY})
_CONTRACT_PREFIXES = frozenset({"soap"})  # of the envelope's own elements
#: Each operation's name by the full tag of its payload element.
OPERATION_TAGS = {f"{{{NAMESPACE}}}{name}": name for name in OPERATIONS}
_PROLOG = 256  # bytes kept from the start of a body: enough for its XML declaration
_DECLARATION = re.compile(rb"""<\?xml\s[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


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

    def __init__(self, where: str, out: Callable[[bytes], None]) -> None:
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
    """lxml parser target: builds the tree without the documents' text, refuses DTDs
    (``doctype`` is called for any DOCTYPE, whatever the document's encoding) and junk beyond
    the bounds."""

    def __init__(self, documents: Callable[[int], DocumentSink]) -> None:
        self._documents = documents
        self._builder: Any = etree.TreeBuilder()  # the stubs lack start()'s nsmap
        self._stack: list[str] = []
        self._elements = 0
        self._text = 0
        self._items = 0
        # The FileData being read: its decoder and sink. One at a time, each sink closed
        # when its FileData ends, so that a request never holds more than one open.
        self._document: tuple[Base64Decoder, DocumentSink] | None = None
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
        declared = nsmap or {}
        # Counted before the tree builder sees them: its cost grows with the square of both.
        if len(attrib) + len(declared) > MAX_ATTRIBUTES:
            raise self._refuse(
                f"an element has more than {MAX_ATTRIBUTES} attributes "
                "(namespace declarations included)"
            )
        for value in (*attrib.values(), *declared.values()):
            self._count_text(len(value))
        self._stack.append(tag)
        depth = len(self._stack)
        if depth == 3 and self.operation is None and self._stack[:2] == [ENVELOPE, BODY]:
            self.operation = OPERATION_TAGS.get(tag)
        if depth in (5, _FILE_DEPTH) and _on_file_path(self._stack):
            if depth == 5:
                self._items += 1
            else:
                self._guard(self._open_document)
        # lxml hands the default namespace's prefix over as "", TreeBuilder wants None.
        prefixes = {k or None: v for k, v in declared.items()} if declared else None
        self._builder.start(tag, dict(attrib), prefixes)

    def _open_document(self) -> None:
        sink = self._documents(self._items)
        send = self._stack[2].rpartition("}")[2]
        where = f"/{send}/FaxJobFiles/item[{self._items}]/FileData"
        self._document = (Base64Decoder(where, sink.write), sink)

    def data(self, text: str) -> None:
        if self._document is not None and len(self._stack) == _FILE_DEPTH:
            self._guard(self._document[0].write, text)
            return
        self._count_text(len(text))
        self._builder.data(text)

    def end(self, tag: str) -> None:
        if self._document is not None and len(self._stack) == _FILE_DEPTH:
            (decoder, sink), self._document = self._document, None
            self._guard(decoder.finish)
            self._guard(sink.close)
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


class RequestReader:
    """One request body, fed in chunks (:meth:`feed`, then :meth:`close`) and parsed as the
    service would. ``documents(item_number)`` gives the sink for each document's decoded
    bytes, closed as soon as its FileData ends (it may raise OSError: a server-side refusal).

    Afterwards :attr:`root` is the tree (each ``FileData`` empty), or :attr:`refusal` says
    why there is none."""

    __slots__ = ("_parser", "_start", "_target", "prolog", "refusal", "root")

    def __init__(self, documents: Callable[[int], DocumentSink]) -> None:
        self.root: etree._Element | None = None
        self.refusal: Refusal | None = None
        self._target = _Target(documents)
        self._parser: etree.XMLParser | None = _safexml.push_parser(self._target)
        self._start: bytes | None = b""
        #: The body's first bytes, for :func:`deviations` (its XML declaration).
        self.prolog = b""

    @property
    def operation(self) -> str | None:
        """The operation the body names, as far as it was read."""
        return self._target.operation

    def feed(self, chunk: bytes) -> None:
        """The next chunk of the body."""
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
        """The end of the body."""
        if self._parser is None or self.refusal is not None:
            return
        try:
            if self._start is not None:  # also for an empty body: libxml2 then says so
                self._parser.feed(_without_utf32_bom(self._start, final=True) or b"")
            root = self._parser.close()
        except Exception as exc:
            self._fail(exc)
            return
        self._check_namespaces()
        if self.refusal is None:
            self.root = root
        self._parser = None

    def _check_namespaces(self) -> None:
        # A target never sees an undeclared prefix (the name arrives without it): libxml2
        # reports it only to the parser's log.
        assert self._parser is not None
        log = self._parser.feed_error_log
        if _safexml.first_namespace_error(log) is not None:
            self._parser = None
            self.refusal = Refusal(f"malformed XML: {_first_error(log)}")

    def _fail(self, exc: Exception) -> None:
        assert self._parser is not None
        log, self._parser, self._start = self._parser.feed_error_log, None, None
        if self._target.refusal is not None:
            self.refusal = self._target.refusal
            return
        said = exc.msg if isinstance(exc, etree.XMLSyntaxError) else str(exc)
        self.refusal = Refusal(f"malformed XML: {_first_error(log) or said}")


def _first_error(log: etree._ListErrorLog) -> str | None:
    """The parser's first error, worded as lxml words it in a whole parse's XMLSyntaxError:
    what the target's close raises after it would only say that the tree is unfinished."""
    for entry in log:
        if entry.level >= etree.ErrorLevels.ERROR:
            line = f", line {entry.line}" if entry.line > 0 else ""
            column = f", column {entry.column}" if line and entry.column > 0 else ""
            return f"{entry.message}{line}{column}"
    return None


def deviations(
    content_type: str | None, soap_action: str | None, prolog: bytes, root: etree._Element | None
) -> tuple[str, ...]:
    """How a request differs from the contract's exact form, one sentence each: the
    Content-Type and SOAPAction headers, the XML declaration (from the body's first bytes),
    and, when ``root`` is a SOAP 1.1 envelope, the envelope's prefix, its empty soap:Header,
    and the payload in the default namespace. Empty for a request in the contract's form."""
    found = []
    if content_type is None:
        found.append(f"Content-Type is missing; the contract requires {CONTENT_TYPE}")
    elif not _is_contract_type(content_type):
        found.append(f"Content-Type is {content_type}; the contract requires {CONTENT_TYPE}")
    if soap_action is None:
        found.append("SOAPAction is missing; the contract requires it, with an empty value")
    elif soap_action != "":
        found.append(f"SOAPAction is {soap_action}; the contract requires an empty value")
    text = prolog.lstrip(codecs.BOM_UTF8)
    other = wide_codec(prolog)
    if other is not None:
        found.append(f"the body is in {other[:6].upper()}; the contract requires UTF-8")
    elif not text.startswith(b"<?xml"):
        found.append(
            "the body does not start with an XML declaration in UTF-8; the contract requires one"
        )
    else:
        match = _DECLARATION.match(text)
        encoding = match.group(1).decode() if match else None
        if encoding is None or encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
            found.append(
                f"the XML declaration's encoding is {encoding or 'not given'}; "
                "the contract requires UTF-8"
            )
    if root is None or root.tag != ENVELOPE:
        return tuple(found)
    children = [child for child in root if isinstance(child.tag, str)]
    prefixes = {root.prefix} | {child.prefix for child in children if child.tag in _PARTS}
    if prefixes != _CONTRACT_PREFIXES:
        shown = ", ".join(sorted("no prefix" if p is None else p for p in prefixes))
        found.append(f"the envelope's elements have the prefix {shown}; the contract uses soap")
    header = children[0] if children and children[0].tag == _HEADER else None
    if header is None:
        found.append("the envelope has no soap:Header; the contract requires an empty one")
    elif len(header) or (header.text or "").strip():
        found.append("the soap:Header is not empty; the contract requires an empty one")
    body = next((child for child in children if child.tag == BODY), None)
    payload = None if body is None else next(body.iterchildren(etree.Element), None)
    if payload is not None:
        prefixed = next((e for e in payload.iter(etree.Element) if e.prefix is not None), None)
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


def wide_codec(data: bytes) -> str | None:
    """The codec of a body in UTF-32 or UTF-16, known by its byte order mark or the zero bytes
    around a first ``<``; None for any other."""
    for marks, codec in (
        ((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE), "utf-32"),
        ((b"<\0\0\0",), "utf-32-le"),
        ((b"\0\0\0<",), "utf-32-be"),
        ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "utf-16"),
        ((b"<\0",), "utf-16-le"),
        ((b"\0<",), "utf-16-be"),
    ):
        if data.startswith(marks):
            return codec
    return None
