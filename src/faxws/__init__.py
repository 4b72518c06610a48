"""faxws: a typed client, schema validator and local simulator for the FaxWS v5 SOAP service.

>>> from faxws import FaxClient, Recipient, FaxFile
>>> client = FaxClient("https://fax.example.com", user_id="mbx123", token="...")  # doctest: +SKIP
>>> client.send_fax([Recipient("+1 555 0100")], [FaxFile.from_path("a.pdf")])  # doctest: +SKIP

``AsyncFaxClient`` is the same client for asyncio (the ``async`` extra: aiohttp, imported
when the first one is made).

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
    )
    from faxws.models import BroadcastReportResult, FaxFile, FileType, Recipient, SendFaxResult
    from faxws.validation import ValidationIssue, validate, validate_or_raise

_EXPORTS = {
    "AsyncFaxClient": "faxws.client",
    "AsyncTokenProvider": "faxws.auth",
    "AuthenticationError": "faxws.errors",
    "BadInputError": "faxws.errors",
    "BroadcastReportResult": "faxws.models",
    "ClientOptions": "faxws._http.options",
    "ConnectError": "faxws.errors",
    "DocumentError": "faxws.errors",
    "FaxClient": "faxws.client",
    "FaxFile": "faxws.models",
    "FaxWSError": "faxws.errors",
    "FileType": "faxws.models",
    "HTTPStatusError": "faxws.errors",
    "ProtocolError": "faxws.errors",
    "Recipient": "faxws.models",
    "RequestTimeoutError": "faxws.errors",
    "SendFaxResult": "faxws.models",
    "ServiceError": "faxws.errors",
    "SoapFaultError": "faxws.errors",
    "TokenProvider": "faxws.auth",
    "TransportError": "faxws.errors",
    "ValidationIssue": "faxws.validation",
    "validate": "faxws.validation",
    "validate_or_raise": "faxws.validation",
}

__all__ = [
    "AsyncFaxClient",
    "AsyncTokenProvider",
    "AuthenticationError",
    "BadInputError",
    "BroadcastReportResult",
    "ClientOptions",
    "ConnectError",
    "DocumentError",
    "FaxClient",
    "FaxFile",
    "FaxWSError",
    "FileType",
    "HTTPStatusError",
    "ProtocolError",
    "Recipient",
    "RequestTimeoutError",
    "SendFaxResult",
    "ServiceError",
    "SoapFaultError",
    "TokenProvider",
    "TransportError",
    "ValidationIssue",
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
