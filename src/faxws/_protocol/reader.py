"""Reading responses: a hardened XML parse, SOAP faults, and the payload as a generated class.

A response is untrusted input. The parser never loads a DTD, expands an entity or touches the
network or the file system; a document with a DOCTYPE is refused before parsing; size and
nesting depth are bounded (libxml2's defaults without ``huge_tree``). Everything that goes
wrong surfaces as a :class:`~faxws.errors.FaxWSError`, never as an lxml exception.
"""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from lxml import etree

from faxws._log import logger
from faxws._protocol import safexml as _safexml
from faxws._protocol.soap import SOAP11_NS, SOAP12_NS
from faxws._protocol.xsd import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    NAMESPACE,
    Operation,
    XmlField,
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
_BODIES = {ns: f"{{{ns}}}Body" for ns in _ENVELOPES.values()}
_FAULT11, _FAULT12 = f"{{{SOAP11_NS}}}Fault", f"{{{SOAP12_NS}}}Fault"


ResponseT = TypeVar("ResponseT")


class ReadError(Exception):
    """Raised inside the reader; the caller turns it into a typed error with context."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_document(data: bytes) -> etree._Element:
    """Parse untrusted XML. Raises :class:`ReadError`."""
    if not data or data.isspace():  # as data.strip() would be empty, without a copy
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
    body_tag = _BODIES[soap_ns]
    # The first Body child, as root.find(body_tag) finds it (which costs more than the loop).
    for body in root:
        if body.tag == body_tag:
            break
    else:
        raise ReadError("the SOAP envelope has no Body")
    if len(body) == 1 and isinstance(body[0].tag, str):
        return body[0]  # as answers are written: the payload alone
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


def _name(element: etree._Element) -> str:
    q = etree.QName(element)
    return f"{{{q.namespace}}}{q.localname}" if q.namespace else q.localname


#: Documents from this size are checked against the packaged schema and read in one pass
#: (see _Reader.trusts); below it, a schema check costs more than it saves.
TRUST_FROM = 2048


def read_payload(
    payload: etree._Element, cls: type[Any], size: int = TRUST_FROM, *, checked: bool = False
) -> Any:
    """Map ``payload`` onto the generated class ``cls``. Raises :class:`ReadError`.
    ``size``: the document's size in bytes, when known. ``checked``: the caller found
    ``payload`` valid against the packaged schema, and it holds no comment, processing
    instruction or entity (the simulator's parse keeps none): it is read as trusted."""
    xml: XmlType = cls.__xml__
    reader = _reader(cls)
    if payload.tag != reader.tag:
        raise ReadError(f"expected the element {reader.tag}, got {_name(payload)}")
    if (checked and reader.packaged()) or (size >= TRUST_FROM and reader.trusts(payload)):
        try:
            return reader.trusted(payload)
        except (ValueError, binascii.Error):  # pragma: no cover (the schema rules these out)
            pass  # the general reader below tells what is wrong
    unknown: list[tuple[str, str]] = []
    try:
        result = reader.read(payload, unknown)
    except _Misfit as exc:
        raise ReadError(f"{exc.before}/{xml.name}{exc.path}{exc.after}") from None
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
        self, before: str, path: str, after: str, element: etree._Element | None = None
    ) -> None:
        super().__init__(before + path + after)
        self.before, self.path, self.after = before, path, after
        self.element = element  # the child at fault, when its position is not known yet


_UNBOUNDED = sys.maxsize


