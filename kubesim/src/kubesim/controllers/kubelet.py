"""What the kubelets of a simulated cluster write: the Node a kubelet registers and the status
that makes a pod Running, as a v1.28 kubelet with containerd reports them."""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from typing import Any

from kubesim.encoding.timefmt import now_rfc3339

__all__ = ["PodStatuses", "node_body"]

_POD_CONDITIONS = ("Initialized", "Ready", "ContainersReady", "PodScheduled")


class PodStatuses:
    """The statuses the kubelets report for the pods they start: each pod gets the next pod IP
    of the cluster's range (10.244.0.0/14 in /24 blocks) and each image its digest."""

    def __init__(self) -> None:
        self._next_ip = 0
        self._images: dict[str, dict[str, str]] = {}
        self._now_sec, self._now_str = 0, ""

    def running(self, obj: dict[str, Any], host_ip: str) -> dict[str, Any]:
        """The status strategic-merge-patch that makes pod ``obj``, on the node at ``host_ip``,
        Running: its conditions, a podIP unique in this cluster, startTime, one
        containerStatus per container."""
        now = self._now()
        block, host = divmod(self._next_ip, 254)
        self._next_ip += 1
        pod_ip = f"10.{244 + block // 256 % 12}.{block % 256}.{host + 1}"
        have = {c.get("type") for c in (obj.get("status") or {}).get("conditions") or ()}
        conditions = [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for t in _POD_CONDITIONS
            if t != "PodScheduled" or t not in have
        ]
        statuses = [
            {
                "name": c.get("name", ""),
                "state": {"running": {"startedAt": now}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                **self._image(c.get("image", "")),
                "containerID": f"containerd://{random.getrandbits(256):064x}",
                "started": True,
            }
            for c in (obj.get("spec") or {}).get("containers") or ()
        ]
        status = {
            "$setElementOrder/conditions": [{"type": t} for t in _POD_CONDITIONS],
            "phase": "Running",
            "conditions": conditions,
            "hostIP": host_ip,
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": now,
            "containerStatuses": statuses,
        }
        return {"metadata": {"uid": obj["metadata"].get("uid")}, "status": status}

    def _image(self, image: str) -> dict[str, str]:
        """``image`` and ``imageID`` as the container runtime reports them."""
        if (known := self._images.get(image)) is not None:
            return known
        name = image.split("@", 1)[0]
        name = name if "/" in name else f"docker.io/library/{name}"
        name = name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
        digest = hashlib.sha256(name.encode()).hexdigest()
        known = {"image": name, "imageID": f"{name.rsplit(':', 1)[0]}@sha256:{digest}"}
        self._images[image] = known
        return known

    def _now(self) -> str:
        """now_rfc3339(), computed once a second (formatting costs more than a write's share)."""
        if (sec := int(time.time())) != self._now_sec:
            self._now_sec, self._now_str = sec, now_rfc3339()
        return self._now_str


_NODE_RESOURCES = {
    "cpu": "8",
    "ephemeral-storage": "102626232Ki",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "32863064Ki",
    "pods": "110",
}
_NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "is posting ready status"),
)
_NODE_INFO = {
    "kernelVersion": "6.1.0-21-amd64",
    "osImage": "Debian GNU/Linux 12 (bookworm)",
    "containerRuntimeVersion": "containerd://1.7.1",
    "kubeletVersion": "v1.28.0",
    "kubeProxyVersion": "v1.28.0",
    "operatingSystem": "linux",
    "architecture": "amd64",
}


def node_body(name: str, ip: str) -> dict[str, Any]:
    """A Node as a kubelet registers it (kubeadm-like content, Ready)."""
    now = now_rfc3339()
    ident = hashlib.sha256(name.encode()).digest()
    conditions = [
        {"type": t, "status": s, "lastHeartbeatTime": now, "lastTransitionTime": now}
        | {"reason": reason, "message": f"kubelet {message}"}
        for t, s, reason, message in _NODE_CONDITIONS
    ]
    arch = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    labels = {f"beta.{k}": v for k, v in arch.items()} | arch | {"kubernetes.io/hostname": name}
    return {
        "metadata": {
            "name": name,
            "labels": dict(sorted(labels.items())),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": f"kubesim://{name}"},
        "status": {
            "capacity": dict(_NODE_RESOURCES),
            "allocatable": dict(_NODE_RESOURCES),
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": ident[:16].hex(),
                "systemUUID": str(uuid.UUID(bytes=ident[:16])),
                "bootID": str(uuid.UUID(bytes=ident[16:32])),
                **_NODE_INFO,
            },
        },
    }
