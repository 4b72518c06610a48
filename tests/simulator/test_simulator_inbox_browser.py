"""The simulator's inbox in headless Chromium (see chromium.py): what a person sees on each
page, that a new fax and a fax's progress appear without a reload, search as you type, delete
and clear all, many tabs open at once. Every page is watched: no script error, no refusal by
the Content-Security-Policy, no request anywhere but the simulator."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from chromium import launched

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture says why these tests do not run
    expect = None  # type: ignore[assignment]

from faxws import AuthenticationError, FaxClient, FaxFile, FileType, Recipient
from faxws.testing import (
    DEMO_PIN,
    DEMO_USER_ID,
    Account,
    Fault,
    FaxWSSimulator,
    ManualClock,
    _events,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launched()


PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005060201e2b8c1b40000000049454e44ae426082"
)
DEADLINE = 15_000  # milliseconds any wait on the page may take


class Watched:
    """A page of the simulator's, and what went wrong on it."""

    def __init__(self, page: Page, sim: FaxWSSimulator) -> None:
        self.page = page
        self.sim = sim
        self.problems: list[str] = []
        self.elsewhere: list[str] = []
        page.on(
            "console",
            lambda m: self.problems.append(m.text) if m.type in ("error", "warning") else None,
        )
        page.on("pageerror", lambda e: self.problems.append(str(e)))
        page.on("requestfailed", self._failed)
        page.set_default_timeout(DEADLINE)

        def only_the_simulator(route: Any) -> None:
            url = route.request.url
            # The browser's own PDF viewer loads its parts from the browser itself.
            if url.startswith((sim.url + "/", "chrome://", "chrome-extension://")):
                route.continue_()
            else:
                self.elsewhere.append(route.request.url)
                route.abort()

        page.route("**/*", only_the_simulator)

    def _failed(self, request: Any) -> None:
        # What the page ends itself (its event stream, as it leaves) is no failure.
        if request.failure != "net::ERR_ABORTED":
            self.problems.append(f"{request.method} {request.url}: {request.failure}")

    def open(self, path: str) -> Page:
        """Go to ``path`` and wait until its script listens to the event stream; mark the
        document, so that a reload shows (the mark is gone)."""
        self.page.goto(self.sim.url + path)
        self.page.wait_for_selector("#live-status.live")
        self.page.evaluate("window.sameDocument = true")
        return self.page

    def not_reloaded(self) -> bool:
        return bool(self.page.evaluate("window.sameDocument === true"))


@contextmanager
def watched(browser: Browser, sim: FaxWSSimulator) -> Iterator[Watched]:
    context = browser.new_context()
    try:
        watch = Watched(context.new_page(), sim)
        yield watch
        assert watch.problems == []
        assert watch.elsewhere == []
    finally:
        context.close()


def send(sim: FaxWSSimulator, *recipients: Recipient | str, **kwargs: Any) -> Any:
    with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, retries=0) as c:
        return c.send_fax(list(recipients), kwargs.pop("files", [FaxFile(PDF, 101)]), **kwargs)


def tiff() -> bytes:
    from PIL import Image, ImageDraw

    out = io.BytesIO()
    pages = [Image.new("1", (400, 200), 1) for _ in range(2)]
    for n, drawn in enumerate(pages, 1):
        ImageDraw.Draw(drawn).text((20, 20), f"page {n}", fill=0)
    pages[0].save(
        out, "TIFF", compression="group3", dpi=(204, 98), save_all=True, append_images=pages[1:]
    )
    return out.getvalue()


def test_the_inbox_shows_jobs_faults_and_refusals(browser: Browser) -> None:
    with FaxWSSimulator(clock=ManualClock()) as sim, watched(browser, sim) as watch:
        send(sim, Recipient("+1 555 0100", name="Ann Smith"), "+1 500 555 0001")
        send(sim, "+1 555 0200", files=[FaxFile(tiff(), FileType.TIFF_G3)], request_id="ord-2")
        with (
            FaxClient(sim.url, user_id=DEMO_USER_ID, pin="9", retries=0) as c,
            pytest.raises(AuthenticationError),
        ):
            c.get_fax_broadcast_report("SIM00000001")
        sim.inject(Fault.http_status(503), operation="CancelFax", times=2)
        page = watch.open("/")
        assert page.title() == "FaxWS simulator inbox"
        rows = page.locator("#jobs tbody tr")
        assert rows.count() == 2
        newest, oldest = rows.nth(0).inner_text(), rows.nth(1).inner_text()
        for seen in ("SIM00000003", "+1 555 0200", "TIFF G3", "ord-2", "In progress: queued"):
            assert seen in newest
        for seen in ("SIM00000001", "SIM00000002", "Ann Smith", "+1 500 555 0001", "PDF"):
            assert seen in oldest
        assert "2 jobs received" in page.inner_text("#summary")
        faults = page.inner_text("#faults")
        assert "http_status" in faults
        assert "CancelFax" in faults
        assert "the next 2 requests" in faults
        refused = page.inner_text("#refused")
        assert "GetFaxBroadcastReport" in refused
        assert "wrong user id or PIN" in refused


