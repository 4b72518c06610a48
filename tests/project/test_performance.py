"""What keeps the performance figures honest: start-up imports, and the benchmark itself."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "golden" / "report_pin.xml"


def modules_after(code: str) -> set[str]:
    # The names before json is imported to print them.
    names = "names = sorted(sys.modules)\nprint(__import__('json').dumps(names))"
    script = f"import sys\n{code}\n{names}"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_faxws_loads_neither_zeep_nor_requests() -> None:
    loaded = modules_after("import faxws")
    assert "zeep" not in loaded
    assert "requests" not in loaded
    assert "lxml.etree" not in loaded


CLI = """
from faxws.cli import main
try:
    main({args!r})
except SystemExit:
    pass
"""


@pytest.mark.parametrize(
    "args",
    [["--help"], ["send", "--help"], ["validate", str(SMALL)]],
    ids=["help", "send-help", "validate"],
)
def test_cli_start_up_does_not_import_zeep(args: list[str]) -> None:
    loaded = modules_after(CLI.format(args=args))
    assert "zeep" not in loaded
    assert "asyncio" not in loaded  # only the async client needs it
    if args != ["validate", str(SMALL)]:
        assert "requests" not in loaded


def test_cli_validate_of_a_small_file_leaves_out_what_it_does_not_need() -> None:
    loaded = modules_after(CLI.format(args=["validate", str(SMALL)]))
    assert "json" not in loaded  # only --json
    assert "faxws._protocol.xsd" not in loaded  # the bindings' types
    # The XSD is read from the package's folder, without importlib.resources, which imports
    # these (about 7 ms).
    assert {"importlib.resources", "pathlib", "zipfile"}.isdisjoint(loaded)


def test_client_calls_do_not_import_zeep(faxws_simulator: object) -> None:
    code = f"""
from faxws import FaxClient, FaxFile
from faxws.testing import DEMO_PIN, DEMO_USER_ID
c = FaxClient({faxws_simulator.url!r}, user_id=DEMO_USER_ID, pin=DEMO_PIN)
c.send_fax(["+1 555 0100"], [FaxFile(b"%PDF", 101)])
"""
    assert "zeep" not in modules_after(code)


def test_public_names_resolve() -> None:
    import faxws

    for name in faxws.__all__:
        assert getattr(faxws, name) is not None
    with pytest.raises(AttributeError):
        _ = faxws.NoSuchName  # type: ignore[attr-defined]


ROW_KEYS = {"figure", "value", "baseline", "ratio", "ratio_min", "ratio_max", "target", "met"}


def check_rows(rows: list[dict[str, Any]], stdout: str) -> None:
    """Every row has the same shape and is printed as it was written, whatever the figures
    came to: a ratio of 0 (a send that needed no new page, a thread that never waited) or
    infinite (a floor that never did) is a figure like any other, and only its order within
    its rounds' range is checked."""
    printed = [line for line in stdout.splitlines() if line.startswith("| ")][1:]
    assert len(printed) == len(rows)
    for row, line in zip(rows, printed, strict=True):
        assert set(row) - {"peer"} == ROW_KEYS
        ratios = (row["ratio_min"], row["ratio"], row["ratio_max"])
        assert all(isinstance(r, float) for r in ratios), row
        assert 0 <= row["ratio_min"] <= row["ratio"] <= row["ratio_max"], row  # NaN fails
        assert row["target"]
        assert isinstance(row["met"], bool)
        cells = [cell.strip() for cell in line[2:-2].split(" | ")]
        assert cells[:5] == [
            row["figure"],
            f"{row['ratio']:.2f}x",
            f"{row['ratio_min']:.2f}-{row['ratio_max']:.2f}x",
            row["target"],
            "yes" if row["met"] else "NO",
        ]


