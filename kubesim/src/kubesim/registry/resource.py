"""What a served resource type is, and the strategy that carries its kind's rules.

A :class:`ResourceType` is one served group/version/resource: its names, scope, verbs and
subresources, as discovery lists them. Its :attr:`~ResourceType.strategy` is what the kind
does beyond the generic registry, kube-apiserver's per-kind strategy
(``pkg/registry/<group>/<kind>/strategy.go``): the generic store
(:mod:`kubesim.registry.store`), the deletion (:mod:`kubesim.registry.deletion`), the field
manager, the tables and the selectors call it, and never ask which kind they serve. The
built-in kinds' strategies are in :mod:`kubesim.apis`, the custom resources' and the CRDs'
in :mod:`kubesim.apiextensions`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import SelectorError
from kubesim.fieldmanager.fieldpath import Path
from kubesim.machinery.documents import order_keys
from kubesim.machinery.fields import FieldSelector, known_field_selectors
from kubesim.machinery.printing import Printer
from kubesim.machinery.validation import (
    Cause,
    NameRule,
    validate_object_meta,
    validate_object_meta_update,
)

__all__ = [
    "CRD_VERBS",
    "DEFAULT_STRATEGY",
    "SCALE",
    "STANDARD_VERBS",
    "STATUS_VERBS",
    "ResourceType",
    "Strategy",
    "Subresource",
    "storage_version_hash",
]

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
#: The verb order the apiextensions discovery controller lists for custom resources (13d).
CRD_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """``discovery.StorageVersionHash``: base64 of the first 8 bytes of
    sha256("group/version/kind"), e.g. ``xPOwRZ+Yhw8=`` for core v1 Pod (as recorded)."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


