"""faxws benchmarks: every figure next to its floor and its peer, measured side by side in one run.

    python benchmarks/bench.py            # full sizes (make bench)
    python benchmarks/bench.py --smoke    # tiny sizes, a few seconds (make bench-smoke)

The floor of each figure is the least any client must do for the same job: the same request
body, prebuilt, in a request prepared once and sent with plain requests' ``Session.send``; a
large document streamed from disk in the same 768 KiB chunks with its Content-Length known;
``python -c pass`` for start-up. The peer is plain zeep with the same WSDL, where it applies.

Every figure comes from at least three rounds (five in full), the ways compared taking turns
within each round, so that a slow spell of a busy machine hits all of them alike; a row's ratio
is the median of the per-round ratios, with their minimum and maximum beside it.

Servers run in a separate process (a sink that reads each request and answers a fixed valid
response), so the client's CPU time and memory are measured alone. Memory figures come from
child processes: the peak RSS (VmHWM, reset just before the call) minus the RSS just before.
The send journal's figures (journal_bench.py) compare faxes sent through the journal with the
same faxes sent by a bare ``send_fax`` loop, on SQLite and on a PostgreSQL server started from
the machine's binaries.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import async_bench  # benchmarks/: the async client's figures
import journal_bench  # benchmarks/: the send journal's cost, processes and tracking
import recipients_bench  # benchmarks/: the cost per recipient
import simulator_bench  # benchmarks/: the simulator's throughput and lookups
import threads_bench  # benchmarks/: thread scaling
from _common import ServerProcess, cpu_per_call, proc_status  # benchmarks/
from _common import large_document as common_large_document  # benchmarks/

ROOT = Path(__file__).resolve().parents[1]
WSDL = ROOT / "wsdl" / "FaxWS.wsdl"
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
USER, PIN = "mbx0000000000", "0000"

SEND_RESPONSE = (
    f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP}"><soap:Body>'
    '<FaxSendResponse xmlns="urn:FaxWS"><return>true</return><FaxJobIds><item><JobId>J1</JobId>'
    "</item></FaxJobIds><TTFP>30</TTFP><WSError><ErrorCode>0</ErrorCode><ErrorString/>"
    "</WSError></FaxSendResponse></soap:Body></soap:Envelope>"
).encode()
REPORT_RESPONSE = (
    f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP}"><soap:Body>'
    '<GetFaxBroadcastReportResponse xmlns="urn:FaxWS"><return>true</return><WSError>'
    "<ErrorCode>0</ErrorCode><ErrorString/></WSError></GetFaxBroadcastReportResponse>"
    "</soap:Body></soap:Envelope>"
).encode()

#: Tokens living 2 s: below ClientCredentials' default leeway of 30 s.
TOKEN_LIFETIME = 2
TOKEN_RESPONSE = json.dumps(
    {"access_token": "bench-token", "token_type": "Bearer", "expires_in": TOKEN_LIFETIME}
).encode()


# -- the sink server (its own process) ----------------------------------------------------------


class _Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        remaining = int(self.headers.get("Content-Length", "0"))
        head = b""
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 20))
            if not chunk:
                break
            if len(head) < 2048:
                head += chunk[:2048]
            remaining -= len(chunk)
        if self.path == "/token":  # a token endpoint issuing short-lived tokens
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(TOKEN_RESPONSE)))
            self.end_headers()
            self.wfile.write(TOKEN_RESPONSE)
            return
        body = REPORT_RESPONSE if b"GetFaxBroadcastReport" in head else SEND_RESPONSE
        self.send_response(200)
        self.send_header("Content-Type", "text/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve_sink() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


# -- the floors: the same requests, prebuilt, sent with plain requests --------------------------

#: Bytes read per chunk when streaming a document (the size faxws uses: 768 KiB, a multiple of
#: 3, so every chunk but the last encodes without padding).
CHUNK = 3 * 256 * 1024

SEND_HEAD = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="'
    + SOAP.encode()
    + b'"><soap:Header/><soap:Body><SendFax xmlns="urn:FaxWS"><UserID>'
    + USER.encode()
    + b"</UserID><strPIN>"
    + PIN.encode()
    + b"</strPIN><Recipients><item><RecipFaxNumber>"
    b"+1 555 0100</RecipFaxNumber><RecipCompany/><RecipTitle/><RecipName/><RecipSecureCSID/>"
    b"</item></Recipients><FaxJobFiles><item><FileIndex>1</FileIndex><FileTypeId>101"
    b"</FileTypeId><FileData>"
)
SEND_TAIL = b"</FileData></item></FaxJobFiles></SendFax></soap:Body></soap:Envelope>"
FLOOR_REPORT_BODY = (
    f'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="{SOAP}"><soap:Header/>'
    f'<soap:Body><GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{USER}</UserID><strPIN>{PIN}'
    "</strPIN><JobId>J1</JobId><RecipientType>0</RecipientType><RecipAddress/>"
    "</GetFaxBroadcastReport></soap:Body></soap:Envelope>"
).encode()
HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}


def floor_send_body(encoded: bytes) -> bytes:
    return SEND_HEAD + encoded + SEND_TAIL


class StreamedBody:
    """The floor's SendFax body around a file's base64, read and encoded in CHUNK-byte pieces
    while it is sent. Its length is known in advance, so requests sends a Content-Length and
    no chunked encoding, as faxws does."""

    def __init__(self, path: str) -> None:
        self.path = path
        size = os.path.getsize(path)
        self.length = len(SEND_HEAD) + 4 * ((size + 2) // 3) + len(SEND_TAIL)

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[bytes]:
        yield SEND_HEAD
        with open(self.path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield base64.b64encode(chunk)
        yield SEND_TAIL


def floor_session(connections: int = 1) -> Any:
    """A plain requests session: no proxies from the environment, ``connections`` pooled."""
    import requests

    session = requests.Session()
    session.trust_env = False
    session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=connections))
    return session


def prepared(url: str, body: bytes | StreamedBody) -> Any:
    """The request prepared once (URL, headers, body), as its body was built once: what is
    left per call is what no client avoids, sending it and reading the answer. ``Session.send``
    skips ``Session.post``'s per-call merging of session settings, cookies and hooks, which
    faxws skips too. (Sending never changes a prepared request, so threads may share one.)"""
    import requests

    return requests.Request("POST", f"{url}/fax/v5", data=body, headers=HEADERS).prepare()


def floor_call(session: Any, request: Any) -> None:
    session.send(request).raise_for_status()


# -- the peer: plain zeep with the same WSDL ----------------------------------------------------


def zeep_client(url: str) -> Any:
    import requests
    import zeep
    from zeep.transports import Transport

    session = requests.Session()
    session.trust_env = False
    client = zeep.Client(str(WSDL), transport=Transport(session=session))
    return client.create_service("{urn:FaxWS}FaxWSBinding", f"{url}/fax/v5")


def zeep_send(service: Any, data: bytes) -> None:
    service.SendFax(
        UserID=USER,
        strPIN=PIN,
        Recipients={
            "item": [
                {
                    "RecipFaxNumber": "+1 555 0100",
                    "RecipCompany": "",
                    "RecipTitle": "",
                    "RecipName": "",
                    "RecipSecureCSID": "",
                }
            ]
        },
        FaxJobFiles={"item": [{"FileIndex": 1, "FileTypeId": 101, "FileData": data}]},
    )


def zeep_report(service: Any) -> None:
    service.GetFaxBroadcastReport(
        UserID=USER, strPIN=PIN, JobId="J1", RecipientType=0, RecipAddress=""
    )


def face_client(url: str) -> Any:
    """zeep's client through faxws.zeep, with the same WSDL as plain zeep's."""
    from faxws.zeep import make_client

    return make_client(url, user_id=USER, pin=PIN, wsdl=WSDL)


def face_send(client: Any, data: bytes) -> None:
    item = dict.fromkeys(("RecipCompany", "RecipTitle", "RecipName", "RecipSecureCSID"), "")
    client.service.SendFax(
        Recipients={"item": [{"RecipFaxNumber": "+1 555 0100", **item}]},
        FaxJobFiles={"item": [{"FileIndex": 1, "FileTypeId": 101, "FileData": data}]},
    )


def face_report(client: Any) -> None:
    client.service.GetFaxBroadcastReport(JobId="J1", RecipientType=0, RecipAddress="")


# -- large document: one child process per way and round ----------------------------------------


def child_large(way: str, url: str, path: str) -> None:
    """Send ``path`` once the way named, and print the extra peak memory and the time."""
    from faxws import FaxClient, FaxFile

    size = os.path.getsize(path)
    send: Callable[[], None]
    if way == "faxws":
        client = FaxClient(url, user_id=USER, pin=PIN)
        client.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)])  # warm up
        doc = FaxFile.from_path(path)

        def send() -> None:
            client.send_fax(["+1 555 0100"], [doc])

    elif way == "floor":
        session = floor_session()
        floor_call(session, prepared(url, floor_send_body(b"JVBERg==")))  # warm up

        def send() -> None:
            floor_call(session, prepared(url, StreamedBody(path)))

    else:
        service = zeep_client(url)
        zeep_send(service, b"%PDF-1.4")  # warm up
        data = Path(path).read_bytes()  # zeep needs the document in memory: not counted

        def send() -> None:
            zeep_send(service, data)

    baseline = proc_status("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak RSS to the current RSS
    except OSError:
        pass
    started = time.perf_counter()
    send()
    wall = time.perf_counter() - started
    extra = max(0, proc_status("VmHWM") - baseline)
    print(json.dumps({"way": way, "size": size, "extra": extra, "wall": wall}))


LARGE_WAYS = ("faxws", "floor", "zeep")


def large_document(url: str, size: int, rounds: int) -> dict[str, Any]:
    """Each round sends the document once each way, in turn, each in a fresh process."""
    return common_large_document(__file__, LARGE_WAYS, url, size, rounds)


# -- per call CPU, throughput -------------------------------------------------------------------


def per_call(url: str, n: int, rounds: int) -> dict[str, list[float]]:
    from faxws import FaxClient, FaxFile

    data = os.urandom(100 * 1024)
    client = FaxClient(url, user_id=USER, pin=PIN)
    doc = FaxFile(data, 101)
    service = zeep_client(url)
    face = face_client(url)
    session = floor_session()
    send_request = prepared(url, floor_send_body(base64.b64encode(data)))
    report_request = prepared(url, FLOOR_REPORT_BODY)
    return cpu_per_call(
        {
            "faxws_send": lambda: client.send_fax(["+1 555 0100"], [doc]),
            "floor_send": lambda: floor_call(session, send_request),
            "zeep_send": lambda: zeep_send(service, data),
            "face_send": lambda: face_send(face, data),
            "faxws_report": lambda: client.get_fax_broadcast_report("J1"),
            "floor_report": lambda: floor_call(session, report_request),
            "zeep_report": lambda: zeep_report(service),
            "face_report": lambda: face_report(face),
        },
        n,
        rounds,
    )


def _rate(call: Callable[[], object], calls: int, threads: int) -> float:
    """Calls per second with ``threads`` threads, after one warm call per connection."""
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: call(), range(threads * 4)))
        started = time.perf_counter()
        list(pool.map(lambda _: call(), range(calls)))
        return calls / (time.perf_counter() - started)


def throughput(url: str, calls: int, rounds: int, threads: int = 8) -> dict[str, list[float]]:
    """Calls per second of report calls in ``threads`` threads, one figure per round; in each
    round faxws and the floor take turns."""
    from faxws import FaxClient

    client = FaxClient(url, user_id=USER, pin=PIN, max_connections=threads)
    session = floor_session(threads)
    request = prepared(url, FLOOR_REPORT_BODY)
    rates: dict[str, list[float]] = {"faxws": [], "floor": []}
    for _ in range(rounds):
        rates["faxws"].append(_rate(lambda: client.get_fax_broadcast_report("J1"), calls, threads))
        rates["floor"].append(_rate(lambda: floor_call(session, request), calls, threads))
    client.close()
    session.close()
    return rates


def token_throughput(url: str, calls: int, rounds: int, threads: int = 8) -> dict[str, Any]:
    """Calls per second with a ClientCredentials provider whose tokens live TOKEN_LIFETIME
    seconds, against the same client with a fixed token; the two take turns in each round."""
    from faxws import FaxClient
    from faxws.oauth import ClientCredentials

    provider = ClientCredentials(f"{url}/token", "bench-client", "bench-secret")
    with_provider = FaxClient(url, user_id=USER, token=provider, max_connections=threads)
    same_token = json.loads(TOKEN_RESPONSE)["access_token"]
    fixed = FaxClient(url, user_id=USER, token=same_token, max_connections=threads)
    rates: dict[str, Any] = {"provider": [], "fixed": []}
    for _ in range(rounds):
        for name, client in (("provider", with_provider), ("fixed", fixed)):
            rates[name].append(
                _rate(lambda c=client: c.get_fax_broadcast_report("J1"), calls, threads)
            )
    with_provider.close()
    fixed.close()
    rates["token_fetches"] = provider.fetches
    return rates


# -- validation with many issues ----------------------------------------------------------------


def files_document(n: int, index: str) -> bytes:
    """A SendFax with n files, one per line; FileIndex ``x`` makes each one an issue."""
    item = f"<item><FileIndex>{index}</FileIndex><FileTypeId>101</FileTypeId><FileData>JVBERg=="
    return (
        '<SendFax xmlns="urn:FaxWS"><UserID>u</UserID><strPIN>1</strPIN><Recipients><item>'
        "<RecipFaxNumber>1</RecipFaxNumber><RecipCompany/><RecipTitle/><RecipName/>"
        "<RecipSecureCSID/></item></Recipients>\n<FaxJobFiles>\n"
        + f"{item}</FileData></item>\n" * n
        + "</FaxJobFiles></SendFax>"
    ).encode()


def many_issues(n: int, rounds: int) -> dict[str, Any]:
    """Seconds to validate a document with n issues, and (its floor) a valid one of the same
    size, in turn, one figure each per round."""
    from faxws import validate

    invalid, valid = files_document(n, "x"), files_document(n, "1")
    assert validate(valid) == []
    found = len(validate(invalid))  # also compiles the schema before timing
    assert found == n, found
    times: dict[str, Any] = {"issues": n, "invalid": [], "valid": []}
    for _ in range(rounds):
        for name, doc in (("invalid", invalid), ("valid", valid)):
            started = time.perf_counter()
            validate(doc)
            times[name].append(time.perf_counter() - started)
    return times


# -- start-up and construction ------------------------------------------------------------------


def startup_commands() -> dict[str, list[str]]:
    """The floor (the interpreter starting and stopping), faxws's three, and the peer. ``faxws``
    is the installed command when there is one next to this Python, as users run it."""
    small = ROOT / "tests" / "golden" / "report_pin.xml"
    py = sys.executable
    script = Path(py).with_name("faxws")
    faxws = [str(script)] if script.is_file() else [py, "-m", "faxws"]
    return {
        "floor": [py, "-c", "pass"],
        "import_faxws": [py, "-c", "import faxws"],
        "help": [*faxws, "--help"],
        "validate": [*faxws, "validate", str(small)],
        "import_zeep": [py, "-c", "import zeep"],
    }


def startup(rounds: int) -> dict[str, list[float]]:
    """Wall time of each command, one figure per round; the commands take turns in each
    round, so drift hits all alike."""
    commands = startup_commands()
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, cmd in commands.items():
            started = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            samples[name].append(time.perf_counter() - started)
    return samples


def child_construction(n: int) -> None:
    """CPU seconds per construction: the first FaxClient in the process, later ones, the floor
    (a requests session with its pool, what any client needs) and plain zeep's client."""
    from faxws import FaxClient

    started = time.process_time()
    FaxClient("https://fax.example.com", user_id=USER, pin=PIN)
    first = time.process_time() - started

    def faxws() -> None:
        FaxClient("https://fax.example.com", user_id=USER, pin=PIN)

    def floor() -> None:
        floor_session()

    def zeep() -> None:
        zeep_client("https://fax.example.com")

    zeep()  # the imports, not counted
    each = {}
    for name, fn, count in (("faxws", faxws, n), ("floor", floor, n), ("zeep", zeep, 5)):
        started = time.process_time()
        for _ in range(count):
            fn()
        each[name] = (time.process_time() - started) / count
    print(json.dumps({"first": first, **each}))


