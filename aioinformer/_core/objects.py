"""Compact, immutable Kubernetes objects, decoded from the wire on the informer's hot path.

A :class:`KubeObject` keeps its metadata typed (:class:`ObjectMeta`, decoded eagerly) and the
rest as exact-size JSON bytes: ``body`` holds every top-level field but apiVersion/kind/metadata
(``{"spec":...,"status":...}``), ``managed_fields`` the raw ``metadata.managedFields``. Nothing
else is decoded until asked for (``field``, ``body_dict``, ``to_dict``, ``to_model``) and
nothing decoded is cached, so an object never changes after it is made.

Contract:

* :func:`decode_event`, :func:`decode_object` and :func:`decode_list` raise
  :class:`~aioinformer.DecodeError` (a short message, never the input) for anything that is
  not a valid event / object / list: malformed JSON, an unknown event type, an object without
  metadata, name or resourceVersion, a resourceVersion that is not a decimal uint64 (what the
  API server's Go code parses: at most 20 digits), input nested too deeply to decode
  (msgspec stops at about a thousand levels), or any other failure of the decoder (only
  bookmarks may lack a name). No other exception escapes them but ``MemoryError``, which says
  nothing about the input (the caller retries the stream later, it does not skip the item).
  Bookmarks decode to a metadata-only object (``body == b"{}"``), ERROR events to their
  Status dict.
* One bad item never fails a list that is read with ``skip_bad=True``: it is left out and
  reported in :attr:`ItemList.bad` (with its key when one can be read, see
  :mod:`~aioinformer._core.jsonscan`), and every other item is decoded.
* ``decode_object(raw).to_dict() == orjson.loads(raw)`` for objects as the API server writes
  them. Approximations: metadata fields at their zero value (``""``, ``0``, ``{}``, ``[]``,
  ``null``) and ownerReferences' ``controller``/``blockOwnerDeletion`` ``false`` are left out,
  as Go's ``omitempty`` does, and metadata fields ObjectMeta does not know are dropped.
* Memory: ``body`` and ``managed_fields`` are standalone bytes of exact size (no object keeps
  its event line alive); namespaces, apiVersions and kinds are interned, equal
  ownerReferences tuples shared; equal labels and equal annotations share one dict (and
  the objects without any, one empty dict), whose keys and values are shared with other
  objects' (a label equal to the object's name is its name): so the labels and
  annotations of cached objects are shared, and must never be mutated; metadata-only
  objects share one ``b"{}"``: an object retains a fraction of the memory of its
  ``orjson`` dict.
* GC: every struct is ``gc=False``, labels/annotations are str->str dicts (CPython never tracks
  those) and the tuples hold only untracked items (untracked at the next young collection),
  so cached objects add nothing to what the cyclic GC traverses.
* Speed: ``decode_event`` is one msgspec pass over the line (typed metadata, raw slices for
  the rest), cheaper than ``orjson.loads`` of the same line.

The figures for all three are measured by ``bench/objects_bench.py`` (bench/RESULTS.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, Generic, Literal, NamedTuple, TypeAlias, TypeVar, overload

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType

from aioinformer._core.errors import DecodeError
from aioinformer._core.jsonscan import peek_key, split_list
from aioinformer._core.redact import redact_known

__all__ = [
    "MAX_RESOURCE_VERSION",
    "BadItem",
    "ItemFilter",
    "ItemList",
    "KeepMeta",
    "KubeObject",
    "ObjectMeta",
    "OwnerReference",
    "Transform",
    "decode_event",
    "decode_list",
    "decode_object",
    "drop_managed_fields",
    "parse_resource_version",
]

_T = TypeVar("_T")
_EMPTY_BODY = b"{}"
_NO_RAW = Raw()
_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})


class OwnerReference(msgspec.Struct, frozen=True, gc=False, rename="camel", omit_defaults=True):
    """One entry of ``metadata.ownerReferences`` (camelCase on the wire)."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False
    block_owner_deletion: bool = False


class ObjectMeta(msgspec.Struct, frozen=True, gc=False, rename="camel", omit_defaults=True):
    """Typed ``metadata`` (camelCase on the wire; every field has a default).

    ``managedFields`` is not here: it is kept raw on :attr:`KubeObject.managed_fields`.
    ``labels``/``annotations`` are plain dicts for speed, shared between the objects that
    have equal ones: never mutate them.
    ``deletion_grace_period_seconds`` and ``self_link`` complete Kubernetes' ObjectMeta so
    that objects round-trip through :meth:`KubeObject.to_dict`.
    """

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()
    deletion_timestamp: str | None = None
    creation_timestamp: str | None = None
    generate_name: str = ""
    deletion_grace_period_seconds: int | None = None
    self_link: str = ""


