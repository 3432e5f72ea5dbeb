"""Where a secret can still be reached from what the library hands out.

:func:`leaks` walks every object given (exceptions, statistics, log records) the way code
that inspects an error does: an exception's ``__cause__`` / ``__context__`` chain, its
``args``, notes and attributes, and through them any container or object (an aiohttp
error's ``request_info`` headers, a connection key's proxy credentials, a JSON error's
document), with :func:`aioinformer._core.redact.reachable_texts`, and returns the path of
every text holding one of the secrets (whole, or a piece of at least 12 characters: a cut
through a secret must not keep half of it). Tracebacks and frames are not walked: their
locals hold the client itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aioinformer._core.redact import reachable_texts

PIECE = 12


def pieces(secret: str) -> list[str]:
    """``secret`` and its pieces of :data:`PIECE` characters (start, middle, end)."""
    if len(secret) <= PIECE:
        return [secret]
    middle = len(secret) // 2 - PIECE // 2
    return [secret, secret[:PIECE], secret[middle : middle + PIECE], secret[-PIECE:]]


def leaks(objects: Iterable[object], secrets: Iterable[str]) -> list[str]:
    """``"<object n><path>: <text>"`` for every text reachable from ``objects`` that holds
    a secret or a piece of one; log records are walked through their message, arguments,
    ``exc_info`` exception, ``exc_text`` and ``stack_info``."""
    needles = [p for s in secrets if s for p in pieces(s)]
    found: list[str] = []
    for n, obj in enumerate(objects):
        root: object = obj
        if isinstance(obj, logging.LogRecord):
            root = [
                obj.getMessage(),
                obj.args,
                obj.exc_info[1] if obj.exc_info else None,
                obj.exc_text,
                obj.stack_info,
            ]
        for path, text in reachable_texts(root, max_depth=40, max_nodes=500_000):
            assert text != "<walk cut>", f"object {n} ({type(obj).__name__}): the walk was cut"
            if any(needle in text for needle in needles):
                found.append(f"object {n} ({type(obj).__name__}){path}: {text[:200]!r}")
    return found
