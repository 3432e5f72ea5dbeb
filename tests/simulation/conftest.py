"""The simulation's tests run seeds in this process: the library's logs (every retry of
every replica) are silenced while they run, as ``soak --simulation`` does."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
