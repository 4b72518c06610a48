"""faxws benchmarks: every figure next to its baseline, measured side by side in one run.

    python benchmarks/bench.py            # full sizes (make bench)
    python benchmarks/bench.py --smoke    # tiny sizes, a few seconds (make bench-smoke)

Servers run in a separate process (a sink that reads each request and answers a fixed valid
response), so the client's CPU time and memory are measured alone. Memory figures come from
child processes: the peak RSS (VmHWM, reset just before the call) minus the RSS just before.
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
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import async_bench  # benchmarks/: the async client's figures
import threads_bench  # benchmarks/: thread scaling

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


class SinkProcess:
    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--sink"], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        return f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# -- request bodies for the floor ---------------------------------------------------------------


def floor_send_body(encoded: bytes) -> bytes:
    return (
        b'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="'
        + SOAP.encode()
        + b'"><soap:Header/><soap:Body><SendFax xmlns="urn:FaxWS"><UserID>'
        + USER.encode()
        + b"</UserID><strPIN>"
        + PIN.encode()
        + b"</strPIN><Recipients><item><RecipFaxNumber>"
        b"+1 555 0100</RecipFaxNumber><RecipCompany/><RecipTitle/><RecipName/><RecipSecureCSID/>"
        b"</item></Recipients><FaxJobFiles><item><FileIndex>1</FileIndex><FileTypeId>101"
        b"</FileTypeId><FileData>" + encoded + b"</FileData></item></FaxJobFiles></SendFax>"
        b"</soap:Body></soap:Envelope>"
    )


FLOOR_REPORT_BODY = (
    f'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="{SOAP}"><soap:Header/>'
    f'<soap:Body><GetFaxBroadcastReport xmlns="urn:FaxWS"><UserID>{USER}</UserID><strPIN>{PIN}'
    "</strPIN><JobId>J1</JobId><RecipientType>0</RecipientType><RecipAddress/>"
    "</GetFaxBroadcastReport></soap:Body></soap:Envelope>"
).encode()
HEADERS = {"Content-Type": "application/soap+xml; charset=utf-8", "SOAPAction": ""}


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


# -- large document: one child process per way of sending ---------------------------------------


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def child_large(way: str, url: str, path: str) -> None:
    """Send ``path`` once the way named, and print the extra peak memory and the time."""
    import requests

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
        session = requests.Session()
        session.trust_env = False
        session.post(f"{url}/fax/v5", data=floor_send_body(b"JVBERg=="), headers=HEADERS)

        def send() -> None:
            with open(path, "rb") as fh:
                body = floor_send_body(base64.b64encode(fh.read()))
            session.post(f"{url}/fax/v5", data=body, headers=HEADERS).raise_for_status()

    else:
        service = zeep_client(url)
        zeep_send(service, b"%PDF-1.4")  # warm up
        data = Path(path).read_bytes()  # zeep needs the document in memory: not counted

        def send() -> None:
            zeep_send(service, data)

    baseline = _status("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak RSS to the current RSS
    except OSError:
        pass
    started = time.perf_counter()
    send()
    wall = time.perf_counter() - started
    extra = max(0, _status("VmHWM") - baseline)
    print(json.dumps({"way": way, "size": size, "extra": extra, "wall": wall}))


def large_document(url: str, size: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scan.pdf"
        block = os.urandom(1 << 20)
        with open(path, "wb") as fh:
            for _ in range(size // len(block)):
                fh.write(block)
            fh.write(block[: size % len(block)])
        out = {}
        for way in ("faxws", "floor", "zeep"):
            done = subprocess.run(
                [sys.executable, __file__, "--child-large", way, url, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            out[way] = json.loads(done.stdout.strip().splitlines()[-1])
        return out


# -- per call CPU, throughput -------------------------------------------------------------------


def cpu_per_call(fns: dict[str, Callable[[], object]], n: int, rounds: int) -> dict[str, float]:
    """CPU seconds per call of each function, the median of ``rounds`` rounds. Within a round
    the functions take turns in slices of a few calls, so that a slow spell of a busy machine
    falls on all of them alike rather than on one."""
    for fn in fns.values():
        for _ in range(min(20, n)):
            fn()
    step = max(1, min(10, n))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        spent = dict.fromkeys(fns, 0.0)
        for _ in range(max(1, n // step)):
            for name, fn in fns.items():
                started = time.process_time()
                for _ in range(step):
                    fn()
                spent[name] += time.process_time() - started
        for name in fns:
            samples[name].append(spent[name] / (max(1, n // step) * step))
    return {name: statistics.median(values) for name, values in samples.items()}


def per_call(url: str, n: int, rounds: int) -> dict[str, float]:
    import requests

    from faxws import FaxClient, FaxFile

    data = os.urandom(100 * 1024)
    client = FaxClient(url, user_id=USER, pin=PIN)
    doc = FaxFile(data, 101)
    service = zeep_client(url)
    face = face_client(url)
    session = requests.Session()
    session.trust_env = False
    send_body = floor_send_body(base64.b64encode(data))

    def floor_send() -> None:
        session.post(f"{url}/fax/v5", data=send_body, headers=HEADERS).raise_for_status()

    def floor_report() -> None:
        session.post(f"{url}/fax/v5", data=FLOOR_REPORT_BODY, headers=HEADERS).raise_for_status()

    return cpu_per_call(
        {
            "faxws_send": lambda: client.send_fax(["+1 555 0100"], [doc]),
            "zeep_send": lambda: zeep_send(service, data),
            "floor_send": floor_send,
            "face_send": lambda: face_send(face, data),
            "faxws_report": lambda: client.get_fax_broadcast_report("J1"),
            "zeep_report": lambda: zeep_report(service),
            "floor_report": floor_report,
            "face_report": lambda: face_report(face),
        },
        n,
        rounds,
    )


def throughput(url: str, calls: int, rounds: int, threads: int = 8) -> dict[str, float]:
    """Calls per second; rounds alternate between faxws and the floor, the best of each."""
    import requests

    from faxws import FaxClient

    client = FaxClient(url, user_id=USER, pin=PIN, max_connections=threads)
    session = requests.Session()
    session.trust_env = False
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=threads)
    session.mount("http://", adapter)

    def run(fn: Callable[[int], object]) -> float:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(fn, range(threads * 4)))  # warm up every connection
            started = time.perf_counter()
            list(pool.map(fn, range(calls)))
            return calls / (time.perf_counter() - started)

    faxws_rates, floor_rates = [], []
    for _ in range(rounds):
        faxws_rates.append(run(lambda _: client.get_fax_broadcast_report("J1")))
        floor_rates.append(
            run(lambda _: session.post(f"{url}/fax/v5", data=FLOOR_REPORT_BODY, headers=HEADERS))
        )
    return {"faxws": max(faxws_rates), "floor": max(floor_rates)}


def spread(values: list[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
    }


def token_throughput(url: str, calls: int, rounds: int, threads: int = 8) -> dict[str, Any]:
    """Calls per second with a ClientCredentials provider whose tokens live TOKEN_LIFETIME
    seconds, against the same client with a fixed token; rounds alternate, and each round's
    ratio counts."""
    from faxws import FaxClient
    from faxws.oauth import ClientCredentials

    provider = ClientCredentials(f"{url}/token", "bench-client", "bench-secret")
    with_provider = FaxClient(url, user_id=USER, token=provider, max_connections=threads)
    same_token = json.loads(TOKEN_RESPONSE)["access_token"]
    fixed = FaxClient(url, user_id=USER, token=same_token, max_connections=threads)

    def run(client: Any) -> float:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda _: client.get_fax_broadcast_report("J1"), range(threads * 4)))
            started = time.perf_counter()
            list(pool.map(lambda _: client.get_fax_broadcast_report("J1"), range(calls)))
            return calls / (time.perf_counter() - started)

    provider_rates, fixed_rates, ratios = [], [], []
    for _ in range(rounds):
        provider_rates.append(run(with_provider))
        fixed_rates.append(run(fixed))
        ratios.append(provider_rates[-1] / fixed_rates[-1])
    return {
        "provider": spread(provider_rates),
        "fixed": spread(fixed_rates),
        "ratio": spread(ratios),
        "token_fetches": provider.fetches,
    }


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
    """Seconds to validate a document with n issues, and a valid one of the same size."""
    from faxws import validate

    invalid, valid = files_document(n, "x"), files_document(n, "1")
    assert validate(valid) == []
    found = len(validate(invalid))  # also compiles the schema before timing
    assert found == n, found
    times: dict[str, list[float]] = {"invalid": [], "valid": []}
    for _ in range(rounds):
        for name, doc in (("invalid", invalid), ("valid", valid)):
            started = time.perf_counter()
            validate(doc)
            times[name].append(time.perf_counter() - started)
    return {"issues": n, "invalid": spread(times["invalid"]), "valid": spread(times["valid"])}


# -- start-up and construction ------------------------------------------------------------------


def startup(runs: int) -> dict[str, float]:
    """Median wall time of each command; the commands take turns, so drift hits all alike."""
    small = ROOT / "tests" / "golden" / "report_pin.xml"
    py = sys.executable
    commands = {
        "import_zeep": [py, "-c", "import zeep"],
        "import_faxws": [py, "-c", "import faxws"],
        "validate": [py, "-m", "faxws", "validate", str(small)],
        "help": [py, "-m", "faxws", "--help"],
    }
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            started = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in samples.items()}


def child_construction() -> None:
    from faxws import FaxClient

    started = time.perf_counter()
    FaxClient("https://fax.example.com", user_id=USER, pin=PIN)
    first = time.perf_counter() - started
    n = 200
    started = time.perf_counter()
    for _ in range(n):
        FaxClient("https://fax.example.com", user_id=USER, pin=PIN)
    later = (time.perf_counter() - started) / n
    print(json.dumps({"first": first, "later": later}))


def construction() -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child-construction"],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


# -- the table ----------------------------------------------------------------------------------


@dataclass
class Row:
    figure: str
    value: str
    baseline: str
    ratio: float
    target: str
    met: bool
    ratio_min: float | None = None  # the per-round ratios' extremes, where there are rounds
    ratio_max: float | None = None


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def ms(s: float) -> str:
    return f"{s * 1000:.2f} ms"


def ratio_text(row: Row) -> str:
    if row.ratio_min is None or row.ratio_max is None:
        return f"{row.ratio:.2f}x"
    return f"{row.ratio:.2f}x ({row.ratio_min:.2f}-{row.ratio_max:.2f})"


def table(rows: list[Row]) -> str:
    head = ("figure", "ratio", "target", "met", "faxws", "baseline")
    body = [
        (r.figure, ratio_text(r), r.target, "yes" if r.met else "NO", r.value, r.baseline)
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in body:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    return "\n".join(lines)


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
        child_construction()
        return 0

    size = 256 * 1024 if args.smoke else 50 * 1024 * 1024
    calls, rounds = (20, 1) if args.smoke else (200, 5)
    rate_calls = 100 if args.smoke else 2000
    runs = 2 if args.smoke else 11
    issues, issue_rounds = (250, 3) if args.smoke else (8000, 5)
    started = time.perf_counter()
    with SinkProcess() as url:
        large = large_document(url, size)
        cpu = per_call(url, calls, rounds)
        rates = throughput(url, rate_calls, rounds)
        tokens = token_throughput(url, rate_calls, rounds)
        async_figures = async_bench.measure(url, size, smoke=args.smoke)
    boot = startup(runs)
    build = construction()
    checked = many_issues(issues, issue_rounds)

    f, fl, z = large["faxws"], large["floor"], large["zeep"]
    rows = [
        Row(
            f"large document {mib(size)}: extra peak memory / file size",
            f"{f['extra'] / size:.2f}x ({mib(f['extra'])})",
            f"zeep {z['extra'] / size:.2f}x ({mib(z['extra'])})",
            f["extra"] / size,
            "<= 1.5x (aim < 0.5x)",
            f["extra"] / size <= 1.5,
        ),
        Row(
            "large document: wall time vs floor",
            f"{f['wall']:.3f} s",
            f"floor {fl['wall']:.3f} s",
            f["wall"] / fl["wall"],
            "<= 1.3x",
            f["wall"] / fl["wall"] <= 1.3,
        ),
        Row(
            "large document: wall time vs plain zeep",
            f"{f['wall']:.3f} s",
            f"zeep {z['wall']:.3f} s",
            f["wall"] / z["wall"],
            "< 1x",
            f["wall"] < z["wall"],
        ),
    ]
    for op, label in (("send", "SendFax (100 KiB)"), ("report", "report call")):
        ours, zeep_cpu, floor_cpu = cpu[f"faxws_{op}"], cpu[f"zeep_{op}"], cpu[f"floor_{op}"]
        rows += [
            Row(
                f"CPU per {label} vs plain zeep",
                ms(ours),
                f"zeep {ms(zeep_cpu)}",
                ours / zeep_cpu,
                "<= 1x",
                ours <= zeep_cpu,
            ),
            Row(
                f"CPU per {label} vs floor",
                ms(ours),
                f"floor {ms(floor_cpu)}",
                ours / floor_cpu,
                "-",
                True,
            ),
        ]
    for op, label in (("send", "SendFax (100 KiB)"), ("report", "report call")):
        face_cpu, zeep_cpu = cpu[f"face_{op}"], cpu[f"zeep_{op}"]
        rows.append(
            Row(
                f"CPU per {label}: faxws.zeep vs plain zeep",
                ms(face_cpu),
                f"zeep {ms(zeep_cpu)}",
                face_cpu / zeep_cpu,
                "<= 1.2x",
                face_cpu <= 1.2 * zeep_cpu,
            )
        )
    rate = rates["faxws"] / rates["floor"]
    rows.append(
        Row(
            "throughput, 8 threads, report calls",
            f"{rates['faxws']:.0f}/s",
            f"floor {rates['floor']:.0f}/s",
            rate,
            ">= 0.7x",
            rate >= 0.7,
        )
    )
    t = tokens["ratio"]
    rows.append(
        Row(
            f"throughput, 8 threads: tokens living {TOKEN_LIFETIME} s vs a fixed token",
            f"{tokens['provider']['median']:.0f}/s (ratio {t['min']:.2f}-{t['max']:.2f}x)",
            f"fixed {tokens['fixed']['median']:.0f}/s",
            t["median"],
            ">= 0.9x",
            t["median"] >= 0.9,
        )
    )
    zeep_boot = boot["import_zeep"]
    for key, label in (
        ("import_faxws", "import faxws"),
        ("validate", "faxws validate (small file)"),
        ("help", "faxws --help"),
    ):
        rows.append(
            Row(
                f"start-up: {label}",
                ms(boot[key]),
                f"import zeep {ms(zeep_boot)}",
                boot[key] / zeep_boot,
                "<= 0.5x",
                boot[key] / zeep_boot <= 0.5,
            )
        )
    rows.append(
        Row(
            "construction: later FaxClient",
            ms(build["later"]),
            f"first {ms(build['first'])}",
            build["later"] / build["first"],
            "< 1 ms",
            build["later"] < 0.001,
        )
    )
    bad, good = checked["invalid"], checked["valid"]
    rows.append(
        Row(
            f"validation: {issues:,} issues vs a valid document of the same size",
            f"{bad['median']:.3f} s ({bad['min']:.3f}-{bad['max']:.3f})",
            f"valid {ms(good['median'])}",
            bad["median"] / good["median"],
            "< 0.5 s",
            bad["median"] < 0.5,
        )
    )
    rows += [Row(**row) for row in async_bench.rows(async_figures)]
    rows += [Row(**row) for row in threads_bench.rows(threads_bench.measure(None, args.smoke))]
    print(
        f"faxws benchmark{' (smoke sizes)' if args.smoke else ''}: "
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    print(table(rows))
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "large": large,
                    "cpu": cpu,
                    "throughput": rates,
                    "token_throughput": tokens,
                    "many_issues": checked,
                    "startup": boot,
                    "construction": build,
                    "async": async_figures,
                    "rows": [r.__dict__ for r in rows],
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
