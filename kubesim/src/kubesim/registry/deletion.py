"""DELETE of one object, as kube-apiserver v1.28's generic registry answers it.

:func:`delete_object` is the whole apiserver side of a deletion (the garbage collector
and the namespace controller that finish some deletions are
:mod:`kubesim.controllers.garbage_collector` and :mod:`kubesim.controllers.namespace`):

* **Options** (:class:`DeleteOptions`): from the body when it has one, else from the
  query, as the handler decodes them; ``orphanDependents`` together with
  ``propagationPolicy``, an unknown policy or a bad ``dryRun`` is the recorded 422 of
  ``DeleteOptions.meta.k8s.io``.
* **Preconditions**: a uid or resourceVersion that does not match is the recorded 409.
* **Graceful deletion** (kinds whose strategy has ``graceful_deletion``: pods): the grace
  period is the strategy's (``Strategy.grace_period``); the object gets
  ``deletionTimestamp`` = now + grace and stays while the grace period runs (a repeat
  DELETE changes nothing unless it asks for a shorter one); with grace 0 it is MODIFIED
  then DELETED at once.
* **Finalizers for the garbage collector**: Foreground puts ``foregroundDeletion``,
  Orphan (or ``orphanDependents: true``) ``orphan``, Background neither; a repeat DELETE
  of an object already terminating rewrites them the same way (20a). An object left with
  finalizers is marked (``deletionTimestamp`` now, ``deletionGracePeriodSeconds`` 0,
  ``metadata.generation`` + 1 the first time, 21a) and stays; one left without any is
  deleted now.
* **Deleted by a controller** (kinds whose strategy has ``deleted_by_controller``:
  namespaces): the first DELETE only marks the object (``deletionTimestamp``, the
  strategy's ``mark_terminating``, e.g. phase ``Terminating``; no grace field) and answers
  it; a controller empties it. Once the strategy's ``pending_finalizers`` are gone a DELETE
  is the generic one.
* **Answer** (18a-18c, 20b): the object when it is not gone at once; else the object for
  the kinds whose strategy has ``returns_deleted_object`` and ``Status{Success,
  details{name, group, kind: plural, uid}}`` for every other kind. 202 instead of 200 only
  when the object is not gone and the request set ``orphanDependents: false``.

Every write here honours a dry run (:mod:`kubesim.registry.dryrun`): the answer is the
same, with the stored resourceVersion, and nothing is committed.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubesim.encoding import json_decode
from kubesim.encoding.gofmt import go_quote
from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError, status_body, success_status
from kubesim.registry.dryrun import parse_dry_run
from kubesim.registry.objects import reorder
from kubesim.registry.resource import ResourceType
from kubesim.storage.mvcc import Stored

__all__ = [
    "FOREGROUND",
    "ORPHAN",
    "DeleteOptions",
    "DeleteOutcome",
    "Store",
    "delete_object",
    "gc_finalizers",
    "read_delete_options",
]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_POLICIES = ("Foreground", "Background", "Orphan")


class Store(Protocol):
    """What a deletion does with the generic store (``kubesim.registry.store.Api`` is one)."""

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Stored:
        """The current object, or 404."""

    def put(self, rt: ResourceType, obj: dict[str, Any], cur: Stored) -> Stored:
        """Store ``obj`` as the new state of ``cur``'s object, as it is."""

    def remove(self, rt: ResourceType, last: Stored) -> Stored:
        """Delete ``last``'s object now; what the DELETED event carries."""


