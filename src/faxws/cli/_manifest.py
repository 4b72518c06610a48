"""The manifest of ``faxws batch send``: one fax a row, in CSV (a header row naming the
columns) or JSON Lines (an object a line). Every row is read and checked before anything is
sent; each problem names the row's line and the field, and they are all reported at once.

Fields, named as ``faxws send`` names its options (``cover-subject``; ``cover_subject`` too):
``key`` (the row's own, unique for ever), ``to``, ``name``, ``company`` (a recipient; in CSV the
columns repeated, in JSON Lines lists, paired in order), ``file`` (a document, the same way;
relative to the manifest's folder), ``file-type``, ``start-at``, ``expires-at`` and the text job
options. An empty CSV cell, or a JSON null, is a field not given: the command's flag applies.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from faxws.jobs import JobOptions
    from faxws.models import Recipient

FORMATS = ("csv", "jsonl")
_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_TEXT_OPTIONS = (
    "sender_name",
    "sender_company",
    "sender_phone",
    "sender_fax",
    "sender_csid",
    "cover_name",
    "cover_subject",
    "cover_text",
    "resolution",
)
#: The fields a row may give (as named in the manifest), each with its JobOptions or recipient
#: argument; those of :data:`REPEATED` may be given several times.
FIELDS: tuple[str, ...] = ("key", "to", "name", "company", "file", "file-type", "start-at")
FIELDS += ("expires-at", *(name.replace("_", "-") for name in _TEXT_OPTIONS))
REPEATED = frozenset({"to", "name", "company", "file"})
_PAIRED = frozenset({"to", "name", "company"})
#: Fields a row may not give, with the reason.
_REFUSED = {
    "reference": "each row's reference id is made by the journal",
    "notify-url": "give it for the whole batch with --notify-url",
    "notify-user": "give it for the whole batch with --notify-user",
}
#: A key the journal keeps for a row's resends.
_RESEND_KEY = re.compile(r".*/resend-\d+", re.S)
#: At most this many problems are listed in the text; JSON has them all.
SHOWN_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """What is wrong with one field of one row; line 1 of a CSV manifest is its header."""

    line: int
    field: str
    problem: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.field == "-" else f"line {self.line}, {self.field}"
        return f"{where}: {self.problem}"


class ManifestError(Exception):
    """The manifest has bad rows (``problems``, in line order): nothing may be sent."""

    def __init__(self, path: str, problems: Sequence[Problem]) -> None:
        self.path = path
        self.problems = sorted(problems, key=lambda p: p.line)
        rows = len({p.line for p in self.problems})
        super().__init__(f"{path}: {rows} bad row(s)")


@dataclass(frozen=True)
class Entry:
    """One row of a manifest, checked: what its fax sends. ``files`` are absolute paths with
    their file types; ``options`` holds no reference id and no notification."""

    line: int
    key: str
    recipients: tuple[Recipient, ...]
    files: tuple[tuple[str, int], ...]
    options: JobOptions


def format_of(path: str, given: str | None) -> str:
    """The manifest's format: ``given`` (``--format``), else from the file's extension."""
    if given is not None:
        return given
    found = _EXTENSIONS.get(Path(path).suffix.lower())
    if found is None:
        from faxws.cli._output import UsageError

        raise UsageError(
            f"MANIFEST: cannot tell the format of {Path(path).name!r} from its extension "
            "(.csv, .jsonl or .ndjson): pass --format csv or --format jsonl"
        )
    return found


def read_manifest(
    path: str, manifest_format: str, defaults: Mapping[str, Any], *, now: datetime | None = None
) -> list[Entry]:
    """Every row of the manifest at ``path``, checked; ``defaults`` are the command's flags
    (JobOptions arguments and ``file_type``), which a row's fields override. Raises
    :class:`ManifestError` naming every problem found, or OSError when it cannot be read."""
    folder = Path(os.path.abspath(path)).parent
    problems: list[Problem] = []
    rows: list[tuple[int, dict[str, list[str]]]] = []
    with open(path, "rb") as raw:
        reader = _csv_rows if manifest_format == "csv" else _jsonl_rows
        for line, fields in reader(raw, problems):
            rows.append((line, fields))
    if not rows and not problems:
        problems.append(Problem(1, "-", "the manifest has no rows"))
    entries: list[Entry] = []
    first_line: dict[str, int] = {}
    for line, fields in rows:
        entry = _entry(line, fields, folder, defaults, problems, now)
        key = (fields.get("key") or [""])[0]
        if key and key.strip():
            if key in first_line:
                problems.append(
                    Problem(line, "key", f"{key!r} is also the key of line {first_line[key]}")
                )
                continue
            first_line[key] = line
        if entry is not None:
            entries.append(entry)
    if problems:
        raise ManifestError(path, problems)
    return entries


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _unknown(name: str) -> str:
    if name in _REFUSED:
        return f"not a field of a row: {_REFUSED[name]}"
    return f"unknown field {name!r}; the fields are {', '.join(FIELDS)}"


def _lines(raw: BinaryIO, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """The manifest's lines, numbered from 1, as UTF-8 (a byte order mark is dropped)."""
    for number, data in enumerate(raw, 1):
        try:
            text = data.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            problems.append(Problem(number, "-", "is not UTF-8 text; save the manifest as UTF-8"))
            return
        yield number, text


