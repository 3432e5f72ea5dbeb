"""Sharded caches: each replica of a sharded manager caches only its shards' objects.

With ``Sharding(..., caches="sharded")`` the manager's shards are cut along the 256 label
buckets (:mod:`~aioinformer._core.shardbuckets`): shard ``i`` of ``N`` (``N <= 256``) owns
the buckets ``shard_buckets(i, N)``, and a replica's scope is the buckets of the shards it
holds. Contracts:

* **What is sharded.** Every controller's primary informer is scoped by uid
  (``shards=buckets_selector(scope)``) and each of its owned informers by label
  (``shard.aioinformer.dev/bucket in (...)``, ANDed with the informer's own selector): the
  informers the controllers have when the manager starts, unless one cannot be
  (:func:`plan_scopes`: given ``shards=`` by its user, primary of one controller and
  owned by another, or followed through ``watches=``). Informers of other kinds (read by
  the reconcilers only) stay full, and so do owned informers added while the manager
  runs. The manager scopes these informers: asking its factory for the same spec returns
  them, scoped. At start it logs one INFO line per informer saying how it is scoped (the
  informer itself logs who filters once its first list has told: server or client).
* **A key's shard** is that of its primary object's uid bucket, looked up in the
  controller's primary informer; the bucket of a deleted object is remembered (up to
  :data:`REMEMBERED_DELETIONS` keys) so its last reconcile still maps, whichever of the
  controller's handler and the key map's hears of the deletion first. A key whose primary
  this replica never cached is not its to reconcile.
* **Start.** The sharded informers are deferred (not started with the factory, not
  waited for by its sync: :meth:`~aioinformer.InformerFactory.defer`) until the replica
  holds a shard: a selector cannot be empty, and no request is sent for nothing.
* **Gain.** When shards are gained, the informers are widened (one relist of the new
  scope each, or their first list), their sync of it awaited, then the caches catch up
  with the Lease writes that took the shards (:mod:`~aioinformer._runtime.catchup`), then
  the labelers (:class:`~aioinformer.ShardLabeler`, one per namespace of the owned
  informers, which label the children of the buckets the informers are scoped to) place
  the unlabeled children they hold and the owned informers catch up with their patches,
  and only then are the shards *ready*: their keys may be reconciled, and are requeued,
  without the expectations (:class:`~aioinformer.Expectations`) an earlier hold of the
  shards left (they wait for events this replica did not see while it held them not).
  (Without that wait, a child that exists but lacks the label is invisible to its
  owner's reconcile, which would make it again.) Never on less: a step that does not
  complete within ``renew_deadline`` (a lagging watch, a labeler's failing patches) is
  logged and tried again, the shards staying not ready, until it completes or the
  wanted scope changes.
* **Loss.** A shard lost or handed over stops being ready at once (its reconciles are
  fenced by the manager); the informers are narrowed once the hand-over fence ran (its
  objects leave the caches, told to no handler). A replica that holds no shard any more
  parks them (:meth:`~aioinformer.Informer.park`: a selector cannot be empty, so they
  send no request and cache nothing) until it gains one, when they relist.
* **Changes are serial.** One task applies the wanted scope, so a rescope never races
  another; a change that comes while one is applied is applied next, and changes within
  :data:`GATHER` seconds of each other are applied together.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from aioinformer._cache.factory import InformerFactory
from aioinformer._cache.informer import Informer
from aioinformer._core import logs
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject
from aioinformer._core.shardbuckets import (
    LABEL_BUCKETS,
    SHARD_LABEL,
    bucket_label_selector,
    buckets_selector,
    shard_buckets,
    uid_bucket,
)
from aioinformer._runtime.catchup import catch_up
from aioinformer._runtime.controller import Controller

if TYPE_CHECKING:
    from aioinformer._coordination.labeler import ShardLabeler
    from aioinformer._coordination.sharding import ShardManager

__all__ = [
    "GATHER",
    "REMEMBERED_DELETIONS",
    "Scoping",
    "ShardedCaches",
    "labeled_resources",
    "plan_scopes",
]

log = logs.logger("aioinformer.manager")

GATHER: Final = 0.25
"""Seconds the scope waits after a change for more before it applies them together: a
fresh replica's shards become owned one by one, milliseconds apart (one relist, not six)."""

REMEMBERED_DELETIONS: Final = 65536
"""Deleted primaries whose bucket a controller's key map remembers (oldest forgotten)."""