class _WireMeta(ObjectMeta, frozen=True, gc=False):
    """ObjectMeta as decoded (transient): ownerReferences, labels and annotations as Raw
    slices, each looked up by its bytes among those already decoded (most objects share
    theirs with siblings and with their previous versions), plus managedFields as a Raw
    slice."""

    labels: Raw = _NO_RAW  # type: ignore[assignment]
    annotations: Raw = _NO_RAW  # type: ignore[assignment]
    owner_references: Raw = _NO_RAW  # type: ignore[assignment]
    managed_fields: Raw = _NO_RAW


class _FastObject(
    msgspec.Struct, forbid_unknown_fields=True, rename="camel", omit_defaults=True, gc=False
):
    """One-pass decode of objects whose top-level fields are all listed here (pods, nodes,
    workloads, most custom resources, configmaps, secrets); any other field falls back to
    the generic ``dict[str, Raw]`` path. With apiVersion/kind/metadata set to UNSET it
    encodes straight to ``body`` (empty Raws are omitted)."""

    api_version: str | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    metadata: _WireMeta | UnsetType | None = UNSET
    spec: Raw = _NO_RAW
    status: Raw = _NO_RAW
    data: Raw = _NO_RAW
    binary_data: Raw = _NO_RAW
    string_data: Raw = _NO_RAW
    type: Raw = _NO_RAW
    immutable: Raw = _NO_RAW


class _Event(msgspec.Struct, Generic[_T], gc=False):
    type: str
    object: _T | None = None


class _FastEvent(msgspec.Struct, gc=False):
    """The usual event, validated in C: ERROR events and unknown types fail it (and go
    through ``_Event[dict[str, Raw]]``); ``type`` is then one of these very strings."""

    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: _FastObject | None = None


class _ShardInfo(msgspec.Struct):
    selector: str | None = None


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    shard_info: _ShardInfo | None = None


class _List(msgspec.Struct, Generic[_T], rename="camel"):
    api_version: str = ""
    kind: str = ""
    metadata: _ListMeta | None = None
    items: list[_T] | None = None


_dec = msgspec.json.Decoder
_FAST_EVENT = _dec(_FastEvent)
_OWNER_REFS = _dec(tuple[OwnerReference, ...])
_SLOW_EVENT = _dec(_Event[dict[str, Raw]])
_FAST_OBJECT = _dec(_FastObject)
_SLOW_OBJECT = _dec(dict[str, Raw])
_FAST_LIST = _dec(_List[_FastObject])
_RAW_LIST = _dec(_List[Raw])
_WIRE_META = _dec(_WireMeta)
_STR = _dec(str)
_ANY = _dec()
_encode = msgspec.json.Encoder().encode
_join = b"".join
_replace = msgspec.structs.replace
_astuple = msgspec.structs.astuple