def test_a_new_fax_appears_without_a_reload(browser: Browser) -> None:
    # The test's clock: nothing moves on by time, only the event stream can tell the page.
    with FaxWSSimulator(clock=ManualClock()) as sim, watched(browser, sim) as watch:
        send(sim, "+1 555 0100")
        page = watch.open("/")
        assert page.locator("#jobs tbody tr").count() == 1
        send(sim, Recipient("+1 555 0199", name="Newcomer"))  # while the page is open
        page.locator("#jobs tbody tr", has_text="Newcomer").wait_for()
        assert "2 jobs received" in page.inner_text("#summary")
        assert watch.not_reloaded()


def test_a_fax_moves_on_in_the_page_by_time_alone(browser: Browser) -> None:
    with FaxWSSimulator(time_scale=20) as sim, watched(browser, sim) as watch:
        send(sim, Recipient("+1 555 0199", name="Ann"))
        page = watch.open("/")
        # No request in between: the page knew when to look again.
        page.locator("#jobs tbody tr", has_text="Ann").get_by_text("Delivered").wait_for()
        assert watch.not_reloaded()


def test_a_job_page_shows_its_timeline_its_request_masked_and_previews(browser: Browser) -> None:
    secret = "pin-BROWSER-SECRET-41"
    clock = ManualClock()
    sim = FaxWSSimulator([Account("mbx1", pin=secret)], clock=clock).start()
    try:
        with watched(browser, sim) as watch:
            with FaxClient(sim.url, user_id="mbx1", pin=secret) as c:
                c.send_fax(
                    [Recipient("+1 500 555 0003", name="Bob")],
                    [FaxFile(PDF, 101), FaxFile(PNG, 120), FaxFile(tiff(), 1)],
                    request_id="req-41",
                )
            page = watch.open("/jobs/1")
            assert secret not in page.content()
            timeline = page.locator("#timeline li")
            assert timeline.first.inner_text().endswith("Queued")
            dialing = page.locator("#timeline li", has_text="Attempt 1: dialing")
            assert "to-come" in (dialing.get_attribute("class") or "")
            raw = page.inner_text("pre.raw")
            assert "<strPIN>***</strPIN>" in raw
            assert "characters of base64: the document]" in raw
            assert "req-41" in page.inner_text("#overview")
            # Each picture drawn: the PNG, and both pages of the TIFF through Pillow.
            images = page.locator(".document img")
            assert images.count() == 3
            for n in range(3):
                image = images.nth(n)
                image.scroll_into_view_if_needed()
                expect(image).to_have_js_property("complete", True, timeout=DEADLINE)
                assert image.evaluate("image => image.naturalWidth") > 0
            assert page.locator('embed[type="application/pdf"]').count() == 1
            # Time moves on (the test's clock): the timeline follows, without a reload.
            clock.advance(3)  # 12 simulated seconds: dialed, and busy
            page.locator("#timeline li.busy:not(.to-come)").wait_for()
            assert watch.not_reloaded()
    finally:
        sim.stop()


def test_search_as_you_type(browser: Browser) -> None:
    with FaxWSSimulator(clock=ManualClock()) as sim, watched(browser, sim) as watch:
        send(sim, Recipient("+1 555 0100", name="Ann"))
        send(sim, Recipient("+1 555 0200", name="Bob"))
        send(sim, Recipient("+44 20 7946 0000", name="Carol"))
        page = watch.open("/")
        page.fill("input[name=q]", "bob")
        expect(page.locator("#jobs tbody tr")).to_have_count(1, timeout=DEADLINE)
        assert "Bob" in page.inner_text("#jobs")
        assert page.url.endswith("/?q=bob")
        page.fill("input[name=q]", "7946")  # a number by its digits
        page.locator("#jobs tbody tr", has_text="Carol").wait_for()
        page.fill("input[name=q]", "")
        expect(page.locator("#jobs tbody tr")).to_have_count(3, timeout=DEADLINE)
        assert watch.not_reloaded()


def test_delete_one_job_and_clear_all(browser: Browser) -> None:
    with FaxWSSimulator(clock=ManualClock()) as sim, watched(browser, sim) as watch:
        for number in ("+1 555 0101", "+1 555 0102", "+1 555 0103"):
            send(sim, number)
        sim.inject(Fault.html_500())
        page = watch.open("/jobs/2")
        page.get_by_role("button", name="Delete this job").click()
        page.wait_for_url(sim.url + "/")
        page.wait_for_selector("#live-status.live")
        assert [j.id for j in sim.jobs] == ["1", "3"]
        page.locator("#job-3").get_by_role("button", name="Delete").click()
        page.locator("#job-3").wait_for(state="detached")
        assert [j.id for j in sim.jobs] == ["1"]
        page.once("dialog", lambda dialog: dialog.dismiss())
        page.get_by_role("button", name="Clear all").click()
        page.once("dialog", lambda dialog: dialog.accept())
        assert [j.id for j in sim.jobs] == ["1"]  # dismissed: nothing cleared
        page.get_by_role("button", name="Clear all").click()
        page.get_by_text("No jobs yet").wait_for()
        assert (sim.jobs, sim.requests, sim._state.faults.pending()) == ([], [], [])
        assert "None." in page.inner_text("#faults")


