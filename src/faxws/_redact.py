"""Removing secrets from text, in every form a peer or a formatter may have given them.

A server that echoes a PIN back may XML-escape it; a token endpoint may URL-encode a client
secret; ``repr`` and JSON escape quotes and backslashes. Masking only the raw string would let
those forms through, so every place that shows text it did not write (error messages, logs,
the CLI, the simulator's records) masks the whole family of forms computed here.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "redact", "secret_forms"]

MASK = "***"

_NAMED = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
_BACKSLASHED = {"\\": "\\\\", '"': '\\"', "'": "\\'", "/": "\\/"}


def _hex(n: int, width: int) -> str:
    """``n`` in ``width`` or more hex digits, either case."""
    digits = f"{n:0{width}x}"
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits)


def _char(c: str) -> str:
    """A pattern for one character of a secret in any of the forms it may be echoed in: as
    it is, as an XML character or entity reference, percent-encoded (``+`` for a space), or
    backslash-escaped as JSON and Python write it."""
    n = ord(c)
    options = [re.escape(c), f"&#0*{n};", f"&#[xX]0*{_hex(n, 1)};"]
    if c in _NAMED:
        options.append(f"&{_NAMED[c]};")
    options.append("".join(f"%{_hex(b, 2)}" for b in c.encode("utf-8", "surrogatepass")))
    if c == " ":
        options.append(re.escape("+"))
    if c in _BACKSLASHED:
        options.append(re.escape(_BACKSLASHED[c]))
    if n <= 0xFF:
        options.append(re.escape("\\x") + _hex(n, 2))
    if n <= 0xFFFF:
        options.append(re.escape("\\u") + _hex(n, 4))
    else:
        high, low = 0xD800 + ((n - 0x10000) >> 10), 0xDC00 + ((n - 0x10000) & 0x3FF)
        options.append(re.escape("\\U") + _hex(n, 8))
        options.append(re.escape("\\u") + _hex(high, 4) + re.escape("\\u") + _hex(low, 4))
    return "(?:" + "|".join(options) + ")"


@functools.lru_cache(maxsize=64)
def _pattern(secret: str) -> re.Pattern[str]:
    return re.compile("".join(_char(c) for c in secret))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of every secret replaced by ``***``, whatever mix of
    raw, XML-escaped, percent-encoded and backslash-escaped characters spells it."""
    for secret in secrets:
        if secret:
            text = _pattern(secret).sub(MASK, text)
    return text


def secret_forms(secret: str) -> frozenset[str]:
    """Common spellings of ``secret`` (for tests and for callers that search, not mask)."""
    if not secret:
        return frozenset()
    forms = {
        secret,
        "".join(f"&{_NAMED[c]};" if c in _NAMED else c for c in secret),
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
    }
    return frozenset(forms)
