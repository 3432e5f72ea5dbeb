"""ShardLabeler: gives children that lack it the shard bucket label of their owner.

The client writes ``shard.aioinformer.dev/bucket`` on every child it creates with an owner
(:func:`~aioinformer.set_owner`), so a replica's label-selected informers see exactly the
children of its primaries. Children made otherwise lack it: those created before the
label existed, by another client, or by another controller from an object the operator
owns (the pods of a StatefulSet the operator created). The labeler places them:

* it watches each resource it is given with the label selector
  ``!shard.aioinformer.dev/bucket`` (the server sends only the unlabeled objects;
  metadata only), and for each such object
* with no controller ownerReference: leaves it alone (counted, ``without_controller``);
* else reads the controller owner (GET, the reference's uid must match; remembered per
  uid) and takes the owner's bucket (:func:`~aioinformer.owner_bucket`): its label if it
  has one, so grandchildren follow the root; its uid's bucket if it is a root; if the
  owner is an unlabeled child itself, the owner's own owner, and so on up the chain (at
  most :data:`MAX_DEPTH` links) to a label or a root;
* patches the label (a JSON merge patch of the label, with the object's uid as a
  precondition: an object replaced under the same name is not touched), counted
  (``labeled``) and logged (DEBUG each, INFO a summary each time the backlog empties).
  A labeled object leaves the label-selected watch: the labeler forgets it.
* an owner that is gone (NotFound, or another uid under its name) leaves the child alone
  (the garbage collector deletes it; ``owner_gone``), as does a chain longer than
  :data:`MAX_DEPTH` or an owner with a malformed label (``unplaced``). A failed read or
  patch is logged (WARNING), counted (``errors``) and retried after ``retry_delay``.

It is idempotent: the same object always gets the same value, whoever patches it, so
several replicas may run it at once. A replica that should label only some children (a
sharded replica: those of its own buckets) passes ``owns_bucket``; the others are left to
the replicas that own them (``others``), and :meth:`ShardLabeler.recheck` looks at every
unlabeled object again once the answer may have changed (buckets gained).

Runnable alone (``async with ShardLabeler(client, [("v1", "pods")]):``, with an informer
factory of its own) or by the manager (:meth:`aioinformer.Manager.shard_labeler`, on the
manager's factory).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aioinformer._cache.factory import InformerFactory
from aioinformer._cache.informer import Informer
from aioinformer._client.client import Client
from aioinformer._client.discovery import ApiResource
from aioinformer._core import logs
from aioinformer._core.errors import ApiError, ConfigError, Conflict, NotFound
from aioinformer._core.objects import KubeObject, OwnerReference
from aioinformer._core.service import Service
from aioinformer._core.shardbuckets import SHARD_LABEL, bucket_label, owner_bucket

__all__ = ["MAX_DEPTH", "ShardLabeler", "ShardLabelerStatistics"]

MAX_DEPTH: Final = 16
"""The most owner links the labeler follows from a child to a labeled owner or a root."""

_MEMO_LIMIT: Final = 65536  # owners' buckets remembered (then the memo starts afresh)

log = logs.logger("aioinformer.labeler")


@dataclass(frozen=True, slots=True)
class ShardLabelerStatistics:
    """A point-in-time view of a :class:`ShardLabeler`'s work."""

    labeled: int
    """Objects it gave the label to."""
    without_controller: int
    """Unlabeled objects seen with no controller ownerReference (left alone)."""
    owner_gone: int
    """Unlabeled objects whose controller owner no longer exists (left alone)."""
    unplaced: int
    """Unlabeled objects whose owner chain ended in no bucket (a malformed label, or more
    than :data:`MAX_DEPTH` links; left alone)."""
    others: int
    """Unlabeled objects seen whose bucket ``owns_bucket`` said is another replica's."""
    errors: int
    """Reads or patches that failed (each retried after ``retry_delay``)."""
    pending: int
    """Objects waiting to be looked at now."""


class _OwnerGone(Exception):
    """The owner a reference names does not exist (any more)."""