def test_with_an_api_token_the_pages_work_as_well(browser: Browser) -> None:
    with FaxWSSimulator(api_token="api-SECRET-42") as sim, watched(browser, sim) as watch:
        send(sim, "+1 555 0100")
        page = watch.open("/?token=api-SECRET-42")
        send(sim, Recipient("+1 555 0101", name="Second"))
        page.locator("#jobs tbody tr", has_text="Second").wait_for()
        page.locator("#job-1").get_by_role("button", name="Delete").click()
        page.locator("#job-1").wait_for(state="detached")
        assert [j.id for j in sim.jobs] == ["2"]
        page.get_by_role("link", name="2", exact=True).click()
        page.wait_for_selector("#live-status.live")
        assert page.url == sim.url + "/jobs/2?token=api-SECRET-42"


def test_many_tabs_share_one_stream_and_each_shows_a_new_fax(browser: Browser) -> None:
    """A browser opens six connections to a host at most, and an event stream holds one: a
    stream per tab left a seventh tab loading forever. One tab listens for all."""
    with FaxWSSimulator(clock=ManualClock()) as sim:
        context = browser.new_context()
        try:
            tabs = [Watched(context.new_page(), sim) for _ in range(8)]
            for tab in tabs:
                tab.open("/")
            assert sim._streams == 1
            send(sim, Recipient("+1 555 0100", name="Ann"))
            for tab in tabs:
                expect(tab.page.locator("#jobs")).to_contain_text("Ann", timeout=DEADLINE)
                assert tab.not_reloaded()
            tabs[0].page.close()  # the tab that listened: the next one in line takes over
            send(sim, Recipient("+1 555 0101", name="Bob"))
            for tab in tabs[1:]:
                expect(tab.page.locator("#jobs")).to_contain_text("Bob", timeout=DEADLINE)
                assert tab.not_reloaded()
            for tab in tabs:
                assert (tab.problems, tab.elsewhere) == ([], [])
        finally:
            context.close()


def test_a_stream_refused_is_tried_again(browser: Browser, monkeypatch: pytest.MonkeyPatch) -> None:
    """A browser gives up on an event stream answered with an error (too many streams, say);
    the page tries again a few seconds later."""
    monkeypatch.setattr(_events, "MAX_STREAMS", 0)
    with FaxWSSimulator(clock=ManualClock()) as sim, watched(browser, sim) as watch:
        page = watch.page
        page.goto(sim.url + "/")
        expect(page.locator("#live-status.down")).to_have_text("reconnecting\u2026")
        monkeypatch.setattr(_events, "MAX_STREAMS", 32)
        page.wait_for_selector("#live-status.live")
        send(sim, Recipient("+1 555 0100", name="Later"))
        expect(page.locator("#jobs")).to_contain_text("Later")
        # What the browser said of the refused stream is no problem of the page's.
        refused = "the server responded with a status of 503"
        watch.problems = [p for p in watch.problems if refused not in p]


def test_a_burst_of_changes_is_one_look_at_the_page(
    browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look draws the page again on the simulator (megabytes, for a fax to thousands):
    after one, a tab waits (half a second at least) before the next, whatever comes."""
    monkeypatch.setattr(_events, "_COALESCE", 0.0)  # each change told at once
    with FaxWSSimulator(clock=ManualClock()) as sim, watched(browser, sim) as watch:
        page = watch.page
        page.clock.install()
        page = watch.open("/")
        page.clock.pause_at(page.evaluate("Date.now()") + 60_000)  # the page's time stands
        send(sim, Recipient("+1 555 0100", name="First"))
        expect(page.locator("#jobs")).to_contain_text("First")
        looks: list[str] = []
        page.on("request", lambda r: looks.append(r.url) if r.url == sim.url + "/" else None)
        send(sim, Recipient("+1 555 0101", name="Second"))
        send(sim, Recipient("+1 555 0102", name="Third"))
        # Not before the page's own time moves on: however long the wait here.
        expect(page.locator("#jobs")).not_to_contain_text("Third", timeout=1500)
        assert looks == []
        page.clock.run_for(500)
        expect(page.locator("#jobs")).to_contain_text("Third")
        assert looks == [sim.url + "/"]  # the two changes, one look
        assert watch.not_reloaded()
