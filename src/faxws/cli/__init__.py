"""The ``faxws`` command line: send, status, cancel, report, batch, serve, validate (exit
codes: ``EXIT_CODES_HELP``).

Errors go to stderr in one line, with the request id; with ``--json`` every outcome, usage
errors included, is also one JSON object on stdout. Secrets (PIN, token, client secret) are
never printed, also not with ``--verbose`` and not in usage errors. Output cannot fail on
encoding, and a stream that cannot be written ends the run with one line, never a traceback.

Only the standard library is imported at start, so ``faxws --help`` stays fast: each command's
module imports what its ``run`` needs.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Collection, Sequence
from types import ModuleType
from typing import Any, NoReturn

from faxws import _ranges
from faxws._ranges import Range
from faxws.cli import _batch, _cancel, _report, _send, _serve, _status, _validate
from faxws.cli._client import ENV, SETTINGS, from_variables, secrets_in
from faxws.cli._output import EXIT_CODES_HELP, EXIT_SERVICE, FLAGS, Outcome, UsageError
from faxws.cli._send import spool_stdin

__all__ = ["ENV", "build_parser", "main", "spool_stdin"]


class _ParseError(Exception):
    """argparse refused the arguments. Raised instead of printed, so that the message can lose
    the values it quotes and be answered in JSON."""

    def __init__(
        self, parser: argparse.ArgumentParser, message: str, *, safe: bool = False
    ) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message
        self.safe = safe  # the program's own words, which quote no value


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        # allow_abbrev=False: "--pi X" must not be taken for "--pin X", nor the other way round.
        formatter = argparse.RawDescriptionHelpFormatter
        super().__init__(formatter_class=formatter, allow_abbrev=False, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise _ParseError(self, message)


def _checked(
    convert: Callable[[str], Any], ok: Callable[[Any], bool], problem: str
) -> Callable[[str], Any]:
    """An argparse ``type``: ``convert``, then ``ok``; either failing says ``problem``."""

    def check(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(problem) from None
        if not ok(value):
            raise argparse.ArgumentTypeError(problem)
        return value

    return check


PORT_PROBLEM = "must be a port number from 0 to 65535"
SECONDS_PROBLEM = "must be a finite number of seconds > 0"
COUNT_PROBLEM = "must be a whole number > 0"
SCALE_PROBLEM = "must be a finite number > 0"
WHEN_PROBLEM = "must be an ISO 8601 date and time with an offset, e.g. 2025-06-02T08:00:00+02:00"
_port = _checked(int, lambda v: 0 <= v <= 65535, PORT_PROBLEM)
_count = _checked(int, lambda v: v >= 1, COUNT_PROBLEM)
_seconds = _checked(float, lambda v: 0 < v < float("inf"), SECONDS_PROBLEM)  # not NaN
_scale = _checked(float, lambda v: 0 < v < float("inf"), SCALE_PROBLEM)
#: The problems of the flags whose range the library's table gives (faxws._ranges).
RANGE_PROBLEMS: set[str] = set()


def _ranged(span: Range) -> Callable[[str], Any]:
    """An argparse ``type`` for a setting of the library's table of ranges: the flag is
    refused (exit 2, naming it) before anything is written, as the library would refuse it."""
    problem = f"must be {span.words()}"
    RANGE_PROBLEMS.add(problem)
    return _checked(int if span.whole else float, span.holds, problem)


def _aware(text: str) -> Any:
    """An ISO 8601 date and time with its offset (``Z`` too, which Python 3.10 does not read)."""
    from datetime import datetime

    when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    if when.utcoffset() is None:
        raise ValueError(text)
    return when


_when = _checked(_aware, lambda v: True, WHEN_PROBLEM)
_JSON_HELP = "print JSON for machines"


def build_parser() -> argparse.ArgumentParser:
    from faxws._version import __version__

    parser = _Parser(
        prog="faxws",
        description="Client, validator and local simulator for the FaxWS v5 SOAP fax service.",
        epilog=EXIT_CODES_HELP + "\n" + _send.EXAMPLE,
    )
    parser.add_argument("--version", action="version", version=f"faxws {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    connection = _Parser(add_help=False)  # the options of every command that calls the service
    g = connection.add_argument_group(
        "connection and credentials (flags win over the FAXWS_* environment variables)"
    )
    for key, text in SETTINGS.items():
        g.add_argument(FLAGS[key], help=text.format(ENV[key]))
    g.add_argument("--timeout", type=_seconds, default=None, help="seconds (default 60)")
    g.add_argument(
        "--insecure-http",
        action="store_true",
        help="allow credentials over plain http to a non-loopback host",
    )
    common = _Parser(add_help=False)  # those of the commands that make one call
    o = common.add_argument_group("output")
    o.add_argument("--request-id", help="x-ch-request-id to send (default: a fresh UUID4)")
    o.add_argument("--json", action="store_true", help=_JSON_HELP)
    o.add_argument(
        "-v", "--verbose", action="store_true", help="log the exchange to stderr (never secrets)"
    )

    def command(name: str, module: ModuleType, *parents: _Parser) -> argparse.ArgumentParser:
        """The parser of a command whose module has its words and its ``run``."""
        p: argparse.ArgumentParser = sub.add_parser(
            name,
            parents=parents,
            help=module.SUMMARY,
            description=module.DESCRIPTION,
            epilog=module.EPILOG,
        )
        p.set_defaults(run=module.run)
        return p

    send = command("send", _send, connection, common)
    send.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="documents to send; - reads one from standard input (needs --file-type)",
    )
    send.add_argument(
        "--to",
        action="append",
        required=True,
        metavar="NUMBER",
        help="recipient fax number (repeat for more recipients)",
    )
    for what in ("name", "company"):
        send.add_argument(
            f"--{what}",
            action="append",
            default=[],
            metavar=what.upper(),
            help=f"recipient {what}, paired with --to in order",
        )
    _job_options(
        send, "FILE", "job options (any of them makes the send a SendFaxEx, with a reference id)"
    )
    w = send.add_argument_group("waiting")
    w.add_argument(
        "--wait",
        action="store_true",
        help="follow every job until it ends (exit 0 all delivered, 6 one failed, 7 timed out)",
    )
    w.add_argument(
        "--wait-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up waiting after this long (default 3600)",
    )

    status = command("status", _status, connection, common)
    status.add_argument("job_ids", nargs="*", metavar="JOB_ID", help="job ids from a send")
    status.add_argument(
        "--reference",
        metavar="REF",
        help="instead, whether the service took a send with this reference id (JRI-REF)",
    )

    cancel = command("cancel", _cancel, connection, common)
    cancel.add_argument("job_id", metavar="JOB_ID")

    report = command("report", _report, connection, common)
    report.add_argument("job_id", metavar="JOB_ID")
    report.add_argument(
        "--recipient-type",
        type=int,
        metavar="N",
        help="kind of recipient address (goes with --address)",
    )
    report.add_argument(
        "--address", metavar="ADDR", help="recipient address (goes with --recipient-type)"
    )

    serve = command("serve", _serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=_port, default=8080, help="port (0: any free port)")
    serve.add_argument("--user-id", help="accept this user instead of the demo account")
    serve.add_argument("--pin", help="that user's PIN [FAXWS_PIN, only with --user-id]")
    serve.add_argument(
        "--token",
        action="append",
        default=[],
        help="a bearer token to accept for that user (repeatable)",
    )
    serve.add_argument("--client-id", help="OAuth client id for that user's token endpoint")
    serve.add_argument(
        "--client-secret",
        help="OAuth client secret [FAXWS_CLIENT_SECRET, only with --user-id]",
    )
    serve.add_argument(
        "--token-lifetime",
        type=_seconds,
        default=3600.0,
        help="seconds an issued token stays valid (default 3600)",
    )
    serve.add_argument(
        "--strict",
        action="store_true",
        help="answer a request not in the contract's exact form with a SOAP fault naming "
        "each difference (default: serve it and record the differences)",
    )
    serve.add_argument(
        "--db",
        metavar="PATH",
        help="keep jobs in this SQLite file and their documents beside it, across restarts",
    )
    serve.add_argument(
        "--max-jobs",
        type=_count,
        default=100_000,
        help="jobs kept; beyond them the oldest are forgotten (default 100000)",
    )
    serve.add_argument(
        "--quiet", action="store_true", help="no line on standard error for each request"
    )
    serve.add_argument(
        "--time-scale",
        type=_scale,
        default=None,
        metavar="N",
        help="simulated seconds of a fax's life per second (default 4; 1000: milliseconds)",
    )
    serve.add_argument(
        "--json",
        action="store_true",
        help="print the start-up line as JSON: once this line is out, the server listens",
    )
    serve.add_argument(
        "--ready-file",
        metavar="PATH",
        help="once the server listens, write that JSON object to PATH (whole, at once); "
        "removed when it stops",
    )

    _batch_commands(command("batch", _batch), connection)

    validate = command("validate", _validate)
    validate.add_argument("files", nargs="+", metavar="FILE", help="documents; - for stdin")
    validate.add_argument("--json", action="store_true", help=_JSON_HELP)
    validate.add_argument(
        "--max-issues",
        type=_count,
        default=100,
        metavar="N",
        help="show at most N issues per file, and how many there were in all (default 100)",
    )
    return parser


def _job_options(parser: argparse.ArgumentParser, files: str, title: str) -> None:
    """The options of a send's documents and job (``send``, ``batch send``)."""
    parser.add_argument(
        "--file-type",
        metavar="TYPE",
        help=f"file type for every {files}: a name (pdf, tiff_g4, ...) or a number; "
        "default: from each file's extension",
    )
    job = parser.add_argument_group(title)
    if files == "FILE":
        job.add_argument(
            "--reference",
            metavar="REF",
            help="reference id to look the send up by (default: one is made and shown)",
        )
    job.add_argument(
        "--start-at",
        type=_when,
        metavar="ISO8601",
        help="start no earlier (at most 4 days ahead), e.g. 2025-06-02T08:00:00+02:00",
    )
    job.add_argument(
        "--expires-at",
        type=_when,
        metavar="ISO8601",
        help="give up an undelivered fax then (at most 2 days after the start)",
    )
    for name, text in _send.JOB_TEXT_OPTIONS.items():
        job.add_argument("--" + name.replace("_", "-"), metavar="TEXT", help=text)
    job.add_argument(
        "--notify-url",
        metavar="URL",
        help="the service POSTs the job's completion there; the password of its HTTP Basic "
        "credentials comes only from the variable FAXWS_NOTIFY_PASSWORD",
    )
    job.add_argument("--notify-user", metavar="USER", help="user of those credentials")


