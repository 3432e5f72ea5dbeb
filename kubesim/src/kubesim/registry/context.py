"""What the request being served tells the write path, without passing it through every call.

The HTTP layer serves each request inside contexts (``contextvars``: a coroutine and what
it calls see its own), so that the generic store and the kinds' strategies below it learn
what they need of the request without it threading through every signature:

* :func:`as_requester` / :func:`requester`: who sends it (a CertificateSigningRequest's
  ``spec.username`` is the requester's, whatever the body says); in-process writes are
  KubeSim's admin;
* :func:`writing` / :func:`current_write`: an HTTP write's :class:`WriteContext`: its
  ``fieldValidation`` directive, the warnings it collects for the answer, and how an object
  a PATCH produced is decoded (as the patch handler decodes it). In-process writes have
  none: their objects are taken as they are.

The dry run (``dryRun=All``) is such a context too: :mod:`kubesim.registry.dryrun`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.registry.resource import ResourceType

__all__ = ["Requester", "WriteContext", "as_requester", "current_write", "requester", "writing"]


@dataclass(frozen=True, slots=True)
class Requester:
    """Who sent the request being served: the user name and groups (and uid, if any)."""

    name: str
    groups: tuple[str, ...]
    uid: str = ""


_ADMIN: Final = Requester("admin", ("system:masters", "system:authenticated"))
_REQUESTER: ContextVar[Requester | None] = ContextVar("kubesim_requester", default=None)


@contextmanager
def as_requester(who: Requester) -> Iterator[None]:
    """Serve the requests inside the block as ``who`` (the HTTP layer's authenticated user)."""
    token = _REQUESTER.set(who)
    try:
        yield
    finally:
        _REQUESTER.reset(token)


def requester() -> Requester:
    """The user the current request is served as (KubeSim's admin outside any request)."""
    return _REQUESTER.get() or _ADMIN


def _as_is(rt: ResourceType, obj: dict[str, Any], ctx: WriteContext) -> dict[str, Any]:
    return obj


@dataclass
class WriteContext:
    """One HTTP write's ``fieldValidation`` ``directive``, the ``warnings`` it collects,
    and ``decode_patched(rt, obj, ctx)``: an object a PATCH produced, decoded as the patch
    handler decodes it (adding to ``ctx.warnings``, or raising its 4xx)."""

    directive: str = "Warn"
    warnings: list[str] = field(default_factory=list)
    decode_patched: Callable[[ResourceType, dict[str, Any], WriteContext], dict[str, Any]] = _as_is


_CURRENT: ContextVar[WriteContext | None] = ContextVar("kubesim_write", default=None)


@contextmanager
def writing(ctx: WriteContext) -> Iterator[WriteContext]:
    """Serve the write inside the block with ``ctx`` (see the module docstring)."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


def current_write() -> WriteContext | None:
    """The HTTP write being served, or None (an in-process write)."""
    return _CURRENT.get()
