"""Log output of the command line: text or JSON lines, with the reconcile's context.

Every record carries ``controller``, ``key`` and ``reconcile_id`` (from
:func:`aioinformer.install_log_context`), library and user code alike; the text format
shows them in brackets when set, the JSON format as fields.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Literal

from aioinformer._runtime.context import install_log_context

__all__ = ["JsonFormatter", "TextFormatter", "configure_logging"]

LogFormat = Literal["text", "json"]


class TextFormatter(logging.Formatter):
    """``time LEVEL logger [controller key reconcile_id] message``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(context)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        parts = [getattr(record, a, "") for a in ("controller", "key", "reconcile_id")]
        record.context = f" [{' '.join(p for p in parts if p)}]" if any(parts) else ""
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, ``message``, and
    ``controller``/``key``/``reconcile_id`` inside a reconcile, ``exception`` with one."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for attr in ("controller", "key", "reconcile_id"):
            value = getattr(record, attr, "")
            if value:
                out[attr] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(fmt: LogFormat = "text", level: str = "INFO") -> None:
    """Log to stderr in ``fmt`` at ``level`` (the root logger), with the reconcile context."""
    install_log_context()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
