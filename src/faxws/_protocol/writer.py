"""The SOAP envelope byte for byte as the contract shows it (zeep's own serialization differs:
prefixes, declaration quotes, no Header element), written from the generated bindings'
description of each element. Documents are base64-encoded while sending, in chunks, so a large
one costs memory of the order of one chunk."""

from __future__ import annotations

import base64
import binascii
import operator
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, TypeVar, cast

from lxml import etree

from faxws._protocol.checks import describe_char
from faxws._protocol.content import BytesSource, Opened, Reader, Source, open_all, streams_of
from faxws._protocol.soap import SOAP11_NS
from faxws._protocol.xsd import RANGES, XmlField, XmlType, namespace_of
from faxws.errors import BadInputError, DocumentError

__all__ = [
    "Body",
    "OpenBody",
    "as_values",
    "document",
    "envelope",
    "envelope_of",
    "fault_envelope",
    "payload_envelope",
]


PROLOG = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    f'<soap:Envelope xmlns:soap="{SOAP11_NS}"><soap:Header/><soap:Body>'
).encode()
EPILOG = b"</soap:Body></soap:Envelope>"

#: Bytes read per chunk while encoding (a multiple of 3, so full chunks encode without padding).
CHUNK_SIZE = 3 * 256 * 1024
#: Bodies up to this size are read whole before the first byte is sent; larger ones stream.
STREAM_THRESHOLD = 1 << 20
#: Documents in memory up to this size are encoded as the envelope is written, while the
#: body so far stays within STREAM_THRESHOLD.
INLINE_LIMIT = 256 * 1024

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})

Part = bytes | Source


