"""ConfigMap mirror: copy labelled ConfigMaps into every matching namespace.

A ConfigMap of the source namespace labelled ``mirror.aioinformer.dev/enabled=true`` is
copied (same name, same ``data`` and ``binaryData``) into every namespace whose labels
match the target selector (``mirror.aioinformer.dev/target=true`` by default):

* copies are kept in sync: a change of the source's data is written to every copy, and a
  copy edited by hand is put back;
* a namespace that stops matching loses its copy, one that starts matching gets one;
* the source carries the finalizer ``mirror.aioinformer.dev/cleanup`` (the ``finalizer``
  helper adds it): deleting it deletes every copy first, then the finalizer goes, so no
  copy outlives its source; removing its label deletes the copies and the finalizer too.

Copies live in other namespaces, where an ownerReference to the source is not allowed (so
the garbage collector cannot clean them up: the finalizer does); they carry the label
``mirror.aioinformer.dev/copy=true`` and the annotation ``mirror.aioinformer.dev/source:
NAMESPACE/NAME`` instead, and an index on that annotation maps them back to their source.
Every write goes through ``manager.client``, so the next reconcile of a source reads
caches that have seen it (``build(..., protect=False)`` turns that off); updates carry the
cached resourceVersion, so a stale one gets 409 (``counters["conflicts"]``), not a lost
update.

Run it: ``python examples/configmap_mirror.py`` (embedded KubeSim; a source ConfigMap
``default/shared-settings`` and namespaces ``team-a``, ``team-b`` (matching) and ``team-c``
(not); Ctrl-C to stop), ``--once`` to exit once converged, ``--kubeconfig PATH`` for a real
cluster (it creates those namespaces there too); in production ``python -m aioinformer run
examples/configmap_mirror.py:build``.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from aioinformer import (
    AlreadyExists,
    Client,
    Conflict,
    ControllerOptions,
    KubeObject,
    Manager,
    NotFound,
    Result,
    finalizer,
)

ENABLED_LABEL = "mirror.aioinformer.dev/enabled"
TARGET_SELECTOR = "mirror.aioinformer.dev/target=true"
FINALIZER = "mirror.aioinformer.dev/cleanup"
COPY_LABEL = "mirror.aioinformer.dev/copy"
SOURCE_ANNOTATION = "mirror.aioinformer.dev/source"
SOURCE_INDEX = "source"
MIRRORED = ("data", "binaryData")
SAMPLE_NAMESPACE, SAMPLE_NAME = "default", "shared-settings"
SAMPLE_TARGETS = {"team-a": True, "team-b": True, "team-c": False}

log = logging.getLogger("examples.configmap_mirror")


def source_of(obj: KubeObject) -> tuple[str, ...]:
    """Index function: the ``namespace/name`` of the source a copy was made from."""
    source = obj.annotations.get(SOURCE_ANNOTATION)
    return (source,) if source else ()


class MirrorOperator:
    """The mirror controller: informers on sources, copies and namespaces, and its reconcile."""

    def __init__(
        self,
        manager: Manager,
        *,
        source_namespace: str = SAMPLE_NAMESPACE,
        target_selector: str = TARGET_SELECTOR,
        protect: bool = True,
        concurrency: int = 4,
    ) -> None:
        self.client = manager.client
        # every ConfigMap of the source namespace: one that loses the label is cleaned up
        self.sources = manager.informer("v1", "configmaps", namespace=source_namespace)
        self.copies = manager.informer(
            "v1",
            "configmaps",
            namespace=None,
            label_selector=f"{COPY_LABEL}=true",
            indexers={SOURCE_INDEX: source_of},
        )
        self.targets = manager.informer("v1", "namespaces", label_selector=target_selector)
        self.counters: Counter[str] = Counter()
        """``creates``, ``deletes`` and ``conflicts`` (409: an update on a stale cache)."""
        self.controller = manager.controller(
            "configmap-mirror",
            self.reconcile,
            primary=self.sources,
            watches=[(self.copies, source_of), (self.targets, self._every_source)],
            # (expectations need owns=, ownerReferences: not here)
            options=ControllerOptions(concurrency=concurrency, freshness=protect),
        )
        # the copies are written in other namespaces than the sources' informer watches
        manager.require_permission("", "configmaps", ["create", "update", "delete"])

    def _every_source(self, _namespace: KubeObject) -> Iterable[str]:
        """A target namespace came, changed or went: every source may have to act."""
        return [cm.key for cm in self.sources.snapshot().list() if is_source(cm)]

    async def reconcile(self, key: str) -> Result | None:
        source = self.sources.snapshot().get(key)
        if source is None or not (is_source(source) or terminating(source)):
            await self.cleanup_copies(key)  # gone, or no longer labelled
            if source is not None:
                await self.client.remove_finalizer(source, FINALIZER)
            return None
        return await finalizer(
            self.client, source, FINALIZER, apply=self.mirror, cleanup=self.cleanup
        )

    async def mirror(self, source: KubeObject) -> Result | None:
        """Make the copies match the matching namespaces."""
        copies = self.copies.snapshot().by_index(SOURCE_INDEX, source.key)
        wanted = {
            ns.name
            for ns in self.targets.snapshot().list()
            if ns.name != source.namespace and not terminating(ns)
        }
        have = {c.namespace: c for c in copies}
        await self.delete([c for c in copies if c.namespace not in wanted])
        for namespace in sorted(wanted):
            await self.sync(source, namespace, have.get(namespace))
        return None

    async def cleanup(self, source: KubeObject) -> Result | None:
        """The source goes: its copies first (the finalizer goes after)."""
        await self.cleanup_copies(source.key)
        return None

    async def cleanup_copies(self, key: str) -> None:
        await self.delete(self.copies.snapshot().by_index(SOURCE_INDEX, key))

    async def sync(self, source: KubeObject, namespace: str, copy: KubeObject | None) -> None:
        """Create or update the copy of ``source`` in ``namespace``."""
        body = copy_body(source, namespace)
        try:
            if copy is None:
                await self.client.create(body)
                self.counters["creates"] += 1
            elif not same_data(source, copy):
                body["metadata"]["resourceVersion"] = str(copy.rv)  # no lost update
                await self.client.update(body)
        except (AlreadyExists, Conflict) as exc:  # a write on a stale cache
            self.counters["conflicts"] += 1
            log.warning("%s in %s: %s (409)", source.key, namespace, exc)

    async def delete(self, copies: Iterable[KubeObject]) -> None:
        for copy in copies:
            with suppress(NotFound, Conflict):  # gone already, or replaced by another
                await self.client.delete(copy)
                self.counters["deletes"] += 1


def build(
    manager: Manager,
    *,
    source_namespace: str = SAMPLE_NAMESPACE,
    target_selector: str = TARGET_SELECTOR,
    protect: bool = True,
    concurrency: int = 4,
) -> MirrorOperator:
    """The mirror operator on ``manager``, for the sources of ``source_namespace`` and the
    namespaces matching ``target_selector``."""
    return MirrorOperator(
        manager,
        source_namespace=source_namespace,
        target_selector=target_selector,
        protect=protect,
        concurrency=concurrency,
    )


# -- the decisions, as pure functions -------------------------------------------------------------


def terminating(obj: KubeObject) -> bool:
    return obj.deletion_timestamp is not None


def is_source(cm: KubeObject) -> bool:
    return cm.labels.get(ENABLED_LABEL) == "true"


def same_data(source: KubeObject, copy: KubeObject) -> bool:
    return all(source.field(f) == copy.field(f) for f in MIRRORED)


def copy_body(source: KubeObject, namespace: str) -> dict[str, Any]:
    """The copy of ``source`` for ``namespace``."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": source.name,
            "namespace": namespace,
            "labels": {COPY_LABEL: "true"},
            "annotations": {SOURCE_ANNOTATION: source.key},
        },
    }
    for field in MIRRORED:
        if (value := source.field(field)) is not None:
            body[field] = value
    return body


