"""A WSGI application applying the service's completion pushes to a journal's rows: the
receiver of :func:`faxws.notifications.wsgi_app` (its answers), each final event applied to
the row of its job id (or ReferenceId); a journal that could not record it answers 500, so
that the service pushes again later. A push for a job of no row is answered 204.
"""

from __future__ import annotations

from faxws._protocol.checks import check_text
from faxws.errors import BadInputError
from faxws.journal._runner import Batch
from faxws.notifications import DEFAULT_MAX_BYTES, WSGIApp, wsgi_app

__all__ = ["notification_app"]


def notification_app(
    batch: Batch, *, user: str, password: str, max_bytes: int = DEFAULT_MAX_BYTES
) -> WSGIApp:
    """A WSGI app applying each authenticated push to ``batch``'s journal; ``user`` and
    ``password`` are the Notify credentials the batch's sends asked for."""
    if not isinstance(batch, Batch):
        raise BadInputError("batch", f"must be a Batch, not {type(batch).__name__}")
    check_text("user", user)
    if ":" in user:
        raise BadInputError("user", "must not contain ':' (HTTP Basic cannot carry it)")
    check_text("password", password)
    return wsgi_app(batch.apply, (user, password), max_bytes=max_bytes)
