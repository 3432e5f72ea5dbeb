"""The read/write client over real HTTP against KubeSim: every verb, answers as KubeObjects,
errors from the one tree, write hooks around every write, finalizers and create-or-update."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from aioinformer import (
    AlreadyExists,
    Client,
    ConfigError,
    Conflict,
    Invalid,
    KubeObject,
    NotFound,
    NotOwner,
    WriteRequest,
    merge_diff,
    owner_reference,
)
from aioinformer.testing import KubeSim


def cm(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data or {"v": "1"},
    }


@pytest.fixture
async def client(sim: KubeSim) -> AsyncIterator[Client]:
    async with sim.api_client() as api:
        yield Client(api, field_manager="tests")


async def test_create_get_update_patch_delete(sim: KubeSim, client: Client) -> None:
    made = await client.create(cm("a"))
    assert isinstance(made, KubeObject) and made.key == "default/a" and made.rv > 0
    assert sim.get("configmaps", "a", "default")["data"] == {"v": "1"}
    got = await client.get("v1", "ConfigMap", "a", "default")
    assert got.rv == made.rv and got.field("data") == {"v": "1"}

    body = got.to_dict()
    body["data"] = {"v": "2"}
    updated = await client.update(body)
    assert updated.rv > got.rv and updated.field("data.v") == "2"
    with pytest.raises(Conflict) as stale:  # conditional on the resourceVersion read
        await client.update(got.to_dict())
    assert stale.value.code == 409 and stale.value.name == "a" and "modified" in str(stale.value)

    merged = await client.patch(updated, {"data": {"w": "3"}})
    assert merged.field("data") == {"v": "2", "w": "3"}
    jsoned = await client.patch(merged, [{"op": "remove", "path": "/data/w"}], type="json")
    assert jsoned.field("data") == {"v": "2"}
    strategic = await client.patch(jsoned, {"metadata": {"labels": {"l": "x"}}}, type="strategic")
    assert strategic.labels == {"l": "x"}

    assert await client.delete(strategic) is None  # gone at once: the Status answer is None
    with pytest.raises(NotFound):
        await client.get("v1", "ConfigMap", "a", "default")
    assert await client.delete(strategic, missing_ok=True) is None
    with pytest.raises(NotFound) as missing:
        await client.delete(strategic)
    assert missing.value.verb == "delete" and missing.value.resource == "configmaps"


async def test_list_reads_the_server_page_by_page_with_selectors(
    sim: KubeSim, client: Client
) -> None:
    sim.create("namespaces", {"metadata": {"name": "other"}})
    for i in range(1203):  # more than two pages of 500
        body = cm(f"m{i}", n=str(i))
        body["metadata"]["labels"] = {"even": "true" if i % 2 == 0 else "false"}
        sim.create("configmaps", body, "default")
    await client.create(cm("elsewhere", "other"))
    listed = await client.list("v1", "ConfigMap", "default")
    assert sorted(o.name for o in listed) == sorted(f"m{i}" for i in range(1203))
    assert all(isinstance(o, KubeObject) and o.kind == "ConfigMap" for o in listed)
    everywhere = await client.list("v1", "ConfigMap")
    assert {o.key for o in everywhere} >= {"default/m0", "other/elsewhere"}
    evens = await client.list("v1", "ConfigMap", "default", label_selector="even=true")
    assert len(evens) == 602 and all(o.labels["even"] == "true" for o in evens)
    one = await client.list("v1", "ConfigMap", "default", field_selector="metadata.name=m7")
    assert [o.field("data.n") for o in one] == ["7"]
    nodes = await client.list("v1", "Node", "default")  # cluster-scoped: the namespace is moot
    assert nodes == []
    with pytest.raises(ConfigError, match="no kind 'Nope' in v1"):
        await client.list("v1", "Nope")


async def test_errors_are_the_trees(sim: KubeSim, client: Client) -> None:
    await client.create(cm("dup"))
    with pytest.raises(AlreadyExists) as exists:
        await client.create(cm("dup"))
    assert exists.value.code == 409 and exists.value.reason == "AlreadyExists"
    assert not isinstance(exists.value, Conflict)
    bad = cm("Not_A_Name")
    with pytest.raises(Invalid) as invalid:
        await client.create(bad)
    assert invalid.value.causes and invalid.value.causes[0].field == "metadata.name"
    with pytest.raises(ConfigError, match="namespaced"):
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    with pytest.raises(ConfigError, match="no kind 'Nope' in v1"):
        await client.create({"apiVersion": "v1", "kind": "Nope", "metadata": {"name": "x"}})


async def test_delete_precondition_spares_a_newer_object_of_the_same_name(
    sim: KubeSim, client: Client
) -> None:
    old = await client.create(cm("p"))
    await client.delete(old)
    newer = await client.create(cm("p"))
    with pytest.raises(Conflict, match="precondition"):
        await client.delete(old)  # the uid of the one we meant: the newer one stays
    assert sim.get("configmaps", "p", "default")["metadata"]["uid"] == newer.uid
    assert await client.delete(old, precondition=False) is None


async def test_status_subresource(sim: KubeSim, client: Client) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    made = await client.create(pod)
    patched = await client.patch_status(made, {"status": {"phase": "Running"}})
    assert patched.field("status.phase") == "Running"
    body = patched.to_dict()
    body["status"]["phase"] = "Succeeded"
    body["spec"]["activeDeadlineSeconds"] = 5  # spec is ignored on /status
    updated = await client.update_status(body)
    assert updated.field("status.phase") == "Succeeded"
    assert updated.field("spec.activeDeadlineSeconds") is None


async def test_create_with_an_owner_sets_the_controller_reference(
    sim: KubeSim, client: Client
) -> None:
    owner = await client.create(cm("owner"))
    child = await client.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "child"}}, owner=owner
    )
    assert child.namespace == "default"  # the owner's namespace
    ref = child.controller_ref
    assert ref is not None and (ref.kind, ref.name, ref.uid) == ("ConfigMap", "owner", owner.uid)
    assert ref.block_owner_deletion
    assert owner_reference(owner)["apiVersion"] == "v1"
    with pytest.raises(ConfigError, match="share a namespace"):
        await client.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "x", "namespace": "kube-system"},
            },
            owner=owner,
        )
    with pytest.raises(ConfigError, match="uid"):
        owner_reference({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}})


async def test_create_or_update_and_create_or_patch(sim: KubeSim, client: Client) -> None:
    def mutate(body: dict[str, Any]) -> None:
        body.setdefault("data", {})["k"] = "wanted"

    obj, op = await client.create_or_update(cm("cou"), mutate)
    assert op == "created" and obj.field("data.k") == "wanted"
    again, op = await client.create_or_update(cm("cou"), mutate)
    assert op == "unchanged" and again.rv == obj.rv
    sim.patch("configmaps", "cou", {"data": {"k": "drifted", "other": "kept"}}, "default")
    fixed, op = await client.create_or_patch(cm("cou"), mutate)
    assert op == "updated" and fixed.field("data") == {"v": "1", "k": "wanted", "other": "kept"}
    assert merge_diff({"a": 1, "b": {"c": 1, "d": 2}}, {"b": {"c": 1, "d": 3}, "e": 4}) == {
        "a": None,
        "b": {"d": 3},
        "e": 4,
    }


async def test_finalizers_are_added_and_removed_safely(sim: KubeSim, client: Client) -> None:
    obj = await client.create(cm("fin"))
    with_f = await client.ensure_finalizer(obj, "example.com/cleanup")
    assert with_f.finalizers == ("example.com/cleanup",)
    assert (await client.ensure_finalizer(with_f, "example.com/cleanup")).rv == with_f.rv
    sim.patch("configmaps", "fin", {"data": {"moved": "on"}}, "default")  # our copy is stale now
    both = await client.ensure_finalizer(with_f, "example.com/other")  # re-read on the conflict
    assert set(both.finalizers) == {"example.com/cleanup", "example.com/other"}
    lingering = await client.delete(both)
    assert lingering is not None and lingering.deletion_timestamp is not None
    left = await client.remove_finalizer(lingering, "example.com/cleanup")
    assert left is not None and left.finalizers == ("example.com/other",)
    last = await client.remove_finalizer(left, "example.com/other")
    assert last is not None and last.finalizers == ()  # its final state: then it is gone
    assert await client.remove_finalizer(last, "example.com/other") is not None  # nothing to do
    with pytest.raises(NotFound):
        await client.get("v1", "ConfigMap", "fin", "default")


async def test_write_hooks_see_every_write_and_may_refuse_it(sim: KubeSim, client: Client) -> None:
    seen: list[tuple[str, str, str | None]] = []

    class Hook:
        refuse = False

        async def before(self, request: WriteRequest) -> object:
            if self.refuse:
                raise NotOwner("refused", request.name or "")
            return request.verb

        late_refusal = False

        def check(self, request: WriteRequest, token: object) -> None:
            seen.append(("check", str(token), request.name))
            if self.late_refusal:  # (the key was lost between building and sending)
                raise NotOwner("lost meanwhile", request.name or "")

        async def after(
            self, request: WriteRequest, result: KubeObject | None, token: object
        ) -> None:
            seen.append(("after", str(token), None if result is None else result.name))

        def failed(self, request: WriteRequest, error: BaseException, token: object) -> None:
            seen.append(("failed", str(token), type(error).__name__))

    hook = Hook()
    client.hooks.append(hook)
    made = await client.create(cm("h"))
    with pytest.raises(AlreadyExists):
        await client.create(cm("h"))
    await client.create(cm("dry"), dry_run=True)  # a dry run changes nothing: no hooks
    await client.delete(made)
    assert seen == [
        ("check", "create", "h"),  # right before the request's bytes went out
        ("after", "create", "h"),
        ("check", "create", "h"),
        ("failed", "create", "AlreadyExists"),
        ("check", "delete", "h"),
        ("after", "delete", None),
    ]
    hook.refuse = True
    with pytest.raises(NotOwner):
        await client.create(cm("refused"))
    with pytest.raises(NotFound):
        await client.get("v1", "ConfigMap", "refused", "default")  # never sent
    hook.refuse, hook.late_refusal = False, True
    with pytest.raises(NotOwner, match="lost meanwhile"):
        await client.create(cm("refused-late"))
    assert seen[-1] == ("failed", "create", "NotOwner")
    with pytest.raises(NotFound):
        await client.get("v1", "ConfigMap", "refused-late", "default")  # never sent either


async def test_server_side_apply_owns_fields_and_reports_conflicts(
    sim: KubeSim, client: Client
) -> None:
    wanted = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "namespace": "default"},
        "data": {"key": "a"},
    }
    made = await client.apply(wanted)
    assert made.field("data") == {"key": "a"}
    managers = {e["manager"]: e["operation"] for e in made.to_dict()["metadata"]["managedFields"]}
    assert managers == {"tests": "Apply"}
    again = await client.apply(wanted)
    assert again.rv == made.rv  # nothing changed: no write
    other = {**wanted, "data": {"key": "b"}}
    with pytest.raises(Conflict) as conflict:
        await client.apply(other, field_manager="someone-else")
    assert conflict.value.causes[0].reason == "FieldManagerConflict"
    assert conflict.value.causes[0].field == ".data.key"
    forced = await client.apply(other, field_manager="someone-else", force=True)
    assert forced.field("data.key") == "b"


async def test_apply_with_an_owner_and_managers_that_share_an_object(
    sim: KubeSim, client: Client
) -> None:
    """``apply(owner=...)`` sets the controller reference (and the owner's namespace); two
    managers each apply their own key of one ConfigMap, and one that applies without its
    key withdraws it, leaving the other's."""
    owner = await client.create(cm("owner"))
    shared = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}
    mine = await client.apply({**shared, "data": {"a": "1"}}, owner=owner, field_manager="a")
    assert mine.namespace == "default" and mine.controller_ref is not None
    assert (mine.controller_ref.kind, mine.controller_ref.uid) == ("ConfigMap", owner.uid)
    both = await client.apply({**shared, "data": {"b": "2"}}, owner=owner, field_manager="b")
    assert both.field("data") == {"a": "1", "b": "2"}
    withdrawn = await client.apply({**shared, "data": {}}, owner=owner, field_manager="a")
    assert withdrawn.field("data") == {"b": "2"}
    assert [r.uid for r in withdrawn.owner_references] == [owner.uid]  # one ref, shared
