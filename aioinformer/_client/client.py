"""The read/write client: every verb on any resource, errors from the one error tree.

:class:`Client` writes objects (cached :class:`~aioinformer.KubeObject` s or plain dict
bodies) to the API server: create, update (PUT, conditional on the object's
resourceVersion), patch (JSON merge, JSON, strategic merge), **server-side apply**
(``application/apply-patch+yaml`` with a field manager, ``force``), the ``status``
subresource, delete (uid/resourceVersion preconditions, propagation policy, grace period),
``create_or_update`` / ``create_or_patch`` (controller-runtime's ``controllerutil``) and
finalizers (``ensure_finalizer`` / ``remove_finalizer``, conflict-safe); it reads from the
server too (``get``, ``list``), for what no informer caches. The resource of an object is
found from its apiVersion and kind through discovery.

Contract:

* Every answer is a :class:`~aioinformer.KubeObject` decoded from what the server returned
  (``delete`` returns None when the object is gone at once and the object when it lingers,
  e.g. held by a finalizer). Every failure is the error tree's: ``except
  aioinformer.Conflict``, ``NotFound``, ``AlreadyExists``, ``Invalid`` (with ``causes``),
  ``Forbidden``; a request that got no answer is a :class:`~aioinformer.TransportError`.
* **Write hooks** see every write: :meth:`WriteHook.before` runs after the request is
  built (it may refuse it by raising, e.g. :class:`~aioinformer.NotOwner`),
  :meth:`WriteHook.check` again right before its first byte is written to the connection,
  with no await in between (a refusal there sends nothing), :meth:`WriteHook.after` once
  the server accepted it, :meth:`WriteHook.failed` when it did not.
* **A cancelled write is settled before the cancellation propagates**: if the request may
  be on its way, the client waits (up to :data:`IN_FLIGHT_GRACE`) for its answer, so that
  whoever cancelled it knows it has landed, or never will, before acting on that (a
  controller handing a key to another replica). The controller runtime installs one that keeps
  expectations and read-your-writes by itself (see ``aioinformer.Manager.client``).
* ``dry_run=True`` asks the server to validate and answer without persisting (hooks are not
  called: nothing changes). A dry-run create answers an object with no resourceVersion
  (nothing was stored): it comes back with resourceVersion 0.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

import orjson

from aioinformer._client.discovery import ApiResource, Discovery
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import ApiClientLike, Request, RestClient
from aioinformer._core import logs
from aioinformer._core.errors import ConfigError, Conflict, DecodeError, NotFound
from aioinformer._core.objects import KubeObject, decode_object
from aioinformer._core.owners import set_owner
from aioinformer._core.shardbuckets import SHARD_LABEL

__all__ = [
    "IN_FLIGHT_GRACE",
    "Client",
    "ObjectLike",
    "Operation",
    "PatchType",
    "WriteHook",
    "WriteRequest",
    "merge_diff",
]

_NOT_JSON = object()  # (a sentinel: no JSON value is this)

ObjectLike: TypeAlias = "KubeObject | Mapping[str, Any]"
"""An object to write: a cached KubeObject or a body with apiVersion, kind and metadata."""
PatchType: TypeAlias = Literal["merge", "json", "strategic", "apply"]
"""The patch flavours: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge
patch (built-in kinds only) and server-side apply."""
Operation: TypeAlias = Literal["created", "updated", "unchanged"]
"""What :meth:`Client.create_or_update` / :meth:`Client.create_or_patch` did."""

_CONTENT_TYPES: Mapping[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
_FINALIZER_ATTEMPTS = 5
_LIST_PAGE = 500
IN_FLIGHT_GRACE = 10.0
"""Seconds a cancelled write waits for the answer of a request that may be on its way."""

log = logs.logger("aioinformer.client")


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One write, as the hooks (:class:`WriteHook`) see it."""

    verb: str
    """"create", "update", "patch", "apply" or "delete"."""
    resource: ApiResource
    """The resource written to."""
    namespace: str | None
    """The object's namespace (None: cluster-scoped)."""
    name: str | None
    """The object's name (None for a create by generateName)."""
    body: Any = None
    """The object, or the patch."""
    subresource: str | None = None
    """The subresource written (e.g. "status"), or None."""
    controller_refs: tuple[tuple[str, str, str], ...] = field(default=())
    """The controller references of the object body as ``(apiVersion, kind, name)``: who
    controls the object a create makes."""
    uid: str | None = None
    """The object's uid, when known."""


