"""Checks of single values, shared by the models, the client and the simulator: each raises
:class:`~faxws.errors.BadInputError` naming the field and the problem."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence

from faxws._protocol.xsd import INT_MAX, INT_MIN
from faxws.errors import BadInputError

# Characters XML 1.0 cannot carry (lone surrogates cannot be encoded at all).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_LINE_BREAK = re.compile("[\r\n\x85\u2028\u2029]")
# RFC 7230 field-value: visible ASCII; no spaces so it cannot smuggle a second token.
_HEADER_TOKEN = re.compile(r"[\x21-\x7e]+")
MAX_REQUEST_ID_LENGTH = 200


def describe_char(char: str) -> str:
    return f"U+{ord(char):04X}"


def check_text(field: str, value: object, *, required: bool = False) -> str:
    """A string XML can carry on one line; ``required`` forbids the empty string."""
    text = check_xml_text(field, value)
    brk = _LINE_BREAK.search(text)
    if brk is not None:
        raise BadInputError(field, f"contains a line break ({describe_char(brk.group())})")
    if required and not text.strip():
        raise BadInputError(field, "must not be empty")
    return text


def check_xml_text(field: str, value: object) -> str:
    """A string XML can carry, line breaks included."""
    if not isinstance(value, str):
        raise BadInputError(field, f"must be a str, not {type(value).__name__}")
    bad = _NOT_XML.search(value)
    if bad is not None:
        raise BadInputError(field, f"contains {describe_char(bad.group())}, which XML cannot carry")
    return value


def check_int(field: str, value: object, low: int = INT_MIN, high: int = INT_MAX) -> int:
    """An int (not a bool) within ``low..high`` (xs:int by default)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInputError(field, f"must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise BadInputError(field, f"{value} is outside {low}..{high}")
    return int(value)


#: A recipient's fields, in the order of check_recipient's arguments and of FaxJobRecipient's
#: elements (RecipFaxNumber, RecipCompany, RecipTitle, RecipName, RecipSecureCSID).
RECIPIENT_FIELDS = ("fax_number", "company", "title", "name", "secure_csid")


def check_recipient(
    fax_number: object, company: object, title: object, name: object, secure_csid: object
) -> None:
    """The checks of a recipient's fields (BadInputError naming the field)."""
    number = check_text("fax_number", fax_number, required=True)
    if not any(c.isdigit() for c in number):
        raise BadInputError("fax_number", f"{number!r} has no digits")
    for field, value in zip(RECIPIENT_FIELDS[1:], (company, title, name, secure_csid), strict=True):
        check_text(field, value)


def check_file_index(field: str, value: object) -> int:
    """A FileIndex: the 1-based place of a document in its job."""
    return check_int(field, value, 1, INT_MAX)


def check_distinct_indexes(indexes: Sequence[int], name: Callable[[int], str], field: str) -> None:
    """No FileIndex given to two documents of a job (one of them would be unreachable):
    ``name(i)`` names the i-th document, ``field`` its index below that name."""
    owner: dict[int, int] = {}
    for i, index in enumerate(indexes):
        first = owner.setdefault(index, i)
        if first != i:
            raise BadInputError(f"{name(i)}{field}", f"{index} is also the index of {name(first)}")


def check_header_token(field: str, value: object) -> str:
    """A non-empty header value of visible ASCII (no spaces, CR or LF)."""
    if not isinstance(value, str):
        raise BadInputError(field, f"must be a str, not {type(value).__name__}")
    if not value:
        raise BadInputError(field, "must not be empty")
    if _HEADER_TOKEN.fullmatch(value) is None:
        bad = next(c for c in value if not 0x21 <= ord(c) <= 0x7E)
        raise BadInputError(
            field, f"contains {describe_char(bad)}; only visible ASCII is allowed in a header"
        )
    return value


def check_request_id(value: object) -> str:
    value = check_header_token("request_id", value)
    if len(value) > MAX_REQUEST_ID_LENGTH:
        raise BadInputError(
            "request_id", f"is {len(value)} characters long; at most {MAX_REQUEST_ID_LENGTH}"
        )
    return value


def is_loopback(host: str) -> bool:
    """True for exactly ``localhost`` and literal loopback addresses (127.0.0.0/8, ::1). Other
    names, ``*.localhost`` included, resolve through DNS to wherever DNS says, so plain http
    to them could carry a PIN off the machine."""
    name = host.lower().strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
