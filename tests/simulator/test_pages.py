"""How the simulator counts a document's pages: PDF page objects, TIFF directories, else 1,
at a bounded cost."""

from __future__ import annotations

import io
import struct

import pytest

from faxws.testing import _pages
from faxws.testing._pages import MAX_PAGES, count_pages


def count(data: bytes) -> int:
    return count_pages(io.BytesIO(data))


def tiff(directories: int, order: str = "<", *, loop: bool = False) -> bytes:
    """A TIFF whose directories (one entry each) follow the header one after another."""
    magic = b"II*\0" if order == "<" else b"MM\0*"
    out = magic + struct.pack(order + "I", 8)
    for n in range(directories):
        following = 8 + (n + 1) * 18 if n + 1 < directories else (8 if loop else 0)
        out += struct.pack(order + "H", 1) + bytes(12) + struct.pack(order + "I", following)
    return out


@pytest.mark.parametrize(
    ("data", "pages"),
    [
        (b"%PDF-1.4 /Type /Page /Type/Page /Type\n/Page>>", 3),
        (b"%PDF-1.7 /Type /Pages /Count 9 /Type /PageLabel", 1),  # no page object: 1
        (b"%PDF-1.4 /Type /Page", 1),  # at the very end
        (tiff(1), 1),
        (tiff(4), 4),
        (tiff(3, ">"), 3),
        (tiff(3, loop=True), 3),  # a chain that loops back ends there
        (b"II*\0" + struct.pack("<I", 10**6), 1),  # a directory beyond the end
        (b"II*\0", 1),  # a header cut short
        (b"\x89PNG\r\n\x1a\n", 1),
        (b"", 1),
    ],
    ids=[
        "pdf",
        "pdf-without-page-objects",
        "pdf-ending-on-a-page",
        "tiff-1",
        "tiff-4",
        "tiff-big-endian",
        "tiff-looping",
        "tiff-beyond-the-end",
        "tiff-cut-short",
        "png",
        "empty",
    ],
)
def test_pages_of_a_document(data: bytes, pages: int) -> None:
    assert count(data) == pages


@pytest.mark.parametrize("shift", range(-20, 4))
def test_a_page_object_across_a_chunk_boundary_is_counted_once(
    monkeypatch: pytest.MonkeyPatch, shift: int
) -> None:
    monkeypatch.setattr(_pages, "_CHUNK", 64)
    head = b"%PDF-1.4" + b" " * (64 + 64 + shift)
    assert count(head + b"/Type /Page >>" + b" " * 100) == 1
    assert count(head + b"/Type /Pages >>" + b" " * 100) == 1  # none: at least 1
    assert count(head + b"/Type /Page" + b"/Type /Page " * 20) == 21


def test_the_cost_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pages, "SCAN_LIMIT", 1024)
    monkeypatch.setattr(_pages, "_CHUNK", 256)
    assert count(b"%PDF-1.4" + b" " * 2048 + b"/Type /Page ") == 1  # not searched
    monkeypatch.setattr(_pages, "SCAN_LIMIT", 1 << 30)
    assert count(b"%PDF-1.4" + b"/Type /Page " * 20_000) == MAX_PAGES
    assert count(tiff(MAX_PAGES + 5)) == MAX_PAGES
