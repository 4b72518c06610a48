"""The seam between a client and HTTP (``ClientOptions(transport=...)``): what a transport is
given (:class:`Request`) and answers (:class:`Response`), the two kinds of transport
(:class:`SyncTransport`, :class:`AsyncTransport`), and :class:`MockTransport`, which answers
from a function with no network. Request ids, authentication, retries and their safety (a
request's ``written``, once set, is never undone by an error), the size limit and the reading
of answers stay above the seam, the same whatever the transport.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager

from requests.structures import CaseInsensitiveDict

from faxws._http.shared import AsyncTransport, Request, Response, SyncTransport
from faxws.errors import BadInputError, DocumentError, FaxWSError

__all__ = ["AsyncTransport", "MockTransport", "Request", "Response", "SyncTransport"]


class MockTransport:
    """A :class:`SyncTransport` and an :class:`AsyncTransport` both, answering every request
    with ``handler(request)`` (awaited by the async client if it is async).

    The handler is given the request with its body read whole (bytes), and returns the
    :class:`Response` (its headers are then looked up in any case), or raises what a transport
    raises: :class:`~faxws.ConnectError` for a request that was not sent,
    :class:`~faxws.TransportError` with ``maybe_delivered=True`` for one that may have been.
    The handler plays the network: a request counts as written unless it raises an error with
    ``maybe_delivered=False``. Every request handed over is kept in :attr:`requests`.
    """

    def __init__(self, handler: Callable[[Request], Response | Awaitable[Response]]) -> None:
        if not callable(handler):
            raise BadInputError("handler", f"must be callable, not {type(handler).__name__}")
        self.handler = handler
        self.requests: list[Request] = []

    def __repr__(self) -> str:
        return f"MockTransport({self.handler!r})"

    def post(self, request: Request) -> Response:
        """The handler's answer to ``request``."""
        if isinstance(request.body, AsyncIterable):
            raise TypeError("an async request body is posted with post_async()")
        with self._reading(request):
            handed = self._hand(request, request.body)
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
        with self._reading(request):
            if isinstance(body, AsyncIterable):
                body = b"".join([chunk async for chunk in body])
            handed = self._hand(request, body)
        with self._as_the_network(request, handed):
            answer = self.handler(handed)
            if inspect.isawaitable(answer):
                answer = await answer
        return self._checked(answer)

    def close(self) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Nothing to release."""

    def _hand(self, request: Request, body: bytes | Iterable[bytes]) -> Request:
        whole = body if isinstance(body, bytes) else b"".join(body)
        handed = Request(
            request.url, dict(request.headers), whole, len(whole), request.request_id, True
        )
        self.requests.append(handed)
        return handed

    @staticmethod
    @contextmanager
    def _reading(request: Request) -> Iterator[None]:
        """A document that fails while the body is read: nothing was handed over."""
        try:
            yield
        except DocumentError as exc:
            exc.request_id = request.request_id
            exc.maybe_delivered = False
            raise

    @staticmethod
    @contextmanager
    def _as_the_network(request: Request, handed: Request) -> Iterator[None]:
        """The handler plays the network: the request went out unless it raises an error
        saying that nothing did (``maybe_delivered=False``, as ConnectError says)."""
        request.written = True
        try:
            yield
        except FaxWSError as exc:
            request.written = handed.written = exc.maybe_delivered
            raise

    @staticmethod
    def _checked(answer: object) -> Response:
        if not isinstance(answer, Response):
            raise TypeError(f"the handler must return a Response, not {type(answer).__name__}")
        headers = CaseInsensitiveDict(answer.headers)
        return Response(answer.status, headers, answer.content, answer.elapsed)
