"""Pages of other sites against the inbox and the REST API: what a browser says of a request
(Origin, Sec-Fetch-Site, -Mode and -Dest) decides whether it is served, on every route and
for every method, HEAD and the event stream included; only a link followed to a page is let
in. Every answer forbids other origins to embed it. Then the same from a real page of another
origin in headless Chromium: nothing is changed, no document is shown, no stream is held."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import requests
from chromium import launched
from wire import exchange

from faxws import FaxClient, FaxFile, FileType
from faxws.testing import DEMO_PIN, DEMO_USER_ID, Fault, FaxWSSimulator

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launched()


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005060201e2b8c1b40000000049454e44ae426082"
)
DEADLINE = 15_000  # milliseconds any wait on a page may take


@pytest.fixture
def sim() -> Iterator[FaxWSSimulator]:
    """A simulator holding a job (an image document) and a pending fault."""
    with FaxWSSimulator() as sim:
        with FaxClient(sim.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
            c.send_fax(["+1 555 0100"], [FaxFile(PNG, FileType.PNG)])
        sim.inject(Fault.http_status(503), operation="CancelFax")
        yield sim


def held(sim: FaxWSSimulator) -> tuple[int, int, int]:
    return len(sim.jobs), len(sim.requests), len(sim._state.faults.pending())


def fetch(site: str, mode: str, dest: str) -> dict[str, str]:
    return {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest}


CHANGE = {"X-FaxWS-Client": "page", "Content-Type": "application/json"}
# What a page of another origin makes a browser send, and where.
FOREIGN = [
    ("GET", "/api/jobs", fetch("cross-site", "cors", "empty")),  # fetch()
    ("HEAD", "/api/jobs", fetch("same-site", "cors", "empty")),  # another port of 127.0.0.1
    ("GET", "/api/jobs/1/files/1", fetch("cross-site", "no-cors", "image")),  # <img>
    ("GET", "/api/jobs/1/files/1", fetch("same-site", "navigate", "iframe")),  # <iframe>
    ("GET", "/api/events", fetch("same-site", "navigate", "iframe")),
    ("GET", "/api/events", fetch("cross-site", "cors", "empty")),  # EventSource
    ("GET", "/api/events", fetch("cross-site", "no-cors", "video")),
    ("GET", "/api/jobs?min=5&timeout=300", fetch("cross-site", "no-cors", "script")),
    ("GET", "/", fetch("cross-site", "navigate", "iframe")),
    ("GET", "/jobs/1", fetch("cross-site", "navigate", "object")),
    ("GET", "/requests/1", fetch("same-site", "navigate", "embed")),
    ("GET", "/static/inbox.js", fetch("cross-site", "no-cors", "script")),
    ("GET", "/api/jobs", {"Origin": "http://evil.example"}),  # a browser without Sec-Fetch
    ("GET", "/api/events", {"Origin": "null"}),  # a sandboxed frame
    ("POST", "/api/reset", {**CHANGE, **fetch("cross-site", "navigate", "document")}),  # a form
    ("POST", "/api/faults", {**CHANGE, **fetch("cross-site", "no-cors", "empty")}),
    ("DELETE", "/api/jobs/1", {**CHANGE, "Origin": "http://127.0.0.1:1"}),  # another port
    ("PUT", "/api/jobs/1/outcome", {**CHANGE, **fetch("same-site", "cors", "empty")}),
    ("DELETE", "/api/faults", {**CHANGE, "Origin": "null"}),
]


@pytest.mark.parametrize(("method", "path", "headers"), FOREIGN)
def test_a_request_a_page_of_another_site_sends_is_refused(
    sim: FaxWSSimulator, method: str, path: str, headers: dict[str, str]
) -> None:
    before = held(sim)
    body = b'{"fault": "html_500"}' if method in ("POST", "PUT") else None
    # Streamed: were it served, an event stream would never end.
    with requests.request(
        method, sim.url + path, headers=headers, data=body, timeout=30, stream=True
    ) as answer:
        assert answer.status_code == 403
        assert answer.headers["Cross-Origin-Resource-Policy"] == "same-origin"
        if method == "HEAD":
            assert answer.content == b""
        elif path.startswith("/api/"):
            assert answer.json() == {"error": f"{method} from another site is refused"}
        else:
            assert answer.text == f"{method} from another site is refused\n"
    assert held(sim) == before
    assert sim._streams == 0


OWN = [
    ("GET", "/", fetch("cross-site", "navigate", "document")),  # a link to the inbox
    ("GET", "/api/openapi.json", fetch("same-site", "navigate", "document")),
    ("HEAD", "/jobs/1", fetch("cross-site", "navigate", "document")),
    ("GET", "/api/jobs", fetch("none", "navigate", "document")),  # typed, or a bookmark
    ("GET", "/api/jobs/1/files/1", fetch("same-origin", "no-cors", "image")),  # the inbox's
    ("GET", "/api/jobs", {"Origin": "{own}", **fetch("same-origin", "cors", "empty")}),
    ("GET", "/api/jobs", {}),  # a tool: no browser's headers
    ("DELETE", "/api/faults", {**CHANGE, "Origin": "{own}", **fetch("same-origin", "cors", "")}),
    ("DELETE", "/api/requests", CHANGE),
]


@pytest.mark.parametrize(("method", "path", "headers"), OWN)
def test_the_simulator_own_pages_a_link_and_tools_are_served(
    sim: FaxWSSimulator, method: str, path: str, headers: dict[str, str]
) -> None:
    sent = {k: v.replace("{own}", sim.url) for k, v in headers.items()}
    answer = requests.request(method, sim.url + path, headers=sent, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Cross-Origin-Resource-Policy"] == "same-origin"


@pytest.mark.parametrize(
    "request_",
    [
        b"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n",
        b"GET /api/jobs HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nhost: 127.0.0.1\r\n\r\n",
    ],
)
def test_a_request_with_two_host_names_is_refused(sim: FaxWSSimulator, request_: bytes) -> None:
    """RFC 9112 section 3.2: which of two is meant is anyone's guess (one may be a rebinding
    page's)."""
    answer = exchange(sim, request_)
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert answer.endswith(b"the inbox and API answer only to the simulator's own host name\n")


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/", {}, 200),
        ("GET", "/static/inbox.js", {}, 200),
        ("GET", "/favicon.ico", {}, 200),
        ("POST", "/", {}, 405),
        ("GET", "/api/jobs", {}, 200),
        ("GET", "/api/nothing", {}, 404),
        ("GET", "/api/jobs/1/files/1", {}, 200),
        ("HEAD", "/api/events", {}, 200),
        ("GET", "/api/jobs", {"Host": "evil.example"}, 403),
        ("DELETE", "/api/jobs", {}, 403),
        ("GET", "/api/jobs?colour=red", {}, 400),
    ],
)
def test_every_answer_of_the_inbox_and_api_forbids_other_origins_to_load_it(
    sim: FaxWSSimulator, method: str, path: str, headers: dict[str, str], status: int
) -> None:
    answer = requests.request(method, sim.url + path, headers=headers, timeout=30)
    assert answer.status_code == status
    assert answer.headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


