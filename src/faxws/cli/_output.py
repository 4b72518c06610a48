"""What the command writes and how: exit codes, the one outcome of a run (text or ``--json``,
the description of each failure), and streams that a write can never make raise."""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO, cast

if TYPE_CHECKING:
    import argparse

EXIT_OK = 0
#: The service answered and refused (a service error, a soap:Client fault, an HTTP error such
#: as 404), or the command failed unexpectedly before sending: nothing was done.
EXIT_SERVICE = 1
EXIT_USAGE = 2  # bad usage or bad input: nothing was sent
EXIT_AUTH = 3  # the credentials were refused: nothing was sent
#: The service could not be reached (refused, DNS, TLS, connect time-out): nothing was sent,
#: trying again is safe.
EXIT_TRANSPORT = 4
#: The request reached the service, or may have, and what came of it is unknown (an HTTP 5xx,
#: a soap:Server fault, a time-out or a lost connection after sending, an unreadable answer,
#: an outcome that could not be written): a script that sends again on other failures must
#: not send this one again before checking.
EXIT_MAYBE_SENT = 5
#: ``send --wait``: the fax was sent and every job ended, but not every one was delivered.
EXIT_FAX_FAILED = 6
#: ``send --wait``: the fax was sent, and waiting ended (timed out, or a poll failed) before
#: every job had; ``batch send``: stopped (Ctrl-C) with rows not yet sent or not yet ended.
EXIT_WAIT_TIMEOUT = 7
#: ``batch send``: a row needs review (whether its fax was sent cannot be told, or it never
#: ended): nothing is done with it automatically.
EXIT_NEEDS_REVIEW = 8
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    the service answered and refused (a service error, a soap:Client fault, an
       HTTP error such as 404), or an unexpected failure before sending: nothing was done
  2    bad usage or bad input: nothing was sent
  3    authentication failed: nothing was sent
  4    the service could not be reached (connection refused, DNS, TLS, connect
       time-out): nothing was sent; trying again is safe
  5    the request reached the service, or may have, and what came of it is unknown
       (an HTTP 5xx without a SOAP answer, a soap:Server fault, a time-out or a lost
       connection after sending, an unreadable answer, output that could not be
       written): do not send it again before checking; stderr says how (--json:
       "next_step", and "check": the command that tells)
  6    send --wait: the fax was sent, but a job failed (each job's final line says how);
       batch send: a fax of the batch failed (faxws batch export shows each row)
  7    send --wait: the fax was sent, but a job had not ended when waiting timed out or
       failed (some may have failed too); check later with faxws status JOB_ID ...;
       batch send: stopped (Ctrl-C) with rows left: the same command goes on
  8    batch send: a fax needs review: whether it was sent cannot be told, or it never
       ended (faxws batch review lists them; it is never sent again by itself);
       7 goes before 8, and 8 before 6
  130  interrupted (Ctrl-C); stderr says whether the fax may have been delivered
       (--json: "maybe_delivered") and how to check; batch send: a second Ctrl-C; the
       sends in flight are looked up by the next run
A failure is one line on stderr: what failed (its HTTP status, request id, job ids,
reference id); what became of the request; what to do next. With --json, stdout says the
same as {"error": {...}}: type, message, request_id, status_code, maybe_delivered,
exit_code, outcome, next_step, and check when a command tells what became of it.
"""

# Spelled as their flags: base_url is --base-url.
_AS_NAMED = ["base_url", "user_id", "token", "pin", "token_url", "client_id", "client_secret"]
_AS_NAMED += ["scope", "timeout", "request_id", "name", "company", "file_type", "recipient_type"]
_AS_NAMED += ["start_at", "expires_at", "sender_name", "sender_company", "sender_phone"]
_AS_NAMED += ["sender_fax", "sender_csid", "cover_name", "cover_subject", "cover_text"]
_AS_NAMED += ["resolution"]
#: Library argument names as the command's flags, for messages: the user typed the flags.
FLAGS = {name: "--" + name.replace("_", "-") for name in _AS_NAMED}
FLAGS.update(allow_insecure_http="--insecure-http", fax_number="--to", recip_address="--address")
FLAGS.update(data="FILE", path="FILE", job_id="JOB_ID")
FLAGS.update(reference_id="--reference", job_ids="JOB_ID")
FLAGS.update({"notify.destination": "--notify-url", "notify.user": "--notify-user"})
FLAGS["notify.password"] = "FAXWS_NOTIFY_PASSWORD"
# batch send's
FLAGS.update(workers="--workers", rate="--rate", max_concurrent="--max-concurrent")
FLAGS.update(lease_seconds="--lease")


class UsageError(Exception):
    """Bad usage found after argparse (conflicting credentials, missing settings)."""


class _Stream:
    """One of the process's output streams, where a write cannot raise: what its encoding cannot
    hold goes out with backslash escapes, and the first failure (a closed pipe, a full disk, a
    closed descriptor) is kept for :meth:`Outcome.finish` to report; later writes are dropped."""

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
        # What the failed write left buffered is flushed again at exit, where failing prints
        # "Exception ignored ... BrokenPipeError" and exits 120 whatever main() returned: the
        # descriptor goes to devnull, as the Python documentation advises for a closed pipe.
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
    text = one_line(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class Failure:
    """One description of how a command failed, which both outputs are rendered from: the
    line on stderr (:meth:`text`) and the ``{"error": ...}`` object of --json (:meth:`data`).
    Whatever one says (maybe delivered, request id, what to do next), the other says too."""

    code: int  #: the exit code, by meaning (EXIT_CODES_HELP)
    kind: str  #: "type" in JSON: the error's class, "UsageError", "Interrupted"
    message: str  #: what failed, secrets masked
    maybe_delivered: bool = False
    request_id: str | None = None
    status_code: int | None = None
    job_ids: Sequence[str] = ()
    reference_id: str | None = None
    #: What became of the request: "the fax may have been delivered", "nothing was sent".
    outcome: str | None = None
    #: What to do now, in words; with ``check`` in it when a command can tell.
    next_step: str | None = None
    check: str | None = None  #: the command that tells what became of the request
    details: dict[str, Any] = field(default_factory=dict)  #: more JSON keys (fault_code...)
    headline: str | None = None  #: the text's words for what failed (default: kind: message)
    usage: str = ""  #: a usage error's usage lines, before the line

    def text(self, prog: str) -> str:
        """``prog: what failed (ids); outcome; next step``, on one line."""
        ids = []
        if self.job_ids:
            s = "s" if len(self.job_ids) > 1 else ""
            ids.append(f"job id{s} {', '.join(self.job_ids)}")
        summary = self.summary
        status = f"HTTP {self.status_code}"
        # Each fact once: "HTTP 503 without a SOAP answer (request id ...)".
        said = self.status_code is None or re.search(rf"\b{status}\b", summary)
        call = [] if said else [status]
        call += [] if self.request_id is None else [f"request id {self.request_id}"]
        if call:
            ids.append(", ".join(call))
        if self.reference_id is not None:
            ids.append(f"reference id {self.reference_id}")
        line = f"{prog}: {summary}" + (f" ({'; '.join(ids)})" if ids else "")
        line += "".join(f"; {part}" for part in (self.outcome, self.next_step) if part)
        return self.usage + one_line(line)

    @property
    def summary(self) -> str:
        """What failed, without the ids, outcome and next step."""
        return self.headline if self.headline is not None else f"{self.kind}: {self.message}"

    def data(self) -> dict[str, Any]:
        """The ``"error"`` object of --json."""
        error: dict[str, Any] = {
            "type": self.kind,
            "message": self.message,
            "request_id": self.request_id,
            "status_code": self.status_code,
            "maybe_delivered": self.maybe_delivered,
            "exit_code": self.code,
            "outcome": self.outcome,
            "next_step": self.next_step,
        }
        if self.job_ids:
            error["job_ids"] = list(self.job_ids)
        if self.reference_id is not None:
            error["reference_id"] = self.reference_id
        if self.check is not None:
            error["check"] = self.check
        error.update(self.details)
        return error


@dataclass
class Usage:
    """A usage error: ``message`` in the program's own words, after ``usage`` (the command's
    usage lines, when argparse refused the arguments)."""

    message: str
    usage: str = ""


class Doing(Protocol):
    """What a command was doing when it failed, as :class:`Outcome` keeps it."""

    prog: str
    faxing: bool
    sending: bool
    #: Whether a byte of a request was written, when the client can tell (see ``sending``).
    wrote: Callable[[], bool] | None
    #: The settings that came from a variable, by library name: ``{"base_url": "FAXWS_..."}``.
    from_variables: dict[str, str]
    #: The text values given to each flag: ``{"--to": ["+1 555 0100"]}``.
    typed: dict[str, list[str]]
    request_id: str | None
    job_ids: list[str]
    reference_id: str | None


#: The exit code of each client error (faxws.errors) when the request was not delivered; one
#: that may have been is EXIT_MAYBE_SENT, whatever its kind.
CODES = {
    "BadInputError": EXIT_USAGE,
    "DocumentError": EXIT_USAGE,  # the caller's document could not be read
    "AuthenticationError": EXIT_AUTH,
    "ConnectError": EXIT_TRANSPORT,  # not delivered: the service was not reached
    "RequestTimeoutError": EXIT_TRANSPORT,  # the connect time-out
    "TransportError": EXIT_TRANSPORT,
    "ServiceError": EXIT_SERVICE,
    "SoapFaultError": EXIT_SERVICE,  # soap:Client
    "HTTPStatusError": EXIT_SERVICE,  # 3xx, 4xx
    "ProtocolError": EXIT_SERVICE,  # the token endpoint's answer, unreadable
    "WaitTimeoutError": EXIT_WAIT_TIMEOUT,  # sent; waiting ended first
    "FaxWSError": EXIT_SERVICE,
}
_NOT_SENT = "nothing was sent"
_FAX_NOT_SENT = "the fax was not sent"
_MAYBE_FAX = "the fax may have been delivered"
_MAYBE_REACHED = "the request may have reached the service"
_CHECK_FIRST = "do not send it again before checking"
#: What the client's messages end with that a failure's outcome says: not said twice.
_SAID_BY_OUTCOME = ("; the request may have been delivered", "; nothing was sent")
#: What an uncertain request of a command that sends no fax means, and what to do next
#: (``{check}``: the command that tells).
_UNCERTAIN = {
    "faxws status": (_MAYBE_REACHED, "a status query changes nothing: asking again is safe"),
    "faxws cancel": (
        "the cancel may have reached the service",
        "see whether the job ended with: {check}",
    ),
    "faxws report": (_MAYBE_REACHED, "asking again may request the report twice"),
}


def describe(problem: BaseException | Usage, doing: Doing, mask: Callable[[str], str]) -> Failure:
    """The one description of a failure: a client error (each FaxWSError, and whether it may
    have been delivered), a usage error, an interruption (Ctrl-C) or an unexpected error.
    Every failure's line on stderr and its ``{"error": ...}`` come from here."""
    if isinstance(problem, Usage):
        message = problem.message  # the program's own words only (cli._safe_message)
        headline = f"error: {message}"
        return Failure(EXIT_USAGE, "UsageError", message, headline=headline, usage=problem.usage)
    from faxws.errors import FaxWSError

    if isinstance(problem, FaxWSError):
        return _client_error(problem, doing, mask)
    sending = doing.sending
    if isinstance(problem, KeyboardInterrupt):
        # Stopped while connecting, or while a token was fetched, nothing was sent. Any other
        # failure while sending is taken as one that may have been delivered: nothing says.
        sending = sending and (doing.wrote is None or doing.wrote())
        failure = Failure(EXIT_INTERRUPTED, "Interrupted", "interrupted", headline="interrupted")
    else:
        message = one_line(mask(str(problem))) or type(problem).__name__
        code = EXIT_MAYBE_SENT if sending else EXIT_SERVICE
        failure = Failure(code, type(problem).__name__, message)
    failure.request_id = doing.request_id
    failure.maybe_delivered = sending
    if sending:
        reference = doing.reference_id if doing.faxing else None
        failure.reference_id = reference
        failure.outcome, failure.next_step, failure.check = _uncertain(doing, reference)
    else:
        failure.outcome = _FAX_NOT_SENT if doing.faxing else _NOT_SENT
    return failure


