"""Who the simulator accepts: accounts, the public demo account, and how secrets compare."""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass

from faxws.errors import BadInputError

__all__ = [
    "DEMO_ACCOUNT",
    "DEMO_CLIENT_ID",
    "DEMO_CLIENT_SECRET",
    "DEMO_PIN",
    "DEMO_TOKEN",
    "DEMO_USER_ID",
    "PUBLIC",
    "Account",
    "same",
    "seconds",
]

#: The account every simulator accepts unless given others; not secrets, by design.
DEMO_USER_ID = "mbx0000000000"
DEMO_PIN = "0000"
DEMO_TOKEN = "demo-token"  # noqa: S105
DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # noqa: S105
#: The demo account's credentials: shown where a real account's would be masked.
PUBLIC = frozenset({DEMO_PIN, DEMO_TOKEN, DEMO_CLIENT_SECRET})


@dataclass(frozen=True)
class Account:
    """A user the simulator accepts: a PIN, fixed bearer tokens, and/or OAuth client
    credentials with which the token endpoint issues expiring tokens."""

    user_id: str
    pin: str | None = None
    tokens: tuple[str, ...] = ()
    client_id: str | None = None
    client_secret: str | None = None

    def __repr__(self) -> str:
        # The simulator is also used with real-looking secrets: keep them out of reprs.
        return (
            f"Account(user_id={self.user_id!r}, pin={'<set>' if self.pin else None}, "
            f"tokens={len(self.tokens)}, client_id={self.client_id!r})"
        )


DEMO_ACCOUNT = Account(
    DEMO_USER_ID,
    pin=DEMO_PIN,
    tokens=(DEMO_TOKEN,),
    client_id=DEMO_CLIENT_ID,
    client_secret=DEMO_CLIENT_SECRET,
)


def same(expected: str, given: str) -> bool:
    """Constant-time comparison of two strings, whatever characters they hold (compared as
    UTF-8: ``secrets.compare_digest`` refuses non-ASCII ``str``)."""
    return hmac.compare_digest(
        expected.encode("utf-8", "surrogatepass"), given.encode("utf-8", "surrogatepass")
    )


def seconds(name: str, value: object, most: float | None = None) -> float:
    """A finite, positive number of seconds (at most ``most``, when given), or BadInputError
    naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInputError(name, f"must be a number of seconds, not {type(value).__name__}")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result) or result <= 0:
        raise BadInputError(name, f"must be a finite number of seconds above 0, not {value!r}")
    if most is not None and result > most:
        raise BadInputError(name, f"must be at most {most:g} seconds, not {value!r}")
    return result
