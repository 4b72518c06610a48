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
    script = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
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
    if args != ["validate", str(SMALL)]:
        assert "requests" not in loaded


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
    assert len(figures["rows"]) == 24
    assert sum("thread scaling" in row["figure"] for row in figures["rows"]) == 2
    assert figures["many_issues"]["issues"] == 250
    assert figures["token_throughput"]["token_fetches"] >= 1
    assert sum("faxws.zeep vs plain zeep" in row["figure"] for row in figures["rows"]) == 2
    assert sum("AsyncFaxClient" in row["figure"] for row in figures["rows"]) == 4
    rounds = figures["async"]["rounds"]
    assert rounds >= 3  # min, median and max over rounds
    assert {name: len(rates) for name, rates in figures["async"]["rates"].items()} == dict.fromkeys(
        ("threaded", "async", "floor", "sync_1", "async_1"), rounds
    )
    assert figures["async"]["large"]["size"] == 256 * 1024
    for row in figures["rows"]:
        assert row["ratio"] > 0
    large = figures["large"]
    assert {way: large[way]["size"] for way in large} == {
        "faxws": 256 * 1024,
        "floor": 256 * 1024,
        "zeep": 256 * 1024,
    }
