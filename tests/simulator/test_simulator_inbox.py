"""The simulator's web inbox as served (its pages read without a browser): what each page
shows, that everything is escaped, that the Content-Security-Policy allows the one script of
the simulator's own and nothing else, that nothing comes from elsewhere, and that the inbox's
own requests are neither recorded nor logged. test_simulator_inbox_browser.py reads the same
pages in Chromium."""

from __future__ import annotations

import io
import re
import sys

import pytest
import requests

from faxws import AuthenticationError, FaxClient, FaxFile, FileType, JobOptions, Notify, Recipient
from faxws.pytest_plugin import SimulatorFactory
from faxws.testing import (
    DEMO_PIN,
    DEMO_USER_ID,
    Account,
    Fault,
    FaxWSSimulator,
    ManualClock,
    _inbox,
)

PDF = b"%PDF-1.4 first page"
# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005060201e2b8c1b40000000049454e44ae426082"
)
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
POLICY = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
    "img-src 'self'; object-src 'self'; frame-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)


def tiff(pages: int = 3) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    drawn = [Image.new("1", (40, 20), n % 2) for n in range(pages)]
    drawn[0].save(out, "TIFF", compression="group3", save_all=True, append_images=drawn[1:])
    return out.getvalue()


def client(sim: FaxWSSimulator, pin: str = DEMO_PIN, user: str = DEMO_USER_ID) -> FaxClient:
    return FaxClient(sim.url, user_id=user, pin=pin, retries=0)


def page(sim: FaxWSSimulator, path: str, **kwargs: object) -> requests.Response:
    return requests.get(sim.url + path, timeout=60, **kwargs)  # type: ignore[arg-type]


def text_of(html: str) -> str:
    """What a person reads: the page without its tags, its references decoded."""
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_inbox_lists_jobs_newest_first_with_types_by_name_and_what_went_wrong(
    faxws_simulator: FaxWSSimulator,
) -> None:
    sim = faxws_simulator
    with client(sim) as c:
        c.send_fax([Recipient("+1 555 0100", name="Ann")], [FaxFile(PDF, FileType.PDF)])
        c.send_fax(["+1 555 0200"], [FaxFile(PNG, 120), FaxFile(tiff(), 1)], request_id="order-2")
    with client(sim, pin="wrong") as c, pytest.raises(AuthenticationError):
        c.get_fax_broadcast_report("J")
    sim.inject(Fault.delay_response(0.01), operation="GetFaxBroadcastReport")
    with client(sim) as c:
        c.get_fax_broadcast_report("SIM00000001")  # given the fault: listed with it
    sim.inject(Fault.http_status(503), operation="CancelFax", times=2)
    answer = page(sim, "/")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    html = answer.text
    assert html.index("SIM00000002") < html.index("SIM00000001")  # newest first
    shown = text_of(html)
    for expected in (
        "2 jobs received",
        "+1 555 0100",
        "Ann",
        "+1 555 0200",
        "order-2",
        DEMO_USER_ID,
        f"PDF, {len(PDF)} bytes",
        f"PNG, {len(PNG)} bytes",
        "TIFF G3,",
        "In progress: queued",
        "wrong user id or PIN",  # a refusal, and why
        "fault delay_response",  # a request given a fault
        "http_status",  # a pending fault
        "CancelFax",
        "the next 2 requests",
    ):
        assert expected in shown, expected
    assert "type 120" not in shown
    assert "wrong" not in shown.replace("wrong user id or PIN", "")  # not the PIN it sent
    assert 'http-equiv="refresh"' not in html  # live updates come from the script