class ShardLabeler(Service):
    """Labels the children that lack ``shard.aioinformer.dev/bucket`` with their owner's
    bucket (see the module docstring).

    Args:
        client: the client it reads owners and patches children with (the manager's:
            writes outside a reconcile are not fenced).
        resources: the owned resources to label, as ``(group_version, plural)`` pairs
            (``("v1", "pods")``, ``("apps/v1", "statefulsets")``).
        factory: the informer factory its informers belong to, run by someone else (the
            manager's). None: it makes one on ``client``'s connection and runs it.
        namespace: label only in this namespace (None: every namespace).
        concurrency: how many objects it places at once.
        retry_delay: seconds before an object whose read or patch failed is tried again.
        owns_bucket: whether this replica labels the children of a bucket (None: all).
    """

    def __init__(
        self,
        client: Client,
        resources: Sequence[tuple[str, str]],
        *,
        factory: InformerFactory | None = None,
        namespace: str | None = None,
        concurrency: int = 16,
        retry_delay: float = 5.0,
        owns_bucket: Callable[[int], bool] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
        self.client = client
        self._own_factory = factory is None
        self.factory = factory or InformerFactory(client.rest, namespace, pipeline="loop")
        """The factory of its informers."""
        self.resources = tuple(resources)
        self.informers: list[Informer] = [
            self.factory.informer(
                gv,
                plural,
                namespace=namespace,
                label_selector=f"!{SHARD_LABEL}",
                metadata_only=True,
            )
            for gv, plural in self.resources
        ]
        """Its informers: each resource's unlabeled objects, metadata only."""
        self.concurrency = concurrency
        self.retry_delay = retry_delay
        self.owns_bucket = owns_bucket
        self._apis: list[ApiResource] = []
        self._pending: dict[tuple[int, str], None] = {}  # (informer index, key), in order
        self._wake = asyncio.Event()
        self._retries: dict[tuple[int, str], asyncio.TimerHandle] = {}
        self._memo: dict[str, int] = {}  # owner uid -> the bucket its children carry
        self._labeled = 0
        self._busy = 0  # objects being placed now
        self._last_rv = 0  # the resourceVersion of its latest patch
        self._since_summary = 0
        self._errors = 0
        self._left: dict[str, set[str]] = {"without_controller": set(), "owner_gone": set(),
                                           "unplaced": set(), "others": set()}  # fmt: skip

    def _service_name(self) -> str:
        return "shard-labeler"

    def statistics(self) -> ShardLabelerStatistics:
        """Copy the counters."""
        return ShardLabelerStatistics(
            labeled=self._labeled,
            without_controller=len(self._left["without_controller"]),
            owner_gone=len(self._left["owner_gone"]),
            unplaced=len(self._left["unplaced"]),
            others=len(self._left["others"]),
            errors=self._errors,
            pending=len(self._pending),
        )

    async def run(self) -> None:
        """Run until cancelled: (its own factory, if it has one), wait for its informers'
        sync, then place every unlabeled object they show, and each new one as it comes."""
        self._begin()
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self._own_factory:
                    await stack.enter_async_context(self.factory)
                self._apis = [
                    await self.client.discovery.resolve(gv, plural) for gv, plural in self.resources
                ]
                for inf in self.informers:
                    await inf.wait_for_sync()
                for i, inf in enumerate(self.informers):
                    sub = inf.add_handler(
                        functools.partial(self._queue, i),
                        functools.partial(self._queue_update, i),
                        self._forget,
                        name=f"shard-labeler:{inf.name}",
                    )
                    stack.callback(sub.cancel)
                self._ready()
                async with asyncio.TaskGroup() as group:
                    for n in range(self.concurrency):
                        group.create_task(self._work(), name=f"shard-labeler-{n}")
        finally:
            for handle in self._retries.values():
                handle.cancel()
            self._retries.clear()
            self._end()

    def recheck(self) -> None:
        """Look at every unlabeled object again (e.g. after ``owns_bucket`` changed its
        answers: the replica gained buckets)."""
        for i, inf in enumerate(self.informers):
            for obj in inf.snapshot().list():
                self._queue(i, obj)

    @property
    def backlog(self) -> int:
        """Objects it has still to place: pending, being placed, and waiting for a retry
        after a failed read or patch (0: every unlabeled object it knows of was looked
        at, and each one it could place is labelled)."""
        return len(self._pending) + self._busy + len(self._retries)

    async def settle(self, timeout: float | None = None, *, retries: bool = False) -> int:
        """Wait until it has looked at every object it knew of (nothing pending, nothing
        being placed; with ``retries``, also none waiting for a retry: :attr:`backlog`
        is 0), at most ``timeout`` seconds; return the resourceVersion of its latest
        patch (0: none yet), which an informer of labelled children has caught up with
        once it reached it. Whether it settled is :attr:`backlog` (logged at WARNING
        when the time ran out)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._pending or self._busy or (retries and self._retries):
            if deadline is not None and loop.time() >= deadline:
                log.warning("shard labeler: %d objects still to place after %ss",
                            self.backlog if retries else len(self._pending) + self._busy,
                            timeout)  # fmt: skip
                break
            await asyncio.sleep(0.05)
        return self._last_rv

    def _queue(self, i: int, obj: KubeObject) -> None:
        self._pending[(i, obj.key)] = None
        self._wake.set()

    def _queue_update(self, i: int, _old: KubeObject, new: KubeObject) -> None:
        self._queue(i, new)

    def _forget(self, obj: KubeObject) -> None:
        """``obj`` left the unlabeled set (labeled, or deleted)."""
        for left in self._left.values():
            left.discard(obj.uid)

    async def _work(self) -> None:
        while True:
            while not self._pending:
                if self._since_summary:
                    self._summary()
                self._wake.clear()
                await self._wake.wait()
            i, key = next(iter(self._pending))
            del self._pending[(i, key)]
            obj = self.informers[i].snapshot().get(key)
            if obj is None or SHARD_LABEL in obj.labels:
                continue  # labeled or deleted since it was queued
            self._busy += 1
            try:
                await self._place(self._apis[i], obj)
            except ConfigError as e:  # the owner's kind is not served
                self._left["unplaced"].add(obj.uid)
                log.warning("shard labeler: %s %s: %s", self._apis[i].qualified, key, e)
            except ApiError as e:
                self._errors += 1
                log.warning("shard labeler: %s %s: %s (retrying in %ss)",
                            self._apis[i].qualified, key, e, self.retry_delay)  # fmt: skip
                if (old := self._retries.pop((i, key), None)) is not None:
                    old.cancel()
                loop = asyncio.get_running_loop()
                self._retries[(i, key)] = loop.call_later(self.retry_delay, self._retry, i, key)
            finally:
                self._busy -= 1

    def _retry(self, i: int, key: str) -> None:
        self._retries.pop((i, key), None)
        if self.informers[i].snapshot().get(key) is not None:
            self._pending[(i, key)] = None
            self._wake.set()

    def _summary(self) -> None:
        stats = self.statistics()
        log.info(
            "shard labeler: labeled %d objects (%d in all); left alone: %d without a "
            "controller owner, %d whose owner is gone, %d unplaced",
            self._since_summary, stats.labeled, stats.without_controller,
            stats.owner_gone, stats.unplaced,
        )  # fmt: skip
        self._since_summary = 0

    async def _place(self, res: ApiResource, obj: KubeObject) -> None:
        """Label ``obj`` with its owner's bucket, or leave it alone (counted)."""
        ref = obj.controller_ref
        if ref is None:
            self._left["without_controller"].add(obj.uid)
            return
        try:
            bucket = await self._bucket_of(ref, obj.namespace, 1)
        except _OwnerGone:
            self._left["owner_gone"].add(obj.uid)
            log.debug("shard labeler: %s %s: its owner %s %s is gone",
                      res.qualified, obj.key, ref.kind, ref.name)  # fmt: skip
            return
        if bucket is None:
            self._left["unplaced"].add(obj.uid)
            log.warning("shard labeler: %s %s: no bucket from its owner chain (%s %s)",
                        res.qualified, obj.key, ref.kind, ref.name)  # fmt: skip
            return
        if self.owns_bucket is not None and not self.owns_bucket(bucket):
            self._left["others"].add(obj.uid)
            return
        self._left["others"].discard(obj.uid)
        target: dict[str, Any] = {
            "apiVersion": res.api_version,
            "kind": res.kind,
            "metadata": {"name": obj.name, "namespace": obj.namespace},
        }
        patch = {"metadata": {"uid": obj.uid, "labels": {SHARD_LABEL: bucket_label(bucket)}}}
        try:
            patched = await self.client.patch(target, patch)
        except (NotFound, Conflict):
            return  # deleted, or replaced by another object of that name: not this one
        self._last_rv = max(self._last_rv, patched.rv)
        self._labeled += 1
        self._since_summary += 1
        log.debug("shard labeler: %s %s -> bucket %02x (owner %s %s)",
                  res.qualified, obj.key, bucket, ref.kind, ref.name)  # fmt: skip

    async def _bucket_of(self, ref: OwnerReference, namespace: str, depth: int) -> int | None:
        """The bucket the children of the owner ``ref`` names carry (None: none found)."""
        if ref.uid in self._memo:
            return self._memo[ref.uid]
        try:
            owner = await self.client.get(ref.api_version, ref.kind, ref.name, namespace or None)
        except NotFound:
            raise _OwnerGone from None
        if owner.uid != ref.uid:
            raise _OwnerGone
        bucket = owner_bucket(owner)
        if bucket is None and SHARD_LABEL not in owner.labels:
            up = owner.controller_ref
            if up is None or depth >= MAX_DEPTH:
                return None
            bucket = await self._bucket_of(up, owner.namespace, depth + 1)
        if bucket is not None:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[ref.uid] = bucket
        return bucket
