"""The documentation's examples, found and run as a reader pastes them.

Every fenced block of README.md and docs/**/*.md is found with the line it starts on. A
```python block runs as a script of its own (``python block.py``) and a ```sh block with
``bash -euo pipefail``, each in a fresh process and an empty folder of its own, with this
environment's ``python`` and ``faxws`` first on PATH and no ``FAXWS_*`` variable set.
```text, ```console, ```json, ```xml and the other languages of SHOWN are shown, not run;
any other language is an error, so that no example escapes by its spelling (```py, ```bash).

A block that needs something says so in the text the reader sees just before it, in one of
the sentences this module provides for:

- "with `faxws serve --port 8080` running": a simulator is started on a free port, and
  ``8080`` in the block becomes its port;
- "with a `contract.pdf` in the current folder" (any names ending in .pdf, .tif or .tiff,
  joined by ", ", " and " or " or "): small valid documents of those names are written to
  the block's folder.

A block naming the real service (https://fax.example.com, and its token endpoint at
https://login.example.com/...) runs against a simulator instead, which accepts the
documentation's example account as well as the demo one. A ```sh block that starts its own
``faxws serve --port N`` gets a free port for N.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RUN = ("python", "sh")
SHOWN = frozenset({"text", "console", "json", "xml", "csv", "toml", "yaml"})

SERVE = "with `faxws serve --port 8080` running"
SERVE_PORT = "8080"
_SERVE_PHRASE = re.compile(re.escape(SERVE).replace("with", "[Ww]ith", 1))
_FILE = r"an? `(?P<name>[^`]+)`"
_FILES_PHRASE = re.compile(
    rf"(?:[Ww]ith|and) (?P<files>{_FILE.replace('?P<name>', '')}"
    rf"(?:(?:, | and | or ){_FILE.replace('?P<name>', '')})*) in the current folder"
)
# What a set-up sentence looks like, to catch one this module does not know.
_SET_UP_LIKE = re.compile(r"` running\b|\bin the current folder\b")

#: The account the documentation's examples use at https://fax.example.com.
EXAMPLE_USER_ID = "mbx1234567890"
EXAMPLE_PIN = "1234"
EXAMPLE_TOKEN = "ACCESS_TOKEN"
EXAMPLE_CLIENT_ID = "my-client-id"
EXAMPLE_CLIENT_SECRET = "my-client-secret"
REAL_SERVICE = "https://fax.example.com"
_TOKEN_ENDPOINT = re.compile(r"https://login\.example\.com/[^\s\"'`]*")

# A one-page PDF (a page object in a page tree, as the simulator counts pages) and a one-page
# bilevel TIFF (an 8x8 white strip), each small and well formed.
PDF = (
    b"%PDF-1.4\n"
    b"1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)


def _tiff() -> bytes:
    entries = [  # tag, type (3 short, 4 long), value
        (256, 3, 8),  # width
        (257, 3, 8),  # height
        (258, 3, 1),  # bits per sample
        (259, 3, 1),  # no compression
        (262, 3, 0),  # white is zero
        (273, 4, 8),  # the strip's offset: right after the header
        (277, 3, 1),  # samples per pixel
        (278, 3, 8),  # rows per strip
        (279, 4, 8),  # the strip's size
    ]
    ifd = len(entries).to_bytes(2, "little")
    for tag, kind, value in entries:
        ifd += tag.to_bytes(2, "little") + kind.to_bytes(2, "little") + (1).to_bytes(4, "little")
        ifd += value.to_bytes(4, "little")
    ifd += (0).to_bytes(4, "little")
    header = b"II*\x00" + (8 + 8).to_bytes(4, "little")
    return header + bytes(8) + ifd


TIFF = _tiff()
DOCUMENTS = {".pdf": PDF, ".tif": TIFF, ".tiff": TIFF}


@dataclass(frozen=True)
class Block:
    """A fenced block: where it is, its language, its text (dedented), and what the
    paragraph before it says it needs."""

    path: str  # relative to the repository
    line: int  # of the opening fence, from 1
    lang: str
    code: str
    needs_server: bool = False
    files: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN

    @property
    def names_real_service(self) -> bool:
        return REAL_SERVICE in self.code


@dataclass
class Page:
    blocks: list[Block] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)[^`]*$")


def _set_up(text: str) -> tuple[bool, tuple[str, ...], str]:
    """What a paragraph asks for, and its text without the sentences understood (a sentence
    in double quotes is mentioned, not used)."""
    text = re.sub(r'"[^"]*"', "", text)
    needs_server = bool(_SERVE_PHRASE.search(text))
    rest = _SERVE_PHRASE.sub("", text)
    files: list[str] = []
    for match in _FILES_PHRASE.finditer(rest):
        files.extend(re.findall(r"`([^`]+)`", match["files"]))
    rest = _FILES_PHRASE.sub("", rest)
    return needs_server, tuple(files), rest


def read_page(path: Path) -> Page:
    """The page's blocks, and what is wrong with its fences and set-up sentences."""
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    page = Page()
    # The paragraph being read, and the one before a blank line (a block's set-up sentence
    # is in the paragraph just before it, blank lines between or not).
    current: list[str] = []
    current_line = 0
    pending: tuple[int, list[str]] | None = None

    def flush() -> None:
        nonlocal pending
        if pending:
            _check_paragraph(page, rel, *pending, followed_by=None)
        pending = None

    i = 0
    while i < len(lines):
        line = lines[i]
        opening = _OPEN.match(line)
        if not opening:
            if not line.strip():
                if current:
                    pending = (current_line, current)
                    current = []
            elif line.lstrip().startswith("#"):
                flush()
                if current:
                    _check_paragraph(page, rel, current_line, current, followed_by=None)
                current = []
            else:
                if not current:
                    flush()
                    current_line = i + 1
                current.append(line.strip())
            i += 1
            continue
        indent, fence, lang = len(opening["indent"]), opening["fence"], opening["info"].lower()
        closing = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            page.problems.append(f"{rel}:{i + 1}: a fence that is never closed")
        if not lang:
            page.problems.append(
                f"{rel}:{i + 1}: a block without a language: say ```text for what is shown"
            )
        elif lang not in RUN and lang not in SHOWN:
            page.problems.append(
                f"{rel}:{i + 1}: ```{lang} is neither run ({', '.join(RUN)}) nor shown "
                f"({', '.join(sorted(SHOWN))})"
            )
        block = Block(rel, i + 1, lang, textwrap.dedent("\n".join(body)) + "\n")
        before = (current_line, current) if current else pending
        if before:
            block = _check_paragraph(page, rel, *before, followed_by=block)
        current, pending = [], None
        page.blocks.append(block)
        i = j + 1
    flush()
    if current:
        _check_paragraph(page, rel, current_line, current, followed_by=None)
    return page


