"""The cost per recipient for ``make bench``: CPU per SendFax of a 10 KiB document to 1, 100 and
1,000 recipients, FaxClient against its floor, side by side in one run.

The floor does the same job with nothing but the minimum: an f-string body built from the
same values (the document's base64 made once, as faxws's is not), sent with requests as a
request prepared once and given the new body, and the answer's job ids read with lxml (parse,
then the text of each ``JobId``; a regular expression would not read every valid answer,
whose prefixes the service chooses). faxws gets the recipients as the list of ``Recipient``
a caller holds, the floor as the list of tuples it holds.

The sink (its own process) answers each request with as many job ids as it names recipients.
``bench.py`` calls :func:`measure` and turns the figures into rows.

    python benchmarks/recipients_bench.py --sink    # the sink (prints its port)
"""

from __future__ import annotations

import base64
import os
import statistics
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from _common import ServerProcess, cpu_per_call  # benchmarks/

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
USER, PIN = "mbx0000000000", "0000"
HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}
SIZES = (1, 100, 1000)
FILE_SIZE = 10 * 1024


def send_response(n: int) -> bytes:
    ids = "".join(f"<item><JobId>J{i}</JobId></item>" for i in range(n))
    return (
        f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP}"><soap:Body>'
        f'<FaxSendResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds>{ids}'
        "</FaxJobIds><TTFP>30</TTFP><WSError><ErrorCode>0</ErrorCode><ErrorString/>"
        "</WSError></FaxSendResponse></soap:Body></soap:Envelope>"
    ).encode()


class _Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    answers: ClassVar[dict[int, bytes]] = {}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        n = body.count(b"</RecipFaxNumber>") + body.count(b"<RecipFaxNumber/>")
        answer = self.answers.get(n) or self.answers.setdefault(n, send_response(n))
        self.send_response(200)
        self.send_header("Content-Type", "text/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def _floor(url: str, rows: list[tuple[str, str]], encoded: str) -> Callable[[], list[str]]:
    import requests
    from lxml import etree

    session = requests.Session()
    session.trust_env = False
    template = requests.Request("POST", f"{url}/fax/v5", data=b"", headers=HEADERS).prepare()
    job_id = "{urn:FaxWS}JobId"

    def call() -> list[str]:
        items = "".join(
            f"<item><RecipFaxNumber>{number}</RecipFaxNumber><RecipCompany/><RecipTitle/>"
            f"<RecipName>{name}</RecipName><RecipSecureCSID/></item>"
            for number, name in rows
        )
        body = (
            f'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="{SOAP}">'
            f'<soap:Header/><soap:Body><SendFax xmlns="urn:FaxWS"><UserID>{USER}</UserID>'
            f"<strPIN>{PIN}</strPIN><Recipients>{items}</Recipients><FaxJobFiles><item>"
            f"<FileIndex>1</FileIndex><FileTypeId>101</FileTypeId><FileData>{encoded}"
            "</FileData></item></FaxJobFiles></SendFax></soap:Body></soap:Envelope>"
        ).encode()
        request = template.copy()
        request.prepare_body(body, None)
        answer = session.send(request)
        answer.raise_for_status()
        root = etree.fromstring(answer.content)
        return [e.text or "" for e in root.iter(job_id)]

    return call


def measure(*, smoke: bool) -> dict[str, Any]:
    """CPU seconds per call for each size, one figure per round: {size: {way: [...]}}."""
    from faxws import FaxClient, FaxFile, Recipient

    rounds = 3 if smoke else 5
    data = os.urandom(FILE_SIZE)
    encoded = base64.b64encode(data).decode()
    doc = FaxFile(data, 101)
    out: dict[str, Any] = {"rounds": rounds, "sizes": {}}
    with ServerProcess(__file__) as url, FaxClient(url, user_id=USER, pin=PIN) as client:
        for size in SIZES:
            rows = [(f"+1 555 {i:04d}", f"Name {i}") for i in range(size)]
            recipients = [Recipient(number, name=name) for number, name in rows]
            floor = _floor(url, rows, encoded)

            def ours(r: list[Recipient] = recipients) -> object:
                return client.send_fax(r, [doc]).job_ids

            assert len(client.send_fax(recipients, [doc]).job_ids) == len(floor()) == size
            calls = max(4, (20 if smoke else 4000) // size)
            out["sizes"][str(size)] = cpu_per_call(
                {"faxws": ours, "floor": floor}, calls, rounds, warm=1, step=5
            )
    return out


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    targets = {"1": 1.2, "1000": 3.0}
    out = []
    for size, ways in figures["sizes"].items():
        ratios = [a / b for a, b in zip(ways["faxws"], ways["floor"], strict=True)]
        ratio = statistics.median(ratios)
        limit = targets.get(size)
        out.append(
            {
                "figure": f"CPU per SendFax (10 KiB) to {int(size):,} recipient"
                + ("s" if size != "1" else ""),
                "value": f"{statistics.median(ways['faxws']) * 1000:.2f} ms",
                "baseline": f"floor {statistics.median(ways['floor']) * 1000:.2f} ms",
                "ratio": ratio,
                "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "target": "-"
                if limit is None
                else f"<= {limit}x" + (" (aim 2x)" if size == "1000" else ""),
                "met": limit is None or ratio <= limit,
            }
        )
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["--sink"]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
        server.daemon_threads = True
        print(server.server_address[1], flush=True)
        server.serve_forever()
    else:
        import json

        figures = measure(smoke="--smoke" in sys.argv)
        print(json.dumps(rows(figures), indent=1))
