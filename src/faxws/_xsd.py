"""Runtime description of XML Schema types, as used by the generated :mod:`faxws.bindings`.

The generated classes carry an :class:`XmlType` each; the wire writer, the response reader and
the input checks walk that description instead of keeping their own lists of element names,
types and orders.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

NAMESPACE = "urn:FaxWS"

#: xs:int bounds (the schema's FileIndex, FileTypeId, RecipientType, ErrorCode).
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
#: xs:long bounds (TTFP).
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@runtime_checkable
class BinaryContent(Protocol):
    """Binary data that can be read in chunks more than once, with a known size.

    The wire writer base64-encodes such content while sending, so a large document is never
    held in memory whole.
    """

    @property
    def size(self) -> int:
        """Number of bytes :meth:`iter_bytes` yields."""
        ...

    def iter_bytes(self, chunk_size: int) -> Iterator[bytes]:
        """Yield the content in chunks of ``chunk_size`` bytes (the last may be shorter)."""
        ...


class BytesContent:
    """:class:`BinaryContent` over bytes already in memory (no copy)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._data = memoryview(bytes(data) if isinstance(data, bytearray) else data).cast("B")

    @property
    def size(self) -> int:
        return self._data.nbytes

    def iter_bytes(self, chunk_size: int) -> Iterator[bytes]:
        data = self._data
        for start in range(0, data.nbytes, chunk_size):
            yield bytes(data[start : start + chunk_size])


@dataclass(frozen=True, slots=True)
class XmlField:
    """One child element of a complex type, in schema order."""

    attr: str
    """Python attribute name on the generated class."""
    name: str
    """Local element name (namespace :data:`NAMESPACE`)."""
    xsd_type: str
    """Built-in XML Schema type ("string", "int", ...), or "" for a complex type."""
    complex_type: type[Any] | None
    """The generated class of a complex child, else None."""
    min_occurs: int
    max_occurs: int | None
    """None for unbounded; a field with max_occurs other than 1 holds a tuple."""

    @property
    def repeated(self) -> bool:
        return self.max_occurs != 1


@dataclass(frozen=True, slots=True)
class XmlType:
    """A complex type or top-level element: its name and its children in order."""

    name: str
    fields: tuple[XmlField, ...]
    documentation: str = ""


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the binding."""

    name: str
    soap_action: str
    input: type[Any]
    output: type[Any]
    documentation: str = ""
