"""Document sources and the readers that send them: exactly the announced bytes, or an error.

A document is measured when a request is opened for sending (:meth:`Source.open`), as its
Content-Length is announced. A reader fills every chunk however short the file's reads are, and
raises :class:`~faxws.errors.DocumentError` (for any failure of the file object too) as soon as
the file ends early or turns out longer, before its last bytes: a body that does not match what
was announced is never completed.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from faxws.errors import DocumentError

__all__ = [
    "BusyError",
    "BytesSource",
    "PathSource",
    "Reader",
    "Source",
    "StreamSource",
    "measure_stream",
    "open_all",
    "open_regular",
    "release_stream",
    "streams_of",
    "try_acquire_stream",
]


class Reader(Protocol):
    """An opened document: its size at opening, and its bytes in full chunks."""

    @property
    def size(self) -> int: ...

    def chunks(self, chunk_size: int) -> Iterator[bytes]:
        """The whole document from its start, in chunks of ``chunk_size`` bytes (the last may
        be shorter); may be called again for a resend."""
        ...

    def close(self) -> None: ...


class Source(Protocol):
    """A document that can be opened for sending (see :class:`Reader`)."""

    @property
    def size(self) -> int:
        """The size when last measured (for display; the request uses the size at opening)."""
        ...

    @property
    def name(self) -> str:
        """A short description for messages: a file name, ``<bytes>`` or ``<stream>``."""
        ...

    def open(self) -> Reader: ...


def _exact(read: Callable[[int], Any], size: int, chunk_size: int, name: str) -> Iterator[bytes]:
    """``size`` bytes from ``read`` in full chunks; the last chunk is held back until the
    source has been seen to end there."""
    done = 0
    while done < size:
        want = min(chunk_size, size - done)
        pieces: list[bytes] = []
        got = 0
        while got < want:
            piece = _call_read(read, want - got, name)
            if not piece:
                raise DocumentError(
                    f"{name} ended after {done + got} of the {size} bytes announced "
                    "(it shrank while being sent)",
                    document=name,
                )
            pieces.append(piece)
            got += len(piece)
        done += want
        if done == size and _call_read(read, 1, name):
            raise DocumentError(
                f"{name} is longer than the {size} bytes announced (it grew while being sent)",
                document=name,
            )
        yield pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _call_read(read: Callable[[int], Any], n: int, name: str) -> bytes:
    try:
        data = read(n)
    except Exception as exc:  # any failure of a caller's file object
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DocumentError(
            f"{name} could not be read: {type(exc).__name__}: {reason}", document=name
        ) from exc
    if data is None:
        raise DocumentError(
            f"{name} returned no data (a non-blocking file object cannot be sent)", document=name
        )
    if not isinstance(data, bytes):
        if not isinstance(data, (bytearray, memoryview)):
            raise DocumentError(f"{name} returned {type(data).__name__}, not bytes", document=name)
        data = bytes(data)
    if len(data) > n:
        raise DocumentError(f"{name} returned more bytes than asked for", document=name)
    return data


class BytesSource:
    """Bytes already in memory (no copy)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        # A bytearray is copied: the caller could change it between the check and the send.
        self._data = memoryview(bytes(data) if isinstance(data, bytearray) else data).cast("B")

    @property
    def size(self) -> int:
        return self._data.nbytes

    @property
    def data(self) -> memoryview:
        return self._data

    @property
    def name(self) -> str:
        return "<bytes>"

    def open(self) -> BytesSource:
        return self

    def chunks(self, chunk_size: int) -> Iterator[bytes]:
        data = self._data
        for start in range(0, data.nbytes, chunk_size):
            yield bytes(data[start : start + chunk_size])

    def close(self) -> None:
        pass


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file. Opening does not block (a
    FIFO without a writer would wait for ever), and the check is made on the opened file, so
    a path swapped for a device or a pipe after a check cannot slip through."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise (
                IsADirectoryError(0, "not a regular file")
                if os.path.isdir(path)
                else OSError(0, "not a regular file (a device, pipe or socket)")
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class PathSource:
    """A file on disk, opened afresh by each send (so concurrent sends do not interfere)."""

    __slots__ = ("_path", "_size")

    def __init__(self, path: Path, size: int) -> None:
        self._path = path
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    @property
    def name(self) -> str:
        return self._path.name

    def open(self) -> _FileReader:
        try:
            fh = open_regular(self._path)
        except OSError as exc:
            raise DocumentError(
                f"{self.name} cannot be opened: {exc.strerror or type(exc).__name__}",
                document=self.name,
            ) from None
        try:
            size = os.fstat(fh.fileno()).st_size
        except OSError as exc:
            fh.close()
            raise DocumentError(
                f"{self.name} cannot be measured: {exc.strerror}", document=self.name
            ) from None
        if size == 0:
            fh.close()
            raise DocumentError(f"{self.name} is empty", document=self.name)
        self._size = size
        return _FileReader(fh, 0, size, self.name, owned=True)


