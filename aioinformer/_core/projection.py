"""Projections: cache only the fields a controller reads.

``project("spec.nodeName", "status.phase")`` is a transform (``transform=`` of an informer)
that keeps, of each object's body, only the values at the named paths; a controller that
reads two fields of 200k pods then pays for those and not for 4 KB of pod spec each.

Contract:

* **What is kept.** The typed metadata: name, namespace, uid, resourceVersion,
  generation, labels, annotations, ownerReferences, finalizers, deletionTimestamp,
  creationTimestamp: what keys, indexes, selectors, owner lookups, finalizers and
  freshness need; apiVersion and kind. Labels and annotations are kept whole unless
  ``labels=`` or ``annotations=`` say otherwise: False drops them all, a collection of
  keys keeps those keys only (``labels={"app"}``: an index or a selector over another
  label then sees none; the informer's server-side ``label_selector`` is not affected).
  Of the body, each named path with its value whole (an object, a list, a scalar,
  ``null``) where the object has it; the objects on the way to a kept value keep only
  what is kept under them (``{"spec": {"nodeName": "n1"}}``; an object without
  ``spec.nodeName`` keeps ``{"spec": {}}``).
  managedFields are dropped. ``field()``, ``body_dict()`` and ``to_dict()`` of a projected
  object give the original's answers for the kept paths.
* **Paths** are dotted object keys of the body (``"status.conditions"``). A path that is
  empty, has an empty segment, starts at ``metadata``, ``apiVersion`` or ``kind`` (always
  kept), or has an integer segment (a list item: keep the list) is refused with a
  :class:`~aioinformer.ConfigError` when the projection is made. A path under another
  kept path adds nothing (the longer one is covered).
* **Speed.** One msgspec pass per object decodes only the named paths (everything else is
  skipped in C, kept values are copied as raw JSON, never decoded) and encodes the result:
  about half of what decoding the watch event cost (a 3 KB pod: a few microseconds;
  bench/projection_memory.py). A body whose shape does not match (``"spec"`` a list, say)
  takes a slower generic path with the same result.
* **Sharing.** ``project`` returns the same :class:`Projection` for the same paths and
  options, so informers asked for with equal projections share one cache. Equal kept
  bodies of at most 256 bytes are one ``bytes`` object (looked up by their
  bytes in a bounded table, as labels are): two fields of 50k pods take a few hundred
  distinct bodies (``{"spec":{"nodeName":"node-7"},"status":{"phase":"Running"}}``), not
  50k copies. Equal kept label (and annotation) subsets are one dict likewise: a
  StatefulSet's pods differ by their pod-name label, so ``labels={"app"}`` makes their
  labels one dict, not one per pod (the most a projection saves after the body).
* **Compact mode.** A projection is the user's transform, so in compact mode it runs
  first and the compactor compresses what it kept (bodies under 64 bytes stay plain).
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any, TypeAlias

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType

from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import _NO_MAP, KubeObject

__all__ = ["Projection", "project"]

_Tree: TypeAlias = "dict[str, _Tree | None]"  # key -> subtree, None: the value kept whole
_ALWAYS_KEPT = ("metadata", "apiVersion", "kind")
_replace = msgspec.structs.replace

_SHARED_BODY = 256  # the longest kept body shared with equal ones (longer rarely repeat)
_BODIES: dict[bytes, bytes] = {}
_MAX_BODIES = 4096
_KEPT_MAPS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
_MAX_KEPT_MAPS = 4096

Keep: TypeAlias = "bool | Collection[str]"
"""What of the labels (or annotations) a projection keeps: all (True), none (False), or
the values of the keys named."""


class Projection:
    """The transform :func:`project` makes: each object with only the named body paths
    and its metadata (see the module docstring). Callable on a
    :class:`~aioinformer.KubeObject`; immutable.

    Args:
        paths: the body's field paths to keep, dotted (``"status.phase"``).
        annotations: the ``metadata.annotations`` kept: all (True), none (False), or
            those of the keys named.
        labels: the ``metadata.labels`` kept, likewise.
    """

    __slots__ = ("_decoder", "_encode", "_tree", "annotations", "labels", "paths")

    def __init__(
        self, paths: tuple[str, ...], annotations: Keep = True, labels: Keep = True
    ) -> None:
        tree = _tree(paths)
        self._tree = tree
        self.paths: tuple[str, ...] = tuple(_paths(tree))
        """The kept paths, sorted, without those another one covers."""
        self.annotations: bool | frozenset[str] = _keep(annotations, "annotations")
        """The ``metadata.annotations`` kept: all (True), none (False), or these keys'."""
        self.labels: bool | frozenset[str] = _keep(labels, "labels")
        """The ``metadata.labels`` kept: all (True), none (False), or these keys'."""
        self._decoder = msgspec.json.Decoder(_struct(tree, "Projected"))
        self._encode = msgspec.json.Encoder().encode

    def __call__(self, obj: KubeObject) -> KubeObject:
        body = obj.body
        try:
            kept = self._encode(self._decoder.decode(body))
        except msgspec.ValidationError:  # a shape the structs do not take: generic
            kept = orjson.dumps(_pick(orjson.loads(body), self._tree))
        if len(kept) <= _SHARED_BODY:
            kept = _BODIES.get(kept) or _share(kept)
        meta = obj.metadata
        labels, annotations = self.labels, self.annotations
        if (labels is not True and meta.labels) or (annotations is not True and meta.annotations):
            meta = _replace(
                meta,
                labels=_kept_map(meta.labels, labels),
                annotations=_kept_map(meta.annotations, annotations),
            )
        return KubeObject(obj.api_version, obj.kind, meta, obj.key, obj.rv, kept)

    def __repr__(self) -> str:
        args = ", ".join(map(repr, self.paths))
        for name in ("annotations", "labels"):
            keep = getattr(self, name)
            if keep is not True:
                args += f", {name}={keep if keep is False else sorted(keep)!r}"
        return f"project({args})"


