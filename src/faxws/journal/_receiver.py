"""A WSGI application applying the service's completion pushes to a journal's rows.

It answers as the receiver in ``examples/notifications_wsgi.py`` does: 405 for anything but a
POST; 401 (before the body is read) when the push does not carry the expected HTTP Basic
credentials; 411 without a Content-Length, 413 when that is over ``max_bytes``; 400 when the
body cannot be read (the text names the field and the problem); 500 when the journal could not
record it (the service pushes again later); 204 otherwise, for a job of the journal or not,
after a final event was applied to the row of its job id (or ReferenceId).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from faxws._log import logger
from faxws._protocol.checks import check_text
from faxws.errors import BadInputError, FaxWSError
from faxws.journal._runner import Batch
from faxws.notifications import (
    DEFAULT_MAX_BYTES,
    NotificationAuthError,
    NotificationError,
    check_credentials,
    parse_notification,
)

__all__ = ["notification_app"]

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
App = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def notification_app(
    batch: Batch, *, user: str, password: str, max_bytes: int = DEFAULT_MAX_BYTES
) -> App:
    """A WSGI app applying each authenticated push to ``batch``'s journal; ``user`` and
    ``password`` are the Notify credentials the batch's sends asked for."""
    if not isinstance(batch, Batch):
        raise BadInputError("batch", f"must be a Batch, not {type(batch).__name__}")
    check_text("user", user)
    if ":" in user:
        raise BadInputError("user", "must not contain ':' (HTTP Basic cannot carry it)")
    check_text("password", password)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise BadInputError("max_bytes", "must be a whole number of bytes, 0 or more")
    credentials = (user, password)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        def answer(status: str, *headers: tuple[str, str], text: str = "") -> list[bytes]:
            body = text.encode("utf-8")
            if not status.startswith("204"):  # a 204 has no body, nor any length
                headers += (("Content-Length", str(len(body))),)
                if body:
                    headers += (("Content-Type", "text/plain; charset=utf-8"),)
            start_response(status, list(headers))
            return [body]

        if environ.get("REQUEST_METHOD") != "POST":
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
            return answer("400 Bad Request", text=str(exc))
        if event.final:
            try:
                batch.apply(event)
            except FaxWSError as exc:
                logger.warning("push for job %s not recorded: %s", event.job_id, type(exc).__name__)
                return answer("500 Internal Server Error", text="the journal could not record it")
        return answer("204 No Content")

    return app
