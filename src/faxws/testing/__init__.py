"""A local stand-in for the FaxWS v5 service, for tests and demos: :class:`FaxWSSimulator`
(the README's "The local simulator" says what it serves, refuses and records). A real threaded
HTTP/1.1 server, strict where the contract is, and bounded under any input: a request is parsed
as it arrives, and a large document goes to a spool file while it is decoded.
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
from faxws.testing._clock import ManualClock
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
from faxws.testing._life import OUTCOMES, TEST_NUMBERS
from faxws.testing._oauth import MAX_FORM, TOKEN_PATH
from faxws.testing._progress import JobProgress, PushRecord
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
    "OUTCOMES",
    "RETAINED_BODY_BYTES",
    "SPOOL_THRESHOLD",
    "TEST_NUMBERS",
    "TOKEN_PATH",
    "Account",
    "CloseAfterRead",
    "CloseBeforeRead",
    "DelayResponse",
    "Fault",
    "FaxWSSimulator",
    "Html500",
    "HttpStatus",
    "JobProgress",
    "ManualClock",
    "PushRecord",
    "ReceivedFile",
    "ReceivedRequest",
    "ResetMidResponse",
    "SimulatedJob",
    "SlowDrip",
    "SoapFault",
    "WsError",
]
