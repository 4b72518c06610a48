"""Reading responses: a hardened XML parse, SOAP faults, and the payload as a generated class.

A response is untrusted input. The parser never loads a DTD, expands an entity or touches the
network or the file system; a document with a DOCTYPE is refused before parsing; size and
nesting depth are bounded (libxml2's defaults without ``huge_tree``). Everything that goes
wrong surfaces as a :class:`~faxws.errors.FaxWSError`, never as an lxml exception.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, TypeVar

from lxml import etree

from faxws import _safexml
from faxws._log import logger
from faxws._soap import SOAP11_NS, SOAP12_NS
from faxws._xsd import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    Operation,
    XmlType,
    namespace_of,
)
from faxws.errors import (
    AuthenticationError,
    HTTPStatusError,
    ProtocolError,
    ServiceError,
    SoapFaultError,
    excerpt,
)

_ENVELOPES = {f"{{{SOAP11_NS}}}Envelope": SOAP11_NS, f"{{{SOAP12_NS}}}Envelope": SOAP12_NS}


ResponseT = TypeVar("ResponseT")


class ReadError(Exception):
    """Raised inside the reader; the caller turns it into a typed error with context."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_document(data: bytes) -> etree._Element:
    """Parse untrusted XML. Raises :class:`ReadError`."""
    if not data.strip():
        raise ReadError("the response body is empty")
    if _safexml.dtd_offset(data) >= 0:
        raise ReadError("the response has a DOCTYPE (DTDs are refused)")
    parser = _safexml.parser()
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise ReadError(f"the response is not well-formed XML: {exc.msg}") from None
    except (ValueError, etree.LxmlError) as exc:
        raise ReadError(f"the response cannot be parsed: {exc}") from None
    problem = _safexml.namespace_error(parser)
    if problem is not None:
        line, message = problem
        raise ReadError(f"the response is not namespace-well-formed XML: {message}, line {line}")
    if _safexml.has_dtd(root):
        raise ReadError("the response has a DTD (DTDs are refused)")
    return root


def soap_payload(root: etree._Element) -> etree._Element:
    """The single element inside the SOAP Body. Raises :class:`ReadError`."""
    soap_ns = _ENVELOPES.get(str(root.tag))
    if soap_ns is None:
        raise ReadError(f"the response is not a SOAP envelope (root element {_name(root)})")
    # The first Body child (as find() would give it, without compiling a path).
    body = next((c for c in root if c.tag == f"{{{soap_ns}}}Body"), None)
    if body is None:
        raise ReadError("the SOAP envelope has no Body")
    children = [c for c in body if isinstance(c.tag, str)]
    if len(children) != 1:
        raise ReadError(f"the SOAP Body holds {len(children)} elements, expected 1")
    return children[0]


def fault_of(payload: etree._Element) -> tuple[str, str] | None:
    """(fault code, fault string) when ``payload`` is a SOAP 1.1 or 1.2 Fault."""
    if payload.tag == f"{{{SOAP11_NS}}}Fault":
        return (
            _child_text(payload, "faultcode") or "soap:Server",
            _child_text(payload, "faultstring"),
        )
    if payload.tag == f"{{{SOAP12_NS}}}Fault":
        code = payload.find(f"{{{SOAP12_NS}}}Code/{{{SOAP12_NS}}}Value")
        reason = payload.find(f"{{{SOAP12_NS}}}Reason/{{{SOAP12_NS}}}Text")
        return (
            (code.text or "").strip() if code is not None else "env:Receiver",
            (reason.text or "").strip() if reason is not None else "",
        )
    return None


def _child_text(element: etree._Element, local: str) -> str:
    child = child_element(element, local)
    return "" if child is None else "".join(str(t) for t in child.itertext()).strip()


def _name(element: etree._Element) -> str:
    q = etree.QName(element)
    return f"{{{q.namespace}}}{q.localname}" if q.namespace else q.localname


def read_payload(payload: etree._Element, cls: type[Any]) -> Any:
    """Map ``payload`` onto the generated class ``cls``. Raises :class:`ReadError`."""
    found = reader(cls)
    if payload.tag != found.tag:
        raise ReadError(f"expected the element {found.tag}, got {_name(payload)}")
    return found.read(payload, found.path)


