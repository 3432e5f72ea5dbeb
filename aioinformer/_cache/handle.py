"""InformerHandle: one user's hold on a shared informer, released when that user is done.

``handle = factory.acquire("v1", "secrets")`` (or :meth:`aioinformer.Manager.acquire`)
takes a hold on the factory's informer of that spec, creating and, if the factory runs,
starting it; ``await handle.release()`` (or leaving ``async with handle:``) gives the hold
back. The informer runs while someone holds it or someone pinned it (asked for it with
:meth:`~aioinformer.InformerFactory.informer`, which never gives it back): when the last
hold on an unpinned informer is released, the factory stops it and forgets it.

Contracts:

* **Reference counting.** Every ``acquire`` of one spec returns its own handle on the
  one shared informer (:attr:`informer`); ``release`` is idempotent, so a handle counts
  once however often it is released. Acquiring after the last release creates a fresh
  informer (a new list and watch, an empty cache at first); the one released is not
  reused.
* **Handlers go with their handle.** Subscriptions made through the handle
  (:meth:`add_handler`, :meth:`changes`) are cancelled when it is released, whoever else
  still holds the informer: their queues are dropped, a running handler is cancelled, a
  stream ends. Subscriptions made on :attr:`informer` directly are the informer's: they
  end when it stops.
* **Stopping.** ``release`` of the last hold returns once the informer has stopped: its
  task cancelled and awaited, its watch closed (the server sees the connection end), its
  pipeline ended, its handlers cancelled (for at most
  :data:`~aioinformer._cache.handlers.STOP_GRACE` seconds each), and it is gone from the
  factory's :attr:`~aioinformer.InformerFactory.informers`, so from a manager's
  ``/readyz``, ``/metrics`` and ``wait_for_sync``. A read waiting on it
  (``wait_for_sync``, ``wait_fresh``, ``wait_for_rv``, ``wait_until``, ``wait_gone``,
  ``query``) that its last state does not satisfy raises
  :class:`~aioinformer.ClosedError` at once, as does one started later;
  ``snapshot()`` keeps answering with the last state it published, which follows the
  server no more. Its memory goes with the last reference to it: the factory keeps none.
  Release the last hold from outside the informer's own handlers (a reconcile, a task of
  yours): a handler of it that does waits for itself, up to ``STOP_GRACE``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Self

from aioinformer._cache.handlers import (
    DEFAULT_MAX_QUEUE,
    ChangeStream,
    OnAdd,
    OnDelete,
    OnUpdate,
    Subscription,
)
from aioinformer._cache.informer import Informer
from aioinformer._core.errors import ClosedError

__all__ = ["InformerHandle"]


class InformerHandle:
    """One hold on a shared informer (see the module docstring): made by
    :meth:`InformerFactory.acquire <aioinformer.InformerFactory.acquire>`, not by users.

    Args:
        informer: the shared informer held.
        release: the factory's release of one hold (called once, by :meth:`release`).
    """

    def __init__(
        self, informer: Informer, release: Callable[[InformerHandle], Awaitable[None]]
    ) -> None:
        self.informer = informer
        """The shared informer this handle holds (still readable once released: its last
        published state)."""
        self._release = release
        self._released = False
        self._subscriptions: list[Subscription] = []

    def __repr__(self) -> str:
        state = "released" if self._released else "held"
        return f"<InformerHandle {self.informer.name} {state}>"

    @property
    def released(self) -> bool:
        """Whether :meth:`release` was called."""
        return self._released

    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        namespace: str | None = None,
        in_thread: bool = False,
    ) -> Subscription:
        """:meth:`Informer.add_handler <aioinformer.Informer.add_handler>` (the same
        arguments), cancelled when this handle is released. :class:`ClosedError` once
        released."""
        self._check()
        sub = self.informer.add_handler(
            on_add, on_update, on_delete, coalesce=coalesce, name=name, max_queue=max_queue,
            namespace=namespace, in_thread=in_thread,
        )  # fmt: skip
        self._subscriptions.append(sub)
        return sub

    def changes(
        self,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        namespace: str | None = None,
    ) -> ChangeStream:
        """:meth:`Informer.changes <aioinformer.Informer.changes>` (the same arguments):
        a stream that ends when this handle is released. :class:`ClosedError` once
        released."""
        self._check()
        stream = self.informer.changes(
            coalesce=coalesce, name=name, max_queue=max_queue, namespace=namespace
        )
        self._subscriptions.append(stream.subscription)
        return stream

    def _check(self) -> None:
        if self._released:
            raise ClosedError(f"this handle on informer {self.informer.name} was released")

    async def release(self) -> None:
        """Give the hold back: cancel the subscriptions made through this handle, then,
        if it was the last hold and nobody pinned the informer, stop the informer and
        return once it has stopped (see the module docstring). Idempotent."""
        if self._released:
            return
        self._released = True
        subscriptions, self._subscriptions = self._subscriptions, []
        for sub in subscriptions:
            sub.cancel()
        await self._release(self)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.release()
