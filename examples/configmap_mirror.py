"""ConfigMap mirror: copy labelled ConfigMaps into every matching namespace.

A ConfigMap of the source namespace labelled ``mirror.aioinformer.dev/enabled=true`` is
copied (same name, same ``data`` and ``binaryData``) into every namespace whose labels
match the target selector (``mirror.aioinformer.dev/target=true`` by default):

* copies are kept in sync: a change of the source's data is written to every copy, and a
  copy edited by hand is put back;
* a namespace that stops matching loses its copy, one that starts matching gets one;
* the source carries the finalizer ``mirror.aioinformer.dev/cleanup``: deleting it (or
  removing its label) deletes every copy first, then removes the finalizer, so no copy
  outlives its source.

Copies live in other namespaces, where an ownerReference to the source is not allowed;
they carry the label ``mirror.aioinformer.dev/copy=true`` and the annotation
``mirror.aioinformer.dev/source: NAMESPACE/NAME`` instead, and an index on that annotation
maps them back to their source. Every write is recorded with ``record_write``, so the next
reconcile of a source reads caches that have seen it (``build(..., protect=False)`` turns
that off); updates carry the cached resourceVersion, so a stale one gets 409, not a lost
update.

Run it: ``python examples/configmap_mirror.py`` (embedded KubeSim; a source ConfigMap
``default/shared-settings`` and namespaces ``team-a``, ``team-b`` (matching) and ``team-c``
(not); Ctrl-C to stop), ``--once`` to exit once converged, ``--kubeconfig PATH`` for a real
cluster (it creates those namespaces there too).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from _common import (
    MERGE_PATCH,
    Counters,
    Example,
    Progress,
    create_ignoring_conflict,
    is_terminating,
    list_objects,
    log,
    main,
)
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from aioinformer import Controller, KubeObject, Manager, Result

ENABLED_LABEL = "mirror.aioinformer.dev/enabled"
TARGET_SELECTOR = "mirror.aioinformer.dev/target=true"
FINALIZER = "mirror.aioinformer.dev/cleanup"
COPY_LABEL = "mirror.aioinformer.dev/copy"
SOURCE_ANNOTATION = "mirror.aioinformer.dev/source"
SOURCE_INDEX = "source"
MIRRORED = ("data", "binaryData")
SAMPLE_NAMESPACE, SAMPLE_NAME = "default", "shared-settings"
SAMPLE_TARGETS = {"team-a": True, "team-b": True, "team-c": False}
RETRY = Result(requeue=True)


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
        self.counters = Counters()
        self.controller: Controller = manager.controller(
            "configmap-mirror",
            self.reconcile,
            primary=self.sources,
            primary_kind="ConfigMap",
            watches=[(self.copies, source_of), (self.targets, self._every_source)],
            concurrency=concurrency,
            freshness=protect,  # expectations need owns= (ownerReferences): not here
        )
        self._core = client.CoreV1Api(manager.api_client)

    def _every_source(self, _namespace: KubeObject) -> Iterable[str]:
        """A target namespace came, changed or went: every source may have to act."""
        return [cm.key for cm in self.sources.snapshot().list() if is_source(cm)]

    async def reconcile(self, key: str) -> Result | None:
        source = self.sources.snapshot().get(key)
        copies = self.copies.snapshot().by_index(SOURCE_INDEX, key)
        if source is None or not is_source(source) or is_terminating(source):
            await self._delete(copies)  # first the copies, then the finalizer
            if source is not None and FINALIZER in source.finalizers:
                return None if await self._finalizer(source, present=False) else RETRY
            return None
        if FINALIZER not in source.finalizers and not await self._finalizer(source, present=True):
            return RETRY
        wanted = {
            ns.name
            for ns in self.targets.snapshot().list()
            if ns.name != source.namespace and not is_terminating(ns)
        }
        have = {c.namespace: c for c in copies}
        await self._delete([c for c in copies if c.namespace not in wanted])
        for namespace in sorted(wanted):
            await self._sync(source, namespace, have.get(namespace))
        return None

    async def _finalizer(self, source: KubeObject, *, present: bool) -> bool:
        """Add or remove our finalizer, with the cached resourceVersion; False on 409 (the
        cache was stale: a conflict)."""
        others = [f for f in source.finalizers if f != FINALIZER]
        finalizers = [*others, FINALIZER] if present else others
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": str(source.rv)}}
        try:
            patched = await self._core.patch_namespaced_config_map(
                source.name, source.namespace, patch, _content_type=MERGE_PATCH
            )
        except ApiException as exc:
            if exc.status == 404:
                return True
            if exc.status != 409:
                raise
            self.counters.conflicts += 1
            return False
        self.controller.record_write(source.key, self.sources, patched.metadata.resource_version)
        return True

    async def _sync(self, source: KubeObject, namespace: str, copy: KubeObject | None) -> None:
        """Create or update the copy of ``source`` in ``namespace``."""
        body = copy_body(source, namespace)
        try:
            if copy is None:
                written = await self._core.create_namespaced_config_map(namespace, body)
                self.counters.creates += 1
            elif not same_data(source, copy):
                body["metadata"]["resourceVersion"] = str(copy.rv)  # no lost update
                written = await self._core.replace_namespaced_config_map(
                    source.name, namespace, body
                )
            else:
                return
        except ApiException as exc:
            if exc.status != 409:
                raise
            self.counters.conflicts += 1
            log.warning("%s in %s: %s (409)", source.key, namespace, exc.reason)
            return
        rv = written.metadata.resource_version
        self.controller.record_write(source.key, self.copies, rv)

    async def _delete(self, copies: Iterable[KubeObject]) -> None:
        for copy in copies:
            options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=copy.uid))
            try:
                await self._core.delete_namespaced_config_map(
                    copy.name, copy.namespace, body=options
                )
                self.counters.deletes += 1
            except ApiException as exc:
                if exc.status not in (404, 409):  # gone already, or replaced by another
                    raise


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


async def install(api: client.ApiClient) -> None:
    """The sample namespaces and source ConfigMap (each if missing)."""
    core = client.CoreV1Api(api)
    for name, matching in SAMPLE_TARGETS.items():
        meta = {"name": name, "labels": target_label() if matching else {}}
        await create_ignoring_conflict(core.create_namespace({"metadata": meta}))
    body = source_body(SAMPLE_NAME, {"log-level": "info", "region": "eu-west"})
    await create_ignoring_conflict(core.create_namespaced_config_map(SAMPLE_NAMESPACE, body))


async def progress(
    api: client.ApiClient,
    namespace: str = SAMPLE_NAMESPACE,
    name: str = SAMPLE_NAME,
    target_selector: str = TARGET_SELECTOR,
) -> Progress:
    """Where source ``namespace/name`` stands, read from the API server. Converged: the
    source carries the finalizer and an identical copy is in every matching namespace and
    in no other; a source that is gone has no copy left."""
    core = client.CoreV1Api(api)
    matching = await list_objects(
        core.list_namespace(label_selector=target_selector, _preload_content=False)
    )
    wanted = sorted(ns.name for ns in matching if ns.name != namespace)
    copies = await list_objects(
        core.list_config_map_for_all_namespaces(
            label_selector=f"{COPY_LABEL}=true", _preload_content=False
        )
    )
    mine = [c for c in copies if source_of(c) == (f"{namespace}/{name}",)]
    sources = await list_objects(
        core.list_namespaced_config_map(
            namespace, field_selector=f"metadata.name={name}", _preload_content=False
        )
    )
    if not sources or is_terminating(sources[0]):
        state = "deleting" if sources else "gone"
        line = f"configmap {namespace}/{name}: {state}, {len(mine)} copies left"
        return Progress(line, not sources and not mine)
    source = sources[0]
    in_sync = sorted(c.namespace for c in mine if same_data(source, c))
    done = FINALIZER in source.finalizers and in_sync == wanted and len(mine) == len(wanted)
    line = (
        f"configmap {namespace}/{name}: {len(wanted)} matching namespaces, {len(mine)} copies, "
        f"{len(in_sync)} in sync"
    )
    return Progress(line, done)


EXAMPLE = Example(name="configmap_mirror", install=install, build=build, progress=progress)

if __name__ == "__main__":
    sys.exit(main(EXAMPLE))