@functools.cache
def _projection(
    paths: tuple[str, ...], annotations: bool | frozenset[str], labels: bool | frozenset[str]
) -> Projection:
    return Projection(paths, annotations, labels)


def project(*paths: str, annotations: Keep = True, labels: Keep = True) -> Projection:
    """A transform that keeps only ``paths`` of each object's body, and its metadata.

    ``factory.informer("v1", "pods", transform=project("spec.nodeName", "status.phase"))``
    caches each pod's metadata and those two fields (see the module docstring for what is
    kept, the paths allowed and the cost).

    Args:
        paths: the body's field paths to keep, dotted (``"status.conditions"``): at least
            one; not under ``metadata`` (kept), with no list index.
        annotations: the ``metadata.annotations`` to keep: all (True), none (False, e.g.
            to drop kubectl's last-applied-configuration), or those of the keys named
            (a set, a list or a tuple of keys).
        labels: the ``metadata.labels`` to keep, likewise (``labels={"app"}``: indexes and
            selectors over other labels see none).

    Returns:
        The :class:`Projection`: the same one for the same paths and options.

    Raises:
        ConfigError: no path, a path that is not allowed, or keys that are not a
            collection of strings (the message says which and why).
    """
    tree = _tree(paths)
    return _projection(
        tuple(_paths(tree)), _keep(annotations, "annotations"), _keep(labels, "labels")
    )


def _keep(keep: object, what: str) -> bool | frozenset[str]:
    """``labels=``/``annotations=`` as kept: True, False or a frozenset of keys;
    ConfigError for anything else."""
    if keep is True or keep is False:
        return keep
    if isinstance(keep, str | bytes) or not isinstance(keep, Collection):
        raise ConfigError(
            f"project(): {what}= takes True, False or a collection of keys "
            f"(e.g. {what}={{'app'}}), not {keep!r}"
        )
    keys = frozenset(keep)
    bad = [key for key in keys if not isinstance(key, str) or not key]
    if bad:
        raise ConfigError(f"project(): {what}= keys are non-empty strings, not {bad[0]!r}")
    return keys


