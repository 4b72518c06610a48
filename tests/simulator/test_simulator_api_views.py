"""The REST API's views of a job beyond its record: its timeline, the request that sent it
(secrets masked), search, the pending faults, and TIFF previews."""

from __future__ import annotations

import io
import math
import random
import re
import struct
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from simulated_calls import START, cancel, move_to, send_ex

from faxws import FaxClient, FaxFile, FileType, Recipient, ServiceError
from faxws.testing import (
    DEMO_PIN,
    DEMO_USER_ID,
    Account,
    Fault,
    FaxWSSimulator,
    ManualClock,
    _preview,
)
from faxws.testing._records import ReceivedFile

PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"


def get(sim: FaxWSSimulator, path: str) -> requests.Response:
    return requests.get(sim.url + path, timeout=30)


@pytest.fixture
def manual() -> Iterator[tuple[FaxWSSimulator, ManualClock]]:
    clock = ManualClock(START)
    with FaxWSSimulator(clock=clock) as sim:
        yield sim, clock


def test_a_timeline_tells_each_recipients_life_with_the_moments_to_come(
    manual: tuple[FaxWSSimulator, ManualClock],
) -> None:
    sim, clock = manual
    send_ex(sim, "+1 500 555 0003", "+1 555 0100", reference_id="r-1")
    move_to(clock, 10)
    answer = get(sim, "/api/jobs/1/timeline")
    assert answer.status_code == 200
    timeline = answer.json()
    assert timeline["id"] == "1"
    busy, plain = timeline["recipients"]
    assert (busy["job_id"], busy["fax_number"]) == ("SIM00000001", "+1 500 555 0003")
    told = [(m["at"][11:19], m["kind"], m["text"], m["done"]) for m in busy["moments"]]
    # 4 simulated seconds a second from 03:04:05: queued 2 s, dial 5 s, retry 300 s, a page 10 s.
    assert told == [
        ("03:04:05", "queued", "Queued", True),
        ("03:04:05", "dialing", "Attempt 1: dialing", True),
        ("03:04:06", "busy", "Attempt 1: the line was busy; next attempt in 300 s", True),
        ("03:05:21", "dialing", "Attempt 2: dialing", False),
        ("03:05:23", "sending", "Attempt 2: connected, sending 1 page", False),
        ("03:05:25", "delivered", "Delivered: 1 page", False),
    ]
    assert [m["kind"] for m in plain["moments"]] == ["queued", "dialing", "sending", "delivered"]
    assert all(m["done"] for m in plain["moments"])
    assert get(sim, "/api/jobs/SIM00000002/timeline").json() == timeline  # by a job id too
    assert get(sim, "/api/jobs/9/timeline").status_code == 404


def test_a_timeline_shows_a_cancel_a_new_plan_and_the_push(
    manual: tuple[FaxWSSimulator, ManualClock],
) -> None:
    sim, clock = manual
    send_ex(
        sim,
        "+1 500 555 0007",
        "+1 555 0101",
        notify_type=3,
        notify_destination="http://127.0.0.1:9/",
    )
    move_to(clock, 1)
    cancel(sim, "SIM00000001")
    assert sim.wait_for_pushes(60)  # its first attempt, at the cancel
    changed = requests.put(
        sim.url + "/api/jobs/SIM00000002/outcome", json={"outcome": "busy"}, timeout=30
    )
    assert changed.status_code == 200
    move_to(clock, 10_000)
    assert sim.wait_for_pushes(60)
    first, second = get(sim, "/api/jobs/1/timeline").json()["recipients"]
    kinds = [m["kind"] for m in first["moments"]]
    assert kinds[:2] == ["queued", "dialing"]
    assert "cancelled" in kinds
    cancelled = next(m for m in first["moments"] if m["kind"] == "cancelled")
    assert (cancelled["at"][11:19], cancelled["text"]) == ("03:04:06", "Cancelled")
    pushes = [m for m in first["moments"] if m["kind"] == "push"]
    # Port 9: nothing there. Tried when cancelled, and again when the clock moved on.
    assert re.fullmatch(
        r"Push attempt 2: refused \(ConnectionRefusedError: .*\)", pushes[0]["text"]
    )
    assert (pushes[0]["done"], pushes[-1]["done"]) == (True, False)  # the next attempt to come
    planned = [m for m in second["moments"] if m["kind"] == "planned"]
    assert [m["text"] for m in planned] == ["Outcome set to busy"]
    life = [m for m in second["moments"] if m["kind"] not in ("planned", "push")]
    assert (life[-1]["kind"], life[-1]["text"]) == (
        "failed",
        "Attempt 3: the line was busy; failed",
    )


