"""A griffe extension for the API reference: docstrings written for Sphinx-style readers read
well in the Markdown site.

- An ``Args:`` entry naming several parameters that share one description
  (``host, port: where to listen``) becomes one entry per parameter: Google-style parsing
  would take it for one parameter called ``host, port``, which is not in the signature.
- A role (``:class:`~faxws.FaxClient```, ``:meth:`close```) becomes the code span it shows
  (`FaxClient`, `close`), instead of its markup.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

SECTION = re.compile(r"^(?P<indent>\s*)(Args|Arguments|Parameters):\s*$")
SHARED = re.compile(r"^(?P<indent>\s+)(?P<names>\w+(?:, \w+)+): (?P<text>.*)$")
ROLE = re.compile(
    r":(?:class|meth|func|attr|data|exc|mod|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def split_shared(docstring: str) -> str:
    """Each ``a, b: text`` entry of an arguments section as ``a: text`` and ``b: text``."""
    lines = docstring.splitlines()
    out: list[str] = []
    section: int | None = None  # the arguments section's indentation, while in one
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = SECTION.match(line)
        if heading:
            section = len(heading["indent"])
            out.append(line)
            i += 1
            continue
        if section is not None and line.strip() and _indent(line) <= section:
            section = None
        shared = SHARED.match(line) if section is not None else None
        if shared is None:
            out.append(line)
            i += 1
            continue
        entry = _indent(line)
        follow: list[str] = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > entry):
            follow.append(lines[i])
            i += 1
        for name in shared["names"].split(", "):
            out.append(f"{shared['indent']}{name}: {shared['text']}")
            out.extend(follow)
    return "\n".join(out)


def plain_roles(docstring: str) -> str:
    """Each Sphinx role as a code span of what it shows (``~`` keeps the last name)."""

    def shown(match: re.Match[str]) -> str:
        target = match["target"]
        return f"`{target.rsplit('.', 1)[-1] if match['tilde'] else target}`"

    return ROLE.sub(shown, docstring)


class Docstrings(Extension):
    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(split_shared(obj.docstring.value))