class WriteHook(Protocol):
    """Called around every write a :class:`Client` makes (see the module docstring)."""

    async def before(self, request: WriteRequest) -> object:
        """Before sending; raising refuses the write. The result is passed to ``check``,
        ``after`` or ``failed``."""
        ...

    def check(self, request: WriteRequest, token: object) -> None:
        """Right before the request's first byte goes out (synchronous: nothing can run in
        between); raising refuses the write, unsent."""
        ...

    async def after(self, request: WriteRequest, result: KubeObject | None, token: object) -> None:
        """The server accepted the write; ``result`` is what it answered (None: gone)."""
        ...

    def failed(self, request: WriteRequest, error: BaseException, token: object) -> None:
        """The write failed (or was cancelled) after ``before`` let it through."""
        ...


def _not_the_object(obj: KubeObject, res: ApiResource | None, about: Request) -> str:
    """What makes ``obj`` another object than the one ``about`` asked for ("" if none)."""
    if res is not None and (
        (obj.api_version and obj.api_version != res.api_version)
        or (obj.kind and obj.kind != res.kind)
    ):
        return f"a {obj.kind or '(no kind)'} of {obj.api_version or '(no apiVersion)'}"
    if about.name and obj.name != about.name:
        return f"an object named {obj.name[:64]!r}"
    if about.namespace and obj.namespace and obj.namespace != about.namespace:
        return f"an object in namespace {obj.namespace[:64]!r}"
    return ""


def _identity(obj: ObjectLike) -> tuple[str, str, str, str, str, str]:
    """(apiVersion, kind, namespace, name, uid, resourceVersion) of ``obj``."""
    if isinstance(obj, KubeObject):
        rv = obj.metadata.resource_version
        return obj.api_version, obj.kind, obj.namespace, obj.name, obj.uid, rv
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return (
        str(obj.get("apiVersion") or ""),
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
        str(meta.get("resourceVersion") or ""),
    )


def _body(obj: ObjectLike) -> dict[str, Any]:
    """A mutable copy of ``obj`` as a JSON object."""
    if isinstance(obj, KubeObject):
        return obj.to_dict()
    return copy.deepcopy(dict(obj))


