"""Finalizers: cleanup that runs before an object may go, in kube-rs's ``finalizer()`` shape.

:func:`finalizer` drives one reconcile of an object that owns a finalizer:

* the object is not being deleted: make sure it carries ``name`` in its finalizers (added
  with a conflict-safe patch; the update that adds it reconciles the object again), then
  run ``apply(obj)``;
* the object is being deleted (``deletionTimestamp`` set) and still carries ``name``: run
  ``cleanup(obj)``; when it returns without raising, remove ``name`` (the object may then
  go), so cleanup runs to completion at least once before the object is gone, and again
  after a failure (it must be idempotent);
* being deleted and ``name`` already gone: nothing to do.

What ``apply`` or ``cleanup`` returns is the reconcile's result; what they raise propagates
(the controller retries with backoff, the finalizer stays).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aioinformer._client.client import Client
from aioinformer._core.objects import KubeObject
from aioinformer._runtime.controller import Result

__all__ = ["finalizer"]


async def finalizer(
    client: Client,
    obj: KubeObject,
    name: str,
    *,
    apply: Callable[[KubeObject], Awaitable[Result | None]],
    cleanup: Callable[[KubeObject], Awaitable[Result | None]],
) -> Result | None:
    """Reconcile ``obj`` under finalizer ``name`` (see the module docstring).

    Args:
        client: writes the finalizer (usually ``manager.client``).
        obj: the primary object, as the reconcile read it from the cache.
        name: the finalizer, e.g. ``"example.aioinformer.dev/cleanup"``.
        apply: ``await apply(obj)`` while the object is not being deleted.
        cleanup: ``await cleanup(obj)`` once it is being deleted; must be idempotent.

    Returns:
        What ``apply`` or ``cleanup`` returned; None when the call only added the
        finalizer (the update reconciles the object again) or had nothing to do.
    """
    if obj.deletion_timestamp is None:
        if name not in obj.finalizers:
            await client.ensure_finalizer(obj, name)
            return None  # the update that added it brings the object back
        return await apply(obj)
    if name not in obj.finalizers:
        return None
    result = await cleanup(obj)
    await client.remove_finalizer(obj, name)
    return result
