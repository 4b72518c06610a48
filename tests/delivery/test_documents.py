"""The service gets exactly the document, or nothing it could accept.

Each test sends over a real socket to a scripted server, from each face (FaxClient and
AsyncFaxClient), and compares what the server decoded with the file. When a document changes
while it is being sent, the body is never completed (the server reads fewer bytes than
Content-Length announced) and the call raises DocumentError; ``maybe_delivered`` is True once
bytes went out.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Face, send_response
from faxws import BadInputError, DocumentError, FaxClient, FaxFile, FaxWSError
from scripted import Conn, ScriptedServer, reply

ANSWER = reply(send_response(["J1"]))
# Past the streaming threshold, and far more than the client can have read while the server
# holds back (the client's send buffer, at most 4 MiB here, plus the server's receive buffer
# plus one chunk), so a change made then is in the part not read yet.
BIG = 16 << 20


def answering(conn: Conn) -> None:
    if conn.read_request() is not None:
        conn.send(ANSWER)


def client(server: ScriptedServer, face: Face) -> Any:
    return face.client(server.url(), user_id="u", pin="1234", retries=2, retry_backoff=0)


def pattern(size: int, seed: int = 0) -> bytes:
    block = bytes((i * 7 + seed) % 251 for i in range(4096))
    return (block * (size // len(block) + 1))[:size]


class ShortReads(io.RawIOBase):
    """A seekable raw stream whose reads return at most ``limit`` bytes (legal for RawIOBase)."""

    def __init__(self, data: bytes, limit: int) -> None:
        self._data = data
        self._pos = 0
        self._limit = limit

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: len(self._data)}[whence]
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self._limit, len(self._data) - self._pos)
        buffer[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


@pytest.mark.parametrize(
    ("limit", "size"),
    [
        (limit, size)
        for limit in (1, 1000, 4097, 65537)
        for size in (5, 100_000, 3 << 20)
        if (limit, size) != (1, 3 << 20)
    ],  # one byte a read for 3 MiB adds only time
)
def test_short_reads_are_sent_whole_with_a_true_content_length(
    serve: Callable[..., ScriptedServer],
    limit: int,
    size: int,
    face: Face,
) -> None:
    data = pattern(size)
    server = serve(answering)
    client(server, face).send_fax(["+1 555 0100"], [FaxFile(ShortReads(data, limit), 101)])
    [request] = server.requests
    assert int(request.header("Content-Length") or 0) == len(request.body)
    assert request.documents() == [data]
    assert b"=" not in request.body.split(b"<FileData>")[1].split(b"</FileData>")[0][:-2]


@pytest.mark.parametrize("size", [1, 2, 3, 256 * 1024 - 1, 256 * 1024, 256 * 1024 + 1])
def test_bytes_on_either_side_of_the_inline_limit_arrive_whole(
    serve: Callable[..., ScriptedServer], tmp_path: Path, size: int, face: Face
) -> None:
    """Bytes up to INLINE_LIMIT are encoded as the envelope is written, larger ones while
    sending; beside a file, in either order, each arrives as it was."""
    from faxws._protocol.writer import INLINE_LIMIT

    assert INLINE_LIMIT == 256 * 1024
    data = pattern(size, seed=size % 7)
    path = tmp_path / "scan.pdf"
    path.write_bytes(b"%PDF-1.4 from a file")
    server = serve(answering)
    documents = [FaxFile(data, 101), FaxFile.from_path(path), FaxFile(bytearray(data), 101)]
    client(server, face).send_fax(["+1 555 0100"], documents)
    [request] = server.requests
    assert int(request.header("Content-Length") or 0) == len(request.body)
    assert request.documents() == [data, b"%PDF-1.4 from a file", data]


@pytest.mark.parametrize(("count", "whole"), [(2, True), (3, False), (24, False)])
def test_bytes_are_encoded_early_only_while_the_body_is_sent_whole_anyway(
    count: int, whole: bool
) -> None:
    """Documents in memory are encoded as the envelope is written while the body stays within
    STREAM_THRESHOLD (such a body is sent in one piece anyway); past it, the rest stream
    (each part within the time-out), as they did before."""
    import base64

    from faxws import bindings
    from faxws._protocol.writer import STREAM_THRESHOLD, as_values, envelope_of

    documents = [pattern(256 * 1024, seed=i) for i in range(count)]
    files = tuple((i, 101, FaxFile(d, 101).content) for i, d in enumerate(documents, 1))
    body = envelope_of(
        bindings.SendFax,
        (
            "u",
            "",
            as_values(bindings.FaxJobRecipients, ((("+1 555 0100", "", "", "", ""),),)),
            as_values(bindings.FaxJobFiles, (files,)),
        ),
    )
    assert (body.whole is not None) is whole
    sent = b"".join(body)
    assert (len(sent) <= STREAM_THRESHOLD) is whole
    encoded = [base64.b64encode(d) for d in documents]
    assert [part.split(b"</FileData>")[0] for part in sent.split(b"<FileData>")[1:]] == encoded


def test_a_file_that_grew_before_the_send_is_sent_whole(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(b"%PDF-1.4 first page\n")
    document = FaxFile.from_path(path)
    with path.open("ab") as fh:  # the scanner goes on writing
        fh.write(b"second page\n" * 1000)
    server = serve(answering)
    client(server, face).send_fax(["+1 555 0100"], [document])
    assert server.requests[0].documents() == [path.read_bytes()]


def test_a_file_that_shrank_before_the_send_is_sent_as_it_is_now(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    path = tmp_path / "a.pdf"
    path.write_bytes(b"x" * 5000)
    document = FaxFile.from_path(path)
    path.write_bytes(b"y" * 10)
    server = serve(answering)
    client(server, face).send_fax(["+1 555 0100"], [document])
    assert server.requests[0].documents() == [b"y" * 10]


def change_while_sending(
    serve: Callable[..., ScriptedServer],
    change: Callable[[], None],
    document: FaxFile,
    face: Face,
) -> tuple[ScriptedServer, FaxWSError]:
    """Send ``document``; the server reads the head, waits until ``change`` ran, then reads
    on. The server's small receive buffer stops the client long before the file's end."""
    go = threading.Event()

    def script(conn: Conn) -> None:
        if conn.read_request(pause=go) is not None:
            conn.send(ANSWER)

    server = serve(script, rcvbuf=256 << 10)
    errors: list[FaxWSError] = []

    def run() -> None:
        try:
            client(server, face).send_fax(["+1 555 0100"], [document])
        except FaxWSError as exc:
            errors.append(exc)

    sender = threading.Thread(target=run)
    sender.start()
    try:
        assert server.headers_read.wait(30)
        change()
    finally:
        go.set()
        sender.join(60)
    assert not sender.is_alive()
    assert len(errors) == 1
    server.wait_served(1)
    return server, errors[0]


def test_a_file_that_grows_while_being_sent_is_never_completed(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(pattern(BIG))

    def grow() -> None:
        with path.open("ab") as fh:
            fh.write(b"late page")

    server, error = change_while_sending(serve, grow, FaxFile.from_path(path), face)
    assert isinstance(error, DocumentError)
    assert "grew" in error.message
    assert error.maybe_delivered is True
    assert [r.complete for r in server.received] == [False]
    assert server.connections == 1  # not sent again


def test_a_file_that_shrinks_while_being_sent_is_never_completed(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(pattern(BIG))

    def shrink() -> None:
        os.truncate(path, BIG // 2)

    server, error = change_while_sending(serve, shrink, FaxFile.from_path(path), face)
    assert isinstance(error, DocumentError)
    assert "shrank" in error.message
    assert error.maybe_delivered is True
    assert error.request_id is not None
    assert [r.complete for r in server.received] == [False]


class FailingRead(io.BytesIO):
    """Raises on the read that passes ``fail_at`` bytes."""

    def __init__(self, data: bytes, fail_at: int) -> None:
        super().__init__(data)
        self._fail_at = fail_at

    def read(self, size: int | None = -1) -> bytes:
        if self.tell() + (size or 0) > self._fail_at:
            raise OSError(5, "Input/output error")
        return super().read(size)


def test_a_file_object_failing_mid_send_is_a_document_error_and_never_completed(
    serve: Callable[..., ScriptedServer],
    face: Face,
) -> None:
    server = serve(answering)
    stream = FailingRead(pattern(3 << 20), fail_at=2 << 20)
    with pytest.raises(DocumentError) as info:
        client(server, face).send_fax(["+1 555 0100"], [FaxFile(stream, 101)], request_id="rid-io")
    assert info.value.maybe_delivered is True
    assert info.value.request_id == "rid-io"
    assert "Input/output error" in info.value.message
    assert isinstance(info.value.__cause__, OSError)
    server.wait_served(1)
    assert server.requests == []  # the reset may even discard what the server had not read
    assert server.connections == 1


def test_a_document_failing_mid_send_ends_the_connection_with_a_reset(
    serve: Callable[..., ScriptedServer],
    face: Face,
) -> None:
    """A TCP reset, not a clean close: nothing that takes a close for the end of a body (a
    server, a proxy) can take the incomplete one for a whole request."""
    ends: list[str] = []

    def script(conn: Conn) -> None:
        if conn.read_head() is None:
            return
        try:
            while conn.server.wait_readable(conn.sock):
                if not conn.sock.recv(65536):
                    ends.append("closed")
                    return
        except ConnectionResetError:
            ends.append("reset")

    server = serve(script)
    stream = FailingRead(pattern(3 << 20), fail_at=2 << 20)
    with pytest.raises(DocumentError):
        client(server, face).send_fax(["+1 555 0100"], [FaxFile(stream, 101)])
    server.wait_served(1)
    assert ends == ["reset"]


def test_a_small_file_object_failing_is_refused_before_anything_is_sent(
    serve: Callable[..., ScriptedServer],
    face: Face,
) -> None:
    server = serve(answering)
    stream = FailingRead(pattern(5000), fail_at=100)
    with pytest.raises(DocumentError) as info:
        client(server, face).send_fax(["+1 555 0100"], [FaxFile(stream, 101)])
    assert info.value.maybe_delivered is False
    assert server.connections == 0


@pytest.mark.parametrize("size", [5000, 3 << 20], ids=["small", "streamed"])
def test_a_closed_file_object_is_refused_before_anything_is_sent(
    serve: Callable[..., ScriptedServer],
    size: int,
    face: Face,
) -> None:
    server = serve(answering)
    stream = io.BytesIO(pattern(size))
    document = FaxFile(stream, 101)
    stream.close()
    with pytest.raises(DocumentError) as info:
        client(server, face).send_fax(["+1 555 0100"], [document], request_id="rid-closed")
    assert info.value.maybe_delivered is False
    assert info.value.request_id == "rid-closed"
    assert "closed" in info.value.message
    assert server.connections == 0


def test_a_deleted_file_is_refused_before_anything_is_sent(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    path = tmp_path / "gone.pdf"
    path.write_bytes(b"%PDF")
    document = FaxFile.from_path(path)
    path.unlink()
    server = serve(answering)
    with pytest.raises(DocumentError) as info:
        client(server, face).send_fax(["+1 555 0100"], [document])
    assert info.value.maybe_delivered is False
    assert "gone.pdf" in info.value.message
    assert server.connections == 0


def test_one_file_object_sent_from_two_threads_arrives_intact_twice(
    serve: Callable[..., ScriptedServer],
) -> None:
    data = pattern(3 << 20, seed=3)
    document = FaxFile(ShortReads(data, 100_000), 101)
    server = serve(answering)
    shared = FaxClient(server.url(), user_id="u", pin="1234")
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start.wait(30)
            shared.send_fax(["+1 555 0100"], [document])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert [r.documents() for r in server.requests] == [[data], [data]]


def test_one_file_object_twice_in_one_request(
    serve: Callable[..., ScriptedServer], face: Face
) -> None:
    stream = io.BytesIO(pattern(2 << 20))
    server = serve(answering)
    client(server, face).send_fax(["+1 555 0100"], [FaxFile(stream, 101), FaxFile(stream, 101)])
    assert server.requests[0].documents() == [stream.getvalue()] * 2


def discarding(conn: Conn) -> None:
    if conn.read_request(keep=False) is not None:
        conn.send(ANSWER)


def test_a_large_document_costs_memory_of_a_few_chunks_not_of_its_size(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    import tracemalloc

    size = 48 << 20
    path = tmp_path / "big.pdf"
    with path.open("wb") as fh:
        fh.truncate(size)  # sparse: no memory or disk to make it
    server = serve(discarding)
    fax = client(server, face)
    tracemalloc.start()
    try:
        fax.send_fax(["+1 555 0100"], [FaxFile.from_path(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(server.requests) == 1
    assert peak < size // 8, f"peak {peak / size:.2f}x the document"


class NoSeekResult(io.BytesIO):
    """A file object whose seek() returns None, as some libraries' file objects do."""

    def seek(self, offset: int, whence: int = 0) -> None:  # type: ignore[override]
        super().seek(offset, whence)


