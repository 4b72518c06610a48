"""A faithful local stand-in for the FaxWS v5 service, for tests and demos.

>>> with FaxWSSimulator() as sim:                                    # doctest: +SKIP
...     client = FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
...     client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", FileType.PDF)])
...     sim.jobs[0].files[0].data
b'%PDF-1.4'

It is a real HTTP/1.1 server (threaded, keep-alive) on 127.0.0.1, strict where the contract is:
405 (with ``Allow: POST``) for any method other than POST, 404 for another path, 415 for
another Content-Type, a SOAP Client fault for a missing SOAPAction header, malformed XML, a
DTD (in any encoding), an unknown operation or a body that fails the schema, and HTTP 401 for
any request that breaks the two authentication rules. It also serves an OAuth 2.0 token
endpoint (client credentials grant) at ``/connect/token``.

It stays bounded under any input. A large request is parsed while it arrives, and each
document's base64 is decoded in chunks; a document larger than ``SPOOL_THRESHOLD`` goes to a
file in a spool directory (removed at :meth:`stop`) as it is decoded, so a large fax costs
memory of the order of one chunk. Small documents stay in memory within ``DOCUMENT_MEMORY``.
Request bodies are kept in memory only within ``retained_body_bytes`` (newest first; the
metadata of every request stays), and a request's XML outside the documents is bounded in
depth, elements and text. :meth:`stop` wakes every parked fault, shuts every connection down
and joins every thread it started.
"""

from __future__ import annotations

from faxws.testing._accounts import (
    DEMO_ACCOUNT,
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_PIN,
    DEMO_TOKEN,
    DEMO_USER_ID,
    Account,
)
from faxws.testing._documents import SPOOL_THRESHOLD
from faxws.testing._faults import (
    CloseAfterRead,
    CloseBeforeRead,
    DelayResponse,
    Fault,
    Html500,
    HttpStatus,
    ResetMidResponse,
    SlowDrip,
    SoapFault,
    WsError,
)
from faxws.testing._http import MAX_BODY
from faxws.testing._oauth import MAX_FORM, TOKEN_PATH
from faxws.testing._records import ReceivedFile, ReceivedRequest, SimulatedJob
from faxws.testing._simulator import RETAINED_BODY_BYTES, FaxWSSimulator
from faxws.testing._state import DOCUMENT_MEMORY

__all__ = [
    "DEMO_ACCOUNT",
    "DEMO_CLIENT_ID",
    "DEMO_CLIENT_SECRET",
    "DEMO_PIN",
    "DEMO_TOKEN",
    "DEMO_USER_ID",
    "DOCUMENT_MEMORY",
    "MAX_BODY",
    "MAX_FORM",
    "RETAINED_BODY_BYTES",
    "SPOOL_THRESHOLD",
    "TOKEN_PATH",
    "Account",
    "CloseAfterRead",
    "CloseBeforeRead",
    "DelayResponse",
    "Fault",
    "FaxWSSimulator",
    "Html500",
    "HttpStatus",
    "ReceivedFile",
    "ReceivedRequest",
    "ResetMidResponse",
    "SimulatedJob",
    "SlowDrip",
    "SoapFault",
    "WsError",
]
