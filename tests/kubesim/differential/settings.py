"""A server's settings that recorded answers depend on, and how a cluster's are found out.

The recording servers ran without controllers, some with the ServiceAccount admission
plugin off, some with the WatchList gate on (conformance README). A scenario names what
its answers need (:class:`Need`); a cluster whose settings differ skips it, saying which.
Each setting is found by asking the cluster, so a bare kube-apiserver + etcd runs every
scenario a full cluster cannot, and the other way round."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

#: The Leases a kube-controller-manager and a kube-scheduler hold while they lead.
_CONTROLLER_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
_PROBED = "/api/v1/namespaces/default"


@dataclass(frozen=True)
class Need:
    """A setting the recording's server had that a scenario's answers depend on: the
    cluster's ``setting`` (a field of :class:`Settings`) must be ``value``; ``why`` says
    what the recording's server had and what would differ."""

    setting: str
    value: bool
    why: str


@dataclass(frozen=True)
class Settings:
    """A cluster's settings, as far as the recordings' answers depend on them."""

    controllers: bool  #: a kube-controller-manager or kube-scheduler runs
    service_account_admission: bool  #: the ServiceAccount admission plugin is on
    watch_list: bool  #: the WatchList feature gate is on

    def unmet(self, needs: tuple[Need, ...]) -> str | None:
        """Why a scenario with ``needs`` cannot run here (the first need this cluster
        does not meet), if it cannot."""
        for need in needs:
            if (have := getattr(self, need.setting)) != need.value:
                return f"{need.why}; on this cluster {need.setting} is {have}"
        return None


async def settings_of(http: aiohttp.ClientSession) -> Settings:
    """The settings of the cluster ``http`` reaches (as its admin), each found by asking:
    the controllers' Leases, a dry-run pod, a watch asking for initial events."""
    return Settings(
        controllers=await _controllers(http),
        service_account_admission=await _service_account_admission(http),
        watch_list=await _watch_list(http),
    )


async def _controllers(http: aiohttp.ClientSession) -> bool:
    """Whether a kube-controller-manager or kube-scheduler runs: each holds its Lease in
    kube-system (leader election is on by default; a bare kube-apiserver has neither)."""
    for name in ("kube-controller-manager", "kube-scheduler"):
        async with http.get(f"{_CONTROLLER_LEASES}/{name}") as r:
            if r.status == 200:
                return True
            assert r.status == 404, f"GET lease {name}: {r.status}"
    return False


async def _service_account_admission(http: aiohttp.ClientSession) -> bool:
    """Whether the ServiceAccount admission plugin is on: a pod without a service account
    (created as a dry run, so nothing is stored) gets ``default``, or is refused because
    that ServiceAccount does not exist (no controller made it)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "settings-probe-"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    params = {"dryRun": "All"}
    async with http.post(f"{_PROBED}/pods", params=params, json=pod) as r:
        body = await r.json()
    if r.status == 201:
        return "serviceAccountName" in body["spec"]
    message = str(body.get("message", ""))
    assert "service account" in message, f"dry-run pod: {r.status} {message}"
    return True


async def _watch_list(http: aiohttp.ClientSession) -> bool:
    """Whether the WatchList gate is on: a watch asking for initial events is accepted
    (with the gate off it is refused with 422, as 09e recorded)."""
    params = {
        "watch": "1",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }
    async with http.get(f"{_PROBED}/configmaps", params=params) as r:
        assert r.status in (200, 422), f"watch with sendInitialEvents: {r.status}"
        return r.status == 200
