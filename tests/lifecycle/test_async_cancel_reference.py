"""An async send with job options cancelled while in flight names its reference id in the
log: the caller's only way to find out whether the fax went out."""

from __future__ import annotations

import asyncio
import logging

import pytest

from faxws import AsyncFaxClient, ClientOptions, FaxFile, FileType, JobOptions
from faxws.transport import Request, Response


class Stalling:
    """An async transport that takes the request (written) and never answers."""

    def __init__(self) -> None:
        self.taken = asyncio.Event()

    async def post_async(self, request: Request) -> Response:
        self.taken.set()
        await asyncio.Event().wait()
        raise AssertionError("not reached")

    async def aclose(self) -> None:
        pass


def test_a_cancelled_send_logs_its_reference_id(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        transport = Stalling()
        options = ClientOptions(transport=transport)
        async with AsyncFaxClient(
            "https://fax.example.com", user_id="mbx1", pin="1234", options=options
        ) as client:
            task = asyncio.ensure_future(
                client.send_fax(
                    ["+1 555 0100"],
                    [FaxFile(b"%PDF-1.4", FileType.PDF)],
                    options=JobOptions(reference_id="ref-cancel-1"),
                )
            )
            await asyncio.wait_for(transport.taken.wait(), 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    with caplog.at_level(logging.WARNING, logger="faxws"):
        asyncio.run(main())
    assert any("ref-cancel-1" in r.getMessage() for r in caplog.records)