SECRET_PIN = "pin-VIEWS-SECRET-77"


def test_the_request_of_a_job_and_any_request_by_number_masks_every_secret() -> None:
    with FaxWSSimulator([Account("mbx1", pin=SECRET_PIN)]) as sim:
        with FaxClient(sim.url, user_id="mbx1", pin=SECRET_PIN) as c:
            c.send_fax(["+1 555 0100"], [FaxFile(PDF, FileType.PDF)], request_id="r-1")
        requests.get(sim.url + "/fax/v5", timeout=30)  # refused: 405
        answer = get(sim, "/api/jobs/1/request")
        assert answer.status_code == 200
        assert SECRET_PIN not in answer.text
        record = answer.json()
        assert (record["id"], record["operation"], record["request_id"]) == (1, "SendFax", "r-1")
        assert "<strPIN>***</strPIN>" in record["body"]
        assert get(sim, "/api/requests/1").json() == record
        refused = get(sim, "/api/requests/2").json()
        assert (refused["id"], refused["method"], refused["status"]) == (2, "GET", 405)
        for missing in ("/api/requests/3", "/api/requests/0", "/api/requests/x"):
            assert get(sim, missing).status_code == 404
        requests.delete(sim.url + "/api/requests", headers={"X-FaxWS-Client": "t"}, timeout=30)
        gone = get(sim, "/api/jobs/1/request")
        assert (gone.status_code, gone.json()) == (
            404,
            {"error": "the request of job 1 is no longer kept"},
        )
        with FaxClient(sim.url, user_id="mbx1", pin=SECRET_PIN) as c:
            c.send_fax(["+1 555 0100"], [FaxFile(PDF, FileType.PDF)])
        assert get(sim, "/api/jobs/2/request").json()["id"] == 3  # numbers are never reused


def test_search_finds_jobs_by_number_name_job_id_or_reference(
    faxws_simulator: FaxWSSimulator,
) -> None:
    from faxws import JobOptions

    with FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
        c.send_fax([Recipient("+1 (555) 010-0", name="Ann Smith")], [FaxFile(PDF, 101)])
        c.send_fax(
            [Recipient("+44 20 7946 0000", company="ACME")],
            [FaxFile(PDF, 101)],
            options=JobOptions(reference_id="invoice-42"),
        )
        c.send_fax(["+1 555 0199"], [FaxFile(PDF, 101)], request_id="order-7")

    def found(wanted: str) -> list[str]:
        answer = requests.get(
            faxws_simulator.url + "/api/jobs", params={"q": wanted}, timeout=30
        ).json()
        assert answer["total"] == len(answer["jobs"])
        return [j["id"] for j in answer["jobs"]]

    assert found("ann") == ["1"]
    assert found("SMITH") == ["1"]
    assert found("5550100") == ["1"]  # the digits alone
    assert found("555 0100") == ["1"]
    assert found("555") == ["3", "1"]  # newest first
    assert found("acme") == ["2"]
    assert found("INVOICE-4") == ["2"]
    assert found("SIM00000003") == ["3"]
    assert found("order-7") == ["3"]
    assert found("") == ["3", "2", "1"]
    assert found("nothing like it") == []
    too_long = requests.get(faxws_simulator.url + "/api/jobs", params={"q": "x" * 201}, timeout=30)
    assert (too_long.status_code, too_long.json()) == (
        400,
        {"error": "q must be at most 200 characters"},
    )