def construction(rounds: int) -> dict[str, list[float]]:
    """One fresh process per round, so the first construction is a first one each time."""
    samples: dict[str, list[float]] = {}
    for _ in range(rounds):
        done = subprocess.run(
            [sys.executable, __file__, "--child-construction"],
            capture_output=True,
            text=True,
            check=True,
        )
        for name, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
            samples.setdefault(name, []).append(value)
    return samples


# -- the table ----------------------------------------------------------------------------------


@dataclass
class Row:
    """One figure: ``ratio`` is the median of the per-round ratios to ``baseline`` (usually the
    floor), ``ratio_min`` and ``ratio_max`` their extremes; ``value``, ``baseline`` and ``peer``
    are display strings."""

    figure: str
    value: str
    baseline: str
    ratio: float
    ratio_min: float
    ratio_max: float
    target: str
    met: bool
    peer: str = ""


def row(
    figure: str,
    value: str,
    baseline: str,
    ratios: list[float],
    target: str = "-",
    met: bool = True,
    peer: str = "",
) -> Row:
    return Row(
        figure,
        value,
        baseline,
        statistics.median(ratios),
        min(ratios),
        max(ratios),
        target,
        met,
        peer,
    )


def per_round(ours: list[float], theirs: list[float]) -> list[float]:
    return [a / b for a, b in zip(ours, theirs, strict=True)]


