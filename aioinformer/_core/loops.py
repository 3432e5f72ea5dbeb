"""Which event loop to run on: uvloop's when asked for (or installed), else asyncio's.

``new_event_loop(uvloop=None)`` makes a loop without installing any event loop policy (a
process-wide setting): uvloop's when ``uvloop`` is True (a :class:`ConfigError` if it is not
installed), asyncio's when False, and uvloop's if installed when None. The informers'
pipeline thread follows the loop it is started from (:mod:`~aioinformer._cache.pipeline`),
so a program on uvloop runs on uvloop end to end.
"""

from __future__ import annotations

import asyncio
import importlib

from aioinformer._core.errors import ConfigError

__all__ = ["new_event_loop"]


def new_event_loop(uvloop: bool | None = None) -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's or asyncio's (see the module docstring)."""
    if uvloop is False:
        return asyncio.new_event_loop()
    try:
        module = importlib.import_module("uvloop")
    except ImportError:
        module = None
    if module is None:  # (outside the except block: no ImportError chained)
        if uvloop:
            raise ConfigError("uvloop was asked for and is not installed: pip install uvloop")
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = module.new_event_loop()
    return loop
