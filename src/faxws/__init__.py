"""faxws: a typed client for the FaxWS v5 SOAP fax service.

>>> from faxws import FaxClient, Recipient, FaxFile
>>> client = FaxClient("https://fax.example.com", user_id="mbx123", token="...")  # doctest: +SKIP
>>> client.send_fax([Recipient("+1 555 0100")], [FaxFile.from_path("a.pdf")])  # doctest: +SKIP
"""

import logging

from faxws._version import __version__
from faxws.auth import BearerAuth, PinAuth, TokenProvider
from faxws.client import FaxClient
from faxws.errors import (
    AuthenticationError,
    BadInputError,
    ConnectError,
    FaxWSError,
    HTTPStatusError,
    ProtocolError,
    RequestTimeoutError,
    ServiceError,
    SoapFaultError,
    TransportError,
)
from faxws.models import BroadcastReportResult, FaxFile, FileType, Recipient, SendFaxResult
from faxws.validation import ValidationIssue

# A library does not configure logging; the application decides where records go.
logging.getLogger("faxws").addHandler(logging.NullHandler())

__all__ = [
    "AuthenticationError",
    "BadInputError",
    "BearerAuth",
    "BroadcastReportResult",
    "ConnectError",
    "FaxClient",
    "FaxFile",
    "FaxWSError",
    "FileType",
    "HTTPStatusError",
    "PinAuth",
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
]