def med(values: list[float]) -> float:
    return statistics.median(values)


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def ms(s: float) -> str:
    return f"{s * 1000:.2f} ms"


def span(ratios: list[float]) -> str:
    """A ratio's median with its range over the rounds."""
    return f"{med(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def table(rows: list[Row]) -> str:
    head = ("figure", "ratio", "min-max", "target", "met", "faxws", "baseline", "peer")
    body = [
        (
            r.figure,
            f"{r.ratio:.2f}x",
            f"{r.ratio_min:.2f}-{r.ratio_max:.2f}x",
            r.target,
            "yes" if r.met else "NO",
            r.value,
            r.baseline,
            r.peer or "-",
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for cells in body:
        lines.append(
            "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
        )
    return "\n".join(lines)


def large_rows(large: dict[str, Any]) -> list[Row]:
    size = large["size"]
    f, fl, z = ({k: [r[k] for r in large[way]] for k in ("extra", "wall")} for way in LARGE_WAYS)
    page = 4096  # a floor that needed no new page at all would divide by zero
    share = med(f["extra"]) / size
    wall_zeep = per_round(f["wall"], z["wall"])
    return [
        row(
            f"large document {mib(size)}: extra peak memory",
            f"{mib(med(f['extra']))} ({share:.2f}x the file)",
            f"floor {mib(med(fl['extra']))} ({med(fl['extra']) / size:.2f}x)",
            per_round(f["extra"], [max(page, e) for e in fl["extra"]]),
            "<= 1.5x the file (aim < 0.5x)",
            share <= 1.5,
            f"zeep {mib(med(z['extra']))} ({med(z['extra']) / size:.2f}x the file)",
        ),
        row(
            "large document: wall time",
            f"{med(f['wall']):.3f} s",
            f"floor {med(fl['wall']):.3f} s",
            per_round(f["wall"], fl["wall"]),
            "<= 1.3x; < 1x zeep",
            med(per_round(f["wall"], fl["wall"])) <= 1.3 and med(wall_zeep) < 1,
            f"zeep {med(z['wall']):.3f} s: {span(wall_zeep)}",
        ),
    ]


def cpu_rows(cpu: dict[str, list[float]]) -> list[Row]:
    rows = []
    for op, label in (("send", "SendFax (100 KiB)"), ("report", "report call")):
        ours, floor, zeep = cpu[f"faxws_{op}"], cpu[f"floor_{op}"], cpu[f"zeep_{op}"]
        vs_zeep = per_round(ours, zeep)
        rows.append(
            row(
                f"CPU per {label}",
                ms(med(ours)),
                f"floor {ms(med(floor))}",
                per_round(ours, floor),
                "<= 1x zeep",
                med(vs_zeep) <= 1,
                f"zeep {ms(med(zeep))}: {span(vs_zeep)}",
            )
        )
    for op, label in (("send", "SendFax (100 KiB)"), ("report", "report call")):
        face, zeep = cpu[f"face_{op}"], cpu[f"zeep_{op}"]
        ratios = per_round(face, zeep)
        rows.append(
            row(
                f"CPU per {label}: faxws.zeep vs plain zeep",
                ms(med(face)),
                f"zeep {ms(med(zeep))}",
                ratios,
                "<= 1.2x",
                med(ratios) <= 1.2,
            )
        )
    return rows


def startup_rows(boot: dict[str, list[float]]) -> list[Row]:
    rows = []
    for key, label in (
        ("import_faxws", "import faxws"),
        ("help", "faxws --help"),
        ("validate", "faxws validate (small file)"),
    ):
        vs_zeep = per_round(boot[key], boot["import_zeep"])
        rows.append(
            row(
                f"start-up: {label}",
                ms(med(boot[key])),
                f"python -c pass {ms(med(boot['floor']))}",
                per_round(boot[key], boot["floor"]),
                "<= 0.5x import zeep",
                med(vs_zeep) <= 0.5,
                f"import zeep {ms(med(boot['import_zeep']))}: {span(vs_zeep)}",
            )
        )
    return rows


def all_rows(figures: dict[str, Any]) -> list[Row]:
    """The table's rows from the figures as ``--json`` writes them."""
    rates, tokens, boot = figures["throughput"], figures["token_throughput"], figures["startup"]
    build, checked = figures["construction"], figures["many_issues"]
    rows = large_rows(figures["large"]) + cpu_rows(figures["cpu"])
    rows.append(
        row(
            "throughput, 8 threads, report calls",
            f"{med(rates['faxws']):.0f}/s",
            f"floor {med(rates['floor']):.0f}/s",
            per_round(rates["faxws"], rates["floor"]),
            ">= 0.7x",
            med(per_round(rates["faxws"], rates["floor"])) >= 0.7,
        )
    )
    ratios = per_round(tokens["provider"], tokens["fixed"])
    rows.append(
        row(
            f"throughput, 8 threads: tokens living {TOKEN_LIFETIME} s",
            f"{med(tokens['provider']):.0f}/s",
            f"fixed token {med(tokens['fixed']):.0f}/s",
            ratios,
            ">= 0.9x",
            med(ratios) >= 0.9,
        )
    )
    rows += startup_rows(boot)
    vs_zeep = per_round(build["faxws"], build["zeep"])
    rows.append(
        row(
            "construction: a later FaxClient (CPU)",
            f"{ms(med(build['faxws']))} (first {ms(med(build['first']))})",
            f"requests session {ms(med(build['floor']))}",
            per_round(build["faxws"], build["floor"]),
            "< 1 ms",
            med(build["faxws"]) < 0.001,
            f"zeep client {ms(med(build['zeep']))}: {span(vs_zeep)}",
        )
    )
    bad, good = checked["invalid"], checked["valid"]
    rows.append(
        row(
            f"validation: {checked['issues']:,} issues",
            f"{med(bad):.3f} s",
            f"valid, same size {ms(med(good))}",
            per_round(bad, good),
            "< 1 s",
            med(bad) < 1.0,
        )
    )
    rows += [Row(**r) for r in async_bench.rows(figures["async"])]
    rows += [Row(**r) for r in recipients_bench.rows(figures["recipients"])]
    rows += [Row(**r) for r in threads_bench.rows(figures["threads"])]
    rows += [Row(**r) for r in simulator_bench.rows(figures["simulator"])]
    rows += [Row(**r) for r in journal_bench.rows(figures["journal"])]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--sink", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-large", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--child-construction", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sink:
        serve_sink()
        return 0
    if args.child_large:
        child_large(*args.child_large)
        return 0
    if args.child_construction:
        child_construction(200)
        return 0

    # Every figure comes from at least three rounds (five in full), the ways compared taking
    # turns within each round; each row's ratio is the median of the per-round ratios.
    rounds = 3 if args.smoke else 5
    size = 256 * 1024 if args.smoke else 50 * 1024 * 1024
    calls = 10 if args.smoke else 200
    rate_calls = 50 if args.smoke else 2000
    boot_rounds = 3 if args.smoke else 11
    issues = 250 if args.smoke else 8000
    started = time.perf_counter()
    with ServerProcess(__file__) as url:
        large = large_document(url, size, rounds)
        cpu = per_call(url, calls, rounds)
        rates = throughput(url, rate_calls, rounds)
        tokens = token_throughput(url, rate_calls, rounds)
        async_figures = async_bench.measure(url, size, smoke=args.smoke)
    recipients = recipients_bench.measure(smoke=args.smoke)
    threads_figures = threads_bench.measure(None, args.smoke)
    simulator = simulator_bench.measure(smoke=args.smoke)
    journal = journal_bench.measure(smoke=args.smoke)
    boot = startup(boot_rounds)
    build = construction(rounds)
    checked = many_issues(issues, rounds)
    figures: dict[str, Any] = {
        "rounds": rounds,
        "large": large,
        "cpu": cpu,
        "throughput": rates,
        "token_throughput": tokens,
        "many_issues": checked,
        "startup": boot,
        "construction": build,
        "async": async_figures,
        "recipients": recipients,
        "threads": threads_figures,
        "simulator": simulator,
        "journal": journal,
    }
    rows = all_rows(figures)
    print(
        f"faxws benchmark{' (smoke sizes)' if args.smoke else ''}: "
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.machine()}; "
        f"ratios are medians of per-round ratios ({rounds} rounds, start-up {boot_rounds}, "
        f"threads {threads_figures['rounds']}, simulator {simulator['throughput']['rounds']})"
    )
    print(table(rows))
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        figures["rows"] = [asdict(r) for r in rows]
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
