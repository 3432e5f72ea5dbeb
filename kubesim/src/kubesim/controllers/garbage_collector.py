"""kube-controller-manager's garbage collector, as KubeSim runs it.

Owners are matched by uid: a dependent's ``ownerReferences`` entry names an owner by
apiVersion, kind and name (in the dependent's namespace for a namespaced owner) and holds
when an object of that name with that uid exists. For any kind, built-in or custom:

* **Background** (the default): once an owner is gone, each dependent left without an
  existing owner is deleted (with the propagation its own finalizers ask for, else
  Background); a dependent with another owner that still exists only loses the reference.
* **Foreground** (owner has ``foregroundDeletion``): its dependents are deleted (in the
  foreground themselves when they have dependents); once no dependent that has
  ``blockOwnerDeletion: true`` is left, the finalizer is removed and the owner goes.
  Dependents that do not block are removed after it, as in Background.
* **Orphan** (owner has ``orphan``): the reference to the owner is removed from every
  dependent, then the finalizer, and the owner goes while the dependents stay.

The collector learns from commits (:meth:`GarbageCollector.observe`, which indexes
ownerReferences cheaply: most commits have none, and a reference to an owner it cannot act
on is not indexed) and acts in :meth:`GarbageCollector.step`. Every write it
makes goes through the normal API as ``kube-controller-manager``: merge patches of
``ownerReferences`` and ``finalizers``, and DELETEs with a uid precondition.

One difference from upstream: an ownerReference whose owner does not exist and was never
seen by this KubeSim (created after its owner was gone before KubeSim started, or naming an
owner that never existed) is left alone; upstream deletes such a dependent. Owners KubeSim
saw deleted, and uids replaced by a re-created owner of the same name, are treated as gone.
So bulk loads of owned objects without their owners (benchmarks) keep their objects.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from kubesim.errors import KubeSimApiError
from kubesim.registry.deletion import FOREGROUND, ORPHAN
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Event, Stored

__all__ = ["GarbageCollector", "OwnerRef", "owner_references"]

log = logging.getLogger("kubesim")

MANAGER = "kube-controller-manager"
MERGE_PATCH = "application/merge-patch+json"
_REFS = b'"ownerReferences":['
_DELETED_MEMORY = 100_000  # uids of deleted objects remembered (oldest forgotten first)

Key = tuple[str, str]  # (type name, store key)


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """One ``ownerReferences`` entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    block: bool


def owner_references(raw: bytes) -> tuple[OwnerRef, ...]:
    """The ownerReferences of a stored object, read from its encoded form without decoding
    the rest when it has one list of them (the common case)."""
    start = raw.find(_REFS)
    if start < 0:
        return ()
    if raw.find(_REFS, start + 1) >= 0:  # the pattern also in the content: decode it all
        refs: Any = (orjson.loads(raw).get("metadata") or {}).get("ownerReferences")
    else:
        end = raw.find(b"]", start)
        try:
            refs = orjson.loads(raw[start + len(_REFS) - 1 : end + 1])
        except orjson.JSONDecodeError:
            refs = (orjson.loads(raw).get("metadata") or {}).get("ownerReferences")
    out = []
    for r in refs or ():
        if isinstance(r, dict) and r.get("uid"):
            out.append(
                OwnerRef(
                    str(r.get("apiVersion", "")),
                    str(r.get("kind", "")),
                    str(r.get("name", "")),
                    str(r["uid"]),
                    r.get("blockOwnerDeletion") is True,
                )
            )
    return tuple(out)


def _in_foreground(stored: Stored) -> bool:
    """Whether ``stored`` is being deleted in the foreground (waits for its dependents)."""
    if b'"deletionTimestamp"' not in stored.raw or b'"foregroundDeletion"' not in stored.raw:
        return False
    return FOREGROUND in (stored.decode()["metadata"].get("finalizers") or [])