def _client_error(exc: Any, doing: Doing, mask: Callable[[str], str]) -> Failure:
    import faxws.errors

    maybe = bool(exc.maybe_delivered)
    code = EXIT_MAYBE_SENT
    if not maybe:  # by the nearest class the table names
        code = next(CODES[c.__name__] for c in type(exc).__mro__ if c.__name__ in CODES)
    message = exc.message
    details = {k: getattr(exc, k) for k in ("code", "field", "fault_code") if hasattr(exc, k)}
    if isinstance(exc, faxws.errors.BadInputError):
        named = {**FLAGS, **doing.from_variables}  # what the user gave: a flag or a variable
        details["field"] = "/".join(_flag_of(part, named) for part in exc.field.split("/"))
        problem = _flagged_text(exc.problem)
        flag = details["field"].split(" ", 1)[0]
        for value in doing.typed.get(flag, []):
            # the flag's own values, as the library quotes them: never echoed
            problem = problem.replace(repr(value), "'***'")
        message = f"{details['field']}: {problem}"
    failure = Failure(
        code,
        type(exc).__name__,
        mask(message),
        maybe_delivered=maybe,
        request_id=exc.request_id,
        status_code=exc.status_code,
        reference_id=exc.reference_id,
        details=details,
    )
    if maybe:
        failure.outcome, failure.next_step, failure.check = _uncertain(doing, exc.reference_id)
    elif code == EXIT_TRANSPORT:
        failure.outcome, failure.next_step = _NOT_SENT, "trying again is safe"
    elif code in (EXIT_SERVICE, EXIT_AUTH) and doing.faxing:
        failure.outcome = _FAX_NOT_SENT
    if failure.outcome is not None:
        for said in _SAID_BY_OUTCOME:  # the outcome says it, in the command's words
            failure.message = failure.message.removesuffix(said)
    return failure


