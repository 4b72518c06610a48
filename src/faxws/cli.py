"""The ``faxws`` command line: send, report, serve, validate.

Exit codes: 0 success, 1 service error or fault, 2 bad usage or bad input, 3 authentication,
4 transport, 5 the request reached the service (or may have) and then the command failed (its
output could not be written), 130 interrupted (Ctrl-C). Errors go to stderr in one line, with
the request id; with ``--json`` every outcome, usage errors included, is also one JSON object on
stdout. Secrets (PIN, token, client secret) are never printed, also not with ``--verbose`` and
not in usage errors. Output cannot fail on encoding, and a stream that cannot be written (a
closed pipe, a full disk) ends the run with one line, never a traceback.

Only the standard library is imported at start, so ``faxws --help`` stays fast; each command
imports what it needs.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn, TextIO, cast

if TYPE_CHECKING:
    from contextlib import ExitStack

    from faxws.client import FaxClient

EXIT_OK, EXIT_SERVICE, EXIT_USAGE, EXIT_AUTH, EXIT_TRANSPORT = 0, 1, 2, 3, 4
#: The request reached the service, or may have, and then the command failed (its output could
#: not be written): a script that sends again on other failures must not send this one again.
EXIT_MAYBE_SENT = 5
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

ENV = {
    "base_url": "FAXWS_BASE_URL",
    "user_id": "FAXWS_USER_ID",
    "token": "FAXWS_TOKEN",
    "pin": "FAXWS_PIN",
    "token_url": "FAXWS_TOKEN_URL",
    "client_id": "FAXWS_CLIENT_ID",
    "client_secret": "FAXWS_CLIENT_SECRET",
    "scope": "FAXWS_SCOPE",
}
_CREDENTIAL_KEYS = ("token", "pin", "token_url", "client_id", "client_secret")
SECRET_FLAGS = ("--token", "--pin", "--client-secret")
SECRET_VARIABLES = (ENV["token"], ENV["pin"], ENV["client_secret"])

#: Library argument names as the command's flags, for messages: the user typed the flags.
FLAGS = {
    "base_url": "--base-url",
    "user_id": "--user-id",
    "token": "--token",
    "pin": "--pin",
    "token_url": "--token-url",
    "client_id": "--client-id",
    "client_secret": "--client-secret",
    "scope": "--scope",
    "timeout": "--timeout",
    "allow_insecure_http": "--insecure-http",
    "request_id": "--request-id",
    "fax_number": "--to",
    "name": "--name",
    "company": "--company",
    "file_type": "--file-type",
    "data": "FILE",
    "path": "FILE",
    "job_id": "JOB_ID",
    "recipient_type": "--recipient-type",
    "recip_address": "--address",
}

#: Standard input up to this size stays in memory; a larger document is spooled to disk.
STDIN_IN_MEMORY = 4 * 1024 * 1024
STDIN_NAME = "<stdin>"

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    service error or SOAP fault (the service answered and refused)
  2    bad usage or bad input (nothing was sent)
  3    authentication failed
  4    transport failure (connection, time-out)
  5    the request reached the service, or may have, and then the command failed
       (e.g. its output could not be written): do not send it again before checking;
       stderr names the request id and the job ids
  130  interrupted (Ctrl-C); a fax may have been delivered, see the request id
"""

SEND_EXAMPLE = """\
example:
  export FAXWS_BASE_URL=https://fax.example.com FAXWS_USER_ID=mbx1234567890
  export FAXWS_TOKEN=...            # or FAXWS_PIN=..., or the FAXWS_CLIENT_* settings
  faxws send --to "+1 555 0100" --name Bob --to "+1 555 0101" contract.pdf
  scan-to-pdf | faxws send --to "+1 555 0100" - --file-type pdf
"""

REPORT_EXAMPLE = """\
example:
  faxws report SIM00000001 --recipient-type 1 --address ops@example.com
"""

SERVE_EXAMPLE = """\
example:
  faxws serve --port 8080
  faxws serve --port 0 --user-id mbx1 --pin 1234     # port 0: any free port
  faxws serve --db inbox.sqlite --strict              # keep jobs; check the wire form

It prints its URL, its inbox (open it in a browser; the REST API is under /api/) and the
accounts it accepts, logs a line per request, and runs until interrupted (Ctrl-C).
"""


class _UsageError(Exception):
    """Bad usage found after argparse (conflicting credentials, missing settings)."""


