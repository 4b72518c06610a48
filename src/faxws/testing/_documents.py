"""A request body as the simulator reads it: kept within a budget, parsed by the core's
:class:`~faxws._protocol.request_reader.RequestReader`, documents stored as they are decoded."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from lxml import etree

from faxws._protocol.request_reader import Refusal, RequestReader, sniff_operation

__all__ = ["SPOOL_THRESHOLD", "Document", "Received"]

#: A document larger than this is written to disk as it is decoded; a smaller one stays in
#: memory while the simulator's ``DOCUMENT_MEMORY`` lasts. Documents on disk are removed at
#: stop() or reset().
SPOOL_THRESHOLD = 64 * 1024


class Document:
    """One FileData's decoded bytes. They stay in memory while the document is small (up to
    :data:`SPOOL_THRESHOLD`); a larger one goes to a file in the spool directory as it is
    decoded, so it is never held whole."""

    def __init__(self, spool: Path) -> None:
        self._spool = spool
        self.path: Path | None = None
        self._out: BinaryIO | None = None
        self._buffer = bytearray()
        self._sha = hashlib.sha256()
        self.size = 0

    @property
    def data(self) -> bytes | None:
        """The bytes, for a document still in memory."""
        return bytes(self._buffer) if self.path is None else None

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    def write(self, data: bytes) -> None:
        self._sha.update(data)
        self.size += len(data)
        if self._out is None and len(self._buffer) + len(data) <= SPOOL_THRESHOLD:
            self._buffer += data
            return
        if self._out is None:
            self._spill()
            assert self._out is not None
        self._out.write(data)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()

    def to_file(self) -> None:
        """Move a finished document that is still in memory to a spool file."""
        if self.path is None:
            self._spill()
            assert self._out is not None
            self._out.close()

    def discard(self) -> None:
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def _spill(self) -> None:
        fd, name = tempfile.mkstemp(dir=self._spool, suffix=".bin")
        self.path = Path(name)
        self._out = os.fdopen(fd, "wb")
        self._out.write(self._buffer)
        self._buffer = bytearray()


class Received:
    """A request body as read: the bytes kept (within the budget) and, for a SOAP request,
    the tree parsed while the body arrived and the documents, or why it was refused."""

    __slots__ = (
        "__weakref__",  # a test sees it freed
        "_reader",
        "body",
        "complete",
        "deviations",
        "documents",
        "head",
        "prolog",
        "refusal",
        "retained",
        "root",
        "size",
    )

    def __init__(self, spool: Path | None) -> None:
        self.body = b""  # as read, when kept; else empty
        self.head = b""  # the first bytes of a body not kept, for the operation's name
        self.size = 0
        self.complete = False
        self.retained = True
        self.root: etree._Element | None = None
        self.refusal: Refusal | None = None
        self.documents: list[Document] = []
        #: How the request differs from the contract's exact form (see ``deviations``).
        self.deviations: tuple[str, ...] = ()
        #: The body's first bytes, as parsed.
        self.prolog = b""
        # The reader adds documents through a function that does not hold this object: a
        # reference cycle would keep every request's tree alive until the next garbage
        # collection.
        self._reader = (
            None if spool is None else RequestReader(_documents_into(self.documents, spool))
        )

    @property
    def operation(self) -> str | None:
        found = None if self._reader is None else self._reader.operation
        return found or sniff_operation(self.body or self.head)

    def feed(self, chunk: bytes) -> None:
        """The next chunk of the body."""
        if self._reader is not None:
            self._reader.feed(chunk)
            if self._reader.refusal is not None and self.documents:
                self.discard()  # at once: the rest of the body is only read, not kept

    def close(self) -> None:
        """The end of the body."""
        reader = self._reader
        if reader is None:
            return
        reader.close()
        self.prolog = reader.prolog
        self.refusal = reader.refusal
        if self.refusal is None:
            self.root = reader.root
        else:
            self.discard()

    def take_documents(self) -> list[Document]:
        """The documents, now owned by the caller."""
        documents = list(self.documents)
        self.documents.clear()
        return documents

    def discard(self) -> None:
        """Remove every spool file this request wrote and no job adopted."""
        for document in self.take_documents():
            document.discard()


def _documents_into(documents: list[Document], spool: Path) -> Callable[[int], Document]:
    """The reader's source of documents: each a new one in ``spool``, listed in
    ``documents``."""

    def new_document(item: int) -> Document:
        document = Document(spool)
        documents.append(document)
        return document

    return new_document
