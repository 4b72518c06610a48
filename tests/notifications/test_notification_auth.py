"""With the job's NotifyAuthUser and NotifyAuthPassword given, a push must carry them as HTTP
Basic credentials; they are checked before the body and never appear in what is raised."""

from __future__ import annotations

import base64
import hmac
import traceback
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest
from notification_cases import CREDENTIALS, EVENT, FORM, PASSWORD, USER, basic, parse

from faxws import BadInputError, FaxWSError
from faxws._protocol.redact import secret_forms
from faxws.notifications import (
    NotificationAuthError,
    NotificationError,
    check_credentials,
    parse_notification,
    render_notification,
)

FORM_TYPE = ("Content-Type", "application/x-www-form-urlencoded")


def secret_spellings() -> set[str]:
    """The password as it may be written anywhere: as is, in base64 (alone and in a Basic
    token), URL-encoded, and in repr, JSON and XML spellings."""
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode("ascii")
    alone = base64.b64encode(PASSWORD.encode()).decode("ascii")
    spellings = {
        token,
        alone,
        quote(PASSWORD, safe=""),
        quote_plus(PASSWORD),
        *secret_forms(PASSWORD),
    }
    spellings |= {PASSWORD.encode("utf-8").hex(), repr(PASSWORD.encode("utf-8"))[2:-1]}
    return spellings


def assert_no_secret(exc: BaseException) -> None:
    shown = [str(exc), repr(exc), *map(str, exc.args), *map(repr, exc.args)]
    shown += ["".join(traceback.format_exception(exc))]
    if isinstance(exc, NotificationError):
        shown += [exc.message, exc.problem, exc.field]
    for text in shown:
        for spelling in secret_spellings():
            assert spelling not in text, (spelling, text)


WRONG: dict[str, list[tuple[str, str]]] = {
    "no Authorization header": [],
    "an empty Authorization header": [("Authorization", "")],
    "the wrong user": [("Authorization", basic("someone-else", PASSWORD))],
    "the wrong password": [("Authorization", basic(USER, "not-it"))],
    "the password less its last character": [("Authorization", basic(USER, PASSWORD[:-1]))],
    "the password and more": [("Authorization", basic(USER, PASSWORD + "x"))],
    "user and password swapped": [("Authorization", basic(PASSWORD.replace(":", ""), USER))],
    "the credentials in Latin-1": [
        (
            "Authorization",
            "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode("latin-1")).decode(),
        )
    ],
    "no colon": [
        ("Authorization", "Basic " + base64.b64encode(f"{USER}{PASSWORD}".encode()).decode())
    ],
    "bad base64": [("Authorization", "Basic " + basic(USER, PASSWORD)[6:-2] + "!")],
    "base64 with non-ASCII": [("Authorization", "Basic é" + basic(USER, PASSWORD)[6:])],
    "the Bearer scheme": [("Authorization", f"Bearer {PASSWORD}")],
    "the Digest scheme": [("Authorization", "Digest " + basic(USER, PASSWORD)[6:])],
    "no scheme": [("Authorization", basic(USER, PASSWORD)[6:])],
    "the header twice": [("Authorization", basic(USER, PASSWORD))] * 2,
}


@pytest.mark.parametrize("headers", list(WRONG.values()), ids=list(WRONG))
def test_wrong_or_missing_credentials_are_refused(headers: list[tuple[str, str]]) -> None:
    _, body = FORM
    with pytest.raises(NotificationAuthError) as caught:
        parse_notification(body, [FORM_TYPE, *headers], credentials=CREDENTIALS)
    assert caught.value.field == "Authorization"
    assert isinstance(caught.value, NotificationError)
    assert isinstance(caught.value, FaxWSError)
    assert_no_secret(caught.value)


RIGHT = {
    "as written by render": basic(USER, PASSWORD),
    "the scheme in lower case": "basic " + basic(USER, PASSWORD)[6:],
    "spaces around": "  BASIC   " + basic(USER, PASSWORD)[6:] + "  ",
}


