"""What mypy --strict must accept at the front door, and what conforms to which Protocol.
Checked by test_typing.py (no error expected here). Never run."""

from __future__ import annotations

from typing import Any

from aioinformer import (
    Informer,
    InformerFactory,
    InformerOptions,
    InformerSpec,
    KubeObject,
    Manager,
    ProcessSettings,
    by_field,
    by_label,
    drop_managed_fields,
)
from aioinformer._cache.pipeline import Adoptable, LoopHost, PipelineHost, ThreadHost
from aioinformer._cache.watcher import ListerWatcher
from aioinformer._client.listwatch import ListWatch


def node_of(obj: KubeObject) -> list[str]:
    return [obj.name]


def the_same_options_both_ways(api: Any) -> list[Informer]:
    manager = Manager(api, pipeline="loop", compact=False, process=ProcessSettings())
    factory = InformerFactory(api, pipeline="thread", process=ProcessSettings(None))
    options: InformerOptions = {"namespace": "default", "indexers": {"node": node_of}}
    return [
        manager.informer("v1", "pods", compact=True),
        manager.informer("v1", "pods", indexers={"node": by_field("spec.nodeName")}),
        factory.informer("v1", "pods", compact=True, namespace=None),
        factory.informer(
            "apps/v1",
            "deployments",
            indexers={"app": by_label("app"), "node": node_of},
            transform=drop_managed_fields,
            label_selector="app=web",
            metadata_only=True,
        ),
        factory.informer_for(InformerSpec(group_version="v1", plural="pods"), {"n": node_of}),
        manager.informer("v1", "configmaps", **options),
        factory.informer("v1", "configmaps", **options),
    ]


def conformance(api: Any) -> None:
    hosts: list[PipelineHost] = [ThreadHost("typed"), LoopHost()]
    list_watch = ListWatch(api, "v1", "pods")
    watched: ListerWatcher = list_watch
    adoptable: Adoptable = list_watch
    moved: ListWatch = hosts[0].adopt(list_watch)
    del watched, adoptable, moved