def test_bench_smoke_runs_and_prints_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--smoke", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard only: about a minute on a quiet machine, a few when busy
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| figure" in done.stdout
    figures = json.loads(out.read_text())
    rows = figures["rows"]
    assert len(rows) == 30
    check_rows(rows, done.stdout)
    # zeep is the peer wherever it applies; the floor is the baseline everywhere else.
    peers = [row["figure"] for row in rows if row.get("peer", "").startswith(("zeep", "import"))]
    assert len(peers) == 8
    assert sum("faxws.zeep vs plain zeep" in row["figure"] for row in rows) == 2
    assert sum("AsyncFaxClient" in row["figure"] for row in rows) == 4
    assert sum("recipient" in row["figure"] for row in rows) == 3
    assert sum("thread scaling" in row["figure"] for row in rows) == 2
    assert sum(row["figure"].startswith("simulator: ") for row in rows) == 3
    assert sum(row["baseline"].startswith("python -c pass") for row in rows) == 3
    assert sum(row["figure"].startswith("journal: ") for row in rows) == 3

    # At least three rounds of every figure: min, median and max.
    rounds = figures["rounds"]
    assert rounds >= 3
    per_round = {
        **{f"cpu {name}": values for name, values in figures["cpu"].items()},
        **{f"throughput {name}": values for name, values in figures["throughput"].items()},
        "tokens provider": figures["token_throughput"]["provider"],
        "tokens fixed": figures["token_throughput"]["fixed"],
        "issues invalid": figures["many_issues"]["invalid"],
        "issues valid": figures["many_issues"]["valid"],
        **{f"construction {name}": values for name, values in figures["construction"].items()},
        **{f"large {way}": figures["large"][way] for way in ("faxws", "floor", "zeep")},
        **{f"async {name}": values for name, values in figures["async"]["rates"].items()},
        **{f"async large {way}": figures["async"]["large"][way] for way in ("faxws", "floor")},
        **{
            f"recipients {size} {way}": values
            for size, ways in figures["recipients"]["sizes"].items()
            for way, values in ways.items()
        },
        **{f"simulator {way}": v for way, v in figures["simulator"]["throughput"]["rates"].items()},
        **{
            f"simulator cpu {way}": v
            for way, v in figures["simulator"]["throughput"]["cpu"].items()
        },
        **{f"simulator lookup {n}": v for n, v in figures["simulator"]["lookup"]["times"].items()},
        **{f"journal cost {way}": figures["journal"]["cost"][way] for way in ("journal", "bare")},
        **{
            f"journal tracking {name}": figures["journal"]["tracking"][name]
            for name in ("calls", "lookups", "asks", "seconds")
        },
    }
    many = figures["journal"]["processes"]
    if many is not None:  # None where PostgreSQL's server binaries are missing
        names = ("journal", "bare", "journal_cpu", "bare_cpu", "journal_sent", "add")
        per_round.update({f"journal processes {name}": many[name] for name in names})
    assert {name: len(values) for name, values in per_round.items()} == dict.fromkeys(
        per_round, rounds
    )
    assert {name: len(values) >= 3 for name, values in figures["startup"].items()} == (
        dict.fromkeys(("floor", "import_faxws", "help", "validate", "import_zeep"), True)
    )
    assert figures["many_issues"]["issues"] == 250
    assert figures["token_throughput"]["token_fetches"] >= 1
    # every fax tracked was polled the same number of rounds: the figure's denominator
    journal = figures["journal"]
    tracked = journal["tracking"]["m"] * journal["final_after"]
    assert journal["tracking"]["asks"] == [tracked] * rounds
    for large in (figures["large"], figures["async"]["large"]):
        assert large["size"] == 256 * 1024
        sends = [sent for way, sent_list in large.items() if way != "size" for sent in sent_list]
        assert {sent["size"] for sent in sends} == {256 * 1024}


# -- the table for any timing: what a busy or an idle machine can make of each figure ---------

ROUNDS = 3
SIZE = 256 * 1024
#: (kind, role, round) -> figure. A "time" (seconds, CPU seconds, a rate) is above zero at any
#: magnitude; a "count" (extra memory, context switches, CPU in whole clock ticks) may be zero.
Figure = Callable[[str, str, int], float]


