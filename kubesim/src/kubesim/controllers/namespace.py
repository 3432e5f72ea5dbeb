"""kube-controller-manager's namespace controller, as KubeSim runs it.

For a namespace with a deletionTimestamp whose ``spec.finalizers`` still holds
``kubernetes``, one :meth:`NamespaceController.step` does what upstream's
``NamespacedResourcesDeleter.Delete`` does in one pass:

1. deletes every object of every namespaced type in it through the normal DELETE
   (``propagationPolicy: Background``), so finalizers, grace periods and the garbage
   collector apply: an object with a finalizer stays until its owner removes it, a pod
   bound to a node stays for its grace period (the kubelet emulation finishes it, if it
   runs; without it the pod stays, as with a dead kubelet);
2. counts what is left and writes the status conditions upstream writes
   (``NamespaceDeletionDiscoveryFailure`` ... ``NamespaceFinalizersRemaining``, with its
   messages such as ``Some resources are remaining: pods. has 2 resource instances``) when
   they changed;
3. when nothing is left, removes ``kubernetes`` from ``spec.finalizers`` through
   ``/finalize``, which deletes the namespace (unless a ``metadata.finalizers`` entry,
   such as the garbage collector's ``orphan``, still holds it).

The controller learns of work from commits (:meth:`NamespaceController.observe`): the namespace
being marked, and any change to an object in a namespace being deleted, so the next step runs as
soon as a finalizer is released or a pod is gone. A step deletes at most ``budget`` objects and
leaves the rest for the next one, so a large namespace does not stall the event loop.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from kubesim.apis.core.namespace import KUBERNETES_FINALIZER, finalize
from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Event

__all__ = ["CONDITION_TYPES", "NamespaceController"]

log = logging.getLogger("kubesim")

MANAGER = "kube-controller-manager"
#: The condition types the deleter maintains, in its order, with their "ok" reason/message.
CONDITION_TYPES: tuple[tuple[str, str, str], ...] = (
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
)


class NamespaceController:
    """See the module docstring. ``observe`` is a commit listener; ``step`` does the work."""

    def __init__(self, api: Api, budget: int = 500) -> None:
        self._api = api
        self._budget = budget
        self._terminating: set[str] = set()
        self._dirty: set[str] = set()
        ns_rt = api.registry.lookup("", "v1", "namespaces")
        assert ns_rt is not None
        self._ns_rt = ns_rt

    @property
    def pending(self) -> bool:
        """Whether a namespace waits for a step."""
        return bool(self._dirty)

    def resync(self) -> None:
        """Learn of every namespace being deleted (at start)."""
        for name, stored in self._api.store(self._ns_rt).objects.items():
            if b'"deletionTimestamp"' in stored.raw:
                self._terminating.add(name)
                self._dirty.add(name)

    def observe(self, type_name: str, ev: Event) -> bool:
        """Note what a commit means for this controller; whether it has work now."""
        if type_name == "namespaces":
            if ev.type == "DELETED":
                self._terminating.discard(ev.key)
                self._dirty.discard(ev.key)
                return False
            if b'"deletionTimestamp"' in ev.obj.raw:
                self._terminating.add(ev.key)
                self._dirty.add(ev.key)
                return True
            return False
        if ev.obj.namespace in self._terminating:
            self._dirty.add(ev.obj.namespace)
            return True
        return False

    def step(self) -> None:
        """Work on every namespace that changed since the last step."""
        dirty, self._dirty = self._dirty, set()
        for name in sorted(dirty):
            try:
                self._sync(name)
            except KubeSimApiError as exc:  # it changed under us: the next commit brings it back
                log.debug("namespace controller: %s: %s", name, exc)

    # -- one namespace -------------------------------------------------------------------------

    def _sync(self, name: str) -> None:
        api = self._api
        ns = api.store(self._ns_rt).get(name)
        if ns is None:
            self._terminating.discard(name)
            return
        obj = ns.decode()
        if not obj["metadata"].get("deletionTimestamp"):
            self._terminating.discard(name)
            return
        if KUBERNETES_FINALIZER not in ((obj.get("spec") or {}).get("finalizers") or []):
            return
        remaining, finalizers, unexpected, more = self._delete_content(name)
        if more:  # the budget ran out: continue on the next step
            self._dirty.add(name)
        self._update_conditions(obj, remaining, finalizers, unexpected)
        if not remaining and not more and (latest := api.store(self._ns_rt).get(name)):
            self._finalize(latest.decode())

    def _types(self) -> list[ResourceType]:
        """One served version of every namespaced type (versions share one store)."""
        seen: dict[str, ResourceType] = {}
        for rt in self._api.registry.all():
            if rt.namespaced and "delete" in rt.verbs:
                seen.setdefault(self._api.type_name(rt), rt)
        return list(seen.values())

    def _delete_content(
        self, namespace: str
    ) -> tuple[dict[ResourceType, int], Counter[str], list[ResourceType], bool]:
        """Delete what is not being deleted yet; then what remains per type, the
        finalizers holding it, the types with objects nothing explains, and whether the
        budget ran out."""
        api = self._api
        budget = self._budget
        remaining: dict[ResourceType, int] = {}
        finalizers: Counter[str] = Counter()
        unexpected: list[ResourceType] = []
        for rt in self._types():
            ts = api.mvcc.types.get(api.type_name(rt))
            if ts is None:
                continue
            lo, hi = ts.key_range(namespace)
            for key in list(ts.keys[lo:hi]):
                stored = ts.get(key)
                if stored is None or b'"deletionTimestamp"' in stored.raw:
                    continue
                if budget <= 0:
                    return remaining, finalizers, unexpected, True
                budget -= 1
                try:
                    api.delete(
                        rt, namespace, key.split("/", 1)[1], {"propagationPolicy": "Background"}
                    )
                except KubeSimApiError as exc:
                    if exc.code != 404:
                        log.warning("namespace controller: deleting %s %s: %s", rt.plural, key, exc)
            lo, hi = ts.key_range(namespace)
            if hi == lo:
                continue
            remaining[rt] = hi - lo
            explained = False
            for key in ts.keys[lo:hi]:
                meta = ts.objects[key].decode()["metadata"]
                held = meta.get("finalizers") or []
                finalizers.update(held)
                explained = explained or bool(held) or bool(meta.get("deletionGracePeriodSeconds"))
            if not explained:
                unexpected.append(rt)
        return remaining, finalizers, unexpected, False

    def _conditions(
        self,
        namespace: str,
        remaining: dict[ResourceType, int],
        finalizers: Counter[str],
        unexpected: list[ResourceType],
    ) -> dict[str, tuple[str, str, str]]:
        """Condition type -> (status, reason, message), as ``namespaceConditionUpdater``."""
        out = {t: ("False", reason, message) for t, reason, message in CONDITION_TYPES}
        if unexpected:
            errs = sorted(
                f"unexpected items still remain in namespace: {namespace} for gvr: "
                f"{rt.group}/{rt.version}, Resource={rt.plural}"
                for rt in unexpected
            )
            out["NamespaceDeletionContentFailure"] = (
                "True",
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(errs)} remaining: {', '.join(errs)}",
            )
        if remaining:
            parts = sorted(
                f"{rt.plural}.{rt.group} has {n} resource instances" for rt, n in remaining.items()
            )
            out["NamespaceContentRemaining"] = (
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: " + ", ".join(parts),
            )
        if finalizers:
            parts = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items())
            out["NamespaceFinalizersRemaining"] = (
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: " + ", ".join(parts),
            )
        return out

    def _update_conditions(
        self,
        obj: dict[str, Any],
        remaining: dict[ResourceType, int],
        finalizers: Counter[str],
        unexpected: list[ResourceType],
    ) -> None:
        name = obj["metadata"]["name"]
        wanted = self._conditions(name, remaining, finalizers, unexpected)
        old = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
        now = now_rfc3339()
        conditions = [c for c in old.values() if c.get("type") not in wanted]
        changed = False
        for ctype, _, _ in CONDITION_TYPES:
            status, reason, message = wanted[ctype]
            prev = old.get(ctype)
            when = now
            if prev is not None:
                if (prev.get("status"), prev.get("reason"), prev.get("message")) != wanted[ctype]:
                    changed = True
                if prev.get("status") == status:
                    when = prev.get("lastTransitionTime", now)
            else:
                changed = True
            conditions.append(
                {
                    "type": ctype,
                    "status": status,
                    "lastTransitionTime": when,
                    "reason": reason,
                    "message": message,
                }
            )
        if changed:
            self._api.patch(
                self._ns_rt,
                None,
                name,
                "application/merge-patch+json",
                {"status": {"conditions": conditions}},
                subresource="status",
                manager=MANAGER,
            )

    def _finalize(self, obj: dict[str, Any]) -> None:
        spec = dict(obj.get("spec") or {})
        spec["finalizers"] = sorted(
            {f for f in spec.get("finalizers") or [] if f != KUBERNETES_FINALIZER}
        )
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": obj["metadata"], "spec": spec}
        finalize(self._api, self._ns_rt, obj["metadata"]["name"], body, manager=MANAGER)