class _ParseError(Exception):
    """argparse refused the arguments. Raised instead of printed, so that the message can lose
    the values it quotes and be answered in JSON."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ParseError(self, message)


PORT_PROBLEM = "must be a port number from 0 to 65535"
SECONDS_PROBLEM = "must be a finite number of seconds > 0"
COUNT_PROBLEM = "must be a whole number > 0"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(PORT_PROBLEM) from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(PORT_PROBLEM)
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(COUNT_PROBLEM) from None
    if value < 1:
        raise argparse.ArgumentTypeError(COUNT_PROBLEM)
    return value


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(SECONDS_PROBLEM) from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(SECONDS_PROBLEM)
    return value


def _client_options() -> _Parser:
    p = _Parser(add_help=False, allow_abbrev=False)
    g = p.add_argument_group(
        "connection and credentials (flags win over the FAXWS_* environment variables)"
    )
    g.add_argument("--base-url", help="service root, e.g. https://fax.example.com [FAXWS_BASE_URL]")
    g.add_argument("--user-id", help="account, e.g. mbx1234567890 [FAXWS_USER_ID]")
    g.add_argument("--token", help="OAuth 2.0 access token [FAXWS_TOKEN]")
    g.add_argument("--pin", help="PIN or password; prefer the variable [FAXWS_PIN]")
    g.add_argument("--token-url", help="OAuth 2.0 token endpoint [FAXWS_TOKEN_URL]")
    g.add_argument("--client-id", help="OAuth 2.0 client id [FAXWS_CLIENT_ID]")
    g.add_argument("--client-secret", help="OAuth 2.0 client secret [FAXWS_CLIENT_SECRET]")
    g.add_argument(
        "--scope", help="OAuth 2.0 scope [FAXWS_SCOPE] (default: 'FaxWS offline_access')"
    )
    g.add_argument("--timeout", type=_seconds, default=None, help="seconds (default 60)")
    g.add_argument(
        "--insecure-http",
        action="store_true",
        help="allow credentials over plain http to a non-loopback host",
    )
    o = p.add_argument_group("output")
    o.add_argument("--request-id", help="x-ch-request-id to send (default: a fresh UUID4)")
    o.add_argument("--json", action="store_true", help="print JSON for machines")
    o.add_argument(
        "-v", "--verbose", action="store_true", help="log the exchange to stderr (never secrets)"
    )
    return p


def build_parser() -> argparse.ArgumentParser:
    from faxws._version import __version__

    # allow_abbrev=False: "--pi X" must not be taken for "--pin X", nor the other way round.
    parser = _Parser(
        prog="faxws",
        description="Client, validator and local simulator for the FaxWS v5 SOAP fax service.",
        epilog=EXIT_CODES_HELP + "\n" + SEND_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"faxws {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    common = _client_options()

    send = sub.add_parser(
        "send",
        parents=[common],
        help="send a fax (SendFax)",
        description="Send one or more files to one or more fax numbers.",
        epilog=SEND_EXAMPLE + "\n" + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
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
    send.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="NAME",
        help="recipient name, paired with --to in order",
    )
    send.add_argument(
        "--company",
        action="append",
        default=[],
        metavar="COMPANY",
        help="recipient company, paired with --to in order",
    )
    send.add_argument(
        "--file-type",
        metavar="TYPE",
        help="file type for every FILE: a name (pdf, tiff_g4, ...) or a number; "
        "default: from each file's extension",
    )
    send.set_defaults(run=_cmd_send)

    report = sub.add_parser(
        "report",
        parents=[common],
        help="request a broadcast report (GetFaxBroadcastReport)",
        description="Ask for the broadcast report of a job, optionally for one recipient.",
        epilog=REPORT_EXAMPLE + "\n" + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
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
    report.set_defaults(run=_cmd_report)

    serve = sub.add_parser(
        "serve",
        help="run the local FaxWS simulator",
        description="Run a local stand-in for the FaxWS service on 127.0.0.1.",
        epilog=SERVE_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
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
    serve.add_argument("--json", action="store_true", help="print the start-up line as JSON")
    serve.set_defaults(run=_cmd_serve)

    validate = sub.add_parser(
        "validate",
        help="check SOAP documents against the FaxWS schema",
        description="Check SOAP envelopes or bare payloads against wsdl/FaxWS.xsd.",
        epilog="example:\n  faxws validate request.xml response.xml\n  cat req.xml | faxws "
        "validate - --max-issues 10\n\nexit codes: 0 all valid, 1 any invalid, 2 a file cannot "
        "be read\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="documents; - for stdin")
    validate.add_argument("--json", action="store_true", help="print JSON for machines")
    validate.add_argument(
        "--max-issues",
        type=_count,
        default=100,
        metavar="N",
        help="show at most N issues per file, and how many there were in all (default 100)",
    )
    validate.set_defaults(run=_cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    out = _Outcome(words)
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


def _main(words: list[str], out: _Outcome) -> int:
    parser = build_parser()
    out.ignore_vocabulary(parser)
    try:
        args = parser.parse_args(words)
    except _ParseError as exc:
        return out.usage(_safe_message(exc, parser, words, out.secrets), exc.parser)
    out.prog = f"faxws {args.command}"
    out.as_json = bool(args.json)
    run: Callable[[argparse.Namespace, _Outcome], int] = args.run
    try:
        return run(args, out)
    except _UsageError as exc:
        return out.usage(str(exc))
    except Exception as exc:
        from faxws.errors import FaxWSError

        if isinstance(exc, FaxWSError):
            return out.error(exc)
        return out.internal(exc, verbose=bool(getattr(args, "verbose", False)))


# -- outcomes -------------------------------------------------------------------------------


class _Stream:
    """One of the process's output streams, written so that a write cannot raise: text the
    stream's encoding cannot hold goes out with backslash escapes (UTF-8 output is unchanged),
    and the first failure (a closed pipe, a full disk, a closed descriptor) is kept for
    :meth:`_Outcome.finish` to report; later writes are dropped."""

    def __init__(self, stream: TextIO | None, name: str) -> None:
        self._stream = stream
        self.name = name
        self.failure: Exception | None = None

    def as_text(self) -> TextIO:
        """This stream where a ``TextIO`` is expected (``sys.stdout``, ``print(file=)``)."""
        return cast("TextIO", self)

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._stream, "errors", None) or "strict"

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                if self._stream is None:  # Python found the descriptor closed at start
                    raise OSError(errno.EBADF, os.strerror(errno.EBADF))
                self._stream.write(_encodable(text, self._stream))
            except Exception as exc:
                self._failed(exc)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.failure is None and self._stream is not None:
            try:
                self._stream.flush()
            except Exception as exc:
                self._failed(exc)

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except Exception:
            return False

    def fileno(self) -> int:
        if self._stream is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return self._stream.fileno()

    def _failed(self, exc: Exception) -> None:
        self.failure = exc
        # What the failed write left in the stream's buffer is flushed again at exit; failing
        # then, Python prints "Exception ignored ... BrokenPipeError" and exits 120 whatever
        # main() returned. The descriptor goes to devnull instead, as the Python documentation
        # advises for a closed pipe.
        if self._stream is None:
            return
        try:
            fd = self._stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, fd)
            finally:
                os.close(devnull)
        except Exception:  # noqa: S110 (no descriptor: nothing is flushed at exit either)
            pass


def _encodable(text: str, stream: object) -> str:
    """``text`` as ``stream`` can encode it: unchanged when it can, else with backslash escapes
    for what it cannot hold (a recipient's name on an ASCII terminal)."""
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str):
        return text  # a stream of str (io.StringIO): anything goes
    try:
        text.encode(encoding, getattr(stream, "errors", None) or "strict")
        return text
    except UnicodeEncodeError:
        pass
    except LookupError:  # an encoding Python does not know: only ASCII is safe
        encoding = "ascii"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except (UnicodeError, LookupError):
        return text.encode("ascii", "backslashreplace").decode("ascii")


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = _one_line(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Outcome:
    """How a run ended, said once, by :meth:`finish`: a failure is one line on stderr and, with
    --json, one JSON object on stdout (``{"error": {...}}``, the same keys for every kind); an
    answer is the command's text or JSON on stdout."""

    def __init__(self, words: Sequence[str]) -> None:
        self.prog = "faxws"
        # Decided before parsing, so that a usage error can be answered in JSON too.
        self.as_json = any(w == "--json" or w.startswith("--json=") for w in words)
        self.secrets = _secrets_in(words)
        self.stdout = _Stream(sys.stdout, "standard output")
        self.stderr = _Stream(sys.stderr, "standard error")
        self.request_id: str | None = None
        self.faxing = False  # the command sends a fax
        self.sending = False  # from just before the first byte may leave
        self.answered = ""  # what an answer means ("the fax was sent"), once there is one
        self.reached = False  # the request reached the service, or may have
        self.job_ids: list[str] = []
        self._out: str | None = None  # for stdout
        self._line: str | None = None  # for stderr
        self._summary = ""  # the failure, for a line that must say more

    def ignore_vocabulary(self, parser: argparse.ArgumentParser) -> None:
        """A word the parser knows (``send``, ``--to``) that follows a secret flag was not its
        value (argparse would not take it as one); masking it would garble every message."""
        vocabulary = {o for a in _all_actions(parser) for o in a.option_strings}
        for action in _all_actions(parser):
            if isinstance(action, argparse._SubParsersAction):
                vocabulary.update(action.choices)
        self.secrets -= vocabulary

    def mask(self, text: str) -> str:
        if not self.secrets:
            return text
        from faxws._protocol.redact import redact

        return redact(text, self.secrets)

    def answer(self, meaning: str, result: dict[str, Any], job_ids: Sequence[str]) -> None:
        """The service answered: ``result`` is what stdout gets."""
        text = result.pop("_text")
        self.answered, self.reached, self.job_ids = meaning, True, list(job_ids)
        self._out = _json_text(result) if self.as_json else text

    def fail(self, code: int, line: str, error: dict[str, Any], summary: str = "") -> int:
        self._line, self._summary = line, summary
        self.reached = self.reached or bool(error["maybe_delivered"])
        # Once the service has answered, stdout keeps the answer: it holds the job ids.
        if self.as_json and not self.answered:
            self._out = _json_text({"error": error})
        return code

    def finish(self, code: int) -> int:
        """Write the outcome and choose the exit code: the one place both happen. A second
        Ctrl-C must not cut the outcome short."""
        import signal

        try:
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread: signals go elsewhere
            previous = None
        try:
            return self._finish(code)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _finish(self, code: int) -> int:
        if self._out is not None:
            self.stdout.write(self._out + "\n")
        self.stdout.flush()
        line = self._line
        failed = self.stdout if self.stdout.failure else self.stderr
        if failed.failure is not None:
            unwritten = f"could not be written to {failed.name} ({_reason(failed.failure)})"
            if self.reached:
                code, line = EXIT_MAYBE_SENT, self._maybe_sent(f"its outcome {unwritten}")
            else:
                code = code or EXIT_SERVICE
                line = f"{line}; " if line else f"{self.prog}: "
                line += f"the output {unwritten}"
        elif self.answered and code != EXIT_OK:  # e.g. closing the client failed
            code = EXIT_MAYBE_SENT
            line = self._maybe_sent(f"the command then failed ({self._summary})")
        if line is not None:
            self.stderr.write(line + "\n")
        self.stderr.flush()
        if self.stderr.failure is not None and self.reached:
            code = EXIT_MAYBE_SENT  # the line that said what happened is lost
        return code

    def _maybe_sent(self, problem: str) -> str:
        """One line saying that the request went out (or may have) and what to look up."""
        ids = []
        if self.job_ids:
            ids.append(f"job id{'s' if len(self.job_ids) > 1 else ''} {', '.join(self.job_ids)}")
        if self.request_id:
            ids.append(f"request id {self.request_id}")
        tail = f" ({'; '.join(ids)})" if ids else ""
        if self.answered:
            what = self.answered
            advice = ": do not send it again" if self.faxing else ""
        else:
            maybe = (
                "the fax may have been delivered"
                if self.faxing
                else "the request may have reached the service"
            )
            what = f"{self._summary}: {maybe}"
            advice = ": do not send it again before checking" if self.faxing else ""
        return _one_line(f"{self.prog}: {what}, but {problem}{advice}{tail}")

    def usage(self, message: str, parser: argparse.ArgumentParser | None = None) -> int:
        """``message`` holds the program's own words only (see _safe_message): masking it
        with a one-character PIN would garble it for nothing."""
        head = ""
        prog = self.prog
        if parser is not None:
            head, prog = parser.format_usage(), parser.prog
        return self.fail(
            EXIT_USAGE,
            f"{head}{prog}: error: {message}",
            _error("UsageError", message),
            f"error: {message}",
        )

    def error(self, exc: Any) -> int:
        from faxws.errors import AuthenticationError, BadInputError, TransportError

        code = (
            EXIT_USAGE
            if isinstance(exc, BadInputError)
            else EXIT_AUTH
            if isinstance(exc, AuthenticationError)
            else EXIT_TRANSPORT
            if isinstance(exc, TransportError)
            else EXIT_SERVICE
        )
        error = _error_json(exc)
        if isinstance(exc, BadInputError):
            error["field"] = _flag_of_field(exc.field)
            error["message"] = f"{error['field']}: {_flagged_text(exc.problem)}"
        message = error["message"] = self.mask(error["message"])
        full = str(exc)
        # str() adds the status and request id after the message: kept, never masked.
        tail = full[len(exc.message) :] if full.startswith(exc.message) else ""
        summary = f"{type(exc).__name__}: {_one_line(message)}"
        return self.fail(code, f"{self.prog}: {summary}{tail}", error, summary)

    def interrupted(self) -> int:
        if self.sending and self.faxing:
            message = (
                "interrupted: the fax may have been delivered; do not send it again before checking"
            )
        elif self.sending:
            message = "interrupted: the request may have reached the service"
        else:
            message = "interrupted: nothing was sent"
        tail = f" (request id {self.request_id})" if self.request_id else ""
        return self.fail(
            EXIT_INTERRUPTED,
            f"{self.prog}: {message}{tail}",
            _error(
                "Interrupted",
                message,
                request_id=self.request_id,
                maybe_delivered=self.sending,
            ),
            "interrupted",
        )

    def internal(self, exc: Exception, *, verbose: bool) -> int:
        """A failure no other kind covers: still one line, one JSON object, no secret."""
        if verbose:
            import traceback

            self.stderr.write(self.mask("".join(traceback.format_exception(exc))))
        message = self.mask(str(exc)) or type(exc).__name__
        tail = f" (request id {self.request_id})" if self.request_id else ""
        kind = type(exc).__name__
        summary = f"{kind}: {_one_line(message)}"
        return self.fail(
            EXIT_SERVICE,
            f"{self.prog}: {summary}{tail}",
            _error(kind, message, request_id=self.request_id, maybe_delivered=self.sending),
            summary,
        )


def _secrets_in(words: Sequence[str]) -> set[str]:
    """The values of the secret variables and of every secret flag, wherever it stands."""
    found = {os.environ.get(name, "") for name in SECRET_VARIABLES}
    for i, word in enumerate(words):
        for flag in SECRET_FLAGS:
            if word == flag and i + 1 < len(words):
                found.add(words[i + 1])
            elif word.startswith(flag + "="):
                found.add(word[len(flag) + 1 :])
    return {s for s in found if s}


def _error(
    kind: str, message: str, *, request_id: str | None = None, maybe_delivered: bool = False
) -> dict[str, Any]:
    return {
        "type": kind,
        "message": message,
        "request_id": request_id,
        "status_code": None,
        "maybe_delivered": maybe_delivered,
    }


def _error_json(exc: Any) -> dict[str, Any]:
    data = {
        "type": type(exc).__name__,
        "message": exc.message,
        "request_id": exc.request_id,
        "status_code": exc.status_code,
        "maybe_delivered": exc.maybe_delivered,
    }
    for extra in ("code", "field", "fault_code"):
        if hasattr(exc, extra):
            data[extra] = getattr(exc, extra)
    return data


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def _json_text(data: dict[str, Any]) -> str:
    import json

    return json.dumps(data, indent=2, sort_keys=True)


def _flag_of(name: str) -> str:
    import re

    item = re.fullmatch(r"(recipients|files)\[(\d+)\](?:\.(\w+))?", name)
    if item is None:
        return FLAGS.get(name, name)
    kind, index, attr = item.groups()
    if kind == "files":
        return f"FILE {int(index) + 1}"
    return f"{FLAGS.get(attr or 'fax_number', attr)} (recipient {int(index) + 1})"


def _flag_of_field(field: str) -> str:
    """A BadInputError's field (``base_url``, ``recipients[1].fax_number``, ``token/pin``) as
    the flags the user typed (``--base-url``, ``--to (recipient 2)``, ``--token/--pin``)."""
    return "/".join(_flag_of(part) for part in field.split("/"))


def _flagged_text(text: str) -> str:
    """``text`` with the library's argument names (``allow_insecure_http=True``) as flags.
    Only snake_case words: "token" or "name" in a sentence are English, not arguments."""
    import re

    def flag(match: re.Match[str]) -> str:
        return FLAGS.get(match.group(1), match.group(0))

    return re.sub(r"\b([a-z]+(?:_[a-z]+)+)(?:=True)?(?![\w=])", flag, text)


# -- argparse messages without values -------------------------------------------------------


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    out: list[argparse.Action] = []
    for action in parser._actions:
        out.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _all_actions(sub)
    return out


def _action_name(action: argparse.Action) -> str | None:
    """The name argparse's messages give an argument."""
    if action.option_strings:
        return "/".join(action.option_strings)
    if isinstance(action.metavar, str) and action.metavar != argparse.SUPPRESS:
        return action.metavar
    return action.dest if action.dest != argparse.SUPPRESS else None


def _safe_message(
    error: _ParseError,
    root: argparse.ArgumentParser,
    words: Sequence[str],
    secrets: Collection[str],
) -> str:
    """argparse's message with every value it quotes taken out.

    Any value may be a secret: a token typed before the command becomes an "invalid choice",
    a PIN after a misspelled flag an "unrecognized argument", and masking the known secrets
    cannot know a misplaced one. So only the program's own words are kept: argument names,
    choices, the problem; a message of a form not known here becomes a generic one.
    """
    import re

    message = error.message
    names = {_action_name(a): a for a in _all_actions(root)}
    names.update({_action_name(a): a for a in error.parser._actions})
    for name, action in names.items():
        prefix = f"argument {name}: "
        if name is None or not message.startswith(prefix):
            continue
        problem = message[len(prefix) :]
        if problem in (PORT_PROBLEM, SECONDS_PROBLEM, COUNT_PROBLEM) or re.fullmatch(
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
        return message  # names only
    if message.startswith("unrecognized arguments: "):
        # Misspelled flags are shown (--pn), values never: a PIN after a misspelled --pin
        # lands here. argparse joined the words with spaces; a value with spaces stays hidden.
        shown: list[str] = []
        hidden = False
        for word in message[len("unrecognized arguments: ") :].split(" "):
            option = word.split("=", 1)[0]
            if re.fullmatch(r"--?[a-z][a-z0-9-]{0,40}", option) and option not in secrets:
                if option not in shown:
                    shown.append(option)
                hidden = hidden or option != word
            else:
                hidden = True
        text = f": {', '.join(shown)}" if shown else ""
        return f"unrecognized arguments{text}{' (values are not shown)' if hidden else ''}"
    if message.startswith("ambiguous option: ") and " could match " in message:
        return "ambiguous option: it could match " + message.rpartition(" could match ")[2]
    return "invalid arguments (see --help)"


# -- send / report --------------------------------------------------------------------------


def _setting(args: argparse.Namespace, key: str, use_env: bool = True) -> str | None:
    value = getattr(args, key, None)
    if value is not None:
        return str(value)
    return os.environ.get(ENV[key]) if use_env else None


def _make_client(args: argparse.Namespace) -> FaxClient:
    from faxws.client import FaxClient

    base_url = _setting(args, "base_url")
    user_id = _setting(args, "user_id")
    if not base_url:
        raise _UsageError("no service URL: pass --base-url or set FAXWS_BASE_URL")
    if not user_id:
        raise _UsageError("no user id: pass --user-id or set FAXWS_USER_ID")
    # Flags win: any credential flag means the environment's credentials are ignored.
    from_flags = any(getattr(args, k, None) is not None for k in _CREDENTIAL_KEYS)
    creds = {k: _setting(args, k, use_env=not from_flags) for k in _CREDENTIAL_KEYS}
    oauth_client = any(creds[k] for k in ("token_url", "client_id", "client_secret"))
    modes = [m for m in (creds["token"], creds["pin"]) if m is not None] + (
        ["client"] if oauth_client else []
    )
    if len(modes) != 1:
        raise _UsageError(
            "give exactly one kind of credential: a token, a PIN, or the client credentials "
            "(--token-url, --client-id, --client-secret)"
        )
    token: Any = creds["token"]
    if oauth_client:
        from faxws.oauth import DEFAULT_SCOPE, ClientCredentials

        missing = [k for k in ("token_url", "client_id", "client_secret") if not creds[k]]
        if missing:
            flags = ", ".join("--" + k.replace("_", "-") for k in missing)
            raise _UsageError(f"client credentials need {flags} as well")
        token = ClientCredentials(
            str(creds["token_url"]),
            str(creds["client_id"]),
            str(creds["client_secret"]),
            scope=_setting(args, "scope") or DEFAULT_SCOPE,
            allow_insecure_http=args.insecure_http,
        )
    kwargs: dict[str, Any] = {}
    if args.timeout is not None:
        kwargs["timeout"] = args.timeout
    return FaxClient(
        base_url,
        user_id=user_id,
        token=token,
        pin=creds["pin"],
        allow_insecure_http=args.insecure_http,
        **kwargs,
    )


def _call(
    args: argparse.Namespace,
    out: _Outcome,
    action: Callable[[ExitStack], dict[str, Any]],
    meaning: str,
) -> int:
    """Run a client call and keep its answer (``meaning`` says what it means, "the fax was
    sent") for main() to write; errors are raised on to main(), which reports them."""
    from contextlib import ExitStack

    # Chosen here, not by the client, so that an interrupted call can still name it.
    out.request_id = args.request_id if args.request_id is not None else _new_request_id()
    with ExitStack() as stack:
        if args.verbose:
            import logging

            handler = logging.StreamHandler(out.stderr.as_text())
            handler.setFormatter(logging.Formatter("faxws: %(levelname)s: %(message)s"))
            logger = logging.getLogger("faxws")
            level = logger.level
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
            # main() may run more than once in a process (tests, embedding): leave the
            # logger as it was.
            stack.callback(logger.setLevel, level)
            stack.callback(logger.removeHandler, handler)
        result = action(stack)
        # Kept before the client is closed: whatever fails from here on, the job ids are known.
        out.answer(meaning, result, result.get("job_ids") or [result["job_id"]])
    return EXIT_OK


def _new_request_id() -> str:
    from faxws._protocol.soap import new_request_id

    return new_request_id()


def spool_stdin(source: BinaryIO) -> BinaryIO:
    """``source`` (standard input: usually a pipe, which can be read once and not sought)
    copied into a seekable file, so that the document is streamed while sending like a file on
    disk: up to ``STDIN_IN_MEMORY`` bytes stay in memory, a larger document goes to an
    anonymous temporary file. The caller closes the result."""
    import io
    import shutil
    import tempfile

    head = source.read(STDIN_IN_MEMORY + 1)
    while head and len(head) <= STDIN_IN_MEMORY:  # a raw stream may return less than asked
        more = source.read(STDIN_IN_MEMORY + 1 - len(head))
        if not more:
            break
        head += more
    if len(head) <= STDIN_IN_MEMORY:
        return io.BytesIO(head)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (returned open; the caller closes it)
    try:
        spool.write(head)
        del head
        shutil.copyfileobj(source, spool, 1 << 20)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def _cmd_send(args: argparse.Namespace, out: _Outcome) -> int:
    out.faxing = True

    def action(stack: ExitStack) -> dict[str, Any]:
        from faxws.errors import BadInputError
        from faxws.models import FaxFile, Recipient, file_type_from_name

        if len(args.name) > len(args.to) or len(args.company) > len(args.to):
            raise _UsageError("more --name or --company than --to")
        if args.files.count("-") > 1:
            raise _UsageError("standard input (-) can be given only once")
        if "-" in args.files and args.file_type is None:
            raise _UsageError("reading a document from standard input (-) needs --file-type")
        file_type = None if args.file_type is None else file_type_from_name(args.file_type)
        recipients = []
        for i, number in enumerate(args.to):
            try:
                recipients.append(
                    Recipient(
                        number,
                        name=args.name[i] if i < len(args.name) else "",
                        company=args.company[i] if i < len(args.company) else "",
                    )
                )
            except BadInputError as exc:
                raise BadInputError(f"recipients[{i}].{exc.field}", exc.problem) from None
        paths = [FaxFile.from_path(p, file_type) if p != "-" else None for p in args.files]
        client = stack.enter_context(_make_client(args))
        files = []
        for path in paths:
            if path is None:  # standard input, read last: a usage error must not wait for it
                if sys.stdin is None:
                    raise _UsageError("there is no standard input to read the document from")
                spooled = stack.enter_context(spool_stdin(sys.stdin.buffer))
                if spooled.seek(0, os.SEEK_END) == 0:
                    raise _UsageError("FILE -: standard input is empty")
                spooled.seek(0)
                assert file_type is not None
                path = FaxFile(spooled, file_type)
            files.append(path)
        out.sending = True
        result = client.send_fax(recipients, files, request_id=out.request_id)
        width = max(len(r.fax_number) for r in recipients)
        lines = [f"Sent {len(files)} file(s) to {len(recipients)} recipient(s)."]
        for r, job in zip(recipients, result.job_ids, strict=False):
            lines.append(f"  {r.fax_number:<{width}}  job {job}")
        lines += [
            f"TTFP:        {result.ttfp} s",
            f"Request id:  {result.request_id}",
            f"Activity id: {result.activity_id or '-'}",
        ]
        names = [STDIN_NAME if p == "-" else f.name for p, f in zip(args.files, files, strict=True)]
        return {
            "job_ids": list(result.job_ids),
            "recipients": [r.fax_number for r in recipients],
            "files": [
                {"name": n, "size": f.size, "file_type": f.file_type}
                for n, f in zip(names, files, strict=True)
            ],
            "ttfp": result.ttfp,
            "request_id": result.request_id,
            "activity_id": result.activity_id,
            "execution_time_ms": result.execution_time_ms,
            "_text": "\n".join(lines),
        }

    return _call(args, out, action, "the fax was sent")


def _cmd_report(args: argparse.Namespace, out: _Outcome) -> int:
    out.job_ids = [args.job_id]

    def action(stack: ExitStack) -> dict[str, Any]:
        client = stack.enter_context(_make_client(args))
        out.sending = True
        result = client.get_fax_broadcast_report(
            args.job_id, args.recipient_type, args.address, request_id=out.request_id
        )
        target = (
            f" for {result.recip_address} (type {result.recipient_type})"
            if result.recip_address
            else ""
        )
        text = "\n".join(
            [
                f"Report requested for job {result.job_id}{target}.",
                f"Request id:  {result.request_id}",
                f"Activity id: {result.activity_id or '-'}",
            ]
        )
        return {
            "job_id": result.job_id,
            "recipient_type": result.recipient_type,
            "recip_address": result.recip_address,
            "accepted": True,
            "request_id": result.request_id,
            "activity_id": result.activity_id,
            "execution_time_ms": result.execution_time_ms,
            "_text": text,
        }

    return _call(args, out, action, "the report was requested")


# -- serve ----------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace, out: _Outcome) -> int:
    import signal
    import threading

    from faxws.errors import BadInputError
    from faxws.testing import DEMO_ACCOUNT, Account, FaxWSSimulator

    # The FAXWS_* variables are the client's settings, which users keep exported: they give
    # credentials only to an account named with --user-id, never a reason to refuse to start.
    use_env = args.user_id is not None
    pin = args.pin if args.pin is not None or not use_env else os.environ.get(ENV["pin"])
    secret = args.client_secret
    if secret is None and use_env:
        secret = os.environ.get(ENV["client_secret"])
    if args.user_id is None:
        if args.pin is not None or args.token or args.client_id or args.client_secret:
            raise _UsageError("--pin, --token and --client-* need --user-id")
        account, demo = DEMO_ACCOUNT, True
    else:
        if not (pin or args.token or (args.client_id and secret)):
            raise _UsageError("give the user a --pin, a --token or --client-id/--client-secret")
        account = Account(
            args.user_id,
            pin=pin or None,
            tokens=tuple(args.token),
            client_id=args.client_id,
            client_secret=secret if args.client_id else None,
        )
        demo = False
    try:
        sim = FaxWSSimulator(
            [account],
            host=args.host,
            port=args.port,
            token_lifetime=args.token_lifetime,
            strict=args.strict,
            max_jobs=args.max_jobs,
            db=args.db,
        ).start()
    except BadInputError as exc:
        message = out.mask(str(exc))
        return out.fail(EXIT_USAGE, f"{out.prog}: {message}", _error("BadInputError", message))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        message = out.mask(f"cannot listen on {args.host}:{args.port}: {reason}")
        return out.fail(EXIT_USAGE, f"{out.prog}: {message}", _error("OSError", message))
    if not args.quiet:
        import logging

        handler = logging.StreamHandler(out.stderr.as_text())
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log = logging.getLogger("faxws.simulator")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def shown(value: str | None) -> str | None:
        # The demo account's values are public; a caller's own secrets are not echoed.
        return value if demo or value is None else "<as given>"

    info = {
        "url": sim.url,
        "token_url": sim.token_url,
        "user_id": account.user_id,
        "pin": shown(account.pin),
        "tokens": [shown(t) for t in account.tokens],
        "client_id": account.client_id,
        "client_secret": shown(account.client_secret),
        "strict": sim.strict,
        "inbox_url": _inbox_url(sim),
        "api_token": sim.api_token,
    }
    if args.json:
        import json

        print(json.dumps(info, sort_keys=True), flush=True)
    else:
        print(f"FaxWS simulator listening on {sim.url}", flush=True)
        print(f"  endpoint:       {sim.url}/fax/v5")
        print(f"  token endpoint: {sim.token_url}")
        print(f"  inbox and API:  {info['inbox_url']}")
        if sim.api_token is not None:
            print(f"  API token:      {sim.api_token} (X-FaxWS-Token header or ?token=)")
        print(f"  mode:           {'strict' if sim.strict else 'lenient'}")
        print(f"  user id:        {info['user_id']}")
        if info["pin"]:
            print(f"  PIN:            {info['pin']}")
        for t in account.tokens:
            print(f"  bearer token:   {shown(t)}")
        if account.client_id:
            print(f"  client id:      {account.client_id}")
            print(f"  client secret:  {info['client_secret']}")
        print("Press Ctrl-C to stop.", flush=True)
    try:
        while not stop.wait(0.2):
            pass
    finally:
        sim.stop()
    print(
        f"stopped; received {len(sim.requests)} request(s), {len(sim.jobs)} job(s)", file=sys.stderr
    )
    return EXIT_OK


def _inbox_url(sim: Any) -> str:
    """The inbox's address; with the token when the simulator requires one."""
    from urllib.parse import quote

    token = sim.api_token
    return f"{sim.url}/" if token is None else f"{sim.url}/?token={quote(token, safe='')}"


# -- validate -------------------------------------------------------------------------------


def _cmd_validate(args: argparse.Namespace, out: _Outcome) -> int:
    from faxws.validation import validate_documents

    return validate_documents(
        args.files,
        as_json=args.json,
        max_issues=args.max_issues,
        out=out.stdout.as_text(),
        err=out.stderr.as_text(),
    )
