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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from ._objects import KubeObject

__all__ = [
    "DEFAULT_INDEXERS",
    "IndexFunc",
    "by_controller_uid",
    "by_field",
    "by_label",
    "by_namespace",
]

IndexFunc: TypeAlias = "Callable[[KubeObject], Iterable[str]]"
"""Maps an object to the values it is indexed under (zero or more strings)."""

_NONE: tuple[str, ...] = ()


def by_namespace(obj: KubeObject) -> tuple[str, ...]:
    """The object's namespace; cluster-scoped objects (empty namespace) get no value.

    Unlike client-go, cluster-scoped objects are not filed under ``""``: that would put
    every node of a node informer in one index entry for nothing.
    """
    ns = obj.namespace
    return (ns,) if ns else _NONE


def by_controller_uid(obj: KubeObject) -> tuple[str, ...]:
    """The uid of the owner reference with ``controller: true``, if any.

    ``by_index("controller", statefulset_uid)`` lists the pods a StatefulSet controls.
    """
    ref = obj.controller_ref
    return (ref.uid,) if ref is not None and ref.uid else _NONE


def by_label(key: str) -> IndexFunc:
    """An index function filing objects under the value of label ``key``.

    Objects without the label get no value; a present label with an empty value is filed
    under ``""`` (``app=`` is a valid, selectable label).
    """

    def index_by_label(obj: KubeObject) -> tuple[str, ...]:
        value = obj.labels.get(key)
        return _NONE if value is None else (value,)

    index_by_label.__qualname__ = f"by_label({key!r})"
    return index_by_label


def by_field(path: str) -> IndexFunc:
    """An index function filing objects under the value at dotted ``path``
    (e.g. ``"spec.nodeName"``).

    Missing, ``None`` and ``""`` give no value. Strings are used as they are; numbers as
    ``str(n)``; booleans as ``"true"``/``"false"`` (their JSON spelling); a list gives one
    value per scalar element; a mapping gives no value.
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