def base64_length(size: int) -> int:
    return 4 * ((size + 2) // 3)


_TEXT, _INT, _BOOL, _BINARY, _COMPLEX = range(5)
_KINDS = {"string": _TEXT, "int": _INT, "long": _INT, "boolean": _BOOL, "base64Binary": _BINARY}


class _Writer:
    """The writer of one generated class, its tags and each field's kind worked out once. A
    complex value may be an instance or the plain tuple of its field values in schema order (a
    thousand recipients without an object made for each). Strings are trusted to be text XML
    can carry (the client checks every string it is given, the simulator writes text it read);
    what else the schema would refuse is refused, naming the element, before anything is sent.
    """

    __slots__ = ("_cls", "_get", "_steps", "_text_tags", "_texts")

    def __init__(self, cls: type[Any]) -> None:
        xml: XmlType = cls.__xml__
        self._cls = cls
        attrs = [f.attr for f in xml.fields]
        getter = operator.attrgetter(*attrs) if attrs else (lambda _obj: ())
        self._get: Any = getter if len(attrs) != 1 else (lambda obj, a=attrs[0]: (getattr(obj, a),))
        self._steps = tuple(
            (
                f"<{f.name}>",
                f"</{f.name}>",
                f"<{f.name}/>",
                _COMPLEX if f.complex_type is not None else _KINDS.get(f.xsd_type, _TEXT),
                f.repeated,
                f.min_occurs,
                f.max_occurs,
                f.complex_type,
                f,
            )
            for f in xml.fields
        )
        # A type of single required strings (a recipient) is written by a shorter loop.
        text_only = bool(xml.fields) and all(
            f.xsd_type == "string" and f.complex_type is None and f.min_occurs == f.max_occurs == 1
            for f in xml.fields
        )
        self._text_tags = tuple(step[:3] for step in self._steps) if text_only else None
        self._texts: dict[str, Callable[[list[tuple[str, ...]]], str | None]] = {}

    def values(self, item: Any) -> tuple[Any, ...]:
        """The field values of an instance, or of a tuple of them; anything else is refused."""
        if type(item) is tuple:
            if len(item) != len(self._steps):
                raise _RefusedError(
                    "",
                    f"holds {len(item)} values, not the {len(self._steps)} fields of "
                    f"{self._cls.__name__}",
                )
            return item
        if not isinstance(item, self._cls):
            raise _RefusedError("", f"must be a {self._cls.__name__}, not {type(item).__name__}")
        return self._get(item)  # type: ignore[no-any-return]

    def _write_texts(self, items: Any, open_: str, close: str, ap: Callable[[str], None]) -> bool:
        """Write ``items`` of a type of single strings, each in ``open_``/``close``, with a
        function made for the type. False, having written nothing, when one needs the general
        path: to be refused with its place, or to be a str subclass written as its text (its
        own ``+``, ``__str__`` or ``__bool__`` must not decide what is sent)."""
        cls, get = self._cls, self._get
        rows = []
        for item in items:
            if type(item) is tuple:
                rows.append(item)
            elif isinstance(item, cls):
                rows.append(get(item))
            else:
                return False
        try:
            flat = "".join(chain.from_iterable(rows))  # for the escape check below
        except TypeError:
            return False
        if "&" in flat or "<" in flat or ">" in flat:
            # str's own translate: a subclass's may not escape, or may write other text.
            rows = [tuple([str.translate(v, _ESCAPES) for v in row]) for row in rows]
        write = self._texts.get(open_)
        if write is None:
            write = self._texts.setdefault(open_, _texts_writer(self._text_tags, open_, close))
        try:
            text = write(rows)
        except ValueError:  # a tuple of the wrong length
            return False
        if text is None:  # a value that is not exactly a str
            return False
        ap(text)
        return True

    def write(self, values: tuple[Any, ...], buf: list[str], parts: list[Part]) -> None:
        """Write the fields, given their values in schema order."""
        ap = buf.append
        for value, step in zip(values, self._steps, strict=True):
            open_, close, empty, kind, repeated, low, high, complex_type, f = step
            if repeated:
                if value is None:
                    value = ()
                elif value.__class__ is not tuple and not isinstance(value, (tuple, list)):
                    raise _RefusedError(
                        f"/{f.name}", f"must be a tuple, not {type(value).__name__}"
                    )
                n = len(value)
                if n < low:
                    raise _RefusedError(f"/{f.name}", f"holds {n} items, at least {low} required")
                if high is not None and n > high:
                    raise _RefusedError(f"/{f.name}", f"holds {n} items, at most {high} allowed")
                items: Any = value
            elif value is None:
                if low:
                    raise _RefusedError(f"/{f.name}", "is required")
                continue
            else:
                items = (value,)
            if kind == _TEXT:
                for item in items:
                    if type(item) is not str:
                        if not isinstance(item, str):
                            raise _not_a("a str", f, items, item)
                        item = str.__str__(item)
                    if not item:
                        ap(empty)
                        continue
                    if "&" in item or "<" in item or ">" in item:
                        item = item.translate(_ESCAPES)
                    ap(f"{open_}{item}{close}")
            elif kind == _COMPLEX:
                sub = writer(complex_type)  # type: ignore[arg-type]
                if sub._text_tags is not None and sub._write_texts(items, open_, close, ap):
                    continue
                for item in items:
                    ap(open_)
                    try:
                        sub.write(sub.values(item), buf, parts)
                    except _RefusedError as exc:
                        exc.path = _at(f, items, item) + exc.path
                        raise
                    ap(close)
            elif kind == _INT:
                low_value, high_value = RANGES[f.xsd_type]
                for item in items:
                    if type(item) is not int and (
                        isinstance(item, bool) or not isinstance(item, int)
                    ):
                        raise _not_a("an int", f, items, item)
                    number = int.__int__(item)  # its value, whatever a subclass says
                    if not low_value <= number <= high_value:
                        raise _RefusedError(
                            _at(f, items, item),
                            f"{number} is outside {low_value}..{high_value} (xs:{f.xsd_type})",
                        )
                    ap(f"{open_}{number}{close}")
            elif kind == _BOOL:
                for item in items:
                    if not isinstance(item, bool):
                        raise _not_a("a bool", f, items, item)
                    ap(f"{open_}{'true' if item else 'false'}{close}")
            else:  # _BINARY: flushed here, encoded now (small bytes) or while sending
                for item in items:
                    if isinstance(item, (bytes, bytearray)):
                        item = BytesSource(item)
                    elif not callable(getattr(item, "open", None)):
                        raise _not_a("bytes", f, items, item)
                    ap(open_)
                    parts.append("".join(buf).encode())
                    buf.clear()
                    if (
                        item.__class__ is BytesSource
                        and item.size <= INLINE_LIMIT
                        and sum(len(p) for p in parts if isinstance(p, bytes))
                        + base64_length(item.size)
                        <= STREAM_THRESHOLD
                    ):
                        # Encoded now while the body stays one sent whole anyway (a larger one
                        # streams, each part within the time-out): no document to open.
                        parts.append(binascii.b2a_base64(item.data, newline=False))
                    else:
                        parts.append(item)
                    ap(close)


#: Element names the made rows writer takes as they are (any XML name from a WSDL elsewhere).
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _texts_writer(
    tags: tuple[tuple[str, str, str], ...] | None, open_: str, close: str
) -> Callable[[list[tuple[str, ...]]], str | None]:
    """A function writing rows of string values (escaped, in field order) as elements
    ``open_ ... close`` with the children ``tags`` (open, close, empty): one f-string per
    row, made from the tags. It returns None, having written nothing, at the first value that
    is not exactly a str, and for any row when a name is not plain (see _PLAIN_NAME)."""
    plain = [tag[1:-1] for tag, _, _ in tags or ()] + [open_[1:-1], close[2:-1]]
    if tags is None or not all(_PLAIN_NAME.fullmatch(name) for name in plain):
        return lambda rows: None  # only plain element names go into made code
    names = [f"v{i}" for i in range(len(tags))]
    fields = "".join(
        f"{{f'{tag}{{{name}}}{end}' if {name} else '{empty}'}}"
        for (tag, end, empty), name in zip(tags, names, strict=True)
    )
    exact = " or ".join(f"type({name}) is not str" for name in names)
    source = (
        "def write(rows):\n"
        "    out = []\n"
        "    put = out.append\n"
        f"    for {', '.join(names)}, in rows:\n"
        f"        if {exact}:\n"
        "            return None\n"
        f'        put(f"{open_}{fields}{close}")\n'
        "    return ''.join(out)\n"
    )
    scope: dict[str, Any] = {}
    exec(source, scope)  # noqa: S102 (made above from plain XML names only)
    write: Callable[[list[tuple[str, ...]]], str | None] = scope["write"]
    return write


class _RefusedError(Exception):
    """A value the schema would refuse; the path grows as it passes up through the writers."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


def _at(f: XmlField, items: Any, item: object) -> str:
    """The path step of ``item`` (worked out only when something is refused)."""
    if not f.repeated:
        return f"/{f.name}"
    position = next(i for i, x in enumerate(items, 1) if x is item)
    return f"/{f.name}[{position}]"


def _not_a(what: str, f: XmlField, items: Any, item: object) -> _RefusedError:
    return _RefusedError(_at(f, items, item), f"must be {what}, not {type(item).__name__}")


_WRITERS: dict[type[Any], _Writer] = {}


def writer(cls: type[Any]) -> _Writer:
    """The compiled writer of a generated class (made once, then shared)."""
    found = _WRITERS.get(cls)
    if found is None:
        # Two threads may both compile it; both results are equal, one of them is kept.
        found = _WRITERS.setdefault(cls, _Writer(cls))
    return found


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
    Building it does no I/O; :meth:`open` measures the documents for one send."""

    __slots__ = ("_parts",)

    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    @property
    def whole(self) -> bytes | None:
        """The whole body when it has no document to open (small ones in memory are encoded
        already), else None."""
        if all(p.__class__ is bytes for p in self._parts):
            return b"".join(self._parts)  # type: ignore[arg-type]
        return None

    @property
    def in_memory(self) -> bool:
        """Whether every document is bytes in memory (reading the body touches no file)."""
        return all(isinstance(p, (bytes, BytesSource)) for p in self._parts)

    def streams(self) -> list[object]:
        """The file objects the body sends, once each, in the order their locks are taken."""
        return streams_of([p for p in self._parts if not isinstance(p, bytes)])

    def open(self, held: Sequence[tuple[object, threading.Lock]] | None = None) -> OpenBody:
        """The body of one send, documents measured now (Content-Length is what is sent); close
        it to release files and locks. ``held``: the file objects' locks, if taken already."""
        sources = [p for p in self._parts if not isinstance(p, bytes)]
        return OpenBody(self._parts, open_all(sources, held))

    def __iter__(self) -> Iterator[bytes]:
        with self.open() as body:
            yield from body


class OpenBody:
    """An iterable of exactly ``len()`` bytes, or an error before the last of them (sent with
    a Content-Length header, no chunked encoding). It can be iterated again, for a resend."""

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
        # Whatever a reader does, no more than the announced length is yielded, and the end
        # only after exactly that: a body not matching its Content-Length is never completed.
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


T = TypeVar("T")


def as_values(cls: type[T], values: tuple[Any, ...]) -> T:
    """``values`` (``cls``'s field values in schema order) where the bindings' types expect a
    ``cls``: the tuple form only the writer takes instead of an instance."""
    return cast(T, values)


def envelope(obj: Any) -> Body:
    """The whole request document for a generated request element ``obj``."""
    return envelope_of(type(obj), obj)


def envelope_of(cls: type[Any], obj: Any) -> Body:
    """The whole request document for the generated element class ``cls``, from an instance
    or the tuple of its field values."""
    xml: XmlType = cls.__xml__
    buf = [f'<{xml.name} xmlns="{namespace_of(cls)}">']
    parts: list[Part] = [PROLOG]
    refused: BadInputError | None = None
    try:
        top = writer(cls)
        values = top.values(obj)
        top.write(values, buf, parts)
        buf.append(f"</{xml.name}>")
        parts.append("".join(buf).encode() + EPILOG)
    except _RefusedError as exc:
        refused = BadInputError(f"/{xml.name}{exc.path}", exc.problem)
    except UnicodeEncodeError as exc:
        # A lone surrogate the checks on the way in should have refused; the error itself
        # holds the whole text written so far (secrets too), so it goes no further.
        char = describe_char(exc.object[exc.start])
        refused = BadInputError(f"/{xml.name}", f"contains {char}, which XML cannot carry")
    if refused is not None:
        raise refused  # outside the handler: nothing chained to it
    return Body(parts)


def payload_envelope(payload: etree._Element) -> bytes:
    """The whole request document for a payload element built elsewhere (zeep's, for any
    operation of a FaxWS WSDL), in the form :func:`envelope` writes: the payload's namespace
    as the default one, no prefixes, ``<X/>`` for empty elements inside the payload, the same
    escaping. Anything that form cannot carry (attributes such as ``xsi:nil``, elements of
    another namespace, mixed content) raises :class:`BadInputError` naming the element.
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
    """A SOAP 1.1 fault answer (``code`` such as ``soap:Client``) in the envelope form."""
    return (
        PROLOG
        + (
            f"<soap:Fault><faultcode>{code.translate(_ESCAPES)}</faultcode>"
            f"<faultstring>{text.translate(_ESCAPES)}</faultstring></soap:Fault>"
        ).encode()
        + EPILOG
    )


def document(obj: Any) -> bytes:
    """The bytes of the whole document for a generated element without documents (an answer)."""
    parts = envelope_of(type(obj), obj)._parts
    if len(parts) != 2 or not all(isinstance(p, bytes) for p in parts):
        raise ValueError(f"{type(obj).__name__} holds documents: write it with envelope()")
    return b"".join(parts)  # type: ignore[arg-type]
