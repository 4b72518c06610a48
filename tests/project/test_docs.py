"""The documentation site builds with --strict, loads nothing from elsewhere (it works
offline), can be searched, and has the API reference from the docstrings (the test extra
installs the docs extra: nothing here is skipped)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from doc_examples import ROOT

#: The attributes by which a page loads something (a link to follow is not loading).
LOADING = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "audio": ("src",),
    "video": ("src", "poster"),
    "object": ("data",),
    "embed": ("src",),
}
#: The kinds of <link> by which a page loads something (not rel=canonical, prev, next, ...).
LOADING_LINKS = {"stylesheet", "icon", "preload", "modulepreload", "manifest", "prefetch"}
LOADING_LINKS |= {"apple-touch-icon", "dns-prefetch", "preconnect", "shortcut"}
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )
    assert done.returncode == 0, done.stderr
    return out


class _Loads(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = LOADING.get(tag, ())
        for name, value in attrs:
            if name in names and value:
                self.loads.extend(part.split()[0] for part in value.split(",") if part.strip())
        found = dict(attrs)
        if tag == "link" and set((found.get("rel") or "").lower().split()) & LOADING_LINKS:
            self.loads.append(found.get("href") or "")


def test_every_page_loads_only_what_the_site_holds(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    for page in pages:
        parser = _Loads()
        parser.feed(page.read_text(encoding="utf-8"))
        outside = [url for url in parser.loads if EXTERNAL.match(url)]
        assert outside == [], (page.relative_to(site), outside)
    for sheet in site.rglob("*.css"):
        urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", sheet.read_text(encoding="utf-8"))
        assert [u for u in urls if EXTERNAL.match(u)] == [], sheet.relative_to(site)
    everything = "".join(p.read_text(encoding="utf-8", errors="replace") for p in pages)
    assert "fonts.googleapis.com" not in everything
    assert "fonts.gstatic.com" not in everything


def test_the_site_can_be_searched(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    for page in ("getting-started/", "cli/", "simulator/", "reference/client/"):
        assert page in locations, page


def test_the_api_reference_is_built_from_the_docstrings(site: Path) -> None:
    client = (site / "reference" / "client" / "index.html").read_text(encoding="utf-8")
    assert 'id="faxws.client.FaxClient.send_fax"' in client
    assert "safe to share between threads" in client
    assert ":class:" not in client  # roles read as code, not markup
    simulator = (site / "reference" / "testing" / "index.html").read_text(encoding="utf-8")
    # "host, port:" documents both parameters
    assert re.search(r"<code>host</code>.*?where to listen", simulator, flags=re.S)
    assert re.search(r"<code>port</code>.*?where to listen", simulator, flags=re.S)
    for module in (
        "index",
        "client",
        "models",
        "errors",
        "auth",
        "oauth",
        "jobs",
        "status",
        "notifications",
        "transport",
        "validation",
        "zeep",
        "testing",
        "journal",
    ):
        page = site / "reference" / ("" if module == "index" else module) / "index.html"
        assert 'class="doc doc-object doc-module"' in page.read_text(encoding="utf-8"), module