class _Reader:
    """The reader of one generated class, compiled once from its description: each child's
    tag mapped to its field ahead, so that reading an element is one pass over its children.
    Paths for messages are put together only when something does not fit."""

    __slots__ = (
        "_bulk",
        "_cls",
        "_fields",
        "_index",
        "_plan",
        "_schema",
        "_tags",
        "_types",
        "tag",
    )

    def __init__(self, cls: type[Any]) -> None:
        xml: XmlType = cls.__xml__
        namespace = namespace_of(cls)
        self._cls = cls
        self.tag = f"{{{namespace}}}{xml.name}"  # the element's own
        self._fields = xml.fields
        self._index = {f"{{{namespace}}}{f.name}": i for i, f in enumerate(xml.fields)}
        flat = all(f.max_occurs == 1 and f.complex_type is None for f in xml.fields)
        # A type of single text elements (a job id, a recipient, an error) is read in one
        # step when its children are exactly its fields in order, as answers write them.
        self._tags = list(self._index) if flat else None
        self._types = [f.xsd_type for f in xml.fields]
        # For answers the packaged schema has checked (see trusts): each field's tag, and
        # its reader or its type.
        self._plan = [
            (tag, f.repeated, f.complex_type, f.xsd_type)
            for tag, f in zip(self._index, xml.fields, strict=True)
        ]
        self._bulk = _bulk_reader(cls)
        self._schema: bool | None = None  # whether the packaged schema describes cls

    def trusts(self, element: etree._Element) -> bool:
        """Whether ``element`` may be read by :meth:`trusted`: its class is one of the
        packaged bindings (generated from the packaged schema), and that schema finds the
        element valid, with no comment, processing instruction or entity in it. Then its
        children are exactly its fields, in order, each holding what its type allows; the
        general reader would find the same values, only slower."""
        if not self.packaged():
            return False
        if next(element.iter(etree.Comment, etree.ProcessingInstruction, etree.Entity), None):
            return False
        from faxws.validation import default_validator  # loads lxml's schema on first use

        return not default_validator()._validate(element)

    def packaged(self) -> bool:
        """Whether the class is one of the packaged bindings (the packaged schema's)."""
        if self._schema is None:
            self._schema = _packaged(self._cls)
        return self._schema

    def trusted(self, element: etree._Element) -> Any:
        """The instance a schema-valid ``element`` holds (see :meth:`trusts`)."""
        if self._bulk is not None:
            return self._bulk(element)
        if self._tags is not None and len(element) == len(self._tags):
            # Single text elements, each required once: its children are its fields, in
            # order (a field that may be left out would not be).
            return self._cls(*map(_valid_scalar, self._types, [c.text for c in element]))
        children = list(element)
        tags = [c.tag for c in children]
        values: list[Any] = []
        pos, end = 0, len(children)
        for tag, repeated, complex_type, xsd_type in self._plan:
            start = pos
            while pos < end and tags[pos] == tag:
                pos += 1
            if complex_type is not None:
                sub = _reader(complex_type)
                items = [sub.trusted(c) for c in children[start:pos]]
            else:
                items = [_valid_scalar(xsd_type, c.text) for c in children[start:pos]]
            if repeated:
                values.append(tuple(items))
            else:
                values.append(items[0] if items else None)
        return self._cls(*values)

    def read(self, element: etree._Element, unknown: list[tuple[str, str]]) -> Any:
        """The instance ``element`` holds; elements it does not know are added to
        ``unknown`` as (path below ``element``, tag)."""
        if self._tags is not None:
            children = list(element)
            if [c.tag for c in children] == self._tags:
                try:
                    return self._cls(*map(_scalar, self._types, children))
                except _Misfit:
                    pass  # told again below, with its place
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


def _packaged(cls: type[Any]) -> bool:
    if cls.__module__ != "faxws.bindings":
        return False  # bindings generated from another WSDL: the packaged schema is not theirs
    from faxws.validation import default_validator

    return bool(cls.__xml__.name in default_validator().elements)


def _valid_scalar(xsd_type: str, text: str | None) -> Any:
    """A value from the text of an element the schema found valid."""
    if xsd_type == "string":
        return text or ""
    token = (text or "").strip()
    if xsd_type == "boolean":
        return token in ("true", "1")
    if xsd_type in ("int", "long"):
        if len(token) > 25:
            raise ValueError(token)  # the general reader's limit: it tells what is wrong
        return int(token)
    return base64.b64decode("".join(token.split()), validate=True)  # base64Binary


def _bulk_reader(cls: type[Any]) -> Callable[[etree._Element], Any] | None:
    """For a list type (one repeated field) whose items hold single values (job ids,
    recipients): a reader taking the items' values from the element's descendants in one
    pass of lxml's, for an element the schema found valid (see _Reader.trusts)."""
    fields = cls.__xml__.fields
    if len(fields) != 1 or not fields[0].repeated or fields[0].complex_type is None:
        return None
    item = fields[0].complex_type
    parts = item.__xml__.fields
    if not parts or not all(
        f.max_occurs == f.min_occurs == 1 and f.complex_type is None for f in parts
    ):
        return None
    tags = [f"{{{namespace_of(item)}}}{f.name}" for f in parts]
    types = [f.xsd_type for f in parts]
    width = len(tags)

    def read(element: etree._Element) -> Any:
        texts = [e.text for e in element.iterdescendants(*tags)]
        if types == ["string"]:
            return cls(tuple([item(t or "") for t in texts]))
        rows = zip(*[iter(texts)] * width, strict=True)
        return cls(tuple([item(*map(_valid_scalar, types, row)) for row in rows]))

    return read


def _step(f: XmlField, position: int) -> str:
    return f"/{f.name}[{position}]" if f.repeated else f"/{f.name}"


_READERS: dict[type[Any], _Reader] = {}


def _reader(cls: type[Any]) -> _Reader:
    found = _READERS.get(cls)
    if found is None:
        found = _READERS.setdefault(cls, _Reader(cls))
    return found