# -- the program ----------------------------------------------------------------------------------


def target_label() -> dict[str, str]:
    """The labels that make a namespace match :data:`TARGET_SELECTOR`."""
    key, _, value = TARGET_SELECTOR.partition("=")
    return {key: value}


def source_body(
    name: str, data: dict[str, str], namespace: str = SAMPLE_NAMESPACE
) -> dict[str, Any]:
    """A ConfigMap to mirror."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {ENABLED_LABEL: "true"}},
        "data": data,
    }


def samples() -> list[dict[str, Any]]:
    """The sample namespaces (``team-a``, ``team-b`` matching, ``team-c`` not) and source."""
    namespaces = []
    for name, matching in SAMPLE_TARGETS.items():
        meta = {"name": name, "labels": target_label() if matching else {}}
        namespaces.append({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    source = source_body(SAMPLE_NAME, {"log-level": "info", "region": "eu-west"})
    return [*namespaces, source]


async def progress(
    client: Client,
    namespace: str = SAMPLE_NAMESPACE,
    name: str = SAMPLE_NAME,
    target_selector: str = TARGET_SELECTOR,
) -> tuple[str, bool]:
    """Where source ``namespace/name`` stands, read from the API server. Converged: the
    source carries the finalizer and an identical copy is in every matching namespace and
    in no other; a source that is gone has no copy left."""
    matching = await client.list("v1", "Namespace", label_selector=target_selector)
    wanted = sorted(ns.name for ns in matching if ns.name != namespace)
    copies = await client.list("v1", "ConfigMap", label_selector=f"{COPY_LABEL}=true")
    mine = [c for c in copies if source_of(c) == (f"{namespace}/{name}",)]
    sources = await client.list(
        "v1", "ConfigMap", namespace, field_selector=f"metadata.name={name}"
    )
    if not sources or terminating(sources[0]):
        state = "deleting" if sources else "gone"
        line = f"configmap {namespace}/{name}: {state}, {len(mine)} copies left"
        return line, not sources and not mine
    source = sources[0]
    in_sync = sorted(c.namespace for c in mine if same_data(source, c))
    done = FINALIZER in source.finalizers and in_sync == wanted and len(mine) == len(wanted)
    line = (
        f"configmap {namespace}/{name}: {len(wanted)} matching namespaces, {len(mine)} copies, "
        f"{len(in_sync)} in sync"
    )
    return line, done


SAMPLES = samples()
"""What ``python examples/configmap_mirror.py`` creates first: the namespaces and the
ConfigMaps it mirrors."""

if __name__ == "__main__":  # python examples/configmap_mirror.py: run it on an embedded KubeSim
    from aioinformer.testing import Example

    sys.exit(Example.from_module(sys.modules[__name__]).main())