def test_a_job_page_shows_its_life_its_request_and_its_documents(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    secret = "pin-INBOX-SECRET-31"
    sim = faxws_simulator_factory([Account("mbx1", pin=secret)], clock=ManualClock())
    options = JobOptions(
        reference_id="inv-9",
        notify=Notify("http://127.0.0.1:9/x", user="u", password="notify-SECRET-32"),
    )
    word = b"\xd0\xcf\x11\xe0" + bytes(200)
    with client(sim, pin=secret, user="mbx1") as c:
        c.send_fax(
            [Recipient("+1 500 555 0003", name="Bob")],
            [FaxFile(PDF, 101), FaxFile(PNG, 120), FaxFile(tiff(), 1), FaxFile(word, 100)],
            options=options,
        )
    html = page(sim, "/jobs/1").text
    shown = text_of(html)
    assert secret not in html
    assert "notify-SECRET-32" not in html
    for expected in (
        "Job 1",
        "reference inv-9",
        "SIM00000001 to +1 500 555 0003",
        "Queued",
        "Attempt 1: dialing (to come)",  # the life ahead, with the manual clock unmoved
        "Attempt 1: the line was busy; next attempt in 300 s (to come)",
        "Delivered: 6 pages (to come)",  # 1 + 1 + 3 (the TIFF) + 1
        "Push attempt 1 (to come)",
        "Job details (SendFaxEx)",
        "inv-9",
        "Request 1 : POST /fax/v5 (SendFaxEx)",
        "answered HTTP 200",
        "<strPIN>***</strPIN>",
        "<NotifyAuthPassword>***</NotifyAuthPassword>",
        "characters of base64: the document]",
        "Document 1: PDF",
        "Document 2: PNG",
        "Document 3: TIFF G3",
        "Document 4: Word",
        "No preview for this type",
    ):
        assert expected in shown, expected
    assert '<embed src="/api/jobs/1/files/1" type="application/pdf"' in html
    assert '<img src="/api/jobs/1/files/2" alt="document 2">' in html
    for n in (1, 2, 3):
        assert f'src="/api/jobs/1/files/3/preview?page={n}"' in html
    for index in (1, 2, 3, 4):
        assert f'href="/api/jobs/1/files/{index}?download=1"' in html
    assert 'data-delete="/api/jobs/1"' in html
    missing = page(sim, "/jobs/9")
    assert missing.status_code == 404
    assert "No job 9" in missing.text


def test_without_pillow_a_tiff_page_says_what_to_install(
    faxws_simulator: FaxWSSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(tiff(), 1)])
    monkeypatch.setitem(sys.modules, "PIL", None)
    shown = text_of(page(faxws_simulator, "/jobs/1").text)
    assert "TIFF previews need Pillow: pip install 'faxws[preview]'" in shown


