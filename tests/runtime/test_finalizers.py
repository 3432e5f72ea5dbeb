"""finalizer() in a running controller against KubeSim: the finalizer is added before the
first apply, cleanup runs before the object may go (again after a failure), then the object
goes."""

from __future__ import annotations

from aioinformer import KubeObject, Manager, Result, WatchOptions, finalizer
from aioinformer.testing import KubeSim, eventually

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)
NAME = "example.com/cleanup"


async def test_cleanup_runs_before_the_object_goes_and_again_after_a_failure(
    sim: KubeSim,
) -> None:
    log: list[str] = []
    fail_once = {"cleanup": True}
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")

        async def apply(obj: KubeObject) -> Result | None:
            log.append(f"apply {obj.name} {NAME in obj.finalizers}")
            return None

        async def cleanup(obj: KubeObject) -> Result | None:
            log.append(f"cleanup {obj.name}")
            if fail_once["cleanup"]:
                fail_once["cleanup"] = False
                raise RuntimeError("the external system is down")
            return None

        async def reconcile(key: str) -> Result | None:
            obj = cms.snapshot().get(key)
            if obj is None:
                log.append(f"gone {key}")
                return None
            return await finalizer(m.client, obj, NAME, apply=apply, cleanup=cleanup)

        m.controller("cm", reconcile, primary=cms)
        sim.create("configmaps", {"metadata": {"name": "a"}, "data": {}}, "default")
        async with m:
            await eventually(lambda: "apply a True" in log, "the first apply")
            assert sim.get("configmaps", "a", "default")["metadata"]["finalizers"] == [NAME]
            assert log[0] == "apply a True"  # the finalizer was there before apply ever ran
            sim.delete("configmaps", "a", "default")
            await eventually(lambda: "gone default/a" in log, "the object to go")
            assert log.count("cleanup a") == 2  # failed once, retried, then the finalizer left
            assert log.index("cleanup a") < log.index("gone default/a")
