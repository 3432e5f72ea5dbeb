"""apps/v1 printers: replicasets, statefulsets, daemonsets and controllerrevisions (the
deployment table is recorded: test_tables)."""

from __future__ import annotations

from kubesim.machinery.printing import label_selector_string
from tests.kubesim.apis.test_printers import AGO_5M, cells


def test_workload_cells() -> None:
    template = {
        "spec": {"containers": [{"name": "a", "image": "i1"}, {"name": "b", "image": "i2"}]}
    }
    sel = {
        "matchLabels": {"app": "x"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    }
    meta = {"name": "w", "creationTimestamp": AGO_5M}
    rs = {
        "metadata": meta,
        "spec": {"replicas": 3, "selector": sel, "template": template},
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    assert cells("apps", "replicasets", rs)[1:4] == [3, 2, 1]
    assert cells("apps", "replicasets", rs)[5:] == ["a,b", "i1,i2", "app=x,!gone,tier in (a,b)"]
    sts = {
        "metadata": meta,
        "spec": {"replicas": 3, "template": template},
        "status": {"readyReplicas": 2},
    }
    assert cells("apps", "statefulsets", sts)[1] == "2/3"
    ds = {
        "metadata": meta,
        "spec": {"template": {"spec": {**template["spec"], "nodeSelector": {"b": "2", "a": "1"}}}},
        "status": {"desiredNumberScheduled": 4, "numberReady": 3},
    }
    assert cells("apps", "daemonsets", ds)[1:7] == [4, 0, 3, 0, 0, "a=1,b=2"]
    assert cells("apps", "daemonsets", ds)[-1] == "<none>"  # no selector
    cr = {
        "metadata": {
            **meta,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": True}
            ],
        },
        "revision": 7,
    }
    assert cells("apps", "controllerrevisions", cr)[1:3] == ["statefulset.apps/web", 7]
    assert label_selector_string({}) == ""
