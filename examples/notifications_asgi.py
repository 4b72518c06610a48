"""Receiving FaxWS completion pushes in a plain ASGI application (no framework).

    FAXWS_NOTIFY_USER=notify FAXWS_NOTIFY_PASSWORD=... uvicorn notifications_asgi:app

Give each job the same user and password as NotifyAuthUser and NotifyAuthPassword, and serve
the app over HTTPS. It answers as ``faxws.notifications.wsgi_app`` does: 401 before reading the
body when the push lacks those HTTP Basic credentials, 413 as soon as the body passes
``max_bytes`` (the rest is not read), 400 when it cannot be read, 500 when ``on_final`` raised
(the service pushes again later), 204 otherwise, after awaiting ``on_final`` with a final
event. A sender that goes away mid-body gets no answer, and its cut body is not read.

An asyncio server serves each connection as a task of its own, so a silent connection holds
back no other; but the app cannot bound how long a request takes to arrive. uvicorn closes an
idle kept-alive connection after ``--timeout-keep-alive`` seconds (5 by default); check how your
server (or the proxy in front of it) bounds a request whose headers or body trickle in.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from faxws.notifications import (
    DEFAULT_MAX_BYTES,
    DeliveryNotification,
    NotificationAuthError,
    NotificationError,
    check_credentials,
    parse_notification,
)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Message, Receive, Send], Awaitable[None]]


class _DisconnectedError(Exception):
    """The sender disconnected before the end of its body."""


async def _read_body(receive: Receive, max_bytes: int) -> bytes | None:
    """The request's body, or None as soon as it is over ``max_bytes``."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _DisconnectedError
        body += message.get("body", b"")
        if len(body) > max_bytes:
            return None
        if not message.get("more_body", False):
            return bytes(body)


def make_app(
    credentials: tuple[str, str],
    on_final: Callable[[DeliveryNotification], Awaitable[None]],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> App:
    """An ASGI app awaiting ``on_final`` with each final event of an authenticated push."""

    async def app(scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan events to handle: servers carry on without them
        status, headers, text = 204, [], ""
        # ASGI gives header names and values as bytes; HTTP headers are Latin-1.
        pairs = [
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        ]
        try:
            if scope["method"] != "POST":
                status, headers = 405, [(b"allow", b"POST")]
            else:
                check_credentials(pairs, credentials)
                body = await _read_body(receive, max_bytes)
                if body is None:
                    status = 413
                else:
                    event = parse_notification(
                        body, pairs, credentials=credentials, max_bytes=max_bytes
                    )
                    if event.final:
                        try:
                            await on_final(event)
                        except Exception:  # any failure: the service pushes again
                            status, text = 500, "the push could not be handled"
                            headers = [(b"content-type", b"text/plain; charset=utf-8")]
        except NotificationAuthError:
            status, headers = 401, [(b"www-authenticate", b'Basic realm="faxws"')]
        except NotificationError as exc:
            status, text = 400, str(exc)
            headers = [(b"content-type", b"text/plain; charset=utf-8")]
        except _DisconnectedError:
            return
        data = text.encode("utf-8")
        if status != 204:  # a 204 has no body, nor any length
            headers.append((b"content-length", str(len(data)).encode("ascii")))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app


async def _show(event: DeliveryNotification) -> None:
    outcome = event.status.name.lower() if event.status else event.status_id
    print(f"job {event.job_id} (reference {event.reference_id!r}): {outcome}", flush=True)


if "FAXWS_NOTIFY_USER" in os.environ:  # as `uvicorn notifications_asgi:app` imports it
    app = make_app((os.environ["FAXWS_NOTIFY_USER"], os.environ["FAXWS_NOTIFY_PASSWORD"]), _show)
