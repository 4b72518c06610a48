"""The two authentication modes of the contract.

OAuth 2.0: ``Authorization: Bearer <token>`` and an empty ``strPIN``.
PIN: no Authorization header and the PIN in ``strPIN``.

Neither class shows its secret in ``repr`` or ``str``; :meth:`Credentials.redact` removes the
secrets from any text (such as a response body) before it reaches a message or a log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from faxws._checks import check_header_token, check_text
from faxws._redact import redact
from faxws.errors import AuthenticationError, BadInputError, FaxWSError

__all__ = ["BearerAuth", "Credentials", "PinAuth", "TokenProvider"]


@runtime_checkable
class TokenProvider(Protocol):
    """A zero-argument callable returning an access token.

    It is called for every request, so it can cache and refresh. If it also has an
    ``invalidate()`` method, the client calls it after an HTTP 401 before asking again.
    """

    def __call__(self) -> str: ...


class Credentials:
    """What a request needs from the authentication mode."""

    mode: str
    refreshable: bool = False

    def bearer_token(self, request_id: str | None) -> str | None:
        """The token for the Authorization header, or None in PIN mode."""
        raise NotImplementedError

    def pin(self) -> str:
        """The value of ``strPIN``: empty in OAuth 2.0 mode."""
        raise NotImplementedError

    def refresh(self) -> bool:
        """After an HTTP 401: prepare a new token. True when a retry may succeed."""
        return False

    def redact(self, text: str) -> str:
        """``text`` with every secret this object knows, in any of its escaped or encoded
        forms, replaced by ``***``."""
        return redact(text, self._secrets())

    def _secrets(self) -> tuple[str, ...]:
        return ()


class BearerAuth(Credentials):
    """OAuth 2.0 mode: a fixed token, or a :class:`TokenProvider` called per request."""

    mode = "oauth2"

    def __init__(self, token: str | Callable[[], str]) -> None:
        if callable(token):
            self._provider: Callable[[], str] | None = token
            self._fixed = ""
            self.refreshable = True
        else:
            self._provider = None
            self._fixed = check_header_token("token", token)
        # Tokens handed out recently, so that redact() can find them; bounded.
        self._seen: list[str] = [self._fixed] if self._fixed else []
        self._lock = threading.Lock()

    def bearer_token(self, request_id: str | None) -> str:
        if self._provider is None:
            return self._fixed
        try:
            token = self._provider()
        except FaxWSError as exc:
            # Tokens are fetched before any byte of the call's request is written: whatever
            # the provider's failure says about its own exchange, the call was not delivered.
            if exc.request_id is None:
                exc.request_id = request_id
            exc.maybe_delivered = False
            raise
        except Exception as exc:
            # The provider's own message may quote a secret: only its type is kept.
            raise AuthenticationError(
                f"the token provider failed with {type(exc).__name__}", request_id=request_id
            ) from None
        try:
            check_header_token("token", token)
        except BadInputError as exc:
            raise BadInputError(
                "token",
                f"the token provider returned a bad token: {exc.problem}",
                request_id=request_id,
            ) from None
        with self._lock:
            if token not in self._seen:
                self._seen = [*self._seen[-7:], token]
        return token

    def pin(self) -> str:
        return ""

    def refresh(self) -> bool:
        if self._provider is None:
            return False
        invalidate = getattr(self._provider, "invalidate", None)
        if callable(invalidate):
            invalidate()
        return True

    def _secrets(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._seen)

    def __repr__(self) -> str:
        source = "provider" if self._provider is not None else "fixed"
        return f"BearerAuth(token=<{source}, hidden>)"


class PinAuth(Credentials):
    """Username-and-password mode: the PIN travels in ``strPIN``; no Authorization header."""

    mode = "pin"

    def __init__(self, pin: str) -> None:
        self._pin = check_text("pin", pin, required=True)

    def bearer_token(self, request_id: str | None) -> None:
        return None

    def pin(self) -> str:
        return self._pin

    def _secrets(self) -> tuple[str, ...]:
        return (self._pin,)

    def __repr__(self) -> str:
        return "PinAuth(pin=<hidden>)"


def credentials_from(token: str | Callable[[], str] | None, pin: str | None) -> Credentials:
    """Exactly one of ``token`` and ``pin``."""
    if token is not None and pin is not None:
        raise BadInputError("token/pin", "give either token (OAuth 2.0) or pin, not both")
    if token is None and pin is None:
        raise BadInputError("token/pin", "give token (OAuth 2.0) or pin")
    if token is not None:
        return BearerAuth(token)
    if not isinstance(pin, str):
        raise BadInputError("pin", f"must be a str, not {type(pin).__name__}")
    return PinAuth(pin)