def _batch_commands(batch: argparse.ArgumentParser, connection: _Parser) -> None:
    """``faxws batch send|status|review|export|receive``."""
    sub = batch.add_subparsers(dest="batch_command", metavar="COMMAND")
    sub.required = True

    def command(name: str, *parents: _Parser) -> argparse.ArgumentParser:
        words = _batch.COMMANDS[name]
        p: argparse.ArgumentParser = sub.add_parser(
            name,
            parents=parents,
            help=words.summary,
            description=words.description,
            epilog=words.epilog,
        )
        p.set_defaults(run=words.run, json=False)
        p.add_argument(
            "--journal",
            required=True,
            metavar="PATH_OR_DSN",
            help="the journal: an SQLite file, or a postgresql:// URL",
        )
        return p

    send = command("send", connection)
    send.set_defaults(reference=None)  # each row has its own
    send.add_argument("manifest", metavar="MANIFEST", help="the faxes: a .csv or .jsonl file")
    send.add_argument(
        "--format",
        choices=("csv", "jsonl"),
        help="the manifest's format (default: from its extension)",
    )
    r = send.add_argument_group("running")
    r.add_argument(
        "--workers",
        type=_ranged(_ranges.WORKERS),
        default=4,
        metavar="N",
        help=f"faxes sent at once by this command (default 4; {_ranges.WORKERS.span()})",
    )
    r.add_argument(
        "--rate",
        type=_ranged(_ranges.RATE),
        metavar="R",
        help="at most R calls a second to the account, by every run sharing the journal "
        f"({_ranges.RATE.span()})",
    )
    r.add_argument(
        "--max-concurrent",
        type=_ranged(_ranges.MAX_CONCURRENT),
        metavar="N",
        help="at most N sends in flight for the account, by every run sharing the journal "
        f"({_ranges.MAX_CONCURRENT.span()})",
    )
    r.add_argument(
        "--no-wait",
        action="store_true",
        help="end once every fax is sent, without following it until it ends",
    )
    r.add_argument(
        "--lease",
        type=_ranged(_ranges.LEASE_SECONDS),
        default=60.0,
        metavar="SECONDS",
        help="how long a claim on a row outlives its run (default 60; "
        f"{_ranges.LEASE_SECONDS.span()}): the rows in flight of a run that ended abruptly "
        "are looked up by the next run after that",
    )
    _job_options(
        send,
        "file of the manifest",
        "job options for every row (a row's own fields win; a send is always a SendFaxEx, "
        "with the row's reference id)",
    )
    o = send.add_argument_group("output")
    o.add_argument("--json", action="store_true", help=_JSON_HELP)
    o.add_argument(
        "-v", "--verbose", action="store_true", help="log the exchanges to stderr (never secrets)"
    )

    for name in ("status", "review"):
        command(name).add_argument("--json", action="store_true", help=_JSON_HELP)
    export = command("export")
    export.add_argument(
        "--format", choices=("csv", "jsonl"), default="csv", help="csv (default) or jsonl"
    )
    export.add_argument(
        "--output", metavar="FILE", help="write to FILE (replaced whole) instead of stdout"
    )
    receive = command("receive")
    receive.add_argument("--host", default="127.0.0.1", help="address to listen on")
    receive.add_argument("--port", type=_port, required=True, help="port (0: any free port)")
    receive.add_argument(
        "--notify-user",
        metavar="USER",
        help="the user of the pushes' HTTP Basic credentials (as given to batch send); the "
        "password comes only from the variable FAXWS_NOTIFY_PASSWORD",
    )
    receive.add_argument(
        "--quiet", action="store_true", help="no line on standard error for each request"
    )


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    out = Outcome(words, secrets_in(words))
    # Every write of the run, argparse's help and the logs included, goes through streams
    # that cannot raise; what failed is reported once, by out.finish().
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out.stdout.as_text(), out.stderr.as_text()
    try:
        try:
            code = _main(words, out)
        except KeyboardInterrupt:
            code = out.interrupted()
        except SystemExit as exc:  # --help and --version: argparse has written them
            code = exc.code if isinstance(exc.code, int) else EXIT_SERVICE if exc.code else 0
        return out.finish(code)
    finally:
        sys.stdout, sys.stderr = saved


