"""The running reconcile, as a context variable: who is acting on which key.

While a controller runs ``reconcile(key)``, :data:`current` holds a :class:`Reconciling`
(the controller, the key, a reconcile id). Everything the reconcile calls sees it without
being passed it: the toolkit's write client fences and books its writes against it
(:mod:`~aioinformer._runtime.bookkeeping`), and log records get ``controller``, ``key``
and ``reconcile_id`` attributes (:func:`install_log_context`), so plain ``logging`` in
user code is attributed, as controller-runtime's logr context does.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aioinformer._runtime.controller import Controller

__all__ = [
    "Reconciling",
    "current",
    "current_reconcile",
    "install_log_context",
    "next_reconcile_id",
]


@dataclass(frozen=True, slots=True)
class Reconciling:
    """One running reconcile (what :func:`current_reconcile` returns inside one)."""

    controller: Controller
    """The controller running it."""
    key: str
    """The key being reconciled ("ns/name", or "name" for a cluster-scoped primary)."""
    reconcile_id: str
    """Unique in the process: ``<controller>-<n>``; every log record of the reconcile
    carries it."""


current: contextvars.ContextVar[Reconciling | None] = contextvars.ContextVar(
    "aioinformer_reconciling", default=None
)
"""The reconcile running in this context, or None outside any reconcile."""


def current_reconcile() -> Reconciling | None:
    """The reconcile running in this context (controller, key, reconcile id), or None."""
    return current.get()


_ids = itertools.count(1)


def next_reconcile_id(controller: str) -> str:
    """A new reconcile id for ``controller``."""
    return f"{controller}-{next(_ids)}"


_installed = False


def install_log_context() -> None:
    """Make every log record carry ``controller``, ``key`` and ``reconcile_id`` (empty
    strings outside a reconcile), whichever logger made it, so a formatter can print them
    (``%(controller)s %(key)s %(reconcile_id)s``). Installs a log record factory once per
    process (idempotent); the previous factory still makes the record."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        running = current.get()
        record.controller = running.controller.name if running else ""
        record.key = running.key if running else ""
        record.reconcile_id = running.reconcile_id if running else ""
        return record

    logging.setLogRecordFactory(factory)
