"""What the command writes and how: exit codes, the one outcome of a run (text or ``--json``,
the description of each failure), and streams that a write can never make raise."""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    import argparse

EXIT_OK, EXIT_SERVICE, EXIT_USAGE, EXIT_AUTH, EXIT_TRANSPORT = 0, 1, 2, 3, 4
#: The request reached the service, or may have, and then the command failed (its output could
#: not be written): a script that sends again on other failures must not send this one again.
EXIT_MAYBE_SENT = 5
#: ``send --wait``: the fax was sent and every job ended, but not every one was delivered.
EXIT_FAX_FAILED = 6
#: ``send --wait``: the fax was sent, and waiting ended before every job had; ``batch send``:
#: stopped (Ctrl-C) with rows not yet sent or not yet ended.
EXIT_WAIT_TIMEOUT = 7
#: ``batch send``: a row needs review (whether its fax was sent cannot be told, or it never
#: ended): nothing is done with it automatically.
EXIT_NEEDS_REVIEW = 8
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

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
  6    send --wait: the fax was sent, but a job failed (each job's final line says how);
       batch send: a fax of the batch failed (faxws batch export shows each row)
  7    send --wait: the fax was sent, but a job had not ended when waiting timed out
       (some may have failed too); check later with faxws status JOB_ID ...;
       batch send: stopped (Ctrl-C) with rows left: the same command goes on
  8    batch send: a fax needs review: whether it was sent cannot be told, or it never
       ended (faxws batch review lists them; it is never sent again by itself);
       7 goes before 8, and 8 before 6
  130  interrupted (Ctrl-C); a fax may have been delivered, see the request id;
       batch send: a second Ctrl-C; the sends in flight are looked up by the next run
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

_CHECK_FIRST = "do not send it again before checking"


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


class Outcome:
    """How a run ended, said once, by :meth:`finish`: a failure is one line on stderr and, with
    --json, one JSON object on stdout (``{"error": {...}}``, the same keys for every kind); an
    answer is the command's text or JSON on stdout."""

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
        self.answered = ""  # what an answer means ("the fax was sent"), once there is one
        self.reached = False  # the request reached the service, or may have
        self.job_ids: list[str] = []
        self.reference_id: str | None = None  # what an uncertain send can be looked up by
        self._concluded = False  # the command chose its code after the service answered
        self._out: str | None = None  # for stdout
        self._line: str | None = None  # for stderr
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

    def fail(self, code: int, line: str, error: dict[str, Any], summary: str = "") -> int:
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
            if self.reached:
                code, line = EXIT_MAYBE_SENT, self._maybe_sent(f"its outcome {unwritten}")
            else:
                code = code or EXIT_SERVICE
                line = f"{line}; " if line else f"{self.prog}: "
                line += f"the output {unwritten}"
        elif self.answered and code != EXIT_OK and not self._concluded:
            # e.g. closing the client failed
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
        if self.reference_id and not self.answered:
            ids.append(f"reference id {self.reference_id}")
        tail = f" ({'; '.join(ids)})" if ids else ""
        if self.answered:
            what = self.answered
            advice = ": do not send it again" if self.faxing else ""
        else:
            what = f"{self._summary}: {self._maybe()}"
            advice = f": {_CHECK_FIRST}" if self.faxing else ""
        return one_line(f"{self.prog}: {what}, but {problem}{advice}{tail}")

    def _maybe(self) -> str:
        if self.faxing:
            return "the fax may have been delivered"
        return "the request may have reached the service"

    def usage(self, message: str, parser: argparse.ArgumentParser | None = None) -> int:
        """``message`` holds the program's own words only (see cli._safe_message): masking
        it with a one-character PIN would garble it for nothing."""
        head, prog = ("", self.prog) if parser is None else (parser.format_usage(), parser.prog)
        line = f"{head}{prog}: error: {message}"
        return self.fail(EXIT_USAGE, line, _error("UsageError", message), f"error: {message}")

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
        error = _error(type(exc).__name__, exc.message)
        for key in ("request_id", "status_code", "maybe_delivered", "code", "field", "fault_code"):
            if hasattr(exc, key):
                error[key] = getattr(exc, key)
        if getattr(exc, "reference_id", None) is not None:
            error["reference_id"] = exc.reference_id
        if isinstance(exc, BadInputError):
            error["field"] = "/".join(_flag_of(part) for part in exc.field.split("/"))
            error["message"] = f"{error['field']}: {_flagged_text(exc.problem)}"
        message = error["message"] = self.mask(error["message"])
        full = str(exc)
        # str() adds the status and request id after the message: kept, never masked.
        tail = full[len(exc.message) :] if full.startswith(exc.message) else ""
        summary = f"{type(exc).__name__}: {one_line(message)}"
        if error["maybe_delivered"] and error.get("reference_id") is not None:
            error["check"] = check_reference(error["reference_id"])
            tail += f"; {self._look_up(error['reference_id'])}"
        return self.fail(code, f"{self.prog}: {summary}{tail}", error, summary)

    def _look_up(self, reference_id: str) -> str:
        """Where an uncertain send says how to find out whether the service took it."""
        return f"reference id {reference_id}: check with {check_reference(reference_id)}"

    def interrupted(self) -> int:
        message = "interrupted: nothing was sent"
        if self.answered:  # the answer (the job ids) stays on stdout
            line = f"{self.prog}: interrupted: {self.answered}"
            if self.faxing and self.job_ids:
                line += f"; check it later with: {check_later(self.job_ids)}"
            return self.concluded(EXIT_INTERRUPTED, line)
        if self.sending:
            advice = f"; {_CHECK_FIRST}" if self.faxing else ""
            if self.faxing and self.reference_id is not None:
                advice += f"; {self._look_up(self.reference_id)}"
            message = f"interrupted: {self._maybe()}{advice}"
        return self.failed(EXIT_INTERRUPTED, "Interrupted", message, summary="interrupted")

    def internal(self, exc: Exception, *, verbose: bool) -> int:
        """A failure no other kind covers: still one line, one JSON object, no secret."""
        if verbose:
            import traceback

            self.stderr.write(self.mask("".join(traceback.format_exception(exc))))
        message = self.mask(str(exc)) or type(exc).__name__
        summary = f"{type(exc).__name__}: {one_line(message)}"
        return self.failed(EXIT_SERVICE, type(exc).__name__, message, summary, summary)

    def failed(
        self, code: int, kind: str, message: str, said: str | None = None, summary: str = ""
    ) -> int:
        """A failure the command found: stderr says ``said`` (or ``message``) and any request id."""
        tail = f" (request id {self.request_id})" if self.request_id else ""
        error = _error(kind, message, request_id=self.request_id, maybe_delivered=self.sending)
        return self.fail(code, f"{self.prog}: {said or message}{tail}", error, summary)


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


def _flag_of(name: str) -> str:
    """A part of a BadInputError's field (``base_url``, ``recipients[1].fax_number``, ``token``
    of ``token/pin``) as the flag the user typed (``--base-url``, ``--to (recipient 2)``)."""
    item = re.fullmatch(r"(recipients|files|job_ids)\[(\d+)\](?:\.(\w+))?", name)
    if item is None:
        return FLAGS.get(name, name)
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
