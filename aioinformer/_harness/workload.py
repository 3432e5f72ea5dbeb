"""Realistic objects for tests and benchmarks: StatefulSet-owned pods of production size.

A pod made by :func:`realistic_pod` is what kube-apiserver stores for a StatefulSet's pod
(the ServiceAccount admission's projected token volume and its mount included): about
3.6 KB of JSON without managedFields, 5.9 KB with the managedFields KubeSim adds, the size
of the pods in the contention scenario (kubernetes/kubernetes#130767), so memory and decoding
figures measured on them carry over.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["realistic_pod", "statefulset_uid"]


def statefulset_uid(namespace: str, name: str) -> str:
    """A stable, uid-shaped identifier for an owner (so pods can be made before it)."""
    h = hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def realistic_pod(
    namespace: str,
    owner: str,
    ordinal: int,
    *,
    node: str | None = None,
    phase: str = "Pending",
) -> dict[str, Any]:
    """Pod ``{owner}-{ordinal}`` as a StatefulSet controller creates it, with a controller
    ownerReference to StatefulSet ``owner``; with ``node``, bound and (``phase``) running."""
    name = f"{owner}-{ordinal}"
    uid = statefulset_uid(namespace, owner)
    token_volume = "kube-api-access-" + hashlib.sha1(name.encode()).hexdigest()[:5]
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app": owner,
                "app.kubernetes.io/name": owner,
                "controller-revision-hash": f"{owner}-7d9c5b6f8c",
                "statefulset.kubernetes.io/pod-name": name,
                "apps.kubernetes.io/pod-index": str(ordinal),
            },
            "annotations": {
                "prometheus.io/scrape": "true",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": owner,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "hostname": name,
            "subdomain": owner,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/team/app:1.24.3",
                    "ports": [
                        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                    ],
                    "env": [
                        {
                            "name": "POD_NAME",
                            "valueFrom": {
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}
                            },
                        },
                        {
                            "name": "POD_NAMESPACE",
                            "valueFrom": {
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}
                            },
                        },
                    ],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "256Mi"},
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                    },
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/var/lib/app"},
                        {"name": "config", "mountPath": "/etc/app", "readOnly": True},
                        {
                            "name": token_volume,
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        },
                    ],
                    "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}},
                {"name": "config", "configMap": {"name": f"{owner}-config", "defaultMode": 420}},
                {
                    "name": token_volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "imagePullSecrets": [{"name": "registry-credentials"}],
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {"runAsNonRoot": True, "fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {
            "phase": phase,
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-11-29T10:00:00Z",
                }
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.0.10",
            "hostIPs": [{"ip": "10.0.0.10"}],
            "podIP": f"10.244.{ordinal // 250 % 250}.{ordinal % 250 + 1}",
            "podIPs": [{"ip": f"10.244.{ordinal // 250 % 250}.{ordinal % 250 + 1}"}],
            "startTime": "2026-11-29T10:00:00Z",
            "containerStatuses": [
                {
                    "name": "app",
                    "state": {"running": {"startedAt": "2026-11-29T10:00:01Z"}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example.com/team/app:1.24.3",
                    "imageID": "registry.example.com/team/app@sha256:" + "ab" * 32,
                    "containerID": "containerd://" + hashlib.sha256(name.encode()).hexdigest(),
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        }
    return pod
