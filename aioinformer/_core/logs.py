"""Log records without secrets, whatever the server sent.

A message may quote what the server sent: a skipped watch line, an error's text, the
traceback of an unexpected exception. :class:`RedactingFilter` cleans each record with
:func:`~aioinformer._core.redact.redact_known` (every secret the live clients know) before
any handler sees it: the message with its arguments (then stored formatted, ``args``
emptied), the formatted traceback (then stored as ``exc_text`` and ``exc_info`` dropped,
since a handler formatting it again would bring the raw text back) and the stack text. A
record with nothing to clean is left exactly as it was.

:func:`install` puts the filter on every logger of the library (``aioinformer`` and below)
and of the client it rides on (``kubernetes_asyncio``), those that exist when it is called;
the client layer calls it whenever a client is made, so the loggers of every module imported
by then are covered. A filter on a logger applies to the records logged through it (not to
those of its children), which is why each logger gets one. It is idempotent and cheap.
"""

from __future__ import annotations

import logging
import threading

from aioinformer._core.redact import redact_known

__all__ = ["RedactingFilter", "install"]

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
            if clean != text:
                record.exc_text, record.exc_info = clean, None
        if record.stack_info:
            record.stack_info = redact_known(record.stack_info)
        return True


_FILTER = RedactingFilter()
_LOCK = threading.Lock()


def install() -> None:
    """Put the filter on every existing logger of the library and of kubernetes_asyncio."""
    with _LOCK:
        names = [
            name
            for name in list(logging.root.manager.loggerDict)
            if any(name == p or name.startswith(p + ".") for p in _PREFIXES)
        ]
        for name in (*_PREFIXES, *names):
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
