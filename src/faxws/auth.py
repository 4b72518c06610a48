"""The contract's two authentication modes: OAuth 2.0 (``Authorization: Bearer <token>``, an
empty ``strPIN``) and PIN (no Authorization header, the PIN in ``strPIN``). Neither shows its
secret in ``repr``; :meth:`Credentials.redact` masks the secrets in any text."""

from __future__ import annotations

import contextlib
import inspect
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, runtime_checkable

from faxws._protocol.checks import check_header_token, check_text
from faxws._protocol.redact import mask_forms, masked_forms
from faxws.errors import AuthenticationError, BadInputError, FaxWSError

__all__ = ["AsyncTokenProvider", "BearerAuth", "Credentials", "PinAuth", "TokenProvider"]

#: Distinct recent tokens masked in what servers echo: far more than one client has calls in
#: flight with distinct tokens, which providers that rotate per call may produce.
_SEEN_TOKENS = 256


@runtime_checkable
class TokenProvider(Protocol):
    """A zero-argument callable returning an access token, called for every request; its
    ``invalidate()`` method, if it has one, is called after an HTTP 401 before asking again."""

    def __call__(self) -> str: ...


@runtime_checkable
class AsyncTokenProvider(Protocol):
    """A zero-argument async callable returning an access token, for
    :class:`~faxws.AsyncFaxClient`: awaited for every request. If it also has an
    ``invalidate()`` method (plain or async), the client calls it after an HTTP 401."""

    def __call__(self) -> Awaitable[str]: ...


#: What ``token=`` accepts: a token, or a provider of one (plain or async).
Token = str | Callable[[], str] | Callable[[], Awaitable[str]]


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

    async def bearer_token_async(self, request_id: str | None) -> str | None:
        """:meth:`bearer_token` for the async client: an async provider is awaited."""
        return self.bearer_token(request_id)

    def refresh(self) -> bool:
        """After an HTTP 401: prepare a new token. True when a retry may succeed."""
        return False

    async def refresh_async(self) -> bool:
        """:meth:`refresh` for the async client: an async ``invalidate()`` is awaited."""
        return self.refresh()

    def redact(self, text: str, *also: str) -> str:
        """``text`` with every secret this object knows, and ``also`` (a call's own, such as
        a notification password), in any of its escaped or encoded forms, replaced by
        ``***``."""
        forms = self._forms()
        if also:
            forms = forms.union(*map(masked_forms, also))
        return mask_forms(text, forms)

    def _forms(self) -> frozenset[str]:
        """What :meth:`redact` looks for: the forms of this object's secrets, kept (a client
        masks with them often)."""
        return frozenset()


class BearerAuth(Credentials):
    """OAuth 2.0 mode: a fixed token, or a :class:`TokenProvider` called per request (or an
    :class:`AsyncTokenProvider`, awaited per request by the async client)."""

    mode = "oauth2"

    def __init__(self, token: Token) -> None:
        if callable(token):
            self._provider: Callable[[], object] | None = token
            self._fixed = ""
            self.refreshable = True
        else:
            self._provider = None
            self._fixed = check_header_token("token", token)
        # Tokens handed out recently, so that redact() can find them in what a server
        # echoes; bounded, but far beyond the distinct tokens of the calls in flight at once.
        # Each with its forms, and all of them joined once per change, not per mask.
        self._seen: dict[str, frozenset[str]] = {}
        # The service may echo what the provider authenticates with, too.
        self._own = frozenset().union(*map(masked_forms, _provider_secrets(token)))
        self._all = self._own
        self._lock = threading.Lock()
        if self._fixed:
            self._remember(self._fixed)

    def bearer_token(self, request_id: str | None) -> str:
        if self._provider is None:
            return self._fixed
        with _provider_errors(request_id):
            token = self._provider()
        if inspect.isawaitable(token):
            _discard(token)
            raise BadInputError(
                "token",
                "the token provider is asynchronous; use it with AsyncFaxClient",
                request_id=request_id,
            )
        return self._accept(token, request_id)

    async def bearer_token_async(self, request_id: str | None) -> str:
        if self._provider is None:
            return self._fixed
        with _provider_errors(request_id):
            token = self._provider()
            if inspect.isawaitable(token):
                token = await token
        return self._accept(token, request_id)

    def _accept(self, token: object, request_id: str | None) -> str:
        try:
            checked = check_header_token("token", token)
        except BadInputError as exc:
            raise BadInputError(
                "token",
                f"the token provider returned a bad token: {exc.problem}",
                request_id=request_id,
            ) from None
        if checked not in self._seen:
            self._remember(checked)
        return checked

    def _remember(self, token: str) -> None:
        forms = masked_forms(token)
        with self._lock:
            if token not in self._seen:
                self._seen[token] = forms
                if len(self._seen) > _SEEN_TOKENS:
                    del self._seen[next(iter(self._seen))]
                self._all = self._own.union(*self._seen.values())

    def pin(self) -> str:
        return ""

    def refresh(self) -> bool:
        _discard(self._invalidate())
        return self._provider is not None

    async def refresh_async(self) -> bool:
        result = self._invalidate()
        if inspect.isawaitable(result):
            await result
        return self._provider is not None

    def _invalidate(self) -> object:
        """What the provider's ``invalidate()`` returned, if it has one."""
        invalidate = getattr(self._provider, "invalidate", None)
        return invalidate() if callable(invalidate) else None

    def _forms(self) -> frozenset[str]:
        return self._all  # replaced whole under the lock: one read sees a consistent set

    def __repr__(self) -> str:
        source = "provider" if self._provider is not None else "fixed"
        return f"BearerAuth(token=<{source}, hidden>)"


