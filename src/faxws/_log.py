"""The ``faxws`` logger. A library does not configure logging: it gets a NullHandler, and the
application decides where records go. Imported only by modules that log, so that
``import faxws`` and the command line's start-up do not pay for the logging package.

A record may quote what a server sent, which may echo a secret: while a call runs
(:class:`~faxws._http.shared.call_boundary`), every record of this logger leaves through the
call's mask, whatever its message, so no message has to remember it."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable

logger = logging.getLogger("faxws")
logger.addHandler(logging.NullHandler())

#: The mask of the call in progress in this thread or task (tasks inherit it).
call_mask: contextvars.ContextVar[Callable[[str], str] | None] = contextvars.ContextVar(
    "faxws_call_mask", default=None
)


class _Masked(logging.Filter):
    """Formats a record's message once and masks it, leaving no arguments for a handler to
    format again. Runs only for records the logger's level lets through."""

    def filter(self, record: logging.LogRecord) -> bool:
        mask = call_mask.get()
        if mask is not None:
            try:
                message = record.getMessage()
            except Exception:  # the handler reports a malformed record
                return True
            record.msg, record.args = mask(message), ()
        return True


logger.addFilter(_Masked())
