"""A CA bundle given to a client is the only trust it uses, and a client used after a fork
keeps none of its parent's connections: for both clients."""

from __future__ import annotations

import asyncio
import http.server
import os
import ssl
import subprocess
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme

from conftest import Face, send_response
from faxws import ConnectError, FaxFile
from scripted import Conn, ScriptedServer, reply


def answer_with_request_id(conn: Conn) -> None:
    """Answers every request on the connection with a job id made of its request id."""
    conn.handshake()
    while (request := conn.read_request()) is not None:
        rid = request.header("x-ch-request-id")
        conn.send(reply(send_response([f"J-{rid}"])).replace(b"Connection: close\r\n", b""))


def call(client: object, rid: str) -> tuple[str, ...]:
    result = client.send_fax(  # type: ignore[attr-defined]
        ["+1 555 0100"], [FaxFile(b"%PDF-1.4 one page", 101)], rid
    )
    return tuple(result.job_ids)


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
@pytest.mark.parametrize("bundle", ["file", "directory"])
def test_a_ca_bundle_is_the_only_trust_whatever_the_environment_says(
    variable: str,
    bundle: str,
    serve: Callable[..., ScriptedServer],
    face: Face,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trusted, other = trustme.CA(), trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    other.issue_cert("localhost").configure_cert(server_tls)  # certified by the other CA
    server = serve(answer_with_request_id, tls=server_tls)
    given = tmp_path / "given"
    given.mkdir()
    trusted.cert_pem.write_to_path(str(given / "ca.pem"))
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other.cert_pem.write_to_path(str(other_dir / "ca.pem"))
    for folder in (given, other_dir):  # OpenSSL finds a directory's certificates by hash
        subprocess.run(["openssl", "rehash", str(folder)], check=True, capture_output=True)
    monkeypatch.setenv(
        variable, str(other_dir / "ca.pem") if variable == "SSL_CERT_FILE" else str(other_dir)
    )
    verify = str(given / "ca.pem") if bundle == "file" else str(given)
    client = face.client(
        server.url("localhost"), user_id="mbx-trust", pin="4321", retries=0, verify=verify
    )
    with pytest.raises(ConnectError) as info:
        call(client, "rid-trust")
    assert "certificate verification failed" in info.value.message
    assert info.value.maybe_delivered is False
    assert server.received == []  # the PIN never left
    # The same server, given the CA that did certify it: the set-up itself is sound.
    client = face.client(
        server.url("localhost"),
        user_id="mbx-trust",
        pin="4321",
        retries=0,
        verify=str(other_dir / "ca.pem"),
    )
    assert call(client, "rid-trusted") == ("J-rid-trusted",)


class _Answering(http.server.BaseHTTPRequestHandler):
    """Keeps connections alive and answers each SendFax with a job id made of its request
    id, noting the connection (the client's port) each request came on."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        rid = self.headers["x-ch-request-id"]
        self.server.seen.append((rid, self.client_address[1]))  # type: ignore[attr-defined]
        body = send_response([f"J-{rid}"])
        self.send_response(200)
        self.send_header("Content-Type", "text/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def keep_alive_server() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answering)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(30)
        server.server_close()


def test_a_client_used_after_a_fork_makes_its_own_connections(
    keep_alive_server: http.server.ThreadingHTTPServer, face: Face
) -> None:
    url = f"http://127.0.0.1:{keep_alive_server.server_address[1]}"
    client = face.client(url, user_id="mbx-fork", pin="4321", retries=0, timeout=(5, 5))
    assert call(client, "parent-1") == ("J-parent-1",)  # a pooled keep-alive connection
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: on purpose
        pid = os.fork()
    if pid == 0:  # the child: its answer goes to the parent through the pipe
        code = 1
        try:
            os.close(read)
            # As in a user's process (the suite makes warnings errors, which would stop
            # aiohttp's clean-up of what the child inherited half-way).
            warnings.simplefilter("ignore", ResourceWarning)
            if face.is_async:  # a child runs an event loop of its own, as asyncio.run makes
                result = asyncio.run(
                    client.client.send_fax(
                        ["+1 555 0100"], [FaxFile(b"%PDF-1.4 one page", 101)], "child"
                    )
                )
                answer = tuple(result.job_ids)
            else:
                answer = call(client, "child")
            os.write(write, ",".join(answer).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    try:
        with os.fdopen(read, "rb") as pipe:
            child_answer = pipe.read().decode()
    finally:
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child_answer == "J-child"
    # The parent's connection is intact: the child took nothing of it off the event loop's
    # polling set the two processes share, nor wrote or read on it.
    assert call(client, "parent-2") == ("J-parent-2",)
    ports = dict(keep_alive_server.seen)  # type: ignore[attr-defined]
    assert ports["parent-2"] == ports["parent-1"]
    assert ports["child"] != ports["parent-1"]
