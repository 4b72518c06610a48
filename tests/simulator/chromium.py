"""Headless Chromium for the browser tests, driven by playwright (never its own browser
download): each such module's ``browser`` fixture yields from :func:`launched`. CI installs
Chromium and sets FAXWS_REQUIRE_BROWSER: there a missing browser fails the tests that use it;
elsewhere they are skipped."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for found in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if found and os.path.exists(found):
            return found
    return None


def _unavailable(why: str) -> None:
    if os.environ.get("FAXWS_REQUIRE_BROWSER"):
        pytest.fail(f"{why}, and FAXWS_REQUIRE_BROWSER is set")
    pytest.skip(f"{why} (CI installs it)")


def launched() -> Iterator[Browser]:
    """A browser, closed when the generator is."""
    path = _chromium()
    if path is None:
        _unavailable("Chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the test extra has it
        _unavailable("playwright is not installed")
    assert path is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=ARGS)
        yield launched
        launched.close()
