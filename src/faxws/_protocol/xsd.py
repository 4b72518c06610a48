"""Runtime description of XML Schema types, as used by the generated :mod:`faxws.bindings`.

The generated classes carry an :class:`XmlType` each; the wire writer, the response reader and
the input checks walk that description instead of keeping their own lists of element names,
types and orders.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from faxws._protocol.content import Source

NAMESPACE = "urn:FaxWS"

#: xs:int bounds (the schema's FileIndex, FileTypeId, RecipientType, ErrorCode).
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
#: xs:long bounds (TTFP).
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


#: base64Binary content that is read while sending (see :mod:`faxws._protocol.content`).
BinaryContent = Source


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


Request = TypeVar("Request")
Response = TypeVar("Response")


@dataclass(frozen=True, slots=True)
class Operation(Generic[Request, Response]):
    """One operation of the binding: a call with ``input`` answers ``output``."""

    name: str
    soap_action: str
    input: type[Request]
    output: type[Response]
    documentation: str = ""


def namespace_of(cls: type[Any]) -> str:
    """The target namespace of a generated class: its bindings module's ``NAMESPACE``, so that
    bindings generated from another WSDL write and read their own namespace."""
    namespace = getattr(sys.modules.get(cls.__module__), "NAMESPACE", NAMESPACE)
    return namespace if isinstance(namespace, str) else NAMESPACE