def _misfit(element: etree._Element, after: str) -> _Misfit:
    return _Misfit("", "", after, element)


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
        raise _misfit(element, f" is not a boolean: {token[:40]!r}")
    if xsd_type in ("int", "long"):
        low, high = (INT_MIN, INT_MAX) if xsd_type == "int" else (LONG_MIN, LONG_MAX)
        try:
            if len(token) > 25:
                raise ValueError
            number = int(token)
        except ValueError:
            raise _misfit(element, f" is not an integer: {token[:40]!r}") from None
        if not low <= number <= high:
            raise _misfit(element, f" is out of range for xs:{xsd_type}: {number}")
        return number
    if xsd_type == "base64Binary":
        try:
            return base64.b64decode("".join(token.split()), validate=True)
        except (binascii.Error, ValueError):
            raise _misfit(element, " is not valid base64") from None
    raise _misfit(element, f" has the unsupported type xs:{xsd_type}")


# -- successful answers as the service writes them, in one made function -----------------------


def _answer_reader(cls: type[Any]) -> Callable[[Any], Any]:
    """The function reading a successful answer of output class ``cls`` from its parsed
    document, made once per class (see :func:`_make_answer_reader`)."""
    found = _ANSWER_READERS.get(cls)
    if found is None:
        found = _ANSWER_READERS.setdefault(cls, _make_answer_reader(cls))
    return found


_ANSWER_READERS: dict[type[Any], Callable[[Any], Any]] = {}


def _make_answer_reader(cls: type[Any]) -> Callable[[Any], Any]:
    """A function taking the document element of an answer (lxml's, or ElementTree's from
    :func:`.safexml.parse_plain`: it reads only tags, text and children, which the two
    give alike) and giving the instance of ``cls`` it holds, when it is a success written as
    answers are: a SOAP 1.1 envelope holding only its Body, the Body only the payload, and every
    element in it exactly the fields of its type in schema order, each as often as it may be,
    each value of its type; ``return`` (where there is one) true and ``WSError``'s ``ErrorCode``
    0. Anything else gives None, and the general reading (:func:`payload_of`,
    :func:`raise_for_ws_error`, :func:`read_payload`) tells what the answer means: the values
    found here are the ones it would find (tests/test_equivalence.py). Made like the writer's
    functions: Python source from the bindings' description, where tags and classes are names
    bound in its scope, never text put into the source."""
    scope: dict[str, Any] = {
        "ENVELOPE": f"{{{SOAP11_NS}}}Envelope",
        "BODY": _BODIES[SOAP11_NS],
        "_value": _answer_value,
        "_NO": _NO,
    }
    lines: list[str] = []
    names: dict[type[Any], str] = {}

    def const(value: Any) -> str:
        name = f"k{len(scope)}"
        scope[name] = value
        return name

    def reader_of(c: type[Any]) -> str:
        if c in names:
            return names[c]
        name = names[c] = f"read{len(names)}"
        namespace = namespace_of(c)
        fields = c.__xml__.fields
        subs = {f.complex_type: reader_of(f.complex_type) for f in fields if f.complex_type}
        out = [f"def {name}(e):", "    k = list(e)", "    n = len(k)", "    i = 0"]
        values = []
        for j, f in enumerate(fields):
            tag = const(f"{{{namespace}}}{f.name}")
            if f.complex_type is not None:
                convert = f"{subs[f.complex_type]}(c)"
            else:
                convert = f"_value({const(f.xsd_type)}, c)"
            high = _UNBOUNDED if f.max_occurs is None else f.max_occurs
            if f.min_occurs == high == 1:
                out += [
                    f"    if i >= n or k[i].tag != {tag}:",
                    "        return None",
                    "    c = k[i]",
                    "    i += 1",
                    f"    v{j} = {convert}",
                    f"    if v{j} is _NO or v{j} is None:",
                    "        return None",
                ]
            else:
                out += [
                    "    s = i",
                    f"    while i < n and k[i].tag == {tag}:",
                    "        i += 1",
                    f"    if not {f.min_occurs} <= i - s <= {high}:",
                    "        return None",
                    f"    items = [{convert} for c in k[s:i]]",
                    "    if _NO in items or None in items:",
                    "        return None",
                    f"    v{j} = tuple(items)"
                    if f.repeated
                    else f"    v{j} = items[0] if items else None",
                ]
            values.append(f"v{j}")
        out += [
            "    if i != n:",
            "        return None",
            f"    return {const(c)}({', '.join(values)})",
        ]
        lines.extend(out)
        return name

    try:
        top = reader_of(cls)
        checks = _success_checks(cls, const)
    except _Unfit:
        return lambda root: None
    lines += [
        "def answer(root):",
        "    if root.tag != ENVELOPE or len(root) != 1:",
        "        return None",
        "    body = root[0]",
        "    if body.tag != BODY or len(body) != 1:",
        "        return None",
        "    e = body[0]",
        f"    if e.tag != {const(_reader(cls).tag)}:",
        "        return None",
        f"    r = {top}(e)",
        f"    if r is None or {' or '.join(checks) or 'False'}:",
        "        return None",
        "    return r",
    ]
    exec("\n".join(lines), scope)  # noqa: S102 (names made above; values bound in scope)
    made: Callable[[Any], Any] = scope["answer"]
    return made