def _invalid_options(field: str, reason: str, detail: str) -> KubeSimApiError:
    details = {
        "group": "meta.k8s.io",
        "kind": "DeleteOptions",
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }
    message = f'DeleteOptions.meta.k8s.io "" is invalid: {field}: {detail}'
    return KubeSimApiError(422, status_body(422, message, "Invalid", details))


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """A request's DeleteOptions, validated (``ValidateDeleteOptions``)."""

    grace_period: int | None = None
    propagation: str | None = None
    orphan_dependents: bool | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False

    @classmethod
    def of(cls, options: DeleteOptions | Mapping[str, Any] | None) -> DeleteOptions:
        """``options`` as DeleteOptions (a mapping holds the DeleteOptions fields)."""
        return options if isinstance(options, DeleteOptions) else cls.from_mapping(options or {})

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> DeleteOptions:
        """From a DeleteOptions document (or the equivalent keyword arguments); 400 for a
        field of the wrong type, 422 for what validation refuses."""
        grace = raw.get("gracePeriodSeconds")
        orphan = raw.get("orphanDependents")
        policy = raw.get("propagationPolicy")
        pre = raw.get("preconditions") or {}
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise KubeSimApiError.bad_request(f"invalid gracePeriodSeconds: {grace!r}")
        if orphan is not None and not isinstance(orphan, bool):
            raise KubeSimApiError.bad_request(f"invalid orphanDependents: {orphan!r}")
        if policy is not None and not isinstance(policy, str):
            raise KubeSimApiError.bad_request(f"invalid propagationPolicy: {policy!r}")
        if not isinstance(pre, Mapping):
            raise KubeSimApiError.bad_request("invalid preconditions")
        dry = raw.get("dryRun")
        if dry is not None and not (isinstance(dry, list) and all(isinstance(d, str) for d in dry)):
            raise KubeSimApiError.bad_request(f"invalid dryRun: {dry!r}")
        if orphan is not None and policy is not None:
            detail = (
                f"Invalid value: {go_quote(policy)}: orphanDependents and deletionPropagation "
                "cannot be both set"
            )
            raise _invalid_options("propagationPolicy", "FieldValueInvalid", detail)
        if policy is not None and policy not in _POLICIES:
            supported = ", ".join(go_quote(p) for p in (*_POLICIES, "nil"))
            detail = f"Unsupported value: {go_quote(policy)}: supported values: {supported}"
            raise _invalid_options("propagationPolicy", "FieldValueNotSupported", detail)
        uid, rv = pre.get("uid"), pre.get("resourceVersion")
        return cls(
            grace_period=grace,
            propagation=policy,
            orphan_dependents=orphan,
            uid=str(uid) if uid else None,
            resource_version=str(rv) if rv else None,
            dry_run=parse_dry_run(raw.get("dryRun"), "DeleteOptions"),
        )


def read_delete_options(
    query: Mapping[str, str], body: bytes, dry_run: Sequence[str]
) -> DeleteOptions:
    """The handler's decoding: a non-empty body is the whole DeleteOptions (query ignored);
    otherwise ``gracePeriodSeconds``, ``orphanDependents``, ``propagationPolicy`` and the
    ``dryRun`` values (``dry_run``) of the query."""
    if body.strip():
        try:
            doc = json_decode.loads(body)
        except orjson.JSONDecodeError as exc:
            raise KubeSimApiError.bad_request(
                f"couldn't get version/kind; json parse error: {exc}"
            ) from None
        if not isinstance(doc, dict):
            raise KubeSimApiError.bad_request("the body of a DELETE must be a DeleteOptions object")
        return DeleteOptions.from_mapping(doc)
    raw: dict[str, Any] = {}
    if "gracePeriodSeconds" in query:
        try:
            raw["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        except ValueError:
            value = query["gracePeriodSeconds"]
            raise KubeSimApiError.bad_request(
                f'strconv.ParseInt: parsing "{value}": invalid syntax'
            ) from None
    if "orphanDependents" in query:
        value = query["orphanDependents"]
        if value not in ("true", "false", "1", "0", "True", "False"):
            raise KubeSimApiError.bad_request(
                f'strconv.ParseBool: parsing "{value}": invalid syntax'
            )
        raw["orphanDependents"] = value in ("true", "1", "True")
    if "propagationPolicy" in query:
        raw["propagationPolicy"] = query["propagationPolicy"]
    if dry_run:
        raw["dryRun"] = list(dry_run)
    return DeleteOptions.from_mapping(raw)


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    """What a DELETE answers: ``obj`` (the object) or ``status`` (a ``Status`` body), the
    HTTP ``code``, and whether the object is ``gone``."""

    obj: Stored | None
    status: dict[str, Any] | None
    code: int
    gone: bool


def _should_orphan(finalizers: Sequence[str], opts: DeleteOptions) -> bool:
    if opts.orphan_dependents is not None:
        return opts.orphan_dependents
    if opts.propagation is not None:
        return opts.propagation == "Orphan"
    for f in finalizers:
        if f in (ORPHAN, FOREGROUND):
            return f == ORPHAN
    return False  # every served kind defaults to deleting dependents (in the background)


def _should_foreground(finalizers: Sequence[str], opts: DeleteOptions) -> bool:
    if opts.orphan_dependents is not None:
        return False
    if opts.propagation is not None:
        return opts.propagation == "Foreground"
    for f in finalizers:
        if f in (ORPHAN, FOREGROUND):
            return f == FOREGROUND
    return False


def gc_finalizers(finalizers: Sequence[str], opts: DeleteOptions) -> tuple[bool, list[str]]:
    """``deletionFinalizersForGarbageCollection``: the finalizers after this DELETE (the
    GC's two replaced as the options say) and whether that is a change."""
    new = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if _should_orphan(finalizers, opts):
        new.append(ORPHAN)
    if _should_foreground(finalizers, opts):
        new.append(FOREGROUND)
    if set(new) == set(finalizers):
        return False, list(finalizers)
    return True, new


def _set_finalizers(meta: dict[str, Any], finalizers: list[str]) -> None:
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)


