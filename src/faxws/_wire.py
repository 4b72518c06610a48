"""The request's wire form: headers and the SOAP envelope, byte for byte as the contract shows.

zeep's own serialization differs from the documented form (prefixes, declaration quotes,
Content-Type, no Header element), so the envelope is written here from the generated bindings'
description of each element. base64 file content is encoded while sending, in chunks, so a
request with a large document costs memory of the order of one chunk, not of the document.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from faxws._xsd import NAMESPACE, BinaryContent, BytesContent, XmlType

SOAP11_NS = "http://schemas.xmlsoap.org/soap/envelope/"
CONTENT_TYPE = "application/soap+xml; charset=utf-8"
PATH = "/fax/v5"

PROLOG = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    f'<soap:Envelope xmlns:soap="{SOAP11_NS}"><soap:Header/><soap:Body>'
).encode()
EPILOG = b"</soap:Body></soap:Envelope>"

#: Bytes read per chunk while encoding (a multiple of 3, so chunks encode without padding).
CHUNK_SIZE = 3 * 256 * 1024
#: Bodies up to this size are sent as one bytes object; larger ones are streamed.
STREAM_THRESHOLD = 1 << 20

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})

Part = bytes | BinaryContent


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
                parts.append(BytesContent(item) if isinstance(item, (bytes, bytearray)) else item)
                buf.append(f"</{f.name}>")
            else:
                text = _text(f.xsd_type, item)
                buf.append(f"<{f.name}>{text}</{f.name}>" if text else f"<{f.name}/>")


class Body:
    """A request body: an iterable of bytes with a known length, sent without being joined.

    requests sends an iterable with ``__len__`` with a Content-Length header and no chunked
    encoding. It can be iterated more than once, so a request can be sent again.
    """

    __slots__ = ("_length", "_parts")

    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts
        self._length = sum(len(p) if isinstance(p, bytes) else base64_length(p.size) for p in parts)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes]:
        for part in self._parts:
            if isinstance(part, bytes):
                yield part
            else:
                for chunk in part.iter_bytes(CHUNK_SIZE):
                    yield base64.b64encode(chunk)

    def skeleton(self) -> bytes:
        """The envelope with every base64 value left empty: small, for schema checks."""
        return b"".join(p for p in self._parts if isinstance(p, bytes))

    def payload(self) -> bytes | Body:
        """What to hand to requests: plain bytes when small, else this streaming body."""
        if self._length <= STREAM_THRESHOLD:
            return b"".join(self)
        return self


def envelope(obj: Any) -> Body:
    """The whole request document for a generated request element ``obj``."""
    xml: XmlType = type(obj).__xml__
    buf = [f'<{xml.name} xmlns="{NAMESPACE}">']
    parts: list[Part] = [PROLOG]
    _write(obj, xml, buf, parts)
    buf.append(f"</{xml.name}>")
    parts.append("".join(buf).encode() + EPILOG)
    return Body(parts)


def headers(request_id: str, bearer_token: str | None) -> dict[str, str]:
    """The request headers of the contract (requests adds Content-Length from the body)."""
    out = {
        "Content-Type": CONTENT_TYPE,
        "SOAPAction": "",
        "x-ch-request-id": request_id,
    }
    if bearer_token is not None:
        out["Authorization"] = f"Bearer {bearer_token}"
    return out