@dataclass(frozen=True, slots=True)
class Scoping:
    """How a manager with sharded caches scopes one informer."""

    by: Literal["uid", "label", "full"]
    """``"uid"``: a primary, by its uid buckets; ``"label"``: owned, by the bucket label;
    ``"full"``: not sharded."""
    why: str
    """Whose informer it is (or why it stays full)."""

    @property
    def text(self) -> str:
        """What the manager logs at start for the informer."""
        if self.by == "uid":
            return (
                f"sharded by uid buckets (primary of {self.why}; server or client "
                "filtering decided at its first list)"
            )
        if self.by == "label":
            return f"sharded by label {SHARD_LABEL} (owned by {self.why})"
        return f"full ({self.why})"


def plan_scopes(controllers: Sequence[Controller]) -> dict[Informer, Scoping]:
    """How a manager with sharded caches scopes the informers of ``controllers``: a
    primary informer by uid, an owned one by the bucket label, unless it cannot be:

    * an informer given ``shards=`` by its user keeps its own scope (full here);
    * an informer that is a primary of one controller and owned by another stays full
      (it cannot be scoped both by uid and by label);
    * an informer any controller follows through ``watches=`` stays full: a mapper may
      map any of its objects to any key, so none may be missing.

    A controller whose informers stay full still reconciles only the keys of its shards
    (by its primary's uid bucket), on full caches."""
    primaries: dict[Informer, list[str]] = {}
    owned: dict[Informer, list[str]] = {}
    watched: dict[Informer, list[str]] = {}
    for ctl in controllers:
        primaries.setdefault(ctl.primary, []).append(ctl.name)
        for inf in ctl.owns:
            owned.setdefault(inf, []).append(ctl.name)
        for inf in ctl.watches:
            watched.setdefault(inf, []).append(ctl.name)
    plan: dict[Informer, Scoping] = {}
    for inf in {**watched, **owned, **primaries}:
        names = ", ".join(primaries.get(inf) or owned.get(inf) or [])
        if inf.shards is not None:
            plan[inf] = Scoping("full", f"its own shard selector {inf.shards.text}")
        elif inf in watched:
            plan[inf] = Scoping("full", f"watches= of {', '.join(watched[inf])}")
        elif inf in primaries and inf in owned:
            plan[inf] = Scoping(
                "full",
                f"primary of {', '.join(primaries[inf])} and owned by "
                f"{', '.join(owned[inf])}: cannot be scoped both by uid and by label",
            )
        elif inf in primaries:
            plan[inf] = Scoping("uid", names)
        else:
            plan[inf] = Scoping("label", names)
    return plan


def _log_incomplete(results: Iterable[object]) -> None:
    """Log each step of a scope change that raised (the change goes on without it)."""
    for result in results:
        if isinstance(result, BaseException):
            log.warning("sharded caches: a scope change did not complete: %r", result)


def labeled_resources(
    controllers: Sequence[Controller],
) -> dict[str | None, list[tuple[str, str]]]:
    """What the manager's shard labelers watch and patch: the resources (``(group_version,
    plural)``) of the informers :func:`plan_scopes` scopes by label, by namespace (None:
    every namespace), each where its informer watches, so the labelers need no
    permission the owned informers do not have."""
    found: dict[str | None, set[tuple[str, str]]] = {}
    for inf, how in plan_scopes(controllers).items():
        if how.by == "label":
            gv = f"{inf.group}/{inf.version}" if inf.group else inf.version
            found.setdefault(inf.namespace, set()).add((gv, inf.plural))
    return {ns: sorted(found[ns]) for ns in sorted(found, key=lambda n: n or "")}


def _title(inf: Informer) -> str:
    """``podsets.example.com/v1`` (``pods/v1``; ``[namespace]`` appended when it has one)."""
    where = f"[{inf.namespace}]" if inf.namespace else ""
    base = f"{inf.plural}.{inf.group}" if inf.group else inf.plural
    return f"{base}/{inf.version}{where}"


class _KeyBuckets:
    """The bucket of each key of one primary informer: its cached object's uid bucket, else
    that of the object last seen under the key (told by the informer's handlers, which may
    run after the key's reconcile: a key keeps its bucket from its object's ADDED on, and
    a deleted object's for :data:`REMEMBERED_DELETIONS` more deletions)."""

    def __init__(self, primary: Informer) -> None:
        self.primary = primary
        self._known: dict[str, int] = {}  # keys whose object was added, not deleted
        self._gone: collections.OrderedDict[str, int] = collections.OrderedDict()
        primary.add_handler(on_add=self._added, on_delete=self._deleted, name="shard-keys")

    def _added(self, obj: KubeObject) -> None:
        if obj.uid:
            self._known[obj.key] = uid_bucket(obj.uid)
        self._gone.pop(obj.key, None)

    def _deleted(self, obj: KubeObject) -> None:
        self._known.pop(obj.key, None)
        if obj.uid:
            self._gone[obj.key] = uid_bucket(obj.uid)
            self._gone.move_to_end(obj.key)
            while len(self._gone) > REMEMBERED_DELETIONS:
                self._gone.popitem(last=False)

    def keep_only(self, buckets: frozenset[int]) -> None:
        """Forget the live keys outside ``buckets`` (their objects left the cache)."""
        self._known = {k: b for k, b in self._known.items() if b in buckets}

    def bucket(self, key: str) -> int | None:
        obj = self.primary.snapshot().get(key)
        if obj is not None and obj.uid:
            return uid_bucket(obj.uid)
        found = self._known.get(key)
        return found if found is not None else self._gone.get(key)


