"""The simulator's web inbox: what it lists, how it escapes, and a real browser reading it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import requests

from faxws import AuthenticationError, FaxClient, FaxFile, FileType, Recipient
from faxws.testing import DEMO_PIN, DEMO_USER_ID, FaxWSSimulator

PDF = b"%PDF-1.4 first page"
# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005060201e2b8c1b40000000049454e44ae426082"
)
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def client(sim: FaxWSSimulator) -> FaxClient:
    return FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)


def page(sim: FaxWSSimulator, path: str) -> requests.Response:
    return requests.get(sim.url + path, timeout=60)


def test_the_inbox_lists_jobs_newest_first_and_refused_requests(
    faxws_simulator: FaxWSSimulator,
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax([Recipient("+1 555 0100", name="Ann")], [FaxFile(PDF, FileType.PDF)])
        c.send_fax(["+1 555 0200"], [FaxFile(PNG, 120)], request_id="order-2")
    with (
        FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin="wrong") as c,
        pytest.raises(AuthenticationError),
    ):
        c.get_fax_broadcast_report("J")
    answer = page(faxws_simulator, "/")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    text = answer.text
    assert text.index("SIM00000002") < text.index("SIM00000001")  # newest first
    for shown in ("+1 555 0100", "Ann", "+1 555 0200", "order-2", DEMO_USER_ID, "type 120"):
        assert shown in text
    assert "wrong user id or PIN" in text  # the refusal and its reason
    assert '<meta http-equiv="refresh"' in text
    assert "wrong" not in text.replace("wrong user id or PIN", "")  # not the PIN it sent


def test_everything_shown_is_escaped_and_no_script_may_run(
    faxws_simulator: FaxWSSimulator,
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(
            [Recipient("+1 555 0100", company=HOSTILE, name=HOSTILE)],
            [FaxFile(PDF, FileType.PDF)],
            request_id="a-b_c.1",
        )
    for path in ("/", "/jobs/1"):
        answer = page(faxws_simulator, path)
        assert HOSTILE not in answer.text
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in answer.text
        assert "<script" not in answer.text
        policy = answer.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy
        assert "script-src" not in policy  # so default-src 'none' forbids every script


def test_no_asset_comes_from_elsewhere(faxws_simulator: FaxWSSimulator) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF), FaxFile(PNG, 120)])
    for path in ("/", "/jobs/1"):
        text = page(faxws_simulator, path).text
        references = re.findall(r'(?:src|href)="([^"]*)"', text)
        assert references
        assert all(r.startswith("/") for r in references), references


def test_a_job_page_shows_documents_inline_with_download_links(
    faxws_simulator: FaxWSSimulator,
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF), FaxFile(PNG, 120), FaxFile(b"II*\0", 1)])
    text = page(faxws_simulator, "/jobs/1").text
    assert '<embed src="/api/jobs/1/files/1" type="application/pdf"' in text
    assert '<img src="/api/jobs/1/files/2" alt="document 2">' in text
    assert "This type is not shown in a browser." in text  # a TIFF: download only
    for index in (1, 2, 3):
        assert f'href="/api/jobs/1/files/{index}?download=1"' in text
    assert page(faxws_simulator, "/jobs/9").status_code == 404


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


# CI installs Chromium and sets FAXWS_REQUIRE_BROWSER: there, a missing browser fails.
needs_browser = pytest.mark.skipif(
    _chromium() is None and not os.environ.get("FAXWS_REQUIRE_BROWSER"),
    reason="Chromium is not installed (CI installs it)",
)


def dump_dom(url: str) -> str:
    """The page as a headless Chromium builds it."""
    browser = _chromium()
    assert browser is not None, "Chromium is required here (FAXWS_REQUIRE_BROWSER is set)"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@needs_browser
def test_a_browser_shows_the_jobs_sent(faxws_simulator: FaxWSSimulator, tmp_path: Path) -> None:
    with client(faxws_simulator) as c:
        first = c.send_fax(
            [Recipient("+1 555 0100", name="Ann"), Recipient("+1 555 0101")],
            [FaxFile(PDF, FileType.PDF)],
        )
        second = c.send_fax([Recipient("+1 555 0200", name=HOSTILE)], [FaxFile(PNG, 120)])
    dom = dump_dom(faxws_simulator.url + "/")
    for job_id in (*first.job_ids, *second.job_ids):
        assert job_id in dom
    for number in ("+1 555 0100", "+1 555 0101", "+1 555 0200"):
        assert number in dom
    assert "<script" not in dom  # the hostile name stayed text
    job = dump_dom(faxws_simulator.url + "/jobs/2")
    assert second.job_ids[0] in job
    assert '<img src="/api/jobs/2/files/1"' in job
