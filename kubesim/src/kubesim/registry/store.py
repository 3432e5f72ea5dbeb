"""The apiserver's REST semantics over :mod:`._mvcc`: what each verb does to an object.

:class:`Api` is the in-process API of KubeSim. The HTTP layer (:mod:`._server`) parses a
request and calls one method here; tests and benchmarks may call the same methods directly
(e.g. to create 200k pods without 200k HTTP round trips). Every method is synchronous, so
one call is one atomic step of the simulated cluster, and raises :class:`KubeSimApiError` with the
body the real apiserver would send.

Semantics copied from kube-apiserver v1.28 (see ``tests/kubesim/conformance``): a global
resourceVersion per write; uid and creationTimestamp on create; generation bumped only when
the spec changes; the status subresource and the main resource each ignore the other's
part; writes that change nothing commit nothing; DELETE honours uid/resourceVersion
preconditions, finalizers (deletionTimestamp + MODIFIED, DELETED when the last one goes),
and graceful deletion of pods bound to a node.
"""

from __future__ import annotations

import base64
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from sys import intern
from typing import Any

import orjson

from kubesim.apiextensions.schema import custom_causes
from kubesim.apis.core.event.validation import (
    validate_event_create,
    validate_event_update,
)
from kubesim.apis.core.namespace import check_creatable
from kubesim.apis.core.pod.defaults import (
    admit_create,
    apply_defaults,
    default_status,
    status_kept_on_create,
)
from kubesim.controllers.apiservices import sync_apiservices
from kubesim.encoding import deepjson
from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError, PatchError, RvTooLarge
from kubesim.fieldmanager.managed import track_update
from kubesim.fieldmanager.patch import json_merge_patch, json_patch, strategic_merge_patch
from kubesim.fieldmanager.schemas import type_for
from kubesim.machinery.selectors import FieldSelector, LabelSelector, object_fields
from kubesim.machinery.validation import (
    Cause,
    invalid_message,
    spec_changed,
    uses_generation,
    validate_create,
    validate_update,
)
from kubesim.registry.conversion import to_storage, to_view
from kubesim.registry.deletion import DeleteOptions, DeleteOutcome, delete_object
from kubesim.registry.dryrun import dry_run, is_dry_run
from kubesim.registry.resource import (
    ResourceRegistry,
    ResourceType,
    resource_types_from_crd,
    validate_crd,
)
from kubesim.registry.strategy import (
    STATUS_SUBRESOURCES,
    managed_fields_subresource,
    prepare_create,
    prepare_status,
    prepare_update,
    should_delete_during_update,
)
from kubesim.server.decoding import decode_patched
from kubesim.server.limits import check_stored_size
from kubesim.storage.mvcc import Mvcc, Stored, TypeStore, exact_bytes

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_PATCH", "Api", "ListResult", "now_rfc3339"]

MERGE_PATCH = "application/merge-patch+json"
"""The Content-Type of a JSON merge patch (RFC 7386)."""
JSON_PATCH = "application/json-patch+json"
"""The Content-Type of a JSON patch (RFC 6902)."""
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
"""The Content-Type of a strategic merge patch (built-in kinds only): what
``Api.patch(rt, ns, name, STRATEGIC_PATCH, patch)`` and a PATCH request take."""
EXPIRED_CONTINUE_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
#: ``metadata.managedFields`` in wire form.
ManagedFields = list[dict[str, Any]]


@dataclass(slots=True)
class ListResult:
    """One page of a list: items in key order, the list RV, and paging metadata."""

    items: list[Stored]
    resource_version: int
    continue_token: str | None
    remaining: int | None


