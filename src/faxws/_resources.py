"""The WSDL and XSD shipped inside the package, found with importlib.resources."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

WSDL_NAME = "FaxWS.wsdl"
XSD_NAME = "FaxWS.xsd"


def _folder() -> Any:
    # A Traversable; not named, because its home moved (importlib.abc up to 3.10,
    # importlib.resources.abc from 3.11) and the old name warns from 3.13 on.
    from importlib import resources

    return resources.files("faxws").joinpath("wsdl")


def read_xsd() -> bytes:
    # From the package's folder when it is one: importlib.resources would import pathlib and
    # zipfile (7 ms) on the way of `faxws validate`; a zipped package is read through it.
    try:
        with open(os.path.join(os.path.dirname(__file__), "wsdl", XSD_NAME), "rb") as f:
            return f.read()
    except OSError:
        data: bytes = _folder().joinpath(XSD_NAME).read_bytes()
        return data


@contextlib.contextmanager
def wsdl_path() -> Iterator[Path]:
    """A real file path of the WSDL, with the XSD it imports beside it."""
    from importlib import resources
    from pathlib import Path

    with resources.as_file(_folder()) as folder:
        yield Path(folder) / WSDL_NAME