def _check_paragraph(
    page: Page, rel: str, line: int, paragraph: list[str], followed_by: Block | None
) -> Block:
    text = " ".join(paragraph)
    needs_server, files, rest = _set_up(text)
    where = f"{rel}:{line}"
    unknown = _SET_UP_LIKE.search(rest)
    if unknown:
        page.problems.append(
            f"{where}: a set-up sentence the example runner does not know "
            f"(near {rest[max(0, unknown.start() - 60) : unknown.end()]!r}); "
            f"known: {SERVE!r} and 'with a `contract.pdf` in the current folder'"
        )
    for name in files:
        if Path(name).suffix.lower() not in DOCUMENTS:
            page.problems.append(f"{where}: no sample document for {name!r} (.pdf, .tif, .tiff)")
    if (needs_server or files) and (followed_by is None or not followed_by.runs):
        page.problems.append(f"{where}: a set-up sentence not followed by a python or sh block")
    if followed_by is None:
        return Block(rel, line, "", "")
    return Block(
        followed_by.path,
        followed_by.line,
        followed_by.lang,
        followed_by.code,
        needs_server=needs_server,
        files=files,
    )


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in read_page(path).blocks]


def runnable_blocks() -> list[Block]:
    return [block for block in all_blocks() if block.runs]


def problems() -> list[str]:
    return [problem for path in pages() for problem in read_page(path).problems]


