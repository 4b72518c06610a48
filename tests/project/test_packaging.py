"""The wheel carries the WSDL and XSD, and a client works from it in any directory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        timeout=600,
        check=True,
    )
    (found,) = out.glob("faxws-*.whl")
    return found


def _run_python(script: str, cwd: Path) -> str:
    """What ``python -c script`` prints in ``cwd`` (stripped); it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_wheel_contents(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "faxws/wsdl/FaxWS.wsdl",
        "faxws/wsdl/FaxWS.xsd",
        "faxws/py.typed",
        "faxws/bindings.py",
        "faxws/client.py",
    ):
        assert required in names
    assert (ROOT / "wsdl" / "FaxWS.xsd").read_bytes() == zipfile.ZipFile(wheel).read(
        "faxws/wsdl/FaxWS.xsd"
    )


def test_installed_wheel_works_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        timeout=600,
        check=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(target)!r})
        import faxws
        from faxws import _resources
        assert faxws.__file__.startswith({str(target)!r}), faxws.__file__
        assert _resources.read_xsd().count(b'targetNamespace="urn:FaxWS"') == 1
        client = faxws.FaxClient("https://fax.example.com", user_id="u", pin="1")
        print(client.url)
        """
    )
    assert _run_python(script, elsewhere) == "https://fax.example.com/fax/v5"


def test_the_schema_is_read_from_a_zipped_package_too(wheel: Path, tmp_path: Path) -> None:
    """Imported straight from the wheel (a zip), the package has no folder to read the XSD
    from; importlib.resources reads it instead."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(wheel)!r})
        import faxws
        from faxws import _resources
        assert faxws.__file__.startswith({str(wheel)!r}), faxws.__file__
        assert _resources.read_xsd() == open({str(ROOT / "wsdl" / "FaxWS.xsd")!r}, "rb").read()
        print(faxws.validate(b'<GetFaxBroadcastReport xmlns="urn:FaxWS"/>')[0].message)
        """
    )
    assert _run_python(script, tmp_path) == "missing child element; expected UserID"