def synthetic_figures(figure: Figure) -> dict[str, Any]:
    """Figures in the shape ``bench.py --json`` writes, ``ours`` for faxws's and ``floor``
    for every baseline and peer."""

    def t(role: str) -> list[float]:
        return [figure("time", role, i) for i in range(ROUNDS)]

    def c(role: str) -> list[float]:
        return [figure("count", role, i) for i in range(ROUNDS)]

    def sends(role: str) -> list[dict[str, Any]]:
        return [{"size": SIZE, "extra": c(role)[i], "wall": t(role)[i]} for i in range(ROUNDS)]

    ways = (("faxws", "ours"), ("face", "ours"), ("floor", "floor"), ("zeep", "floor"))
    return {
        "rounds": ROUNDS,
        "large": {
            "size": SIZE,
            "faxws": sends("ours"),
            "floor": sends("floor"),
            "zeep": sends("floor"),
        },
        "cpu": {f"{way}_{op}": t(role) for op in ("send", "report") for way, role in ways},
        "throughput": {"faxws": t("ours"), "floor": t("floor")},
        "token_throughput": {"provider": t("ours"), "fixed": t("floor"), "token_fetches": 1},
        "many_issues": {"issues": 250, "invalid": t("ours"), "valid": t("floor")},
        "startup": {
            **dict.fromkeys(("import_faxws", "help", "validate"), t("ours")),
            **dict.fromkeys(("floor", "import_zeep"), t("floor")),
        },
        "construction": {
            "first": t("ours"),
            "faxws": t("ours"),
            "floor": t("floor"),
            "zeep": t("floor"),
        },
        "async": {
            "rates": {
                **dict.fromkeys(("async", "async_1"), t("ours")),
                **dict.fromkeys(("threaded", "floor", "sync_1"), t("floor")),
            },
            "large": {"size": SIZE, "faxws": sends("ours"), "floor": sends("floor")},
            "calls": 100,
            "rounds": ROUNDS,
        },
        "recipients": {
            "rounds": ROUNDS,
            "sizes": {
                size: {"faxws": t("ours"), "floor": t("floor")} for size in ("1", "100", "1000")
            },
        },
        "threads": {
            "rates": {f"{way}_{n}": t(role) for way, role in ways[::2] for n in (1, 8, 32)},
            "switches": {f"{way}_{n}": c(role) for way, role in ways[::2] for n in (1, 8, 32)},
            "pool_full": 0,
            "rounds": ROUNDS,
        },
        "simulator": {
            "throughput": {
                "rates": {"simulator": t("ours"), "floor": t("floor")},
                "cpu": {"simulator": c("ours"), "floor": c("floor")},
                "calls": 1000,
                "rounds": ROUNDS,
                "clients": 16,
            },
            "lookup": {
                "times": {"many": t("ours"), "few": t("floor")},
                "jobs": [3000, 10],
                "calls": 100,
                "rounds": ROUNDS,
            },
        },
        "journal": {
            "rounds": ROUNDS,
            "document": 100 * 1024,
            "final_after": 3,
            "cost": {"journal": t("ours"), "bare": t("floor"), "n": 500, "filesystem": "ext4"},
            "processes": {
                "n": 2400,
                "processes": 8,
                **dict.fromkeys(("journal", "journal_cpu", "journal_sent", "add"), t("ours")),
                **dict.fromkeys(("bare", "bare_cpu"), t("floor")),
            },
            "tracking": {
                "m": 1000,
                "calls": c("ours"),
                "lookups": c("ours"),
                "asks": c("floor"),
                "seconds": t("ours"),
            },
        },
    }


def _by_role(ours: float, floor: float, count_ours: float, count_floor: float) -> Figure:
    def figure(kind: str, role: str, i: int) -> float:
        if kind == "time":
            return ours if role == "ours" else floor
        return count_ours if role == "ours" else count_floor

    return figure


def _by_round(kind: str, role: str, i: int) -> float:
    # Rounds far apart, and each way's worst round another one.
    shift = 0 if role == "ours" else 1
    if kind == "time":
        return (1e-9, 1.0, 1e9)[(i + shift) % ROUNDS]
    return (0.0, 7.0, 0.0)[(i + shift) % ROUNDS]


