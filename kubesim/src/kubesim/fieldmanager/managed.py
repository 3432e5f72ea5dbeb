"""``metadata.managedFields``: who owns which fields, as the apiserver's field manager keeps it.

An :class:`Entry` is one manager's claim: (manager, operation ``Apply`` or ``Update``,
apiVersion, subresource) with the set of fields it owns (:mod:`kubesim.fieldmanager.fieldpath`) and
the time its fields last changed the object. :func:`decode_entries` / :func:`encode_entries` convert
to and from the FieldsV1 wire form, in the apiserver's order (Apply before Update, then by
time, manager, apiVersion, subresource: so a new manager without a time comes first).

:func:`track_update` records a non-apply write (POST, PUT, PATCH) from the change it makes:
the writer gains every field it adds or modifies and every other manager loses those fields
and the removed ones (ownership moves, it is never shared by an Update); a manager left with
nothing is dropped. A create compares against the kind's empty object. The fields the
apiserver never tracks (name, namespace, uid, resourceVersion, generation,
creationTimestamp, managedFields, apiVersion, kind) and the other half of a
status-subresource kind (status for the main resource, everything else for ``/status``) are
left out. At most 10 Update entries are kept; older ones merge into ``ancient-changes``.
A ``/scale`` writer's entry (subresource ``scale``, owning ``spec.replicas``) has no time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.fieldmanager.fieldpath import Path, from_fields_v1, to_fields_v1
from kubesim.fieldmanager.schemas import Type
from kubesim.fieldmanager.typed import compare

__all__ = [
    "STRIPPED",
    "Entry",
    "TrackedType",
    "decode_entries",
    "encode_entries",
    "entry_of",
    "outside_subresource",
    "track_update",
    "without_managed_fields",
    "zero_object",
]

#: Fields no manager ever owns.
STRIPPED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {
        ("f:metadata", "f:" + k)
        for k in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    }
)
MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"


class TrackedKind(Protocol):
    """What field tracking needs of a kind (a resource type's strategy is one)."""

    @property
    def zero_spec(self) -> Mapping[str, Any] | None:
        """The ``spec`` of the kind's zero value as its Go type marshals it (None: none)."""

    @property
    def untracked_on_create(self) -> tuple[Path, ...]:
        """Fields a create sets after the field manager ran (owned by nobody unless the
        request set them)."""


class TrackedType(Protocol):
    """What field tracking needs of a resource type (a ``ResourceType`` is one)."""

    @property
    def api_version(self) -> str:
        """The type's ``apiVersion``: what its managers' entries name."""

    @property
    def has_status(self) -> bool:
        """Whether the status is a subresource (then the object's writes do not own it)."""

    @property
    def custom(self) -> bool:
        """Whether it is a custom resource (whose zero value is ``{}``)."""

    @property
    def strategy(self) -> TrackedKind:
        """The kind's rules."""


@dataclass(eq=False)
class Entry:
    """One managedFields entry; ``time`` is ``None`` until the manager changes the object."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str | None = None
    fields: set[Path] = field(default_factory=set)

    def identity(self) -> tuple[str, str, str, str]:
        """What makes two entries the same manager (appliers regardless of apiVersion)."""
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, self.subresource, version)


def decode_entries(meta: Mapping[str, Any]) -> list[Entry]:
    """The entries of an object's metadata (malformed entries are skipped)."""
    out: list[Entry] = []
    for e in meta.get("managedFields") or ():
        if not isinstance(e, dict) or e.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        t = e.get("time")
        out.append(
            Entry(
                str(e.get("manager", "")),
                str(e.get("operation", "Update")),
                str(e.get("apiVersion", "")),
                str(e.get("subresource", "") or ""),
                t if isinstance(t, str) else None,
                from_fields_v1(e.get("fieldsV1")),
            )
        )
    return out


def entry_of(entries: list[Entry], wanted: Entry) -> Entry:
    """The entry of ``entries`` with ``wanted``'s identity (manager, operation, version
    group, subresource), or ``wanted`` itself, appended to them."""
    for e in entries:
        if e.identity() == wanted.identity():
            return e
    entries.append(wanted)
    return wanted


def _sort_key(e: Entry) -> tuple[str, str, str, str, str]:
    # RFC 3339 UTC seconds sort as text; no time sorts first
    return (e.operation, e.time or "", e.manager, e.api_version, e.subresource)


def encode_entries(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The wire form, sorted as the apiserver sorts it; entries owning nothing are dropped."""
    out: list[dict[str, Any]] = []
    for e in sorted((e for e in entries if e.fields), key=_sort_key):
        d: dict[str, Any] = {"manager": e.manager, "operation": e.operation}
        d["apiVersion"] = e.api_version
        if e.time is not None:
            d["time"] = e.time
        d["fieldsType"] = "FieldsV1"
        d["fieldsV1"] = to_fields_v1(e.fields)
        if e.subresource:
            d["subresource"] = e.subresource
        out.append(d)
    return out


def without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``obj`` whose metadata has no managedFields (what is compared)."""
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def outside_subresource(paths: Iterable[Path], rt: TrackedType, subresource: str) -> set[Path]:
    """``paths`` without what a write to ``subresource`` ("" for the main resource) of a
    ``rt`` object does not set (the apiserver's reset fields)."""
    if subresource == "status":
        return {p for p in paths if p[:1] == ("f:status",)}
    if subresource == "" and rt.has_status:
        return {p for p in paths if p[:1] != ("f:status",)}
    return set(paths)


def _tracked_part(obj: Mapping[str, Any], rt: TrackedType, subresource: str) -> dict[str, Any]:
    """What a write to ``subresource`` can change: the object without managedFields, and
    without status (main resource) or with status alone (``/status``)."""
    if subresource == "status":
        return {"status": obj["status"]} if "status" in obj else {}
    out = without_managed_fields(obj)
    if rt.has_status and subresource == "":
        out.pop("status", None)
    return out


def zero_object(rt: TrackedType) -> dict[str, Any]:
    """The kind's empty object as the apiserver encodes a zero value (what a create is
    compared against): typed kinds carry their non-omitted struct fields."""
    if rt.custom:
        return {}
    out: dict[str, Any] = {"metadata": {"creationTimestamp": None}}
    spec = rt.strategy.zero_spec
    if spec is not None or rt.has_status:
        out["spec"] = _copy(dict(spec or {}))
    if rt.has_status:
        out["status"] = {}
    return out


def _copy(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _copy(v) if isinstance(v, dict) else v for k, v in d.items()}


def track_update(
    t: Type,
    rt: TrackedType,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    manager: str,
    subresource: str = "",
    requested: Any = None,
    *,
    request: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The managedFields of ``new`` after ``manager`` wrote it over ``old`` (``None``: a
    create, where ``request`` is the body sent, for what admission adds). ``requested``
    (the managedFields a main-resource write carried; for a create, the body's) replaces
    the stored entries when it differs from them: ``[{}]`` clears them, as upstream."""
    if old is None and request is not None:
        requested = (request.get("metadata") or {}).get("managedFields")
    entries = _starting_entries(old, requested if subresource == "" else None)
    lhs = _tracked_part(old if old is not None else zero_object(rt), rt, subresource)
    c = compare(lhs, _tracked_part(new, rt, subresource), t)
    changed = outside_subresource(c.added | c.modified, rt, subresource) - STRIPPED
    removed = outside_subresource(c.removed, rt, subresource)
    if old is None:
        body_spec = (request or {}).get("spec")
        for p in rt.strategy.untracked_on_create:
            if not (isinstance(body_spec, dict) and p[1][2:] in body_spec):
                changed = {q for q in changed if q[: len(p)] != p}
    for e in entries:
        e.fields -= changed
        e.fields -= removed
    if changed:
        mine = entry_of(entries, Entry(manager, "Update", rt.api_version, subresource))
        mine.fields |= changed
        # a /scale writer's entry is rebuilt from the Scale object's, which has no time
        mine.time = None if subresource == "scale" else now_rfc3339()
    return encode_entries(cap_updates(entries))


def _starting_entries(old: Mapping[str, Any] | None, requested: Any) -> list[Entry]:
    stored = (old.get("metadata") or {}).get("managedFields") if old is not None else None
    if isinstance(requested, list) and requested and requested != stored:
        if requested == [{}]:
            return []
        entries = decode_entries({"managedFields": requested})
        if entries:
            return entries
    return decode_entries({"managedFields": stored}) if stored else []


def cap_updates(entries: list[Entry]) -> list[Entry]:
    """At most :data:`MAX_UPDATE_MANAGERS` Update entries: the oldest merge, per apiVersion,
    into an ``ancient-changes`` entry."""
    updates = [e for e in entries if e.operation == "Update" and e.fields]
    if len(updates) <= MAX_UPDATE_MANAGERS:
        return entries
    updates.sort(key=lambda e: (e.time or "", e.manager))
    excess = len(updates) - MAX_UPDATE_MANAGERS
    buckets: dict[str, Entry] = {}
    for e in updates:
        if excess <= 0:
            break
        bucket = buckets.get(e.api_version)
        if bucket is None:
            buckets[e.api_version] = e
            continue
        if bucket.manager != ANCIENT:
            bucket.manager = ANCIENT
            bucket.subresource = ""
        bucket.fields |= e.fields
        bucket.time = e.time or bucket.time
        e.fields = set()
        excess -= 1
    return [e for e in entries if e.fields]
