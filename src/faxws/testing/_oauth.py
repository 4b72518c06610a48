"""The simulator's OAuth 2.0 token endpoint: RFC 6749 section 4.4, client credentials."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from faxws.testing._answers import RejectError

if TYPE_CHECKING:
    from faxws.testing._http import Handler

__all__ = ["MAX_FORM", "TOKEN_PATH", "send_json", "token_endpoint"]

TOKEN_PATH = "/connect/token"  # noqa: S105 - a path
#: Largest form the token endpoint reads.
MAX_FORM = 64 * 1024


def send_json(
    handler: Handler, status: int, data: dict[str, Any], extra: dict[str, str] | None = None
) -> None:
    headers = {"Content-Type": "application/json", **(extra or {})}
    handler.send(status, headers, json.dumps(data).encode())


def token_endpoint(handler: Handler) -> None:
    """Answer one request to :data:`TOKEN_PATH`."""
    sim = handler.server.sim
    state = sim._state
    with state.lock:
        state.token_requests += 1
    try:
        received = handler.receive(parse=False, limit=MAX_FORM, whole=True)
    except RejectError as reject:
        send_json(handler, reject.status, {"error": "invalid_request"})
        return
    if handler.command != "POST":
        send_json(handler, 405, {"error": "invalid_request"}, {"Allow": "POST"})
        return
    if not received.complete:
        handler.close_connection = True
        handler.log_request("no answer: the request ended early")
        return
    content_type = handler.fields.get("content-type", "")
    if not content_type.startswith("application/x-www-form-urlencoded"):
        send_json(handler, 400, {"error": "invalid_request"})
        return
    form = {k: v[0] for k, v in parse_qs(received.body.decode("utf-8", "replace")).items()}
    client_id, client_secret = form.get("client_id", ""), form.get("client_secret", "")
    basic = handler.fields.get("authorization", "")
    if basic.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(basic[6:].strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            decoded = ":"
        client_id, _, client_secret = decoded.partition(":")
    if form.get("grant_type") != "client_credentials":
        send_json(handler, 400, {"error": "unsupported_grant_type"})
        return
    account = state.client(client_id, client_secret)
    if account is None:
        send_json(handler, 401, {"error": "invalid_client"}, {"WWW-Authenticate": "Basic"})
        return
    token = sim.issue_token(account.user_id)
    send_json(
        handler,
        200,
        {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": int(sim.token_lifetime),
            "scope": form.get("scope", ""),
        },
        {"Cache-Control": "no-store"},
    )
