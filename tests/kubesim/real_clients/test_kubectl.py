"""kubectl against ``python -m aioinformer sim`` (https, the kubeconfig it writes): every
verb a user types, checked on kubectl's output and on the server's state afterwards.

Each check runs with kubectl 1.28 (the recorded server's version) and the newest kubectl
installed, in a namespace of its own, on one sim per module. What a real v1.28 server
answers is taken from the recordings (tests/kubesim/conformance) where one exists, else from
kube-apiserver's and kubectl's sources, as each docstring says.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.kubesim.kubectl import Kubectl, kubectl_binary, versions_to_test
from tests.kubesim.real_clients.simproc import SimProcess, wait_for

GROUP = "clients.aioinformer.dev"
WIDGET_CRD = f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{GROUP}
spec:
  group: {GROUP}
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {{}}
        scale: {{specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}
      additionalPrinterColumns:
        - {{name: Size, type: integer, jsonPath: .spec.replicas}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              description: What the widget should be.
              properties:
                replicas: {{type: integer, minimum: 0, description: How many widgets.}}
                color: {{type: string, description: The widget's color.}}
            status:
              type: object
              properties:
                replicas: {{type: integer}}
"""


@dataclass
class Ctl:
    """kubectl of one version bound to the module's sim, and the namespace it works in."""

    kubectl: Kubectl
    sim: SimProcess
    ns: str
    minor: int

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> str:
        """``kubectl -n NS ARGS``, required to succeed; stdout."""
        return self.kubectl.check("-n", self.ns, *args, stdin=stdin, timeout=timeout)

    def run(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> Any:
        """``kubectl -n NS ARGS`` whatever its exit status (a Result)."""
        return self.kubectl.call("-n", self.ns, *args, stdin=stdin, timeout=timeout)

    @contextmanager
    def background(self, *args: str) -> Iterator[subprocess.Popen[str]]:
        """``kubectl -n NS ARGS`` running in the background (a watch, a wait), its stdout a
        pipe of text lines; killed on exit."""
        proc = subprocess.Popen(
            self.kubectl.argv("-n", self.ns, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.kubectl.env(),
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def obj(self, path: str) -> Any:
        """The object at ``/api/v1/namespaces/NS/<path>`` or ``/apis/<path>`` (namespaced
        paths start with a plural, group paths with ``apis/``), read over HTTP."""
        return self.sim.get(self.path(path))

    def exists(self, path: str) -> bool:
        return self.sim.exists(self.path(path))

    def path(self, path: str) -> str:
        if path.startswith("/"):
            return path
        if path.startswith("apis/"):
            group_version, _, rest = path.removeprefix("apis/").partition(":")
            return f"/apis/{group_version}/namespaces/{self.ns}/{rest}"
        return f"/api/v1/namespaces/{self.ns}/{path}"


@pytest.fixture(scope="module", params=versions_to_test())
def ctl(
    request: pytest.FixtureRequest, cli_sim: SimProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Ctl]:
    version: str = request.param
    binary = kubectl_binary(version)
    minor = int(version.split(".")[1])
    kubectl = Kubectl(binary, cli_sim.kubeconfig, tmp_path_factory.mktemp(f"kubectl-{minor}"))
    ns = f"kc-{minor}"
    out = kubectl.check("create", "namespace", ns)
    assert out.strip() == f"namespace/{ns} created"
    yield Ctl(kubectl, cli_sim, ns, minor)


def cm(name: str, **data: str) -> str:
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    )


def deployment(name: str, replicas: int = 1, image: str = "nginx:1.25") -> str:
    labels = {"app": name}
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": image}]},
                },
            },
        }
    )


def pod(name: str, **labels: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        }
    )


def widget(name: str, replicas: int = 1, color: str = "red") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "color": color},
        }
    )


def owned_cm(name: str, owner: dict[str, Any]) -> str:
    ref = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}
    body["metadata"]["ownerReferences"] = [ref]
    return yaml.safe_dump(body)


@pytest.fixture(scope="module")
def widgets(ctl: Ctl) -> str:
    """The Widget CRD (a scale subresource, a printer column, descriptions), installed once
    and Established; its resource name."""
    ctl.kubectl.call("apply", "-f", "-", stdin=WIDGET_CRD)

    # a new CRD's status.conditions is null until the naming controller has run (13a records
    # it so), and `kubectl wait --for=condition` fails at once on a null list, against a real
    # server too: wait for the conditions first, then check that kubectl wait agrees
    def established() -> bool:
        crd = json.loads(ctl.kubectl.check("get", f"crd/widgets.{GROUP}", "-o", "json"))
        conditions = crd["status"].get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, "the Widget CRD to be Established")
    ctl.kubectl.check(
        "wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=20s"
    )
    return f"widgets.{GROUP}"


