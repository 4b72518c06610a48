"""The WSDL and XSD shipped inside the package, found with importlib.resources."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

WSDL_NAME = "FaxWS.wsdl"
XSD_NAME = "FaxWS.xsd"


def _folder() -> Any:
    # A Traversable; not named, because its home moved (importlib.abc up to 3.10,
    # importlib.resources.abc from 3.11) and the old name warns from 3.13 on.
    return resources.files("faxws").joinpath("wsdl")


def read_xsd() -> bytes:
    data: bytes = _folder().joinpath(XSD_NAME).read_bytes()
    return data


@contextlib.contextmanager
def xsd_path() -> Iterator[Path]:
    """A real file path of the XSD (extracted if the package is zipped)."""
    with resources.as_file(_folder().joinpath(XSD_NAME)) as path:
        yield path


@contextlib.contextmanager
def wsdl_path() -> Iterator[Path]:
    """A real file path of the WSDL, with the XSD it imports beside it."""
    with resources.as_file(_folder()) as folder:
        yield Path(folder) / WSDL_NAME