def test_the_pending_faults_are_listed_as_they_were_injected(
    faxws_simulator: FaxWSSimulator,
) -> None:
    def pending() -> Any:
        answer = get(faxws_simulator, "/api/faults")
        assert answer.status_code == 200
        return answer.json()["faults"]

    assert pending() == []
    faxws_simulator.inject(Fault.http_status(503), operation="GetFaxStatus", times=2)
    spec = {"fault": "delay_response", "seconds": 0.01, "times": 3}
    assert requests.post(faxws_simulator.url + "/api/faults", json=spec, timeout=30).ok
    faxws_simulator.inject(Fault.soap_fault("soap:Client", "no"))
    faxws_simulator.inject(Fault.ws_error(-7, "quota"), operation="SendFax")
    assert pending() == [
        {"fault": "http_status", "status": 503, "operation": "GetFaxStatus", "times": 2},
        {"fault": "delay_response", "seconds": 0.01, "operation": None, "times": 3},
        {"fault": "soap_fault", "code": "soap:Client", "text": "no", "operation": None, "times": 1},
        {"fault": "ws_error", "code": -7, "text": "quota", "operation": "SendFax", "times": 1},
    ]
    with (
        FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN, retries=0) as c,
        pytest.raises(ServiceError),
    ):
        c.get_fax_broadcast_report("J")  # delayed: one of the three used
    assert [f["times"] for f in pending()] == [2, 2, 1, 1]
    # What GET lists, POST takes back.
    requests.delete(
        faxws_simulator.url + "/api/faults", headers={"X-FaxWS-Client": "t"}, timeout=30
    )
    for fault in [
        {"fault": "http_status", "status": 502, "operation": "GetFaxStatus", "times": 2},
        {"fault": "slow_drip", "seconds": 1.5, "operation": None, "times": 1},
    ]:
        assert requests.post(faxws_simulator.url + "/api/faults", json=fault, timeout=30).ok
    assert [f["fault"] for f in pending()] == ["http_status", "slow_drip"]