def _main(words: list[str], out: Outcome) -> int:
    parser = build_parser()
    # A word the parser knows (``send``, ``--to``) that follows a secret flag was not its
    # value (argparse would not take it as one); masking it would garble every message.
    actions = _all_actions(parser)
    out.secrets -= {word for a in actions for word in a.option_strings}
    out.secrets -= {
        c for a in actions if isinstance(a, argparse._SubParsersAction) for c in a.choices
    }
    try:
        args, extra = parser.parse_known_args(words)
        # Said by the command they were given to, with its usage.
        _refuse_split_values(_command_of(parser, args), args, words)
        if extra:
            _command_of(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    except _ParseError as exc:
        message = exc.message if exc.safe else _safe_message(exc, parser, words, out.secrets)
        return out.usage(message, exc.parser)
    out.prog = f"faxws {args.command}"
    out.as_json = bool(args.json)
    out.from_variables = from_variables(args)
    out.typed = _typed(_command_of(parser, args), args)
    run: Callable[[argparse.Namespace, Outcome], int] = args.run
    try:
        return run(args, out)
    except UsageError as exc:
        return out.usage(str(exc))
    except Exception as exc:
        from faxws.errors import FaxWSError

        if isinstance(exc, FaxWSError):
            return out.error(exc)
        return out.internal(exc, verbose=bool(getattr(args, "verbose", False)))


def _typed(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, list[str]]:
    """The text values given to each flag of the command (by its longest name), which its
    input errors must not repeat: a token typed in the wrong place is not echoed."""
    typed: dict[str, list[str]] = {}
    for action in parser._actions:
        if not action.option_strings:
            continue
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        texts = [v for v in values if isinstance(v, str) and v]
        if texts:
            typed[max(action.option_strings, key=len)] = texts
    return typed


def _command_of(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The parser of the command ``args`` were parsed for (``faxws batch send``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _command_of(action.choices[chosen], args)
    return parser


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    out: list[argparse.Action] = []
    for action in parser._actions:
        out.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _all_actions(sub)
    return out


def _safe_message(
    error: _ParseError,
    root: argparse.ArgumentParser,
    words: Sequence[str],
    secrets: Collection[str],
) -> str:
    """argparse's message with every value it quotes taken out. Any value may be a secret (a
    token before the command is an "invalid choice", a PIN after a misspelled flag an
    "unrecognized argument"), which masking the known secrets cannot find. So only the
    program's own words are kept; a message of a form not known here becomes a generic one."""
    message = error.message
    # Each argument by the name argparse's messages give it.
    names = {argparse._get_action_name(a): a for a in _all_actions(root)}
    names.update({argparse._get_action_name(a): a for a in error.parser._actions})
    flags = {o for a in _all_actions(root) for o in a.option_strings}
    # Words argparse took for options it does not know: a value or a file name with a "-".
    before = words[: words.index("--")] if "--" in words else words
    dashed = [w for w in before if w[:1] == "-" and w != "-" and w.split("=")[0] not in flags]
    for name, action in names.items():
        prefix = f"argument {name}: "
        if name is None or not message.startswith(prefix):
            continue
        problem = message[len(prefix) :]
        known = {PORT_PROBLEM, SECONDS_PROBLEM, COUNT_PROBLEM, SCALE_PROBLEM, WHEN_PROBLEM}
        known |= RANGE_PROBLEMS
        if problem == "expected one argument":
            for i, word in enumerate(words[:-1]):
                if word in action.option_strings and words[i + 1] in dashed:
                    return f"{message}; a value that starts with - is given as {word}=VALUE"
        if problem in known or re.fullmatch(
            r"expected (one|at most one|at least one|\d+) arguments?", problem
        ):
            return message
        if problem.startswith("invalid choice: ") and action.choices is not None:
            choices = ", ".join(str(c) for c in action.choices)
            hint = ""
            if isinstance(action, argparse._SubParsersAction) and words[0].startswith("-"):
                hint = "; options go after the command"
            return f"{prefix}invalid choice (choose from {choices}){hint}"
        kind = re.match(r"invalid (\w+) value: ", problem)
        if kind is not None:
            return f"{prefix}invalid {kind.group(1)} value"
        if problem.startswith("ignored explicit argument "):
            return f"{prefix}takes no value"
        return f"{prefix}invalid value"
    if message.startswith(("the following arguments are required: ", "one of the arguments ")):
        required = message.partition(": ")[2].split(", ")
        if "FILE" in required and dashed:
            return f"{message}; a FILE whose name starts with - is given after --"
        return message  # names only
    if message.startswith("unrecognized arguments: "):
        # Misspelled flags are shown (--pn), values never: a PIN after a misspelled --pin
        # lands here. argparse joined the words with spaces; a value with spaces stays hidden.
        shown: list[str] = []
        hidden = False
        stray = message[len("unrecognized arguments: ") :].split(" ")
        for word in stray:
            option = word.split("=", 1)[0]
            if re.fullmatch(r"--?[a-z][a-z0-9-]{0,40}", option) and option not in secrets:
                if option not in shown:
                    shown.append(option)
                hidden = hidden or option != word
            else:
                hidden = True
        split = None if shown else _split_value(error.parser, words, set(stray))
        if split is not None:
            return _split_message(split)
        text = f": {', '.join(shown)}" if shown else ""
        return f"unrecognized arguments{text}{' (values are not shown)' if hidden else ''}"
    if message.startswith("ambiguous option: ") and " could match " in message:
        return "ambiguous option: it could match " + message.rpartition(" could match ")[2]
    return "invalid arguments (see --help)"


def _refuse_split_values(
    parser: argparse.ArgumentParser, args: argparse.Namespace, words: Sequence[str]
) -> None:
    """Refuse a value with spaces given without quotes whose other words argparse took for
    FILE (``--to +1 555 0100 letter.pdf``: "555" is no file) or for JOB_ID beside
    ``--reference``, naming the option and never a word. After a secret option (``--token
    Bearer abc``, ``--pin 12 34``) the word may be part of the secret: no message quotes it,
    also not as a missing file's name. Checked before any file is read."""
    secret_flags = {FLAGS[key] for key in ("token", "pin", "client_secret")}
    files = getattr(args, "files", None) or []

    def stray(option: str, word: str) -> bool:
        if parser._option_string_actions[option].type is not None:  # a number, a date
            return False
        if word == "-" or os.path.lexists(word):
            return False
        # A missing "letter.pdf" after "--to 1" is a missing file, said as such.
        return option in secret_flags or not os.path.splitext(word)[1]

    found = _split(parser, words, set(files), stray)
    if found is not None:
        split, following = found
        if not os.path.splitext(following)[1]:  # no document's name: a word of the value
            raise _ParseError(parser, _split_message(split), safe=True)
        raise _ParseError(  # after a secret: a missing document, or the rest of the secret
            parser,
            f"FILE {files.index(following) + 1}: no such file (its name is not shown: it "
            f"follows the value of {split}, and may be part of it; quote a value with "
            f"spaces: {split} {_ANY})",
            safe=True,
        )
    job_ids = getattr(args, "job_ids", None)
    if job_ids and getattr(args, "reference", None) is not None:  # the two exclude each other
        found = _split(parser, words, set(job_ids), lambda option, _: option == "--reference")
        if found is not None:
            raise _ParseError(parser, _split_message(found[0]), safe=True)


def _split_message(option: str) -> str:
    """What a value with spaces given without quotes is told."""
    return (
        f"argument {option}: takes one value, and words that no argument takes follow it "
        f"(values are not shown); quote a value with spaces: {option} {_QUOTED.get(option, _ANY)}"
    )


#: A value with spaces of an option, quoted as a shell wants it.
_QUOTED = {"--to": '"+1 555 0100"', "--name": '"Ada Lovelace"', "--company": '"Example Ltd"'}
_ANY = '"..."'


def _split_value(
    parser: argparse.ArgumentParser,
    words: Sequence[str],
    stray: Collection[str],
    taken: Callable[[str, str], bool] | None = None,
) -> str | None:
    """The option of ``parser`` taking one value whose value a stray word follows: a value
    with spaces given without quotes (``--to +1 555 0100``). Without ``taken``, a stray word
    is one no argument took; with it, a word an argument took (in ``stray``) for which
    ``taken(option, word)`` holds."""
    found = _split(parser, words, stray, taken)
    return None if found is None else found[0]


def _split(
    parser: argparse.ArgumentParser,
    words: Sequence[str],
    stray: Collection[str],
    taken: Callable[[str, str], bool] | None = None,
) -> tuple[str, str] | None:
    """:func:`_split_value`'s option, with the stray word that follows its value."""
    single = {o for a in parser._actions if a.nargs is None for o in a.option_strings}
    for i, word in enumerate(words):
        if word == "--":  # what follows is positional
            return None
        option, equals, _ = word.partition("=")
        if option not in single:
            continue
        after = i + (1 if equals else 2)
        if after >= len(words) or words[after] not in stray:
            continue
        following = words[after]
        if taken is None and not following.startswith("-"):
            return option, following
        if taken is not None and taken(option, following):
            return option, following
    return None
