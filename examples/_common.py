"""What the example operators share: CRD install, owned-pod writes, status writes, the runner.

Nothing here is specific to one operator. An example builds its informers and controller
on a :class:`~aioinformer.Manager`, and uses

* :class:`OwnedPods` to create and delete the pods it controls. Every create and delete
  goes through the controller's expectations (raised before the request, lowered when the
  request fails), and every create is recorded with ``record_write`` so the next reconcile
  reads a cache that has seen it. Whether the controller honours them is its own setting
  (``freshness=`` / ``expectations=``): the reconcile code is the same either way;
* :class:`StatusWriter` to merge-patch the status subresource when it changed;
* :func:`main` to be a program: an embedded KubeSim (or ``--kubeconfig``), the CRD, a
  sample object, the operator, and progress lines until it converged (``--once``: exit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from aioinformer import Controller, Informer, KubeObject, Manager, decode_object
from aioinformer.testing import KubeSim

GROUP = "example.aioinformer.dev"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
CRD_DIR = Path(__file__).resolve().parent / "crds"
MERGE_PATCH = "application/merge-patch+json"

log = logging.getLogger("examples")


# -- CRDs ---------------------------------------------------------------------------------------


def load_crd(name: str) -> dict[str, Any]:
    """The CustomResourceDefinition ``examples/crds/{name}.yaml`` as a dict."""
    crd: dict[str, Any] = yaml.safe_load((CRD_DIR / f"{name}.yaml").read_text())
    return crd


async def install_crd(api: client.ApiClient, crd: dict[str, Any], timeout: float = 30.0) -> None:
    """Create ``crd`` unless it exists, then wait until its resource is served."""
    try:
        await client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    except ApiException as exc:
        if exc.status != 409:
            raise
    spec = crd["spec"]
    custom = client.CustomObjectsApi(api)
    version = spec["versions"][0]["name"]
    async with asyncio.timeout(timeout):
        while True:
            try:
                await custom.list_cluster_custom_object(
                    spec["group"], version, spec["names"]["plural"], limit=1
                )
                return
            except ApiException as exc:
                if exc.status != 404:
                    raise
            await asyncio.sleep(0.05)


async def create_ignoring_conflict(create: Awaitable[Any]) -> None:
    """Await a create call; an object that already exists (409) is fine."""
    try:
        await create
    except ApiException as exc:
        if exc.status != 409:
            raise


# -- reading ------------------------------------------------------------------------------------


def owner_index(kind: str) -> Callable[[KubeObject], tuple[str, ...]]:
    """Index function: ``namespace/name`` of the object's controller if it is a ``kind``.

    Unlike the built-in ``controller`` index (by uid) it still finds the objects of an
    owner that is gone from the cache, which is what a deleted owner's cleanup needs."""

    def by_owner(obj: KubeObject) -> tuple[str, ...]:
        ref = obj.controller_ref
        return (f"{obj.namespace}/{ref.name}",) if ref is not None and ref.kind == kind else ()

    return by_owner


def pods_informer(manager: Manager, owner_kind: str) -> Informer:
    """The manager's shared pods informer, indexed by their ``owner_kind`` controller
    (index ``owner:KIND``; operators of several kinds can share the informer)."""
    return manager.informer("v1", "pods", indexers={f"owner:{owner_kind}": owner_index(owner_kind)})


def is_terminating(obj: KubeObject) -> bool:
    return obj.deletion_timestamp is not None