class _Reader:
    """The reader of one generated class, compiled once from its description: each field's
    full tag, bounds and kind worked out ahead, so that reading an element is one pass over
    its children and one over the fields (paths are spelled out only for a message)."""

    __slots__ = ("_cls", "_fields", "_index", "_plain", "path", "tag")

    def __init__(self, cls: type[Any]) -> None:
        xml: XmlType = cls.__xml__
        namespace = namespace_of(cls)
        self._cls = cls
        self.tag = f"{{{namespace}}}{xml.name}"
        self.path = f"/{xml.name}"
        self._fields = tuple(
            (
                f"{{{namespace}}}{f.name}",
                f"/{f.name}",
                f.attr,
                f.min_occurs,
                f.max_occurs,
                f.repeated,
                f.complex_type,
                f.xsd_type,
            )
            for f in xml.fields
        )
        # Each field's place by its tag, and whether every field is a single scalar (then
        # the one-pass read below applies).
        self._index = {step[0]: i for i, step in enumerate(self._fields)}
        self._plain = all(not f.repeated and f.complex_type is None for f in xml.fields)

    def read(self, element: etree._Element, path: str) -> Any:
        if self._plain:
            found: list[Any] = [None] * len(self._fields)
            index = self._index
            for child in element:
                i = index.get(child.tag)
                if i is None or found[i] is not None:
                    if not isinstance(child.tag, str):
                        continue  # an entity reference or the like, as the general way skips
                    break  # an unknown or repeated element: read the general way
                found[i] = child
            else:
                values: dict[str, Any] = {}
                for child, (_, step, attr, low, _, _, _, xsd_type) in zip(
                    found, self._fields, strict=True
                ):
                    if child is None:
                        if low:
                            raise ReadError(f"the response lacks {path}{step}")
                        values[attr] = None
                    elif xsd_type == "string" and not len(child):
                        values[attr] = child.text or ""  # as _scalar reads it
                    else:
                        values[attr] = _scalar(xsd_type, child, path + step)
                return self._cls(**values)
        return self._read(element, path)

    def _read(self, element: etree._Element, path: str) -> Any:
        by_name: dict[str, list[etree._Element]] = {}
        for child in element:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            same = by_name.get(tag)
            if same is None:
                by_name[tag] = [child]
            else:
                same.append(child)
        values: dict[str, Any] = {}
        for tag, step, attr, low, high, repeated, complex_type, xsd_type in self._fields:
            found = by_name.pop(tag, [])
            count = len(found)
            if count < low:
                raise ReadError(f"the response lacks {path}{step}")
            if high is not None and count > high:
                raise ReadError(f"the response has {count} {path}{step}, at most {high}")
            if repeated:
                if complex_type is not None:
                    sub = reader(complex_type)
                    values[attr] = tuple(
                        sub.read(child, f"{path}{step}[{i}]") for i, child in enumerate(found, 1)
                    )
                else:
                    values[attr] = tuple(
                        _scalar(xsd_type, child, f"{path}{step}[{i}]")
                        for i, child in enumerate(found, 1)
                    )
            elif not count:
                values[attr] = None
            elif complex_type is not None:
                values[attr] = reader(complex_type).read(found[0], path + step)
            else:
                values[attr] = _scalar(xsd_type, found[0], path + step)
        if by_name:
            # The service may grow: unknown elements are tolerated.
            logger.debug("ignoring unknown elements in %s: %s", path, ", ".join(sorted(by_name)))
        return self._cls(**values)


_READERS: dict[type[Any], _Reader] = {}


def reader(cls: type[Any]) -> _Reader:
    """The compiled reader of a generated class (made once, then shared)."""
    found = _READERS.get(cls)
    if found is None:
        # Two threads may both compile it; both results are equal, one of them is kept.
        found = _READERS.setdefault(cls, _Reader(cls))
    return found