def _csv_rows(raw: BinaryIO, problems: list[Problem]) -> Iterator[tuple[int, dict[str, list[str]]]]:
    import csv

    lines = _lines(raw, problems)
    reader = csv.reader((text for _, text in lines), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        problems.append(Problem(reader.line_num, "-", f"is not CSV: {exc}"))
        return
    if header is None:
        return
    names: list[str | None] = []
    for column, cell in enumerate(header, 1):
        name = _normal(cell)
        if not name:
            problems.append(Problem(1, f"column {column}", "has no name in the header"))
            names.append(None)
        elif name not in FIELDS:
            problems.append(Problem(1, cell.strip(), _unknown(name)))
            names.append(None)
        elif name in names and name not in REPEATED:
            problems.append(
                Problem(1, name, "is a column twice; only to, name, company and file repeat")
            )
            names.append(None)
        else:
            names.append(name)
    missing = [name for name in ("key", "to", "file") if name not in names]
    for name in missing:
        problems.append(Problem(1, name, f"the header has no {name} column"))
    if missing:
        return  # every row would lack it: said once
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            problems.append(Problem(start, "-", f"is not CSV: {exc}"))
            return
        if cells is None:
            return
        if not any(c.strip() for c in cells):
            continue  # a blank line
        if len(cells) > len(names):
            problems.append(
                Problem(start, "-", f"has {len(cells)} cells, the header {len(names)} columns")
            )
            continue
        fields: dict[str, list[str]] = {}
        for named, cell in zip(names, cells, strict=False):
            if named is not None:
                fields.setdefault(named, []).append(cell)
        # An empty cell is a field not given (a CSV row has every column); a recipient's
        # cells keep their places, which pair them.
        yield start, {n: vs if n in _PAIRED else [v for v in vs if v] for n, vs in fields.items()}


def _jsonl_rows(
    raw: BinaryIO, problems: list[Problem]
) -> Iterator[tuple[int, dict[str, list[str]]]]:
    import json

    for number, text in _lines(raw, problems):
        if not text.strip():
            continue
        twice: list[str] = []

        def pairs(items: list[tuple[str, Any]], twice: list[str] = twice) -> dict[str, Any]:
            found: dict[str, Any] = {}
            for name, value in items:
                if name in found:
                    twice.append(name)
                found[name] = value
            return found

        try:
            obj = json.loads(text, object_pairs_hook=pairs)
        except ValueError as exc:
            problems.append(Problem(number, "-", f"is not JSON: {exc}"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(number, "-", "is not a JSON object ({...})"))
            continue
        bad = False
        for name in dict.fromkeys(twice):
            problems.append(Problem(number, name, "is given twice"))
            bad = True
        fields: dict[str, list[str]] = {}
        for given, value in obj.items():
            name = _normal(given)
            if name not in FIELDS:
                problems.append(Problem(number, given, _unknown(name)))
                bad = True
                continue
            if name in fields:
                problems.append(Problem(number, name, f"is given twice (also as {given!r})"))
                bad = True
                continue
            values = value if isinstance(value, list) and name in REPEATED else [value]
            if value is None:
                values = []
            strings = [v for v in values if isinstance(v, str)]
            if len(strings) != len(values):
                kind = "a string or a list of strings" if name in REPEATED else "a string"
                problems.append(Problem(number, name, f"must be {kind}"))
                bad = True
                continue
            fields[name] = strings
        if not bad:
            yield number, fields


def _entry(
    line: int,
    fields: dict[str, list[str]],
    folder: Path,
    defaults: Mapping[str, Any],
    problems: list[Problem],
    now: datetime | None,
) -> Entry | None:
    """The row's entry, or None with its problems added."""
    from faxws.errors import BadInputError
    from faxws.jobs import JobOptions, job_details
    from faxws.journal._payload import check_key
    from faxws.models import Recipient

    found: list[Problem] = []

    def bad(field: str, problem: str) -> None:
        found.append(Problem(line, field, problem))

    for name, given in fields.items():
        if len(given) > 1 and name not in REPEATED:
            bad(name, "is given twice")
    key = (fields.get("key") or [""])[0]
    if not key.strip():
        bad("key", "is missing or empty: every row needs its own key")
    else:
        try:
            check_key(key)
        except BadInputError as exc:
            bad("key", exc.problem)
        else:
            if _RESEND_KEY.fullmatch(key):
                bad("key", "must not end in /resend-<n> (the journal's keys of resends)")
    # The n-th name and company are the n-th number's (in CSV, by their columns' order).
    numbers = fields.get("to", [])
    names, companies = fields.get("name", []), fields.get("company", [])
    recipients: list[Recipient] = []
    if not any(numbers):
        bad("to", "is missing or empty: every row needs a fax number")
    for i in range(max(len(numbers), len(names), len(companies))):
        number, name, company = (v[i] if i < len(v) else "" for v in (numbers, names, companies))
        which = f" {i + 1}" if max(len(numbers), len(names), len(companies)) > 1 else ""
        if not number:
            for field, value in (("name", name), ("company", company)):
                if value:
                    bad(field + which, f"{value!r} is given for no fax number (to{which})")
            continue
        try:
            recipients.append(Recipient(number, name=name, company=company))
        except BadInputError as exc:
            bad({"fax_number": "to"}.get(exc.field, exc.field) + which, exc.problem)
    file_type: int | None = defaults.get("file_type")
    typed = True
    if "file-type" in fields:
        from faxws.models import file_type_from_name

        try:
            file_type = file_type_from_name(fields["file-type"][0])
        except BadInputError as exc:
            bad("file-type", exc.problem)
            typed = False  # no type inferred either: the problem is said once
    files: list[tuple[str, int]] = []
    paths = fields.get("file", [])
    if not paths:
        bad("file", "is missing or empty: every row needs a document")
    for i, written in enumerate(paths):
        field = f"file {i + 1}" if len(paths) > 1 else "file"
        document = _file(folder, written, field, bad)
        if document is None or not typed:
            continue
        kind = file_type if file_type is not None else _type_of(document)
        if kind is None:
            ext = Path(document).suffix.lower()
            bad(
                field,
                f"cannot infer the type of {Path(document).name!r} from its extension "
                f"{ext or '(none)'!r}; give the row a file-type, or pass --file-type",
            )
        else:
            files.append((document, kind))
    options: dict[str, Any] = {k: v for k, v in defaults.items() if k != "file_type"}
    for name in ("start_at", "expires_at"):
        dates = fields.get(name.replace("_", "-"))
        if dates:
            when = _when(dates[0])
            if when is None:
                bad(name.replace("_", "-"), _when_problem())
                options.pop(name, None)
            else:
                options[name] = when
    for name in _TEXT_OPTIONS:
        texts = fields.get(name.replace("_", "-"))
        if texts:
            options[name] = texts[0]
    made = None
    try:
        made = JobOptions(**options)
        # The checks a send makes of the schedule, made now: a row the service would refuse is
        # a bad row, not a failed fax.
        job_details(made, "-", now or datetime.now(timezone.utc))
    except BadInputError as exc:
        bad(exc.field.replace("_", "-"), exc.problem)
    if found:
        problems.extend(found)
        return None
    assert made is not None
    return Entry(line, key, tuple(recipients), tuple(files), made)


def _file(folder: Path, given: str, field: str, bad: Callable[[str, str], None]) -> str | None:
    """A document's absolute path (a relative one is in the manifest's folder), once found to
    be a file that can be read and is not empty."""
    import stat

    from faxws.errors import BadInputError
    from faxws.journal._payload import check_path

    try:
        check_path(given)  # before the file system refuses it with a ValueError
    except BadInputError as exc:
        bad(field, exc.problem)
        return None
    path = os.path.normpath(folder / given)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            bad(field, f"is not a file: {path}")
            return None
        if info.st_size == 0:
            bad(field, f"is empty: {path}")
            return None
        with open(path, "rb"):
            pass
    except OSError as exc:
        reason = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror or "error"
        bad(field, f"{reason}: {path}")
        return None
    return path


def _type_of(path: str) -> int | None:
    from faxws.models import EXTENSION_TYPES

    inferred = EXTENSION_TYPES.get(Path(path).suffix.lower())
    return None if inferred is None else int(inferred)


def _when(text: str) -> Any:
    from faxws.cli import _aware

    try:
        return _aware(text)
    except ValueError:
        return None


def _when_problem() -> str:
    from faxws.cli import WHEN_PROBLEM

    return WHEN_PROBLEM
