"""Website: a Website custom resource served by nginx pods, on aioinformer's toolkit.

A Website (``examples/crds/website.yaml``) has ``spec.pages`` (file name -> HTML) and
``spec.replicas``. Its operator keeps a ConfigMap NAME-pages holding the pages and that many
pods mounting it, both owned by the Website (the garbage collector removes them after it);
lists the site in its namespace's ``websites`` ConfigMap, a directory no Website owns, which
a finalizer cleans before the Website may go; patches ``status`` (with a ``Ready``
condition) and records Events.
Run: ``python examples/website.py``, or ``python -m aioinformer run examples/website.py:build``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aioinformer import (
    Client,
    KubeObject,
    Manager,
    Result,
    finalizer,
    is_condition_true,
    set_condition,
)

GROUP_VERSION = "example.aioinformer.dev/v1"
CRD = Path(__file__).resolve().parent / "crds" / "website.yaml"
FINALIZER = "example.aioinformer.dev/directory"
DIRECTORY = "websites"


class WebsiteOperator:
    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.events = manager.event_recorder("website")
        self.sites = manager.informer(GROUP_VERSION, "websites")
        self.pods = manager.informer("v1", "pods")
        self.configmaps = manager.informer("v1", "configmaps")
        owned = [self.pods, self.configmaps]
        manager.controller("website", self.reconcile, primary=self.sites, owns=owned)

    async def reconcile(self, key: str) -> Result | None:
        site = self.sites.snapshot().get(key)
        if site is None:
            return None  # gone: the garbage collector removes what it owned
        return await finalizer(self.client, site, FINALIZER, apply=self.apply, cleanup=self.unlist)

    async def apply(self, site: KubeObject) -> Result | None:
        pages = site.field("spec.pages", {}, type=dict[str, str])
        await self.client.apply(pages_configmap(site, pages), owner=site, force=True)
        await self.list_in_directory(site, ", ".join(sorted(pages)))
        owned = self.pods.snapshot().by_index("controller", site.uid)  # this site's pods
        pods = sorted((p for p in owned if p.deletion_timestamp is None), key=lambda p: p.name)
        replicas = site.field("spec.replicas", 1, type=int)
        for _ in range(replicas - len(pods)):
            pod = await self.client.create(pod_for(site), owner=site)
            self.events.record(site, "Normal", "Created", f"Created pod {pod.name}")
        for pod in pods[replicas:]:
            await self.client.delete(pod, missing_ok=True)
            self.events.record(site, "Normal", "Deleted", f"Deleted pod {pod.name}")
        ready = sum(is_condition_true(p, "Ready") for p in pods[:replicas])
        status = site.field("status", {}, type=dict[str, Any])  # a copy, to change
        status.update(readyReplicas=ready, observedGeneration=site.generation)
        set_condition(
            status,
            "Ready",
            ready == replicas,
            reason="PodsReady" if ready == replicas else "PodsNotReady",
            message=f"{ready} of {replicas} pods ready",
            observed_generation=site.generation,
        )
        if status != site.field("status"):  # (an unchanged condition keeps its time)
            await self.client.patch_status(site, {"status": status})
        return None

    async def unlist(self, site: KubeObject) -> Result | None:
        await self.list_in_directory(site, None)
        self.events.record(site, "Normal", "Unlisted", f"Removed {site.name} from {DIRECTORY}")
        return None

    async def list_in_directory(self, site: KubeObject, entry: str | None) -> None:
        """Apply the site's entry in the directory (None: withdraw it), as a field manager
        of its own: the other sites' entries are theirs (server-side apply)."""
        meta = {"name": DIRECTORY, "namespace": site.namespace}
        data = {} if entry is None else {site.name: entry}
        directory = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
        await self.client.apply(directory, field_manager=f"website-{site.name}")


def build(manager: Manager) -> WebsiteOperator:
    """The operator on ``manager`` (what ``python -m aioinformer run`` calls)."""
    return WebsiteOperator(manager)


def pages_configmap(site: KubeObject, pages: dict[str, str]) -> dict[str, Any]:
    meta = {"name": f"{site.name}-pages", "namespace": site.namespace}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": pages}


def pod_for(site: KubeObject) -> dict[str, Any]:
    mount = {"name": "pages", "mountPath": "/usr/share/nginx/html", "readOnly": True}
    container = {"name": "nginx", "image": "nginx:1.27", "volumeMounts": [mount]}
    volume = {"name": "pages", "configMap": {"name": f"{site.name}-pages"}}
    meta = {"generateName": f"{site.name}-", "labels": {"website": site.name}}
    spec = {"containers": [container], "volumes": [volume]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def website_body(name: str, pages: dict[str, str], replicas: int = 1) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    spec = {"pages": pages, "replicas": replicas}
    return {"apiVersion": GROUP_VERSION, "kind": "Website", "metadata": meta, "spec": spec}


async def progress(client: Client) -> tuple[str, bool]:
    site = await client.get(GROUP_VERSION, "Website", "hello", "default")
    ready = site.field("status.readyReplicas", 0, type=int)
    replicas = site.field("spec.replicas", 1, type=int)
    seen = site.field("status.observedGeneration", type=int) == site.generation
    return f"website default/hello: {ready}/{replicas} pods ready", seen and ready == replicas


CRDS = [CRD]
"""What ``python examples/website.py`` installs first."""
SAMPLES = [website_body("hello", {"index.html": "Hi"})]
"""What it creates then: the Website it converges."""

if __name__ == "__main__":  # python examples/website.py: run it on an embedded KubeSim
    from aioinformer.testing import Example

    sys.exit(Example.from_module(sys.modules[__name__]).main())