# -- discovery and identity ---------------------------------------------------------------


def test_version(ctl: Ctl) -> None:
    doc = json.loads(ctl("version", "-o", "json"))
    assert doc["serverVersion"]["gitVersion"] == "v1.28.0"
    assert doc["clientVersion"]["minor"].rstrip("+") == str(ctl.minor)


def test_api_versions(ctl: Ctl) -> None:
    versions = ctl("api-versions").split()
    for gv in ("v1", "apps/v1", "coordination.k8s.io/v1", "apiextensions.k8s.io/v1"):
        assert gv in versions
    assert "batch/v1" in versions and "rbac.authorization.k8s.io/v1" in versions
    assert versions == sorted(versions)


def test_api_resources(ctl: Ctl) -> None:
    rows = [line.split() for line in ctl("api-resources", "--no-headers").splitlines()]
    by_name = {r[0]: r for r in rows}
    assert by_name["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert by_name["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert by_name["jobs"] == ["jobs", "batch/v1", "true", "Job"]
    cluster = ctl("api-resources", "--namespaced=false", "-o", "name").split()
    assert "nodes" in cluster and "pods" not in cluster


def test_api_resources_wide_shows_verbs(ctl: Ctl) -> None:
    out = ctl("api-resources", "--api-group=coordination.k8s.io", "-o", "wide")
    lease = next(line for line in out.splitlines() if line.startswith("leases"))
    assert "create,delete,deletecollection,get,list,patch,update,watch" in lease


def test_auth_can_i(ctl: Ctl) -> None:
    """``kubectl auth can-i`` creates a SelfSubjectAccessReview (authorization.k8s.io/v1)
    and prints its ``status.allowed``."""
    assert ctl("auth", "can-i", "create", "pods").strip() == "yes"
    assert ctl("auth", "can-i", "delete", "deployments.apps", "--subresource=scale").strip() == (
        "yes"
    )


def test_auth_whoami(ctl: Ctl) -> None:
    """``kubectl auth whoami`` (a SelfSubjectReview, authentication.k8s.io/v1) names the
    token's user."""
    out = ctl("auth", "whoami", "-o", "json")
    assert json.loads(out)["status"]["userInfo"]["username"] == "admin"


def test_get_raw_health(ctl: Ctl) -> None:
    assert ctl("get", "--raw", "/readyz").strip() == "ok"
    assert "[+]ping ok" in ctl("get", "--raw", "/livez?verbose")


# -- create and get -----------------------------------------------------------------------


def test_create_pod_and_get_json(ctl: Ctl) -> None:
    assert ctl("create", "-f", "-", stdin=pod("getter")).strip() == "pod/getter created"
    got = json.loads(ctl("get", "pod", "getter", "-o", "json"))
    assert (got["kind"], got["apiVersion"], got["metadata"]["name"]) == ("Pod", "v1", "getter")
    assert got["spec"]["containers"][0]["image"] == "busybox:1.36"
    assert ctl.obj("pods/getter")["metadata"]["uid"] == got["metadata"]["uid"]


def test_get_yaml(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("yamlcm", a="1"))
    got = yaml.safe_load(ctl("get", "configmap", "yamlcm", "-o", "yaml"))
    assert got["kind"] == "ConfigMap" and got["data"] == {"a": "1"}


def test_get_list_yaml_and_json(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("listcm"))
    listed = json.loads(ctl("get", "configmaps", "-o", "json"))
    assert listed["kind"] == "List" and "listcm" in [i["metadata"]["name"] for i in listed["items"]]
    assert all(i["kind"] == "ConfigMap" for i in listed["items"])


def test_get_wide(ctl: Ctl) -> None:
    """``-o wide`` asks for a Table and prints the pod printer's wide columns."""
    ctl("create", "-f", "-", stdin=pod("wide"))
    ctl("wait", "--for=condition=Ready", "pod/wide", "--timeout=20s")
    lines = ctl("get", "pod", "wide", "-o", "wide").splitlines()
    assert re.split(r"\s{2,}", lines[0].strip()) == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    cells = lines[1].split()
    assert cells[:4] == ["wide", "1/1", "Running", "0"] and "node-0" in cells


def test_get_name(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("named"))
    assert "configmap/named" in ctl("get", "configmaps", "-o", "name").split()


def test_get_custom_columns(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=pod("columns"))
    out = ctl(
        "get", "pod", "columns", "-o", "custom-columns=N:.metadata.name,I:.spec.containers[0].image"
    )
    assert out.split() == ["N", "I", "columns", "busybox:1.36"]


def test_get_jsonpath(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("jp1", k="v1"))
    ctl("create", "-f", "-", stdin=cm("jp2", k="v2"))
    out = ctl("get", "configmaps", "-l", "!nothing", "-o", "jsonpath={.items[*].data.k}")
    assert "v1 v2" in out


def test_get_label_selector_and_show_labels(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=pod("sel-a", tier="front"))
    ctl("create", "-f", "-", stdin=pod("sel-b", tier="back"))
    out = ctl("get", "pods", "-l", "tier=front", "--show-labels", "--no-headers")
    assert [line.split()[0] for line in out.splitlines()] == ["sel-a"]
    assert "tier=front" in out


def test_get_field_selector(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=pod("fs"))
    out = ctl("get", "pods", "--field-selector", "metadata.name=fs", "-o", "name")
    assert out.split() == ["pod/fs"]


def test_get_chunked_lists_everything(ctl: Ctl) -> None:
    """``--chunk-size=1`` pages through the list with continue tokens."""
    for i in range(3):
        ctl("create", "-f", "-", stdin=cm(f"page-{i}"))
    out = ctl("get", "configmaps", "--chunk-size=1", "-o", "name")
    assert {f"configmap/page-{i}" for i in range(3)} <= set(out.split())


def test_get_sort_by(ctl: Ctl) -> None:
    for name, value in (("sort-b", "2"), ("sort-a", "3"), ("sort-c", "1")):
        ctl("create", "-f", "-", stdin=cm(name, rank=value))
    out = ctl("get", "configmaps", "--sort-by=.data.rank", "-o", "name", "-l", "!x")
    ranked = [n for n in out.split() if n.startswith("configmap/sort-")]
    assert ranked == ["configmap/sort-c", "configmap/sort-b", "configmap/sort-a"]


def test_get_all_category(ctl: Ctl) -> None:
    """``get all`` lists the types of the ``all`` category from discovery."""
    ctl("create", "-f", "-", stdin=deployment("cat"))
    ctl("create", "-f", "-", stdin=pod("cat-pod"))
    names = ctl("get", "all", "-o", "name").split()
    assert "deployment.apps/cat" in names and "pod/cat-pod" in names
    assert not any(n.startswith("configmap/") for n in names)


def test_create_generators(ctl: Ctl) -> None:
    """``kubectl create configmap|secret|service|serviceaccount`` (typed clients; kubectl
    1.32+ sends protobuf bodies)."""
    assert ctl("create", "configmap", "lit", "--from-literal=a=1").strip() == (
        "configmap/lit created"
    )
    assert ctl.obj("configmaps/lit")["data"] == {"a": "1"}
    ctl("create", "secret", "generic", "sec", "--from-literal=pw=hunter2")
    assert ctl.obj("secrets/sec")["data"] == {"pw": "aHVudGVyMg=="}
    ctl("create", "service", "clusterip", "svc", "--tcp=80:8080")
    svc = ctl.obj("services/svc")
    assert svc["spec"]["ports"][0]["targetPort"] == 8080 and svc["spec"]["clusterIP"]
    ctl("create", "serviceaccount", "robot")
    assert ctl.exists("serviceaccounts/robot")


def test_create_job_and_role(ctl: Ctl) -> None:
    """``kubectl create job|role|rolebinding``: batch/v1 and rbac.authorization.k8s.io/v1
    are served (kubectl 1.32+ sends these bodies as protobuf too)."""
    ctl("create", "job", "once", "--image=busybox:1.36")
    job = ctl.obj("apis/batch/v1:jobs/once")
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 6  # defaulted as the real server does
    ctl("create", "role", "reader", "--verb=get,list", "--resource=pods")
    role = ctl.obj("apis/rbac.authorization.k8s.io/v1:roles/reader")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    ctl("create", "rolebinding", "read", "--role=reader", "--user=alice")
    binding = ctl.obj("apis/rbac.authorization.k8s.io/v1:rolebindings/read")
    assert binding["subjects"][0]["name"] == "alice"


def test_run_pod(ctl: Ctl) -> None:
    assert ctl("run", "runner", "--image=busybox:1.36").strip() == "pod/runner created"
    assert ctl.obj("pods/runner")["spec"]["containers"][0]["name"] == "runner"


def test_expose_deployment(ctl: Ctl) -> None:
    """``kubectl expose`` reads the deployment's selector and creates a Service for it."""
    ctl("create", "-f", "-", stdin=deployment("exposed"))
    ctl("expose", "deployment", "exposed", "--port=80", "--target-port=8080")
    svc = ctl.obj("services/exposed")
    assert svc["spec"]["selector"] == {"app": "exposed"}
    assert svc["spec"]["ports"][0]["port"] == 80


# -- apply and diff -------------------------------------------------------------------------


def test_apply_create_unchanged_configured(ctl: Ctl) -> None:
    """Client-side apply: created, unchanged on a re-apply, configured on a change (a key
    removed from the file goes from the object: the three-way merge with the
    last-applied-configuration annotation)."""
    assert ctl("apply", "-f", "-", stdin=cm("applied", a="1", b="2")).strip() == (
        "configmap/applied created"
    )
    obj = ctl.obj("configmaps/applied")
    last = obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(last)["data"] == {"a": "1", "b": "2"}
    assert ctl("apply", "-f", "-", stdin=cm("applied", a="1", b="2")).strip() == (
        "configmap/applied unchanged"
    )
    assert ctl("apply", "-f", "-", stdin=cm("applied", a="9")).strip() == (
        "configmap/applied configured"
    )
    assert ctl.obj("configmaps/applied")["data"] == {"a": "9"}


def test_apply_deployment_change_bumps_generation(ctl: Ctl) -> None:
    ctl("apply", "-f", "-", stdin=deployment("rolling", image="nginx:1.25"))
    ctl("apply", "-f", "-", stdin=deployment("rolling", image="nginx:1.26"))
    dep = ctl.obj("apis/apps/v1:deployments/rolling")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert dep["metadata"]["generation"] == 2


def test_apply_server_side(ctl: Ctl) -> None:
    out = ctl("apply", "--server-side", "-f", "-", stdin=cm("ssa", a="1"))
    assert out.strip() == "configmap/ssa serverside-applied"
    managers = [
        (e["manager"], e["operation"])
        for e in ctl.obj("configmaps/ssa")["metadata"]["managedFields"]
    ]
    assert managers == [("kubectl", "Apply")]


def test_apply_server_side_conflict_and_force(ctl: Ctl) -> None:
    """A second manager applying a field the first owns gets the conflict (exit 1);
    ``--force-conflicts`` takes it over."""
    ctl("apply", "--server-side", "-f", "-", stdin=cm("contested", a="1"))
    res = ctl.run(
        "apply", "--server-side", "--field-manager=rival", "-f", "-", stdin=cm("contested", a="2")
    )
    assert res.code == 1 and 'conflict with "kubectl"' in res.err and ".data.a" in res.err
    assert ctl.obj("configmaps/contested")["data"] == {"a": "1"}
    ctl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=rival",
        "-f",
        "-",
        stdin=cm("contested", a="2"),
    )
    obj = ctl.obj("configmaps/contested")
    assert obj["data"] == {"a": "2"}
    assert {e["manager"] for e in obj["metadata"]["managedFields"]} == {"rival"}