class _FileReader:
    """``size`` bytes of a file from ``start``. Closing closes a file the send opened, and puts
    a caller's file object back where the FaxFile found it, to be sent (or wrapped) again."""

    __slots__ = ("_fh", "_name", "_owned", "_start", "size")

    def __init__(self, fh: BinaryIO, start: int, size: int, name: str, *, owned: bool) -> None:
        self._fh = fh
        self._start = start
        self.size = size
        self._name = name
        self._owned = owned

    def chunks(self, chunk_size: int) -> Iterator[bytes]:
        try:
            self._fh.seek(self._start)
        except Exception as exc:
            raise DocumentError(
                f"{self._name} cannot be rewound: {type(exc).__name__}: {exc}", document=self._name
            ) from None
        return _exact(self._fh.read, self.size, chunk_size, self._name)

    def close(self) -> None:
        if self._owned:
            self._fh.close()
            return
        with contextlib.suppress(Exception):
            self._fh.seek(self._start)


class BusyError(Exception):
    """A file object is being sent by a call of the event loop this thread runs."""


def _on_event_loop() -> bool:
    # Without asyncio imported no loop can be running: the check does not import it (the
    # command line's start-up would pay for it).
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_registry_lock = threading.Lock()
# id(file object) -> [lock, number of sends holding or waiting for it]. An entry lives only
# while a send uses the object, so a reused id() never finds a stale lock.
_stream_locks: dict[int, list[Any]] = {}


def _acquire_stream(stream: object) -> threading.Lock:
    with _registry_lock:
        entry = _stream_locks.setdefault(id(stream), [threading.Lock(), 0])
        entry[1] += 1
    lock: threading.Lock = entry[0]
    lock.acquire()
    return lock


def try_acquire_stream(stream: object) -> threading.Lock | None:
    """The object's send lock if it is free now, else None (for callers that must not
    block: an event loop waits for it without holding a thread)."""
    with _registry_lock:
        entry = _stream_locks.setdefault(id(stream), [threading.Lock(), 0])
        lock: threading.Lock = entry[0]
        if not lock.acquire(blocking=False):
            return None
        entry[1] += 1
    return lock


def release_stream(stream: object, lock: threading.Lock) -> None:
    lock.release()
    with _registry_lock:
        entry = _stream_locks[id(stream)]
        entry[1] -= 1
        if entry[1] == 0:
            del _stream_locks[id(stream)]


def measure_stream(stream: Any) -> tuple[int, int]:
    """(position, bytes from there to the end) of a seekable file object, measured under its
    send lock, not to disturb a send in progress; on an event loop's thread, whose waiting
    would stop the very call holding the lock, an object being sent is refused (BusyError)."""
    lock = try_acquire_stream(stream) if _on_event_loop() else _acquire_stream(stream)
    if lock is None:
        raise BusyError
    try:
        start = stream.tell()
        stream.seek(0, os.SEEK_END)
        end = stream.tell()  # not seek()'s result: some file objects return None
        stream.seek(start)
    finally:
        release_stream(stream, lock)
    return start, end - start


class StreamSource:
    """A seekable binary file object, sent from its position when the FaxFile was made."""

    __slots__ = ("_name", "_size", "_start", "stream")

    def __init__(self, stream: BinaryIO, start: int, size: int, name: str) -> None:
        self.stream = stream
        self._start = start
        self._size = size
        self._name = name

    @property
    def size(self) -> int:
        return self._size

    @property
    def name(self) -> str:
        return self._name

    def open(self) -> _FileReader:
        """Measure the object; the caller holds its lock (see :func:`open_all`)."""
        try:
            self.stream.seek(0, os.SEEK_END)
            end = self.stream.tell()
            self.stream.seek(self._start)
        except Exception as exc:
            raise DocumentError(
                f"{self.name} cannot be measured: {type(exc).__name__}: {exc}", document=self.name
            ) from None
        size = end - self._start
        if size <= 0:
            raise DocumentError(
                f"{self.name} has no data after position {self._start}", document=self.name
            )
        self._size = size
        return _FileReader(self.stream, self._start, size, self.name, owned=False)


class Opened:
    """The readers of one request's documents, and the file-object locks they hold."""

    __slots__ = ("_locks", "readers")

    def __init__(
        self, readers: list[Reader], locks: Sequence[tuple[object, threading.Lock]]
    ) -> None:
        self.readers = readers
        self._locks = list(locks)

    def close(self) -> None:
        for reader in self.readers:
            reader.close()
        for stream, lock in reversed(self._locks):
            release_stream(stream, lock)
        self._locks = []


def streams_of(sources: Sequence[Source]) -> list[object]:
    """The file objects among ``sources``, once each, in the order their locks are taken."""
    streams = {id(s.stream): s.stream for s in sources if isinstance(s, StreamSource)}
    return [streams[k] for k in sorted(streams)]


def open_all(
    sources: Sequence[Source], held: Sequence[tuple[object, threading.Lock]] | None = None
) -> Opened:
    """Open every document of a request. Sends of one file object (one shared position) take
    turns: each is locked once (a request may send it twice), in a fixed order so that two
    requests sharing two cannot wait for each other; ``held``: those locks, taken already."""
    if held is None:
        locks = [(stream, _acquire_stream(stream)) for stream in streams_of(sources)]
    else:
        locks = list(held)
    opened = Opened([], locks)
    try:
        for source in sources:
            opened.readers.append(source.open())
    except BaseException:
        opened.close()
        raise
    return opened