def _kept_map(values: dict[str, str], keep: bool | frozenset[str]) -> dict[str, str]:
    """What ``keep`` keeps of ``values`` (labels or annotations): equal results are one
    dict (a bounded table, as bodies are)."""
    if keep is True:
        return values
    if keep is False or not values:
        return _NO_MAP
    items = tuple((key, value) for key, value in values.items() if key in keep)
    if not items:
        return _NO_MAP
    shared = _KEPT_MAPS.get(items)
    if shared is None:
        if len(_KEPT_MAPS) >= _MAX_KEPT_MAPS:
            _KEPT_MAPS.clear()
        shared = _KEPT_MAPS[items] = dict(items)
    return shared


def _share(body: bytes) -> bytes:
    """An exact-size copy of ``body`` (the encoder's output keeps its spare room),
    remembered so that the equal bodies that follow are this one."""
    if len(_BODIES) >= _MAX_BODIES:
        _BODIES.clear()
    shared = _BODIES[body] = memoryview(body).tobytes()
    return shared


def _tree(paths: tuple[Any, ...]) -> _Tree:
    """The paths as a tree of keys; ConfigError for a path not allowed."""
    if not paths:
        raise ConfigError(
            "project() needs at least one field path (only the metadata: "
            "metadata_only=True watches that and nothing else)"
        )
    tree: _Tree = {}
    for path in paths:
        segments = _segments(path)
        node = tree
        for i, segment in enumerate(segments):
            if i == len(segments) - 1:
                node[segment] = None  # (whole: covers anything named under it)
                break
            child = node.setdefault(segment, {})
            if child is None:  # an outer path keeps it whole already
                break
            node = child
    return tree


def _segments(path: object) -> list[str]:
    if not isinstance(path, str):
        raise ConfigError(f"project(): a field path is a str, not {type(path).__name__}")
    segments = path.split(".")
    if not path.strip() or any(not s or s != s.strip() for s in segments):
        raise ConfigError(f"project(): {path!r} is not a dotted field path (e.g. 'status.phase')")
    if segments[0] in _ALWAYS_KEPT:
        raise ConfigError(
            f"project(): {path!r}: {segments[0]} is always kept (name body fields, e.g. "
            "'spec.nodeName'; annotations=False drops the annotations)"
        )
    for segment in segments:
        if segment.isdigit():
            keep = ".".join(segments[: segments.index(segment)])
            raise ConfigError(
                f"project(): {path!r}: list items cannot be picked; keep the list ({keep!r})"
            )
    return segments


def _paths(tree: _Tree, prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, sub in sorted(tree.items()):
        out.extend([prefix + key] if sub is None else _paths(sub, f"{prefix}{key}."))
    return out


def _struct(tree: _Tree, name: str) -> type[msgspec.Struct]:
    """A struct that decodes exactly ``tree``'s keys (others skipped) and encodes back
    only those present."""
    fields: list[tuple[str, Any, Any]] = []
    rename: dict[str, str] = {}
    for i, (key, sub) in enumerate(tree.items()):
        field = f"f{i}"
        rename[field] = key
        kind: Any = Raw if sub is None else _struct(sub, f"{name}_{i}") | None
        fields.append((field, kind | UnsetType, UNSET))
    return msgspec.defstruct(name, fields, rename=rename, omit_defaults=True, gc=False)


def _pick(value: Any, tree: _Tree) -> Any:
    """:class:`Projection`'s result for any decoded body (the generic path)."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, sub in tree.items():
        if key in value:
            out[key] = value[key] if sub is None else _pick(value[key], sub)
    return out
