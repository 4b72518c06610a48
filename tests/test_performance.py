"""What keeps the performance figures honest: start-up imports, and the benchmark itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
    assert "faxws._runs" not in loaded  # only documents with long runs of siblings need it
    assert "json" not in loaded  # only --json
    assert "faxws._xsd" not in loaded  # the bindings' types
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


def test_bench_smoke_runs_and_prints_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--smoke", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| figure" in done.stdout
    figures = json.loads(out.read_text())
    rows = figures["rows"]
    assert len(rows) == 27
    # Every row has the same shape, a ratio within its rounds' range, and is printed with
    # "NO" exactly when its target did not hold.
    printed = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert len(printed) == len(rows)
    for row, line in zip(rows, printed, strict=True):
        assert set(row) - {"peer"} == ROW_KEYS
        assert 0 < row["ratio_min"] <= row["ratio"] <= row["ratio_max"]
        assert row["target"]
        assert line.startswith(f"| {row['figure']} ")
        assert (" | NO " in line) is not row["met"]
    # zeep is the peer wherever it applies; the floor is the baseline everywhere else.
    peers = [row["figure"] for row in rows if row.get("peer", "").startswith(("zeep", "import"))]
    assert len(peers) == 8
    assert sum("faxws.zeep vs plain zeep" in row["figure"] for row in rows) == 2
    assert sum("AsyncFaxClient" in row["figure"] for row in rows) == 4
    assert sum("recipient" in row["figure"] for row in rows) == 3
    assert sum("thread scaling" in row["figure"] for row in rows) == 2
    assert sum(row["figure"].startswith("simulator: ") for row in rows) == 3
    assert sum(row["baseline"].startswith("python -c pass") for row in rows) == 3

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
    }
    assert {name: len(values) for name, values in per_round.items()} == dict.fromkeys(
        per_round, rounds
    )
    assert {name: len(values) >= 3 for name, values in figures["startup"].items()} == (
        dict.fromkeys(("floor", "import_faxws", "help", "validate", "import_zeep"), True)
    )
    assert figures["many_issues"]["issues"] == 250
    assert figures["token_throughput"]["token_fetches"] >= 1
    for large in (figures["large"], figures["async"]["large"]):
        assert large["size"] == 256 * 1024
        sends = [sent for way, sent_list in large.items() if way != "size" for sent in sent_list]
        assert {sent["size"] for sent in sends} == {256 * 1024}
