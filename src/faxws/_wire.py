"""The request's wire form: headers and the SOAP envelope, byte for byte as the contract shows.

zeep's own serialization differs from the documented form (prefixes, declaration quotes,
Content-Type, no Header element), so the envelope is written here from the generated bindings'
description of each element. base64 file content is encoded while sending, in chunks, so a
request with a large document costs memory of the order of one chunk, not of the document.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from lxml import etree

from faxws._content import BytesSource, Opened, Reader, Source, open_all, streams_of
from faxws._soap import SOAP11_NS
from faxws._xsd import XmlType, namespace_of
from faxws.errors import BadInputError, DocumentError

__all__ = ["Body", "OpenBody", "envelope", "fault_envelope", "payload_envelope"]


PROLOG = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    f'<soap:Envelope xmlns:soap="{SOAP11_NS}"><soap:Header/><soap:Body>'
).encode()
EPILOG = b"</soap:Body></soap:Envelope>"

#: Bytes read per chunk while encoding (a multiple of 3, so full chunks encode without padding).
CHUNK_SIZE = 3 * 256 * 1024
#: Bodies up to this size are read whole before the first byte is sent; larger ones stream.
STREAM_THRESHOLD = 1 << 20

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})

Part = bytes | Source


def base64_length(size: int) -> int:
    return 4 * ((size + 2) // 3)


def _text(xsd_type: str, value: Any) -> str:
    # Values of the wrong type are written as they are, not coerced: the schema check that
    # follows names them, and nothing is sent.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and xsd_type in ("int", "long"):
        return str(value)
    return str(value).translate(_ESCAPES)


def _write(obj: Any, xml: XmlType, buf: list[str], parts: list[Part]) -> None:
    for f in xml.fields:
        value = getattr(obj, f.attr)
        if value is None:
            continue  # an optional element that was not given
        for item in value if f.repeated else (value,):
            if f.complex_type is not None:
                buf.append(f"<{f.name}>")
                _write(item, f.complex_type.__xml__, buf, parts)
                buf.append(f"</{f.name}>")
            elif f.xsd_type == "base64Binary":
                buf.append(f"<{f.name}>")
                parts.append("".join(buf).encode())
                buf.clear()
                parts.append(BytesSource(item) if isinstance(item, (bytes, bytearray)) else item)
                buf.append(f"</{f.name}>")
            else:
                text = _text(f.xsd_type, item)
                buf.append(f"<{f.name}>{text}</{f.name}>" if text else f"<{f.name}/>")


def _encode(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """base64 of a chunk stream. A chunk whose length is not a multiple of 3 carries its
    remainder into the next one, so padding can only ever appear at the very end."""
    rest = b""
    for chunk in chunks:
        if rest:
            chunk = rest + chunk
        cut = len(chunk) - len(chunk) % 3
        rest = chunk[cut:]
        if cut:
            yield base64.b64encode(memoryview(chunk)[:cut])
    if rest:
        yield base64.b64encode(rest)


class Body:
    """A request document as written from the bindings: envelope bytes and document sources.

    Building it does no I/O; :meth:`open` measures the documents for one send.
    """

    __slots__ = ("_parts",)

    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    @property
    def whole(self) -> bytes | None:
        """The whole body when it holds no document (then it is its skeleton), else None."""
        if all(isinstance(p, bytes) for p in self._parts):
            return self.skeleton()
        return None

    @property
    def in_memory(self) -> bool:
        """Whether every document is bytes in memory: opening and reading the body touches no
        file."""
        return all(isinstance(p, (bytes, BytesSource)) for p in self._parts)

    def skeleton(self) -> bytes:
        """The envelope with every base64 value left empty: small, for schema checks."""
        return b"".join(p for p in self._parts if isinstance(p, bytes))

    def streams(self) -> list[object]:
        """The file objects the body sends, once each, in the order their locks are taken."""
        return streams_of([p for p in self._parts if not isinstance(p, bytes)])

    def open(self, held: Sequence[tuple[object, threading.Lock]] | None = None) -> OpenBody:
        """The body of one send: documents opened and measured now, so that Content-Length
        is what will be sent. Close it (or use ``with``) to release files and locks;
        ``held`` are the file objects' locks when the caller took them already."""
        sources = [p for p in self._parts if not isinstance(p, bytes)]
        return OpenBody(self._parts, open_all(sources, held))

    def __iter__(self) -> Iterator[bytes]:
        with self.open() as body:
            yield from body