class ByteArrayReads(io.BytesIO):
    def read(self, size: int | None = -1) -> bytearray:  # type: ignore[override]
        return bytearray(super().read(size))


@pytest.mark.parametrize("kind", [NoSeekResult, ByteArrayReads])
def test_legal_but_unusual_file_objects_are_sent_whole(
    serve: Callable[..., ScriptedServer],
    kind: type[io.BytesIO],
    face: Face,
) -> None:
    data = pattern(3 << 20, seed=5)
    server = serve(answering)
    client(server, face).send_fax(["+1 555 0100"], [FaxFile(kind(data), 101)])
    assert server.requests[0].documents() == [data]


class Raising(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        raise RuntimeError("the remote side went away")


def test_whatever_a_file_object_raises_at_construction_is_bad_input() -> None:
    import lzma

    with lzma.open(io.BytesIO(b"not xz data at all")) as corrupt:
        for stream in (corrupt, Raising()):
            with pytest.raises(BadInputError) as info:
                FaxFile(stream, 101)
            assert info.value.field == "data"
            assert "cannot read the file object" in info.value.problem


def test_a_fifo_or_device_is_refused_at_once(tmp_path: Path, face: Face) -> None:
    fifo = tmp_path / "pipe.pdf"
    os.mkfifo(fifo)  # nothing will ever write to it: opening it for reading would block
    for action in (lambda: FaxFile.from_path(fifo), lambda: FaxFile(Path("/dev/zero"), 101)):
        with pytest.raises(BadInputError) as info:
            action()
        assert "not a regular file" in info.value.problem
    with pytest.raises(BadInputError) as verify:
        face.client("https://fax.example.com", user_id="u", pin="1", verify=str(fifo))
    assert verify.value.field == "verify"


def test_a_fifo_swapped_in_after_construction_is_refused_before_sending(
    serve: Callable[..., ScriptedServer],
    tmp_path: Path,
    face: Face,
) -> None:
    path = tmp_path / "a.pdf"
    path.write_bytes(b"%PDF")
    document = FaxFile.from_path(path)
    path.unlink()
    os.mkfifo(path)
    server = serve(answering)
    with pytest.raises(DocumentError) as info:
        client(server, face).send_fax(["+1 555 0100"], [document])
    assert "not a regular file" in info.value.message
    assert server.connections == 0


class SlowSeekToEnd(io.BytesIO):
    """Seeking to the end takes a while (as over a network file system), which gives a
    concurrent reader every chance to read at the wrong position."""

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        position = super().seek(offset, whence)
        if whence == os.SEEK_END:
            threading.Event().wait(0.02)  # the slow seek itself, not a synchronization
        return position


def test_making_a_fax_file_from_a_stream_being_sent_waits_for_that_send(
    serve: Callable[..., ScriptedServer],
    face: Face,
) -> None:
    data = pattern(BIG)
    stream = SlowSeekToEnd(data)
    go = threading.Event()

    def script(conn: Conn) -> None:
        if conn.read_request(pause=go, keep=False) is not None:
            conn.send(ANSWER)

    server = serve(script, rcvbuf=256 << 10)
    errors: list[BaseException] = []
    made: list[FaxFile] = []

    def send() -> None:
        try:
            client(server, face).send_fax(["+1 555 0100"], [FaxFile(stream, 101)])
        except BaseException as exc:
            errors.append(exc)

    def make() -> None:
        try:
            for _ in range(20):  # measures the stream: must not move it mid-send
                made.append(FaxFile(stream, 101))
        except BaseException as exc:
            errors.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    maker = threading.Thread(target=make)
    try:
        assert server.headers_read.wait(30)
        maker.start()
    finally:
        go.set()
        sender.join(60)
        maker.join(60)
    assert not sender.is_alive()
    assert not maker.is_alive()
    assert errors == []
    assert [r.complete for r in server.received] == [True]
    assert made[0].size == len(data)
