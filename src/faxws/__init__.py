"""faxws: a typed client, schema validator and local simulator for the FaxWS v5 SOAP service.

>>> from faxws import FaxClient, Recipient, FaxFile
>>> client = FaxClient("https://fax.example.com", user_id="mbx123", token="...")  # doctest: +SKIP
>>> client.send_fax([Recipient("+1 555 0100")], [FaxFile.from_path("a.pdf")])  # doctest: +SKIP

The public names are imported on first use, so ``import faxws`` (and the ``faxws`` command's
start-up) stays fast: requests, lxml and logging load only when a client or the validator is
needed, and zeep only when the bindings are regenerated.
"""

from __future__ import annotations

import importlib

from faxws._version import __version__

# typing.TYPE_CHECKING without importing typing (about 10 ms): type checkers treat any
# constant of this name as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from faxws._http.options import ClientOptions
    from faxws.auth import AsyncTokenProvider, TokenProvider
    from faxws.client import AsyncFaxClient, FaxClient
    from faxws.errors import (
        AuthenticationError,
        BadInputError,
        ConnectError,
        DocumentError,
        FaxWSError,
        HTTPStatusError,
        ProtocolError,
        RequestTimeoutError,
        ServiceError,
        SoapFaultError,
        TransportError,
        WaitTimeoutError,
    )
    from faxws.jobs import JobOptions, Notify
    from faxws.models import BroadcastReportResult, FaxFile, FileType, Recipient, SendFaxResult
    from faxws.notifications import (
        DeliveryNotification,
        NotificationAuthError,
        NotificationError,
    )
    from faxws.status import CancelResult, FaxStatus, JobStatus, RealTimeFaxStatus, ReferenceStatus
    from faxws.validation import ValidationIssue, validate, validate_or_raise

#: Each public name's module, imported on first use.
_EXPORTS = {
    name: module
    for module, names in (
        ("faxws._http.options", "ClientOptions"),
        ("faxws.auth", "AsyncTokenProvider TokenProvider"),
        ("faxws.client", "AsyncFaxClient FaxClient"),
        ("faxws.errors", "AuthenticationError BadInputError ConnectError DocumentError"),
        ("faxws.errors", "FaxWSError HTTPStatusError ProtocolError RequestTimeoutError"),
        ("faxws.errors", "ServiceError SoapFaultError TransportError WaitTimeoutError"),
        ("faxws.jobs", "JobOptions Notify"),
        ("faxws.models", "BroadcastReportResult FaxFile FileType Recipient SendFaxResult"),
        ("faxws.notifications", "DeliveryNotification NotificationAuthError NotificationError"),
        ("faxws.status", "CancelResult FaxStatus JobStatus RealTimeFaxStatus ReferenceStatus"),
        ("faxws.validation", "ValidationIssue validate validate_or_raise"),
    )
    for name in names.split()
}

__all__ = [
    "AsyncFaxClient",
    "AsyncTokenProvider",
    "AuthenticationError",
    "BadInputError",
    "BroadcastReportResult",
    "CancelResult",
    "ClientOptions",
    "ConnectError",
    "DeliveryNotification",
    "DocumentError",
    "FaxClient",
    "FaxFile",
    "FaxStatus",
    "FaxWSError",
    "FileType",
    "HTTPStatusError",
    "JobOptions",
    "JobStatus",
    "NotificationAuthError",
    "NotificationError",
    "Notify",
    "ProtocolError",
    "RealTimeFaxStatus",
    "Recipient",
    "ReferenceStatus",
    "RequestTimeoutError",
    "SendFaxResult",
    "ServiceError",
    "SoapFaultError",
    "TokenProvider",
    "TransportError",
    "ValidationIssue",
    "WaitTimeoutError",
    "__version__",
    "validate",
    "validate_or_raise",
]


#: Names that left the package's namespace: still importable from here, with a warning.
_MOVED = {"BearerAuth": "faxws.auth", "PinAuth": "faxws.auth"}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        moved = _MOVED.get(name)
        if moved is None:
            raise AttributeError(f"module 'faxws' has no attribute {name!r}")
        import warnings

        # No public function takes them: the clients build them from token= and pin=.
        warnings.warn(
            f"faxws.{name} is deprecated; import it from {moved}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(moved), name)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