def tiff(pages: int = 2, dpi: tuple[int, int] = (204, 98)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    drawn = [Image.new("1", (80, 40), n % 2) for n in range(pages)]
    drawn[0].save(
        out, "TIFF", compression="group3", dpi=dpi, save_all=True, append_images=drawn[1:]
    )
    return out.getvalue()


def test_a_tiff_page_is_previewed_as_png_with_square_pixels(
    faxws_simulator: FaxWSSimulator,
) -> None:
    from PIL import Image

    with FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
        c.send_fax(["+1 5"], [FaxFile(tiff(), FileType.TIFF_G3), FaxFile(PDF, FileType.PDF)])
    first = get(faxws_simulator, "/api/jobs/1/files/1/preview")
    assert first.status_code == 200
    assert first.headers["Content-Type"] == "image/png"
    assert first.headers["Content-Security-Policy"] == "sandbox"
    with Image.open(io.BytesIO(first.content)) as page:
        assert page.size == (80, 83)  # 40 rows at 98 dpi drawn at 204 dpi
        assert page.getpixel((0, 0)) == 0  # the first page is black
    second = get(faxws_simulator, "/api/jobs/1/files/1/preview?page=2")
    with Image.open(io.BytesIO(second.content)) as page:
        assert page.getpixel((0, 0)) == 255
    for path, status, error in (
        ("/api/jobs/1/files/1/preview?page=3", 404, "job 1 file 1: the TIFF has no page 3"),
        (
            "/api/jobs/1/files/2/preview",
            404,
            "job 1 file 2: only a TIFF has a preview (a browser shows the others)",
        ),
        ("/api/jobs/1/files/1/preview?page=0", 400, "page must be from 1 to 10000"),
    ):
        answer = get(faxws_simulator, path)
        assert (answer.status_code, answer.json()) == (status, {"error": error}), path
    download = get(faxws_simulator, "/api/jobs/1/files/1")
    assert download.headers["Content-Type"] == "image/tiff"
    assert download.headers["Content-Disposition"] == 'attachment; filename="job-1-file-1.tif"'


def test_a_tiff_too_large_or_broken_is_not_drawn(
    faxws_simulator: FaxWSSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_preview, "MAX_PIXELS", 80 * 40 - 1)
    broken = tiff()[:60]
    with FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
        c.send_fax(["+1 5"], [FaxFile(tiff(dpi=(200, 200)), 1), FaxFile(broken, 1)])
    large = get(faxws_simulator, "/api/jobs/1/files/1/preview")
    assert (large.status_code, large.json()) == (
        413,
        {"error": "job 1 file 1: page 1 is too large to draw (80 x 40 pixels)"},
    )
    bad = get(faxws_simulator, "/api/jobs/1/files/2/preview")
    assert bad.status_code == 422
    assert bad.json()["error"].startswith("job 1 file 2: Pillow cannot read the TIFF: ")


def _directory(data: bytes, page: int) -> dict[int, int]:
    """Where each entry of a page's image directory is in the TIFF ``data``, by its tag."""
    (at,) = struct.unpack_from("<I", data, 4)
    for _ in range(page - 1):
        (count,) = struct.unpack_from("<H", data, at)
        (at,) = struct.unpack_from("<I", data, at + 2 + 12 * count)
    (count,) = struct.unpack_from("<H", data, at)
    places = [at + 2 + 12 * i for i in range(count)]
    return {struct.unpack_from("<H", data, place)[0]: place for place in places}


def _damaged(page: int, tag: int, *, renamed: int = 0, value: int = 0, double: float = 0) -> bytes:
    """A two-page TIFF with one entry of one page's directory changed: its tag ``renamed``
    (the entry is then missing), its short ``value``, or read as a ``double`` (type 12)."""
    data = bytearray(tiff())
    assert data[:2] == b"II"
    at = _directory(data, page)[tag]
    if renamed:
        struct.pack_into("<H", data, at, renamed)
    if value:
        struct.pack_into("<H", data, at + 8, value)
    if double:  # a double fits in the 8 bytes of the rational it replaces
        (where,) = struct.unpack_from("<I", data, at + 8)
        struct.pack_into("<H", data, at + 2, 12)
        struct.pack_into("<d", data, where, double)
    return bytes(data)


_WIDTH, _COMPRESSION, _X_RESOLUTION = 256, 259, 282


@pytest.mark.parametrize(
    ("document", "page", "status", "error"),
    [
        (_damaged(2, _WIDTH, renamed=65000), 2, 422, "TypeError: Missing dimensions"),
        (_damaged(2, _COMPRESSION, value=26120), 2, 422, "KeyError: 26120"),
        (_damaged(1, _WIDTH, renamed=65000), 1, 422, "not an image it knows"),
        (tiff()[:60], 1, 422, None),  # truncated
        (_damaged(1, _X_RESOLUTION, double=math.inf), 1, 200, None),
        (_damaged(2, _X_RESOLUTION, double=math.inf), 2, 200, None),
        (_damaged(1, _X_RESOLUTION, double=math.nan), 1, 200, None),
        (_damaged(1, _X_RESOLUTION, double=1e-300), 1, 200, None),
    ],
    ids=[
        "no-width",
        "unknown-compression",
        "unreadable",
        "truncated",
        "infinite-resolution",
        "infinite-resolution-page-2",
        "nan-resolution",
        "tiny-resolution",
    ],
)
def test_a_damaged_tiff_gets_an_answer_saying_so(
    faxws_simulator: FaxWSSimulator,
    document: bytes,
    page: int,
    status: int,
    error: str | None,
) -> None:
    """Pillow fails on a damaged TIFF in many ways (TypeError, KeyError, ...); each is a 422
    naming the failure, never a connection closed unanswered, and a resolution that is no
    finite number draws the page as it is."""
    with FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
        c.send_fax(["+1 5"], [FaxFile(document, FileType.TIFF_G3)])
    answer = get(faxws_simulator, f"/api/jobs/1/files/1/preview?page={page}")
    assert answer.status_code == status, answer.text
    if status == 200:
        assert answer.content.startswith(b"\x89PNG")
        return
    message = answer.json()["error"]
    assert message.startswith("job 1 file 1: Pillow cannot read the TIFF: ")
    assert "<_io" not in message  # no file object, whose name is a path of the server's
    if error is not None:
        assert message.endswith(error)
    assert get(faxws_simulator, "/jobs/1").status_code == 200  # its page still shows


def test_any_damage_to_a_tiff_gets_a_preview_or_a_reason() -> None:
    """Bytes of fax TIFFs of several kinds changed at random (the same each run): each page
    is drawn, or refused with a status; nothing else escapes."""
    from PIL import Image

    seeds = [tiff()]
    for mode, compression in (("1", "group4"), ("L", "tiff_deflate"), ("RGB", "tiff_lzw")):
        out = io.BytesIO()
        frames = [Image.new(mode, (48, 40)), Image.new(mode, (40, 48))]
        frames[0].save(out, "TIFF", compression=compression, save_all=True, append_images=frames)
        seeds.append(out.getvalue())
    rng = random.Random(25)
    for n in range(400):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(8, len(data))
            if rng.random() < 0.5:
                data[at] = rng.randrange(256)
            else:
                data[at : at + 2] = struct.pack("<H", rng.choice([0, 1, 3, 12, 0xFFFF, 26120]))
        if rng.random() < 0.1:
            del data[rng.randrange(8, len(data)) :]
        received = ReceivedFile(1, 1, bytes(data))
        for page in (1, 2):
            status = 200
            try:
                _preview.png(received, page)
            except _preview.PreviewError as exc:
                status = exc.status
            assert status in (200, 404, 413, 422), (n, page)


def test_without_pillow_a_preview_says_what_to_install(
    faxws_simulator: FaxWSSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FaxClient(faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN) as c:
        c.send_fax(["+1 5"], [FaxFile(tiff(), 1)])
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now fails
    assert not _preview.available()
    answer = get(faxws_simulator, "/api/jobs/1/files/1/preview")
    assert (answer.status_code, answer.json()) == (
        501,
        {"error": "job 1 file 1: TIFF previews need Pillow: pip install 'faxws[preview]'"},
    )


def test_a_request_body_is_shown_masked_with_its_documents_elided_an_element_a_line() -> None:
    from faxws.testing import ReceivedRequest
    from faxws.testing._views import shown_body

    data = "QUJD" * 100
    body = (
        '<?xml version="1.0"?><s:Envelope xmlns:s="x"><s:Body><SendFax><UserID>u</UserID>'
        f"<strPIN>pin-SHOWN-NEVER</strPIN><FileData>{data}</FileData><FileData>QUJD</FileData>"
        "</SendFax></s:Body></s:Envelope>"
    ).encode()
    record = ReceivedRequest("POST", "/fax/v5", {}, body)
    assert shown_body(record) == "\n".join(
        [
            '<?xml version="1.0"?>',
            '<s:Envelope xmlns:s="x">',
            "  <s:Body>",
            "    <SendFax>",
            "      <UserID>u</UserID>",
            "      <strPIN>***</strPIN>",
            "      <FileData>[400 characters of base64: the document]</FileData>",
            "      <FileData>QUJD</FileData>",  # short: shown as it is
            "    </SendFax>",
            "  </s:Body>",
            "</s:Envelope>",
        ]
    )
    # Whatever came is shown, well-formed or not, XML or not; a body not kept is said so.
    assert shown_body(ReceivedRequest("POST", "/", {}, b"<a><b>open")) == "<a>\n  <b>\n    open"
    assert shown_body(ReceivedRequest("POST", "/", {}, b"plain text")) == "plain text"
    dropped = ReceivedRequest("POST", "/", {}, b"", body_size=9, body_retained=False)
    assert shown_body(dropped) is None
