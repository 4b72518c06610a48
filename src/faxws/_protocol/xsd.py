"""Runtime description of XML Schema types: each generated class in :mod:`faxws.bindings`
carries an :class:`XmlType`, which the writer, the reader and the checks walk instead of keeping
their own lists of element names, types and orders."""

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
#: The bounds of each integer type, as the writer and the reader check them.
RANGES = {"int": (INT_MIN, INT_MAX), "long": (LONG_MIN, LONG_MAX)}


#: base64Binary content that is read while sending (see :mod:`faxws._protocol.content`).
BinaryContent = Source


@dataclass(frozen=True, slots=True)
class XmlField:
    """One child element of a complex type, in schema order: its attribute on the generated
    class, its local name, its built-in XML Schema type ("string", "int", ..., or "" for a
    complex one) or generated class, and its occurrences (``max_occurs`` None for unbounded;
    other than 1, the field holds a tuple)."""

    attr: str
    name: str
    xsd_type: str
    complex_type: type[Any] | None
    min_occurs: int
    max_occurs: int | None

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