def _controllers(body: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    refs = (body.get("metadata") or {}).get("ownerReferences") or ()
    return tuple(
        (str(r.get("apiVersion") or ""), str(r.get("kind") or ""), str(r.get("name") or ""))
        for r in refs
        if r.get("controller")
    )


def _own(body: dict[str, Any], owner: KubeObject | Mapping[str, Any]) -> None:
    """Make ``body`` controlled by ``owner`` (in the owner's namespace unless it names one)."""
    meta = body.setdefault("metadata", {})
    owner_ns = owner.namespace if isinstance(owner, KubeObject) else (
        (owner.get("metadata") or {}).get("namespace") or ""
    )  # fmt: skip
    if owner_ns:
        meta.setdefault("namespace", owner_ns)
    set_owner(body, owner)


def _controller_uid(body: Mapping[str, Any]) -> str | None:
    refs = (body.get("metadata") or {}).get("ownerReferences") or ()
    return next((str(r.get("uid")) for r in refs if r.get("controller")), None)


def _keep_shard_label(before: Mapping[str, Any], after: dict[str, Any]) -> None:
    """Put back the shard bucket label a ``mutate`` dropped (e.g. by setting the labels
    whole) while the object keeps its controller: the label is the owner's, not the
    caller's to remove."""
    label = ((before.get("metadata") or {}).get("labels") or {}).get(SHARD_LABEL)
    meta = after.get("metadata")
    if label is None or not isinstance(meta, dict):
        return
    labels = meta.get("labels")
    if isinstance(labels, dict) and SHARD_LABEL in labels:
        return
    if _controller_uid(after) is None or _controller_uid(after) != _controller_uid(before):
        return
    meta["labels"] = {**(labels if isinstance(labels, dict) else {}), SHARD_LABEL: label}


def merge_diff(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``.

    Changed and added keys with their new values, removed keys as null; lists whole.

    Args:
        old: the current body (or any JSON value).
        new: the desired body.

    Returns:
        The patch: ``{}`` when they are equal; ``new`` itself when either is not a mapping.
    """
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return new
    patch: dict[str, Any] = {}
    for key in old.keys() - new.keys():
        patch[key] = None
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            if isinstance(old[key], Mapping) and isinstance(value, Mapping):
                patch[key] = merge_diff(old[key], value)
            else:
                patch[key] = value
    return patch


class Client:
    """Reads and writes objects of any resource (see the module docstring).

    Args:
        api_client: a kubernetes_asyncio ``ApiClient``, or a
            :class:`~aioinformer._client.rest.RestClient`.
        field_manager: the ``fieldManager`` of every write (server-side apply needs one;
            managedFields name it).
        discovery: where resources are looked up (default: a new one on the same client).
        hooks: write hooks, called in order (see :class:`WriteHook`).
        uid_preconditions: a merge patch of an object given with its uid (a cached
            ``KubeObject``) carries that uid (``metadata.uid``), so the server refuses it
            when the name now holds another object, one re-created meanwhile (422
            :class:`~aioinformer.Invalid`: a uid is immutable), as :meth:`delete` refuses
            by its precondition by default. A manager with
            sharded caches sets it: a replica whose cache still holds a deleted object
            must not patch the object re-created under its name, which another replica
            may own.
    """

    def __init__(
        self,
        api_client: RestClient | ApiClientLike,
        *,
        field_manager: str = "aioinformer",
        discovery: Discovery | None = None,
        hooks: Sequence[WriteHook] = (),
        uid_preconditions: bool = False,
    ) -> None:
        if not field_manager:
            raise ConfigError("field_manager must be a non-empty string")
        self.uid_preconditions = uid_preconditions
        """Whether a merge patch of an object given with its uid (a cached object) is
        conditional on that uid (see ``uid_preconditions`` above)."""
        self.rest = api_client if isinstance(api_client, RestClient) else RestClient(api_client)
        self.discovery = discovery or Discovery(self.rest)
        self.field_manager = field_manager
        self.hooks: builtins.list[WriteHook] = list(hooks)

    def __repr__(self) -> str:
        return f"<Client {self.rest!r} field_manager={self.field_manager!r}>"

    # -- helpers -------------------------------------------------------------------------------

    async def resource_of(self, api_version: str, kind: str) -> ApiResource:
        """The served resource of ``kind`` objects in ``api_version`` (through discovery)."""
        if not api_version or not kind:
            raise ConfigError("an object needs apiVersion and kind to be written")
        return await self.discovery.for_kind(api_version, kind)

    def _namespace(self, res: ApiResource, namespace: str) -> str | None:
        if not res.namespaced:
            return None
        if not namespace:
            raise ConfigError(f"{res.kind} objects are namespaced: give metadata.namespace")
        return namespace

    def _query(
        self, *, dry_run: bool, field_manager: str | None = None, force: bool = False
    ) -> builtins.list[tuple[str, str]]:
        query = [("fieldManager", field_manager or self.field_manager)]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        return query

    async def _send(
        self,
        request: WriteRequest,
        method: str,
        *,
        query: builtins.list[tuple[str, str]],
        content_type: str | None = None,
        dry_run: bool = False,
        missing_ok: bool = False,
        collection: bool = False,
    ) -> KubeObject | None:
        res = request.resource
        path = res.path(request.namespace, None if collection else request.name)
        if request.subresource:
            path += f"/{request.subresource}"
        about = Request(request.verb, res.qualified, request.namespace, request.name)
        tokens: list[tuple[WriteHook, object]] = []
        if not dry_run:
            for hook in self.hooks:
                tokens.append((hook, await hook.before(request)))

        def guard() -> None:
            for hook, token in tokens:
                hook.check(request, token)

        sending = asyncio.ensure_future(
            self.rest.request(
                method,
                path,
                about,
                query=query,
                body=request.body,
                content_type=content_type,
                guard=guard if tokens else None,
            )
        )
        try:
            try:
                answer = await asyncio.shield(sending)
            except asyncio.CancelledError:
                # the request may be on its way: settle it before the cancellation goes on
                await asyncio.wait([sending], timeout=IN_FLIGHT_GRACE)
                if not sending.done():
                    sending.cancel()
                raise
            own = request.subresource in (None, "status")  # (a scale answers a Scale)
            result = self._decode(
                answer.body,
                about,
                res if own else None,
                dry_run=dry_run,
                status_ok=request.verb == "delete",
            )
        except BaseException as exc:
            for hook, token in tokens:
                hook.failed(request, exc, token)
            if missing_ok and isinstance(exc, NotFound):
                return None
            raise
        for hook, token in tokens:
            await hook.after(request, result, token)
        return result

    @staticmethod
    def _decode(
        body: bytes,
        about: Request,
        res: ApiResource | None,
        *,
        dry_run: bool = False,
        status_ok: bool = False,
    ) -> KubeObject | None:
        """The object a request was answered with, checked to be the one asked about (of
        ``res``'s apiVersion and kind unless None, with the request's namespace and name when
        it named them); a ``Status`` is None when ``status_ok`` (a delete that is done), else a
        :class:`~aioinformer.DecodeError`, as is any other object: a proxy's or a
        misrouted answer with a 2xx status is not the object."""
        # the errors are raised outside the except blocks: orjson's error holds the whole
        # body (its ``doc``), which may echo a credential, and ``from None`` would still
        # keep it as ``__context__``
        data: Any = _NOT_JSON
        with contextlib.suppress(orjson.JSONDecodeError):
            data = orjson.loads(body)
        if data is _NOT_JSON:
            raise DecodeError(f"{about.where()}: the answer is not JSON")
        if isinstance(data, dict) and data.get("kind") == "Status":
            if status_ok:
                return None
            reason = str(data.get("reason") or data.get("message") or "")[:80]
            raise DecodeError(
                f"{about.where()}: the server answered a 2xx with a Status ({reason!r}), "
                "not the object"
            )
        meta = data.get("metadata") if isinstance(data, dict) else None
        if dry_run and isinstance(meta, dict) and not meta.get("resourceVersion"):
            meta["resourceVersion"] = "0"  # a dry-run create stored nothing: no version
            body = orjson.dumps(data)
        try:
            obj: KubeObject | DecodeError = decode_object(body)
        except DecodeError as exc:
            obj = exc
        if isinstance(obj, DecodeError):
            raise DecodeError(f"{about.where()}: {obj}")
        wrong = _not_the_object(obj, res, about)
        if wrong:
            raise DecodeError(f"{about.where()}: the server answered {wrong}, not the object")
        return obj

    # -- reads ----------------------------------------------------------------------------------

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> KubeObject:
        """The object from the server (not a cache): :class:`~aioinformer.NotFound` if it
        does not exist."""
        res = await self.resource_of(api_version, kind)
        ns = self._namespace(res, namespace or "")
        about = Request("get", res.qualified, ns, name)
        answer = await self.rest.request("GET", res.path(ns, name), about)
        got = self._decode(answer.body, about, res)
        assert got is not None  # (a Status is refused)
        return got

    async def refresh(self, obj: ObjectLike) -> KubeObject:
        """``obj`` as the server holds it now."""
        api_version, kind, namespace, name, _, _ = _identity(obj)
        return await self.get(api_version, kind, name, namespace or None)

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[KubeObject]:
        """The ``kind`` objects from the server (not a cache): of ``namespace``, or of every
        namespace when None (a cluster-scoped kind ignores it), matching the selectors.
        Read as one consistent list, page by page; an item that cannot be decoded is left
        out and logged."""
        res = await self.resource_of(api_version, kind)
        lister = ListWatch(
            self.rest,
            res.group_version,
            res.plural,
            namespace=namespace if res.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            kind=res.kind,
        )
        items: builtins.list[KubeObject] = []
        token: str | None = None
        while True:
            page, _, token = await lister.list_page("", _LIST_PAGE, token)
            for bad in page.bad:
                log.warning("list %s: left out %s: %s", res.qualified, bad.key, bad.reason)
            items.extend(page)
            if not token:
                return items

    # -- writes ---------------------------------------------------------------------------------

    async def create(
        self,
        obj: ObjectLike,
        *,
        owner: KubeObject | Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> KubeObject:
        """Create ``obj`` (``metadata.name`` or ``generateName``); with ``owner``, owned by
        it as its controller (and in its namespace when ``obj`` names none)."""
        body = _body(obj)
        body.setdefault("metadata", {})
        if owner is not None:
            _own(body, owner)
        body["metadata"].pop("resourceVersion", None)
        api_version, kind, namespace, name, _, _ = _identity(body)
        res = await self.resource_of(api_version, kind)
        ns = self._namespace(res, namespace)
        request = WriteRequest(
            "create", res, ns, name or None, body, controller_refs=_controllers(body)
        )
        result = await self._send(
            request, "POST", query=self._query(dry_run=dry_run), dry_run=dry_run, collection=True
        )
        assert result is not None
        return result

    async def update(
        self, obj: ObjectLike, *, subresource: str | None = None, dry_run: bool = False
    ) -> KubeObject:
        """Replace the object with ``obj`` (PUT), conditional on its resourceVersion:
        :class:`~aioinformer.Conflict` when the server's copy changed since."""
        body = _body(obj)
        api_version, kind, namespace, name, uid, _ = _identity(body)
        res = await self.resource_of(api_version, kind)
        ns = self._namespace(res, namespace)
        request = WriteRequest(
            "update", res, ns, name, body, subresource, _controllers(body), uid or None
        )
        result = await self._send(
            request, "PUT", query=self._query(dry_run=dry_run), dry_run=dry_run
        )
        assert result is not None
        return result

    async def update_status(self, obj: ObjectLike, *, dry_run: bool = False) -> KubeObject:
        """:meth:`update` of the ``status`` subresource."""
        return await self.update(obj, subresource="status", dry_run=dry_run)

    async def patch(
        self,
        obj: ObjectLike,
        patch: Any,
        *,
        type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> KubeObject:
        """Patch the object ``obj`` names (its apiVersion, kind, namespace and name) with
        ``patch`` of ``type``. A merge patch that carries ``metadata.resourceVersion`` is
        conditional on it (:class:`~aioinformer.Conflict` when the object changed)."""
        api_version, kind, namespace, name, uid, _ = _identity(obj)
        if type == "apply" and not isinstance(patch, Mapping):
            raise ConfigError("an apply patch is an object body")
        if self.uid_preconditions and uid and type == "merge" and isinstance(patch, Mapping):
            meta = patch.get("metadata")
            if meta is None or (isinstance(meta, Mapping) and "uid" not in meta):
                patch = {**patch, "metadata": {**(meta or {}), "uid": uid}}
        res = await self.resource_of(api_version, kind)
        ns = self._namespace(res, namespace)
        owners = _controllers(patch) if isinstance(patch, Mapping) else ()
        request = WriteRequest(
            "apply" if type == "apply" else "patch",
            res, ns, name, patch, subresource, owners, uid or None,
        )  # fmt: skip
        result = await self._send(
            request,
            "PATCH",
            query=self._query(dry_run=dry_run, field_manager=field_manager, force=force),
            content_type=_CONTENT_TYPES[type],
            dry_run=dry_run,
        )
        assert result is not None
        return result

    async def patch_status(
        self, obj: ObjectLike, patch: Any, *, type: PatchType = "merge", dry_run: bool = False
    ) -> KubeObject:
        """:meth:`patch` of the ``status`` subresource (e.g. ``{"status": {...}}``)."""
        return await self.patch(obj, patch, type=type, subresource="status", dry_run=dry_run)

    async def apply(
        self,
        obj: Mapping[str, Any],
        *,
        owner: KubeObject | Mapping[str, Any] | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> KubeObject:
        """Server-side apply of ``obj`` (the fields this manager wants to own, with
        apiVersion, kind and metadata.name): :class:`~aioinformer.Conflict` when another
        manager owns one of them, unless ``force``. With ``owner``, as :meth:`create`:
        controlled by it (and in its namespace when ``obj`` names none). Fields this
        manager applied before and leaves out now are removed (unless another manager
        owns them too): each manager owns its part of a shared object."""
        body = obj
        if owner is not None:
            body = _body(obj)
            _own(body, owner)
        return await self.patch(
            body,
            dict(body),
            type="apply",
            subresource=subresource,
            field_manager=field_manager,
            force=force,
            dry_run=dry_run,
        )

    async def delete(
        self,
        obj: ObjectLike,
        *,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        precondition: bool = True,
        grace_period_seconds: int | None = None,
        missing_ok: bool = False,
        dry_run: bool = False,
    ) -> KubeObject | None:
        """Delete the object ``obj`` names. With ``precondition`` (the default) and a uid
        on ``obj``, only that object: a newer one that took the name is left alone
        (:class:`~aioinformer.Conflict`). Returns None when the object is gone, else the
        object as it lingers (finalizers, a graceful pod). ``missing_ok``: a missing object
        is None instead of :class:`~aioinformer.NotFound`."""
        api_version, kind, namespace, name, uid, _ = _identity(obj)
        res = await self.resource_of(api_version, kind)
        ns = self._namespace(res, namespace)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if precondition and uid:
            options["preconditions"] = {"uid": uid}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        query = [("dryRun", "All")] if dry_run else []
        request = WriteRequest("delete", res, ns, name, options, uid=uid or None)
        return await self._send(
            request, "DELETE", query=query, dry_run=dry_run, missing_ok=missing_ok
        )

    # -- combined -------------------------------------------------------------------------------

    async def create_or_update(
        self, obj: ObjectLike, mutate: Callable[[dict[str, Any]], None] | None = None
    ) -> tuple[KubeObject, Operation]:
        """Make the object ``obj`` names look as ``mutate`` wants (controller-runtime's
        ``CreateOrUpdate``): read it from the server; if missing, create ``obj`` after
        ``mutate(body)``; else call ``mutate(current_body)`` and update when it changed
        (conditional on what was read). Returns the object and what was done. A
        ``mutate`` that drops the shard bucket label (``shard.aioinformer.dev/bucket``,
        e.g. by setting the labels whole) while the controller stays does not remove it:
        the label is the owner's."""
        return await self._create_or(obj, mutate, patching=False)

    async def create_or_patch(
        self, obj: ObjectLike, mutate: Callable[[dict[str, Any]], None] | None = None
    ) -> tuple[KubeObject, Operation]:
        """As :meth:`create_or_update`, but a change is sent as a JSON merge patch of the
        differences (conditional on the resourceVersion read), so fields this client does
        not know survive."""
        return await self._create_or(obj, mutate, patching=True)

    async def _create_or(
        self, obj: ObjectLike, mutate: Callable[[dict[str, Any]], None] | None, *, patching: bool
    ) -> tuple[KubeObject, Operation]:
        api_version, kind, namespace, name, _, _ = _identity(obj)
        try:
            current = await self.get(api_version, kind, name, namespace or None)
        except NotFound:
            body = _body(obj)
            if mutate is not None:
                mutate(body)
            return await self.create(body), "created"
        before = current.to_dict()
        after = copy.deepcopy(before)
        if mutate is not None:
            mutate(after)
            _keep_shard_label(before, after)
        else:
            after = {**after, **{k: v for k, v in _body(obj).items() if k != "metadata"}}
        if after == before:
            return current, "unchanged"
        if patching:
            diff = merge_diff(before, after)
            diff.setdefault("metadata", {})["resourceVersion"] = current.metadata.resource_version
            return await self.patch(current, diff), "updated"
        return await self.update(after), "updated"

    # -- finalizers -----------------------------------------------------------------------------

    async def ensure_finalizer(self, obj: ObjectLike, finalizer: str) -> KubeObject:
        """``obj`` with ``finalizer`` in its finalizers (added unless there): a merge patch
        conditional on the resourceVersion, re-read and retried on a conflict."""
        result = await self._finalizers(obj, finalizer, add=True)
        assert result is not None  # (adding never lets the object go)
        return result

    async def remove_finalizer(self, obj: ObjectLike, finalizer: str) -> KubeObject | None:
        """``obj`` without ``finalizer`` (removed if there), conflict-safe as
        :meth:`ensure_finalizer`: the object as the server answered (for a deleting object
        whose last finalizer this was, its final state: it is gone right after); None when
        it was gone already."""
        return await self._finalizers(obj, finalizer, add=False)

    async def _finalizers(self, obj: ObjectLike, finalizer: str, *, add: bool) -> KubeObject | None:
        current: ObjectLike = obj
        for attempt in range(_FINALIZER_ATTEMPTS):
            if isinstance(current, KubeObject):
                finalizers, rv = list(current.finalizers), current.metadata.resource_version
            else:
                meta = current.get("metadata") or {}
                finalizers = list(meta.get("finalizers") or ())
                rv = str(meta.get("resourceVersion") or "")
            if (finalizer in finalizers) == add:
                return current if isinstance(current, KubeObject) else await self.refresh(current)
            wanted = [*finalizers, finalizer] if add else [f for f in finalizers if f != finalizer]
            patch: dict[str, Any] = {"metadata": {"finalizers": wanted or None}}
            if rv:
                patch["metadata"]["resourceVersion"] = rv
            try:
                return await self.patch(current, patch)
            except Conflict:
                if attempt == _FINALIZER_ATTEMPTS - 1:
                    raise
            except NotFound:
                if add:
                    raise
                return None
            current = await self.refresh(current)
        raise AssertionError("unreachable")  # pragma: no cover
