"""Index functions: how the store files objects under secondary keys.

Vocabulary (as in client-go's ``index.go``): an **index** has a *name* (e.g.
``"controller"``) and an :data:`IndexFunc`; the function maps one object to its *index
values* (e.g. the uid of its controller); the store keeps, per index, value -> set of
object *keys*. ``snapshot.by_index("controller", uid)`` then answers in time proportional to
the answer, not to the cache.

Contract for an :data:`IndexFunc`: deterministic and pure (it is called on the old and on
the new version of an object, and must give the same values for the same object), cheap
(the store's single writer calls it for every change), and it returns zero or more strings
(duplicates are ignored). An object with no values is simply not in that index.

Built-ins: :func:`by_namespace`, :func:`by_controller_uid`, :func:`by_label`,
:func:`by_field`. :data:`DEFAULT_INDEXERS` are always present in every store.

The built-ins that read a single ``metadata`` attribute declare it (:func:`metadata_reader`),
so a store can skip them when an update leaves that attribute equal: most updates (status,
spec, annotations) change no index value, and one comparison is cheaper than two calls.
Other index functions are always called.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeAlias

from aioinformer._core.errors import ConfigError
from aioinformer._core.failurelog import FailureLog

if TYPE_CHECKING:
    from aioinformer._core.objects import KubeObject, ObjectMeta

__all__ = [
    "DEFAULT_INDEXERS",
    "IndexFunc",
    "IndexGuard",
    "IndexPlan",
    "by_controller_uid",
    "by_field",
    "by_label",
    "by_namespace",
    "check_indexers",
    "index_plan",
    "merge_indexers",
    "metadata_reader",
    "metadata_readers",
    "unknown_index",
]

IndexFunc: TypeAlias = "Callable[[KubeObject], Iterable[str]]"
"""Maps an object to the values it is indexed under (zero or more strings)."""

_NONE: tuple[str, ...] = ()
_READS: weakref.WeakKeyDictionary[Callable[..., Any], str] = weakref.WeakKeyDictionary()


def _attribute(fn: IndexFunc) -> str | None:
    try:
        return _READS.get(fn)
    except TypeError:  # not weak-referenceable: not one of ours
        return None


def metadata_reader(fn: IndexFunc) -> Callable[[ObjectMeta], object] | None:
    """For a built-in index function that depends only on one ObjectMeta attribute, a
    getter of that attribute (equal values give equal index values); None otherwise."""
    attribute = _attribute(fn)
    return None if attribute is None else attrgetter(attribute)


def metadata_readers(fns: Iterable[IndexFunc]) -> Callable[[ObjectMeta], object] | None:
    """One getter for every index function of ``fns`` at once: equal results for an old
    and a new object mean that no index value of theirs changed (a store then skips all
    the indexes with one comparison). None if one of ``fns`` has no
    :func:`metadata_reader` (it must be called on both objects)."""
    attributes: list[str] = []
    for fn in fns:
        attribute = _attribute(fn)
        if attribute is None:
            return None
        if attribute not in attributes:
            attributes.append(attribute)
    if not attributes:
        return lambda meta: None  # no index at all: nothing can change
    return attrgetter(*attributes)


class IndexGuard:
    """Keeps a store's writer alive when an index function raises.

    :meth:`guard` wraps an index function so that an exception, or values that are not
    strings (a bare string included), leave that object out of that index (no values),
    counted in :attr:`errors` and logged as a WARNING naming the index, the object key and
    the exception (the first of each exception type, then a summary at most every 10 s:
    :mod:`~aioinformer._core.failurelog`). The object itself is stored as usual:
    ``get``/``list`` find it, only ``by_index`` on the failing index does not. The
    built-ins that read one metadata attribute cannot raise and are returned unwrapped.
    """

    def __init__(self, logger: logging.Logger) -> None:
        self.errors = 0
        """Index function calls that raised."""
        self._failures = FailureLog(logger, logging.WARNING)

    def guard(self, name: str, fn: IndexFunc) -> IndexFunc:
        """``fn``, made safe (see the class docstring)."""
        if _attribute(fn) is not None:
            return fn

        def guarded(obj: KubeObject) -> tuple[str, ...]:
            try:
                result = fn(obj)
                if isinstance(result, str):
                    raise TypeError(f"returned the string {result[:40]!r}, not strings")
                values = tuple(result)  # a generator may raise half-way: inside the try
                for value in values:
                    if type(value) is not str:
                        raise TypeError(f"returned a {type(value).__name__}, not strings")
                return values
            except Exception as exc:
                self._failed(name, obj, exc)
                return _NONE

        guarded.__qualname__ = getattr(fn, "__qualname__", "index")
        guarded.__wrapped__ = fn  # type: ignore[attr-defined]
        return guarded

    def _failed(self, name: str, obj: KubeObject, exc: Exception) -> None:
        self.errors += 1
        self._failures.failed(
            exc,
            "index %r: the index function raised on %s: %r; left out of that index",
            name,
            obj.key,
            exc,
            traceback=False,
            kind=(name, type(exc)),
        )


def _reads(fn: Callable[..., Any], attribute: str) -> None:
    _READS[fn] = attribute


def by_namespace(obj: KubeObject) -> tuple[str, ...]:
    """The object's namespace; cluster-scoped objects (empty namespace) get no value.

    The built-in index "namespace". Unlike client-go, cluster-scoped objects are not filed
    under ``""``: that would put every node of a node informer in one index entry for
    nothing.

    Args:
        obj: the object to index.
    """
    ns = obj.metadata.namespace
    return (ns,) if ns else _NONE


_reads(by_namespace, "namespace")


def by_controller_uid(obj: KubeObject) -> tuple[str, ...]:
    """The uid of the owner reference with ``controller: true``, if any.

    The built-in index "controller": ``by_index("controller", statefulset_uid)`` lists the
    pods a StatefulSet controls.

    Args:
        obj: the object to index.
    """
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return (ref.uid,) if ref.uid else _NONE
    return _NONE


_reads(by_controller_uid, "owner_references")


def by_label(key: str) -> IndexFunc:
    """An index function filing objects under the value of label ``key``.

    Objects without the label get no value; a present label with an empty value is filed
    under ``""`` (``app=`` is a valid, selectable label).

    Args:
        key: the label's key (``"app"``, ``"app.kubernetes.io/name"``).
    """

    def index_by_label(obj: KubeObject) -> tuple[str, ...]:
        value = obj.metadata.labels.get(key)
        return _NONE if value is None else (value,)

    index_by_label.__qualname__ = f"by_label({key!r})"
    _reads(index_by_label, "labels")
    return index_by_label


def by_field(path: str) -> IndexFunc:
    """An index function filing objects under the value at dotted ``path``
    (e.g. ``"spec.nodeName"``).

    Missing, ``None`` and ``""`` give no value. Strings are used as they are; numbers as
    ``str(n)``; booleans as ``"true"``/``"false"`` (their JSON spelling); a list gives one
    value per scalar element; a mapping gives no value.

    Args:
        path: dotted path into the object (``"spec.nodeName"``, ``"status.phase"``).
    """

    def index_by_field(obj: KubeObject) -> tuple[str, ...]:
        value = obj.field(path)
        if isinstance(value, list | tuple):
            out: list[str] = []
            for element in value:
                out.extend(_scalar(element))
            return tuple(out)
        return _scalar(value)

    index_by_field.__qualname__ = f"by_field({path!r})"
    return index_by_field


def _scalar(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return _NONE
    if isinstance(value, str):
        return (value,)
    if isinstance(value, bool):
        return ("true" if value else "false",)
    if isinstance(value, int | float):
        return (str(value),)
    return _NONE


DEFAULT_INDEXERS: Mapping[str, IndexFunc] = {
    "namespace": by_namespace,
    "controller": by_controller_uid,
}
"""The indexes every store has: ``"namespace"`` and ``"controller"`` (controller uid)."""


def _untrusted(value: object) -> object:
    """``value`` as the object it is at run time, whatever its annotation said."""
    return value


def check_indexers(indexers: Mapping[str, IndexFunc] | None) -> None:
    """A :class:`ConfigError` for an index whose name is not a non-empty string or whose
    function is not callable (``{"node": "spec.nodeName"}`` means ``by_field``): refused
    when registered, not once per object."""
    for name, fn in (indexers or {}).items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"index names are non-empty strings, not {name!r}")
        if not callable(given := _untrusted(fn)):
            hint = f" (by_field({given!r})?)" if isinstance(given, str) else ""
            raise ConfigError(
                f"index {name!r}: the index function must be callable, not {given!r}{hint}"
            )


def merge_indexers(
    indexers: Mapping[str, IndexFunc] | None, guard: IndexGuard
) -> dict[str, IndexFunc]:
    """DEFAULT_INDEXERS plus ``indexers``, each made safe by ``guard``; redefining a
    default index, a bad name or a function that is not callable is a ConfigError."""
    check_indexers(indexers)
    merged = dict(DEFAULT_INDEXERS)
    for name, fn in (indexers or {}).items():
        if name in merged and merged[name] is not fn:
            raise ConfigError(f"index {name!r} is built in and cannot be redefined")
        merged[name] = fn
    return {name: guard.guard(name, fn) for name, fn in merged.items()}


def unknown_index(name: str, known: Iterable[str]) -> ConfigError:
    """The error for a query on an index that does not exist."""
    return ConfigError(f"no index {name!r}; known indexes: {', '.join(sorted(known))}")


IndexPlan: TypeAlias = tuple[
    "list[tuple[str, IndexFunc, Callable[[ObjectMeta], object] | None]]",
    "Callable[[ObjectMeta], object] | None",
]
"""Per index (name, function, metadata reader), and the reader of all of them at once:
worked out when the indexes change, not per batch."""


def index_plan(funcs: Mapping[str, IndexFunc]) -> IndexPlan:
    """The :data:`IndexPlan` of ``funcs``."""
    return (
        [(name, fn, metadata_reader(fn)) for name, fn in funcs.items()],
        metadata_readers(funcs.values()),
    )
