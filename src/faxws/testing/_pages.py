"""How many pages the simulator sends for a document, found from its bytes at a bounded cost.

- PDF (``%PDF-``): the page objects (``/Type /Page``) in the first :data:`SCAN_LIMIT` bytes,
  read a chunk at a time. Pages inside compressed object streams are not seen: such a PDF,
  like one with no page object found, counts as 1.
- TIFF (``II*\\0`` or ``MM\\0*``): the image directories, followed from the header through
  their chain (at most :data:`MAX_PAGES`; a chain that loops or leaves the file ends there).
- Anything else: 1.
"""

from __future__ import annotations

import re
import struct
from typing import BinaryIO

__all__ = ["MAX_PAGES", "SCAN_LIMIT", "count_pages"]

#: Most pages counted for one document.
MAX_PAGES = 10_000
#: Most bytes of a PDF searched for page objects.
SCAN_LIMIT = 64 * 1024 * 1024

_CHUNK = 1024 * 1024
# "/Pages" (the tree's inner nodes) is no page; the whitespace is bounded so that a match
# always fits in the bytes kept from the previous chunk.
_PAGE = re.compile(rb"/Type\s{0,8}/Page(?![A-Za-z0-9#])")
_KEEP = 64


def count_pages(stream: BinaryIO) -> int:
    """The pages of the document ``stream`` reads, from its start (at least 1)."""
    head = stream.read(8)
    if head.startswith(b"%PDF-"):
        found = _pdf_pages(stream, head)
    elif head[:4] in (b"II*\0", b"MM\0*") and len(head) == 8:
        found = _tiff_pages(stream, "<" if head[:2] == b"II" else ">", head)
    else:
        found = 0
    return min(max(found, 1), MAX_PAGES)


def _pdf_pages(stream: BinaryIO, head: bytes) -> int:
    """Page objects, each counted once: in the buffer where it first ends before the last
    byte (the byte after it tells that it is no ``/Pages``), or at the very end."""
    count, tail = 0, b""
    chunk = head + stream.read(_CHUNK)
    scanned = len(chunk)
    while chunk and count < MAX_PAGES:
        following = stream.read(_CHUNK) if scanned < SCAN_LIMIT else b""
        scanned += len(following)
        buffer = tail + chunk
        last = len(buffer) - 1 if following else len(buffer)
        count += sum(1 for m in _PAGE.finditer(buffer) if len(tail) <= m.end() <= last)
        tail, chunk = buffer[-_KEEP:], following
    return count


def _tiff_pages(stream: BinaryIO, order: str, head: bytes) -> int:
    (offset,) = struct.unpack(order + "I", head[4:8])
    seen: set[int] = set()
    while offset and offset not in seen and len(seen) < MAX_PAGES:
        seen.add(offset)
        stream.seek(offset)
        entries = stream.read(2)
        if len(entries) < 2:
            break
        (count,) = struct.unpack(order + "H", entries)
        stream.seek(offset + 2 + 12 * count)
        following = stream.read(4)
        if len(following) < 4:
            return len(seen)  # the directory is whole up to its link: a page
        (offset,) = struct.unpack(order + "I", following)
    return len(seen)