def test_apply_custom_resource(ctl: Ctl, widgets: str) -> None:
    out = ctl("apply", "-f", "-", stdin=widget("w-apply", 2))
    assert out.strip() == f"widget.{GROUP}/w-apply created"
    ctl("apply", "-f", "-", stdin=widget("w-apply", 2, color="blue"))
    got = ctl.obj(f"apis/{GROUP}/v1:widgets/w-apply")
    assert got["spec"] == {"replicas": 2, "color": "blue"}
    assert got["metadata"]["generation"] == 2
    assert ctl("get", "widgets", "w-apply", "--no-headers").split()[:2] == ["w-apply", "2"]


def test_apply_server_side_custom_resource(ctl: Ctl, widgets: str) -> None:
    out = ctl("apply", "--server-side", "-f", "-", stdin=widget("w-ssa", 1))
    assert out.strip() == f"widget.{GROUP}/w-ssa serverside-applied"


def test_diff(ctl: Ctl) -> None:
    """``kubectl diff`` (a server-side dry-run apply) exits 1 with the change, 0 when the
    file matches; nothing is written."""
    ctl("apply", "-f", "-", stdin=cm("diffed", mode="a"))
    rv = ctl.obj("configmaps/diffed")["metadata"]["resourceVersion"]
    changed = ctl.run("diff", "-f", "-", stdin=cm("diffed", mode="b"))
    assert changed.code == 1, changed.err
    assert "-  mode: a" in changed.out and "+  mode: b" in changed.out
    same = ctl.run("diff", "-f", "-", stdin=cm("diffed", mode="a"))
    assert (same.code, same.out) == (0, ""), same.err
    assert ctl.obj("configmaps/diffed")["metadata"]["resourceVersion"] == rv


