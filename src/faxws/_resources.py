"""The WSDL and XSD shipped inside the package, found with importlib.resources."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

WSDL_NAME = "FaxWS.wsdl"
XSD_NAME = "FaxWS.xsd"


def _file(name: str) -> Traversable:
    return resources.files("faxws").joinpath("wsdl").joinpath(name)


def read_xsd() -> bytes:
    data: bytes = _file(XSD_NAME).read_bytes()
    return data


@contextlib.contextmanager
def xsd_path() -> Iterator[Path]:
    """A real file path of the XSD (extracted if the package is zipped)."""
    with resources.as_file(_file(XSD_NAME)) as path:
        yield path


@contextlib.contextmanager
def wsdl_path() -> Iterator[Path]:
    """A real directory holding the WSDL and the XSD it imports."""
    with resources.as_file(resources.files("faxws").joinpath("wsdl")) as folder:
        yield folder / WSDL_NAME
