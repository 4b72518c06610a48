"""The commands that call the service (send, status, cancel, report): their connection and
credential options, read from the flags or the FAXWS_* variables, the client built from them,
and the call."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from faxws.cli._output import EXIT_OK, FLAGS, Outcome, UsageError

if TYPE_CHECKING:
    from faxws.client import FaxClient

#: Each setting's help; ``{}`` is its variable. A flag given wins over its variable.
SETTINGS = {
    "base_url": "service root, e.g. https://fax.example.com [{}]",
    "user_id": "account, e.g. mbx1234567890 [{}]",
    "token": "OAuth 2.0 access token [{}]",
    "pin": "PIN or password; prefer the variable [{}]",
    "token_url": "OAuth 2.0 token endpoint [{}]",
    "client_id": "OAuth 2.0 client id [{}]",
    "client_secret": "OAuth 2.0 client secret [{}]",
    "scope": "OAuth 2.0 scope [{}] (default: 'FaxWS offline_access')",
}
ENV = {key: "FAXWS_" + key.upper() for key in SETTINGS}
#: The password of a send's completion notification: a variable only, never a flag.
NOTIFY_PASSWORD_ENV = "FAXWS_NOTIFY_PASSWORD"  # noqa: S105 (a variable's name)
_CREDENTIAL_KEYS = ("token", "pin", "token_url", "client_id", "client_secret")
_OAUTH_CLIENT_KEYS = ("token_url", "client_id", "client_secret")
_SECRET_KEYS = ("token", "pin", "client_secret")


def secrets_in(words: Sequence[str]) -> set[str]:
    """The values of the secret variables and of every secret flag, wherever it stands. A
    blank value (``FAXWS_PIN=" "``) is no credential and hides nothing: masking its spaces
    would garble every message."""
    found = {os.environ.get(ENV[key], "") for key in _SECRET_KEYS}
    found.add(os.environ.get(NOTIFY_PASSWORD_ENV, ""))
    for i, word in enumerate(words):
        for flag in (FLAGS[key] for key in _SECRET_KEYS):
            if word == flag and i + 1 < len(words):
                found.add(words[i + 1])
            elif word.startswith(flag + "="):
                found.add(word[len(flag) + 1 :])
    return {s for s in found if s.strip()}


def setting(args: argparse.Namespace, key: str, use_env: bool = True) -> str | None:
    """The setting's flag, else (with ``use_env``) its FAXWS_* variable; a variable set empty
    or blank (``FAXWS_PIN=``, ``FAXWS_PIN=" "``) is no setting, as if unset."""
    value = getattr(args, key, None)
    if value is not None:
        return str(value)
    value = os.environ.get(ENV[key]) if use_env else None
    return value if value is not None and value.strip() else None


def from_variables(args: argparse.Namespace) -> dict[str, str]:
    """The settings ``make_client`` takes from their variables, by name, each with its
    variable: a message about such a value names the variable, since no flag was given."""
    if not hasattr(args, "base_url"):  # a command that calls no service
        return {}
    credentials_given = any(getattr(args, k, None) is not None for k in _CREDENTIAL_KEYS)
    return {
        key: ENV[key]
        for key in SETTINGS
        if getattr(args, key, None) is None
        and not (credentials_given and key in _CREDENTIAL_KEYS)
        and setting(args, key) is not None
    }


def _empty(*keys: str) -> str:
    """Which of these settings' variables are set but empty or blank, said for a message."""
    values = {ENV[k]: os.environ.get(ENV[k]) for k in keys}
    empty = [name for name, value in values.items() if value == ""]
    blank = [name for name, value in values.items() if value and not value.strip()]
    said = []
    if empty:
        said.append(f"{' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} set but empty")
    if blank:
        verb = "is" if len(blank) == 1 else "are"
        said.append(f"{' and '.join(blank)} {verb} set to spaces only")
    if not said:
        return ""
    counts = "an empty variable" if not blank else "an empty or blank variable"
    return f" ({' and '.join(said)}, and {counts} counts as unset)"


