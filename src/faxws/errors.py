"""The exceptions faxws raises: one hierarchy under :class:`FaxWSError`.

Lower layers' exceptions (requests, urllib3, aiohttp, lxml) are mapped onto these, the message
naming the root cause, and never chained (neither ``__cause__`` nor ``__context__``): their
text may quote what a server sent, secrets included. Only a :class:`DocumentError` may keep the
error of the caller's own document as its cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faxws.validation import ValidationIssue

__all__ = [
    "AuthenticationError",
    "BadInputError",
    "ConnectError",
    "DocumentError",
    "FaxWSError",
    "HTTPStatusError",
    "ProtocolError",
    "RequestTimeoutError",
    "ServiceError",
    "SoapFaultError",
    "TransportError",
    "WaitTimeoutError",
]


def mask_error(exc: FaxWSError, redact: Callable[[str], str]) -> None:
    """Mask every text of an error (its message and each attribute that may quote what a
    server sent) as it leaves a call: any of them may quote a secret echoed back."""
    for name in (
        "message",
        "body_excerpt",
        "fault_code",
        "fault_string",
        "error_string",
        "problem",
    ):
        value = getattr(exc, name, None)
        if isinstance(value, str):
            setattr(exc, name, redact(value))
    exc.args = tuple(redact(a) if isinstance(a, str) else a for a in exc.args)


def excerpt(text: str, limit: int = 500) -> str:
    """Shorten ``text`` to at most ``limit`` characters (by default what an error message quotes
    of a response body), marking the cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


class FaxWSError(Exception):
    """Base class of every error faxws raises.

    Attributes:
        message: what went wrong, in one sentence.
        request_id: the ``x-ch-request-id`` of the call; None outside a call (such as a bad
            value for a :class:`~faxws.Recipient`).
        status_code: the HTTP status of the response, if there was one.
        maybe_delivered: True when any byte of the request was written (and the answer does
            not prove it was refused), by any attempt of the call: repeating a SendFax could
            send the fax twice. Only a SendFax that failed with False is safe to send again.
    """

    maybe_delivered: bool = False
    #: The ReferenceId of a send with job options that failed: after ``maybe_delivered``,
    #: look the job up by it before sending again.
    reference_id: str | None = None

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None = None,
        status_code: int | None = None,
        maybe_delivered: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.status_code = status_code
        if maybe_delivered is not None:
            self.maybe_delivered = maybe_delivered

    def __str__(self) -> str:
        status = [] if self.status_code is None else [f"HTTP {self.status_code}"]
        if status and re.search(rf"\b{status[0]}\b", self.message):
            status = []  # said once: "HTTP 503 without a SOAP answer (request id ...)"
        rid = [] if self.request_id is None else [f"request id {self.request_id}"]
        return f"{self.message} ({', '.join(status + rid)})" if status or rid else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class BadInputError(FaxWSError, ValueError):
    """An argument is invalid. Raised before any byte is sent.

    ``field`` is the argument or element at fault (``recipients[0].fax_number``,
    ``/SendFax/FaxJobFiles/item[1]/FileTypeId``) and ``problem`` what is wrong with it;
    ``issues``, for schema validation, every issue found (the first is ``field``/``problem``).
    """

    def __init__(
        self,
        field: str,
        problem: str,
        *,
        request_id: str | None = None,
        issues: Sequence[ValidationIssue] = (),
    ) -> None:
        super().__init__(f"{field}: {problem}", request_id=request_id)
        self.field = field
        self.problem = problem
        self.issues = tuple(issues)


class ServiceError(FaxWSError):
    """The service answered, but refused the request (``return`` false or a non-zero WSError):
    ``code`` and ``error_string`` are its ``ErrorCode`` (-5019: "Invalid Job ID") and
    ``ErrorString``."""

    def __init__(
        self,
        code: int,
        error_string: str,
        *,
        request_id: str | None = None,
        status_code: int | None = None,
    ) -> None:
        text = error_string or "no error text"
        super().__init__(
            f"service error {code}: {excerpt(text)}",
            request_id=request_id,
            status_code=status_code,
        )
        self.code = code
        self.error_string = error_string