@dataclass(frozen=True, slots=True)
class Subresource:
    """A served subresource: ``name`` (``status``, ``binding``, ``scale``, ``finalize``), the
    kind its requests and responses carry, its verbs, and the kind's group and version when
    it is not the parent's (``autoscaling/v1`` Scale)."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


#: ``*/scale`` of the apps workloads and of custom resources that declare it.
SCALE = Subresource("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")


#: The top-level keys of a built-in object in the order its Go type marshals them.
_TOP_LEVEL_ORDER = ("kind", "apiVersion", "metadata", "spec", "status")


class Strategy:
    """The rules of one kind, on every :class:`ResourceType` that serves it.

    The base class is a kind with no rules of its own: ObjectMeta validation, no defaults
    beyond the key order, the default table, the metadata field selectors. A kind's
    strategy overrides what its kind does differently; every method gets the type the
    request came through (``rt``), so one strategy serves all versions of its kind.

    The generic store calls the hooks at fixed points of each write, as kube-apiserver's
    ``rest.BeforeCreate`` / ``BeforeUpdate`` do:

    * create: :meth:`validate` (before defaulting), :meth:`default` (``creating=True``),
      :meth:`prepare_for_create`, :meth:`admit`;
    * update of the object (or a subresource other than the status): :meth:`prepare_for_update`,
      :meth:`default` (``creating=False``), :meth:`validate_update`;
    * update of the status: :meth:`default_status`, :meth:`prepare_for_status_update`;
    * every update, last: :meth:`schema_causes`;
    * every stored object: :meth:`to_storage` on the way in, :meth:`to_view` on the way out
      (when :meth:`converts`), :meth:`selectable_fields` for field selectors;
    * DELETE: :meth:`mark_terminating`, :meth:`pending_finalizers`, :meth:`grace_period`;
      after an object that defines types was created or deleted: :meth:`served_types`.

    Hooks that validate return the causes of a 422 (empty when fine) and never raise; hooks
    that default or prepare change the object in place.
    """

    #: The format of ``metadata.name`` (:func:`~kubesim.machinery.validation.validate_name`).
    name_rule: NameRule = "subdomain"
    #: Whether the server keeps ``metadata.generation`` (1 on create, +1 when the spec changes).
    uses_generation: bool = False
    #: Whether a create keeps the status in the body (other kinds start without one).
    keeps_status_on_create: bool = False
    #: Whether a completed DELETE answers the object (``ReturnDeletedObject``), not a Status.
    returns_deleted_object: bool = False
    #: Whether a DELETE starts a grace period (:meth:`grace_period`) before the object goes.
    graceful_deletion: bool = False
    #: Whether the first DELETE only marks the object (:meth:`mark_terminating`) for a
    #: controller to empty and finalize (a Namespace), instead of deleting it.
    deleted_by_controller: bool = False
    #: Whether an object of the kind makes the server serve types (:meth:`served_types`).
    serves_types: bool = False
    #: The ``spec`` of the kind's zero value as its Go type marshals it (None: omitted),
    #: what the field manager compares a create against.
    zero_spec: Mapping[str, Any] | None = None
    #: Fields admission or the create strategy set after the field manager ran: a create
    #: records them for nobody unless the request set them.
    untracked_on_create: tuple[Path, ...] = ()
    #: Whether ``metadata.namespace`` is a field label (the default selector conversion's:
    #: even for a cluster-scoped kind).
    namespace_field_label: bool = True
    #: The kind's table printer (None: the default table, Name and Created At).
    table: Printer | None = None

    # -- validation -------------------------------------------------------------------------

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """The causes for creating ``obj`` (in ``rt``'s form, not defaulted yet): ObjectMeta
        here; a kind adds its own."""
        meta = obj.get("metadata")
        return validate_object_meta(
            meta if isinstance(meta, dict) else {}, rule=self.name_rule, namespaced=rt.namespaced
        )

    def validate_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> list[Cause]:
        """The causes for replacing ``old`` by ``new`` (the object, not its status; both in
        ``rt``'s form, ``new`` defaulted): ObjectMeta's update rules here; a kind adds its
        own. The resourceVersion is the store's to check."""
        old_meta, new_meta = (
            m if isinstance(m, dict) else {} for m in (old.get("metadata"), new.get("metadata"))
        )
        return validate_object_meta_update(old_meta, new_meta) + validate_object_meta(
            new_meta, rule=self.name_rule, namespaced=rt.namespaced, create=False
        )

    def schema_causes(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """The causes a schema finds in any write of ``obj`` (object or status), after the
        other checks: none for a built-in kind (custom resources: their CRD's schema)."""
        return []

    # -- defaulting and preparation ---------------------------------------------------------

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        """Default ``obj`` in place as request decoding, and (``creating``) the create
        strategy would; the base puts the top-level keys in Go's order. Never validates."""
        order_keys(obj, _TOP_LEVEL_ORDER)

    def default_status(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Default what a write of the status subresource may leave unset, in place."""

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        """``PrepareForCreate``: allocate or reset what the registry decides for a new
        (defaulted) ``obj``, in place; ``stored`` gives the type's stored objects. Returns
        the causes of a 422 (the kind's own validation of the prepared object included)."""
        return []

    def prepare_for_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        subresource: str | None,
    ) -> list[Cause]:
        """``PrepareForUpdate`` of a write of the object (``subresource`` None) or of a
        subresource that is not the status: keep in ``new`` what only another path may
        change. Returns the causes of a 422."""
        return []

    def prepare_for_status_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        subresource: str | None,
    ) -> list[Cause]:
        """The same for a write of a status-like ``subresource`` (``new`` is the stored
        object with the written status merged in). Returns the causes of a 422."""
        return []

    def admit(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The mutating admission a create through the API gets (not an object stored with
        its status as given), in place."""

    # -- storage and serving ----------------------------------------------------------------

    def converts(self, rt: ResourceType) -> bool:
        """Whether ``rt`` serves the kind in a form other than the stored one (then
        :meth:`to_view` changes what is read, :meth:`to_storage` what is written)."""
        return False

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` (in ``rt``'s form) in the stored form: the same dict for a kind stored as
        served. Idempotent on a stored form."""
        return obj

    def to_view(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """A stored object (decoded) as ``rt`` serves it: the same dict when nothing
        converts."""
        return obj

    def printer(self, rt: ResourceType) -> Printer | None:
        """The table printer of ``rt`` (None: the default table)."""
        return self.table

    def bookmark_fields(self) -> dict[str, Any]:
        """The fields besides ``metadata`` that a BOOKMARK's object of this kind carries:
        what its Go type's zero value marshals (none for most kinds)."""
        return {}

    # -- field selectors --------------------------------------------------------------------

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        """The kind's own selectable fields of a stored object (``GetAttrs`` beyond the
        metadata), as strings; called with ``{}`` for the labels alone."""
        return {}

    def field_labels(self, rt: ResourceType) -> frozenset[str]:
        """The field labels a ``fieldSelector`` on ``rt`` may use."""
        labels = {"metadata.name"}
        if self.namespace_field_label:
            labels.add("metadata.namespace")
        return frozenset(labels | self.fields({}).keys())

    def selectable_fields(self, rt: ResourceType, obj: Mapping[str, Any]) -> dict[str, str]:
        """The field set a stored object is filtered with: :meth:`field_labels` with their
        values (``metadata.name``, ``metadata.namespace``, then :meth:`fields`)."""
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        out = {"metadata.name": _str(meta.get("name"))}
        if "metadata.namespace" in self.field_labels(rt):
            out["metadata.namespace"] = _str(meta.get("namespace"))
        out.update(self.fields(obj))
        return out

    def unsupported_field_label(self, label: str) -> str:
        """The message of a field selector on a label the kind does not have (the default
        conversion's; kinds with their own conversion func word it their way)."""
        return known_field_selectors(label)

    def field_selector(self, rt: ResourceType, selector: FieldSelector) -> FieldSelector:
        """``selector`` (of a request to ``rt``) checked against the kind's labels, in the
        labels of the stored form; :class:`~kubesim.errors.SelectorError` for the first
        label it does not take, in the apiserver's order."""
        supported = self.field_labels(rt)
        for label, _op, _value in selector.terms:
            if label not in supported:
                raise SelectorError(self.unsupported_field_label(label))
        return selector

    # -- deletion ---------------------------------------------------------------------------

    def mark_terminating(self, obj: dict[str, Any]) -> None:
        """For a kind with :attr:`deleted_by_controller`: mark what the first DELETE of
        ``obj`` changes besides its deletionTimestamp (a Namespace's phase), in place."""

    def pending_finalizers(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` still waits for finalizers of the kind's own, besides
        ``metadata.finalizers`` (a Namespace's ``spec.finalizers``)."""
        return False

    def grace_period(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """The grace period in seconds of a first DELETE of ``obj`` (a kind with
        :attr:`graceful_deletion`; ``requested`` is the DeleteOptions'): 0 deletes now."""
        return 0

    # -- types served by objects ------------------------------------------------------------

    def served_types(self, obj: Mapping[str, Any]) -> list[ResourceType]:
        """The types an object of a kind with :attr:`serves_types` makes the server serve
        once it is established (a CRD: one per served version)."""
        return []

    def served_status(self, obj: Mapping[str, Any], now: str) -> dict[str, Any]:
        """The status the server writes once the types of ``obj`` are served (at ``now``)."""
        return {}


def _str(v: object) -> str:
    return v if isinstance(v, str) else ""


#: The strategy of a kind with no rules of its own.
DEFAULT_STRATEGY = Strategy()


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served group/version/resource. ``storage_version`` (default: ``version``) feeds
    the storage version hash; ``list_kind_name`` overrides ``kind + "List"`` (CRD listKind);
    ``extra_subresources`` are served besides ``status`` (``has_status``); ``crd_version``
    is a custom type's entry of its CRD's ``spec.versions`` (schema, printer columns,
    subresources), None for built-in types. ``storage_group`` is set on a type served from
    the storage of the same resource in that group (kube-apiserver's cohabiting resources:
    events.k8s.io/v1 Events are core Events); None: a storage of its own. ``strategy`` is
    the kind's :class:`Strategy` (one object per kind, shared by the versions serving it).
    Types compare by what they serve, not by their strategy."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = True
    custom: bool = False
    verbs: tuple[str, ...] = STANDARD_VERBS
    storage_version: str = ""
    list_kind_name: str = ""
    extra_subresources: tuple[Subresource, ...] = ()
    crd_version: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    storage_group: str | None = None
    strategy: Strategy = field(default=DEFAULT_STRATEGY, compare=False)

    @property
    def api_version(self) -> str:
        """``v1`` for core, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """``PodList``, or the CRD's ``names.listKind``."""
        return self.list_kind_name or f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """``pods`` or ``statefulsets.apps`` (plural[.group])."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def stored_group(self) -> str:
        """The group whose storage holds these objects (``storage_group``, else ``group``)."""
        return self.group if self.storage_group is None else self.storage_group

    @property
    def storage_version_hash(self) -> str:
        """The discovery ``storageVersionHash`` (of the storage version, as upstream)."""
        version = self.storage_version or self.version
        return storage_version_hash(self.stored_group, version, self.kind)

    @property
    def subresources(self) -> tuple[Subresource, ...]:
        """Served subresources, sorted by name (discovery order)."""
        subs = list(self.extra_subresources)
        if self.has_status:
            subs.append(Subresource("status", self.kind, STATUS_VERBS))
        return tuple(sorted(subs, key=lambda s: s.name))
