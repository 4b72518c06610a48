"""A client's options: :class:`ClientOptions` (exported as :class:`faxws.ClientOptions`), with
each default and check in one place for every face, and how a face's keyword arguments
become one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from faxws._http.shared import (
    DEFAULT_TIMEOUT,
    AsyncTransport,
    SyncTransport,
    Timeout,
    check_timeout,
    check_verify,
)
from faxws._protocol.checks import check_int
from faxws.errors import BadInputError

__all__ = ["UNSET", "ClientOptions", "resolve"]

DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, init=False, repr=False)
class ClientOptions:
    """How a client reaches the service: the HTTP settings, the retries and the transport of
    :class:`~faxws.FaxClient`, :class:`~faxws.AsyncFaxClient` and
    :func:`faxws.zeep.make_client`, each checked once, here (a
    :class:`~faxws.BadInputError` names the field).

    Pass it as ``options=``, or its fields but ``retry_random`` as the clients' keyword
    arguments: not both ways at once, so that no reader has to know which one wins. A
    changed copy is ``dataclasses.replace(options, timeout=5)``.

    Attributes:
        timeout: seconds, or (connect, read) seconds: finite, above 0 and at most a week.
            Kept as the (connect, read) pair. Default (10, 60).
        verify: TLS verification: True (certifi's CA bundle, as requests uses), False (no
            verification), or a path to a CA bundle (a file, or a directory of
            certificates), loaded once here to check it and then the only trust used.
        proxies: requests-style mapping of scheme (``"https"``, ``"http"``, ``"all"``, or
            ``"https://host"``) to an http(s) proxy URL, credentials allowed. The
            environment's proxy settings are ignored. Kept as a copy.
        allow_insecure_http: allow credentials over plain http to a host that is not a
            loopback address, or through a proxy that is not.
        retries: how often (0 to 10, default 2) a request is sent again: any request of
            which no byte was written (refused, DNS, TLS handshake, connect time-out), and an
            idempotent one (a report) after any transport error or HTTP 502/503/504. A
            SendFax is never sent again once a byte of it may have reached the service.
        retry_backoff: seconds (0 to 3600, default 0.5) bounding the wait before the first
            retry; the bound doubles for each further retry, up to 60 s (or
            ``retry_backoff``, if larger). Each wait is a random fraction of its bound ("full
            jitter": clients refused at once do not all return at once). A 503 answer's
            ``Retry-After`` (delta-seconds or an HTTP date) replaces the wait of a retry it
            allows, up to the same 60 s (or ``retry_backoff``); one that is neither is
            ignored.
        retry_random: where the fractions of the waits come from: None (default) for
            :func:`random.random`, or a function returning a number from 0 to 1 (above 1
            counts as 1; below 0, or NaN, as 0). ``lambda: 1.0`` waits each whole bound,
            e.g. in tests.
        max_connections: the connections kept open (1 to 1024), or None for the client's
            own default: 32 for FaxClient and make_client (one per thread sharing it), 16 for
            AsyncFaxClient.
        max_response_bytes: answers larger than this (1024 to 2**40 bytes, default 10 MiB)
            are refused, whatever the transport.
        transport: None for faxws's own HTTP transport, or one of the caller's (see
            :mod:`faxws.transport`): a :class:`~faxws.transport.SyncTransport` for FaxClient
            and make_client, an :class:`~faxws.transport.AsyncTransport` for
            AsyncFaxClient, such as :class:`~faxws.transport.MockTransport`, which is both.
            ``timeout``, ``verify``, ``proxies`` and ``max_connections`` set faxws's own
            transport. The client closes the transport when it is closed.
    """

    timeout: tuple[float, float]
    verify: bool | str
    proxies: Mapping[str, str] = field(hash=False)
    allow_insecure_http: bool
    retries: int
    retry_backoff: float
    retry_random: Callable[[], float] | None
    max_connections: int | None
    max_response_bytes: int
    transport: SyncTransport | AsyncTransport | None

    def __init__(
        self,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        verify: bool | str = True,
        proxies: Mapping[str, str] | None = None,
        allow_insecure_http: bool = False,
        retries: int = 2,
        retry_backoff: float = 0.5,
        retry_random: Callable[[], float] | None = None,
        max_connections: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: SyncTransport | AsyncTransport | None = None,
    ) -> None:
        checked_retries = check_int("retries", retries, 0, 10)
        if (
            isinstance(retry_backoff, bool)
            or not isinstance(retry_backoff, (int, float))
            or not 0 <= retry_backoff <= 3600
        ):
            raise BadInputError("retry_backoff", "must be a number of seconds from 0 to 3600")
        checked_proxies = _check_proxies(proxies)
        if not isinstance(allow_insecure_http, bool):
            raise BadInputError(
                "allow_insecure_http",
                f"must be True or False, not {type(allow_insecure_http).__name__}",
            )
        if isinstance(transport, type):
            raise BadInputError(
                "transport", f"must be a transport object, not the class {transport.__name__}"
            )
        if retry_random is not None and not callable(retry_random):
            raise BadInputError(
                "retry_random", "must be None or a function returning a number from 0 to 1"
            )
        if transport is not None and not any(
            callable(getattr(transport, name, None)) for name in ("post", "post_async")
        ):
            raise BadInputError(
                "transport",
                "must be a SyncTransport (with post()) or an AsyncTransport (with "
                f"post_async()), not {type(transport).__name__}",
            )
        # Frozen: set past its __setattr__, every value checked before any is set.
        self.__dict__.update(
            timeout=check_timeout("timeout", timeout),
            verify=check_verify("verify", verify),
            proxies=checked_proxies,
            allow_insecure_http=allow_insecure_http,
            retries=checked_retries,
            retry_backoff=float(retry_backoff),
            retry_random=retry_random,
            max_connections=None
            if max_connections is None
            else check_int("max_connections", max_connections, 1, 1024),
            max_response_bytes=check_int("max_response_bytes", max_response_bytes, 1024, 2**40),
            transport=transport,
        )

    def __repr__(self) -> str:
        # A proxy URL may carry credentials: shown without them.
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["proxies"] = {key: _without_credentials(url) for key, url in self.proxies.items()}
        return f"ClientOptions({', '.join(f'{k}={v!r}' for k, v in values.items())})"


def _check_proxies(proxies: object) -> dict[str, str]:
    if proxies is None:
        return {}
    if not isinstance(proxies, Mapping):
        raise BadInputError(
            "proxies", f"must be a mapping of scheme to proxy URL, not {type(proxies)}"
        )
    out: dict[str, str] = {}
    for key, url in proxies.items():
        if not isinstance(key, str) or not isinstance(url, str):
            raise BadInputError("proxies", "keys and proxy URLs must be str")
        field = f"proxies[{key!r}]"
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            raise BadInputError(field, "is not a valid URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInputError(field, "must be an http:// or https:// proxy URL with a host")
        if parts.path.strip("/") or parts.query or parts.fragment or "#" in url:
            # A password holding "/", "?" or "#" unencoded ends the host early: the rest
            # would be taken for a path, and the password shown where URLs are.
            raise BadInputError(
                field,
                "must be scheme://[user:password@]host[:port] with nothing after the host "
                "(percent-encode / ? # @ in a password)",
            )
        out[key] = url
    return out


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


class _Unset:
    """A keyword argument not given (its value comes from ``options``, or the default)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


#: The default of a face's option keywords: not given.
UNSET: Any = _Unset()


def resolve(options: ClientOptions | None, **keywords: object) -> ClientOptions:
    """A face's options: ``options``, or its keyword arguments (those not :data:`UNSET`)
    made into one; both at once are refused, naming the first keyword given."""
    given = {name: value for name, value in keywords.items() if value is not UNSET}
    if options is None:
        return ClientOptions(**given)  # type: ignore[arg-type]  # checked there
    if not isinstance(options, ClientOptions):
        raise BadInputError("options", f"must be a ClientOptions, not {type(options).__name__}")
    if given:
        raise BadInputError(
            next(iter(given)),
            "is given both as a keyword argument and in options=; give each option one way "
            "(dataclasses.replace(options, ...) makes a changed copy)",
        )
    return options