class GarbageCollector:
    """See the module docstring. ``observe`` is a commit listener; ``step`` does the work."""

    def __init__(self, api: Api) -> None:
        self._api = api
        self._refs: dict[Key, tuple[OwnerRef, ...]] = {}
        self._dependents: dict[str, set[Key]] = {}  # owner uid -> dependents
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self._deleting: dict[str, Key] = {}  # uid -> key of an owner with a GC finalizer
        self._owners_dirty: set[Key] = set()
        self._dependents_dirty: set[Key] = set()
        self._types: dict[str, ResourceType] = {}
        self._kinds: dict[tuple[str, str], ResourceType] = {}

    @property
    def pending(self) -> bool:
        """Whether an owner or a dependent waits for a step."""
        return bool(self._owners_dirty or self._dependents_dirty)

    # -- learning from commits -----------------------------------------------------------------

    def resync(self) -> None:
        """Index every stored object (at start)."""
        for type_name, ts in list(self._api.mvcc.types.items()):
            for key, stored in ts.objects.items():
                self._index((type_name, key), stored)

    def observe(self, type_name: str, ev: Event) -> bool:
        """Note what a commit means for the collector; whether it has work now."""
        key = (type_name, ev.key)
        if ev.type == "DELETED":
            return self._gone(key, ev.obj)
        return self._index(key, ev.obj)

    def _index(self, key: Key, stored: Stored) -> bool:
        work = False
        raw = stored.raw
        if _REFS in raw or key in self._refs:
            refs = tuple(r for r in owner_references(raw) if self._known(r, stored.namespace))
            old = self._refs.get(key, ())
            if refs != old:
                self._unindex(key, old)
                if refs:
                    self._refs[key] = refs
                    for ref in refs:
                        self._dependents.setdefault(ref.uid, set()).add(key)
            if any(r.uid in self._deleted or r.uid in self._deleting for r in refs):
                self._dependents_dirty.add(key)
                work = True
        if b'"deletionTimestamp"' in raw and (b'"foregroundDeletion"' in raw or b'"orphan"' in raw):
            self._deleting[stored.uid] = key
            self._owners_dirty.add(key)
            work = True
        return work

    def _known(self, ref: OwnerRef, namespace: str) -> bool:
        """Whether the collector can ever act on ``ref``: its owner exists (with this uid or,
        if re-created, another) or was seen deleted. Other references are not indexed."""
        if ref.uid in self._deleted or ref.uid in self._deleting:
            return True
        owner = self._owner(ref, namespace)
        return isinstance(owner, Stored)

    def _unindex(self, key: Key, refs: tuple[OwnerRef, ...]) -> None:
        self._refs.pop(key, None)
        for ref in refs:
            deps = self._dependents.get(ref.uid)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._dependents[ref.uid]

    def _gone(self, key: Key, last: Stored) -> bool:
        refs = self._refs.get(key, ())
        self._unindex(key, refs)
        self._deleted[last.uid] = None
        if len(self._deleted) > _DELETED_MEMORY:
            self._deleted.popitem(last=False)
        self._deleting.pop(last.uid, None)
        self._owners_dirty.discard(key)
        work = False
        for dep in self._dependents.get(last.uid, ()):
            self._dependents_dirty.add(dep)
            work = True
        for ref in refs:  # an owner waiting in the foreground may be free now
            if (owner := self._deleting.get(ref.uid)) is not None:
                self._owners_dirty.add(owner)
                work = True
        return work

    # -- acting ------------------------------------------------------------------------------

    def step(self) -> None:
        """Process every owner and dependent that changed since the last step."""
        owners, self._owners_dirty = self._owners_dirty, set()
        for key in sorted(owners):
            self._guard(self._process_owner, key)
        dependents, self._dependents_dirty = self._dependents_dirty, set()
        for key in sorted(dependents):
            self._guard(self._attempt_to_delete, key)

    def _guard(self, fn: Any, key: Key) -> None:
        try:
            fn(key)
        except KubeSimApiError as exc:  # changed or gone under us: its next commit brings it back
            if exc.code not in (404, 409):
                log.warning("garbage collector: %s %s: %s", key[0], key[1], exc)

    def _rt(self, type_name: str) -> ResourceType | None:
        rt = self._types.get(type_name)
        if rt is None or not self._api.served(rt):
            self._types = {
                self._api.type_name(t): t
                for t in self._api.registry.all()
                if t.storage_group is None  # a storage's own type, not one sharing it
            }
            rt = self._types.get(type_name)
        return rt

    def _get(self, key: Key) -> tuple[ResourceType, Stored] | None:
        rt = self._rt(key[0])
        ts = self._api.mvcc.types.get(key[0])
        stored = ts.get(key[1]) if ts is not None else None
        return (rt, stored) if rt is not None and stored is not None else None

    @staticmethod
    def _split(rt: ResourceType, key: str) -> tuple[str | None, str]:
        if rt.namespaced:
            ns, name = key.split("/", 1)
            return ns, name
        return None, key

    def _patch(self, rt: ResourceType, key: str, patch: dict[str, Any]) -> None:
        ns, name = self._split(rt, key)
        self._api.patch(rt, ns, name, MERGE_PATCH, patch, manager=MANAGER)

    def _delete(self, rt: ResourceType, stored: Stored, policy: str) -> None:
        ns, name = self._split(rt, stored.key)
        options = {"propagationPolicy": policy, "preconditions": {"uid": stored.uid}}
        self._api.delete(rt, ns, name, options)

    def _owner(self, ref: OwnerRef, namespace: str) -> Stored | bool | None:
        """The owner ``ref`` names: its stored object, None if it is not there, or False
        when the reference cannot be resolved (unknown kind, a namespaced owner of a
        cluster-scoped dependent)."""
        rt = self._kinds.get((ref.api_version, ref.kind))
        if rt is None or not self._api.served(rt):
            rt = self._api.registry.by_kind(ref.api_version, ref.kind)
            if rt is not None:
                self._kinds[(ref.api_version, ref.kind)] = rt
        if rt is None or (rt.namespaced and not namespace):
            return False
        ts = self._api.mvcc.types.get(self._api.type_name(rt))
        if ts is None:
            return None
        return ts.get(f"{namespace}/{ref.name}" if rt.namespaced else ref.name)

    def _attempt_to_delete(self, key: Key) -> None:
        """``attemptToDeleteItem``: delete a dependent whose owners are all gone or
        deleting in the foreground; drop its references to gone owners if it keeps one."""
        found = self._get(key)
        if found is None:
            return
        rt, stored = found
        meta = stored.decode()["metadata"]
        if meta.get("deletionTimestamp"):
            return
        refs = owner_references(stored.raw)
        solid, dangling, waiting = [], [], []
        for ref in refs:
            owner = self._owner(ref, stored.namespace)
            if owner is False:
                solid.append(ref)
            elif owner is None or (isinstance(owner, Stored) and owner.uid != ref.uid):
                if owner is None and ref.uid not in self._deleted:
                    solid.append(ref)  # never seen: left alone (see the module docstring)
                else:
                    dangling.append(ref)
            elif isinstance(owner, Stored) and _in_foreground(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        if not refs:
            return
        if solid:
            if not (dangling or waiting):
                return
            gone = {r.uid for r in dangling}
            unblock = {r.uid for r in waiting}
            kept = []
            for r in meta.get("ownerReferences") or []:
                if r.get("uid") in gone:
                    continue
                if r.get("uid") in unblock:
                    r = {**r, "blockOwnerDeletion": False}
                kept.append(r)
            self._patch(rt, stored.key, {"metadata": {"ownerReferences": kept}})
            return
        finalizers = meta.get("finalizers") or []
        if waiting and self._dependents.get(stored.uid):
            policy = "Foreground"
        elif ORPHAN in finalizers:
            policy = "Orphan"
        elif FOREGROUND in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        self._delete(rt, stored, policy)

    def _process_owner(self, key: Key) -> None:
        """An owner with ``orphan`` or ``foregroundDeletion`` (see the module docstring)."""
        found = self._get(key)
        if found is None:
            return
        rt, stored = found
        meta = stored.decode()["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if not meta.get("deletionTimestamp"):
            return
        dependents = sorted(self._dependents.get(stored.uid, ()))
        if ORPHAN in finalizers:
            for dep in dependents:
                found_dep = self._get(dep)
                if found_dep is None:
                    continue
                dep_rt, dep_stored = found_dep
                dep_refs = dep_stored.decode()["metadata"].get("ownerReferences") or []
                kept = [r for r in dep_refs if r.get("uid") != stored.uid]
                self._patch(dep_rt, dep_stored.key, {"metadata": {"ownerReferences": kept or None}})
            self._release(rt, stored, finalizers, ORPHAN)
        elif FOREGROUND in finalizers:
            blocking = False
            for dep in dependents:
                found_dep = self._get(dep)
                if found_dep is None:
                    continue
                refs = self._refs.get(dep, ())
                if any(r.uid == stored.uid and r.block for r in refs):
                    blocking = True
                self._dependents_dirty.add(dep)
            if not blocking:
                self._release(rt, stored, finalizers, FOREGROUND)

    def _release(self, rt: ResourceType, stored: Stored, finalizers: list[str], which: str) -> None:
        rest = [f for f in finalizers if f != which]
        patch = {"metadata": {"resourceVersion": str(stored.rv), "finalizers": rest or None}}
        self._patch(rt, stored.key, patch)
