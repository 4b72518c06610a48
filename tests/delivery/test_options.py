"""ClientOptions: one set of options for every face, with each default and check in one
place; given as ``options=`` or as keyword arguments, never both."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

import faxws
from conftest import Face
from faxws import AsyncFaxClient, BadInputError, ClientOptions, FaxClient
from faxws.transport import MockTransport
from faxws.zeep import make_client

BASE = "https://fax.example.com"


def made(face: str, **kwargs: Any) -> Any:
    """A client of ``face`` (sync, async or zeep) for BASE; not used for calls."""
    kwargs.setdefault("user_id", "u")
    kwargs.setdefault("pin", "1")
    if face == "sync":
        return FaxClient(BASE, **kwargs)
    if face == "async":
        return AsyncFaxClient(BASE, **kwargs)
    return make_client(BASE, **kwargs)


def options_of(face: str, client: Any) -> ClientOptions:
    options: ClientOptions = client.transport.caller.options if face == "zeep" else client.options
    return options


def close(face: str, client: Any) -> None:
    if face == "sync":
        client.close()
    elif face == "zeep":
        client.transport.close()


FACES = ["sync", "async", "zeep"]


def test_client_options_is_exported_from_faxws() -> None:
    assert faxws.ClientOptions is ClientOptions
    assert "ClientOptions" in faxws.__all__


@pytest.mark.parametrize("face", FACES)
def test_every_face_takes_options_or_the_same_keywords(face: str) -> None:
    settings: dict[str, Any] = {
        "timeout": (3, 7),
        "retries": 5,
        "retry_backoff": 0.25,
        "max_connections": 3,
        "max_response_bytes": 4096,
        "proxies": {"https": "http://px.example:3128"},
    }
    by_options = made(face, options=ClientOptions(**settings))
    by_keywords = made(face, **settings)
    try:
        assert options_of(face, by_options) == options_of(face, by_keywords)
        assert options_of(face, by_keywords).timeout == (3.0, 7.0)
    finally:
        close(face, by_options)
        close(face, by_keywords)


@pytest.mark.parametrize("face", FACES)
def test_an_option_given_both_ways_is_refused_by_name(face: str) -> None:
    with pytest.raises(BadInputError) as info:
        made(face, options=ClientOptions(retries=1), timeout=5)
    assert info.value.field == "timeout"
    assert "both as a keyword argument and in options=" in info.value.problem


@pytest.mark.parametrize("face", FACES)
def test_options_of_another_type_are_refused(face: str) -> None:
    with pytest.raises(BadInputError) as info:
        made(face, options={"timeout": 5})
    assert info.value.field == "options"


def test_the_defaults_are_the_clients_own() -> None:
    """Not given, max_connections is the face's own: 32 for the threaded clients, 16 for the
    async one; every other default is ClientOptions'."""
    sync = FaxClient(BASE, user_id="u", pin="1")
    asynchronous = AsyncFaxClient(BASE, user_id="u", pin="1")
    try:
        assert sync.options == asynchronous.options == ClientOptions()
        assert ClientOptions().timeout == (10.0, 60.0)
        assert ClientOptions().max_connections is None
        assert sync._caller.transport._max_connections == 32
        assert asynchronous._caller.transport._max_connections == 16
    finally:
        sync.close()


@pytest.mark.parametrize(
    ("settings", "field", "words"),
    [
        ({"timeout": 0}, "timeout", "seconds"),
        ({"timeout": (1, 2, 3)}, "timeout", "pair"),
        ({"verify": "/nonexistent/ca.pem"}, "verify", "no CA"),
        ({"proxies": {"https": "socks5://h:1"}}, "proxies['https']", "http:// or https://"),
        ({"retries": 11}, "retries", "outside"),
        ({"retry_backoff": -1}, "retry_backoff", "0 to 3600"),
        ({"retry_backoff": True}, "retry_backoff", "0 to 3600"),
        ({"max_connections": 0}, "max_connections", "outside"),
        ({"max_response_bytes": 10}, "max_response_bytes", "outside"),
        ({"retry_random": 0.5}, "retry_random", "a function"),
        ({"transport": object()}, "transport", "SyncTransport"),
        ({"transport": MockTransport}, "transport", "not the class MockTransport"),
        ({"allow_insecure_http": "no"}, "allow_insecure_http", "True or False, not str"),
        ({"allow_insecure_http": None}, "allow_insecure_http", "True or False, not NoneType"),
        # An unencoded "/" in a password ends the host there: refused, the password unshown.
        ({"proxies": {"https": "http://u:12/34@p:8080"}}, "proxies['https']", "nothing after"),
        ({"proxies": {"https": "http://u:8#b@p:8080"}}, "proxies['https']", "nothing after"),
        ({"proxies": {"https": "http://p:8080/path"}}, "proxies['https']", "nothing after"),
    ],
)
def test_each_field_is_checked_when_the_options_are_made(
    settings: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(BadInputError) as info:
        ClientOptions(**settings)
    assert info.value.field == field
    assert words in info.value.problem
    assert "34" not in str(info.value)
    assert "8#b" not in str(info.value)


@pytest.mark.parametrize("face", FACES)
def test_allow_insecure_http_must_be_a_bool_in_every_face(face: str) -> None:
    with pytest.raises(BadInputError) as info:
        made(face, allow_insecure_http="false")
    assert info.value.field == "allow_insecure_http"


def test_the_token_provider_takes_a_bool_for_plain_http_too() -> None:
    from faxws.oauth import ClientCredentials

    with pytest.raises(BadInputError) as info:
        ClientCredentials("http://login.example.com/token", "id", "s", allow_insecure_http="no")  # type: ignore[arg-type]
    assert info.value.field == "allow_insecure_http"


def test_plain_http_through_a_remote_proxy_is_refused_with_options_too(face: Face) -> None:
    options = ClientOptions(proxies={"http": "http://px.example:3128"})
    with pytest.raises(BadInputError) as info:
        face.client("http://localhost:8080", user_id="u", pin="1", options=options)
    assert info.value.field == "proxies['http']"
    allowed = dataclasses.replace(options, allow_insecure_http=True)
    assert face.client("http://localhost:8080", user_id="u", pin="1", options=allowed).url


def test_options_are_frozen_comparable_copyable_and_show_no_proxy_credentials() -> None:
    options = ClientOptions(proxies={"https": "http://user:s3cret@px.example:3128"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.retries = 3  # type: ignore[misc]
    assert options == copy.deepcopy(options) == pickle.loads(pickle.dumps(options))  # noqa: S301
    assert hash(options) == hash(ClientOptions(proxies=dict(options.proxies)))
    assert "s3cret" not in repr(options)
    assert "http://***@px.example:3128" in repr(options)
    assert dataclasses.replace(options, retries=0).retries == 0
    with pytest.raises(BadInputError):
        dataclasses.replace(options, retries=-1)


@pytest.mark.parametrize("name", ["BearerAuth", "PinAuth"])
def test_the_credential_classes_left_the_package_namespace(name: str) -> None:
    """No public function takes them: they live in faxws.auth, and the old import still
    works, with a warning each time."""
    import faxws.auth

    assert name not in faxws.__all__
    assert name not in dir(faxws)
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match=f"faxws.{name} is deprecated"):
            assert getattr(faxws, name) is getattr(faxws.auth, name)
