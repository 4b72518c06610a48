"""Removing secrets from text, in every form a peer or a formatter may have given them.

A server that echoes a PIN back may XML-escape it; a token endpoint may URL-encode a client
secret; ``repr`` and JSON escape quotes and backslashes. Masking only the raw string would let
those forms through, so every place that shows text it did not write (error messages, logs,
the CLI, the simulator's records) masks the whole family of forms computed here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "redact", "secret_forms"]

MASK = "***"

_XML_REFS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}


def _xml_forms(secret: str) -> set[str]:
    named = "".join(_XML_REFS.get(c, c) for c in secret)
    decimal = "".join(f"&#{ord(c)};" if c in _XML_REFS else c for c in secret)
    hexa = "".join(f"&#x{ord(c):x};" if c in _XML_REFS else c for c in secret)
    hexa_upper = "".join(f"&#x{ord(c):X};" if c in _XML_REFS else c for c in secret)
    minimal = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return {named, decimal, hexa, hexa_upper, minimal}


def secret_forms(secret: str) -> frozenset[str]:
    """``secret`` as written raw, XML-escaped, percent-encoded, JSON- and repr-escaped."""
    if not secret:
        return frozenset()
    forms = {secret, *_xml_forms(secret)}
    for encoded in (quote(secret, safe=""), quote_plus(secret, safe="")):
        forms.add(encoded)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded))
    forms.add(json.dumps(secret)[1:-1])
    forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
    forms.add(repr(secret)[1:-1])
    forms.add(ascii(secret)[1:-1])
    return frozenset(f for f in forms if f)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every secret replaced by ``***`` (longest forms first, so
    that an escaped form is not half-masked by a shorter raw one)."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= secret_forms(secret)
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            text = text.replace(form, MASK)
    return text
