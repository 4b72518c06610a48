"""The protocol's constants and decisions, shared by every face (the typed client, the zeep
integration, the simulator): the SOAP namespaces, the endpoint path, the request headers, and
whether a failed call may be sent again."""

from __future__ import annotations

import os
import random

from faxws.errors import BadInputError, FaxWSError

__all__ = [
    "CONTENT_TYPE",
    "MEDIA_TYPE",
    "PATH",
    "RETRY_STATUSES",
    "SOAP11_NS",
    "SOAP12_NS",
    "may_retry",
    "new_request_id",
    "request_headers",
]

SOAP11_NS = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP12_NS = "http://www.w3.org/2003/05/soap-envelope"
MEDIA_TYPE = "application/soap+xml"
CONTENT_TYPE = f"{MEDIA_TYPE}; charset=utf-8"
PATH = "/fax/v5"
#: Statuses after which an idempotent call is sent again (a gateway's transient failures).
RETRY_STATUSES = frozenset({502, 503, 504})


# Request ids must be unique, not secret: from a generator of faxws's own, seeded from the system
# and again in each forked child (which would repeat its parent's ids), untouched by a program
# seeding random; uuid.uuid4 makes a system call for each, letting other threads take the GIL.
_ids = random.Random()  # noqa: S311 - identifiers, not secrets
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.seed)
_UUID_FIXED = (0xF000 << 64) | (0xC000 << 48)  # the version's and the variant's bits
_UUID_V4 = (0x4000 << 64) | (0x8000 << 48)


def new_request_id() -> str:
    """A random version 4 UUID, spelled as ``str(uuid.uuid4())``."""
    n = (_ids.getrandbits(128) & ~_UUID_FIXED) | _UUID_V4
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def request_headers(
    request_id: str, bearer_token: str | None, soap_action: str = ""
) -> dict[str, str]:
    """The contract's request headers (the HTTP stack adds Content-Length): an empty soapAction
    is sent empty, as the contract shows; any other is quoted, as SOAP 1.1 requires."""
    if any(not 0x20 <= ord(c) <= 0x7E or c == '"' for c in soap_action):
        raise BadInputError("soapAction", "must be printable ASCII without quotes (from the WSDL)")
    out = {
        "Content-Type": CONTENT_TYPE,
        "SOAPAction": f'"{soap_action}"' if soap_action else "",
        "x-ch-request-id": request_id,
    }
    if bearer_token is not None:
        out["Authorization"] = f"Bearer {bearer_token}"
    return out


def may_retry(
    *, idempotent: bool, error: FaxWSError | None = None, status: int | None = None
) -> bool:
    """Whether a failed attempt may be sent again (within the caller's retry budget): always
    before any byte was written; after that, only an idempotent call, after a transport
    failure or a gateway's 502/503/504."""
    if error is not None:
        return idempotent or not error.maybe_delivered
    return idempotent and status in RETRY_STATUSES