class _Unfit(Exception):  # noqa: N818 (internal: no answer of the class is read the short way)
    pass


def _success_checks(cls: type[Any], const: Callable[[Any], str]) -> list[str]:
    """Python conditions on the instance ``r`` under which :func:`raise_for_ws_error` would
    find the answer a failure: ``return`` false, or a ``WSError`` whose ``ErrorCode`` is not
    0. Raises _Unfit where the fields are not of the types those checks read. ``const``
    binds a value to a name in the made function's scope."""
    checks = []
    by_name = {f.name: f for f in cls.__xml__.fields}
    returned, error = by_name.get("return"), by_name.get("WSError")
    if returned is not None:
        if returned.xsd_type != "boolean" or returned.repeated:
            raise _Unfit
        checks.append(f"getattr(r, {const(returned.attr)}) is False")
    if error is not None and error.complex_type is not None:
        if error.repeated:
            raise _Unfit
        code = {f.name: f for f in error.complex_type.__xml__.fields}.get("ErrorCode")
        if code is not None:
            if code.xsd_type not in ("int", "long") or code.repeated:
                raise _Unfit
            ws, number = const(error.attr), const(code.attr)
            checks.append(
                f"(getattr(r, {ws}) is not None and getattr(getattr(r, {ws}), {number}) != 0)"
            )
    return checks


_NO: Any = object()  # a value that does not fit: the answer takes the general reading


def _answer_value(xsd_type: str, element: etree._Element) -> Any:
    """The value of a single-value element as the general reading finds it, or _NO."""
    try:
        return _scalar(xsd_type, element)
    except _Misfit:
        return _NO


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


def payload_of(
    status: int, content: bytes, rid: str, redact: Redact, root: etree._Element | None = None
) -> etree._Element:
    """The element inside the SOAP Body of a successful answer, or the error the answer
    means: AuthenticationError (401/403), SoapFaultError, HTTPStatusError (an error status
    without a fault), ProtocolError (not a readable SOAP answer). ``root``: the answer's
    document element, when lxml parsed it already."""

    def body_text() -> str:
        return excerpt(redact(decode_text(content[:4000])))

    try:
        payload = soap_payload(parse_document(content) if root is None else root)
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


#: The namespaces a plain answer may declare (see :func:`.safexml.parse_plain`): those
#: answers use, and those a SOAP toolkit such as gSOAP declares on every envelope.
PLAIN_NAMESPACES = frozenset(
    name.encode()
    for name in (
        SOAP11_NS,
        SOAP12_NS,
        NAMESPACE,
        "http://schemas.xmlsoap.org/soap/encoding/",
        "http://www.w3.org/2001/XMLSchema-instance",
        "http://www.w3.org/2001/XMLSchema",
    )
)


def interpret(
    operation: Operation[Any, ResponseT],
    status: int,
    content: bytes,
    rid: str,
    redact: Redact,
    *,
    keep_lock: bool = True,
) -> ResponseT:
    """A successful answer of ``operation`` as its generated output class, or its error.

    ``keep_lock``: a small plain answer is parsed by the standard library's parser, which
    keeps the interpreter lock (what threads sharing a client gain most from); else by lxml,
    which costs fewer instructions (what an event loop's one thread gains most from)."""
    root = None
    if 200 <= status < 300 and len(content) < TRUST_FROM:
        if keep_lock:
            found_root: Any = _safexml.parse_plain(content, PLAIN_NAMESPACES)
        else:
            try:
                found_root = root = parse_document(content)
            except ReadError:
                found_root = None  # told below
        if found_root is not None:
            found: ResponseT | None = _answer_reader(operation.output)(found_root)
            if found is not None:
                return found
    payload = payload_of(status, content, rid, redact, root)
    raise_for_ws_error(payload, rid, status, redact)
    try:
        result: ResponseT = read_payload(payload, operation.output, len(content))
        return result
    except ReadError as exc:
        raise ProtocolError(
            exc.message,
            request_id=rid,
            status_code=status,
            body_excerpt=excerpt(redact(decode_text(content[:4000]))),
        ) from None
