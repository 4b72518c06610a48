"""pytest plugin (registered through the ``pytest11`` entry point): simulator fixtures,
available in any test suite once faxws is installed.

    def test_my_code_sends_a_fax(faxws_simulator):
        my_code(base_url=faxws_simulator.url, user_id=DEMO_USER_ID, pin=DEMO_PIN)
        assert faxws_simulator.jobs[0].files[0].data.startswith(b"%PDF")

    def test_my_client_is_conformant(faxws_simulator_factory):
        sim = faxws_simulator_factory([Account("mbx1", pin="1234")], strict=True)
        ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from faxws.testing import Account, FaxWSSimulator

__all__ = [
    "SimulatorFactory",
    "faxws_simulator",
    "faxws_simulator_factory",
    "faxws_simulator_session",
]


class SimulatorFactory(Protocol):
    def __call__(
        self, accounts: Iterable[Account] | None = None, *, strict: bool = False, **options: Any
    ) -> FaxWSSimulator: ...


@pytest.fixture
def faxws_simulator() -> Iterator[FaxWSSimulator]:
    """A running FaxWS simulator on 127.0.0.1 with the demo account, stopped after the test."""
    from faxws.testing import FaxWSSimulator

    with FaxWSSimulator() as sim:
        yield sim


@pytest.fixture
def faxws_simulator_factory() -> Iterator[SimulatorFactory]:
    """Starts simulators with the accounts and options given (``strict``, ``token_lifetime``,
    ``ttfp``, ``retained_body_bytes``, ...); each is stopped after the test."""
    from faxws.testing import FaxWSSimulator

    started: list[FaxWSSimulator] = []

    def make(
        accounts: Iterable[Account] | None = None, *, strict: bool = False, **options: Any
    ) -> FaxWSSimulator:
        sim = FaxWSSimulator(accounts, strict=strict, **options).start()
        started.append(sim)
        return sim

    yield make
    for sim in reversed(started):
        sim.stop()


@pytest.fixture(scope="session")
def faxws_simulator_session() -> Iterator[FaxWSSimulator]:
    """One simulator with the demo account for the whole session, for tests that only need a
    service; it keeps what every test sent (``reset()`` where a test needs a clean record)."""
    from faxws.testing import FaxWSSimulator

    with FaxWSSimulator() as sim:
        yield sim
