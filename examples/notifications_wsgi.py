"""Receiving FaxWS completion pushes in a WSGI application (standard library only).

    FAXWS_NOTIFY_USER=notify FAXWS_NOTIFY_PASSWORD=... python examples/notifications_wsgi.py 8080

Give each job the same user and password as NotifyAuthUser and NotifyAuthPassword, and put the
app behind HTTPS. The app is ``faxws.notifications.wsgi_app``: 401 before reading the body
when a push lacks those HTTP Basic credentials, 411 without a Content-Length and 413 when it is
over ``max_bytes`` (the body is not read), 400 when the body cannot be read (the text names the
field and the problem), 500 when the function handed a final event raised (the service pushes
again later), 204 otherwise; an event of a job still in progress is acknowledged and dropped.

Served as a script, each connection has a thread of its own (so a connection that sends nothing
holds back no other) and is closed once it has been silent for ``IDLE_TIMEOUT`` seconds.
"""

from __future__ import annotations

import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from faxws.notifications import DeliveryNotification, WSGIApp, wsgi_app

#: Seconds a connection may stay silent (before or within its request) before it is closed.
IDLE_TIMEOUT = 10.0


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


def serve(app: WSGIApp, port: int, host: str = "127.0.0.1") -> WSGIServer:
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
    with serve(wsgi_app(show, expected), port) as server:
        print(f"listening on http://127.0.0.1:{server.server_port}/", flush=True)
        server.serve_forever()
