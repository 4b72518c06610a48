"""A batch worker process for the SIGKILL tests: opens a journal, builds a :class:`Batch` with
a short lease against the simulator, and runs it to the end (exit 0, the counts by state on
stdout as JSON).

Given a kill point, it SIGKILLs itself there, the first time the point is reached: the store
and the transport it hands to Batch are wrapped (the library is used as it is), and before
dying it writes which point and which row to the record file (fsynced), so that the test
knows what the dead worker held. The points, in the order of a send's life:

- ``claim``: a row was claimed (its lease not yet used);
- ``reserved``: several rows were moved to SENDING in one commit, none of them started;
- ``sending``: a row's start mark was committed, before any byte of its send;
- ``started_after_answer``: a row's start mark was committed with the answer of the send
  before it recorded (one commit), before any byte of its send;
- ``mid_body``: the first part of the SendFaxEx body was written, not the rest;
- ``answered``: the service answered the SendFaxEx (it accepted it), before the runner saw it;
- ``before_submitted``: the runner is about to record the job ids;
- ``submitted``: the job ids were recorded;
- ``polling``: a status call was answered, before the runner saw the answer.

Usage: ``python kill_worker.py CONFIG_JSON`` with the keys ``target`` (a journal path or a
PostgreSQL DSN), ``url`` (the simulator's), ``lease`` (seconds), ``kill`` (a point or null),
``record`` (a file path), ``workers`` (threads), ``lookup_delay`` (seconds before the first
look-up of an uncertain row: the runner's constant, shortened so that a row whose send never
arrived reaches review in seconds, not minutes), ``claim_seconds`` (optional: the runner's
constant; a long one makes every claim after the first take all it may).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

POINTS = (
    "claim",
    "reserved",
    "sending",
    "started_after_answer",
    "mid_body",
    "answered",
    "before_submitted",
    "submitted",
    "polling",
)
#: The points after which the service holds the row's job.
ACCEPTED = frozenset({"answered", "before_submitted", "submitted", "polling"})


class Killer:
    """Kills this process at ``point`` (once), recording the point and the row first."""

    def __init__(self, point: str | None, record: str) -> None:
        if point is not None and point not in POINTS:
            raise SystemExit(f"unknown kill point {point!r}")
        self.point = point
        self.record = record
        self.current: str | None = None  # the key of the row being sent, for the record
        self._lock = threading.Lock()

    def at(self, point: str, key: str | None = None, **more: Any) -> None:
        if point != self.point:
            return
        with self._lock:  # one thread writes the record; the others wait for the kill
            with open(self.record, "w", encoding="utf-8") as fh:
                found = {"point": point, "key": key or self.current, "pid": os.getpid(), **more}
                json.dump(found, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.kill(os.getpid(), signal.SIGKILL)


class KillingStore:
    """The journal store as Batch sees it, with the kill points that are store calls."""

    def __init__(self, inner: Any, killer: Killer) -> None:
        self._inner = inner
        self._killer = killer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def claim(self, owner: str, lease_seconds: float, limit: int) -> Any:
        rows = self._inner.claim(owner, lease_seconds, limit)
        if rows:
            self._killer.at("claim", rows[0].key)
        return rows

    def mark_sending_many(self, keys: Any, owner: str, lease_seconds: float | None = None) -> Any:
        moved = self._inner.mark_sending_many(keys, owner, lease_seconds)
        if len(moved) >= 2:
            self._killer.at("reserved", moved[0], keys=moved)
        return moved

    def start_send(self, key: str, owner: str, submitted: Any = None) -> None:
        if submitted is not None:
            self._killer.at("before_submitted", submitted.key)
        self._inner.start_send(key, owner, submitted)
        self._killer.current = key
        if submitted is not None:
            self._killer.at("started_after_answer", key, answered=submitted.key)
        self._killer.at("sending", key)

    def mark_submitted(self, key: str, owner: str, job_ids: Any, check_at: Any = None) -> Any:
        self._killer.at("before_submitted", key)
        row = self._inner.mark_submitted(key, owner, job_ids, check_at)
        self._killer.at("submitted", key)
        return row


class CutBody:
    """A request body that writes its first half, then kills the process when the transport
    asks for the rest (so that half is on the wire: the transport wrote it before asking)."""

    def __init__(self, body: bytes | Iterable[bytes], length: int, killer: Killer) -> None:
        self._body = body
        self._length = length
        self._killer = killer

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes]:
        pieces = [self._body] if isinstance(self._body, bytes) else self._body
        for piece in pieces:
            half = max(1, len(piece) // 2)
            yield bytes(piece[:half])
            self._killer.at("mid_body")
            yield bytes(piece[half:])


_OPERATION = re.compile(rb"<(?:[\w.-]+:)?(\w+)[\s>/]")


def operation(request: Any) -> str:
    """The SOAP operation of a request: the first element in its envelope's Body (a body of
    chunks, the first chunk's, which holds the envelope's head)."""
    body = request.body
    if not isinstance(body, bytes):
        pieces = iter(body)
        body = next(pieces, b"")
        getattr(pieces, "close", lambda: None)()  # the documents it opened
    start = body.find(b"Body")
    found = _OPERATION.search(body, start + 4 if start >= 0 else 0)
    return found.group(1).decode() if found else ""


class KillingTransport:
    """faxws's own transport, with the kill points that are on the wire."""

    def __init__(self, inner: Any, killer: Killer) -> None:
        self._inner = inner
        self._killer = killer

    def post(self, request: Any) -> Any:
        action = operation(request)
        if action == "SendFaxEx" and self._killer.point == "mid_body":
            request.body = CutBody(request.body, request.size, self._killer)
        response = self._inner.post(request)
        if action == "SendFaxEx":
            self._killer.at("answered")
        elif action.startswith("GetRealTimeFaxStatus"):
            self._killer.at("polling")
        return response

    def close(self) -> None:
        self._inner.close()


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from faxws import ClientOptions, FaxClient
    from faxws._http.sync_transport import HttpTransport
    from faxws.journal import Batch, _runner, open_journal
    from faxws.testing import DEMO_PIN, DEMO_USER_ID

    _runner.LOOKUP_DELAY = float(config.get("lookup_delay", _runner.LOOKUP_DELAY))
    _runner.CLAIM_SECONDS = float(config.get("claim_seconds", _runner.CLAIM_SECONDS))
    killer = Killer(config.get("kill"), config["record"])
    store = KillingStore(open_journal(config["target"]), killer)
    url = config["url"]
    inner = HttpTransport(f"{url}/fax/v5", ClientOptions(), lambda text: text)
    options = ClientOptions(transport=KillingTransport(inner, killer), retry_backoff=0)
    client = FaxClient(url, user_id=DEMO_USER_ID, pin=DEMO_PIN, options=options)
    batch = Batch(store, client, lease_seconds=float(config["lease"]))  # type: ignore[arg-type]
    try:
        summary = batch.run(workers=int(config.get("workers", 1)), wait=True)
    finally:
        client.close()
        store.close()
    print(json.dumps({state.value: n for state, n in summary.counts.items() if n}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
