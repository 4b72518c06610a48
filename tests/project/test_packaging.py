"""The wheel carries the WSDL and XSD, its metadata says what faxws is, and a client works
from it in any directory."""

from __future__ import annotations

import email.parser
import hashlib
import subprocess
import sys
import textwrap
import zipfile
from email.message import Message
from pathlib import Path

import pytest
from built_wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
#: The Apache License 2.0's text as the Apache Software Foundation publishes it.
APACHE_2_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory)


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))


def test_the_wheel_says_what_faxws_is_and_its_licence(wheel: Path) -> None:
    meta = _metadata(wheel)
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    with zipfile.ZipFile(wheel) as archive:
        (licence,) = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        shipped = archive.read(licence)
    assert shipped == (ROOT / "LICENSE").read_bytes()
    assert hashlib.md5(shipped).hexdigest() == APACHE_2_MD5  # noqa: S324 - a fingerprint
    # PEP 639: a License-Expression replaces the licence classifiers, which indexes refuse
    # beside it.
    classifiers = meta.get_all("Classifier") or []
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert {
        "Operating System :: OS Independent",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Intended Audience :: Developers",
        "Intended Audience :: Healthcare Industry",
        "Topic :: Communications :: Fax",
        "Typing :: Typed",
    } <= set(classifiers)
    assert [c for c in classifiers if c.startswith("Development Status ::")]
    assert meta["Requires-Python"] == ">=3.10"
    assert meta["Author"]
    assert "fax" in meta["Keywords"].split(",")
    assert dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or []) == {
        "Homepage": "https://github.com/faxws/faxws",
        "Documentation": "https://faxws.github.io/faxws/",
        "Source": "https://github.com/faxws/faxws",
        "Issues": "https://github.com/faxws/faxws/issues",
    }
    assert set(meta.get_all("Provides-Extra") or []) >= {
        "async",
        "otel",
        "postgres",
        "progress",
        "preview",
        "docs",
    }


def test_the_long_description_is_the_readme(wheel: Path) -> None:
    meta = _metadata(wheel)
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload() == (ROOT / "README.md").read_text(encoding="utf-8")


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