def test_a_request_page_shows_a_refused_request_masked(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    secret = "pin-REQUEST-SECRET-33"
    sim = faxws_simulator_factory([Account("mbx1", pin=secret)])
    with client(sim, pin=secret + "x", user="mbx1") as c, pytest.raises(AuthenticationError):
        c.get_fax_broadcast_report("J")
    html = page(sim, "/requests/1").text
    assert secret not in html
    shown = text_of(html)
    assert "Request 1" in shown
    assert "answered HTTP 401" in shown
    assert "Refused: wrong user id or PIN" in shown
    assert "<strPIN>***</strPIN>" in shown
    assert page(sim, "/").text.count('href="/requests/1"') == 1  # linked from the list
    for missing in ("/requests/2", "/requests/0", "/requests/x", "/requests/" + "9" * 5000):
        assert page(sim, missing).status_code == 404


def test_search_lists_only_the_jobs_found(faxws_simulator: FaxWSSimulator) -> None:
    with client(faxws_simulator) as c:
        c.send_fax([Recipient("+1 555 0100", name="Ann")], [FaxFile(PDF, 101)])
        c.send_fax([Recipient("+1 555 0200", name="Bob")], [FaxFile(PDF, 101)])
    html = page(faxws_simulator, "/?q=bob").text
    assert "SIM00000002" in html
    assert "SIM00000001" not in html
    assert "1 job found for “bob”" in text_of(html)
    assert 'name="q" value="bob"' in html
    assert "No job matches." in text_of(page(faxws_simulator, "/?q=carol").text)


def test_everything_shown_is_escaped(faxws_simulator: FaxWSSimulator) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(
            [Recipient("+1 555 0100", company=HOSTILE, name=HOSTILE)],
            [FaxFile(PDF, FileType.PDF)],
            request_id="a-b_c.1",
        )
    requests.post(
        faxws_simulator.url + "/fax/v5" + "?<script>x</script>",
        data=HOSTILE.encode(),
        headers={"Content-Type": "text/xml"},
        timeout=60,
    )
    for path in ("/", "/jobs/1", "/requests/1", "/requests/2", f"/?q={HOSTILE}"):
        html = page(faxws_simulator, path).text
        assert HOSTILE not in html
        assert "<script>" not in html.replace('<script src="/static/inbox.js" defer></script>', "")
        assert "onerror=" not in html.replace("onerror=alert", "")  # only as escaped text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page(faxws_simulator, "/").text


@pytest.mark.parametrize("path", ["/", "/jobs/1", "/requests/1", "/jobs/9"])
def test_the_policy_allows_the_inbox_script_and_nothing_else(
    faxws_simulator: FaxWSSimulator, path: str
) -> None:
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF), FaxFile(PNG, 120)])
    answer = page(faxws_simulator, path)
    assert answer.headers["Content-Security-Policy"] == POLICY
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    html = answer.text
    # Nothing inline for the policy to refuse: no script or style in the page, no handler
    # attribute, no style attribute.
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/inbox.js" defer>']
    assert "</script>" in html.split('<script src="/static/inbox.js" defer>')[1][:9]
    assert "<style" not in html
    assert not re.search(r"\s(on\w+|style)=", html)
    references = re.findall(r'(?:src|href|action)="([^"]*)"', html)
    assert references
    assert all(r.startswith("/") and not r.startswith("//") for r in references), references


def test_the_script_style_and_icon_are_served_by_the_simulator() -> None:
    with FaxWSSimulator(api_token="api-SECRET-3") as sim:
        for path, media in (
            ("/static/inbox.js", "text/javascript; charset=utf-8"),
            ("/static/inbox.css", "text/css; charset=utf-8"),
            ("/static/favicon.svg", "image/svg+xml"),
            ("/favicon.ico", "image/svg+xml"),
        ):
            answer = page(sim, path)  # no token: they hold nothing of the simulator's
            assert (answer.status_code, answer.headers["Content-Type"]) == (200, media), path
            assert answer.headers["X-Content-Type-Options"] == "nosniff"
            assert answer.content
            assert not re.search(rb"https?://(?!www\.w3\.org/2000/svg)", answer.content), path
        assert page(sim, "/").status_code == 401  # but the pages need it
        assert page(sim, "/?token=api-SECRET-3").status_code == 200
        assert sim.requests == []


def test_the_inbox_own_requests_are_neither_recorded_nor_logged(
    faxws_simulator: FaxWSSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="faxws.simulator")
    with client(faxws_simulator) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)], request_id="r-1")
    inbox = {"X-FaxWS-Client": "inbox"}
    for path in ("/", "/jobs/1", "/requests/1", "/static/inbox.js", "/favicon.ico", "/jobs/7"):
        page(faxws_simulator, path)
    page(faxws_simulator, "/api/jobs", headers=inbox)
    # What a page shows of a job (a document, a TIFF's page): loaded by a page of the
    # simulator's own, as the browser says.
    own = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "embed"}
    assert page(faxws_simulator, "/api/jobs/1/files/1", headers=own).status_code == 200
    requests.delete(faxws_simulator.url + "/api/jobs/1", headers=inbox, timeout=60)
    page(faxws_simulator, "/api/requests")  # a tool's call: logged
    lines = [r.getMessage() for r in caplog.records if r.name == "faxws.simulator"]
    assert lines == [
        "POST /fax/v5 SendFax 200 request_id=r-1",
        "GET /api/requests - 200 request_id=-",
    ]
    assert [r.path for r in faxws_simulator.requests] == ["/fax/v5"]
    refused = re.search(
        r'<section id="refused" data-live>(.*?)</section>', page(faxws_simulator, "/").text
    )
    assert refused is not None
    assert text_of(refused.group(1)) == "None."  # the favicon is no refusal


