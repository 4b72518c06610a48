"""``faxws validate``: SOAP documents checked against the FaxWS schema."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from faxws.cli._output import Outcome, json_text

SUMMARY = "check SOAP documents against the FaxWS schema"
DESCRIPTION = "Check SOAP envelopes or bare payloads against wsdl/FaxWS.xsd."
EPILOG = """\
example:
  faxws validate request.xml response.xml
  cat req.xml | faxws validate - --max-issues 10

exit codes: 0 all valid, 1 any invalid, 2 a file cannot be read
"""


def run(args: argparse.Namespace, out: Outcome) -> int:
    streams = {"out": out.stdout.as_text(), "err": out.stderr.as_text()}
    return validate_documents(args.files, as_json=args.json, max_issues=args.max_issues, **streams)


def validate_documents(
    names: Sequence[str],
    *,
    as_json: bool,
    max_issues: int | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """``faxws validate``, with its exit code. At most ``max_issues`` issues per file are
    shown; when some are left out, a last line (``"total_issues"`` and ``"truncated"`` in JSON)
    says how many there were. ``out`` and ``err`` default to ``sys.stdout`` and ``sys.stderr``.
    """
    from dataclasses import asdict

    from faxws.validation import _read, validate

    out, err = out or sys.stdout, err or sys.stderr
    results: list[dict[str, object]] = []
    unreadable = invalid = False
    for name in names:
        try:
            data = sys.stdin.buffer.read() if name == "-" else _read(name)
        except OSError as exc:
            unreadable, problem = True, f"cannot read: {exc.strerror or exc}"
            print(f"{name}: {problem}", file=err)
            results.append({"file": name, "error": problem})
            continue
        issues = validate(data, max_issues=max_issues)
        invalid = invalid or bool(issues)
        results.append(
            {
                "file": name,
                "valid": not issues,
                "issues": [asdict(i) for i in issues],
                "total_issues": issues.total,
                "truncated": issues.truncated,
            }
        )
        if not as_json:
            for issue in issues:
                print(f"{name}:{issue.line}: {issue.path}: {issue.message}", file=out)
            if issues.truncated:
                print(
                    f"{name}: {issues.total} issues, the first {len(issues)} shown (--max-issues)",
                    file=out,
                )
            if not issues:
                print(f"{name}: valid", file=out)
    if as_json:
        out.write(json_text(results, sort_keys=False) + "\n")
    return 2 if unreadable else 1 if invalid else 0
