"""Validation of SOAP payloads against the FaxWS schema."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ValidationIssue"]


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One problem found in a document."""

    line: int
    """Line number in the document (1-based), or 0 when unknown."""
    path: str
    """Element path such as ``/SendFax/Recipients/item[2]/RecipFaxNumber``."""
    message: str

    def __str__(self) -> str:
        return f"{self.line}: {self.path}: {self.message}"