def test_a_page_tells_its_script_when_it_changes_by_time_alone(
    faxws_simulator_factory: SimulatorFactory,
) -> None:
    live = faxws_simulator_factory(time_scale=4)
    with client(live) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    html = page(live, "/").text
    wait = float(re.search(r'data-next-change="([0-9.]+)"', html).group(1))  # type: ignore[union-attr]
    assert 0 < wait <= 0.5  # queued for 2 simulated seconds: dialing in half a second
    assert re.search(r'data-version="[0-9a-f]{8}-\d+"', html)
    manual = faxws_simulator_factory(clock=ManualClock())
    with client(manual) as c:
        c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
    # A manual clock moves when the test moves it: the event stream tells then.
    assert "data-next-change" not in page(manual, "/jobs/1").text
    assert "data-next-change" not in page(live, "/requests/1").text


def test_with_an_api_token_the_pages_carry_it_to_their_script_and_links() -> None:
    with FaxWSSimulator(api_token="api-SECRET-4") as sim:
        with client(sim) as c:
            c.send_fax(["+1 5"], [FaxFile(PDF, FileType.PDF)])
        html = page(sim, "/jobs/1?token=api-SECRET-4").text
        assert 'data-token="api-SECRET-4"' in html
        assert 'href="/?token=api-SECRET-4"' in html
        assert 'src="/api/jobs/1/files/1?token=api-SECRET-4"' in html
        form = page(sim, "/?token=api-SECRET-4").text
        assert '<input type="hidden" name="token" value="api-SECRET-4">' in form


def test_a_job_row_and_page_show_a_bounded_number_of_recipients(
    faxws_simulator: FaxWSSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fax to thousands made a list of megabytes, drawn again at every change: a row shows
    the first few recipients, a job's page the first hundreds; the JSON has them all."""
    monkeypatch.setattr(_inbox, "ROW_RECIPIENTS", 3)
    monkeypatch.setattr(_inbox, "PAGE_RECIPIENTS", 5)
    with client(faxws_simulator) as c:
        c.send_fax([f"+1 555 01{n:02d}" for n in range(7)], [FaxFile(PDF, FileType.PDF)])
        c.send_fax(["+1 555 0200"], [FaxFile(PDF, FileType.PDF)])
    listed = page(faxws_simulator, "/").text
    row = re.search(r'<tr id="job-1">(.*?)</tr>', listed)
    assert row is not None
    assert [n for n in range(7) if f"+1 555 01{n:02d}" in row.group(1)] == [0, 1, 2]
    assert re.findall(r"SIM\d+", row.group(1)) == ["SIM00000001", "SIM00000002", "SIM00000003"]
    assert '<a href="/jobs/1">and 4 more</a>' in row.group(1)
    other = re.search(r'<tr id="job-2">(.*?)</tr>', listed)
    assert other is not None
    assert "more</a>" not in other.group(1)
    shown = page(faxws_simulator, "/jobs/1").text
    recipients = re.search(r'<section id="recipients" data-live>(.*?)</section>', shown)
    timeline = re.search(r'<section id="timeline" data-live>(.*?)</section>', shown)
    assert recipients is not None
    assert timeline is not None
    for part in (recipients.group(1), timeline.group(1)):
        assert [n for n in range(7) if f"+1 555 01{n:02d}" in part] == [0, 1, 2, 3, 4]
        assert part.endswith(
            '<p class="muted">The first 5 of 7 recipients are shown; all of them are in '
            '<a href="/api/jobs/1">the JSON</a>.</p>'
        )
    everything = requests.get(faxws_simulator.url + "/api/jobs/1", timeout=60).json()
    assert len(everything["recipients"]) == 7