class SoapFaultError(FaxWSError):
    """The service answered with a SOAP fault: ``fault_code`` (``soap:Client``,
    ``soap:Server``) and ``fault_string`` (at most 500 characters).

    ``maybe_delivered`` is False for a client fault (``Client``/``Sender``: the request itself
    was wrong) and True for any other: a server fault ("unable to process request... timeout
    expired") can come after the work was done."""

    def __init__(
        self,
        fault_code: str,
        fault_string: str,
        *,
        request_id: str | None = None,
        status_code: int | None = None,
    ) -> None:
        self.fault_code = fault_code
        self.fault_string = excerpt(fault_string)
        local = fault_code.rpartition(":")[2].split(".")[0]
        super().__init__(
            f"SOAP fault {fault_code}: {self.fault_string}",
            request_id=request_id,
            status_code=status_code,
            maybe_delivered=local not in ("Client", "Sender"),
        )


class AuthenticationError(FaxWSError):
    """The service rejected the credentials (HTTP 401 or 403); ``fault_string`` is the
    answer's fault text, if it had one."""

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None = None,
        status_code: int | None = None,
        fault_string: str | None = None,
    ) -> None:
        super().__init__(message, request_id=request_id, status_code=status_code)
        self.fault_string = fault_string


class HTTPStatusError(FaxWSError):
    """The service answered with an HTTP error status and no SOAP fault (an HTML error page,
    a 502 from a gateway, a redirect); ``body_excerpt`` holds at most 500 characters of the
    body. ``maybe_delivered`` is False for 3xx and 4xx answers (the request was redirected or
    refused) and True for every other status."""

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None = None,
        status_code: int | None = None,
        body_excerpt: str = "",
        maybe_delivered: bool = False,
    ) -> None:
        super().__init__(
            message,
            request_id=request_id,
            status_code=status_code,
            maybe_delivered=maybe_delivered,
        )
        self.body_excerpt = body_excerpt


class TransportError(FaxWSError):
    """The HTTP exchange failed: connection, TLS, timeout, reset, a malformed answer line.

    ``maybe_delivered`` is decided by whether any byte of the request had been written to
    the connection when it failed, never by the kind of failure.
    """

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None = None,
        maybe_delivered: bool,
    ) -> None:
        super().__init__(message, request_id=request_id, maybe_delivered=maybe_delivered)


class ConnectError(TransportError):
    """The request could not be sent: refused, DNS, proxy, TLS handshake or certificate
    failure, or a connection that failed before its first byte. Nothing was sent by this
    attempt (``maybe_delivered`` is still True after an earlier one that may have been)."""

    def __init__(self, message: str, *, request_id: str | None = None) -> None:
        super().__init__(message, request_id=request_id, maybe_delivered=False)


class RequestTimeoutError(TransportError):
    """The connect or read time-out elapsed. A read time-out may follow delivery."""


class DocumentError(FaxWSError):
    """A document (``document``: its file name, ``<bytes>`` or ``<stream>``) could not be
    sent as announced: it could not be opened or read, the file object failed or was closed,
    or it shrank or grew while being sent. The connection is then aborted before the body is
    complete, so the service cannot accept a truncated or altered document (bytes written
    still make ``maybe_delivered`` True)."""

    def __init__(
        self,
        message: str,
        *,
        document: str = "",
        request_id: str | None = None,
        maybe_delivered: bool = False,
    ) -> None:
        super().__init__(message, request_id=request_id, maybe_delivered=maybe_delivered)
        self.document = document


class ProtocolError(FaxWSError):
    """The response is not a readable SOAP answer of the expected form (not XML, a DTD,
    the wrong element, a missing part, too large); ``body_excerpt`` holds at most 500
    characters of it. The request did reach the service, so ``maybe_delivered`` is True."""

    maybe_delivered = True

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None = None,
        status_code: int | None = None,
        body_excerpt: str = "",
        maybe_delivered: bool | None = None,
    ) -> None:
        super().__init__(
            message,
            request_id=request_id,
            status_code=status_code,
            maybe_delivered=maybe_delivered,
        )
        self.body_excerpt = body_excerpt


class WaitTimeoutError(FaxWSError):
    """``wait_for_delivery`` ran out of time before every job ended.

    Attributes:
        statuses: the last status seen of each job, in the order asked (a job the service
            never answered for is left out).
        pending: the ids of the jobs that had not ended.
    """

    def __init__(
        self,
        message: str,
        *,
        statuses: Sequence[object] = (),
        pending: Sequence[str] = (),
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, request_id=request_id)
        self.statuses = list(statuses)
        self.pending = tuple(pending)