def _uncertain(doing: Doing, reference: str | None) -> tuple[str, str | None, str | None]:
    """What became of a request that may have reached the service, what to do next, and the
    command that tells."""
    if doing.faxing:
        if reference is not None:
            check = check_reference(reference)
            return _MAYBE_FAX, f"{_CHECK_FIRST} with: {check}", check
        return _MAYBE_FAX, f"{_CHECK_FIRST}: ask the service about its request id", None
    outcome, step = _UNCERTAIN.get(doing.prog, (_MAYBE_REACHED, None))
    if step is None or "{check}" not in step:
        return outcome, step, None
    if not doing.job_ids:
        return outcome, None, None
    check = check_later(doing.job_ids)
    return outcome, step.format(check=check), check


class Outcome:
    """How a run ended, said once, by :meth:`finish`: a failure is one line on stderr and, with
    --json, one JSON object on stdout (``{"error": {...}}``), both from one :class:`Failure`;
    an answer is the command's text or JSON on stdout."""

    def __init__(self, words: Sequence[str], secrets: set[str]) -> None:
        self.prog = "faxws"
        # Decided before parsing, so that a usage error can be answered in JSON too.
        self.as_json = any(w == "--json" or w.startswith("--json=") for w in words)
        self.secrets = secrets  # values masked in every message
        self.stdout = _Stream(sys.stdout, "standard output")
        self.stderr = _Stream(sys.stderr, "standard error")
        self.request_id: str | None = None
        self.faxing = False  # the command sends a fax
        self.sending = False  # from just before the first byte may leave
        self.wrote: Callable[[], bool] | None = None  # whether a byte has left (see Doing)
        self.from_variables: dict[str, str] = {}  # see Doing
        self.typed: dict[str, list[str]] = {}  # see Doing
        self.answered = ""  # what an answer means ("the fax was sent"), once there is one
        self.reached = False  # the request reached the service, or may have
        self.job_ids: list[str] = []
        self.reference_id: str | None = None  # what an uncertain send can be looked up by
        self._concluded = False  # the command chose its code after the service answered
        self._out: str | None = None  # for stdout
        self._line: str | None = None  # for stderr
        self._failure: Failure | None = None  # the failure the line says
        self._summary = ""  # the failure, for a line that must say more

    def mask(self, text: str) -> str:
        if not self.secrets:
            return text
        from faxws._protocol.redact import redact

        return redact(text, self.secrets)

    def answer(self, meaning: str, data: dict[str, Any], text: str, job_ids: Sequence[str]) -> None:
        """The service answered: ``data`` is what stdout gets with --json, ``text`` without."""
        self.answered, self.reached, self.job_ids = meaning, True, list(job_ids)
        self._out = json_text(data) if self.as_json else text

    def show(self) -> None:
        """Write the text answered so far now, before a long wait (JSON stays one object, at
        the end)."""
        if self._out is not None and not self.as_json:
            self.stdout.write(self._out + "\n")
            self.stdout.flush()
            self._out = None

    def concluded(self, code: int, line: str | None) -> int:
        """The service answered and the command then found ``code`` (a fax that failed, a
        wait cut short), said on stderr by ``line``: not a failure of the command itself."""
        self._line, self._concluded = line, True
        return code

    def failure(self, failure: Failure) -> int:
        """The run failed as ``failure`` says: its line for stderr, its JSON for stdout."""
        self._failure = failure
        return self.fail(failure.code, failure.text(self.prog), failure.data(), failure.summary)

    def fail(self, code: int, line: str, error: dict[str, Any], summary: str = "") -> int:
        """A failure whose line and JSON the caller wrote (a manifest's problems, each on a
        line of its own); any other goes through :meth:`failure`."""
        self._line, self._summary = line, summary
        self.reached = self.reached or bool(error["maybe_delivered"])
        # Once the service has answered, stdout keeps the answer: it holds the job ids.
        if self.as_json and not self.answered:
            self._out = json_text({"error": error})
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
            if self.answered:
                code, line = EXIT_MAYBE_SENT, self._after_answer(f"its outcome {unwritten}")
            elif self.reached:
                code, line = EXIT_MAYBE_SENT, self._unwritten(f"its outcome {unwritten}")
            else:
                code = code or EXIT_SERVICE
                line = f"{line}; " if line else f"{self.prog}: "
                line += f"the output {unwritten}"
        elif self.answered and code != EXIT_OK and not self._concluded:
            # e.g. closing the client failed
            code = EXIT_MAYBE_SENT
            line = self._after_answer(f"the command then failed ({self._summary})")
        if line is not None:
            self.stderr.write(line + "\n")
        self.stderr.flush()
        if self.stderr.failure is not None and self.reached:
            code = EXIT_MAYBE_SENT  # the line that said what happened is lost
        return code

    def _after_answer(self, problem: str) -> str:
        """The line of a command that the service answered, and that then failed: the answer
        (the job ids) says what to look up."""
        step = None
        if self.faxing:
            step = "do not send it again"
            if self.job_ids:
                step += f"; check it with: {check_later(self.job_ids)}"
        headline = f"{self.answered}, but {problem}"
        failure = Failure(EXIT_MAYBE_SENT, "", "", headline=headline, next_step=step)
        failure.request_id, failure.job_ids = self.request_id, self.job_ids
        return failure.text(self.prog)

    def _unwritten(self, problem: str) -> str:
        """The line of a failure that may have been delivered, when its JSON could not be
        written to stdout: the line says it all."""
        from dataclasses import replace

        failure = self._failure
        if failure is None:  # a failure its caller wrote
            return one_line(f"{self.prog}: {self._summary}: {_MAYBE_REACHED}, but {problem}")
        outcome = failure.outcome or _MAYBE_REACHED
        return replace(failure, outcome=f"{outcome}, but {problem}", usage="").text(self.prog)

    def usage(self, message: str, parser: argparse.ArgumentParser | None = None) -> int:
        """``message`` holds the program's own words only (see cli._safe_message): masking
        it with a one-character PIN would garble it for nothing. With ``parser`` (the command
        whose arguments were refused), its usage goes first."""
        usage = ""
        if parser is not None:
            self.prog, usage = parser.prog, parser.format_usage()
        return self.failure(describe(Usage(message, usage), self, self.mask))

    def error(self, exc: Any) -> int:
        """The run ended with a client error (a FaxWSError)."""
        return self.failure(describe(exc, self, self.mask))

    def interrupted(self) -> int:
        if self.answered:  # the answer (the job ids) stays on stdout
            line = f"{self.prog}: interrupted: {self.answered}"
            if self.faxing and self.job_ids:
                line += f"; check it later with: {check_later(self.job_ids)}"
            return self.concluded(EXIT_INTERRUPTED, line)
        return self.failure(describe(KeyboardInterrupt(), self, self.mask))

    def internal(self, exc: Exception, *, verbose: bool) -> int:
        """A failure no other kind covers: still one line, one JSON object, no secret."""
        if verbose:
            import traceback

            self.stderr.write(self.mask("".join(traceback.format_exception(exc))))
        return self.failure(describe(exc, self, self.mask))

    def failed(
        self, code: int, kind: str, message: str, said: str | None = None, summary: str = ""
    ) -> int:
        """A failure the command found, in its own words: stderr says ``said`` (or
        ``message``) and any request id; it may have been delivered if it was sending."""
        failure = Failure(code, kind, message, headline=said or message)
        failure.maybe_delivered, failure.request_id = self.sending, self.request_id
        return self.failure(failure)


