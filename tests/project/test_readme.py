"""The README is the front door: what faxws is, how to install it, a first fax and the command
line against the simulator, and where everything else is. It is also the wheel's long
description, so it must read well on a package index. (Its examples run with every other
example, in test_examples.py.)"""

from __future__ import annotations

import re

from doc_examples import ROOT, read_page

README = (ROOT / "README.md").read_text(encoding="utf-8")
SITE = "https://faxws.github.io/faxws/"
REPOSITORY = "https://github.com/faxws/faxws"


def _section(title: str) -> str:
    """The README's text from the heading ``## title`` to the next heading of that level."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _extras() -> set[str]:
    """The extras pyproject.toml declares (read without tomllib, which Python 3.10 lacks)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([a-z][\w-]*) = \[", section, flags=re.M))


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_readme_fits_on_a_few_screens() -> None:
    assert len(README.splitlines()) <= 120


def test_it_opens_with_what_faxws_is_and_for_whom() -> None:
    opening = README.split("\n## ", 1)[0]
    for words in ("FaxWS v5", "medical", "pharmacies", "law", "financial", "simulator"):
        assert words in opening, words


def test_the_install_lines_name_every_extra_a_user_may_need() -> None:
    (lines,) = _blocks(_section("Install"), "console")[:1]
    assert lines.strip() == "$ pip install faxws"
    extras_lines = "".join(_blocks(_section("Install"), "console")[1:])
    extras = _extras()
    assert {"async", "otel", "postgres", "progress", "preview", "docs", "test"} <= extras
    for extra in extras - {"docs", "test", "dev"}:
        assert f"$ pip install 'faxws[{extra}]'" in extras_lines, extra


def test_a_first_fax_in_under_ten_lines() -> None:
    section = _section("A first fax, to the simulator")
    (serve,) = _blocks(section, "console")
    assert serve.startswith("$ faxws serve --port 8080\n")
    (python,) = _blocks(section, "python")
    assert len([line for line in python.splitlines() if line.strip()]) < 10
    assert "http://127.0.0.1:8080/" in section.split("```python", 1)[1]  # the inbox


def test_the_command_line_in_five_lines() -> None:
    """Start the simulator, send, see the inbox, ask the status: the serve line shown above,
    three lines of shell, and the inbox's address."""
    (shell,) = _blocks(_section("The command line"), "sh")
    commands = [line for line in shell.splitlines() if line.strip()]
    assert len(commands) == 3
    assert commands[1].startswith("faxws send ")
    assert commands[2].startswith("faxws status ")
    assert "http://127.0.0.1:8080/" in _section("The command line")


def test_the_examples_say_what_they_need() -> None:
    runnable = [block for block in read_page(ROOT / "README.md").blocks if block.runs]
    assert len(runnable) == 2
    assert all(block.needs_server and block.files == ("contract.pdf",) for block in runnable)


def test_links_are_absolute_and_every_guide_page_is_linked() -> None:
    """On a package index a relative link leads nowhere: every link is absolute, to the
    documentation site (each to a page that docs/ has) or to the repository."""
    links = re.findall(r"\]\(([^)]+)\)", README) + re.findall(r"<(https?://[^>]+)>", README)
    assert links
    site_pages = set()
    for link in links:
        assert link.startswith((SITE, REPOSITORY, "http://127.0.0.1:8080/")), link
        if link.startswith(SITE):
            page = link.removeprefix(SITE).strip("/")
            assert (
                page == ""
                or (ROOT / "docs" / f"{page}.md").is_file()
                or (ROOT / "docs" / page / "index.md").is_file()
            ), link
            site_pages.add(page)
    guide = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    assert guide <= site_pages, guide - site_pages
    assert "reference" in site_pages


def test_it_names_no_file_the_wheel_does_not_ship() -> None:
    for path in ("tests/", "examples/", "scripts/", "benchmarks/", "Makefile"):
        assert path not in README, path
    # `make` runs only in a clone: the one paragraph that names it says so
    naming = [p for p in README.split("\n\n") if "make " in p]
    assert len(naming) == 1, naming
    assert "In a clone of the repository" in naming[0], naming[0]
    assert "`make test`" in naming[0]


def test_it_says_near_the_top_how_to_run_the_tests_of_a_clone() -> None:
    assert "`make test`" in README[: README.index("## Install")]


def test_the_docs_site_has_every_page_in_its_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        name = page.relative_to(ROOT / "docs").as_posix()
        assert f": {name}\n" in nav, name
