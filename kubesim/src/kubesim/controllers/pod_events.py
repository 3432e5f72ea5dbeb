"""The Events a scheduler and a kubelet write while a pod starts, for the cluster emulation.

:class:`PodEvents` writes core/v1 Events through the normal API (so they are listed,
watched and field-selected like any other, e.g. by ``kubectl describe pod``), shaped as a
real v1.28 cluster stores them (26a shows both shapes):

* ``Scheduled`` (``Successfully assigned <ns>/<pod> to <node>``) as the scheduler's
  events.k8s.io recorder writes it, read through core/v1: ``eventTime`` set,
  ``action: Binding``, ``reportingComponent: default-scheduler``, an empty ``source``, no
  first/last timestamps or count;
* per container, ``Pulling``, ``Pulled``, ``Created`` and ``Started`` as the kubelet's
  core/v1 recorder writes them: ``involvedObject.fieldPath: spec.containers{<name>}``,
  ``source {component: kubelet, host: <node>}``, first/last timestamps, ``count: 1``,
  ``eventTime: null``, ``reportingComponent: kubelet``, ``reportingInstance: <node>``.

Names are ``<pod>.<hex nanoseconds>`` as the recorders make them. An Event that cannot be
written (its namespace is being deleted) is skipped, as a recorder drops it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from kubesim.encoding.timefmt import now_micro, now_rfc3339
from kubesim.errors import KubeSimApiError
from kubesim.registry.store import Api

__all__ = ["PodEvents"]

log = logging.getLogger("kubesim.cluster")


class PodEvents:
    """Writes a pod's start-up Events (see the module docstring)."""

    def __init__(self, api: Api) -> None:
        self._api = api
        rt = api.registry.lookup("", "v1", "events")
        assert rt is not None
        self._rt = rt
        self._last_ns = 0

    def _name(self, pod: str) -> str:
        stamp = max(time.time_ns(), self._last_ns + 1)  # unique even within one clock tick
        self._last_ns = stamp
        return f"{pod}.{stamp:x}"

    @staticmethod
    def _ref(pod: Mapping[str, Any], field_path: str | None = None) -> dict[str, Any]:
        meta = pod["metadata"]
        ref = {
            "kind": "Pod",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "apiVersion": "v1",
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if field_path:
            ref["fieldPath"] = field_path
        return ref

    def _write(self, pod: Mapping[str, Any], body: dict[str, Any], manager: str) -> None:
        namespace = pod["metadata"]["namespace"]
        body = {
            "metadata": {"name": self._name(pod["metadata"]["name"]), "namespace": namespace},
            **body,
        }
        try:
            self._api.create(self._rt, namespace, body, manager=manager)
        except KubeSimApiError as exc:
            log.debug("event for pod %s/%s dropped: %s", namespace, pod["metadata"]["name"], exc)

    def scheduled(self, pod: Mapping[str, Any], node: str) -> None:
        """The scheduler's ``Scheduled`` event after it bound ``pod`` to ``node``."""
        meta = pod["metadata"]
        self._write(
            pod,
            {
                "involvedObject": self._ref(pod),
                "reason": "Scheduled",
                "message": f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}",
                "source": {},
                "firstTimestamp": None,
                "lastTimestamp": None,
                "type": "Normal",
                "eventTime": now_micro(),
                "action": "Binding",
                "reportingComponent": "default-scheduler",
                "reportingInstance": "default-scheduler-kubesim",
            },
            "kube-scheduler",
        )

    def _kubelet(
        self, pod: Mapping[str, Any], node: str, container: str, reason: str, message: str
    ) -> None:
        now = now_rfc3339()
        self._write(
            pod,
            {
                "involvedObject": self._ref(pod, f"spec.containers{{{container}}}"),
                "reason": reason,
                "message": message,
                "source": {"component": "kubelet", "host": node},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
                "type": "Normal",
                "eventTime": None,
                "reportingComponent": "kubelet",
                "reportingInstance": node,
            },
            "kubelet",
        )

    def started(self, pod: Mapping[str, Any], node: str, pull_seconds: float) -> None:
        """The kubelet's Pulling, Pulled, Created and Started for each container of ``pod``."""
        for c in (pod.get("spec") or {}).get("containers") or []:
            name, image = c.get("name", ""), c.get("image", "")
            took = f"{pull_seconds:.3f}s"
            self._kubelet(pod, node, name, "Pulling", f'Pulling image "{image}"')
            pulled = f'Successfully pulled image "{image}" in {took} ({took} including waiting)'
            self._kubelet(pod, node, name, "Pulled", pulled)
            self._kubelet(pod, node, name, "Created", f"Created container {name}")
            self._kubelet(pod, node, name, "Started", f"Started container {name}")