class ShardedCaches:
    """The sharded-cache scope of one manager's controllers (see the module docstring).

    Args:
        factory: the manager's informer factory.
        shards: the number of shards (``Sharding.shards``, at most 256).
    """

    def __init__(self, factory: InformerFactory, shards: int) -> None:
        if not 1 <= shards <= LABEL_BUCKETS:
            raise ConfigError(
                f'caches="sharded" needs between 1 and {LABEL_BUCKETS} shards, not {shards}: '
                f'use fewer shards, or caches="full" (--shard-caches full), where every '
                "replica caches every object"
            )
        self.factory = factory
        self.shards = shards
        self._shard_of_bucket = [0] * LABEL_BUCKETS
        for i in range(shards):
            for b in shard_buckets(i, shards):
                self._shard_of_bucket[b] = i
        self.primaries: list[Informer] = []
        """The informers scoped by uid (the controllers' primaries)."""
        self.owned: dict[Informer, str | None] = {}
        """The informers scoped by label (owned), with their own label selector."""
        self._keys: dict[Informer, _KeyBuckets] = {}
        self.ready: set[int] = set()
        """The shards whose caches hold their objects: their keys may be reconciled."""
        self.scoped: frozenset[int] = frozenset()
        """The shards the informers are scoped to now."""
        self._wanted: frozenset[int] = frozenset()
        self._wake = asyncio.Event()
        self.labelers: list[ShardLabeler] = []
        """The labelers of the owned resources' unlabeled children, one per namespace of
        the owned informers (:func:`labeled_resources`; set by the manager)."""
        self.on_ready: list[Callable[[frozenset[int]], object]] = []
        """Called with the shards that just became ready."""

    def key_map(self, primary: Informer) -> _KeyBuckets:
        """The key map of ``primary`` (made on first use)."""
        found = self._keys.get(primary)
        if found is None:
            found = self._keys[primary] = _KeyBuckets(primary)
        return found

    def shard_of_bucket(self, bucket: int) -> int:
        """The shard owning ``bucket``."""
        return self._shard_of_bucket[bucket]

    def shard_of(self, primary: Informer, key: str) -> int | None:
        """The shard of ``key`` of the controller whose primary is ``primary``, or None
        when this replica never cached its object."""
        bucket = self.key_map(primary).bucket(key)
        return None if bucket is None else self._shard_of_bucket[bucket]

    def configure(self, controllers: Sequence[Controller]) -> None:
        """Take the controllers' primary and owned informers that can be sharded (before
        the factory starts; see :func:`plan_scopes`): each is deferred until this replica
        holds a shard. Says at INFO, one line per informer of the factory, how each is
        scoped."""
        plan = plan_scopes(controllers)
        self.primaries = [inf for inf, how in plan.items() if how.by == "uid"]
        self.owned = {inf: inf.label_selector for inf, how in plan.items() if how.by == "label"}
        for ctl in controllers:
            self.key_map(ctl.primary)
        for inf in self._informers():
            self.factory.defer(inf)
        for inf in self.factory.informers:
            how = plan.get(inf) or Scoping("full", "read by reconcilers only")
            log.info("%s: %s", _title(inf), how.text)

    def _informers(self) -> Iterable[Informer]:
        return [*self.primaries, *self.owned]

    def buckets_text(self, shard: int) -> str:
        """The buckets of ``shard`` as text: ``"00-3f"`` (two hex digits each)."""
        buckets = shard_buckets(shard, self.shards)
        first, last = buckets[0], buckets[-1]
        return f"{first:02x}" if first == last else f"{first:02x}-{last:02x}"

    # -- the wanted scope ------------------------------------------------------------------

    def want(self, shards: frozenset[int]) -> None:
        """The scope to apply next (the shards held, and those handed over until their
        fence ran). Shards no longer wanted stop being ready at once."""
        self.ready &= shards
        self._wanted = shards
        self._wake.set()

    async def run(self, manager: ShardManager, timeout: float | None) -> None:
        """Apply the wanted scope whenever it changes, until cancelled (see the module
        docstring); ``timeout`` bounds each sync (None: unbounded), ``renew_deadline``
        each catch-up."""
        while True:
            await self._wake.wait()
            await asyncio.sleep(GATHER)
            self._wake.clear()
            target = self._wanted
            if target != self.scoped:
                if target:
                    await self._apply(target, timeout)
                else:
                    await self._park(timeout)
                self.scoped = target
                kept = frozenset(b for t in target for b in shard_buckets(t, self.shards))
                for keys in self._keys.values():
                    keys.keep_only(kept)
            # every wanted shard not ready: gained now, or lost and taken again before its
            # objects left (its caches followed it all along: only the catch-up is due)
            pending = (self._wanted & self.scoped) - self.ready
            if pending:
                await self._catch_up(manager, frozenset(pending), manager.renew_deadline)

    async def _apply(self, target: frozenset[int], timeout: float | None) -> None:
        buckets = [b for s in sorted(target) for b in shard_buckets(s, self.shards)]
        widen = bool(target - self.scoped)
        selector = buckets_selector(buckets)
        labels = bucket_label_selector(buckets)
        log.info("sharded caches: scope -> shards %s (%d buckets)", sorted(target), len(buckets))
        steps = []
        for inf in self.primaries:
            if self.factory.is_deferred(inf):
                inf.shard(selector)
            else:
                steps.append(inf.rescope(selector, timeout=timeout))
        for inf, own in self.owned.items():
            scoped = f"{own},{labels}" if own else labels
            steps.append(inf.relabel(scoped, relist=widen, timeout=timeout))
        results = await asyncio.gather(*steps, return_exceptions=True)
        for inf in self._informers():
            self.factory.start_deferred(inf)
        starting = [inf.wait_for_sync(timeout) for inf in self._informers() if not inf.has_synced]
        results += await asyncio.gather(*starting, return_exceptions=True)
        _log_incomplete(results)

    async def _park(self, timeout: float | None) -> None:
        """No shard held any more: every sharded informer parks (an empty scope: no
        request, nothing cached) until a shard is gained."""
        log.info("sharded caches: scope -> no shard (the sharded informers park)")
        parking = [
            inf.park(timeout)
            for inf in self._informers()
            if not inf.closed and not self.factory.is_deferred(inf)
        ]
        _log_incomplete(await asyncio.gather(*parking, return_exceptions=True))

    async def _catch_up(
        self, manager: ShardManager, gained: frozenset[int], timeout: float
    ) -> None:
        """Make ``gained`` ready once the caches hold their keys' whole state: caught up
        with the Lease writes that took them, and every unlabeled child of their buckets
        labelled and in the owned caches. Never on less: a round that falls short
        (``timeout`` seconds each) is logged and tried again, the shards staying not
        ready, until it completes or the wanted scope changes (applied first; then this
        runs again for what is still gained)."""
        what = f"shards {sorted(gained)} of {manager.namespace}/{manager.name}"
        not_ready = "not ready until they do; trying again"
        for labeler in self.labelers:  # the unlabeled children of the gained buckets
            labeler.recheck()
        while not self._wake.is_set():
            versions = {s: v for s in gained if (v := manager.lease_version(s)) is not None}
            rv = max(versions.values(), default=0)
            if rv and await catch_up(self.factory.informers, rv, self.factory.rest, what=what,
                                     timeout=timeout, then=not_ready):  # fmt: skip
                continue
            if self.labelers:
                settled = await asyncio.gather(
                    *(lab.settle(timeout, retries=True) for lab in self.labelers)
                )
                if left := sum(lab.backlog for lab in self.labelers):
                    log.warning("sharded caches: %s: %d unlabeled children still to place: "
                                "%s", what, left, not_ready)  # fmt: skip
                    continue
                labeled = max(settled)
                if labeled > rv and await catch_up(
                    self.owned, labeled, self.factory.rest,
                    what=f"{what} (labelled children)", timeout=timeout, then=not_ready,
                ):  # fmt: skip
                    continue
            break
        else:
            return  # a new scope is wanted: applied first, then the catch-up again
        ready = frozenset(s for s in gained if s in self._wanted and manager.owns_shard(s))
        self.ready |= ready
        if ready:
            log.info("sharded caches: shards %s ready", sorted(ready))
            for callback in list(self.on_ready):
                callback(ready)

    def may_act(self, manager: ShardManager, primary: Informer, key: str) -> bool:
        """Whether this replica may act on ``key`` of the controller of ``primary``: its
        shard is held and ready."""
        shard = self.shard_of(primary, key)
        return shard is not None and shard in self.ready and manager.owns_shard(shard)