# -- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    block: Block
    script: str  # what ran, after the set-up's rewriting
    folder: Path
    returncode: int
    stdout: str
    stderr: str
    simulator: object | None  # the FaxWSSimulator the block ran against, stopped since

    def explain(self) -> str:
        return (
            f"{self.block.id} ({self.block.lang}) exited {self.returncode}\n"
            f"--- script\n{self.script}--- stdout\n{self.stdout[-4000:]}\n"
            f"--- stderr\n{self.stderr[-4000:]}"
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def _simulator() -> Iterator[object]:
    from faxws.testing import DEMO_ACCOUNT, Account, FaxWSSimulator

    example = Account(
        EXAMPLE_USER_ID,
        pin=EXAMPLE_PIN,
        tokens=(EXAMPLE_TOKEN,),
        client_id=EXAMPLE_CLIENT_ID,
        client_secret=EXAMPLE_CLIENT_SECRET,
    )
    with FaxWSSimulator([DEMO_ACCOUNT, example]) as sim:
        yield sim


def prepare(block: Block, sim: object | None) -> str:
    """The block as it runs here: pointed at the simulator, on free ports."""
    script = block.code
    if sim is not None:
        url: str = sim.url  # type: ignore[attr-defined]
        port = url.rsplit(":", 1)[1]
        script = script.replace(REAL_SERVICE, url)
        script = _TOKEN_ENDPOINT.sub(sim.token_url, script)  # type: ignore[attr-defined]
        if block.needs_server:
            script = re.sub(rf"\b{SERVE_PORT}\b", port, script)
    if block.lang == "sh":
        for own in sorted(set(re.findall(r"faxws serve\b[^\n]*?--port (\d+)", script))):
            if own != "0":
                script = re.sub(rf"\b{own}\b", str(free_port()), script)
    return script


def environment(bin_dir: Path) -> dict[str, str]:
    """This process's environment without FAXWS_* variables, with ``bin_dir`` first on PATH;
    for another installation than this one, without PYTHONPATH either, so that it runs its
    own faxws."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
    env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")
    env.pop("VIRTUAL_ENV", None)
    if bin_dir != Path(sys.executable).parent:
        env.pop("PYTHONPATH", None)
    return env


@dataclass(frozen=True)
class Server:
    """A simulator running elsewhere (``faxws serve`` of another installation), for
    :func:`run` to use instead of starting its own."""

    url: str
    token_url: str


def run(
    block: Block,
    folder: Path,
    *,
    python: Path | None = None,
    server: Server | None = None,
    timeout: float = 300,
) -> Result:
    """Runs ``block`` in ``folder`` (which it may fill) with ``python`` (this interpreter by
    default) and the commands beside it, against ``server`` or a simulator of its own when
    the block needs one; every process it started is ended afterwards."""
    python = python or Path(sys.executable)
    folder.mkdir(parents=True, exist_ok=True)
    for name in block.files:
        (folder / name).write_bytes(DOCUMENTS[Path(name).suffix.lower()])
    with ExitStack() as stack:
        sim: object | None = server
        if sim is None and (block.needs_server or block.names_real_service):
            sim = stack.enter_context(_simulator())
        script = prepare(block, sim)
        source = folder / ("example.py" if block.lang == "python" else "example.sh")
        source.write_text(script, encoding="utf-8")
        command = (
            [str(python), source.name]
            if block.lang == "python"
            else ["bash", "-euo", "pipefail", source.name]
        )
        out_path, err_path = folder / ".example.out", folder / ".example.err"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            # Output to files, not pipes: a server the block left in the background would
            # hold a pipe open after the block ended.
            process = subprocess.Popen(
                command,
                cwd=folder,
                env=environment(python.parent),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                returncode = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                returncode = -1
            finally:
                _end_group(process)
        return Result(
            block,
            script,
            folder,
            returncode,
            out_path.read_text(encoding="utf-8", errors="replace"),
            err_path.read_text(encoding="utf-8", errors="replace"),
            sim,
        )


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """Ends what the block left running (its process group: the block and whatever it
    started in the background), waiting up to 10 s before killing it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(process.pid):
            time.sleep(0.05)  # polling for processes that are not our children to reap
        if not _group_alive(process.pid):
            break
    process.wait(timeout=10)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (a zombie, left for whoever reaps the
    orphans, does not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
