"""The ``faxws`` command line: send, report, serve, validate.

Exit codes: 0 success, 1 service error or fault, 2 bad usage or bad input,
3 authentication, 4 transport. Errors go to stderr in one line, with the request id.
Secrets (PIN, token, client secret) are never printed, also not with ``--verbose``.

Only the standard library is imported at start, so ``faxws --help`` stays fast; each command
imports what it needs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from faxws.client import FaxClient

EXIT_OK, EXIT_SERVICE, EXIT_USAGE, EXIT_AUTH, EXIT_TRANSPORT = 0, 1, 2, 3, 4

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

EXIT_CODES_HELP = """\
exit codes:
  0  success
  1  service error or SOAP fault (the service answered and refused)
  2  bad usage or bad input (nothing was sent)
  3  authentication failed
  4  transport failure (connection, time-out)
"""

SEND_EXAMPLE = """\
example:
  export FAXWS_BASE_URL=https://fax.example.com FAXWS_USER_ID=mbx1234567890
  export FAXWS_TOKEN=...            # or FAXWS_PIN=..., or the FAXWS_CLIENT_* settings
  faxws send --to "+1 555 0100" --name Bob --to "+1 555 0101" contract.pdf
"""

REPORT_EXAMPLE = """\
example:
  faxws report SIM00000001 --recipient-type 1 --address ops@example.com
"""

SERVE_EXAMPLE = """\
example:
  faxws serve --port 8080
  faxws serve --port 0 --user-id mbx1 --pin 1234     # port 0: any free port

