"""Log records without secrets, whatever the server sent.

A message may quote what the server sent: a skipped watch line, an error's text, the
traceback of an unexpected exception. :class:`RedactingFilter` cleans each record with
:func:`~aioinformer._core.redact.redact_known` (every secret the live clients know) before
any handler sees it: the message with its arguments (then stored formatted, ``args``
emptied), the formatted traceback (then stored as ``exc_text`` and ``exc_info`` dropped,
since a handler formatting it again would bring the raw text back) and the stack text. An
exception whose text is clean but that carries a secret elsewhere (an aiohttp error's
request headers in its ``__context__``, a JSON error's document: anything
:func:`~aioinformer._core.redact.carries_secret` finds) is dropped the same way, its text
kept: a handler that walks ``exc_info`` (an error tracker) finds nothing. A record with
nothing to clean is left exactly as it was.

:func:`logger` makes the library's loggers with the filter on (every module of the library
gets its logger from it), and :func:`install` puts the filter on the loggers of the client it
rides on (``kubernetes_asyncio``, and any ``aioinformer`` logger made another way) that exist
when it is first called: once per process, when the first client is made (the client's
modules have made their loggers by then). A filter on a logger applies to the records logged
through it (not to those of its children), which is why each logger gets one.
"""

from __future__ import annotations

import logging
import threading

from aioinformer._core.redact import carries_secret, redact_known

__all__ = ["RedactingFilter", "install", "logger"]

_PREFIXES = ("aioinformer", "kubernetes_asyncio")


class RedactingFilter(logging.Filter):
    """Cleans every record of the known secrets (see the module docstring); drops none."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: the handler will report it
            return True
        clean = redact_known(message)
        if clean != message:
            record.msg, record.args = clean, ()
        text = record.exc_text
        if record.exc_info and not text:
            text = logging.Formatter().formatException(record.exc_info)
        if text:
            clean = redact_known(text)
            if clean != text or (record.exc_info and carries_secret(record.exc_info[1])):
                record.exc_text, record.exc_info = clean, None
        if record.stack_info:
            record.stack_info = redact_known(record.stack_info)
        return True


_FILTER = RedactingFilter()
_LOCK = threading.Lock()
_installed = False


def logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with the redacting filter on (the library's loggers)."""
    log = logging.getLogger(name)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    return log


def install() -> None:
    """Put the filter on every existing logger of the library and of kubernetes_asyncio,
    the first time it is called (later calls return at once)."""
    global _installed
    with _LOCK:
        if _installed:
            return
        names = [
            name
            for name in list(logging.root.manager.loggerDict)
            if any(name == p or name.startswith(p + ".") for p in _PREFIXES)
        ]
        for name in (*_PREFIXES, *names):
            logger(name)
        _installed = True
