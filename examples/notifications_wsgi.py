"""Receiving FaxWS completion pushes in a WSGI application (standard library only).

    FAXWS_NOTIFY_USER=notify FAXWS_NOTIFY_PASSWORD=... python examples/notifications_wsgi.py 8080

Give each job the same user and password as NotifyAuthUser and NotifyAuthPassword, and put the
app behind HTTPS. It answers:

- 401 when the push does not carry them as HTTP Basic credentials, before reading the body;
- 411 without a Content-Length, 413 when that is over ``max_bytes`` (the body is not read);
- 400 when the body cannot be read (the text names the field and the problem);
- 204 otherwise, after handing a final event (the job succeeded or failed) to ``on_final``;
  an event of a job still in progress is acknowledged and dropped.

Served as a script, each connection has a thread of its own (so a connection that sends nothing
holds back no other) and is closed once it has been silent for ``IDLE_TIMEOUT`` seconds.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from faxws.notifications import (
    DEFAULT_MAX_BYTES,
    DeliveryNotification,
    NotificationAuthError,
    NotificationError,
    check_credentials,
    parse_notification,
)

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
App = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

#: Seconds a connection may stay silent (before or within its request) before it is closed.
IDLE_TIMEOUT = 10.0


def make_app(
    credentials: tuple[str, str],
    on_final: Callable[[DeliveryNotification], None],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> App:
    """A WSGI app passing each final event of an authenticated push to ``on_final``."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        def answer(status: str, *headers: tuple[str, str], text: str = "") -> list[bytes]:
            body = text.encode("utf-8")
            if not status.startswith("204"):  # a 204 has no body, nor any length
                headers += (("Content-Length", str(len(body))),)
            start_response(status, list(headers))
            return [body]

        if environ["REQUEST_METHOD"] != "POST":
            return answer("405 Method Not Allowed", ("Allow", "POST"))
        # WSGI gives the request's headers as HTTP_* keys, and Content-Type apart.
        headers = [(k[5:].replace("_", "-"), v) for k, v in environ.items() if k[:5] == "HTTP_"]
        if environ.get("CONTENT_TYPE"):
            headers.append(("Content-Type", environ["CONTENT_TYPE"]))
        try:
            check_credentials(headers, credentials)
        except NotificationAuthError:
            return answer("401 Unauthorized", ("WWW-Authenticate", 'Basic realm="faxws"'))
        length = environ.get("CONTENT_LENGTH") or ""
        if not (length.isascii() and length.isdigit()):
            return answer("411 Length Required")
        if int(length) > max_bytes:
            return answer("413 Content Too Large")
        body = environ["wsgi.input"].read(int(length))
        try:
            if len(body) < int(length):  # the sender went away: a cut form may still parse
                raise NotificationError("body", "is shorter than its Content-Length")
            event = parse_notification(body, headers, credentials=credentials, max_bytes=max_bytes)
        except NotificationError as exc:
            return answer(
                "400 Bad Request", ("Content-Type", "text/plain; charset=utf-8"), text=str(exc)
            )
        if event.final:
            on_final(event)
        return answer("204 No Content")

    return app


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """wsgiref's server with a thread per connection: a slow or silent sender blocks its own
    thread only. The threads are daemons, so stopping the server never waits for one."""

    daemon_threads = True


class TimedHandler(WSGIRequestHandler):
    """wsgiref's handler with a time-out on every read of its connection."""

    timeout = IDLE_TIMEOUT

    def handle(self) -> None:
        try:
            super().handle()
        except TimeoutError:  # the sender went silent: drop the connection, no traceback
            self.close_connection = True


def serve(app: App, port: int, host: str = "127.0.0.1") -> WSGIServer:
    """A server for ``app`` on ``host``:``port`` (0 for any free port); call its
    ``serve_forever()``, and ``shutdown()`` from another thread to stop it."""
    return make_server(
        host, port, app, server_class=ThreadingWSGIServer, handler_class=TimedHandler
    )


def show(event: DeliveryNotification) -> None:
    outcome = event.status.name.lower() if event.status else event.status_id
    print(f"job {event.job_id} (reference {event.reference_id!r}): {outcome}", flush=True)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    expected = (os.environ["FAXWS_NOTIFY_USER"], os.environ["FAXWS_NOTIFY_PASSWORD"])
    with serve(make_app(expected, show), port) as server:
        print(f"listening on http://127.0.0.1:{server.server_port}/", flush=True)
        server.serve_forever()
