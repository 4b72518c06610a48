"""The seam between a client and HTTP: what a transport is given (:class:`Request`), what it
answers (:class:`Response`), the two kinds of transport (:class:`SyncTransport` for
:class:`~faxws.FaxClient` and :func:`faxws.zeep.make_client`, :class:`AsyncTransport` for
:class:`~faxws.AsyncFaxClient`) and :class:`MockTransport`, which answers from a function
with no network::

    from faxws import ClientOptions, FaxClient
    from faxws.transport import MockTransport, Response

    def answer(request):
        assert request.headers["x-ch-request-id"] == request.request_id
        return Response(503, {"Retry-After": "0"}, b"busy")

    client = FaxClient(
        "https://fax.example.com",
        user_id="mbx1234567890",
        pin="1234",
        options=ClientOptions(transport=MockTransport(answer)),
    )

A client given a transport (``ClientOptions(transport=...)``) hands it each attempt of each
call and reads what it answers. Everything else stays above the seam and is the same whatever
the transport: the request ids, the headers and body of the contract, the token fetched for
each attempt and the one retry after a 401, the retries and their waits (a SendFax is never
sent again once a byte of it may have reached the service: the transport says so in the
``written`` of the request, set once any byte of it went out, which no error it raises can
undo), the size limit of
answers, and the reading of answers into results and errors.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator
from contextlib import contextmanager

from requests.structures import CaseInsensitiveDict

from faxws._http.shared import AsyncTransport, Request, Response, SyncTransport
from faxws.errors import BadInputError, DocumentError, FaxWSError

__all__ = ["AsyncTransport", "MockTransport", "Request", "Response", "SyncTransport"]


class MockTransport:
    """A transport that answers every request with ``handler(request)``: a
    :class:`SyncTransport` and an :class:`AsyncTransport` both (the async client also awaits
    an async handler).

    The handler is given the request with its body read whole (bytes), and returns the
    :class:`Response` (its headers are then looked up in any case), or raises what a transport
    raises: :class:`~faxws.ConnectError` for a request that was not sent (refused,
    unreachable), :class:`~faxws.TransportError` or :class:`~faxws.RequestTimeoutError` with
    ``maybe_delivered=True`` for one that may have been. The handler plays the network: a
    request counts as written (``request.written``) unless the handler raises an error with
    ``maybe_delivered=False``. Every request handed over is kept in :attr:`requests`, in
    order.
    """

    def __init__(self, handler: Callable[[Request], Response | Awaitable[Response]]) -> None:
        if not callable(handler):
            raise BadInputError("handler", f"must be callable, not {type(handler).__name__}")
        self.handler = handler
        self.requests: list[Request] = []
        """Every request handed to the handler, its body read whole."""

    def __repr__(self) -> str:
        return f"MockTransport({self.handler!r})"

    def post(self, request: Request) -> Response:
        """The handler's answer to ``request``."""
        body = request.body
        if isinstance(body, AsyncIterable):
            raise TypeError("an async request body is posted with post_async()")
        try:
            whole = body if isinstance(body, bytes) else b"".join(body)
        except DocumentError as exc:
            self._not_handed(exc, request)
            raise
        handed = self._hand(request, whole)
        with self._as_the_network(request, handed):
            answer = self.handler(handed)
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()  # never awaited: closed so that Python does not warn
            raise TypeError("the handler is asynchronous; use it with AsyncFaxClient")
        return self._checked(answer)

    async def post_async(self, request: Request) -> Response:
        """The handler's answer to ``request``, awaited when the handler is async."""
        body = request.body
        try:
            if isinstance(body, bytes):
                whole = body
            elif isinstance(body, AsyncIterable):
                whole = b"".join([chunk async for chunk in body])
            else:
                whole = b"".join(body)
        except DocumentError as exc:
            self._not_handed(exc, request)
            raise
        handed = self._hand(request, whole)
        with self._as_the_network(request, handed):
            answer = self.handler(handed)
            if inspect.isawaitable(answer):
                answer = await answer
        return self._checked(answer)

    def close(self) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Nothing to release."""

    def _hand(self, request: Request, whole: bytes) -> Request:
        handed = Request(
            request.url, dict(request.headers), whole, len(whole), request.request_id, True
        )
        self.requests.append(handed)
        return handed

    @staticmethod
    @contextmanager
    def _as_the_network(request: Request, handed: Request) -> Iterator[None]:
        """The handler plays the network: the request went out unless it raises an error
        saying that nothing did (``maybe_delivered=False``, as ConnectError says)."""
        try:
            yield
        except FaxWSError as exc:
            request.written = handed.written = exc.maybe_delivered
            raise
        except BaseException:
            request.written = True
            raise
        request.written = True

    @staticmethod
    def _not_handed(exc: DocumentError, request: Request) -> None:
        """A document failed while the body was read: nothing was handed over."""
        exc.request_id = request.request_id
        exc.maybe_delivered = False

    @staticmethod
    def _checked(answer: object) -> Response:
        if not isinstance(answer, Response):
            raise TypeError(f"the handler must return a Response, not {type(answer).__name__}")
        headers = CaseInsensitiveDict(answer.headers)
        return Response(answer.status, headers, answer.content, answer.elapsed)
