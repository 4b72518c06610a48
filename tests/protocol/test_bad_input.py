"""Bad input: a BadInputError naming the field, raised before any request is made, by each
face (FaxClient and AsyncFaxClient)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import responses

from conftest import URL, CaptureServer, Face, http_reply, report_response, send_response
from faxws import BadInputError, FaxFile, FaxWSError, Recipient

BASE = "https://fax.example.com"
OK_FILE = FaxFile(b"%PDF-1.4", 101)

#: Makes a client of the face under test: ``make(base_url=..., token=..., ...)``.
Make = Callable[..., Any]


def maker(face: Face, base_url: str = BASE) -> Make:
    def make(**kw: Any) -> Any:
        args: dict[str, Any] = {"user_id": "mbx1", "token": "tok"}
        args.update(kw)
        return face.client(args.pop("base_url", base_url), **args)

    return make


def send(*recipients: Any, files: Any = None, **kw: Any) -> Callable[[Make], object]:
    return lambda c: c().send_fax(
        list(recipients) or ["+1 555 0100"], [OK_FILE] if files is None else files, **kw
    )


def report(*args: Any, **kw: Any) -> Callable[[Make], object]:
    return lambda c: c().get_fax_broadcast_report(*args, **kw)


def missing_path() -> Callable[[Make], object]:
    return lambda c: FaxFile.from_path(Path("/nonexistent/dir/a.pdf"))


CASES: list[tuple[str, Callable[[Make], object], str, str]] = [
    # (case id, action, field named, words of the problem)
    ("token with LF", lambda c: c(token="abc\nX-Evil: 1"), "token", "U+000A"),
    ("token with CR", lambda c: c(token="abc\rdef"), "token", "U+000D"),
    ("token with space", lambda c: c(token="abc def"), "token", "U+0020"),
    ("empty token", lambda c: c(token=""), "token", "must not be empty"),
    ("empty pin", lambda c: c(token=None, pin=""), "pin", "must not be empty"),
    ("pin with NUL", lambda c: c(token=None, pin="12\x0034"), "pin", "U+0000"),
    ("both token and pin", lambda c: c(pin="1234"), "token/pin", "not both"),
    ("neither token nor pin", lambda c: c(token=None), "token/pin", "give token"),
    ("user id with LF", lambda c: c(user_id="mbx1\nx"), "user_id", "line break"),
    ("empty user id", lambda c: c(user_id=""), "user_id", "must not be empty"),
    ("user id with NUL", lambda c: c(user_id="mbx\x00"), "user_id", "U+0000"),
    ("request id with CRLF", send(request_id="r1\r\nX-Evil: 1"), "request_id", "U+000D"),
    ("request id too long", report("J", request_id="r" * 201), "request_id", "at most 200"),
    (
        "base url with userinfo",
        lambda c: c(base_url="https://u:p@fax.example.com"),
        "base_url",
        "user information",
    ),
    (
        "base url with query",
        lambda c: c(base_url="https://fax.example.com/?a=1"),
        "base_url",
        "query",
    ),
    (
        "base url with fragment",
        lambda c: c(base_url="https://fax.example.com/#top"),
        "base_url",
        "fragment",
    ),
    ("base url ftp scheme", lambda c: c(base_url="ftp://fax.example.com"), "base_url", "scheme"),
    ("base url without host", lambda c: c(base_url="https:///fax"), "base_url", "no host"),
    (
        "plain http to a remote host",
        lambda c: c(base_url="http://fax.example.com"),
        "base_url",
        "use https",
    ),
    ("fax number without digits", send("call me"), "recipients[0].fax_number", "no digits"),
    ("fax number empty", send(""), "recipients[0].fax_number", "must not be empty"),
    ("recipient of wrong type", send(12345), "recipients[0]", "must be a Recipient"),
    ("no recipients", lambda c: c().send_fax([], [OK_FILE]), "recipients", "at least one"),
    (
        "recipients as a bare string",
        lambda c: c().send_fax("+1 555", [OK_FILE]),
        "recipients",
        "list of Recipient",
    ),
    ("no files", send(files=[]), "files", "at least one"),
    ("file of wrong type", send(files=[b"%PDF"]), "files[0]", "must be a FaxFile"),
    (
        "duplicate file indexes",
        send(files=[FaxFile(b"a", 101, 1), FaxFile(b"b", 101, 1)]),
        "files[1].index",
        "also the index of files[0]",
    ),
    (
        "index collides with a position",
        send(files=[FaxFile(b"a", 101, 2), FaxFile(b"b", 101)]),
        "files[1].index",
        "also the index",
    ),
    ("zero file index", lambda c: FaxFile(b"a", 101, index=0), "index", "outside 1.."),
    ("negative file index", lambda c: FaxFile(b"a", 101, index=-3), "index", "outside 1.."),
    ("file index above xs:int", lambda c: FaxFile(b"a", 101, index=2**31), "index", "outside"),
    ("file type above xs:int", lambda c: FaxFile(b"a", 2**31), "file_type", "outside"),
    ("file type below xs:int", lambda c: FaxFile(b"a", -(2**31) - 1), "file_type", "outside"),
    ("file type as a string", lambda c: FaxFile(b"a", "pdf"), "file_type", "must be an int"),
    ("file type as a bool", lambda c: FaxFile(b"a", True), "file_type", "must be an int"),
    ("empty file", lambda c: FaxFile(b"", 101), "data", "empty"),
    ("str as file data", lambda c: FaxFile("%PDF-1.4 text", 101), "data", "is a str"),
    ("text-mode file object", lambda c: FaxFile(io.StringIO("x"), 101), "data", "binary mode"),
    ("unreadable path", missing_path(), "data", "cannot read"),
    ("unknown extension", lambda c: FaxFile.from_path("notes.xyz"), "file_type", "'.xyz'"),
    (
        "tiff needs an explicit type",
        lambda c: FaxFile.from_path("scan.tif"),
        "file_type",
        "TIFF_G4",
    ),
    ("job id empty", report(""), "job_id", "must not be empty"),
    ("job id with NUL", report("J\x001"), "job_id", "U+0000"),
    ("recipient type without address", report("J1", recipient_type=1), "recipient_type", "both"),
    (
        "address without recipient type",
        report("J1", recip_address="a@b.c"),
        "recipient_type/recip_address",
        "both",
    ),
    (
        "recipient type above xs:int",
        report("J1", recipient_type=2**31, recip_address="a@b.c"),
        "recipient_type",
        "outside",
    ),
    (
        "address with U+FFFF",
        report("J1", recipient_type=1, recip_address="a\uffffb"),
        "recip_address",
        "U+FFFF",
    ),
    ("negative timeout", lambda c: c(timeout=-1), "timeout", "seconds"),
    (
        "recipient name with NUL",
        lambda c: c().send_fax([Recipient("+1 555 0100", name="Bob\x00")], [OK_FILE]),
        "name",
        "U+0000",
    ),
    (
        "company with U+0001",
        lambda c: c().send_fax([Recipient("+1 555 0100", company="A\x01")], [OK_FILE]),
        "company",
        "U+0001",
    ),
    (
        "title with U+FFFE",
        lambda c: c().send_fax([Recipient("+1 555 0100", title="\ufffe")], [OK_FILE]),
        "title",
        "U+FFFE",
    ),
    (
        "secure csid with a lone surrogate",
        lambda c: c().send_fax([Recipient("+1 555 0100", secure_csid="\ud800")], [OK_FILE]),
        "secure_csid",
        "U+D800",
    ),
    ("fax number with LF", send("+1 555\n0100"), "recipients[0].fax_number", "line break"),
    ("directory as a file", lambda c: FaxFile(Path("/"), 101), "data", "is a directory"),
    (
        "base url with CRLF",
        lambda c: c(base_url="https://fax.example.com/\r\nX: 1"),
        "base_url",
        "whitespace",
    ),
    ("retries out of range", lambda c: c(retries=-1), "retries", "outside"),
    ("timeout nan", lambda c: c(timeout=float("nan")), "timeout", "finite"),
    ("timeout inf", lambda c: c(timeout=float("inf")), "timeout", "finite"),
    ("timeout 1e12", lambda c: c(timeout=1e12), "timeout", "at most"),
    ("read timeout nan", lambda c: c(timeout=(1, float("nan"))), "timeout", "finite"),
    ("timeout triple", lambda c: c(timeout=(1, 2, 3)), "timeout", "pair"),
    ("timeout as bool", lambda c: c(timeout=True), "timeout", "seconds"),
    ("retry backoff nan", lambda c: c(retry_backoff=float("nan")), "retry_backoff", "0 to"),
    ("retry backoff inf", lambda c: c(retry_backoff=float("inf")), "retry_backoff", "0 to"),
    ("verify: missing CA path", lambda c: c(verify="/nonexistent/ca.pem"), "verify", "no CA"),
    ("verify: not a CA bundle", lambda c: c(verify=__file__), "verify", "not a usable CA"),
    ("verify of wrong type", lambda c: c(verify=3), "verify", "must be True, False"),
    (
        "socks proxy",
        lambda c: c(proxies={"https": "socks5://127.0.0.1:1080"}),
        "proxies['https']",
        "http:// or https://",
    ),
    ("proxy without host", lambda c: c(proxies={"https": "http://"}), "proxies", "with a host"),
    (
        "plain http to a *.localhost name",
        lambda c: c(base_url="http://evil.localhost:8080"),
        "base_url",
        "use https",
    ),
    (
        "plain http to localhost through a remote proxy",
        lambda c: c(base_url="http://localhost:8080", proxies={"http": "http://px.example:3128"}),
        "proxies['http']",
        "through the proxy px.example",
    ),
    (
        "plain http to loopback through an 'all' proxy",
        lambda c: c(base_url="http://127.0.0.1:8080", proxies={"all": "http://px.example:1"}),
        "proxies['all']",
        "would expose the credentials",
    ),
    (
        "plain http to localhost.example",
        lambda c: c(base_url="http://localhost.example.com"),
        "base_url",
        "use https",
    ),
]


@pytest.mark.parametrize(
    ("action", "field", "words"),
    [pytest.param(a, f, w, id=i) for i, a, f, w in CASES],
)
def test_bad_input_is_refused_before_sending(
    mocked: responses.RequestsMock,
    capture_server: type[CaptureServer],
    face: Face,
    action: Callable[[Make], object],
    field: str,
    words: str,
) -> None:
    mocked.post(URL, body=send_response(["J1"]))  # what requests would send, it sends here
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    with pytest.raises(BadInputError) as info:
        action(maker(face, server.url))
    err = info.value
    assert err.field.startswith(field), err.field
    assert words in err.problem, err.problem
    assert str(err).startswith(f"{err.field}: ")
    assert len(mocked.calls) == 0
    assert server.captured.connections == 0


def test_recipient_with_nul_in_name_is_refused_at_construction() -> None:
    with pytest.raises(BadInputError) as info:
        Recipient("+1 555 0100", name="Bob\x00")
    assert (info.value.field, info.value.problem) == (
        "name",
        "contains U+0000, which XML cannot carry",
    )


def test_directory_as_file(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="is a directory") as info:
        FaxFile(tmp_path, 101)
    assert info.value.field == "data"


def test_bad_input_during_a_call_carries_the_request_id(
    mocked: responses.RequestsMock, capture_server: type[CaptureServer], face: Face
) -> None:
    server = capture_server(lambda raw: http_reply(send_response(["J1"])))
    with pytest.raises(BadInputError) as info:
        maker(face, server.url)().send_fax(["no digits here"], [OK_FILE], request_id="rid-77")
    assert info.value.request_id == "rid-77"
    assert "request id rid-77" in str(info.value)
    assert len(mocked.calls) == 0
    assert server.captured.connections == 0


def test_bad_input_error_is_a_faxws_error_and_a_value_error() -> None:
    with pytest.raises(BadInputError) as info:
        FaxFile(b"", 101)
    assert isinstance(info.value, FaxWSError)
    assert isinstance(info.value, ValueError)
    assert info.value.maybe_delivered is False


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]"])
def test_plain_http_is_allowed_to_loopback_only(host: str, face: Face) -> None:
    client = maker(face)
    assert client(base_url=f"http://{host}:8080").url == f"http://{host.lower()}:8080/fax/v5"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"token_url": "http://evil.localhost/token"},
        {"token_url": "http://localhost.evil.example/token"},
        {"token_url": "https://h:99999/token"},
        {"leeway": float("nan")},
        {"timeout": float("inf")},
        {"verify": "/nonexistent/ca.pem"},
    ],
    ids=["evil.localhost", "localhost.evil", "bad port", "leeway nan", "timeout inf", "no CA"],
)
def test_token_provider_arguments_are_checked_at_construction(
    kwargs: dict[str, Any], face: Face
) -> None:
    args: dict[str, Any] = {"token_url": "https://id.example.com/token"}
    args.update(kwargs)
    with pytest.raises(BadInputError) as info:
        face.provider(args.pop("token_url"), "cid", "secret", **args)
    assert info.value.field in {"token_url", "leeway", "timeout", "verify"}


@pytest.mark.parametrize(
    ("token_url", "problem"),
    [
        ("https://cid:{secret}@id.example.com/token", "user information"),
        ("https://{secret}@id.example.com/token", "user information"),
        ("https://id.example.com/token?client_secret={secret}", "query"),
        ("https://id.example.com/token?", "query"),
        ("https://id.example.com/token#{secret}", "fragment"),
        ("https://cid:{secret}/token", "http(s) URL with a host"),  # the secret as a port
        ("https://id.example.com/to ken{secret}", "http(s) URL with a host"),
    ],
    ids=["user and password", "user", "query", "empty query", "fragment", "port", "space"],
)
def test_a_token_url_carrying_credentials_is_refused_without_showing_them(
    face: Face, token_url: str, problem: str
) -> None:
    """As a base URL with them is: credentials go in the form body, never in the URL that
    repr() and errors show."""
    secret = "TokenUrlS3cret"
    with pytest.raises(BadInputError) as info:
        face.provider(token_url.format(secret=secret), "cid", "secret")
    assert info.value.field == "token_url"
    assert problem in info.value.problem
    assert secret not in str(info.value)
    assert secret not in repr(info.value)


@pytest.mark.parametrize(
    "base_url",
    ["https://cid:{secret}/fax", "https://fax.example.com:{secret}", "https://[{secret}/"],
    ids=["the secret as a port", "a port that is no number", "an IPv6 address left open"],
)
def test_a_base_url_that_cannot_be_read_is_refused_without_quoting_it(
    face: Face, base_url: str
) -> None:
    secret = "BaseUrlS3cret"
    with pytest.raises(BadInputError) as info:
        maker(face)(base_url=base_url.format(secret=secret))
    assert info.value.field == "base_url"
    assert secret not in str(info.value)
    assert secret not in repr(info.value)


def test_plain_http_through_a_loopback_proxy_or_https_through_any_proxy_is_allowed(
    face: Face,
) -> None:
    client = maker(face)
    local = {"http": "http://127.0.0.1:3128"}
    assert client(base_url="http://localhost:8080", proxies=local).url.startswith("http:")
    remote = {"https": "http://px.example:3128", "all": "http://px.example:3128"}
    assert client(base_url="https://fax.example.com", proxies=remote).url.startswith("https:")


def test_plain_http_to_remote_host_allowed_only_by_explicit_opt_in(face: Face) -> None:
    c = maker(face)(base_url="http://fax.internal.example", allow_insecure_http=True)
    assert c.url == "http://fax.internal.example/fax/v5"


def test_report_with_both_narrowing_arguments_is_sent(
    capture_server: type[CaptureServer], face: Face
) -> None:
    server = capture_server(lambda raw: http_reply(report_response()))
    result = maker(face, server.url)().get_fax_broadcast_report("J1", 2, "ops@example.com")
    assert (result.recipient_type, result.recip_address) == (2, "ops@example.com")
    assert len(server.captured.requests) == 1