@pytest.mark.parametrize(
    "figure",
    [
        _by_role(1e-9, 1e-9, 0.0, 0.0),
        _by_role(1e9, 1e9, 1e12, 1e12),
        _by_role(1e-9, 1e9, 0.0, 1e9),
        _by_role(1e9, 1e-9, 5.0, 0.0),
        _by_role(1e-3, 1e-3, 0.0, 3.0),
        _by_round,
    ],
    ids=[
        "all-tiny-counts-zero",
        "all-huge",
        "ours-tiny-and-zero",
        "floors-tiny-and-zero",
        "only-our-counts-zero",
        "rounds-far-apart",
    ],
)
def test_bench_table_holds_for_any_timing(
    figure: Figure, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A slow or an idle moment can make a time tiny or huge, and a count of pages, context
    switches or clock ticks zero: every row still comes out, in the shape the smoke test
    checks, and the benchmark does not fail on a division by zero."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench

    rows = bench.all_rows(synthetic_figures(figure))
    assert len(rows) == 30
    written = json.loads(json.dumps([asdict(row) for row in rows]))
    check_rows(written, bench.table(rows))


def test_bench_table_without_postgres_says_the_figure_was_not_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where PostgreSQL's server binaries are missing (and not required), the processes
    figure is a row saying so, its target not met, and every other row is there."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench

    figures = synthetic_figures(_by_role(1.0, 2.0, 1.0, 2.0))
    figures["journal"]["processes"] = None
    rows = bench.all_rows(figures)
    assert len(rows) == 30
    missing = [row for row in rows if "PostgreSQL" in row.figure]
    assert len(missing) == 1
    assert missing[0].value.startswith("not measured")
    assert not missing[0].met
    check_rows(json.loads(json.dumps([asdict(row) for row in rows])), bench.table(rows))


def _send(counts: Any, reference: str) -> str:
    """A SendFaxEx's answer from the sink's counts (the ReferenceId is in the body's tail)."""
    tail = f"</FileData></item></FaxJobFiles><JobDetails><ReferenceId>{reference}</ReferenceId>"
    answer = counts.answer(b"<soap:Body><SendFaxEx", tail.encode()).decode()
    return str(answer.partition("<JobId>")[2].partition("</JobId>")[0])


def _status(counts: Any, *job_ids: str) -> str:
    items = "".join(f"<item><JobId>{job_id}</JobId></item>" for job_id in job_ids)
    body = f"<GetRealTimeFaxStatusEx2><FaxJobIds>{items}".encode()
    return str(counts.answer(body, body).decode())


def test_journal_sink_counts_what_the_figures_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each send gets its own job id; a job is in progress until its FINAL_AFTER-th ask,
    then delivered under its send's ReferenceId; status calls and the job ids they asked are
    counted, and so is a ReferenceId sent a second time (the benchmark fails on it)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import journal_bench

    counts = journal_bench._Counts(2)
    first, second = _send(counts, "ref-a"), _send(counts, "ref-b")
    assert first != second
    assert counts.resent == 0
    asked = [_status(counts, first, second, "nope") for _ in range(2)]
    assert asked[0].count("<FaxJobStatusId>3<") == 2
    assert "Invalid Job ID" in asked[0]
    assert asked[1].count("<FaxJobStatusId>1<") == 2
    assert "<ReferenceId>ref-b<" in asked[1]
    assert (counts.status_calls, counts.job_asks) == (2, 6)
    _send(counts, "ref-a")
    assert (counts.sends, counts.resent) == (3, 1)


def test_journal_sink_is_read_by_the_client_as_the_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sink in its own process, as the benchmark runs it, through FaxClient: SendFaxEx
    answers with a job id and a TTFP, the job's status follows its asks, the look-up by
    ReferenceId finds it (and not another), and ``GET /counts`` counts the calls."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import journal_bench

    from faxws import FaxClient, FaxFile, JobOptions, JobStatus

    with journal_bench._sink(2) as url, FaxClient(url, user_id="u", pin="1", timeout=30) as c:
        options = JobOptions(reference_id="r1")
        sent = c.send_fax(["+1 555 0100"], [FaxFile(b"%PDF-1.4", 101)], options=options)
        assert (len(sent.job_ids), sent.ttfp) == (1, 1)
        first, second = (c.get_real_time_fax_status(list(sent.job_ids))[0] for _ in range(2))
        assert (first.status, second.status) == (JobStatus.IN_PROGRESS, JobStatus.SUCCEEDED)
        assert second.reference_id == "r1"
        found = c.get_status_by_reference("r1")
        assert (found.found, found.status) == (True, JobStatus.SUCCEEDED)
        assert not c.get_status_by_reference("r2").found
        counts = journal_bench.sink_counts(url)
    del counts["last_send"]
    assert counts == {"sends": 1, "status_calls": 2, "job_asks": 2, "lookups": 2, "resent": 0}