def encode_continue(rv: int, start: str) -> str:
    """The apiserver's continue token: base64url (no padding) of {"v","rv","start"}."""
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """Inverse of :func:`encode_continue`; ``start`` without its trailing NUL."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        rv, start = int(data["rv"]), str(data["start"])
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise KubeSimApiError.bad_request(f"invalid continue token: {exc!s}") from None
    return rv, start.rstrip("\x00")


class Api:
    """KubeSim's resources and verbs. See the module docstring for the contract."""

    def __init__(self, mvcc: Mvcc, registry: ResourceRegistry) -> None:
        self.mvcc = mvcc
        self.registry = registry
        self.call_soon: Callable[[float, Callable[[], None]], None] = lambda _d, fn: fn()
        self.crd_establish_delay = 0.05

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def type_name(rt: ResourceType) -> str:
        """The name of ``rt``'s storage: ``plural[.group]`` (a cohabiting type's is that of
        the type whose storage it shares)."""
        group = rt.stored_group
        return f"{rt.plural}.{group}" if group else rt.plural

    def store(self, rt: ResourceType) -> TypeStore:
        return self.mvcc.type_store(self.type_name(rt))

    @staticmethod
    def key(rt: ResourceType, namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if rt.namespaced else name

    def _encode(self, rt: ResourceType, obj: dict[str, Any]) -> bytes:
        """The stored form: compact JSON (built-in kinds without kind/apiVersion, which
        typed lists omit; custom resources with sorted keys, as unstructured encodes)."""
        if rt.custom:
            raw = deepjson.dumps(obj, sort_keys=True)
        else:
            obj.pop("kind", None)
            obj.pop("apiVersion", None)
            raw = deepjson.dumps(obj)
        return exact_bytes(raw)

    def view(self, rt: ResourceType, stored: Stored) -> dict[str, Any]:
        """``stored`` decoded, in the form ``rt`` serves (:func:`._events.to_view`)."""
        return to_view(rt, stored.decode())

    def _stored(self, rt: ResourceType, obj: dict[str, Any], rv: int) -> Stored:
        """``obj`` (in ``rt``'s form or already in the stored form) encoded at revision ``rv``
        (0: without a resourceVersion, a dry-run create)."""
        obj = to_storage(rt, obj)
        meta = obj["metadata"]
        if rv:
            meta["resourceVersion"] = str(rv)
        else:
            meta.pop("resourceVersion", None)
        ns = meta.get("namespace", "") if rt.namespaced else ""
        labels = {intern(k): intern(v) for k, v in (meta.get("labels") or {}).items()}
        # interned, and "" left out (a missing field reads as ""): ~1 KB less per pod
        fields = {
            k: intern(v)
            for k, v in object_fields(
                rt.plural, rt.stored_group, obj, namespaced=rt.namespaced
            ).items()
            if v
        }
        raw = self._encode(rt, obj)
        key = self.key(rt, ns, meta["name"])
        check_stored_size(raw, key)
        return Stored(key, ns, rv, raw, meta.get("uid", ""), labels, fields)

    def _require(self, rt: ResourceType, namespace: str | None, name: str) -> Stored:
        cur = self.store(rt).get(self.key(rt, namespace, name))
        if cur is None:
            raise KubeSimApiError.not_found(rt.plural, rt.stored_group, name)
        return cur

    def _invalid(self, rt: ResourceType, name: str, causes: list[Cause]) -> KubeSimApiError:
        return KubeSimApiError.invalid(
            rt.kind,
            rt.stored_group,  # qualified by the storage's resource, as the registry does
            name,
            invalid_message(rt.kind, name, causes, rt.stored_group),
            [c.to_dict() for c in causes],
        )

    # -- reads ---------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Stored:
        """The current object, or 404."""
        return self._require(rt, namespace, name)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: LabelSelector | None = None,
        field_selector: FieldSelector | None = None,
        resource_version: str = "",
        match: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        """A list as the apiserver serves it (see the conformance transcripts 01-05).

        ``resource_version`` "" is a consistent read at the current revision (pageable);
        "0" serves the cache and ignores ``limit``; N with ``match`` "NotOlderThan" (or no
        match) needs the store at least at N (else :class:`RvTooLarge`, which the HTTP layer
        turns into the recorded 504 after waiting); N with "Exact" is the state at N
        (pageable; 410 once compacted).
        """
        ts = self.store(rt)
        mvcc = self.mvcc
        at_rv: int | None = None
        start_after: str | None = None
        pageable = True
        if continue_token:
            token_rv, start = decode_continue(continue_token)
            if token_rv == -1:  # the "inconsistent" token of an expired continue: read now
                at_rv = None
            elif token_rv < mvcc.compacted_rv:
                raise KubeSimApiError.expired(EXPIRED_CONTINUE_MESSAGE, encode_continue(-1, start))
            else:
                at_rv = token_rv
            start_after = f"{namespace}/{start}" if rt.namespaced and namespace else start
        elif resource_version == "0":
            pageable = False
        elif resource_version:
            rv = _parse_rv(resource_version)
            if match == "Exact":
                if rv > mvcc.rv:
                    raise KubeSimApiError.internal(
                        "etcdserver: mvcc: required revision is a future revision"
                    )
                if rv < mvcc.compacted_rv or (rv < ts.floor_rv and ts.evicted):
                    raise KubeSimApiError.expired(
                        "The resourceVersion for the provided list is too old."
                    )
                at_rv = rv
            else:
                if rv > mvcc.rv:
                    raise RvTooLarge(rv)
                pageable = False
        list_rv = at_rv if at_rv is not None else mvcc.rv
        lsel = label_selector if label_selector is not None and not label_selector.empty else None
        fsel = field_selector if field_selector is not None and not field_selector.empty else None

        items: list[Stored] = []
        want = limit if (pageable and limit > 0) else 0
        it = ts.iter_sorted(namespace, start_after, at_rv)
        more = False
        for obj in it:
            if lsel is not None and not lsel.matches(obj.labels):
                continue
            if fsel is not None and not fsel.matches(obj.fields):
                continue
            if want and len(items) == want:
                more = True
                break
            items.append(obj)
        if not more:
            return ListResult(items, list_rv, None, None)
        last = items[-1]
        start_key = last.key.split("/", 1)[1] if rt.namespaced and namespace else last.key
        token = encode_continue(list_rv, start_key)
        remaining: int | None = None
        if lsel is None and fsel is None:
            remaining = ts.count_after(namespace, last.key, at_rv)
        return ListResult(items, list_rv, token, remaining)

    # -- writes --------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Mapping[str, Any],
        *,
        manager: str = "kubesim",
        keep_status: bool = False,
        managed_fields: ManagedFields | None = None,
    ) -> Stored:
        """POST: validate, default, stamp metadata and commit; 409 if the name is taken.
        ``managed_fields`` replaces the Update entry the write would record (apply)."""
        obj = _clone(body)
        meta = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = meta
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise KubeSimApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choices(_NAME_SUFFIX_ALPHABET, k=5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        if rt.has_status and not keep_status and not status_kept_on_create(rt):
            obj.pop("status", None)
        causes = validate_event_create(rt, obj) or (
            validate_create(rt, obj) + custom_causes(rt, obj)
        )
        if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
            causes = causes + validate_crd(obj)
        if causes:
            raise self._invalid(rt, str(meta.get("name", "")), causes)
        ts = self.store(rt)
        name = meta["name"]
        check_creatable(self, rt, namespace, name)
        if (taken := ts.get(self.key(rt, namespace, name))) is not None:
            err = KubeSimApiError.already_exists(rt.plural, rt.stored_group, name)
            if b'"deletionTimestamp"' in taken.raw:  # the registry says why the name is taken
                err.body["message"] = f"object is being deleted: {err.body['message']}"
            raise err
        status = obj.get("status") if keep_status else None
        meta["uid"] = str(uuid.uuid4())  # before the strategy: a Job's selector names it
        apply_defaults(rt, obj)
        if causes := prepare_create(rt, obj, lambda: (o.decode() for o in ts.objects.values())):
            raise self._invalid(rt, name, causes)
        if status is not None:
            obj["status"] = status
        else:
            admit_create(rt, obj)
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(k, None)
        meta["creationTimestamp"] = now_rfc3339()
        if uses_generation(rt):
            meta["generation"] = 1
        obj = _reorder(obj, rt)
        if managed_fields is None:
            managed_fields = track_update(
                type_for(rt, self.mvcc), rt, None, obj, manager, request=body
            )
        _put_managed(obj["metadata"], managed_fields)
        if is_dry_run():
            return self._stored(rt, obj, 0)
        stored = self._stored(rt, obj, self.mvcc.next_rv())
        ts.commit(stored.key, stored)
        if rt.plural == "customresourcedefinitions" and rt.group == "apiextensions.k8s.io":
            self.call_soon(self.crd_establish_delay, lambda: self._establish_crd(name))
        return stored

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        *,
        subresource: str | None = None,
        manager: str = "kubesim",
    ) -> Stored:
        """PUT (of the object or its status). 409 on a stale resourceVersion; a write that
        changes nothing returns the stored object and commits nothing. Custom resources
        require the resourceVersion (422 without it), built-in kinds update unconditionally."""
        cur = self._require(rt, namespace, name)
        new = _clone(body)
        new_meta = new.get("metadata")
        if not isinstance(new_meta, dict):
            raise KubeSimApiError.bad_request("Object 'metadata' is missing or not an object")
        if new_meta.get("name") not in (None, name):
            raise KubeSimApiError.bad_request(
                "the name of the object "
                f"({new_meta.get('name')}) does not match the name on the URL ({name})"
            )
        rv = new_meta.get("resourceVersion")
        if rv:
            if str(rv) != str(cur.rv):
                raise KubeSimApiError.conflict(rt.plural, rt.stored_group, name)
        elif rt.custom:
            cause = Cause(
                "FieldValueInvalid",
                "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion",
            )
            raise self._invalid(rt, name, [cause])
        return self._write(rt, cur, new, subresource, manager)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        manager: str = "kubesim",
    ) -> Stored:
        """PATCH with a JSON merge patch, a JSON patch, or (built-in kinds only) a
        strategic merge patch; then the same rules as :meth:`update`. A resourceVersion in
        the patch is a precondition (409 when stale)."""
        ctype = content_type.split(";", 1)[0].strip().lower()
        if ctype not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH) or (
            ctype == STRATEGIC_PATCH and rt.custom
        ):
            raise KubeSimApiError.unsupported_patch(rt.custom)
        cur = self._require(rt, namespace, name)
        obj = self.view(rt, cur)
        obj.setdefault("apiVersion", rt.api_version)
        obj.setdefault("kind", rt.kind)
        try:
            if ctype == MERGE_PATCH:
                if not isinstance(patch, dict):
                    raise PatchError("json: cannot unmarshal array into Go value", 400)
                new = json_merge_patch(obj, patch)
            elif ctype == JSON_PATCH:
                new = json_patch(obj, patch)
            else:
                new = strategic_merge_patch(obj, patch, rt.kind)
        except PatchError as exc:
            raise KubeSimApiError(exc.code, exc.status()) from None
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise KubeSimApiError.bad_request("the patch produced an object without metadata")
        patch_rv = (
            (patch.get("metadata") or {}).get("resourceVersion")
            if isinstance(patch, dict)
            else None
        )
        if patch_rv and str(patch_rv) != str(cur.rv):
            raise KubeSimApiError.conflict(rt.plural, rt.stored_group, name)
        new = decode_patched(rt, new)
        # the merges copy their target, so ``obj`` is still the stored state: no decode again
        return self._write(rt, cur, new, subresource, manager, old=obj)

    def _write(
        self,
        rt: ResourceType,
        cur: Stored,
        new: dict[str, Any],
        subresource: str | None,
        manager: str,
        *,
        old: dict[str, Any] | None = None,
        managed_fields: ManagedFields | None = None,
    ) -> Stored:
        """The common tail of update and patch: keep what the client may not change,
        validate, bump generation on spec changes, skip no-ops, handle the last finalizer.
        ``old`` is ``cur`` decoded, if the caller has it (read, never changed, here).
        ``managed_fields`` replaces the Update tracking (apply; then a change of
        managedFields alone is a write)."""
        if old is None:
            old = self.view(rt, cur)
        old_meta = old["metadata"]
        name = old_meta["name"]
        requested: Any = None
        if subresource in STATUS_SUBRESOURCES:
            # everything but the status from the stored state: only the top level and the
            # metadata are changed below (``_reorder`` makes both anew), so they are shared
            merged = dict(old)
            merged["metadata"] = dict(old_meta)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
            default_status(rt, new)
            if causes := prepare_status(rt, old, new, subresource):
                raise self._invalid(rt, name, causes)
        else:
            new_meta = new["metadata"]
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            # metadata the client cannot change through an update (managedFields it may
            # replace: the field manager starts from them)
            requested = new_meta.get("managedFields")
            new_meta["name"] = name
            if rt.namespaced:
                new_meta["namespace"] = old_meta.get("namespace")
            for k in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "managedFields",
            ):
                if k in old_meta:
                    new_meta[k] = old_meta[k]
                else:
                    new_meta.pop(k, None)
            new["apiVersion"] = rt.api_version
            new["kind"] = rt.kind
            causes = prepare_update(rt, old, new, subresource)
            apply_defaults(rt, new, creating=False)
            causes += validate_update(rt, old, new) + validate_event_update(rt, old, new)
            if causes:
                raise self._invalid(rt, name, causes)
        if rt.custom and (causes := custom_causes(rt, new)):
            raise self._invalid(rt, name, causes)
        old.setdefault("apiVersion", rt.api_version)
        old.setdefault("kind", rt.kind)
        new_meta = new["metadata"]
        new_meta["resourceVersion"] = old_meta.get("resourceVersion")
        if (
            subresource not in STATUS_SUBRESOURCES
            and uses_generation(rt)
            and spec_changed(rt, old, new)
        ):
            new_meta["generation"] = int(old_meta.get("generation", 1)) + 1
        new = _reorder(to_view(rt, to_storage(rt, new)), rt)  # as the Go types marshal it
        if managed_fields is None:
            if _same(old, new) and requested in (None, [], old_meta.get("managedFields")):
                return cur
            managed_fields = track_update(
                type_for(rt, self.mvcc),
                rt,
                old,
                new,
                manager,
                managed_fields_subresource(subresource) or "",
                requested,
            )
        elif _same(old, new) and managed_fields == (old_meta.get("managedFields") or []):
            return cur
        _put_managed(new["metadata"], managed_fields)
        if should_delete_during_update(rt, old, new):
            # the last finalizer went: the object goes, and DELETED shows its last stored state
            if not is_dry_run():
                self.store(rt).commit(cur.key, None)
            new_meta["resourceVersion"] = str(cur.rv)
            raw = self._encode(rt, to_storage(rt, new))
            return Stored(cur.key, cur.namespace, cur.rv, raw, cur.uid, cur.labels, cur.fields)
        if is_dry_run():
            return self._stored(rt, new, cur.rv)
        stored = self._stored(rt, new, self.mvcc.next_rv())
        self.store(rt).commit(stored.key, stored)
        return stored

    def bind(self, namespace: str, name: str, node: str) -> Stored:
        """POST pods/NAME/binding: set spec.nodeName once, with a PodScheduled condition."""
        rt = self.registry.lookup("", "v1", "pods")
        assert rt is not None
        cur = self._require(rt, namespace, name)
        obj = cur.decode()
        spec = obj.setdefault("spec", {})
        if spec.get("nodeName"):
            msg = (
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                f'already assigned to node "{spec["nodeName"]}"'
            )
            raise KubeSimApiError(
                409, {**KubeSimApiError.conflict("pods/binding", "", name).body, "message": msg}
            )
        spec["nodeName"] = node
        status = obj.setdefault("status", {})
        conds = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
        conds.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        status["conditions"] = conds
        obj["status"] = {k: status[k] for k in ("phase", "conditions") if k in status} | status
        if is_dry_run():
            return self._stored(rt, obj, cur.rv)
        stored = self._stored(rt, obj, self.mvcc.next_rv())
        self.store(rt).commit(stored.key, stored)
        return stored

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        options: DeleteOptions | Mapping[str, Any] | None = None,
    ) -> DeleteOutcome:
        """DELETE, as :mod:`._deletion` describes; ``options`` a :class:`DeleteOptions` or
        the DeleteOptions fields as a mapping (in-process callers)."""
        opts = DeleteOptions.of(options)
        with dry_run(opts.dry_run or is_dry_run()):
            return delete_object(self, rt, namespace, name, opts)

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: LabelSelector | None = None,
        field_selector: FieldSelector | None = None,
        options: DeleteOptions | Mapping[str, Any] | None = None,
    ) -> ListResult:
        """DELETE on a collection: deletes what the selectors match (each as :meth:`delete`
        with the same options), answers the list of what was there (at the revision before
        the deletions)."""
        opts = DeleteOptions.of(options)
        page = self.list(
            rt, namespace, label_selector=label_selector, field_selector=field_selector
        )
        for obj in page.items:
            name = obj.key.rsplit("/", 1)[-1]
            if self.store(rt).get(obj.key) is not None:
                self.delete(rt, namespace or obj.namespace, name, opts)
        return page

    # -- lifecycle of namespaces and CRDs --------------------------------------------------

    def _establish_crd(self, name: str) -> None:
        crd_rt = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crd_rt is not None
        ts = self.store(crd_rt)
        cur = ts.get(name)
        if cur is None:
            return
        crd = cur.decode()
        for new_rt in resource_types_from_crd(crd):
            self.registry.add(new_rt)
            self.store(new_rt)
        now = now_rfc3339()
        spec_names = crd.get("spec", {}).get("names", {})
        crd["status"] = {
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                },
                {
                    "type": "Established",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ],
            "acceptedNames": spec_names,
            "storedVersions": [
                v["name"] for v in crd.get("spec", {}).get("versions", []) if v.get("storage")
            ],
        }
        stored = self._stored(crd_rt, crd, self.mvcc.next_rv())
        ts.commit(stored.key, stored)
        sync_apiservices(self)

    def _after_delete(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt.plural == "customresourcedefinitions" and rt.group == "apiextensions.k8s.io":
            for gone in resource_types_from_crd(obj):
                ts = self.mvcc.types.get(self.type_name(gone))
                if ts is not None:
                    for key in list(ts.keys):
                        ts.commit(key, None)
                self.registry.remove(gone.group, gone.version, gone.plural)
                dropped = self.mvcc.drop_type(self.type_name(gone))
                if dropped is not None:
                    dropped.wake()
            sync_apiservices(self)

    def served(self, rt: ResourceType) -> bool:
        """Whether ``rt`` is still served (a CRD may have gone since it was looked up)."""
        return self.registry.lookup(rt.group, rt.version, rt.plural) is not None

    def watch_start(self, rt: ResourceType) -> tuple[TypeStore, int]:
        """The type's store and the sequence number a watch starting now begins at."""
        ts = self.store(rt)
        return ts, ts.next_seq


def _parse_rv(value: str) -> int:
    try:
        rv = int(value)
        if rv < 0 or not value.isdigit():
            raise ValueError
    except ValueError:
        raise KubeSimApiError.internal(
            f'resourceVersion: Invalid value: "{value}": strconv.ParseUint: parsing '
            f'"{value}": invalid syntax'
        ) from None
    return rv


parse_rv = _parse_rv


def _clone(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON document (an order of magnitude faster than copy.deepcopy)."""
    out: dict[str, Any] = deepjson.loads(deepjson.dumps(value))
    return out


_IGNORED_IN_COMPARE = ("resourceVersion", "managedFields")


def _put_managed(meta: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether an update changes nothing that matters (metadata RV and managedFields aside)."""
    if old.keys() != new.keys():
        return False
    for k, v in old.items():
        if k == "metadata":
            om = {a: b for a, b in v.items() if a not in _IGNORED_IN_COMPARE}
            nm = {a: b for a, b in new[k].items() if a not in _IGNORED_IN_COMPARE}
            if om != nm:
                return False
        elif new[k] != v:
            return False
    return True


_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def _reorder(obj: dict[str, Any], rt: ResourceType) -> dict[str, Any]:
    """Key order as the apiserver encodes typed objects: kind, apiVersion, metadata (fields
    in Go struct order), spec, status, the rest. Custom resources are sorted on encoding."""
    if rt.custom:
        return obj
    meta = obj.get("metadata", {})
    ordered_meta = {k: meta[k] for k in _META_ORDER if k in meta}
    ordered_meta.update({k: v for k, v in meta.items() if k not in ordered_meta})
    out: dict[str, Any] = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": ordered_meta}
    for k, v in obj.items():
        if k not in out:
            out[k] = v
    return out


def random_token() -> str:
    """A fresh bearer token (URL-safe, 43 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes + uuid.uuid4().bytes).decode().rstrip("=")