class PinAuth(Credentials):
    """Username-and-password mode: the PIN travels in ``strPIN``; no Authorization header."""

    mode = "pin"

    def __init__(self, pin: str) -> None:
        self._pin = check_text("pin", pin, required=True)
        self._pin_forms = masked_forms(self._pin)

    def bearer_token(self, request_id: str | None) -> None:
        return None

    def pin(self) -> str:
        return self._pin

    def _forms(self) -> frozenset[str]:
        return self._pin_forms

    def __repr__(self) -> str:
        return "PinAuth(pin=<hidden>)"


def credentials_from(
    token: Token | None, pin: str | None, *, asynchronous: bool = False
) -> Credentials:
    """Exactly one of ``token`` and ``pin``. A token provider must suit the client: an async
    one only the async client can await, and one that blocks while it fetches (the sync
    :class:`~faxws.oauth.ClientCredentials`) would stall the async client's event loop."""
    if token is not None and pin is not None:
        raise BadInputError("token/pin", "give either token (OAuth 2.0) or pin, not both")
    if token is None and pin is None:
        raise BadInputError("token/pin", "give token (OAuth 2.0) or pin")
    if token is not None:
        if callable(token):
            _check_provider(token, asynchronous)
        return BearerAuth(token)
    if not isinstance(pin, str):
        raise BadInputError("pin", f"must be a str, not {type(pin).__name__}")
    return PinAuth(pin)


def _provider_secrets(token: object) -> tuple[str, ...]:
    """What one of faxws's token providers authenticates with (its client secret, and the
    ``id:secret`` of HTTP Basic), for the client to mask; nothing for any other provider."""
    oauth = sys.modules.get("faxws.oauth")  # not imported: no such provider exists
    if oauth is not None and isinstance(
        token, (oauth.ClientCredentials, oauth.AsyncClientCredentials)
    ):
        secrets: tuple[str, ...] = token._secrets()
        return secrets
    return ()


def _check_provider(provider: object, asynchronous: bool) -> None:
    if asynchronous:
        oauth = sys.modules.get("faxws.oauth")  # not imported: no ClientCredentials exists
        if oauth is not None and isinstance(provider, oauth.ClientCredentials):
            raise BadInputError(
                "token",
                "ClientCredentials blocks the event loop while it fetches a token; use "
                "faxws.oauth.AsyncClientCredentials with AsyncFaxClient",
            )
    elif inspect.iscoroutinefunction(provider) or inspect.iscoroutinefunction(
        getattr(provider, "__call__", None)  # noqa: B004 - an object's async __call__
    ):
        raise BadInputError(
            "token", "the token provider is asynchronous; use it with AsyncFaxClient"
        )


@contextlib.contextmanager
def _provider_errors(request_id: str | None) -> Iterator[None]:
    """A token provider's failure as the call's error."""
    try:
        yield
    except FaxWSError as exc:
        # Tokens are fetched before any byte of the attempt's request is written: whatever the
        # provider's failure says about its own exchange, this attempt was not delivered (an
        # earlier attempt of the call that may have been still makes the call's error say so).
        if exc.request_id is None:
            exc.request_id = request_id
        exc.maybe_delivered = False
        raise
    except Exception as exc:
        # The provider's own message may quote a secret: only its type is kept.
        raise AuthenticationError(
            f"the token provider failed with {type(exc).__name__}", request_id=request_id
        ) from None


def _discard(result: object) -> None:
    """Close a coroutine nobody will await (Python would warn about it, after the fact)."""
    if inspect.iscoroutine(result):
        result.close()
