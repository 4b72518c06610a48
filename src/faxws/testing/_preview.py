"""Previews of what a browser cannot show as it is: a TIFF's pages (fax documents, G3 and G4)
drawn as PNG by Pillow, the ``preview`` extra, when it is installed. Other documents need
none: a browser shows PDF, PNG, JPEG and GIF itself.

A page is drawn only while it is of a fax's size or so (:data:`MAX_PIXELS`), so a document
cannot make the simulator decode a huge image; a fax page's pixels are often twice as wide as
tall (204 by 98 dots per inch), and are drawn square. The newest pages drawn are kept, within
:data:`CACHE_BYTES`.
"""

from __future__ import annotations

import io
import math
import threading
import warnings
from collections import OrderedDict
from types import ModuleType
from typing import TYPE_CHECKING

from faxws.testing._pages import MAX_PAGES
from faxws.testing._records import ReceivedFile
from faxws.testing._views import file_kind

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "CACHE_BYTES",
    "INSTALL",
    "MAX_PAGES",
    "MAX_PIXELS",
    "PreviewError",
    "available",
    "png",
]

#: The most pixels of a page drawn (a fax page, 1728 by 2200 dots, has about 4 million).
MAX_PIXELS = 40_000_000
#: Bytes of drawn pages kept for the next look.
CACHE_BYTES = 32 * 1024 * 1024
#: What to install for TIFF previews.
INSTALL = "pip install 'faxws[preview]'"
_DRAWN_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA"})  # written to PNG as they are


class PreviewError(Exception):
    """No preview: ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_cache: OrderedDict[tuple[str, int], bytes] = OrderedDict()
_cache_bytes = 0
_cache_lock = threading.Lock()
_draw_lock = threading.Lock()


def _pillow() -> ModuleType | None:
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


def available() -> bool:
    """Whether TIFF previews can be drawn (Pillow is installed)."""
    return _pillow() is not None


def png(received: ReceivedFile, page: int) -> bytes:
    """Page ``page`` (from 1) of the TIFF ``received`` as PNG. Raises :class:`PreviewError`:
    404 for a document that is no TIFF, is gone or has no such page, 501 without Pillow,
    413 for a page too large to draw, 422 for a TIFF Pillow cannot read."""
    try:
        kind = file_kind(received)
    except FileNotFoundError:
        raise PreviewError(404, "the document is gone") from None
    if kind.media != "image/tiff":
        raise PreviewError(404, "only a TIFF has a preview (a browser shows the others)")
    image_module = _pillow()
    if image_module is None:
        raise PreviewError(501, f"TIFF previews need Pillow: {INSTALL}")
    key = (received.sha256, page)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    drawn = _draw(image_module, received, page)
    _keep(key, drawn)
    return drawn


def _draw(image_module: ModuleType, received: ReceivedFile, page: int) -> bytes:
    # Pillow warns of what it reads in a damaged TIFF (and of large images, which the size
    # check below refuses): not the simulator's news. The filters are the process's own, so
    # one page is drawn at a time.
    try:
        with _draw_lock, received.open() as stream, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with image_module.open(stream, formats=["TIFF"]) as image:
                try:
                    image.seek(page - 1)
                except EOFError:
                    raise PreviewError(404, f"the TIFF has no page {page}") from None
                width, height = image.size
                if width * height > MAX_PIXELS:
                    raise PreviewError(
                        413, f"page {page} is too large to draw ({width} x {height} pixels)"
                    )
                frame = _square(image_module, image)
                out = io.BytesIO()
                frame.save(out, "PNG")
                return out.getvalue()
    except PreviewError:
        raise
    except FileNotFoundError:
        raise PreviewError(404, "the document is gone") from None
    except image_module.UnidentifiedImageError:
        # Its own message names the file object: the spool's path, for a large document.
        raise PreviewError(422, "Pillow cannot read the TIFF: not an image it knows") from None
    except (image_module.DecompressionBombError, OSError, ValueError, SyntaxError, EOFError) as exc:
        raise PreviewError(422, f"Pillow cannot read the TIFF: {exc}") from None
    except Exception as exc:
        # A damaged TIFF makes Pillow fail in any way: TypeError, KeyError, IndexError,
        # struct.error, MemoryError, ...
        raise PreviewError(
            422, f"Pillow cannot read the TIFF: {type(exc).__name__}: {exc}"
        ) from None


def _square(image_module: ModuleType, image: Image.Image) -> Image.Image:
    """The page with square pixels, in a mode PNG takes."""
    frame = image if image.mode in _DRAWN_MODES else image.convert("RGB")
    dpi = image.info.get("dpi")
    if isinstance(dpi, tuple) and len(dpi) == 2 and all(0 < float(d) < math.inf for d in dpi):
        ratio = float(dpi[0]) / float(dpi[1])
        width, height = frame.size
        tall = height * ratio  # a resolution read as a float may be anything but finite
        if abs(ratio - 1) > 0.1 and 0 < width * tall <= MAX_PIXELS and round(tall) > 0:
            grey = frame.convert("L") if frame.mode == "1" else frame
            frame = grey.resize((width, round(tall)), image_module.Resampling.BILINEAR)
    return frame


def _keep(key: tuple[str, int], drawn: bytes) -> None:
    global _cache_bytes
    if len(drawn) > CACHE_BYTES:
        return
    with _cache_lock:
        if key in _cache:
            return
        _cache[key] = drawn
        _cache_bytes += len(drawn)
        while _cache_bytes > CACHE_BYTES:
            _, dropped = _cache.popitem(last=False)
            _cache_bytes -= len(dropped)