# -- dry run --------------------------------------------------------------------------------


def test_dry_run_server_create(ctl: Ctl) -> None:
    out = ctl("create", "--dry-run=server", "-f", "-", stdin=cm("ghost"))
    assert out.strip() == "configmap/ghost created (server dry run)"
    assert not ctl.exists("configmaps/ghost")


def test_dry_run_server_apply(ctl: Ctl) -> None:
    ctl("apply", "-f", "-", stdin=cm("dry-applied", a="1"))
    out = ctl("apply", "--dry-run=server", "-f", "-", stdin=cm("dry-applied", a="2"))
    assert out.strip() == "configmap/dry-applied configured (server dry run)"
    assert ctl.obj("configmaps/dry-applied")["data"] == {"a": "1"}


def test_dry_run_server_patch(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("dry-patched", a="1"))
    out = ctl("patch", "configmap", "dry-patched", "--dry-run=server", "-p", '{"data":{"a":"2"}}')
    # kubectl patch names no dry run in its output (its printer is built before the flag
    # is read); the request carries dryRun=All and the server keeps the object as it was
    assert out.strip() == "configmap/dry-patched patched"
    assert ctl.obj("configmaps/dry-patched")["data"] == {"a": "1"}


def test_dry_run_server_delete(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("dry-deleted"))
    out = ctl("delete", "configmap", "dry-deleted", "--dry-run=server")
    assert out.startswith('configmap "dry-deleted" deleted') and "(server dry run)" in out
    assert ctl.exists("configmaps/dry-deleted")


