"""The generic store: the apiserver's REST semantics over storage, for every resource type.

:class:`Api` is the in-process API of KubeSim and what kube-apiserver's
``registry/generic/registry.Store`` is to it: the one implementation of the verbs every type
plugs into. The HTTP layer parses a request and calls one method here; tests and benchmarks
may call the same methods directly (e.g. to create 200k pods without 200k HTTP round trips).
Every method is synchronous, so one call is one atomic step of the simulated cluster, and
raises :class:`~kubesim.errors.KubeSimApiError` with the body the real apiserver would send.

Semantics copied from kube-apiserver v1.28 (see ``tests/kubesim/conformance``): a global
resourceVersion per write; uid and creationTimestamp on create; generation bumped only when
the spec changes (for the kinds that keep one); the status subresource and the main resource
each ignore the other's part; writes that change nothing commit nothing; managedFields kept
by the field manager. What one kind does differently, its strategy does
(``rt.strategy``, a :class:`~kubesim.registry.resource.Strategy`), at the points its
docstring lists. What an update keeps and checks is
:mod:`kubesim.registry.update`; the stored form :mod:`kubesim.registry.stored`; DELETE
:mod:`kubesim.registry.deletion`; lists :mod:`kubesim.registry.listing`.

A kind whose objects define types (a CRD) gets them served a moment after its create
(``establish_delay`` seconds on the event loop, at once before KubeSim serves) and no more
once it is deleted; the listeners of :attr:`Api.on_served_changed` hear of both.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.managed import track_update
from kubesim.fieldmanager.patching import apply_patch, patch_type
from kubesim.machinery.fields import FieldSelector
from kubesim.machinery.labels import LabelSelector
from kubesim.machinery.shards import ShardSelector
from kubesim.machinery.validation import Cause
from kubesim.registry.admission import check_creatable
from kubesim.registry.context import current_write
from kubesim.registry.deletion import DeleteOptions, DeleteOutcome, delete_object
from kubesim.registry.dryrun import dry_run, is_dry_run
from kubesim.registry.listing import ListResult, list_page
from kubesim.registry.objects import (
    clone,
    invalid_object,
    managed_fields_subresource,
    put_managed,
    reorder,
    same,
    type_for,
)
from kubesim.registry.resource import ResourceType
from kubesim.registry.stored import encode, etcd_key, storage_key, to_stored
from kubesim.registry.types import ResourceRegistry
from kubesim.registry.update import deleted_by_update, updated_object
from kubesim.storage.mvcc import Mvcc, Stored, TypeStore

__all__ = ["Api"]

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
#: ``metadata.managedFields`` in wire form.
ManagedFields = list[dict[str, Any]]


class Api:
    """KubeSim's resources and verbs. See the module docstring for the contract.

    Args:
        mvcc: the storage the objects live in.
        registry: the types served (custom types are added and removed here).
    """

    def __init__(self, mvcc: Mvcc, registry: ResourceRegistry) -> None:
        self.mvcc = mvcc
        self.registry = registry
        #: ``call_soon(delay, fn)``: run ``fn`` later (KubeSim sets the event loop's);
        #: until then at once.
        self.call_soon: Callable[[float, Callable[[], None]], None] = lambda _d, fn: fn()
        #: seconds from the create of a CRD to its types being served
        self.establish_delay = 0.05
        #: called after the set of served types changed (a CRD established or gone)
        self.on_served_changed: list[Callable[[], None]] = []

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def type_name(rt: ResourceType) -> str:
        """The name of ``rt``'s storage: ``plural[.group]`` (a cohabiting type's is that of
        the type whose storage it shares)."""
        group = rt.stored_group
        return f"{rt.plural}.{group}" if group else rt.plural

    def store(self, rt: ResourceType) -> TypeStore:
        """The storage of ``rt``'s objects (made on first use)."""
        return self.mvcc.type_store(self.type_name(rt))

    @staticmethod
    def key(rt: ResourceType, namespace: str | None, name: str) -> str:
        """The storage key of an object: ``namespace/name``, or ``name`` (cluster-scoped)."""
        return storage_key(rt, namespace, name)

    def view(self, rt: ResourceType, stored: Stored) -> dict[str, Any]:
        """``stored`` decoded, in the form ``rt`` serves it (``rt.strategy.to_view``)."""
        return rt.strategy.to_view(rt, stored.decode())

    def put(self, rt: ResourceType, obj: dict[str, Any], cur: Stored) -> Stored:
        """Store ``obj`` as the new state of ``cur``'s object, as it is (no validation,
        defaulting or field tracking) at the next revision; a dry run answers what it would
        store, at ``cur``'s revision, and commits nothing."""
        if is_dry_run():
            return to_stored(rt, obj, cur.rv)
        stored = to_stored(rt, obj, self.mvcc.next_rv())
        self.store(rt).commit(stored.key, stored)
        return stored

    def remove(self, rt: ResourceType, last: Stored) -> Stored:
        """Delete ``last``'s object now (the DELETED event shows ``last``, its last stored
        state) and stop serving the types it defined; returns what DELETED carries. A dry
        run commits nothing and answers ``last``."""
        if is_dry_run():
            return last
        gone = self.store(rt).commit(last.key, None).obj
        if rt.strategy.serves_types:
            self._unserve(rt.strategy.served_types(last.decode()))
        return gone

    def _require(self, rt: ResourceType, namespace: str | None, name: str) -> Stored:
        cur = self.store(rt).get(self.key(rt, namespace, name))
        if cur is None:
            raise KubeSimApiError.not_found(rt.plural, rt.stored_group, name)
        return cur

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
        shard_selector: ShardSelector | None = None,
        resource_version: str = "",
        match: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        """A list as the apiserver serves it (:func:`~kubesim.registry.listing.list_page`)."""
        return list_page(
            self.store(rt),
            self.mvcc,
            rt,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
            resource_version=resource_version,
            match=match,
            limit=limit,
            continue_token=continue_token,
        )

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
        """POST: admit (the namespace), validate, default, stamp metadata and commit; 409 if
        the name is taken.
        ``keep_status`` stores the body's status as given (no admission then);
        ``managed_fields`` replaces the Update entry the write would record (apply)."""
        strategy = rt.strategy
        obj = clone(body)
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
        # admission (NamespaceLifecycle) runs before the registry validates: a missing or
        # terminating namespace answers before an invalid object does
        check_creatable(self.mvcc, rt, namespace, str(meta.get("name") or ""))
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choices(_NAME_SUFFIX_ALPHABET, k=5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        if rt.has_status and not keep_status and not strategy.keeps_status_on_create:
            obj.pop("status", None)
        if causes := strategy.validate(rt, obj):
            raise invalid_object(rt, str(meta.get("name", "")), causes)
        ts = self.store(rt)
        name = meta["name"]
        if (taken := ts.get(self.key(rt, namespace, name))) is not None:
            err = KubeSimApiError.already_exists(rt.plural, rt.stored_group, name)
            if b'"deletionTimestamp"' in taken.raw:  # the registry says why the name is taken
                err.body["message"] = f"object is being deleted: {err.body['message']}"
            raise err
        status = obj.get("status") if keep_status else None
        meta["uid"] = str(uuid.uuid4())  # before the strategy: a Job's selector names it
        strategy.default(rt, obj, creating=True)
        if causes := strategy.prepare_for_create(
            rt, obj, lambda: (o.decode() for o in ts.objects.values())
        ):
            raise invalid_object(rt, name, causes)
        if status is not None:
            obj["status"] = status
        else:
            strategy.admit(rt, obj)
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(k, None)
        meta["creationTimestamp"] = now_rfc3339()
        if strategy.uses_generation:
            meta["generation"] = 1
        obj = reorder(obj, rt)
        if managed_fields is None:
            managed_fields = track_update(
                type_for(rt, self.mvcc), rt, None, obj, manager, request=body
            )
        put_managed(obj["metadata"], managed_fields)
        if is_dry_run():
            return to_stored(rt, obj, 0)
        stored = to_stored(rt, obj, self.mvcc.next_rv())
        ts.commit(stored.key, stored)
        if strategy.serves_types:
            self.call_soon(self.establish_delay, lambda: self._establish(rt, name))
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
        """PUT (of the object or its status). 409 when the body names another uid
        (:meth:`check_uid`) or a stale resourceVersion; a write that
        changes nothing returns the stored object and commits nothing. Custom resources
        require the resourceVersion (422 without it), built-in kinds update unconditionally."""
        new = clone(body)
        new_meta = new.get("metadata")
        if not isinstance(new_meta, dict):
            raise KubeSimApiError.bad_request("Object 'metadata' is missing or not an object")
        if new_meta.get("name") not in (None, name):
            raise KubeSimApiError.bad_request(
                "the name of the object "
                f"({new_meta.get('name')}) does not match the name on the URL ({name})"
            )
        cur = self.check_uid(rt, namespace, name, new_meta)
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
            raise invalid_object(rt, name, [cause])
        return self.write(rt, cur, new, subresource, manager)

    def check_uid(
        self, rt: ResourceType, namespace: str | None, name: str, meta: Mapping[str, Any]
    ) -> Stored:
        """The stored object an update of ``name`` writes over, once the update's own uid
        (``meta``'s, if any: a precondition, as kube-apiserver makes it of the object it
        is sent) is its uid: 409 when it is not, also when there is no such object (then
        "UID in object meta" is empty), before the 404 and the resourceVersion's 409."""
        cur = self.store(rt).get(self.key(rt, namespace, name))
        uid = meta.get("uid")
        if uid and (actual := cur.uid if cur is not None else "") != uid:
            raise KubeSimApiError.uid_precondition_failed(
                rt.plural, rt.stored_group, name, etcd_key(rt, namespace, name), str(uid), actual
            )
        if cur is None:
            raise KubeSimApiError.not_found(rt.plural, rt.stored_group, name)
        return cur

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
        the patch is a precondition (409 when stale). Inside an HTTP write the patched
        object is decoded as the patch handler decodes it
        (:class:`~kubesim.registry.context.WriteContext`)."""
        ctype = patch_type(content_type, rt.custom)
        cur = self._require(rt, namespace, name)
        obj = self.view(rt, cur)
        obj.setdefault("apiVersion", rt.api_version)
        obj.setdefault("kind", rt.kind)
        new = apply_patch(ctype, obj, patch, rt.kind)
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise KubeSimApiError.bad_request("the patch produced an object without metadata")
        patch_rv = (
            (patch.get("metadata") or {}).get("resourceVersion")
            if isinstance(patch, dict)
            else None
        )
        if patch_rv and str(patch_rv) != str(cur.rv):
            raise KubeSimApiError.conflict(rt.plural, rt.stored_group, name)
        if (ctx := current_write()) is not None:
            new = ctx.decode_patched(rt, new, ctx)
        # the merges copy their target, so ``obj`` is still the stored state: no decode again
        return self.write(rt, cur, new, subresource, manager, old=obj)

    def write(
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
        """The common tail of update and patch (and of the scale subresource and apply):
        keep what the client may not change, run the kind's strategy, bump the generation
        on spec changes, skip no-ops, delete the object when its last finalizer goes.
        ``old`` is ``cur`` decoded, if the caller has it (read, never changed, here).
        ``managed_fields`` replaces the Update tracking (apply; then a change of
        managedFields alone is a write)."""
        strategy = rt.strategy
        if old is None:
            old = self.view(rt, cur)
        new, requested = updated_object(rt, old, new, subresource)
        old_meta, new_meta = old["metadata"], new["metadata"]
        if managed_fields is None:
            if same(old, new) and requested in (None, [], old_meta.get("managedFields")):
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
        elif same(old, new) and managed_fields == (old_meta.get("managedFields") or []):
            return cur
        put_managed(new["metadata"], managed_fields)
        if deleted_by_update(rt, old, new):
            # the last finalizer went: the object goes, and DELETED shows its last stored state
            if not is_dry_run():
                self.store(rt).commit(cur.key, None)
            new_meta["resourceVersion"] = str(cur.rv)
            raw = encode(rt, strategy.to_storage(rt, new))
            return Stored(cur.key, cur.namespace, cur.rv, raw, cur.uid, cur.labels, cur.fields)
        return self.put(rt, new, cur)

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        options: DeleteOptions | Mapping[str, Any] | None = None,
    ) -> DeleteOutcome:
        """DELETE, as :mod:`kubesim.registry.deletion` describes; ``options`` a
        :class:`~kubesim.registry.deletion.DeleteOptions` or the DeleteOptions fields as a
        mapping (in-process callers)."""
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
        shard_selector: ShardSelector | None = None,
        options: DeleteOptions | Mapping[str, Any] | None = None,
    ) -> ListResult:
        """DELETE on a collection: deletes what the selectors match (each as :meth:`delete`
        with the same options), answers the list of what was there (at the revision before
        the deletions)."""
        opts = DeleteOptions.of(options)
        page = self.list(
            rt,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
        )
        for obj in page.items:
            name = obj.key.rsplit("/", 1)[-1]
            if self.store(rt).get(obj.key) is not None:
                self.delete(rt, namespace or obj.namespace, name, opts)
        return page

    # -- types defined by objects (CRDs) ------------------------------------------------------

    def _establish(self, rt: ResourceType, name: str) -> None:
        """Serve the types the object ``name`` of ``rt`` defines, and write the status that
        says so (unless it went in the meantime)."""
        ts = self.store(rt)
        cur = ts.get(self.key(rt, None, name))
        if cur is None:
            return
        obj = cur.decode()
        for new_rt in rt.strategy.served_types(obj):
            self.registry.add(new_rt)
            self.store(new_rt)
        obj["status"] = rt.strategy.served_status(obj, now_rfc3339())
        stored = to_stored(rt, obj, self.mvcc.next_rv())
        ts.commit(stored.key, stored)
        self._served_changed()

    def _unserve(self, types: Iterable[ResourceType]) -> None:
        """Stop serving ``types``: their objects are deleted, their storage dropped."""
        for gone in types:
            ts = self.mvcc.types.get(self.type_name(gone))
            if ts is not None:
                for key in list(ts.keys):
                    ts.commit(key, None)
            self.registry.remove(gone.group, gone.version, gone.plural)
            dropped = self.mvcc.drop_type(self.type_name(gone))
            if dropped is not None:
                dropped.wake()
        self._served_changed()

    def _served_changed(self) -> None:
        for listener in self.on_served_changed:
            listener()

    def served(self, rt: ResourceType) -> bool:
        """Whether ``rt`` is still served (a CRD may have gone since it was looked up)."""
        return self.registry.lookup(rt.group, rt.version, rt.plural) is not None

    def watch_start(self, rt: ResourceType) -> tuple[TypeStore, int]:
        """The type's store and the sequence number a watch starting now begins at."""
        ts = self.store(rt)
        return ts, ts.next_seq
