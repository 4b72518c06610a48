"""``maybe_delivered`` is the call's, not its last attempt's: once any attempt of a call may
have been delivered, whatever ends the call says so (and never that nothing was sent), for
every face: FaxClient, AsyncFaxClient and the zeep client.

Each attempt is played by a MockTransport (and a token provider) from a script of events, in
order; waits between attempts are zero. GetFaxBroadcastReport is retried after a transport
failure or a 503, and the service may act on every attempt it reads (it mails a report).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conftest import Face, report_response
from faxws import (
    ClientOptions,
    ConnectError,
    FaxWSError,
    HTTPStatusError,
    ProtocolError,
    ServiceError,
    TransportError,
)
from faxws.transport import MockTransport, Request, Response
from faxws.zeep import make_client

BASE = "https://fax.example.com"

#: What each event of a script does. Token events are consumed when the client asks for a
#: token, the others when it posts an attempt.
TOKEN_EVENTS = {"no token"}


def play(event: str) -> Response:
    if event == "lost":  # read by the service, then the connection broke: no answer
        raise TransportError("the connection was lost", maybe_delivered=True)
    if event == "refused":
        raise ConnectError("cannot connect to fax.example.com:443: refused; nothing was sent")
    if event == "unknown job":
        return Response(200, {}, report_response(False, -5019, "Invalid Job ID"))
    return Response(int(event), {"Content-Type": "text/html"}, b"<html>no</html>")


class Script:
    """The events of one call's attempts, consumed in order."""

    def __init__(self, events: tuple[str, ...]) -> None:
        self.events = list(events)

    def token(self) -> str:
        if self.events and self.events[0] in TOKEN_EVENTS:
            self.events.pop(0)
            raise ProtocolError("the token endpoint answered HTTP 503", status_code=503)
        return "tok-1"

    def answer(self, request: Request) -> Response:
        assert self.events, "the call made an attempt more than the script has"
        return play(self.events.pop(0))


def call_report(face: str, make_face: Callable[[str], Face], script: Script) -> None:
    options = ClientOptions(transport=MockTransport(script.answer), retries=1, retry_backoff=0)
    if face == "zeep":
        zeep_client = make_client(BASE, user_id="u", token=script.token, options=options)
        zeep_client.service.GetFaxBroadcastReport(
            JobId="J1", RecipientType=1, RecipAddress="a@example.com"
        )
        return
    client = make_face(face).client(BASE, user_id="u", token=script.token, options=options)
    client.get_fax_broadcast_report("J1", 1, "a@example.com")


CASES: dict[str, tuple[tuple[str, ...], type[FaxWSError], bool]] = {
    # An earlier attempt may have been delivered: the call may have been.
    "lost, then refused": (("lost", "refused"), ConnectError, True),
    "503, then no token": (("503", "no token"), ProtocolError, True),
    "503, then 404": (("503", "404"), HTTPStatusError, True),
    "503, then a WSError": (("503", "unknown job"), ServiceError, True),
    "503, then 401, then no token": (("503", "401", "no token"), ProtocolError, True),
    # No attempt may have been: nothing was sent, or the service refused each one.
    "refused, then refused": (("refused", "refused"), ConnectError, False),
    "refused, then no token": (("refused", "no token"), ProtocolError, False),
    "401, then no token": (("401", "no token"), ProtocolError, False),
    "401, then 404": (("401", "404"), HTTPStatusError, False),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("face", ["sync", "async", "zeep"])
def test_a_calls_error_is_maybe_delivered_when_any_attempt_may_have_been(
    face: str, make_face: Callable[[str], Face], case: str
) -> None:
    events, error, maybe_delivered = CASES[case]
    script = Script(events)
    with pytest.raises(error) as info:
        call_report(face, make_face, script)
    assert script.events == [], "the call ended before its last attempt"
    exc: Any = info.value
    assert exc.maybe_delivered is maybe_delivered
    if maybe_delivered:
        assert "nothing was sent" not in str(exc)
        assert "an earlier attempt of this call may have been delivered" in str(exc)
    elif events[-1] == "refused":
        assert "nothing was sent" in str(exc)