# -- patch, replace, label, annotate ------------------------------------------------------


def test_patch_merge(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("merged", a="1", b="2"))
    out = ctl("patch", "configmap", "merged", "--type=merge", "-p", '{"data":{"a":null,"c":"3"}}')
    assert out.strip() == "configmap/merged patched"
    assert ctl.obj("configmaps/merged")["data"] == {"b": "2", "c": "3"}


def test_patch_json(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("jsonpatched", a="1"))
    ops = (
        '[{"op":"replace","path":"/data/a","value":"2"},{"op":"add","path":"/data/b","value":"x"}]'
    )
    ctl("patch", "configmap", "jsonpatched", "--type=json", "-p", ops)
    assert ctl.obj("configmaps/jsonpatched")["data"] == {"a": "2", "b": "x"}
    # a failed "test" op: the apiserver's generic 422, which kubectl prints as below
    bad = ctl.run(
        "patch",
        "configmap",
        "jsonpatched",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/data/a","value":"9"}]',
    )
    assert bad.code == 1 and bad.err.startswith("The request is invalid"), bad.err
    assert ctl.obj("configmaps/jsonpatched")["data"] == {"a": "2", "b": "x"}


def test_patch_strategic_merges_containers_by_name(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=deployment("smp"))
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"envoy:1"}]}}}}'
    ctl("patch", "deployment", "smp", "--type=strategic", "-p", patch)
    containers = ctl.obj("apis/apps/v1:deployments/smp")["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("side", "envoy:1"),
        ("c", "nginx:1.25"),
    ]


def test_patch_custom_resource_rejects_strategic(ctl: Ctl, widgets: str) -> None:
    """A custom resource takes merge and JSON patches; strategic is 415 (13b)."""
    ctl("apply", "-f", "-", stdin=widget("w-patch"))
    ctl("patch", "widget", "w-patch", "--type=merge", "-p", '{"spec":{"color":"green"}}')
    assert ctl.obj(f"apis/{GROUP}/v1:widgets/w-patch")["spec"]["color"] == "green"
    res = ctl.run("patch", "widget", "w-patch", "--type=strategic", "-p", '{"spec":{"color":"x"}}')
    # kubectl reads the 415 and names the patch types the server accepts
    assert res.code == 1 and "is not supported by" in res.err, res.err
    assert "application/merge-patch+json" in res.err
    assert ctl.obj(f"apis/{GROUP}/v1:widgets/w-patch")["spec"]["color"] == "green"