def _parse_time(stamp: str) -> int:
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def _format_time(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _mark_as_deleting(meta: dict[str, Any]) -> None:
    """``markAsDeleting``: generation + 1 the first time, deletionTimestamp now (unless it
    is already set and not in the future), deletionGracePeriodSeconds 0."""
    now = now_rfc3339()
    existing = meta.get("deletionTimestamp")
    if not existing and isinstance(meta.get("generation"), int) and meta["generation"] > 0:
        meta["generation"] += 1
    if not existing or _parse_time(existing) > _parse_time(now):
        meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0


class _Deletion:
    """One DELETE of ``cur`` (see the module docstring)."""

    def __init__(self, api: Store, rt: ResourceType, cur: Stored, opts: DeleteOptions) -> None:
        self.api, self.rt, self.cur, self.opts = api, rt, cur, opts

    def _code(self, gone: bool) -> int:
        return 202 if not gone and self.opts.orphan_dependents is False else 200

    def kept(self, stored: Stored) -> DeleteOutcome:
        return DeleteOutcome(stored, None, self._code(False), False)

    def update(self, obj: dict[str, Any]) -> Stored:
        """Store ``obj`` as the new state (nothing if it did not change, or a dry run)."""
        if obj == self.cur.decode():
            return self.cur
        return self.api.put(self.rt, reorder(obj, self.rt), self.cur)

    def remove(self, last: Stored) -> DeleteOutcome:
        """Delete now; ``last`` is the last stored state (the DELETED event shows it)."""
        rt = self.rt
        gone = self.api.remove(rt, last)
        if rt.strategy.returns_deleted_object:
            return DeleteOutcome(gone, None, self._code(True), True)
        details: dict[str, Any] = {"name": gone.key.rsplit("/", 1)[-1]}
        if rt.stored_group:
            details["group"] = rt.stored_group
        details["kind"] = rt.plural
        details["uid"] = gone.uid
        return DeleteOutcome(None, success_status(details), self._code(True), True)

    def run(self) -> DeleteOutcome:
        opts, strategy = self.opts, self.rt.strategy
        obj = self.cur.decode()
        meta = obj["metadata"]
        if strategy.deleted_by_controller:
            if not meta.get("deletionTimestamp"):
                return self.mark_terminating(obj)
            if strategy.pending_finalizers(obj):
                return self.kept(self.cur)  # the controller has not finished
        graceful, period = False, 0
        if strategy.graceful_deletion:
            current = meta.get("deletionGracePeriodSeconds")
            if not meta.get("deletionTimestamp"):
                period = strategy.grace_period(obj, opts.grace_period)
                meta["deletionTimestamp"] = now_rfc3339(float(period))
                meta["deletionGracePeriodSeconds"] = period
                graceful = True
            elif current:  # a graceful deletion is running: only a shorter one changes it
                if opts.grace_period is None:
                    return self.kept(self.cur)
                period = opts.grace_period if opts.grace_period >= 0 else 1
                if period >= current:
                    return self.kept(self.cur)
                start = _parse_time(meta["deletionTimestamp"]) - int(current)
                meta["deletionTimestamp"] = _format_time(start + period)
                meta["deletionGracePeriodSeconds"] = period
                graceful = True
        changed, finalizers = gc_finalizers(list(meta.get("finalizers") or []), opts)
        if changed:
            _set_finalizers(meta, finalizers)
        if not graceful:
            if finalizers:
                _mark_as_deleting(meta)
                return self.kept(self.update(obj))
            return self.remove(self.cur)
        stored = self.update(obj)
        if finalizers or period > 0:
            return self.kept(stored)
        return self.remove(stored)

    def mark_terminating(self, obj: dict[str, Any]) -> DeleteOutcome:
        """The first DELETE of a kind a controller deletes: the deletionTimestamp, what the
        strategy marks, the GC finalizers as asked; answered with the object."""
        meta = obj["metadata"]
        meta["deletionTimestamp"] = now_rfc3339()
        self.rt.strategy.mark_terminating(obj)
        changed, finalizers = gc_finalizers(list(meta.get("finalizers") or []), self.opts)
        if changed:
            _set_finalizers(meta, finalizers)
        return self.kept(self.update(obj))


def delete_object(
    api: Store, rt: ResourceType, namespace: str | None, name: str, opts: DeleteOptions
) -> DeleteOutcome:
    """DELETE ``name`` (see the module docstring); 404 if it does not exist."""
    cur = api.get(rt, namespace, name)
    if opts.uid is not None and opts.uid != cur.uid:
        raise KubeSimApiError.precondition_failed(
            rt.kind, rt.stored_group, name, "UID", opts.uid, cur.uid
        )
    if opts.resource_version is not None and opts.resource_version != str(cur.rv):
        raise KubeSimApiError.precondition_failed(
            rt.kind, rt.stored_group, name, "ResourceVersion", opts.resource_version, str(cur.rv)
        )
    return _Deletion(api, rt, cur, opts).run()
