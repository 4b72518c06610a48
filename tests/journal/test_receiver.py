"""The push receiver (a WSGI app over a real wsgiref server on a loopback port): a final push
moves its row to its outcome, answered 204; wrong credentials get 401 before the body is read;
bad requests 405, 411, 413 or 400; a journal that cannot record it 500. And the simulator's
own pushes, end to end: rows sent without waiting reach their outcome with no status call."""

from __future__ import annotations

import base64
import http.client
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from runner_support import (
    BUSY,
    DELIVERED_AFTER,
    ORDINARY,
    FakeTime,
    batch_for,
    calls,
    client_for,
    document,
    simulator,
    spec,
)

from faxws import Notify
from faxws.errors import BadInputError
from faxws.journal import Batch, JournalError, JournalStore, State, notification_app
from faxws.notifications import DeliveryNotification, render_notification
from faxws.testing import FaxWSSimulator

USER = "hook"
PASSWORD = "PWMARK-pu5h&+ é"
TIMEOUT = 10
OpenStore = Any


class QuietHandler(WSGIRequestHandler):
    timeout = TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()


@pytest.fixture
def store(open_store: OpenStore, fake: FakeTime) -> JournalStore:
    made: JournalStore = open_store(clock=fake)
    return made


@pytest.fixture
def sim(fake: FakeTime) -> Iterator[FaxWSSimulator]:
    with simulator(fake) as started:
        yield started


