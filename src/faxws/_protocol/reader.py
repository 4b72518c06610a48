"""Reading responses: a hardened XML parse (:mod:`.safexml`), SOAP faults, and the payload as
a generated class. A response is untrusted input: everything that goes wrong surfaces as a
:class:`~faxws.errors.FaxWSError`, never as an lxml exception."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, TypeVar

from lxml import etree

from faxws._log import logger
from faxws._protocol import safexml as _safexml
from faxws._protocol.soap import SOAP11_NS, SOAP12_NS
from faxws._protocol.xsd import RANGES, Operation, XmlField, XmlType, namespace_of
from faxws.errors import (
    AuthenticationError,
    HTTPStatusError,
    ProtocolError,
    ServiceError,
    SoapFaultError,
    excerpt,
)

_ENVELOPES = {f"{{{SOAP11_NS}}}Envelope": SOAP11_NS, f"{{{SOAP12_NS}}}Envelope": SOAP12_NS}
_BODIES = {ns: f"{{{ns}}}Body" for ns in _ENVELOPES.values()}
_FAULT11, _FAULT12 = f"{{{SOAP11_NS}}}Fault", f"{{{SOAP12_NS}}}Fault"


ResponseT = TypeVar("ResponseT")
#: A mask of secrets (a client's and a call's own).
Redact = Callable[[str], str]


class ReadError(Exception):
    """Raised inside the reader; the caller turns it into a typed error with context.

    ``quoted``: the server's text the message quotes, cut short, if any: :meth:`says` masks
    it before the cut (a secret cut in two is no longer found by a mask applied after)."""

    def __init__(self, message: str, quoted: str | None = None) -> None:
        self.base = message
        self.quoted = quoted
        self.message = message if quoted is None else f"{message}: {quoted[:_QUOTED]!r}"
        super().__init__(self.message)

    def says(self, redact: Redact) -> str:
        """The message, what it quotes masked with ``redact`` before it is cut."""
        if self.quoted is None:
            return self.message
        return f"{self.base}: {redact(self.quoted)[:_QUOTED]!r}"


#: How much of a value a message quotes.
_QUOTED = 40


def parse_document(data: bytes) -> etree._Element:
    """Parse untrusted XML. Raises :class:`ReadError`."""
    if not data or data.isspace():  # as data.strip() would be empty, without a copy
        raise ReadError("the response body is empty")
    try:
        return _safexml.parse(data)
    except _safexml.Unparsed as exc:
        raise ReadError(_UNPARSED[exc.kind].format(exc.detail, exc.line)) from None


_UNPARSED = {
    "doctype": "the response has a DOCTYPE (DTDs are refused)",
    "dtd": "the response has a DTD (DTDs are refused)",
    "syntax": "the response is not well-formed XML: {}",
    "namespace": "the response is not namespace-well-formed XML: {}, line {}",
    "other": "the response cannot be parsed: {}",
}


def soap_payload(root: etree._Element) -> etree._Element:
    """The single element inside the SOAP Body. Raises :class:`ReadError`."""
    soap_ns = _ENVELOPES.get(str(root.tag))
    if soap_ns is None:
        raise ReadError(f"the response is not a SOAP envelope (root element {root.tag})")
    body_tag = _BODIES[soap_ns]
    # The first Body child, as root.find(body_tag) finds it (which costs more than the loop).
    for body in root:
        if body.tag == body_tag:
            break
    else:
        raise ReadError("the SOAP envelope has no Body")
    # The payload's ancestors: validating the payload against a schema copies their
    # declarations at a cost growing with the square of them (the parse itself is linear).
    for part in (root, body):
        if _safexml.crowded(part):
            raise ReadError(
                f"the response's {etree.QName(part).localname} has more than "
                f"{_safexml.MAX_ATTRIBUTES} attributes (namespace declarations included)"
            )
    children = [c for c in body if isinstance(c.tag, str)]
    if len(children) != 1:
        raise ReadError(f"the SOAP Body holds {len(children)} elements, expected 1")
    return children[0]


def fault_of(payload: etree._Element) -> tuple[str, str] | None:
    """(fault code, fault string) when ``payload`` is a SOAP 1.1 or 1.2 Fault."""
    tag = payload.tag
    if tag == _FAULT11:
        return (
            _child_text(payload, "faultcode") or "soap:Server",
            _child_text(payload, "faultstring"),
        )
    if tag == _FAULT12:
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


def read_payload(payload: etree._Element, cls: type[Any]) -> Any:
    """Map ``payload`` onto the generated class ``cls``. Raises :class:`ReadError`."""
    xml: XmlType = cls.__xml__
    reader = _reader(cls)
    if payload.tag != reader.tag:
        raise ReadError(f"expected the element {reader.tag}, got {payload.tag}")
    unknown: list[tuple[str, str]] = []
    try:
        result = reader.read(payload, unknown)
    except _Misfit as exc:
        raise ReadError(f"{exc.before}/{xml.name}{exc.path}{exc.after}", exc.quoted) from None
    if unknown:
        # The service may grow: unknown elements are tolerated.
        where: dict[str, list[str]] = {}
        for path, tag in unknown:
            where.setdefault(f"/{xml.name}{path}", []).append(tag)
        for path, tags in where.items():
            logger.debug("ignoring unknown elements in %s: %s", path, ", ".join(sorted(tags)))
    return result


class _Misfit(Exception):  # noqa: N818 (internal: becomes a ReadError with the whole path)
    """What does not fit; the path grows as it passes up through the readers."""

    def __init__(
        self,
        before: str,
        path: str,
        after: str,
        element: etree._Element | None = None,
        quoted: str | None = None,
    ) -> None:
        super().__init__(before + path + after)
        self.before, self.path, self.after = before, path, after
        self.element = element  # the child at fault, when its position is not known yet
        self.quoted = quoted  # the text at fault, quoted after the message (see ReadError)


class _Reader:
    """The reader of one generated class, each child's tag mapped to its field once: reading is
    one pass over the children, and paths are put together only when something does not fit."""

    __slots__ = ("_cls", "_fields", "_index", "_list", "tag")

    def __init__(self, cls: type[Any]) -> None:
        xml: XmlType = cls.__xml__
        namespace = namespace_of(cls)
        self._cls = cls
        self.tag = f"{{{namespace}}}{xml.name}"  # the element's own
        self._fields = xml.fields
        self._index = {f"{{{namespace}}}{f.name}": i for i, f in enumerate(xml.fields)}
        self._list = _list_reader(cls)

    def read(self, element: etree._Element, unknown: list[tuple[str, str]]) -> Any:
        """The instance ``element`` holds; elements it does not know are added to
        ``unknown`` as (path below ``element``, tag)."""
        if self._list is not None:
            found_list = self._list(element)
            if found_list is not None:
                return found_list
        index = self._index
        found: list[list[etree._Element]] = [[] for _ in self._fields]
        for child in element:
            slot = index.get(child.tag)
            if slot is not None:
                found[slot].append(child)
            elif isinstance(child.tag, str):
                unknown.append(("", child.tag))
        values: list[Any] = []
        for f, children in zip(self._fields, found, strict=True):
            n = len(children)
            if n < f.min_occurs:
                raise _Misfit("the response lacks ", f"/{f.name}", "")
            if f.max_occurs is not None and n > f.max_occurs:
                raise _Misfit(f"the response has {n} ", f"/{f.name}", f", at most {f.max_occurs}")
            if f.complex_type is not None:
                sub = _reader(f.complex_type)
                items = []
                for i, child in enumerate(children, 1):
                    seen = len(unknown)
                    try:
                        items.append(sub.read(child, unknown))
                    except _Misfit as exc:
                        exc.path = _step(f, i) + exc.path
                        raise
                    if len(unknown) != seen:
                        unknown[seen:] = [(_step(f, i) + p, t) for p, t in unknown[seen:]]
            else:
                xsd_type = f.xsd_type
                try:
                    items = [_scalar(xsd_type, child) for child in children]
                except _Misfit as exc:
                    at = next(i for i, c in enumerate(children, 1) if c is exc.element)
                    exc.path = _step(f, at)
                    raise
            if f.repeated:
                values.append(tuple(items))
            else:
                values.append(items[0] if items else None)
        return self._cls(*values)


def _list_reader(cls: type[Any]) -> Callable[[etree._Element], Any] | None:
    """For a list type of items holding required strings (job ids, by the thousand): a reader
    taking the values in one pass over the descendants, when they are exactly such items with
    their fields in order, as answers are written; else None, and the general reading reads
    (or refuses, with its place) what it would find."""
    fields = cls.__xml__.fields
    if len(fields) != 1 or not fields[0].repeated or fields[0].complex_type is None:
        return None
    item = fields[0].complex_type
    parts = item.__xml__.fields
    if not parts or not all(
        f.min_occurs == f.max_occurs == 1 and f.complex_type is None and f.xsd_type == "string"
        for f in parts
    ):
        return None
    item_tag = f"{{{namespace_of(cls)}}}{fields[0].name}"
    tags = [f"{{{namespace_of(item)}}}{f.name}" for f in parts]
    if item_tag in tags:
        return None
    pattern, width = [item_tag, *tags], len(tags)

    def read(element: etree._Element) -> Any:
        # Each child with as many children as the item has fields, and the tags in document
        # order those of items and their fields: each child is an item, each field in place.
        nodes = list(element.iterdescendants())
        if list(map(len, element)) != [width] * len(element) or [
            e.tag for e in nodes
        ] != pattern * len(element):
            return None
        del nodes[:: width + 1]  # the items
        texts = [e.text or "" for e in nodes]
        if width == 1:
            return cls(tuple(map(item, texts)))
        return cls(tuple([item(*row) for row in zip(*[iter(texts)] * width, strict=True)]))

    return read


def _step(f: XmlField, position: int) -> str:
    return f"/{f.name}[{position}]" if f.repeated else f"/{f.name}"


_READERS: dict[type[Any], _Reader] = {}


def _reader(cls: type[Any]) -> _Reader:
    found = _READERS.get(cls)
    if found is None:
        found = _READERS.setdefault(cls, _Reader(cls))
    return found


def _misfit(element: etree._Element, after: str, quoted: str | None = None) -> _Misfit:
    return _Misfit("", "", after, element, quoted)


def _scalar(xsd_type: str, element: etree._Element) -> Any:
    if len(element):
        raise _misfit(element, " must hold text, not elements")
    text = element.text or ""
    if xsd_type == "string":
        return text
    token = text.strip()
    if xsd_type == "boolean":
        if token in ("true", "1"):
            return True
        if token in ("false", "0"):
            return False
        raise _misfit(element, " is not a boolean", token)
    if xsd_type in RANGES:
        low, high = RANGES[xsd_type]
        try:
            if len(token) > 25:
                raise ValueError
            number = int(token)
        except ValueError:
            raise _misfit(element, " is not an integer", token) from None
        if not low <= number <= high:
            raise _misfit(element, f" is out of range for xs:{xsd_type}: {number}")
        return number
    if xsd_type == "base64Binary":
        try:
            return base64.b64decode("".join(token.split()), validate=True)
        except (binascii.Error, ValueError):
            raise _misfit(element, " is not valid base64") from None
    raise _misfit(element, f" has the unsupported type xs:{xsd_type}")


def body_excerpt(content: bytes, redact: Redact) -> str:
    """The start of a response body for an error, as text with the secrets masked: UTF-16 by
    its byte-order mark or its zero bytes (so that a secret in it reads as text and is
    masked), else UTF-8."""
    data = content[:4000]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", "replace")
    elif len(data) >= 2 and data[0] == 0 and data[1] != 0:
        text = data.decode("utf-16-be", "replace")
    elif len(data) >= 2 and data[1] == 0 and data[0] != 0:
        text = data.decode("utf-16-le", "replace")
    else:
        text = data.decode("utf-8", "replace")
    return excerpt(redact(text))


def payload_of(status: int, content: bytes, rid: str, redact: Redact) -> etree._Element:
    """The element inside the SOAP Body of a successful answer, or the error the answer
    means: AuthenticationError (401/403), SoapFaultError, HTTPStatusError (an error status
    without a fault), ProtocolError (not a readable SOAP answer)."""
    payload: etree._Element | None = None
    try:
        payload = soap_payload(parse_document(content))
    except ReadError as exc:
        unreadable = exc.message
    fault = None if payload is None else fault_of(payload)
    if status in (401, 403):
        raise AuthenticationError(
            # The status is said by str(), with the request id: not twice.
            "the service rejected the credentials"
            + (f": {excerpt(redact(fault[1]), 200)}" if fault else ""),
            request_id=rid,
            status_code=status,
            fault_string=redact(fault[1]) if fault else None,
        )
    if fault is not None:
        raise SoapFaultError(redact(fault[0]), redact(fault[1]), request_id=rid, status_code=status)
    if not 200 <= status < 300:
        raise HTTPStatusError(
            f"HTTP {status} "
            + (
                "without a SOAP answer"
                if payload is None
                else "with a SOAP answer that is not a fault"
            ),
            request_id=rid,
            status_code=status,
            body_excerpt=body_excerpt(content, redact),
            # Only a redirect (3xx) or a refusal (4xx) says the request was not taken; anything
            # else (5xx, or an unexpected 1xx) may follow it.
            maybe_delivered=not 300 <= status < 500,
        )
    if payload is None:
        raise ProtocolError(
            unreadable,
            request_id=rid,
            status_code=status,
            body_excerpt=body_excerpt(content, redact),
        )
    return payload


def child_element(element: etree._Element, local: str) -> etree._Element | None:
    """The first child element named ``local`` in any namespace, or None."""
    for child in element:
        if isinstance(child.tag, str) and child.tag.rpartition("}")[2] == local:
            return child
    return None


def raise_for_ws_error(payload: etree._Element, rid: str, status: int, redact: Redact) -> None:
    """ServiceError when an answer carries a non-zero ``WSError``, or a WSError beside a
    ``return`` that is false. (``return`` is the success flag only beside a WSError: without
    one it is a value, such as SimpleGetFaxStatus's status id.)"""
    error = child_element(payload, "WSError")
    returned = None if error is None else child_element(payload, "return")
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
            exc.says(redact),
            request_id=rid,
            status_code=status,
            body_excerpt=body_excerpt(content, redact),
        ) from None