def _scalar(xsd_type: str, element: etree._Element, path: str) -> Any:
    if len(element):
        raise ReadError(f"{path} must hold text, not elements")
    text = element.text or ""
    if xsd_type == "string":
        return text
    token = text.strip()
    if xsd_type == "boolean":
        if token in ("true", "1"):
            return True
        if token in ("false", "0"):
            return False
        raise ReadError(f"{path} is not a boolean: {token[:40]!r}")
    if xsd_type in ("int", "long"):
        low, high = (INT_MIN, INT_MAX) if xsd_type == "int" else (LONG_MIN, LONG_MAX)
        try:
            if len(token) > 25:
                raise ValueError
            number = int(token)
        except ValueError:
            raise ReadError(f"{path} is not an integer: {token[:40]!r}") from None
        if not low <= number <= high:
            raise ReadError(f"{path} is out of range for xs:{xsd_type}: {number}")
        return number
    if xsd_type == "base64Binary":
        try:
            return base64.b64decode("".join(token.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ReadError(f"{path} is not valid base64") from None
    raise ReadError(f"{path} has the unsupported type xs:{xsd_type}")


# -- answers: the result, or the faxws error the answer means ----------------------------

Redact = Callable[[str], str]


def decode_text(data: bytes) -> str:
    """Text of a response body for a message: UTF-16 by its byte-order mark or its zero
    bytes (so that a secret in it reads as text and is masked), else UTF-8."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    if len(data) >= 2 and data[0] == 0 and data[1] != 0:
        return data.decode("utf-16-be", "replace")
    if len(data) >= 2 and data[1] == 0 and data[0] != 0:
        return data.decode("utf-16-le", "replace")
    return data.decode("utf-8", "replace")


def _maybe_delivered(status: int) -> bool:
    """A final answer without a SOAP fault: only a redirect (3xx) or a refusal (4xx) says the
    request was not taken; anything else (5xx, or an unexpected 1xx or 2xx) may follow it."""
    return not 300 <= status < 500


def payload_of(status: int, content: bytes, rid: str, redact: Redact) -> etree._Element:
    """The element inside the SOAP Body of a successful answer, or the error the answer
    means: AuthenticationError (401/403), SoapFaultError, HTTPStatusError (an error status
    without a fault), ProtocolError (not a readable SOAP answer)."""

    def body_text() -> str:
        return excerpt(redact(decode_text(content[:4000])))

    try:
        payload = soap_payload(parse_document(content))
    except ReadError as exc:
        if status in (401, 403):
            raise AuthenticationError(
                f"the service rejected the credentials (HTTP {status})",
                request_id=rid,
                status_code=status,
            ) from None
        if not 200 <= status < 300:
            raise HTTPStatusError(
                f"HTTP {status} without a SOAP answer",
                request_id=rid,
                status_code=status,
                body_excerpt=body_text(),
                maybe_delivered=_maybe_delivered(status),
            ) from None
        raise ProtocolError(
            exc.message, request_id=rid, status_code=status, body_excerpt=body_text()
        ) from None
    fault = fault_of(payload)
    if status in (401, 403):
        raise AuthenticationError(
            f"the service rejected the credentials (HTTP {status})"
            + (f": {excerpt(redact(fault[1]), 200)}" if fault else ""),
            request_id=rid,
            status_code=status,
            fault_string=redact(fault[1]) if fault else None,
        )
    if fault is not None:
        raise SoapFaultError(redact(fault[0]), redact(fault[1]), request_id=rid, status_code=status)
    if not 200 <= status < 300:
        raise HTTPStatusError(
            f"HTTP {status} with a SOAP answer that is not a fault",
            request_id=rid,
            status_code=status,
            body_excerpt=body_text(),
            maybe_delivered=_maybe_delivered(status),
        )
    return payload


def child_element(element: etree._Element, local: str) -> etree._Element | None:
    """The first child element named ``local`` in any namespace, or None."""
    for child in element:
        if isinstance(child.tag, str) and child.tag.rpartition("}")[2] == local:
            return child
    return None


def raise_for_ws_error(payload: etree._Element, rid: str, status: int, redact: Redact) -> None:
    """ServiceError when an answer (of any operation that has them) says ``return`` false or
    carries a non-zero ``WSError``."""
    returned = child_element(payload, "return")
    error = child_element(payload, "WSError")
    ok = returned is None or (returned.text or "").strip() in ("true", "1")
    code_element = None if error is None else child_element(error, "ErrorCode")
    code_text = (code_element.text or "") if code_element is not None else ""
    try:
        code = int(code_text.strip() or "0")
    except ValueError:
        raise ProtocolError(
            f"the WSError's ErrorCode {excerpt(redact(code_text), 40)!r} is not an int",
            request_id=rid,
            status_code=status,
        ) from None
    if ok and code == 0:
        return
    text = "" if error is None else _child_text(error, "ErrorString")
    text = text or ("the service returned false" if not ok else "")
    raise ServiceError(code, redact(text), request_id=rid, status_code=status)


def interpret(
    operation: Operation[Any, ResponseT], status: int, content: bytes, rid: str, redact: Redact
) -> ResponseT:
    """A successful answer of ``operation`` as its generated output class, or its error."""
    payload = payload_of(status, content, rid, redact)
    raise_for_ws_error(payload, rid, status, redact)
    try:
        result: ResponseT = read_payload(payload, operation.output)
        return result
    except ReadError as exc:
        raise ProtocolError(
            exc.message,
            request_id=rid,
            status_code=status,
            body_excerpt=excerpt(redact(decode_text(content[:4000]))),
        ) from None