def check_later(job_ids: Sequence[str]) -> str:
    """The command that shows how the jobs are doing."""
    import shlex

    return "faxws status " + " ".join(shlex.quote(j) for j in dict.fromkeys(job_ids))


def check_reference(reference_id: str) -> str:
    """The command that looks up a send by its reference id."""
    import shlex

    return f"faxws status --reference {shlex.quote(reference_id)}"


def one_line(text: str) -> str:
    return " ".join(text.splitlines())


def json_text(data: object, *, indent: int | None = 2, sort_keys: bool = True) -> str:
    import json  # only --json needs it; kept off the import path

    return json.dumps(data, indent=indent, sort_keys=sort_keys)


def _flag_of(name: str, named: dict[str, str] = FLAGS) -> str:
    """A part of a BadInputError's field (``base_url``, ``recipients[1].fax_number``, ``token``
    of ``token/pin``) as the flag the user typed (``--base-url``, ``--to (recipient 2)``)."""
    item = re.fullmatch(r"(recipients|files|job_ids)\[(\d+)\](?:\.(\w+))?", name)
    if item is None:
        return named.get(name, name)
    kind, index, attr = item.groups()
    if kind == "files":
        return f"FILE {int(index) + 1}"
    if kind == "job_ids":
        return f"JOB_ID {int(index) + 1}"
    return f"{FLAGS.get(attr or 'fax_number', attr)} (recipient {int(index) + 1})"


def _flagged_text(text: str) -> str:
    """``text`` with the library's argument names (``allow_insecure_http=True``) as flags.
    Only snake_case words: "token" or "name" in a sentence are English, not arguments."""

    def flag(match: re.Match[str]) -> str:
        return FLAGS.get(match.group(1), match.group(0))

    return re.sub(r"\b([a-z]+(?:_[a-z]+)+)(?:=True)?(?![\w=])", flag, text)