def test_with_a_token_a_page_of_another_site_is_refused_before_the_token_is_looked_at() -> None:
    with FaxWSSimulator(api_token="api-SECRET-25") as sim:
        headers = {"X-FaxWS-Token": "api-SECRET-25", **fetch("cross-site", "no-cors", "image")}
        answer = requests.get(sim.url + "/api/jobs", headers=headers, timeout=30)
        assert (answer.status_code, answer.json()) == (
            403,
            {"error": "GET from another site is refused"},
        )
        missing = requests.get(sim.url + "/api/jobs", timeout=30)
        assert missing.status_code == 401


# -- a real page of another origin ------------------------------------------------------------


class _Pages(http.server.BaseHTTPRequestHandler):
    pages: dict[str, str] = {}  # noqa: RUF012 - set per test, before any request

    def do_GET(self) -> None:
        body = self.pages.get(self.path, "").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def elsewhere() -> Iterator[tuple[int, dict[str, str]]]:
    """A second local server, another origin: its port, and the pages it serves by path."""
    pages: dict[str, str] = {}
    handler = type("Pages", (_Pages,), {"pages": pages})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_address[1], pages
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


def _hostile(url: str) -> str:
    """What a page of another origin tries, each outcome in window.outcomes, then done."""
    return f"""<!DOCTYPE html><body><script>
window.outcomes = {{}};
async function attempt(name, run) {{
  try {{ window.outcomes[name] = String(await run()); }}
  catch (error) {{ window.outcomes[name] = "refused: " + error.name; }}
}}
const json = {{"Content-Type": "application/json", "X-FaxWS-Client": "x"}};
const fault = JSON.stringify({{fault: "html_500"}});
function image(src) {{
  return new Promise(function (done) {{
    const img = new Image();
    img.onload = function () {{ done("shown " + img.naturalWidth); }};
    img.onerror = function () {{ done("not shown"); }};
    img.src = src;
  }});
}}
(async function () {{
  await attempt("delete", () => fetch("{url}/api/jobs", {{method: "DELETE", headers: json}})
    .then(a => a.status));
  await attempt("delete with credentials", () => fetch("{url}/api/jobs/1",
    {{method: "DELETE", headers: json, credentials: "include"}}).then(a => a.status));
  await attempt("put", () => fetch("{url}/api/jobs/1/outcome",
    {{method: "PUT", headers: json, body: '{{"outcome": "busy"}}'}}).then(a => a.status));
  await attempt("post no-cors", () => fetch("{url}/api/faults",
    {{method: "POST", mode: "no-cors", headers: json, body: fault}}).then(a => a.type));
  await attempt("reset no-cors", () => fetch("{url}/api/reset",
    {{method: "POST", mode: "no-cors", body: "{{}}"}}).then(a => a.type));
  await attempt("beacon", () => navigator.sendBeacon("{url}/api/reset", "{{}}"));
  await attempt("read", () => fetch("{url}/api/jobs").then(a => a.status));
  await attempt("image", () => image("{url}/api/jobs/1/files/1"));
  const frames = [];
  for (let n = 0; n < 6; n++) {{  // as many as a browser opens to one host
    frames.push(new Promise(function (done) {{
      const frame = document.createElement("iframe");
      frame.onload = done;
      frame.src = "{url}/api/events";
      document.body.appendChild(frame);
    }}));
  }}
  await Promise.all(frames);
  const form = document.createElement("form");
  form.method = "post";
  form.enctype = "text/plain";
  form.action = "{url}/api/reset";
  form.target = "sink";
  const sink = document.createElement("iframe");
  sink.name = "sink";
  document.body.appendChild(sink);
  await new Promise(function (done) {{
    sink.onload = done;
    document.body.appendChild(form);
    form.submit();
  }});
  window.done = true;
}})();
</script></body>"""


# 127.0.0.1 on another port is the same site, another origin; localhost another site.
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_page_of_another_origin_changes_nothing_shows_nothing_and_holds_no_stream(
    browser: Browser, sim: FaxWSSimulator, elsewhere: tuple[int, dict[str, str]], host: str
) -> None:
    port, pages = elsewhere
    pages["/attack"] = _hostile(sim.url)
    before = held(sim)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(DEADLINE)
        page.goto(f"http://{host}:{port}/attack")
        page.wait_for_function("window.done === true")
        outcomes = page.evaluate("window.outcomes")
        assert outcomes["image"] == "not shown"  # was "shown 1"
        assert outcomes["read"] == "refused: TypeError"
        assert outcomes["delete"] == "refused: TypeError"  # no preflight is granted
        assert held(sim) == before, outcomes
        assert sim._streams == 0
        # The page's frames hold none of the browser's connections to the simulator: the
        # inbox opens and goes live beside it.
        inbox = context.new_page()
        inbox.set_default_timeout(DEADLINE)
        inbox.goto(sim.url + "/")
        inbox.wait_for_selector("#live-status.live")
    finally:
        context.close()