class KubeObject(msgspec.Struct, frozen=True, gc=False):
    """An immutable API object: typed metadata, the rest as raw JSON bytes.

    ``key`` is ``"namespace/name"`` (``"name"`` when cluster-scoped), ``rv`` the
    resourceVersion as an int, ``body`` a JSON object of every top-level field but
    apiVersion/kind/metadata, ``managed_fields`` the raw ``metadata.managedFields``
    (``b""`` when absent or dropped by :func:`drop_managed_fields`).
    """

    api_version: str
    kind: str
    metadata: ObjectMeta
    key: str
    rv: int
    body: bytes
    managed_fields: bytes = b""

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` (``""`` when cluster-scoped)."""
        return self.metadata.namespace

    @property
    def uid(self) -> str:
        """``metadata.uid``."""
        return self.metadata.uid

    @property
    def labels(self) -> dict[str, str]:
        """``metadata.labels`` (shared with other objects: never mutate it)."""
        return self.metadata.labels

    @property
    def annotations(self) -> dict[str, str]:
        """``metadata.annotations`` (shared with other objects: never mutate it)."""
        return self.metadata.annotations

    @property
    def owner_references(self) -> tuple[OwnerReference, ...]:
        """``metadata.ownerReferences``."""
        return self.metadata.owner_references

    @property
    def finalizers(self) -> tuple[str, ...]:
        """``metadata.finalizers``."""
        return self.metadata.finalizers

    @property
    def deletion_timestamp(self) -> str | None:
        """``metadata.deletionTimestamp`` (RFC 3339), None unless the object is being deleted."""
        return self.metadata.deletion_timestamp

    @property
    def generation(self) -> int:
        """``metadata.generation`` (0 when the server does not track it)."""
        return self.metadata.generation

    @property
    def controller_ref(self) -> OwnerReference | None:
        """The owner reference with ``controller: true``, or None."""
        for ref in self.metadata.owner_references:
            if ref.controller:
                return ref
        return None

    @overload
    def field(self, path: str, default: Any = None) -> Any: ...
    @overload
    def field(self, path: str, default: _T, *, type: type[_T]) -> _T: ...
    @overload
    def field(self, path: str, *, type: type[_T]) -> _T | None: ...

    def field(self, path: str, default: Any = None, *, type: Any = None) -> Any:
        """The value at dotted ``path`` in :meth:`to_dict`'s form, or ``default`` if absent.

        ``"spec.nodeName"``, ``"status.phase"``, ``"spec.containers.0.image"`` (an integer
        segment indexes a list). ``metadata.*`` paths are answered from the typed metadata
        without touching the body; ``metadata.labels.<key>`` and ``metadata.annotations.<key>``
        take the rest of the path as the key, dots included
        (``"metadata.labels.app.kubernetes.io/name"``). A JSON ``null`` gives None.

        With ``type`` (``int``, ``str``, ``dict[str, str]``, a TypedDict or a dataclass ...)
        the value is converted to it, strictly (msgspec's ``convert``: no ``"3"`` for an
        int), and typed so for the type checker: ``obj.field("spec.replicas", 1, type=int)``
        is an ``int``. A missing or null value is then ``default``; a value of another type
        is a :class:`~aioinformer.DecodeError` naming the object, the path and the mismatch.
        """
        head, _, rest = path.partition(".")
        if head == "metadata":
            value = _meta_field(self, rest, _MISSING)
        elif head == "apiVersion" or head == "kind":
            value = self.api_version if head == "apiVersion" else self.kind
            value = value if value and not rest else _MISSING
        else:
            value = _body_field(self.body, path, _MISSING)
        if type is None:
            return default if value is _MISSING else value
        if value is _MISSING or value is None:
            return default
        try:
            return msgspec.convert(value, type)
        except msgspec.ValidationError as exc:
            raise DecodeError(f"{self.key}: {path}: {exc}") from None

    def body_dict(self) -> dict[str, Any]:
        """The body (every top-level field but apiVersion/kind/metadata), decoded anew."""
        body: dict[str, Any] = orjson.loads(self.body)
        return body

    def to_dict(self) -> dict[str, Any]:
        """The whole object as plain JSON-shaped data (managedFields included when kept)."""
        out: dict[str, Any] = {}
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.kind:
            out["kind"] = self.kind
        out["metadata"] = _meta_dict(self)
        out.update(orjson.loads(self.body))
        return out

    def to_model(self, model: str = "V1Pod") -> Any:
        """The kubernetes_asyncio model (``"V1Pod"``, ``"V1Node"``, ...) of this object.

        A convenience for code written against kubernetes_asyncio: building the model costs
        two orders of magnitude more than decoding the object did, so keep it off hot paths.
        """
        return _deserializer()._ApiClient__deserialize(self.to_dict(), model)


Transform: TypeAlias = Callable[[KubeObject], KubeObject]
"""A function applied to every decoded object before it reaches the store."""


def drop_managed_fields(obj: KubeObject) -> KubeObject:
    """The built-in transform: ``obj`` without ``managed_fields`` (nothing is decoded).

    Args:
        obj: a decoded object.

    Returns:
        ``obj`` itself when it has no managedFields, else a copy without them.
    """
    if not obj.managed_fields:
        return obj
    return _replace(obj, managed_fields=b"")


def decode_event(
    line: bytes, keep: KeepMeta | None = None
) -> tuple[str, KubeObject | None, dict[str, Any] | None]:
    """Decode one watch event line into ``(type, object, status)``.

    ``type`` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. ERROR gives ``(type, None,
    status_dict)``; BOOKMARK a metadata-only object (its name may be empty). Raises
    :class:`~aioinformer.DecodeError` for anything else (see the module docstring).

    ``keep`` is asked about each ADDED/MODIFIED/DELETED event's object from its metadata,
    read in the one pass over the line, before the object is built (its body copied, its
    names interned, its UTF-8 checked): an object it refuses gives ``("DROPPED", None,
    {"resourceVersion": TEXT})``, its resourceVersion as sent (unchecked).
    """
    try:
        event = _FAST_EVENT.decode(line)
        kind, obj = event.type, event.object
        if obj is None:
            raise DecodeError(f"{kind} watch event without an object")
        if keep is not None and kind != "BOOKMARK":
            meta = obj.metadata
            if meta is not None and meta is not UNSET and not keep(meta):
                return "DROPPED", None, {"resourceVersion": meta.resource_version}
        return kind, _build_fast(obj, kind == "BOOKMARK", "", ""), None
    except msgspec.ValidationError:  # ERROR, an unknown type, an unusual field, not an event
        pass
    except msgspec.DecodeError as exc:
        raise DecodeError(f"watch event is not valid JSON: {exc}") from None
    except (DecodeError, MemoryError):
        raise
    except Exception as exc:  # RecursionError (too deep), and whatever else a decoder raises
        raise _undecodable("watch event", exc) from None
    try:
        decoded = _slow_event(line)
    except (DecodeError, MemoryError):
        raise
    except Exception as exc:
        raise _undecodable("watch event", exc) from None
    built = decoded[1]
    if keep is not None and built is not None and decoded[0] != "BOOKMARK":
        if not keep(built.metadata):
            return "DROPPED", None, {"resourceVersion": built.metadata.resource_version}
    return decoded


def _slow_event(line: bytes) -> tuple[str, KubeObject | None, dict[str, Any] | None]:
    event = _decode(_SLOW_EVENT, line, "a watch event")
    kind, obj = event.type, event.object
    if kind not in _EVENT_TYPES and kind != "ERROR":
        raise DecodeError(f"unknown watch event type {redact_known(kind)[:40]!r}")
    if obj is None:
        raise DecodeError(f"{kind} watch event without an object")
    if kind == "ERROR":  # rare and small: decode it plainly
        status = orjson.loads(line)["object"]
        if not isinstance(status, dict):
            raise DecodeError("ERROR watch event whose object is not a Status")
        return kind, None, status
    return kind, _build_slow(obj, kind == "BOOKMARK"), None


def decode_object(raw: bytes | str | Raw) -> KubeObject:
    """Decode one API object (a GET response, a list item, a watch event's object).

    Args:
        raw: the object's JSON.

    Returns:
        The immutable :class:`~aioinformer.KubeObject`.

    Raises:
        DecodeError: ``raw`` is not a JSON object with metadata, a name and an integer
            resourceVersion.
    """
    return _decode_item(raw, "", "")


KeepMeta: TypeAlias = "Callable[[ObjectMeta], bool]"
"""A filter asked about an object from its metadata before the object is built."""
ItemFilter: TypeAlias = "Callable[[str | None], KeepMeta | None]"
"""A list's filter (``decode_list(keep=...)``): called once per list with its shard
selector echo, it returns None (keep every item) or a :data:`KeepMeta`."""


class BadItem(NamedTuple):
    """A list item left out: its ``key`` (None when it could not be read) and ``reason``."""

    key: str | None
    reason: str


class ItemList(list[KubeObject]):
    """The decoded items of a list (a plain list), with the items left out in :attr:`bad`
    and the body's size in :attr:`nbytes`."""

    __slots__ = ("api_version", "bad", "dropped", "kind", "nbytes", "shard_selector")

    def __init__(self, items: Iterable[KubeObject] = (), bad: Iterable[BadItem] = ()) -> None:
        super().__init__(items)
        self.bad: list[BadItem] = list(bad)
        """The items left out, in order."""
        self.nbytes = 0
        """The size of the list body, in bytes."""
        self.kind = ""
        """The list's kind (``"PodList"``; ``""`` when it says none)."""
        self.api_version = ""
        """The list's apiVersion (``""`` when it says none)."""
        self.shard_selector: str | None = None
        """The list's ``metadata.shardInfo.selector``: the shard selector the server says
        it applied (KEP-5866); None when it sent no shardInfo."""
        self.dropped = 0
        """Items the ``keep`` filter of :func:`decode_list` left out."""


def decode_list(
    body: bytes, *, skip_bad: bool = False, keep: ItemFilter | None = None
) -> tuple[ItemList, str, str | None]:
    """Decode a list response into ``(items, list resourceVersion, continue token or None)``.

    Items of typed lists carry no apiVersion/kind: they get the list's apiVersion and its
    kind without ``List`` (``PodList`` -> ``Pod``). PartialObjectMetadataList and custom
    resource lists (whose items carry their own) work the same way. A bad item raises
    :class:`~aioinformer.DecodeError`, or with ``skip_bad`` is left out and listed in
    ``items.bad``; a body that is not a list (malformed JSON, no object) always raises.
    ``items.shard_selector`` is the list's ``metadata.shardInfo.selector`` (None if absent).

    ``keep`` is called once per list with that echo; it returns None (keep every item) or
    a predicate over each item's metadata, asked before the item is built (as
    :func:`decode_event`'s ``keep``; after, for the rare lists decoded item by item): the
    items it refuses are left out, counted in ``items.dropped``.
    """
    try:
        fast = _FAST_LIST.decode(body)
    except msgspec.ValidationError:  # an unusual item (or list): item by item
        return _kept(_raw_list(body, skip_bad), keep)
    except msgspec.DecodeError as exc:
        if skip_bad and "UTF-8" in str(exc):  # (in one item, perhaps: each on its own)
            error = DecodeError(f"list is not valid JSON: {exc}")
            return _kept(_split_list(body, skip_bad, error), keep)
        raise DecodeError(f"list is not valid JSON: {exc}") from None
    except MemoryError:
        raise
    except Exception as exc:  # an item too deep to decode
        return _kept(_split_list(body, skip_bad, exc), keep)
    version, kind = fast.api_version, _item_kind(fast.kind)
    items = ItemList()
    items.kind, items.api_version = fast.kind, version
    meta = fast.metadata or _ListMeta()
    items.shard_selector = meta.shard_info.selector if meta.shard_info else None
    wanted = keep(items.shard_selector) if keep is not None else None
    append = items.append
    for item in fast.items or ():
        if wanted is not None:
            m = item.metadata
            if m is not None and m is not UNSET and not wanted(m):
                items.dropped += 1
                continue
        try:
            append(_build_fast(item, False, version, kind))
        except MemoryError:
            raise
        except Exception as exc:
            _bad_item(items, _struct_key(item), exc, skip_bad)
    return items, meta.resource_version, meta.continue_ or None


def _kept(
    decoded: tuple[ItemList, str, str | None], keep: ItemFilter | None
) -> tuple[ItemList, str, str | None]:
    """A list decoded item by item, its items filtered by ``keep`` (see :func:`decode_list`)."""
    items = decoded[0]
    wanted = keep(items.shard_selector) if keep is not None else None
    if wanted is None:
        return decoded
    kept = ItemList(bad=items.bad)
    kept.kind, kept.api_version, kept.shard_selector = (
        items.kind,
        items.api_version,
        items.shard_selector,
    )
    for obj in items:
        if wanted(obj.metadata):
            kept.append(obj)
        else:
            kept.dropped += 1
    return kept, decoded[1], decoded[2]


def _raw_list(body: bytes, skip_bad: bool) -> tuple[ItemList, str, str | None]:
    """:func:`decode_list` for a list with an item the one-pass decoder rejects: the
    items as raw slices, then each on its own."""
    try:
        raw = _RAW_LIST.decode(body)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"not a list: {exc}") from None
    except MemoryError:
        raise
    except Exception as exc:
        return _split_list(body, skip_bad, exc)
    return _decoded_items(raw, raw.items or (), skip_bad)


def _split_list(body: bytes, skip_bad: bool, exc: Exception) -> tuple[ItemList, str, str | None]:
    """:func:`decode_list` for a list the decoders cannot take whole (an item nested too
    deeply): the items found by :func:`~aioinformer._core.jsonscan.split_list`, each
    decoded on its own."""
    split = split_list(body) if skip_bad else None
    if split is None:
        raise _undecodable("list", exc)
    head, spans = split
    try:
        raw = _RAW_LIST.decode(head)
    except msgspec.DecodeError as error:
        raise DecodeError(f"not a list: {error}") from None
    except MemoryError:
        raise
    except Exception as error:
        raise _undecodable("list", error) from None
    return _decoded_items(raw, (body[start:end] for start, end in spans), skip_bad)


def _decoded_items(
    raw: _List[Raw], chunks: Iterable[bytes | Raw], skip_bad: bool
) -> tuple[ItemList, str, str | None]:
    """Each item of the list ``raw`` (its raw ``chunks``) decoded on its own, and the
    list's resourceVersion and continue token."""
    version, kind = raw.api_version, _item_kind(raw.kind)
    items = ItemList()
    items.kind, items.api_version = raw.kind, version
    for one in chunks:
        _one_item(items, one, version, kind, skip_bad)
    meta = raw.metadata or _ListMeta()
    items.shard_selector = meta.shard_info.selector if meta.shard_info else None
    return items, meta.resource_version, meta.continue_ or None


def _struct_key(item: _FastObject) -> str | None:
    meta = item.metadata
    if not meta or not meta.name:
        return None
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _one_item(items: ItemList, raw: bytes | Raw, version: str, kind: str, skip_bad: bool) -> None:
    try:  # (the one-pass decoder already failed on this list: straight to the generic one)
        items.append(_decode_item(raw, version, kind, one_pass=False))
    except MemoryError:
        raise
    except Exception as exc:
        _bad_item(items, peek_key(bytes(raw)), exc, skip_bad)


def _bad_item(items: ItemList, key: str | None, exc: Exception, skip_bad: bool) -> None:
    error = exc if isinstance(exc, DecodeError) else _undecodable("list item", exc)
    if not skip_bad:
        raise error from None
    items.bad.append(BadItem(key, str(error)))


def _decode_item(
    raw: bytes | str | Raw, version: str, kind: str, *, one_pass: bool = True
) -> KubeObject:
    """One object (a list item gets the list's ``version`` and ``kind`` when it has none);
    only DecodeError or MemoryError escape. ``one_pass``: try the one-pass decoder first."""
    if one_pass:
        try:
            return _build_fast(_FAST_OBJECT.decode(raw), False, version, kind)
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError as exc:
            raise DecodeError(f"object is not valid JSON: {exc}") from None
        except (DecodeError, MemoryError):
            raise
        except Exception as exc:
            raise _undecodable("object", exc) from None
    try:
        return _build_slow(_decode(_SLOW_OBJECT, raw, "an object"), False, version, kind)
    except (DecodeError, MemoryError):
        raise
    except Exception as exc:
        raise _undecodable("object", exc) from None


def _undecodable(what: str, exc: BaseException) -> DecodeError:
    if isinstance(exc, DecodeError):
        return exc
    if isinstance(exc, RecursionError):
        return DecodeError(f"{what} nested too deeply to decode ({exc})")
    return DecodeError(f"{what} could not be decoded: {type(exc).__name__}: {exc}")


MAX_RESOURCE_VERSION = (1 << 64) - 1
"""The largest resourceVersion: the API server parses them as Go ``uint64``."""


def parse_resource_version(text: str) -> int:
    """``text`` as an int if it is a resourceVersion the API server could have written (a
    decimal uint64); :class:`~aioinformer.DecodeError` otherwise."""
    if text.isdigit() and text.isascii() and len(text) <= 20:
        value = int(text)
        if value <= MAX_RESOURCE_VERSION:
            return value
    raise _bad_resource_version(text)


# -- internals ---------------------------------------------------------------------------


def _decode(decoder: msgspec.json.Decoder[_T], data: bytes | str | Raw, what: str) -> _T:
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:  # also ValidationError
        raise DecodeError(f"not {what}: {exc}") from None


def _item_kind(list_kind: str) -> str:
    return list_kind[:-4] if list_kind.endswith("List") else ""


def _build_slow(
    obj: dict[str, Raw], bookmark: bool, api_version: str = "", kind: str = ""
) -> KubeObject:
    """The object from the generic ``dict[str, Raw]`` decode; ``api_version``/``kind`` are
    used when the object has none (items of a typed list)."""
    raw_meta = obj.pop("metadata", None)
    if raw_meta is None:
        raise DecodeError("object without metadata")
    raw_version, raw_kind = obj.pop("apiVersion", None), obj.pop("kind", None)
    meta = _decode(_WIRE_META, raw_meta, "valid metadata")
    if raw_version is not None:
        api_version = _decode(_STR, raw_version, "a string")
    if raw_kind is not None:
        kind = _decode(_STR, raw_kind, "a string")
    body = _exact(_encode(obj)) if obj and not bookmark else _EMPTY_BODY
    return _make(api_version, kind, meta, body, bookmark)


def _build_fast(obj: _FastObject, bookmark: bool, api_version: str, kind: str) -> KubeObject:
    """The object from a one-pass ``_FastObject`` (as :func:`_build_slow`)."""
    meta = obj.metadata
    if meta is None or meta is UNSET:
        raise DecodeError("object without metadata")
    spec, status = obj.spec, obj.status
    if bookmark:
        body = _EMPTY_BODY
    elif obj.data or obj.binary_data or obj.string_data or obj.type or obj.immutable:
        body = _exact(_encode(_replace(obj, api_version=UNSET, kind=UNSET, metadata=UNSET)))
    elif spec and status:  # b"".join allocates the exact size
        body = b"".join((b'{"spec":', spec, b',"status":', status, b"}"))
    elif spec or status:
        body = b"".join((b'{"spec":' if spec else b'{"status":', spec or status, b"}"))
    else:
        body = _EMPTY_BODY
    if obj.api_version is not UNSET:
        api_version = obj.api_version
    if obj.kind is not UNSET:
        kind = obj.kind
    return _make(api_version, kind, meta, body, bookmark)


def _exact(data: bytes) -> bytes:
    """An exact-size copy: msgspec's encode output keeps its ~1.5x growth buffer."""
    return memoryview(data).tobytes()


def _make(api_version: str, kind: str, m: _WireMeta, body: bytes, bookmark: bool) -> KubeObject:
    # ObjectMeta's fields in order, then managed_fields: unpacked at once into locals and
    # passed positionally (a vectorcall), the cheapest way to rebuild the metadata
    (
        name,
        namespace,
        uid,
        rv_text,
        generation,
        labels,
        annotations,
        owners,
        finalizers,
        deletion_timestamp,
        creation_timestamp,
        generate_name,
        deletion_grace_period_seconds,
        self_link,
        managed,
    ) = _astuple(m)
    if not (rv_text.isdigit() and rv_text.isascii() and len(rv_text) <= 20):
        raise _bad_resource_version(rv_text)
    rv = int(rv_text)
    if rv > MAX_RESOURCE_VERSION:
        raise _bad_resource_version(rv_text)
    if not name and not bookmark:
        raise DecodeError("object without metadata.name")
    # kube-apiserver stores no name ".", ".." or with "/" (a path segment), and a "/" would
    # make two keys collide ("a/b" in "ns" and "b" in "ns/a"); inline: once per event
    if "/" in name or name == "." or name == "..":
        raise DecodeError(f"metadata.name {_shown_name(name)} is not a valid name")
    if "/" in namespace or namespace == "." or namespace == "..":
        raise DecodeError(f"metadata.namespace {_shown_name(namespace)} is not a valid name")
    managed = _join((managed,)) if managed else b""  # a copy: the line is not kept alive
    if not (body.isascii() or _utf8(body)) or not (managed.isascii() or _utf8(managed)):
        raise DecodeError("object with invalid UTF-8 in its body (the JSON is not text)")
    if namespace:
        namespace = _NAMES.get(namespace) or _name(namespace)  # one per namespace
        key = f"{namespace}/{name}"
    else:
        key = name
    if owners:  # one tuple for the objects of one owner, e.g. a ReplicaSet's pods
        raw_owners = _join((owners,))  # bytes(owners), in half the time for a Raw
        owners = _OWNERS.get(raw_owners) or _share_owners(raw_owners)
    else:
        owners = ()
    # one dict for the objects with the same labels (a ReplicaSet's pods), their strings
    # shared with every other object's (a StatefulSet's pods differ by two labels only)
    if labels:
        raw_labels = _join((labels,))
        labels = _SHARED_MAPS.get(raw_labels) or _share_map(raw_labels, name, "labels")
    else:
        labels = _NO_MAP
    if annotations:
        raw_annotations = _join((annotations,))
        annotations = _SHARED_MAPS.get(raw_annotations) or _share_map(
            raw_annotations, name, "annotations"
        )
    else:
        annotations = _NO_MAP
    if creation_timestamp:  # (one per second)
        creation_timestamp = _string(creation_timestamp)
    if generate_name:
        generate_name = _string(generate_name)
    return KubeObject(
        _NAMES.get(api_version) or _name(api_version),
        _NAMES.get(kind) or _name(kind),
        ObjectMeta(
            name,
            namespace,
            uid,
            rv_text,
            generation,
            labels,
            annotations,
            owners,
            finalizers,
            deletion_timestamp,
            creation_timestamp,
            generate_name,
            deletion_grace_period_seconds,
            self_link,
        ),
        key,
        rv,
        body,
        managed,
    )


def _shown_name(name: str) -> str:
    return repr(redact_known(name)[:64])


def _utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 (called only for bodies that are not ASCII)."""
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


_NAMES: dict[str, str] = {}
_MAX_NAMES = 4096


def _name(text: str) -> str:
    """``text`` interned in a small table of its own (namespaces, apiVersions, kinds): a
    lookup there stays in the CPU cache, unlike one in the interpreter's big table."""
    if len(_NAMES) >= _MAX_NAMES:
        _NAMES.clear()
    return _NAMES.setdefault(text, sys.intern(text))


def _bad_resource_version(rv_text: str) -> DecodeError:
    if not rv_text:
        return DecodeError("object without metadata.resourceVersion")
    if rv_text.isdigit() and rv_text.isascii():
        return DecodeError(
            f"metadata.resourceVersion of {len(rv_text)} digits is out of range (uint64)"
        )
    shown = redact_known(rv_text)[:32]  # (cleaned whole, then cut)
    return DecodeError(f"metadata.resourceVersion {shown!r} is not an integer")


_OWNERS: dict[bytes, tuple[OwnerReference, ...]] = {}
_MAX_OWNERS = 4096


def _share_owners(raw: bytes) -> tuple[OwnerReference, ...]:
    """Decode the ``ownerReferences`` JSON ``raw`` and remember the tuple, so that the
    objects with the same bytes share it: less memory, and no decoding (the lookup
    costs a fraction of it) for the siblings and next versions of an object."""
    owners = _decode(_OWNER_REFS, raw, "valid metadata.ownerReferences")
    if len(_OWNERS) >= _MAX_OWNERS:
        _OWNERS.clear()
    _OWNERS[raw] = owners
    return owners


_NO_MAP: dict[str, str] = {}
"""The labels/annotations of every object that has none (shared: never mutate them)."""
_SHARED_MAPS: dict[bytes, dict[str, str]] = {}
_MAX_MAPS = 4096
_STRINGS: dict[str, str] = {}
_MAX_STRINGS = 1 << 16
_STR_MAP = _dec(dict[str, str])


def _share_map(raw: bytes, name: str, what: str) -> dict[str, str]:
    """Decode the labels or annotations JSON ``raw`` with every key and value shared
    (a value equal to the object's ``name`` is that string, another the equal string
    seen before), and remember the dict, so that the objects with the same bytes share
    it."""
    decoded = _decode(_STR_MAP, raw, f"valid metadata.{what}")
    if len(_SHARED_MAPS) >= _MAX_MAPS:
        _SHARED_MAPS.clear()
    if len(_STRINGS) >= _MAX_STRINGS:  # (the strings shared so far stay so)
        _STRINGS.clear()
    share = _STRINGS.setdefault
    shared = {share(k, k): (name if v == name else share(v, v)) for k, v in decoded.items()}
    _SHARED_MAPS[raw] = shared
    return shared


def _string(text: str) -> str:
    """``text``, or the equal string seen before (see :func:`_share_map`)."""
    if len(_STRINGS) >= _MAX_STRINGS:
        _STRINGS.clear()
    return _STRINGS.setdefault(text, text)


_TUPLES = frozenset({"ownerReferences", "finalizers"})


def _meta_dict(obj: KubeObject) -> dict[str, Any]:
    meta: dict[str, Any] = msgspec.to_builtins(obj.metadata)
    for key in _TUPLES.intersection(meta):  # to_builtins keeps tuples; JSON has lists
        meta[key] = list(meta[key])
    if obj.managed_fields:
        meta["managedFields"] = orjson.loads(obj.managed_fields)
    return meta


_MAPS = frozenset({"labels", "annotations"})
_META_FIELDS = {  # wire name -> (attribute, the value omitted on the wire)
    f.encode_name: (f.name, f.default if f.default_factory is msgspec.NODEFAULT else {})
    for f in msgspec.structs.fields(ObjectMeta)
}


def _meta_field(obj: KubeObject, rest: str, default: Any) -> Any:
    if not rest:
        return _meta_dict(obj)
    head, _, tail = rest.partition(".")
    if head in _MAPS:
        mapping: dict[str, str] = getattr(obj.metadata, head)
        if tail:
            return mapping.get(tail, default)
        return dict(mapping) if mapping else default
    value: Any = _MISSING
    if head == "managedFields":
        if obj.managed_fields:
            value = orjson.loads(obj.managed_fields)
    elif (spec := _META_FIELDS.get(head)) is not None:
        value = getattr(obj.metadata, spec[0])
        if value == spec[1]:
            value = _MISSING  # left out of to_dict(), as on the wire
        elif isinstance(value, tuple):
            value = list(msgspec.to_builtins(value))
    return _walk(value, tail.split(".") if tail else [], default)


_MISSING: Any = object()
_PATHS: dict[str, tuple[msgspec.json.Decoder[Any], int] | None] = {}
_MAX_PATHS = 512


def _body_field(body: bytes, path: str, default: Any) -> Any:
    """Decode only the value at ``path``: a one-field Struct per level skips the rest of the
    body in C (several times cheaper than decoding the whole body). Paths with list indexes,
    and values of an unexpected shape, go through the generic walk."""
    try:
        compiled = _PATHS[path]
    except KeyError:
        compiled = _compile_path(path)
        if len(_PATHS) < _MAX_PATHS:
            _PATHS[path] = compiled
    if compiled is not None:
        decoder, depth = compiled
        try:
            value: Any = decoder.decode(body)
        except msgspec.ValidationError:
            pass
        else:
            for _ in range(depth - 1):
                value = value.v
                if value is None:  # an intermediate level missing or null
                    return default
            value = value.v
            return default if value is UNSET else value
    return _walk(orjson.loads(body), path.split("."), default)


def _compile_path(path: str) -> tuple[msgspec.json.Decoder[Any], int] | None:
    segments = path.split(".")
    if not all(segments) or any(s.isdigit() for s in segments):
        return None
    typ: Any = msgspec.defstruct(
        "_PathLeaf", [("v", Any, msgspec.field(default=UNSET, name=segments[-1]))]
    )
    for segment in reversed(segments[:-1]):
        field = msgspec.field(default=None, name=segment)
        typ = msgspec.defstruct("_PathStep", [("v", typ | None, field)])
    return msgspec.json.Decoder(typ), len(segments)


def _walk(value: Any, segments: list[str], default: Any) -> Any:
    for segment in segments:
        if isinstance(value, dict):
            value = value.get(segment, _MISSING)
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return default
    return default if value is _MISSING else value


@cache
def _deserializer() -> Any:
    """A kubernetes_asyncio ApiClient used only for its model deserializer: made without
    ``__init__``, so no aiohttp session (and no event loop) is needed."""
    from kubernetes_asyncio.client import ApiClient

    return ApiClient.__new__(ApiClient)