class Receiver:
    def __init__(self, batch: Batch) -> None:
        app = notification_app(batch, user=USER, password=PASSWORD, max_bytes=4096)
        self.server = make_server("127.0.0.1", 0, app, handler_class=QuietHandler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/notify"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(TIMEOUT)
        self.server.server_close()
        assert not self.thread.is_alive()

    def post(
        self, headers: dict[str, str], body: bytes | None, method: str = "POST"
    ) -> tuple[int, bytes]:
        """One request; ``body=None`` sends the headers alone."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            if body is None:
                conn.putrequest(method, "/notify", skip_accept_encoding=True)
                for name, value in headers.items():
                    conn.putheader(name, value)
                conn.endheaders()
            else:
                conn.request(method, "/notify", body, headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def push(self, event: DeliveryNotification, flavour: str = "form") -> tuple[int, bytes]:
        headers, body = render_notification(event, flavour, credentials=(USER, PASSWORD))
        return self.post(headers, body)


@pytest.fixture
def receiving() -> Iterator[list[Receiver]]:
    made: list[Receiver] = []
    yield made
    for receiver in made:
        receiver.close()


def receiver_for(receiving: list[Receiver], batch: Batch) -> Receiver:
    receiving.append(Receiver(batch))
    return receiving[-1]


def submitted(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, tmp_path: Path, *numbers: str
) -> tuple[Batch, Any]:
    """A batch with one row sent (not waited for) to ``numbers``."""
    client = client_for(sim)
    batch = batch_for(store, client, fake)
    batch.add("row", spec(document(tmp_path), *numbers))
    batch.run(wait=False)
    (outcome,) = batch.outcomes()
    assert outcome.state is State.SUBMITTED
    return batch, outcome


def event_for(job_id: str, status_id: int, **fields: Any) -> DeliveryNotification:
    return DeliveryNotification(job_id=job_id, status_id=status_id, **fields)


@pytest.mark.parametrize("flavour", ["form", "multipart", "soap"])
def test_a_final_push_moves_its_row_and_is_answered_204(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    tmp_path: Path,
    receiving: list[Receiver],
    flavour: str,
) -> None:
    batch, outcome = submitted(sim, store, fake, tmp_path)
    receiver = receiver_for(receiving, batch)
    assert receiver.push(event_for(outcome.job_ids[0], 1), flavour) == (204, b"")
    assert [o.state for o in batch.outcomes()] == [State.DELIVERED]
    assert calls(sim, "GetRealTimeFaxStatusEx2") == 0


def test_a_failed_push_gives_its_description_as_the_reason(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    tmp_path: Path,
    receiving: list[Receiver],
) -> None:
    batch, outcome = submitted(sim, store, fake, tmp_path)
    receiver = receiver_for(receiving, batch)
    event = event_for(outcome.job_ids[0], 2, description="Failed: no answer")
    assert receiver.push(event)[0] == 204
    (after,) = batch.outcomes()
    assert after.state is State.FAILED
    assert after.reason == f"job {outcome.job_ids[0]}: Failed: no answer"


def test_pushes_in_progress_and_of_other_jobs_change_nothing(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    tmp_path: Path,
    receiving: list[Receiver],
) -> None:
    batch, outcome = submitted(sim, store, fake, tmp_path)
    receiver = receiver_for(receiving, batch)
    assert receiver.push(event_for(outcome.job_ids[0], 3))[0] == 204
    assert receiver.push(event_for("JOB-ELSEWHERE", 1, reference_id="REF-ELSE"))[0] == 204
    assert list(batch.outcomes()) == [outcome]


def test_a_push_for_one_of_several_jobs_has_the_row_looked_up_at_once(
    sim: FaxWSSimulator, store: JournalStore, fake: FakeTime, tmp_path: Path
) -> None:
    batch, outcome = submitted(sim, store, fake, tmp_path, ORDINARY, BUSY)
    first = batch.apply(event_for(outcome.job_ids[0], 1))
    assert first is not None
    assert first.state is State.SUBMITTED
    row = store.get("row")
    assert row is not None
    assert row.next_check_at == fake()


def test_a_push_that_overtakes_its_send_is_asked_again_not_dropped(
    store: JournalStore, fake: FakeTime, tmp_path: Path, receiving: list[Receiver]
) -> None:
    """A final push for a row still sending (by its ReferenceId), or for an unknown job while
    some row is sending, is answered 500 so that the service pushes it again; once nothing is
    sending, an unknown job's push is answered 204 and changes nothing."""
    batch = batch_for(store, object(), fake)
    row = batch.add("racing", spec(document(tmp_path)))
    store.claim("worker", 60, 1)
    store.mark_sending("racing", "worker", 60)
    receiver = receiver_for(receiving, batch)
    by_reference = event_for("JOB-NEW", 1, reference_id=row.reference_id)
    assert receiver.push(by_reference)[0] == 500
    assert receiver.push(event_for("JOB-UNKNOWN", 1))[0] == 500
    assert receiver.push(event_for("JOB-NEW", 3, reference_id=row.reference_id))[0] == 204
    store.mark_submitted("racing", "worker", ["JOB-NEW"], fake())
    assert receiver.push(event_for("JOB-UNKNOWN", 1))[0] == 204
    assert receiver.push(by_reference)[0] == 204
    assert [o.state for o in batch.outcomes()] == [State.DELIVERED]


def test_a_push_settles_an_uncertain_row(
    store: JournalStore, fake: FakeTime, tmp_path: Path
) -> None:
    batch = batch_for(store, object(), fake)
    row = batch.add("lost", spec(document(tmp_path)))
    store.claim("worker", 60, 1)
    store.mark_sending("lost", "worker", 60)
    store.mark_uncertain("lost", "worker", "no answer")
    outcome = batch.apply(event_for("JOB-9", 1, reference_id=row.reference_id))
    assert outcome is not None
    assert (outcome.state, outcome.job_ids) == (State.DELIVERED, ("JOB-9",))


@pytest.mark.parametrize(
    "authorization",
    [None, "wrong password", "other user", "Bearer x"],
)
def test_wrong_credentials_get_401_before_the_body_is_read(
    store: JournalStore, fake: FakeTime, receiving: list[Receiver], authorization: str | None
) -> None:
    """The body announced is never sent: an app reading it first would wait, and the request
    would time out instead of being answered."""
    receiver = receiver_for(receiving, batch_for(store, object(), fake))
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": "100"}
    basic = {
        "wrong password": f"{USER}:nope",
        "other user": f"other:{PASSWORD}",
    }
    if authorization in basic:
        token = base64.b64encode(basic[authorization].encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    elif authorization is not None:
        headers["Authorization"] = authorization
    status, body = receiver.post(headers, None)
    assert status == 401
    assert PASSWORD.encode() not in body


def test_bad_requests_are_refused(
    store: JournalStore, fake: FakeTime, receiving: list[Receiver]
) -> None:
    receiver = receiver_for(receiving, batch_for(store, object(), fake))
    good, body = render_notification(event_for("J", 1), credentials=(USER, PASSWORD))
    assert receiver.post(good, body, method="PUT")[0] == 405
    no_length = dict(good)
    no_length["Content-Length"] = "x"
    assert receiver.post(no_length, b"")[0] == 411
    big = dict(good, **{"Content-Length": "5000"})
    assert receiver.post(big, None)[0] == 413
    status, text = receiver.post(good, b"FaxJobStatusId=1")
    assert status == 400
    assert b"FaxJobId" in text


def test_a_journal_that_cannot_record_the_push_answers_500(
    store: JournalStore, fake: FakeTime, receiving: list[Receiver]
) -> None:
    class Failing(Batch):
        def apply(self, notification: DeliveryNotification) -> Any:
            raise JournalError("journal /x.db: disk I/O error")

    receiver = receiver_for(receiving, Failing(store, object(), clock=fake))
    assert receiver.push(event_for("J", 1))[0] == 500
    assert receiver.push(event_for("J", 3))[0] == 204  # nothing to record


def test_the_app_checks_its_arguments(store: JournalStore) -> None:
    with pytest.raises(BadInputError):
        notification_app(object(), user=USER, password=PASSWORD)  # type: ignore[arg-type]
    with pytest.raises(BadInputError):
        notification_app(Batch(store, object()), user="a:b", password=PASSWORD)


def test_the_simulators_pushes_bring_rows_to_their_outcome(
    sim: FaxWSSimulator,
    store: JournalStore,
    fake: FakeTime,
    tmp_path: Path,
    receiving: list[Receiver],
) -> None:
    client = client_for(sim)
    pdf = document(tmp_path)
    receiver = receiver_for(receiving, batch_for(store, client, fake))
    notify = Notify(receiver.url, user=USER, password=PASSWORD)
    batch = batch_for(store, client, fake, notify=notify)
    for n in range(5):
        batch.add(f"fax-{n}", spec(pdf))
    batch.add("busy", spec(pdf, BUSY))
    batch.run(workers=2, wait=False)
    fake.advance(DELIVERED_AFTER)
    assert sim.wait_for_pushes(TIMEOUT)
    fake.advance(2 + 5 + 300 + 5 + 300 + 5)
    assert sim.wait_for_pushes(TIMEOUT)
    outcomes = {o.key: o.state for o in batch.outcomes()}
    assert outcomes == {**{f"fax-{n}": State.DELIVERED for n in range(5)}, "busy": State.FAILED}
    assert calls(sim, "GetRealTimeFaxStatusEx2") == 0
    for job in sim.jobs:
        assert job.details is not None
        assert job.details.notify_destination == receiver.url
    stored = "".join(o.key + repr(store.get(o.key)) for o in batch.outcomes())
    assert PASSWORD not in stored