@pytest.mark.parametrize("value", list(RIGHT.values()), ids=list(RIGHT))
def test_the_right_credentials_are_accepted(value: str) -> None:
    _, body = FORM
    headers = {"content-type": FORM_TYPE[1], "AUTHORIZATION": value}
    assert parse_notification(body, headers, credentials=CREDENTIALS) == EVENT
    check_credentials(headers, CREDENTIALS)


@pytest.mark.parametrize("flavour", ["form", "multipart", "soap"])
def test_render_adds_the_credentials_parse_expects(flavour: str) -> None:
    rendered = render_notification(EVENT, flavour, credentials=CREDENTIALS)
    assert rendered[0]["Authorization"] == basic(USER, PASSWORD)
    assert parse(rendered, credentials=CREDENTIALS) == EVENT


def test_without_credentials_no_authorization_is_asked_for() -> None:
    assert parse(FORM) == EVENT


@pytest.mark.parametrize(
    "body",
    [b"<!DOCTYPE x [<!ENTITY a 'b'>]><x/>", b"\xff" * 100, b"x" * 2000],
    ids=["a DTD", "not text", "too large"],
)
def test_credentials_are_checked_before_the_body(body: bytes) -> None:
    headers = [("Content-Type", "text/xml"), ("Authorization", basic(USER, "wrong"))]
    with pytest.raises(NotificationAuthError):
        parse_notification(body, headers, credentials=CREDENTIALS, max_bytes=1000)


def test_both_halves_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal-length digests, and the password compared even when the user is wrong: how long
    the check takes says nothing about which part is wrong, nor how much of it."""
    compared: list[tuple[bytes, bytes]] = []
    real: Callable[[bytes, bytes], bool] = hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    with pytest.raises(NotificationAuthError):
        check_credentials({"Authorization": basic("x", "y")}, CREDENTIALS)
    assert len(compared) == 2
    assert all(len(a) == len(b) == 32 for a, b in compared)


def test_a_hostile_field_holding_the_password_is_masked_in_the_message() -> None:
    headers = [FORM_TYPE, ("Authorization", basic(USER, PASSWORD))]
    body = b"FaxJobId=J&FaxJobStatusId=" + quote_plus(PASSWORD).encode()
    with pytest.raises(NotificationError) as caught:
        parse_notification(body, headers, credentials=CREDENTIALS)
    assert caught.value.field == "FaxJobStatusId"
    assert "***" in caught.value.problem
    assert_no_secret(caught.value)


@pytest.mark.parametrize(
    "credentials",
    [("user:colon", "pw"), ("user",), ["user", "pw"], ("user", None), "user:pw"],
    ids=["a colon in the user", "one item", "a list", "no password", "a string"],
)
def test_credentials_must_be_a_user_and_password(credentials: object) -> None:
    with pytest.raises(BadInputError) as caught:
        parse(FORM, credentials=credentials)
    assert caught.value.field == "credentials"
    assert "pw" not in str(caught.value)


@pytest.mark.parametrize("user", ["u", "us", USER], ids=["padded ==", "padded =", "unpadded"])
@pytest.mark.parametrize("padding", [True, False], ids=["with padding", "without"])
@pytest.mark.parametrize("field", ["FaxDeliveryDateTime", "FaxJobStatusId"])
def test_a_field_echoing_the_basic_token_is_masked_in_the_message(
    user: str, padding: bool, field: str
) -> None:
    token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode("ascii")
    shown = token if padding else token.rstrip("=")
    headers = [FORM_TYPE, ("Authorization", basic(user, PASSWORD))]
    fields = {"FaxJobId": "J", "FaxJobStatusId": "1", field: shown}
    body = "&".join(f"{name}={quote_plus(value)}" for name, value in fields.items()).encode()
    with pytest.raises(NotificationError) as caught:
        parse_notification(body, headers, credentials=(user, PASSWORD))
    assert caught.value.field == field
    assert caught.value.problem.endswith(": '***'")
    assert token.rstrip("=") not in str(caught.value)