def make_client(args: argparse.Namespace) -> FaxClient:
    """The client the options describe: the one place a command builds one."""
    from faxws._http.options import ClientOptions
    from faxws.client import FaxClient

    base_url = setting(args, "base_url")
    user_id = setting(args, "user_id")
    if not base_url:
        empty = _empty("base_url")
        raise UsageError(f"no service URL: pass --base-url or set FAXWS_BASE_URL{empty}")
    if not user_id:
        raise UsageError(f"no user id: pass --user-id or set FAXWS_USER_ID{_empty('user_id')}")
    # Flags win: any credential flag means the environment's credentials are ignored.
    from_flags = any(getattr(args, k, None) is not None for k in _CREDENTIAL_KEYS)
    creds = {k: setting(args, k, use_env=not from_flags) for k in _CREDENTIAL_KEYS}
    oauth_client = any(creds[k] for k in _OAUTH_CLIENT_KEYS)
    kinds = (creds["token"] is not None) + (creds["pin"] is not None) + oauth_client
    if kinds != 1:
        empty = "" if from_flags or kinds else _empty(*_CREDENTIAL_KEYS)
        raise UsageError(
            "give exactly one kind of credential: a token, a PIN, or the client credentials "
            f"(--token-url, --client-id, --client-secret){empty}"
        )
    token: Any = creds["token"]
    if oauth_client:
        from faxws.oauth import DEFAULT_SCOPE, ClientCredentials

        missing = [k for k in _OAUTH_CLIENT_KEYS if not creds[k]]
        if missing:
            empty = "" if from_flags else _empty(*missing)
            raise UsageError(
                f"client credentials need {', '.join(FLAGS[k] for k in missing)} as well{empty}"
            )
        token = ClientCredentials(
            str(creds["token_url"]),
            str(creds["client_id"]),
            str(creds["client_secret"]),
            scope=setting(args, "scope") or DEFAULT_SCOPE,
            allow_insecure_http=args.insecure_http,
        )
    timeout = {} if args.timeout is None else {"timeout": args.timeout}
    options = ClientOptions(allow_insecure_http=args.insecure_http, **timeout)
    client = FaxClient(base_url, user_id=user_id, token=token, pin=creds["pin"], options=options)
    client._caller.transport = _Watched(client._caller.transport)
    return client


def sending(out: Outcome, client: FaxClient) -> None:
    """The command is about to call the service: from here a failure may mean the request
    was delivered, which, when Ctrl-C stops it, is whether a byte of it was written."""
    out.sending = True
    transport = client._caller.transport
    out.wrote = transport.written if isinstance(transport, _Watched) else None


class _Watched:
    """The client's transport, watched for what an interrupted call cannot say: whether any
    byte of a request was written (a Ctrl-C while connecting, or while a token is fetched,
    sent nothing). Only that is kept, not the requests."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._last: Any = None
        self._written = False

    def post(self, request: Any) -> Any:
        self._last = request
        try:
            return self._transport.post(request)
        except BaseException as exc:
            if not isinstance(exc, Exception) and _while_writing(exc):
                self._written = True
            raise
        finally:
            self._written = self._written or bool(request.written)

    def close(self) -> None:
        self._transport.close()

    def written(self) -> bool:
        return self._written or bool(getattr(self._last, "written", False))


def _while_writing(interrupt: BaseException) -> bool:
    """Whether ``interrupt`` (Ctrl-C) was raised while the transport wrote to its socket: just
    after a write returned, before the transport could record it, bytes have left although
    the request does not say so."""
    import traceback

    return any(
        frame.f_code.co_name == "_write"
        and frame.f_globals.get("__name__") == "faxws._http.sync_transport"
        for frame, _ in traceback.walk_tb(interrupt.__traceback__)
    )


#: A call's result, what --json prints of it and the lines of text; the request and activity
#: ids are added to both.
Answer = tuple[Any, dict[str, Any], list[str]]
#: What follows an answer while the client is still open (``send --wait``): given the answer's
#: JSON data, it returns the exit code.
Then = Callable[[dict[str, Any]], int]


def call(
    args: argparse.Namespace,
    out: Outcome,
    action: Callable[[ExitStack], Answer],
    meaning: str,
    then: Then | None = None,
) -> int:
    """Run a client call and keep its answer (``meaning`` says what it means, "the fax was
    sent") for main() to write; errors are raised on to main(), which reports them. ``then``
    runs after the answer is kept, before the client is closed."""
    # Chosen here, not by the client, so that an interrupted call can still name it.
    from faxws._protocol.soap import new_request_id

    out.request_id = new_request_id() if args.request_id is None else args.request_id
    with ExitStack() as stack:
        if args.verbose:
            import logging

            handler = logging.StreamHandler(out.stderr.as_text())
            handler.setFormatter(logging.Formatter("faxws: %(levelname)s: %(message)s"))
            logger = logging.getLogger("faxws")
            level = logger.level
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
            # main() may run again in this process (tests, embedding): the logger is put back.
            stack.callback(logger.setLevel, level)
            stack.callback(logger.removeHandler, handler)
        result, data, lines = action(stack)
        data.update(request_id=result.request_id, activity_id=result.activity_id)
        data["execution_time_ms"] = getattr(result, "execution_time_ms", None)
        lines += [
            f"Request id:  {result.request_id or '-'}",
            f"Activity id: {result.activity_id or '-'}",
        ]
        job_ids = data.get("job_ids") or ([data["job_id"]] if "job_id" in data else [])
        # Kept before the client is closed: whatever fails from here on, the job ids are known.
        out.answer(meaning, data, "\n".join(lines), job_ids)
        if then is not None:
            return then(data)
    return EXIT_OK
