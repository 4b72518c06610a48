"""pytest plugin (registered through the ``pytest11`` entry point): the ``faxws_simulator``
fixture, available in any test suite once faxws is installed.

    def test_my_code_sends_a_fax(faxws_simulator):
        my_code(base_url=faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        assert faxws_simulator.jobs[0].files[0].data.startswith(b"%PDF")
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from faxws.testing import FaxWSSimulator


@pytest.fixture
def faxws_simulator() -> Iterator[FaxWSSimulator]:
    """A running FaxWS simulator on 127.0.0.1 with the demo account, stopped after the test."""
    from faxws.testing import FaxWSSimulator

    with FaxWSSimulator() as sim:
        yield sim