class OpenBody:
    """An iterable of bytes of exactly ``len()`` bytes, or an error before the last of them.

    requests sends an iterable with ``__len__`` with a Content-Length header and no chunked
    encoding. It can be iterated again (for a resend that is known to be safe).
    """

    __slots__ = ("_length", "_opened", "_parts")

    def __init__(self, parts: list[Part], opened: Opened) -> None:
        readers = iter(opened.readers)
        self._parts: list[bytes | Reader] = [
            p if isinstance(p, bytes) else next(readers) for p in parts
        ]
        self._opened = opened
        self._length = sum(
            len(p) if isinstance(p, bytes) else base64_length(p.size) for p in self._parts
        )

    def __len__(self) -> int:
        return self._length

    def __enter__(self) -> OpenBody:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._opened.close()

    def __iter__(self) -> Iterator[bytes]:
        # Whatever a reader does, no more than the announced length is yielded, and the final
        # part (the envelope's end) only when everything before it had exactly its length: a
        # body that does not match its Content-Length is never completed.
        sent = 0
        last = len(self._parts) - 1
        for i, part in enumerate(self._parts):
            pieces = (part,) if isinstance(part, bytes) else _encode(part.chunks(CHUNK_SIZE))
            for piece in pieces:
                sent += len(piece)
                if sent > self._length or (i == last and sent != self._length):
                    raise DocumentError(
                        f"the request body came to {sent} bytes, not the {self._length} "
                        "announced; it was not completed"
                    )
                yield piece

    def payload(self) -> bytes | OpenBody:
        """What to hand to requests: plain bytes when small (read before the first byte is
        sent, so a failing document is refused before anything goes out), else this body."""
        if self._length <= STREAM_THRESHOLD:
            return b"".join(self)
        return self


def envelope(obj: Any) -> Body:
    """The whole request document for a generated request element ``obj``."""
    xml: XmlType = type(obj).__xml__
    buf = [f'<{xml.name} xmlns="{namespace_of(type(obj))}">']
    parts: list[Part] = [PROLOG]
    _write(obj, xml, buf, parts)
    buf.append(f"</{xml.name}>")
    parts.append("".join(buf).encode() + EPILOG)
    return Body(parts)


def payload_envelope(payload: etree._Element) -> bytes:
    """The whole request document for a payload element built elsewhere (zeep's, for any
    operation of a FaxWS WSDL), in the form :func:`envelope` writes: the payload's namespace
    as the default one, no prefixes, ``<X/>`` for empty elements inside the payload (the
    payload element itself always opened and closed), the same escaping.

    Only what that form can carry is accepted: elements of the payload's namespace holding
    either text or elements. Anything else (attributes such as ``xsi:nil`` or ``xsi:type``,
    elements of another namespace, mixed content) raises :class:`BadInputError` naming the
    element, before anything is sent.
    """
    qname = etree.QName(payload)
    namespace = qname.namespace or ""
    buf = [f'<{qname.localname} xmlns="{namespace}">']
    _write_element_content(payload, namespace, f"/{qname.localname}", buf)
    buf.append(f"</{qname.localname}>")
    return PROLOG + "".join(buf).encode() + EPILOG


def _write_element_content(
    element: etree._Element, namespace: str, path: str, buf: list[str]
) -> None:
    if element.attrib:
        raise BadInputError(
            path, f"has attributes ({', '.join(str(k) for k in element.attrib)}), not sent"
        )
    children = [c for c in element if isinstance(c.tag, str)]
    text = element.text or ""
    if children and text.strip():
        raise BadInputError(path, "mixes text and elements")
    if not children:
        # translate() and a regex walk every character in Python's slow paths; base64 text,
        # which never needs escaping, is checked with three fast substring searches instead.
        needs = "&" in text or "<" in text or ">" in text
        buf.append(text.translate(_ESCAPES) if needs else text)
        return
    for child in children:
        qname = etree.QName(child)
        name = qname.localname
        child_path = f"{path}/{name}"
        if (qname.namespace or "") != namespace:
            raise BadInputError(child_path, f"is not in the namespace {namespace!r}")
        if (child.tail or "").strip():
            raise BadInputError(child_path, "is followed by text")
        inner: list[str] = []
        _write_element_content(child, namespace, child_path, inner)
        buf.append(f"<{name}>{''.join(inner)}</{name}>" if inner != [""] else f"<{name}/>")


def fault_envelope(code: str, text: str) -> bytes:
    """A SOAP 1.1 fault answer (``code`` such as ``soap:Client``), in the envelope form of
    every other document the core writes."""
    return (
        PROLOG
        + (
            f"<soap:Fault><faultcode>{code.translate(_ESCAPES)}</faultcode>"
            f"<faultstring>{text.translate(_ESCAPES)}</faultstring></soap:Fault>"
        ).encode()
        + EPILOG
    )