def has_ready_condition(obj: KubeObject) -> bool:
    """Whether ``status.conditions`` has Ready=True (a Ready node)."""
    conditions = obj.field("status.conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_ready(pod: KubeObject) -> bool:
    """A pod that is Running with Ready=True, and not terminating."""
    return (
        not is_terminating(pod)
        and pod.field("status.phase") == "Running"
        and has_ready_condition(pod)
    )


def controlled_by(obj: KubeObject, owner_uid: str) -> bool:
    ref = obj.controller_ref
    return ref is not None and ref.uid == owner_uid


def as_object(data: dict[str, Any]) -> KubeObject:
    """A dict answered by the API client (e.g. a custom object) as a KubeObject."""
    return decode_object(orjson.dumps(data))


async def list_objects(call: Awaitable[Any]) -> list[KubeObject]:
    """The items of a kubernetes_asyncio list call made with ``_preload_content=False``,
    as KubeObjects (so that progress checks use the same helpers as the reconcilers)."""
    response = await call
    items = orjson.loads(await response.read()).get("items") or ()
    return [as_object(item) for item in items]


def owner_reference(owner: KubeObject) -> dict[str, Any]:
    """A controller ownerReference to ``owner``."""
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(owner: KubeObject, metadata: dict[str, Any]) -> dict[str, Any]:
    """A pod body from ``owner``'s ``spec.template``, owned by ``owner``; ``metadata`` adds
    the name (or generateName)."""
    template = owner.field("spec.template") or {}
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(owner)],
            **metadata,
        },
        "spec": dict(template.get("spec") or {}),
    }


# -- writing ------------------------------------------------------------------------------------


@dataclass
class Counters:
    """What an operator's writes ran into; the tests assert on these."""

    creates: int = 0
    """Objects created."""
    conflicts: int = 0
    """409 answers (AlreadyExists on create, Conflict on an update): writes made on a cache
    that had not seen an earlier write. The seed's bug."""
    deletes: int = 0
    """Objects deleted (404 answers, already gone, not included)."""
    surplus: int = 0
    """Extra owned objects found in the cache (e.g. two agent pods on one node)."""
    status_patches: int = 0
    """Status subresource writes."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class OwnedPods:
    """Creates and deletes the pods a controller's owners control, with expectations.

    ``apply(owner, create=..., delete=...)`` raises the owner's expectations for every
    request before sending the first one (so no event can be missed in between), sends
    the deletes then the creates, and lowers the expectations of requests that failed or
    were never sent. 409 AlreadyExists (create) and 404/409 (delete of a pod that is gone
    or was replaced) are answers, not errors: counted and lowered. Anything else raises,
    and the controller retries the owner with backoff.
    """

    def __init__(
        self, api: client.ApiClient, controller: Controller, pods: Informer, counters: Counters
    ) -> None:
        self._core = client.CoreV1Api(api)
        self._controller = controller
        self._pods = pods
        self._index = f"owner:{controller.primary_kind}"  # see pods_informer()
        self._counters = counters

    async def owned(self, owner: str) -> list[KubeObject]:
        """The pods whose controller is ``owner`` ("namespace/name"), from the cache (through
        ``read()``, so a pods informer with ``store="locked"`` works too)."""
        async with self._pods.read() as view:
            pods: list[KubeObject] = view.by_index(self._index, owner)
        return pods

    async def apply(
        self,
        owner: str,
        *,
        create: Sequence[dict[str, Any]] = (),
        delete: Sequence[KubeObject] = (),
    ) -> None:
        """Delete ``delete`` (in that order), then create ``create`` (in that order)."""
        expectations = self._controller.expectations
        if delete:
            expectations.expect_deletions(owner, [p.key for p in delete])
        if create:
            expectations.expect_creations(owner, len(create))
        unsent_deletes, unsent_creates = list(delete), list(create)
        try:
            while unsent_deletes:
                await self._delete(owner, unsent_deletes[0])
                unsent_deletes.pop(0)
            while unsent_creates:
                await self._create(owner, unsent_creates[0])
                unsent_creates.pop(0)
        finally:  # what was not sent will never be observed
            for pod in unsent_deletes:
                expectations.deletion_observed(owner, pod.key)
            for _ in unsent_creates:
                expectations.creation_observed(owner)

    async def _create(self, owner: str, body: dict[str, Any]) -> None:
        namespace = owner.partition("/")[0]
        try:
            created = await self._core.create_namespaced_pod(namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            self._counters.conflicts += 1
            self._controller.expectations.creation_observed(owner)
            log.warning("%s: pod %s exists already (409)", owner, body["metadata"].get("name"))
            return
        self._counters.creates += 1
        self._controller.record_write(owner, self._pods, created.metadata.resource_version)

    async def _delete(self, owner: str, pod: KubeObject) -> None:
        # the uid precondition: never delete a newer pod that took the same name
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=pod.uid))
        try:
            await self._core.delete_namespaced_pod(pod.name, pod.namespace, body=options)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
            self._controller.expectations.deletion_observed(owner, pod.key)
            return
        self._counters.deletes += 1


class StatusWriter:
    """Merge-patches the status subresource of custom objects of one plural, when changed."""

    def __init__(
        self,
        api: client.ApiClient,
        plural: str,
        controller: Controller,
        informer: Informer,
        counters: Counters,
    ) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._plural = plural
        self._controller = controller
        self._informer = informer
        self._counters = counters

    async def update(self, obj: KubeObject, status: dict[str, Any]) -> None:
        """Patch ``status`` into ``obj``'s status unless the cached status has it already."""
        current = obj.field("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        try:
            patched = await self._custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                obj.namespace,
                self._plural,
                obj.name,
                {"status": status},
                _content_type=MERGE_PATCH,
            )
        except ApiException as exc:
            if exc.status != 404:  # 404: deleted meanwhile; its delete event follows
                raise
            return
        self._counters.status_patches += 1
        rv = patched["metadata"]["resourceVersion"]
        self._controller.record_write(obj.key, self._informer, rv)


