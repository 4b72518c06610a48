"""Removing secrets from text, in every form a peer or a formatter may have given them.

A server may echo a PIN XML-escaped, a token endpoint a client secret URL-encoded; ``repr``
and JSON escape quotes, backslashes and tabs. So every place that shows text it did not write
(error messages, logs, the CLI, the simulator's records) masks through :func:`redact`.

The text is decoded into canonical forms (XML references, percent-encoded UTF-8 or Latin-1,
JSON and Python backslash escapes each become the character they spell) that remember where
each character came from; each secret (as given, NFC and NFD) is found there and its original
span masked: mixed spellings too, in time linear in the text whatever the secret's length.

Base64 (HTTP Basic credentials, a token echoed encoded) is searched for too. A secret inside a
longer text starts at one of three offsets in a 3-byte group, so its base64 has three possible
shapes; in each, the characters made only of the secret's own bits are the same whatever comes
before or after it. That run (standard and URL-safe alphabet) is masked wherever it appears,
when it is at least :data:`MIN_BASE64_RUN` characters long: shorter runs would mask chance
matches. So a secret of 7 bytes or more (UTF-8) is masked in base64 at every offset.
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from collections.abc import Collection, Iterable
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "MIN_BASE64_RUN", "mask_forms", "masked_forms", "redact", "secret_forms"]

MASK = "***"
#: The shortest run of base64 characters masked as a secret's base64 spelling.
MIN_BASE64_RUN = 8
_URL_SAFE = str.maketrans("+/", "-_")

_XML = r"&#[0-9]{1,8};|&#[xX][0-9a-fA-F]{1,8};|&(?:amp|lt|gt|quot|apos);"
_PERCENT = r"(?:%[0-9a-fA-F]{2})+"
_BACKSLASH = (
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\x[0-9a-fA-F]{2}|\\[\\\"'/tnrbf]"
)
# One view per escaping family, and one with all of them: a secret that itself contains
# something like "%2B" or "&amp;" is found when only the family that escaped it is decoded.
_VIEWS = [re.compile(p) for p in (f"{_XML}|{_PERCENT}|{_BACKSLASH}", _XML, _PERCENT, _BACKSLASH)]
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_BACKSLASHED = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f"}


def _spelled(token: str) -> str:
    """The characters an escape sequence stands for."""
    if token.startswith("&#"):
        number = token[3:-1] if token[2] in "xX" else token[2:-1]
        code = int(number, 16 if token[2] in "xX" else 10)
        return chr(code) if code <= 0x10FFFF else token
    if token.startswith("&"):
        return _NAMED[token[1:-1]]
    if token.startswith("%"):
        raw = bytes(int(token[i + 1 : i + 3], 16) for i in range(0, len(token), 3))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    if token[1] in "uU":
        if len(token) == 12:  # a surrogate pair, as JSON writes characters beyond the BMP
            high, low = int(token[2:6], 16), int(token[8:12], 16)
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        code = int(token[2:], 16)
        return chr(code) if code <= 0x10FFFF else token
    if token[1] == "x":
        return chr(int(token[2:], 16))
    return _BACKSLASHED.get(token[1], token[1])


def _canonical(text: str, escape: re.Pattern[str]) -> tuple[str, list[int], list[int]]:
    """``text`` with the escapes ``escape`` matches decoded, and for each character the span
    of ``text`` it came from (the whole escape, for each character an escape spells)."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in escape.finditer(text):
        spelled = _spelled(m.group())
        out += [text[pos : m.start()], spelled]
        starts += [*range(pos, m.start()), *[m.start()] * len(spelled)]
        ends += [*range(pos + 1, m.start() + 1), *[m.end()] * len(spelled)]
        pos = m.end()
    out.append(text[pos:])
    starts += range(pos, len(text))
    ends += range(pos + 1, len(text) + 1)
    return "".join(out), starts, ends


def _variants(secret: str) -> set[str]:
    """The secret as given, NFC and NFD, and each one's UTF-8 read as Latin-1 (how an HTTP
    stack reads a status line or a header that quotes it)."""
    forms = {secret, unicodedata.normalize("NFC", secret), unicodedata.normalize("NFD", secret)}
    return forms | {f.encode("utf-8", "surrogatepass").decode("latin-1") for f in forms}


def _base64_runs(data: bytes) -> set[str]:
    """The base64 characters every encoding of a text holding ``data`` contains, for each of
    the three offsets ``data`` may start at in a 3-byte group, in both alphabets."""
    runs = set()
    for offset in range(3):
        # Characters before ``first`` hold bits of what precedes; from ``last`` on, of what
        # follows (or padding).
        encoded = base64.b64encode(bytes(offset) + data).decode("ascii")
        first, last = -(-8 * offset // 6), 8 * (offset + len(data)) // 6
        run = encoded[first:last]
        if len(run) >= MIN_BASE64_RUN:
            runs |= {run, run.translate(_URL_SAFE)}
    return runs


def masked_forms(secret: str) -> frozenset[str]:
    """What :func:`mask_forms` looks for to mask ``secret``: its Unicode and Latin-1 readings
    (each found in every escaped spelling) and its base64 runs. Worth keeping for a secret
    that masks many texts."""
    if not secret:
        return frozenset()
    forms = {unicodedata.normalize("NFC", secret), unicodedata.normalize("NFD", secret), secret}
    runs = {r for f in forms for r in _base64_runs(f.encode("utf-8", "surrogatepass"))}
    return frozenset(_variants(secret) | runs)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of every secret replaced by ``***``, however each of its
    characters is spelled (raw, XML reference, percent-encoded, ``+`` for a space,
    backslash-escaped, NFC or NFD, UTF-8 read as Latin-1, base64 in either alphabet)."""
    if not text:
        return text
    return mask_forms(text, {f for s in secrets for f in masked_forms(s)})


def mask_forms(text: str, wanted: Collection[str]) -> str:
    """:func:`redact` for secrets given by their :func:`masked_forms`."""
    if not wanted or not text:
        return text
    if not any(c in text for c in "&%\\+") and not any(v in text for v in wanted):
        return text  # nothing escaped and no plain spelling: the common case, kept fast
    spans: list[tuple[int, int]] = []
    views = [(text, list(range(len(text))), list(range(1, len(text) + 1)))]
    views += [_canonical(text, escape) for escape in _VIEWS]
    for canonical, starts, ends in views:
        # A '+' written as such is a space in form encoding and itself everywhere else:
        # search both readings (a '+' spelled %2B is always a plus).
        as_spaces = "".join(
            " " if c == "+" and ends[i] - starts[i] == 1 else c for i, c in enumerate(canonical)
        )
        for view in {canonical, as_spaces}:
            for secret in wanted:
                at = view.find(secret)
                while at >= 0:
                    spans.append((starts[at], ends[at + len(secret) - 1]))
                    at = view.find(secret, at + 1)
    pieces: list[str] = []
    pos = 0  # where the text not masked yet starts
    for start, end in sorted(spans):
        if start > pos or not pieces:  # overlapping and adjacent spans are masked as one
            pieces += [text[pos:start], MASK]
        pos = max(pos, end)
    pieces.append(text[pos:])
    return "".join(pieces)


def secret_forms(secret: str) -> frozenset[str]:
    """Common spellings of ``secret`` (for tests and for callers that search, not mask)."""
    if not secret:
        return frozenset()
    named = {v: k for k, v in _NAMED.items()}
    forms = {
        secret,
        "".join(f"&{named[c]};" if c in named else c for c in secret),
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
    }
    return frozenset(forms)
