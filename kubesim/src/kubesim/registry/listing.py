"""A list as kube-apiserver v1.28 serves it: resourceVersion semantics, paging, selectors.

:func:`list_page` reads one page of a type's objects (the conformance transcripts 01-05
record what each combination answers); a continue token (:func:`encode_continue`) carries
the list's revision and where the next page starts.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import orjson

from kubesim.errors import KubeSimApiError, RvTooLarge
from kubesim.machinery.fields import FieldSelector
from kubesim.machinery.labels import LabelSelector
from kubesim.machinery.shards import ShardSelector
from kubesim.registry.objects import parse_rv
from kubesim.registry.resource import ResourceType
from kubesim.storage.mvcc import Mvcc, Stored, TypeStore

__all__ = ["ListResult", "decode_continue", "encode_continue", "list_page"]

EXPIRED_CONTINUE_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


@dataclass(slots=True)
class ListResult:
    """One page of a list: items in key order, the list RV, and paging metadata;
    ``shard_info``: the applied shard selector's canonical text (``ListMeta.shardInfo``)."""

    items: list[Stored]
    resource_version: int
    continue_token: str | None
    remaining: int | None
    shard_info: str | None = None


def encode_continue(rv: int, start: str) -> str:
    """The apiserver's continue token: base64url (no padding) of {"v","rv","start"}."""
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """Inverse of :func:`encode_continue`; ``start`` without its trailing NUL."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        rv, start = int(data["rv"]), str(data["start"])
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise KubeSimApiError.bad_request(f"invalid continue token: {exc!s}") from None
    return rv, start.rstrip("\x00")


def list_page(
    ts: TypeStore,
    mvcc: Mvcc,
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
    """A list as the apiserver serves it (see the conformance transcripts 01-05).

    ``resource_version`` "" is a consistent read at the current revision (pageable);
    "0" serves the cache and ignores ``limit``; N with ``match`` "NotOlderThan" (or no
    match) needs the store at least at N (else :class:`RvTooLarge`, which the HTTP layer
    turns into the recorded 504 after waiting); N with "Exact" is the state at N
    (pageable; 410 once compacted). ``shard_selector`` keeps the objects in its ranges
    and is echoed in ``shard_info``; a sharded page has no ``remaining`` count (as a
    selector's, since k8s.io/apiserver v0.37; v1.36.0-3 counted the unfiltered rest).
    """
    at_rv: int | None = None
    start_after: str | None = None
    pageable = True
    if continue_token:
        token_rv, start = decode_continue(continue_token)
        if token_rv == -1:  # the "inconsistent" token of an expired continue: read now
            at_rv = None
        elif token_rv < mvcc.compacted_rv:
            raise KubeSimApiError.expired(EXPIRED_CONTINUE_MESSAGE, encode_continue(-1, start))
        else:
            at_rv = token_rv
        start_after = f"{namespace}/{start}" if rt.namespaced and namespace else start
    elif resource_version == "0":
        pageable = False
    elif resource_version:
        rv = parse_rv(resource_version)
        if match == "Exact":
            if rv > mvcc.rv:
                raise KubeSimApiError.internal(
                    "etcdserver: mvcc: required revision is a future revision"
                )
            if rv < mvcc.compacted_rv or (rv < ts.floor_rv and ts.evicted):
                raise KubeSimApiError.expired(
                    "The resourceVersion for the provided list is too old."
                )
            at_rv = rv
        else:
            if rv > mvcc.rv:
                raise RvTooLarge(rv)
            pageable = False
    list_rv = at_rv if at_rv is not None else mvcc.rv
    lsel = label_selector if label_selector is not None and not label_selector.empty else None
    fsel = field_selector if field_selector is not None and not field_selector.empty else None

    items: list[Stored] = []
    want = limit if (pageable and limit > 0) else 0
    it = ts.iter_sorted(namespace, start_after, at_rv)
    more = False
    for obj in it:
        if lsel is not None and not lsel.matches(obj.labels):
            continue
        if fsel is not None and not fsel.matches(obj.fields):
            continue
        if shard_selector is not None and not shard_selector.matches(obj.uid, obj.namespace):
            continue
        if want and len(items) == want:
            more = True
            break
        items.append(obj)
    shard_info = shard_selector.text if shard_selector is not None else None
    if not more:
        return ListResult(items, list_rv, None, None, shard_info)
    last = items[-1]
    start_key = last.key.split("/", 1)[1] if rt.namespaced and namespace else last.key
    token = encode_continue(list_rv, start_key)
    remaining: int | None = None
    if lsel is None and fsel is None and shard_selector is None:
        remaining = ts.count_after(namespace, last.key, at_rv)
    return ListResult(items, list_rv, token, remaining, shard_info)
