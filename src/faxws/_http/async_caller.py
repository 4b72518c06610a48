"""The asynchronous exchange of :class:`faxws.AsyncFaxClient`: the decisions of
:class:`~faxws._http.shared.Attempts` with awaited waits and posts. Documents are opened,
measured and read in worker threads, so the event loop never waits for a file; what a thread
still holds when its call is cancelled is released when the thread is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

from faxws._http.async_transport import AsyncBody, AsyncHttpTransport
from faxws._http.shared import AsyncTransport, Attempts, Caller, Response, client_closed
from faxws._log import logger
from faxws._protocol.content import release_stream, try_acquire_stream
from faxws._protocol.writer import Body, OpenBody
from faxws.errors import FaxWSError

__all__ = ["AsyncCaller"]

T = TypeVar("T")
#: How a cancelled call ended, before or after a byte of its request was written.
_CANCELLED = (
    "before any byte of the request was written (maybe_delivered=False)",
    "after bytes of the request were written: it may have been delivered "
    "(maybe_delivered=True); check before sending it again",
)


async def _off_loop(work: Callable[[], T], abandoned: Callable[[T | None], None]) -> T:
    """``work()`` in a worker thread; if the caller is cancelled, ``abandoned`` gets its
    result (None if it failed) to release once the thread is done."""
    future = asyncio.get_running_loop().run_in_executor(None, work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:

        def release(done: asyncio.Future[T]) -> None:
            failed = done.cancelled() or done.exception() is not None
            abandoned(None if failed else done.result())

        future.add_done_callback(release)
        raise


async def _hold_streams(streams: list[object]) -> list[tuple[object, threading.Lock]]:
    """The send locks of the file objects a body sends, waited for on the loop: a worker
    thread blocked on one would hold an executor thread the holder's own reads may need."""
    held: list[tuple[object, threading.Lock]] = []
    try:
        for stream in streams:
            delay = 0.001
            while (lock := try_acquire_stream(stream)) is None:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
            held.append((stream, lock))
    except BaseException:
        for stream, lock in reversed(held):
            release_stream(stream, lock)
        raise
    return held


_NO_LOCK = contextlib.nullcontext()


class _Documents:
    """One call's request body: measured when the call starts, sent whole by each attempt
    (small bodies as bytes, large ones in chunks read and encoded in worker threads)."""

    def __init__(self, opened: OpenBody | None, payload: bytes | OpenBody) -> None:
        self._opened = opened
        self.size = len(payload)
        # The chunks start afresh each time they are iterated.
        self.body: AsyncBody = payload if isinstance(payload, bytes) else self
        self._reading: asyncio.Future[bytes | None] | None = None
        # A read in a worker thread when close() comes closes the documents itself when it
        # ends: the loop, and its callbacks, may be gone by then.
        self._state = _NO_LOCK if opened is None else threading.Lock()
        self._in_read = False
        self._close_after_read = False

    @classmethod
    async def open(cls, body: Body) -> _Documents:
        """A body with documents (one without is ``_Documents(None, body.whole)``)."""
        if body.in_memory:
            opened = body.open()
            return cls(opened, opened.payload())

        held = await _hold_streams(body.streams())

        def release(opened: OpenBody | None) -> None:
            if opened is not None:
                opened.close()  # and the locks with it (open_all releases them if it fails)

        opened = await _off_loop(lambda: body.open(held), release)
        try:
            payload = await _off_loop(opened.payload, lambda _: opened.close())
        except asyncio.CancelledError:
            raise  # the thread closes it when it is done
        except BaseException:
            opened.close()
            raise
        return cls(opened, payload)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        reading = self._reading
        if reading is not None and not reading.done():
            await asyncio.wait([reading])  # left by an earlier attempt: the file is shared
        assert self._opened is not None  # only bodies with documents are streamed
        chunks = iter(self._opened)
        while (chunk := await self._next(chunks)) is not None:
            yield chunk

    async def _next(self, chunks: Iterator[bytes]) -> bytes | None:
        with self._state:
            self._in_read = True
        self._reading = asyncio.get_running_loop().run_in_executor(None, self._read, chunks)
        # Shielded: a cancelled write leaves the thread reading; close() waits for it.
        return await asyncio.shield(self._reading)

    def _read(self, chunks: Iterator[bytes]) -> bytes | None:
        try:
            return next(chunks, None)
        finally:
            with self._state:
                self._in_read = False
                close = self._close_after_read
            if close and self._opened is not None:
                self._opened.close()

    def close(self) -> None:
        opened = self._opened
        if opened is None:
            return
        reading = self._reading
        with self._state:
            if self._in_read:
                self._close_after_read = True  # the reading thread closes them
                if reading is not None:
                    reading.add_done_callback(self._consume)
                return
        self._consume(reading)
        opened.close()

    @staticmethod
    def _consume(reading: asyncio.Future[bytes | None] | None) -> None:
        # Retrieved, so that asyncio does not log the error of a read given up on.
        if reading is not None and reading.done() and not reading.cancelled():
            reading.exception()


class AsyncCaller(Caller[AsyncTransport]):
    own = AsyncHttpTransport
    needs = "AsyncFaxClient needs an AsyncTransport (an async post_async() returning the answer)"
    awaits = True
    #: How the caller waits between attempts.
    wait = staticmethod(asyncio.sleep)
    #: How many close() calls began, and how many have not returned: a call begun before
    #: one of them, or while one ran, sends nothing after it (and so opens no connection).
    _closes = 0
    _closing = 0

    async def close(self) -> None:
        self._closes += 1
        self._closing += 1
        try:
            await self.transport.aclose()
        finally:
            self._closing -= 1

    def _opened(self) -> int:
        """What a call started now remembers of close(): -1 while close() runs."""
        return -1 if self._closing else self._closes

    async def call(
        self, name: str, body: Body, rid: str, soap_action: str, *, idempotent: bool
    ) -> Response:
        """The final answer to ``body``, after the retries that are safe."""
        attempts = Attempts(self, name, rid, soap_action, idempotent=idempotent)
        credentials = self.credentials
        opened = self._opened()
        documents: _Documents | None = None
        try:
            # Documents are measured now: Content-Length is what they hold at this moment.
            whole = body.whole
            documents = (
                _Documents(None, whole) if whole is not None else await _Documents.open(body)
            )
            while True:
                token = await credentials.bearer_token_async(rid)
                if self._closes != opened:  # closed while the call waited: no new session
                    raise client_closed(rid, written=attempts.written)
                request = attempts.request(token, documents.body, documents.size)
                try:
                    raw = await self.transport.post_async(request)
                except FaxWSError as exc:
                    retry = self._closes == opened
                    delay = attempts.after_error(exc, request, retry=retry)
                    if delay is None:
                        raise
                else:
                    raw = attempts.answered(raw)
                    if attempts.wants_refresh(raw) and await credentials.refresh_async():
                        continue
                    delay = attempts.after_answer(raw)
                    if delay is None:
                        return raw
                await self.wait(delay)
        except asyncio.CancelledError:
            logger.warning("%s request_id=%s cancelled %s", name, rid, _CANCELLED[attempts.written])
            raise
        finally:
            if documents is not None:
                documents.close()
