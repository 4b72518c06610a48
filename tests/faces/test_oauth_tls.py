"""A CA bundle given to a token provider is the only trust it uses: CAs the environment
names (SSL_CERT_FILE and SSL_CERT_DIR, which OpenSSL's default paths read;
REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE, which requests reads) never widen it, and the client
secret is never sent to a server certified by another CA.

Two CAs: the token endpoint's certificate comes from CA B; the provider is given CA A's
bundle (a file, or a hashed directory) while the environment names CA B.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from conftest import Face
from faxws import ConnectError
from scripted import WAIT, Conn, ScriptedServer, reply

SECRET = "s3cr3t-client-secret"


@pytest.fixture(scope="module")
def cas() -> tuple[trustme.CA, trustme.CA]:
    return trustme.CA(), trustme.CA()


def ca_dir(ca: trustme.CA, path: Path) -> str:
    """A directory OpenSSL looks CAs up in: each certificate under its subject hash."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("naming a hashed CA directory needs the openssl command")
    path.mkdir()
    pem = path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    subject_hash = subprocess.run(
        [openssl, "x509", "-hash", "-noout", "-in", str(pem)],
        capture_output=True,
        text=True,
        check=True,
        timeout=WAIT,
    ).stdout.strip()
    pem.rename(path / f"{subject_hash}.0")
    return str(path)


@pytest.fixture
def endpoint(cas: tuple[trustme.CA, trustme.CA]) -> Iterator[ScriptedServer]:
    """A token endpoint certified by CA B, answering a token to whoever completes TLS."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cas[1].issue_cert("127.0.0.1", "localhost").configure_cert(context)

    def script(conn: Conn) -> None:
        conn.handshake()
        if conn.read_request() is not None:
            conn.send(reply(b'{"access_token": "tok", "token_type": "Bearer"}'))

    server = ScriptedServer(script, tls=context)
    try:
        yield server
    finally:
        server.close()


def widen(how: str, monkeypatch: pytest.MonkeyPatch, ca_b: trustme.CA, tmp_path: Path) -> None:
    """Name CA B in the environment, as ``how`` says."""
    pem = tmp_path / "b.pem"
    ca_b.cert_pem.write_to_path(str(pem))
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    if how == "SSL_CERT_DIR":
        monkeypatch.setenv("SSL_CERT_DIR", ca_dir(ca_b, tmp_path / "b"))
    elif how == "everything":
        monkeypatch.setenv("SSL_CERT_DIR", ca_dir(ca_b, tmp_path / "b"))
        for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            monkeypatch.setenv(name, str(pem))
    else:
        monkeypatch.setenv(how, str(pem))


def default_trust_accepts(server: ScriptedServer) -> bool:
    """Whether a context with OpenSSL's default paths (which read SSL_CERT_FILE and
    SSL_CERT_DIR) accepts the server: the proof that the environment names its CA."""
    context = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        try:
            with context.wrap_socket(sock, server_hostname="127.0.0.1"):
                return True
        except ssl.SSLCertVerificationError:
            return False


ENVIRONMENTS = [
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "everything",
]


@pytest.mark.parametrize("bundle", ["file", "directory"])
@pytest.mark.parametrize("how", ENVIRONMENTS)
def test_a_ca_bundle_is_the_only_trust_whatever_the_environment_names(
    face: Face,
    endpoint: ScriptedServer,
    cas: tuple[trustme.CA, trustme.CA],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    bundle: str,
) -> None:
    ca_a, ca_b = cas
    if bundle == "file":
        verify = str(tmp_path / "a.pem")
        ca_a.cert_pem.write_to_path(verify)
    else:
        verify = ca_dir(ca_a, tmp_path / "a")
    widen(how, monkeypatch, ca_b, tmp_path)
    if how in ("SSL_CERT_FILE", "SSL_CERT_DIR", "everything"):
        assert default_trust_accepts(endpoint)
    provider: Any = face.provider(
        endpoint.url() + "/connect/token", "client", SECRET, verify=verify, timeout=WAIT
    )
    with pytest.raises(ConnectError) as caught:
        face.fetch_token(provider)
    assert "certificate" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert endpoint.received == []  # no request: the secret never left


def test_the_bundle_of_the_endpoint_s_ca_is_trusted(
    face: Face,
    endpoint: ScriptedServer,
    cas: tuple[trustme.CA, trustme.CA],
    tmp_path: Path,
) -> None:
    """The control: the same endpoint, given CA B's bundle, answers."""
    verify = str(tmp_path / "b.pem")
    cas[1].cert_pem.write_to_path(verify)
    provider: Any = face.provider(
        endpoint.url() + "/connect/token", "client", SECRET, verify=verify, timeout=WAIT
    )
    assert face.fetch_token(provider) == "tok"
    assert len(endpoint.requests) == 1