It prints its URL and the accounts it accepts, then runs until interrupted (Ctrl-C).
"""


class _UsageError(Exception):
    """Bad usage found after argparse (conflicting credentials, missing settings)."""


def _client_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
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
    g.add_argument("--timeout", type=float, default=None, help="seconds (default 60)")
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

    parser = argparse.ArgumentParser(
        prog="faxws",
        description="Client, validator and local simulator for the FaxWS v5 SOAP fax service.",
        epilog=EXIT_CODES_HELP + "\n" + SEND_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    )
    send.add_argument("files", nargs="+", metavar="FILE", help="documents to send")
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
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    serve.add_argument("--user-id", help="accept this user instead of the demo account")
    serve.add_argument("--pin", help="that user's PIN [FAXWS_PIN]")
    serve.add_argument(
        "--token",
        action="append",
        default=[],
        help="a bearer token to accept for that user (repeatable)",
    )
    serve.add_argument("--client-id", help="OAuth client id for that user's token endpoint")
    serve.add_argument("--client-secret", help="OAuth client secret [FAXWS_CLIENT_SECRET]")
    serve.add_argument(
        "--token-lifetime",
        type=float,
        default=3600.0,
        help="seconds an issued token stays valid (default 3600)",
    )
    serve.add_argument("--json", action="store_true", help="print the start-up line as JSON")
    serve.set_defaults(run=_cmd_serve)

    validate = sub.add_parser(
        "validate",
        help="check SOAP documents against the FaxWS schema",
        description="Check SOAP envelopes or bare payloads against wsdl/FaxWS.xsd.",
        epilog="example:\n  faxws validate request.xml response.xml\n  cat req.xml | faxws "
        "validate -\n\nexit codes: 0 all valid, 1 any invalid, 2 a file cannot be read\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="documents; - for stdin")
    validate.add_argument("--json", action="store_true", help="print JSON for machines")
    validate.set_defaults(run=_cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except _UsageError as exc:
        parser.exit(EXIT_USAGE, f"faxws {args.command}: error: {exc}\n")
    except KeyboardInterrupt:
        return 130


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


def _with_errors(args: argparse.Namespace, action: Callable[[], dict[str, Any]]) -> int:
    from faxws.errors import (
        AuthenticationError,
        BadInputError,
        FaxWSError,
        TransportError,
    )

    if args.verbose:
        import logging

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("faxws: %(levelname)s: %(message)s"))
        logger = logging.getLogger("faxws")
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        out = action()
    except FaxWSError as exc:
        code = (
            EXIT_USAGE
            if isinstance(exc, BadInputError)
            else EXIT_AUTH
            if isinstance(exc, AuthenticationError)
            else EXIT_TRANSPORT
            if isinstance(exc, TransportError)
            else EXIT_SERVICE
        )
        print(f"faxws {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        if args.json:
            _print_json(sys.stdout, {"error": _error_json(exc)})
        return code
    if args.json:
        _print_json(sys.stdout, out)
    else:
        print(out.pop("_text"))
    return EXIT_OK


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


def _print_json(stream: TextIO, data: dict[str, Any]) -> None:
    import json

    data.pop("_text", None)
    stream.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _cmd_send(args: argparse.Namespace) -> int:
    def action() -> dict[str, Any]:
        from faxws.models import FaxFile, Recipient, file_type_from_name

        if len(args.name) > len(args.to) or len(args.company) > len(args.to):
            raise _UsageError("more --name or --company than --to")
        file_type = None if args.file_type is None else file_type_from_name(args.file_type)
        recipients = [
            Recipient(
                number,
                name=args.name[i] if i < len(args.name) else "",
                company=args.company[i] if i < len(args.company) else "",
            )
            for i, number in enumerate(args.to)
        ]
        files = [FaxFile.from_path(path, file_type) for path in args.files]
        with _make_client(args) as client:
            result = client.send_fax(recipients, files, request_id=args.request_id)
        width = max(len(r.fax_number) for r in recipients)
        lines = [f"Sent {len(files)} file(s) to {len(recipients)} recipient(s)."]
        for r, job in zip(recipients, result.job_ids, strict=False):
            lines.append(f"  {r.fax_number:<{width}}  job {job}")
        lines += [
            f"TTFP:        {result.ttfp} s",
            f"Request id:  {result.request_id}",
            f"Activity id: {result.activity_id or '-'}",
        ]
        return {
            "job_ids": list(result.job_ids),
            "recipients": [r.fax_number for r in recipients],
            "files": [{"name": f.name, "size": f.size, "file_type": f.file_type} for f in files],
            "ttfp": result.ttfp,
            "request_id": result.request_id,
            "activity_id": result.activity_id,
            "execution_time_ms": result.execution_time_ms,
            "_text": "\n".join(lines),
        }

    return _with_errors(args, action)


def _cmd_report(args: argparse.Namespace) -> int:
    def action() -> dict[str, Any]:
        with _make_client(args) as client:
            result = client.get_fax_broadcast_report(
                args.job_id, args.recipient_type, args.address, request_id=args.request_id
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

    return _with_errors(args, action)


# -- serve ----------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from faxws.testing import DEMO_ACCOUNT, Account, FaxWSSimulator

    pin = args.pin if args.pin is not None else os.environ.get("FAXWS_PIN")
    secret = args.client_secret or os.environ.get("FAXWS_CLIENT_SECRET")
    if args.user_id is None:
        if pin or args.token or args.client_id or secret:
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
            client_secret=secret,
        )
        demo = False
    try:
        sim = FaxWSSimulator(
            [account], host=args.host, port=args.port, token_lifetime=args.token_lifetime
        ).start()
    except OSError as exc:
        print(
            f"faxws serve: cannot listen on {args.host}:{args.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return EXIT_USAGE
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
    }
    if args.json:
        import json

        print(json.dumps(info, sort_keys=True), flush=True)
    else:
        print(f"FaxWS simulator listening on {sim.url}", flush=True)
        print(f"  endpoint:       {sim.url}/fax/v5")
        print(f"  token endpoint: {sim.token_url}")
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


# -- validate -------------------------------------------------------------------------------


def _cmd_validate(args: argparse.Namespace) -> int:
    from faxws.validation import validate_documents

    return validate_documents(args.files, as_json=args.json, out=sys.stdout, err=sys.stderr)
