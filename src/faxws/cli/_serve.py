"""``faxws serve``: the local simulator, until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from typing import Any

from faxws.cli._client import setting
from faxws.cli._output import EXIT_OK, EXIT_USAGE, Outcome, UsageError, json_text, one_line

SUMMARY = "run the local FaxWS simulator"
DESCRIPTION = "Run a local stand-in for the FaxWS service on 127.0.0.1."
EPILOG = """\
example:
  faxws serve --port 8080
  faxws serve --port 0 --user-id mbx1 --pin 1234     # port 0: any free port
  faxws serve --db inbox.sqlite --strict              # keep jobs; check the wire form
  faxws serve --time-scale 1000                       # a fax's life in milliseconds
  faxws serve --port 8080 --ready-file ready.json &   # in a script: wait until it listens,
  SERVER=$!                                           # or give up if it could not start
  until [ -s ready.json ]; do kill -0 "$SERVER" || exit 1; sleep 0.1; done

It prints its URL, its inbox (open it in a browser; the REST API is under /api/, described by
/api/openapi.json) and the accounts it accepts, logs a line per request, and runs until
interrupted (Ctrl-C or SIGTERM).

readiness: once it listens, and not before, --ready-file PATH is written (whole, at once:
a file beside it linked to PATH) with the JSON object that --json prints as its first
line (url, token_url, inbox_url, ...), and removed when it stops; with --json, that first
line on standard output is written at the same moment. Wait for either, then send. A ready
file left by a server that was killed is replaced; anything else at PATH (a link, a folder,
another file, the ready file of a server still running) is refused and left alone.
"""


def run(args: argparse.Namespace, out: Outcome) -> int:
    from faxws.testing import DEMO_ACCOUNT, Account

    # The FAXWS_* variables are the client's settings, which users keep exported: they give
    # credentials only to an account named with --user-id, never a reason to refuse to start.
    pin, secret = (setting(args, key, args.user_id is not None) for key in ("pin", "client_secret"))
    if args.user_id is None:
        if args.pin is not None or args.token or args.client_id or args.client_secret:
            raise UsageError("--pin, --token and --client-* need --user-id")
        account = DEMO_ACCOUNT
    else:
        if not (pin or args.token or (args.client_id and secret)):
            raise UsageError("give the user a --pin, a --token or --client-id/--client-secret")
        account = Account(
            args.user_id,
            pin=pin or None,
            tokens=tuple(args.token),
            client_id=args.client_id,
            client_secret=secret if args.client_id else None,
        )
    # Before it listens: whatever is wrong with the path is a usage error, and a file left by
    # a server that was killed must not say "ready" before this one listens.
    ready = None if args.ready_file is None else _ReadyFile(args.ready_file)
    try:
        return _serve(args, out, account, ready)
    finally:
        if ready is not None:  # the server did not start: the file made for it goes
            ready.remove()


def _serve(args: argparse.Namespace, out: Outcome, account: Any, ready: _ReadyFile | None) -> int:
    import signal
    import threading

    from faxws.errors import BadInputError
    from faxws.testing import DEMO_ACCOUNT, FaxWSSimulator

    scale = {} if args.time_scale is None else {"time_scale": args.time_scale}
    try:
        sim = FaxWSSimulator(
            [account],
            host=args.host,
            port=args.port,
            token_lifetime=args.token_lifetime,
            strict=args.strict,
            max_jobs=args.max_jobs,
            db=args.db,
            **scale,
        ).start()
    except BadInputError as exc:
        return out.failed(EXIT_USAGE, "BadInputError", out.mask(str(exc)))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        message = f"cannot listen on {args.host}:{args.port}: {reason}"
        if exc.errno == errno.EADDRINUSE:
            message += "; choose another --port, or --port 0 for any free one"
        return out.failed(EXIT_USAGE, "OSError", out.mask(message))
    if not args.quiet:
        import logging

        handler = logging.StreamHandler(out.stderr.as_text())
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log = logging.getLogger("faxws.simulator")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    stop = threading.Event()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    demo = account is DEMO_ACCOUNT
    try:
        if ready is not None:
            ready.publish(_started(sim, account, demo, as_json=True))
        print(_started(sim, account, demo, as_json=args.json), flush=True)
        while not stop.wait(0.2):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        message = f"--ready-file: cannot write {args.ready_file}: {reason}"
        return out.failed(EXIT_USAGE, "OSError", out.mask(message))
    finally:
        if ready is not None:  # first: a script that still sees it may send to the server
            ready.remove()
        sim.stop()
    print(
        f"stopped; received {len(sim.requests)} request(s), {len(sim.jobs)} job(s)", file=sys.stderr
    )
    return EXIT_OK


class _ReadyFile:
    """The file that says the server listens. Claimed before the server starts: a symbolic
    link, a folder or a file that is no ready file at ``path`` is refused, never followed,
    replaced or removed; so is the ready file of a server still running (it holds a lock on
    it); one left by a server that was killed is removed. :meth:`publish` writes the text to
    a file made beside ``path`` and links it there, so that a reader sees all of it or
    nothing; :meth:`remove` removes it if it is still the one written."""

    def __init__(self, path: str) -> None:
        import tempfile

        self.given = path
        self.path = os.path.abspath(path)
        folder, name = os.path.split(self.path)
        if not os.path.isdir(folder):
            raise UsageError("--ready-file: its folder does not exist")
        self._clear_stale()
        try:
            fd, self._temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            raise UsageError(f"--ready-file: cannot write in its folder: {_reason(exc)}") from None
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        _lock(fd)  # until it is removed: another server with the same path sees it is in use
        self._text = ""
        self._written: os.stat_result | None = None

    def _clear_stale(self) -> None:
        import json
        import stat

        try:
            found = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise UsageError(f"--ready-file: cannot read {self.given}: {_reason(exc)}") from None
        if stat.S_ISLNK(found.st_mode):
            raise UsageError(
                f"--ready-file: {self.given} is a symbolic link, which is neither followed nor "
                "removed; give the path of a file"
            )
        if not stat.S_ISREG(found.st_mode):
            what = "a folder" if stat.S_ISDIR(found.st_mode) else "not a regular file"
            raise UsageError(f"--ready-file: {self.given} is {what}")
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise UsageError(f"--ready-file: cannot read {self.given}: {_reason(exc)}") from None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(1 << 16)
            try:
                info = json.loads(data.decode("utf-8")) if data.strip() else {"url": ""}
            except (ValueError, UnicodeError):
                info = None
            if not isinstance(info, dict) or not isinstance(info.get("url"), str):
                raise UsageError(
                    f"--ready-file: {self.given} exists and is no ready file; it is not "
                    "replaced: remove it, or give another path"
                )
            if not _lock(fd, shared=True):
                raise UsageError(
                    f"--ready-file: {self.given} is the ready file of a server that is running "
                    f"({one_line(info['url'])}); stop it, or give another path"
                )
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile: nothing to do
                now = os.lstat(self.path)
                if (now.st_dev, now.st_ino) == (found.st_dev, found.st_ino):
                    os.unlink(self.path)

    def publish(self, text: str) -> None:
        """Write ``text`` and put it at the path, which no other file took meanwhile."""
        self._text = text + "\n"
        self._file.write(self._text)
        self._file.flush()
        self._written = os.fstat(self._file.fileno())
        try:
            os.link(self._temporary, self.path)  # unlike a rename, never replaces a file
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links
            os.replace(self._temporary, self.path)
        else:
            os.unlink(self._temporary)

    def remove(self) -> None:
        """Remove the file if it is still the one written (or the one made, unpublished), then
        let go of its lock."""
        if self._file.closed:  # removed already
            return
        try:
            with contextlib.suppress(OSError, UnicodeError):
                if self._written is None:
                    os.unlink(self._temporary)
                    return
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._temporary)  # left if linking it failed
                now = os.stat(self.path)
                if (now.st_dev, now.st_ino) != (self._written.st_dev, self._written.st_ino):
                    return
                with open(self.path, encoding="utf-8") as fh:  # an inode number may be reused
                    if fh.read() != self._text:
                        return
                os.unlink(self.path)
        finally:
            self._file.close()


def _lock(fd: int, *, shared: bool = False) -> bool:
    """Lock the file of ``fd`` without waiting; False when another process holds it. Where
    there are no such locks (Windows, some network file systems) it is taken as free."""
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _started(sim: Any, account: Any, demo: bool, *, as_json: bool) -> str:
    """What the simulator says when it starts: where it listens and whom it accepts."""

    from urllib.parse import quote

    token = sim.api_token  # the inbox's address has it when the simulator requires one

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
        "time_scale": sim.time_scale,
        "inbox_url": f"{sim.url}/" + ("" if token is None else f"?token={quote(token, safe='')}"),
        "api_token": sim.api_token,
    }
    if as_json:
        return json_text(info, indent=None)
    lines = [
        f"FaxWS simulator listening on {sim.url}",
        f"  endpoint:       {sim.url}/fax/v5",
        f"  token endpoint: {sim.token_url}",
        f"  inbox and API:  {info['inbox_url']}",
    ]
    if sim.api_token is not None:
        lines.append(f"  API token:      {sim.api_token} (X-FaxWS-Token header or ?token=)")
    lines.append(f"  mode:           {'strict' if sim.strict else 'lenient'}")
    lines.append(f"  time scale:     {sim.time_scale:g} simulated seconds per second")
    lines.append(f"  user id:        {info['user_id']}")
    if info["pin"]:
        lines.append(f"  PIN:            {info['pin']}")
    lines += [f"  bearer token:   {shown(t)}" for t in account.tokens]
    if account.client_id:
        lines.append(f"  client id:      {account.client_id}")
        lines.append(f"  client secret:  {info['client_secret']}")
    lines.append("Press Ctrl-C to stop.")
    return "\n".join(lines)