# -- the program --------------------------------------------------------------------------------


class Progress(NamedTuple):
    """One progress line, and whether the operator's objects have converged."""

    line: str
    done: bool


@dataclass(frozen=True)
class Example:
    """How :func:`main` runs one example operator."""

    name: str
    install: Callable[[client.ApiClient], Awaitable[None]]
    """Install the CRD (if missing) and create the sample objects (if missing)."""
    build: Callable[[Manager], object]
    """Build the operator's informers and controller on the manager."""
    progress: Callable[[client.ApiClient], Awaitable[Progress]]
    """Where the sample objects stand, read from the API server (not from a cache)."""


def main(example: Example, argv: Sequence[str] | None = None) -> int:
    """The command line of every example (see ``--help``)."""
    parser = argparse.ArgumentParser(prog=f"python examples/{example.name}.py")
    parser.add_argument("--kubeconfig", help="run against this cluster instead of KubeSim")
    parser.add_argument("--once", action="store_true", help="exit 0 once converged")
    parser.add_argument("--timeout", type=float, default=60.0, help="--once gives up after this")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return asyncio.run(_run(example, args))
    except KeyboardInterrupt:
        print("stopped")
        return 0


async def _run(example: Example, args: argparse.Namespace) -> int:
    async with contextlib.AsyncExitStack() as stack:  # closed in reverse: operator, api, sim
        if args.kubeconfig:
            api = await config.new_client_from_config(config_file=args.kubeconfig)
        else:
            sim = await stack.enter_async_context(KubeSim(nodes=3))
            sim.start_cluster(start_delay=0.05, delete_grace_cap=0.1)
            print(f"KubeSim serving on {sim.url} with nodes {', '.join(node_names(sim))}")
            api = sim.api_client()
        await stack.enter_async_context(api)
        await example.install(api)
        manager = Manager(api)
        example.build(manager)
        running = asyncio.create_task(manager.run(), name=f"{example.name}-manager")
        stack.push_async_callback(cancel_and_wait, running)
        status = await _report(example, api, running, args)
    return status


async def _report(
    example: Example, api: client.ApiClient, running: asyncio.Task[None], args: argparse.Namespace
) -> int:
    """Print progress lines as they change; with ``--once`` return once converged."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout
    last, converged = "", False
    while not running.done():
        line, done = await example.progress(api)
        if line != last:
            print(line, flush=True)
            last = line
        if done and not converged:
            print(f"{example.name}: converged", flush=True)
            if args.once:
                return 0
        converged = done
        if args.once and loop.time() > deadline:
            print(f"{example.name}: not converged after {args.timeout:.0f}s", flush=True)
            return 1
        await asyncio.sleep(0.2)
    running.result()  # raises what stopped the manager
    return 1


def node_names(sim: KubeSim) -> list[str]:
    return [n["metadata"]["name"] for n in sim.list("nodes")]


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has ended (its cleanup included)."""
    task.cancel()
    await asyncio.wait([task])
