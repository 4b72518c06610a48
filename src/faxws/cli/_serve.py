"""``faxws serve``: the local simulator, until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from typing import Any

from faxws.cli._client import setting
from faxws.cli._output import EXIT_OK, EXIT_USAGE, Outcome, UsageError, json_text

SUMMARY = "run the local FaxWS simulator"
DESCRIPTION = "Run a local stand-in for the FaxWS service on 127.0.0.1."
EPILOG = """\
example:
  faxws serve --port 8080
  faxws serve --port 0 --user-id mbx1 --pin 1234     # port 0: any free port
  faxws serve --db inbox.sqlite --strict              # keep jobs; check the wire form
  faxws serve --time-scale 1000                       # a fax's life in milliseconds
  faxws serve --port 8080 --ready-file ready.json &   # in a script: wait until it listens
  until [ -s ready.json ]; do sleep 0.1; done

It prints its URL, its inbox (open it in a browser; the REST API is under /api/) and the
accounts it accepts, logs a line per request, and runs until interrupted (Ctrl-C or
SIGTERM).

readiness: once it listens, and not before, --ready-file PATH is written (whole, at once:
a file beside it renamed to PATH) with the JSON object that --json prints as its first
line (url, token_url, inbox_url, ...), and removed when it stops; with --json, that first
line on standard output is written at the same moment. Wait for either, then send.
"""


def run(args: argparse.Namespace, out: Outcome) -> int:
    import signal
    import threading

    from faxws.errors import BadInputError
    from faxws.testing import DEMO_ACCOUNT, Account, FaxWSSimulator

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
    if args.ready_file is not None:
        folder = os.path.dirname(os.path.abspath(args.ready_file))
        if not os.path.isdir(folder):
            raise UsageError("--ready-file: its folder does not exist")
        if os.path.islink(args.ready_file) or os.path.isfile(args.ready_file):
            # Left by a server that could not remove it (killed): it must not say "ready"
            # before this one listens.
            os.unlink(args.ready_file)
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
    ready = None
    try:
        if args.ready_file is not None:
            ready = _ReadyFile(args.ready_file, _started(sim, account, demo, as_json=True))
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
    """The file that says the server listens: ``text`` written to a temporary file in
    ``path``'s folder, then renamed to ``path``, so that a reader sees all of it or nothing;
    removed by :meth:`remove` if it is still the one written."""

    def __init__(self, path: str, text: str) -> None:
        import tempfile

        self.path = os.path.abspath(path)
        self._text = text + "\n"
        folder, name = os.path.split(self.path)
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self._text)
            self._written = os.stat(temporary)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def remove(self) -> None:
        with contextlib.suppress(OSError, UnicodeError):
            now = os.stat(self.path)
            if (now.st_dev, now.st_ino) != (self._written.st_dev, self._written.st_ino):
                return
            with open(self.path, encoding="utf-8") as fh:  # an inode number may be reused
                if fh.read() != self._text:
                    return
            os.unlink(self.path)


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
