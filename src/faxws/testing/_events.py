"""``GET /api/events``: a server-sent event stream that tells whoever listens (the inbox) that
something it shows changed, so that it asks again, without reloading or polling.

Each event is ``event: change`` with ``data: {"version": "..."}``: the simulator's version of
what it holds (a request, a job, a recipient's track, a pending fault, a reset, the manual
clock moving on), sent once when the stream opens and again whenever it changes; changes that
come together are told once. Time alone moves a job on without a change: a view learns from
the page it fetched when to look again.

A stream holds a connection and its thread for as long as it is open, so there are at most
:data:`MAX_STREAMS` at once (a further one gets 503 with Retry-After), each ends within
:data:`CHECK` seconds of its client going away, and ``stop()`` ends them all at once.
"""

from __future__ import annotations

import json
import select
import socket
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faxws.testing._http import Handler

__all__ = ["CHECK", "HEARTBEAT", "MAX_STREAMS", "TooManyStreamsError", "client_gone", "stream"]

#: Event streams open at once, at most.
MAX_STREAMS = 32
#: Seconds between checks that the client is still there.
CHECK = 1.0
#: Seconds of silence after which a comment is sent (proxies close quiet connections).
HEARTBEAT = 15.0
#: Seconds during which further changes are told as one.
_COALESCE = 0.2
#: How soon a browser reconnects after the stream ends (milliseconds).
_RETRY_MS = 1000


class TooManyStreamsError(Exception):
    pass


def stream(handler: Handler) -> None:
    """Answer with the event stream until the client goes away or the simulator stops."""
    sim = handler.server.sim
    state = sim._state
    if not sim._stream_opened(MAX_STREAMS):
        raise TooManyStreamsError(f"at most {MAX_STREAMS} event streams are served at once")
    try:
        handler.start_stream(
            200,
            {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            },
        )
        if handler.command == "HEAD":
            return
        write = handler.wfile.write
        write(f"retry: {_RETRY_MS}\n\n".encode())
        told: int | None = None
        spoke = time.monotonic()
        while not state.stopping:
            version = state.version
            if version != told:
                told = version
                data = json.dumps({"version": f"{state.instance}-{version}"})
                write(f"event: change\ndata: {data}\n\n".encode())
                spoke = time.monotonic()
                if sim._stopping.wait(_COALESCE):
                    return
                continue
            if time.monotonic() - spoke >= HEARTBEAT:
                write(b": still here\n\n")
                spoke = time.monotonic()
            if state.wait_for_change(told, CHECK) == told and client_gone(handler.connection):
                return
    except OSError:
        pass  # the client went away, or stop() shut the connection down
    finally:
        sim._stream_closed()


def client_gone(sock: socket.socket) -> bool:
    """Whether the client closed its side (a client waiting for an answer, or reading an
    event stream, sends nothing more)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and not sock.recv(1, socket.MSG_PEEK)
    except (OSError, ValueError):
        return True