def test_set_image(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=deployment("imaged"))
    out = ctl("set", "image", "deployment/imaged", "c=nginx:1.27")
    assert out.strip() == "deployment.apps/imaged image updated"
    spec = ctl.obj("apis/apps/v1:deployments/imaged")["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "nginx:1.27"


def test_replace(ctl: Ctl) -> None:
    """Edit-free replace: get the object, change it, ``replace -f`` it (a PUT with the
    resourceVersion read: a stale one is a 409)."""
    ctl("create", "-f", "-", stdin=cm("replaced", a="1"))
    doc = json.loads(ctl("get", "configmap", "replaced", "-o", "json"))
    doc["data"] = {"a": "2"}
    assert ctl("replace", "-f", "-", stdin=json.dumps(doc)).strip() == "configmap/replaced replaced"
    assert ctl.obj("configmaps/replaced")["data"] == {"a": "2"}
    stale = ctl.run("replace", "-f", "-", stdin=json.dumps(doc))
    assert stale.code == 1 and "the object has been modified" in stale.err


def test_replace_force(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("forced", a="1"))
    uid = ctl.obj("configmaps/forced")["metadata"]["uid"]
    ctl("replace", "--force", "-f", "-", stdin=cm("forced", a="2"))
    obj = ctl.obj("configmaps/forced")
    assert obj["data"] == {"a": "2"} and obj["metadata"]["uid"] != uid


def test_label(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("labelled"))
    assert ctl("label", "configmap", "labelled", "tier=web").strip() == "configmap/labelled labeled"
    assert ctl.obj("configmaps/labelled")["metadata"]["labels"] == {"tier": "web"}
    refused = ctl.run("label", "configmap", "labelled", "tier=db")
    assert refused.code == 1 and "already has a value" in refused.err
    ctl("label", "configmap", "labelled", "tier=db", "--overwrite")
    ctl("label", "configmap", "labelled", "extra=1")
    ctl("label", "configmap", "labelled", "tier-")
    assert ctl.obj("configmaps/labelled")["metadata"]["labels"] == {"extra": "1"}


def test_annotate(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("annotated"))
    out = ctl("annotate", "configmap", "annotated", "note=hello")
    assert out.strip() == "configmap/annotated annotated"
    assert ctl.obj("configmaps/annotated")["metadata"]["annotations"] == {"note": "hello"}


# -- scale -----------------------------------------------------------------------------------


def test_scale_deployment(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=deployment("scaled"))
    out = ctl("scale", "deployment/scaled", "--replicas=3")
    assert out.strip() == "deployment.apps/scaled scaled"
    assert ctl.obj("apis/apps/v1:deployments/scaled")["spec"]["replicas"] == 3
    res = ctl.run("scale", "deployment/scaled", "--current-replicas=5", "--replicas=1")
    assert res.code == 1 and "Expected replicas to be 5, was 3" in res.err


def test_scale_custom_resource(ctl: Ctl, widgets: str) -> None:
    """The Widget CRD declares a scale subresource (spec.replicas)."""
    ctl("apply", "-f", "-", stdin=widget("w-scale", 1))
    out = ctl("scale", "widget/w-scale", "--replicas=4")
    assert out.strip() == f"widget.{GROUP}/w-scale scaled"
    assert ctl.obj(f"apis/{GROUP}/v1:widgets/w-scale")["spec"]["replicas"] == 4


# -- delete and cascades ----------------------------------------------------------------------


def _owner_with_dependents(ctl: Ctl, name: str) -> None:
    ctl("create", "-f", "-", stdin=deployment(name))
    owner = ctl.obj(f"apis/apps/v1:deployments/{name}")
    for i in range(2):
        ctl("create", "-f", "-", stdin=owned_cm(f"{name}-dep-{i}", owner))


def test_delete_cascade_background(ctl: Ctl) -> None:
    _owner_with_dependents(ctl, "bg")
    out = ctl("delete", "deployment", "bg", "--cascade=background")
    assert out.startswith('deployment.apps "bg" deleted')
    assert not ctl.exists("apis/apps/v1:deployments/bg")
    wait_for(
        lambda: not any(ctl.exists(f"configmaps/bg-dep-{i}") for i in range(2)),
        "the garbage collector to delete bg's dependents",
    )


def test_delete_cascade_foreground(ctl: Ctl) -> None:
    """kubectl waits until the owner is gone; with foreground its dependents went first."""
    _owner_with_dependents(ctl, "fg")
    ctl("delete", "deployment", "fg", "--cascade=foreground", timeout=40)
    assert not ctl.exists("apis/apps/v1:deployments/fg")
    assert not any(ctl.exists(f"configmaps/fg-dep-{i}") for i in range(2))


def test_delete_cascade_foreground_keeps_owner_until_dependents_go(ctl: Ctl) -> None:
    """While a dependent is held by a finalizer the owner stays, with the foregroundDeletion
    finalizer and a deletionTimestamp."""
    _owner_with_dependents(ctl, "held")
    ctl(
        "patch",
        "configmap",
        "held-dep-0",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["x/y"]}}',
    )
    ctl("delete", "deployment", "held", "--cascade=foreground", "--wait=false")
    owner = ctl.obj("apis/apps/v1:deployments/held")
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert owner["metadata"]["deletionTimestamp"]
    ctl(
        "patch", "configmap", "held-dep-0", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    ctl("wait", "--for=delete", "deployment/held", "--timeout=20s")
    assert not ctl.exists("configmaps/held-dep-0")


def test_delete_cascade_orphan(ctl: Ctl) -> None:
    _owner_with_dependents(ctl, "orph")
    ctl("delete", "deployment", "orph", "--cascade=orphan", timeout=40)
    assert not ctl.exists("apis/apps/v1:deployments/orph")
    for i in range(2):
        dep = ctl.obj(f"configmaps/orph-dep-{i}")
        assert "ownerReferences" not in dep["metadata"]


def test_delete_by_label(ctl: Ctl) -> None:
    for i in range(3):
        ctl("create", "-f", "-", stdin=pod(f"doomed-{i}", batch="doomed"))
    ctl("delete", "pods", "-l", "batch=doomed", "--grace-period=0", "--force", timeout=40)
    assert ctl("get", "pods", "-l", "batch=doomed", "-o", "name").strip() == ""


# -- wait, describe, explain, watch -----------------------------------------------------------


def test_wait_for_condition(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=pod("ready"))
    out = ctl("wait", "--for=condition=Ready", "pod/ready", "--timeout=20s")
    assert out.strip() == "pod/ready condition met"
    assert ctl.obj("pods/ready")["status"]["phase"] == "Running"


def test_wait_for_jsonpath(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=pod("phased"))
    out = ctl("wait", "--for=jsonpath={.status.phase}=Running", "pod/phased", "--timeout=20s")
    assert out.strip() == "pod/phased condition met"


def test_wait_for_delete(ctl: Ctl) -> None:
    """``wait --for=delete`` on an object held by a finalizer times out; once kubectl's
    watch is open (its -v=6 log shows it), releasing the finalizer ends the wait."""
    ctl("create", "-f", "-", stdin=cm("waited"))
    ctl("patch", "configmap", "waited", "--type=merge", "-p", '{"metadata":{"finalizers":["x/y"]}}')
    ctl("delete", "configmap", "waited", "--wait=false")
    assert ctl.obj("configmaps/waited")["metadata"]["deletionTimestamp"]
    held = ctl.run("wait", "--for=delete", "configmap/waited", "--timeout=1s")
    assert held.code == 1 and "timed out waiting for the condition" in held.err, held.err
    args = ("wait", "--for=delete", "configmap/waited", "--timeout=20s", "-v=6")
    with ctl.background(*args) as waiter:
        assert waiter.stderr is not None
        for line in waiter.stderr:
            if "watch=true" in line:
                break
        else:
            raise AssertionError("kubectl wait ended before it opened its watch")
        release = '{"metadata":{"finalizers":null}}'
        ctl("patch", "configmap", "waited", "--type=merge", "-p", release)
        out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err
    assert out.strip() == "configmap/waited condition met"
    assert not ctl.exists("configmaps/waited")


def test_describe_pod_with_events(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=pod("described"))
    ctl("wait", "--for=condition=Ready", "pod/described", "--timeout=20s")
    out = ctl("describe", "pod", "described")
    assert re.search(r"^Name:\s+described$", out, re.M)
    assert re.search(rf"^Namespace:\s+{ctl.ns}$", out, re.M)
    assert re.search(r"^Status:\s+Running$", out, re.M)
    events = out.split("Events:", 1)[1]
    assert "Scheduled" in events and f"Successfully assigned {ctl.ns}/described to node-0" in events
    assert "Started" in events


def test_describe_deployment(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=deployment("desc-dep", replicas=2))
    out = ctl("describe", "deployment", "desc-dep")
    assert re.search(r"^Selector:\s+app=desc-dep$", out, re.M)
    assert re.search(r"^Replicas:\s+2 desired", out, re.M)
    assert "nginx:1.25" in out


def test_explain_builtin(ctl: Ctl) -> None:
    out = ctl("explain", "pods.spec.containers.image")
    assert "KIND:" in out and "Pod" in out
    assert "image" in out and "<string>" in out
    assert "Container image name" in out


def test_explain_crd(ctl: Ctl, widgets: str) -> None:
    out = ctl("explain", "widgets.spec")
    assert "Widget" in out and "What the widget should be." in out
    assert "replicas" in out and "How many widgets." in out


def test_get_watch(ctl: Ctl) -> None:
    """``kubectl get -w`` prints the current objects, then the new one; stopped after."""
    ctl("create", "-f", "-", stdin=cm("watch-0"))
    with ctl.background("get", "configmaps", "-w", "--no-headers", "-o", "name") as watcher:
        assert watcher.stdout is not None
        seen: list[str] = []
        while "configmap/watch-0" not in seen:
            seen.append(watcher.stdout.readline().strip())
        ctl("create", "-f", "-", stdin=cm("watch-1"))
        while "configmap/watch-1" not in seen:
            line = watcher.stdout.readline()
            assert line, "kubectl get -w ended before the new ConfigMap showed"
            seen.append(line.strip())
    assert seen.index("configmap/watch-1") > seen.index("configmap/watch-0")


def test_get_watch_output_watch_events(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=cm("watched-events"))
    args = ("get", "configmap", "watched-events", "-w", "-o", "json", "--output-watch-events")
    with ctl.background(*args) as watcher:
        assert watcher.stdout is not None
        first = watcher.stdout.readline()
    event = json.loads(first)  # one event per line
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "watched-events"


# -- namespaces, nodes -------------------------------------------------------------------------


def test_namespace_create_and_delete_with_contents(ctl: Ctl) -> None:
    """A namespace being deleted is Terminating while its contents go (a ConfigMap held by a
    finalizer keeps it there); once the finalizer is removed, the content and the
    namespace are gone."""
    ns = f"{ctl.ns}-doomed"
    assert ctl.kubectl.check("create", "namespace", ns).strip() == f"namespace/{ns} created"
    ctl.kubectl.check("-n", ns, "create", "-f", "-", stdin=pod("inside"))
    ctl.kubectl.check("-n", ns, "create", "-f", "-", stdin=cm("held"))
    ctl.kubectl.check(
        "-n",
        ns,
        "patch",
        "configmap",
        "held",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["x/y"]}}',
    )
    ctl.kubectl.check("delete", "namespace", ns, "--wait=false")
    phase = ctl.kubectl.check("get", "namespace", ns, "-o", "jsonpath={.status.phase}")
    assert phase == "Terminating"
    refused = ctl.kubectl.call("-n", ns, "create", "-f", "-", stdin=cm("late"))
    assert refused.code == 1 and "because it is being terminated" in refused.err
    wait_for(lambda: not ctl.sim.exists(f"/api/v1/namespaces/{ns}/pods/inside"), "the pod to go")
    ctl.kubectl.check(
        "-n",
        ns,
        "patch",
        "configmap",
        "held",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    ctl.kubectl.check("wait", "--for=delete", f"namespace/{ns}", "--timeout=30s")
    assert not ctl.sim.exists(f"/api/v1/namespaces/{ns}")


def test_cordon_and_uncordon(ctl: Ctl) -> None:
    node = ctl.kubectl.check("get", "nodes", "-o", "name").split()[0]
    assert ctl.kubectl.check("cordon", node).strip() == f"{node} cordoned"
    assert ctl.sim.get(f"/api/v1/{node.replace('node/', 'nodes/')}")["spec"]["unschedulable"]
    assert ctl.kubectl.check("uncordon", node).strip() == f"{node} uncordoned"
    assert "unschedulable" not in ctl.sim.get(f"/api/v1/{node.replace('node/', 'nodes/')}")["spec"]


def test_rollout_restart(ctl: Ctl) -> None:
    ctl("create", "-f", "-", stdin=deployment("restarted"))
    out = ctl("rollout", "restart", "deployment/restarted")
    assert out.strip() == "deployment.apps/restarted restarted"
    template = ctl.obj("apis/apps/v1:deployments/restarted")["spec"]["template"]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]


def test_unserved_subresources_are_clean_errors(ctl: Ctl) -> None:
    """logs/exec are not served: kubectl reports the server's NotFound, nothing hangs."""
    ctl("create", "-f", "-", stdin=pod("nologs"))
    res = ctl.run("logs", "nologs")
    assert res.code == 1 and "NotFound" in res.err, res.err
    assert "Traceback" not in ctl.sim.log.read_text()
