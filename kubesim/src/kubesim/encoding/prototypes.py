"""The protobuf messages of the built-in kinds, by field number, for
:mod:`kubesim.encoding.protobuf` (decoding) and :mod:`kubesim.encoding.protoencode` (encoding).

``protobuf_types.json`` holds them as the Go types of Kubernetes v1.28.0 declare them
(``k8s.io/api``, ``apimachinery``'s meta/v1, ``apiextensions-apiserver`` and
``kube-aggregator``): each struct's fields with their ``protobuf`` tag's number, their
``json`` name and the kind of value their Go type holds. A :data:`Field` is
``(number, json name, kind, message, flags)``; ``kind`` is one of

- ``str``, ``int``, ``bool``, ``float`` (a ``double``), ``bytes`` (``[]byte``, base64 in
  JSON): scalars;
- ``msg``: the struct named by ``message``; ``inline``: a struct embedded with
  ``json:",inline"``, whose fields are the parent's in JSON but a message of its own in
  protobuf (``Volume.VolumeSource``);
- ``map``: a map from strings to the kind named by ``message`` (``msg:<name>`` for
  structs);
- ``time`` / ``microtime`` (``metav1.Time`` / ``MicroTime``), ``quantity``, ``intstr``,
  ``json`` (``FieldsV1``), ``raw`` (``RawExtension``), ``rawjson`` (apiextensions ``JSON``)
  and ``schemaorarray`` / ``schemaorbool`` / ``schemaorstrings`` (the JSON-schema unions):
  the types with their own protobuf form.

Beyond v1.28, :data:`_LATER` adds the fields KubeSim serves behind a newer feature gate:
``ListMeta.shardInfo`` (field 5, a pointer to ``ShardInfo{selector: 1}``; v1.36,
ShardedListAndWatch, k8s.io/apimachinery ``pkg/apis/meta/v1/types.go``), written only when
set.

``flags`` has :data:`REPEATED` for slices and :data:`PTR` for pointers. The distinction
matters both ways: Go's generated marshalling writes every non-pointer field, zero or
not, and a pointer field only when it is set.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import orjson

__all__ = ["PTR", "REPEATED", "Field", "kind_message", "message"]

REPEATED = 1
PTR = 2
#: (number, json name, kind, message, flags)
Field = tuple[int, str, str, str, int]

_DATA = Path(__file__).resolve().parent / "protobuf_types.json"

#: fields of later versions, appended to the v1.28 tables (see the module docstring)
_LATER: Mapping[str, tuple[Field, ...]] = {
    "meta/v1.ListMeta": ((5, "shardInfo", "msg", "meta/v1.ShardInfo", PTR),),
    "meta/v1.ShardInfo": ((1, "selector", "str", "", 0),),
}


@functools.cache
def _tables() -> tuple[Mapping[str, tuple[Field, ...]], Mapping[tuple[str, str], str]]:
    data = orjson.loads(_DATA.read_bytes())
    messages = {
        name: tuple((int(n), j, k, m, f) for n, j, k, m, f in fields)
        for name, fields in data["messages"].items()
    }
    for name, extra in _LATER.items():
        messages[name] = messages.get(name, ()) + extra
    kinds = {(api_version, kind): name for api_version, kind, name in data["kinds"]}
    return messages, kinds


def message(name: str) -> tuple[Field, ...] | None:
    """The fields of message ``name`` (``<apiVersion>.<Go type>``, ``meta/v1.ObjectMeta``
    for apimachinery's) in field-number order, or None for a message not in the tables."""
    return _tables()[0].get(name)


def kind_message(api_version: str, kind: str) -> str | None:
    """The message of a built-in kind (its List kind too), or None: a custom resource,
    or a kind KubeSim has no table for."""
    if (api_version, kind) == ("v1", "Status"):
        return "meta/v1.Status"
    return _tables()[1].get((api_version, kind))
