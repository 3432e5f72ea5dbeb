"""Server-side apply: ``PATCH`` with ``Content-Type: application/apply-patch+yaml``.

:func:`server_side_apply` merges an apply configuration (YAML or JSON) into the object, as
kube-apiserver v1.28 does (``tests/kubesim/conformance/22a``-``22d``), by the field
manager's rules (:mod:`kubesim.fieldmanager.apply`):

* ``fieldManager`` is required (422), ``force`` only goes with apply; a
  ``metadata.resourceVersion`` in the configuration is a precondition (409), a different
  ``metadata.name`` is a 400.
* A missing object is created from the configuration (201); otherwise the configuration is
  merged into it (:func:`kubesim.fieldmanager.typed.merge`), the fields the manager no
  longer applies are pruned, and changing a field another manager owns is a 409 unless
  ``force=true``.
* The applier's entry (operation ``Apply``) lists what it applied; its ``time`` changes only
  when the object does. An apply that changes nothing keeps the resourceVersion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.apply import (
    APPLY_PATCH,
    LAST_APPLIED,
    check_patch_options,
    decode_configuration,
    prune_unapplied,
    query_true,
    set_last_applied,
    take_fields,
)
from kubesim.fieldmanager.managed import (
    STRIPPED,
    Entry,
    decode_entries,
    encode_entries,
    entry_of,
    outside_subresource,
    without_managed_fields,
)
from kubesim.fieldmanager.typed import field_set, merge
from kubesim.registry.objects import type_for
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Stored

__all__ = ["server_side_apply"]


def server_side_apply(
    api: Api,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    raw: bytes,
    query: Mapping[str, str],
    *,
    subresource: str | None = None,
) -> tuple[Stored, bool]:
    """Apply the configuration in ``raw``; returns the object and whether it was created."""
    check_patch_options(APPLY_PATCH, query)
    manager = query["fieldManager"]
    force = query_true(query.get("force"))
    config = decode_configuration(raw, rt.kind, rt.api_version)
    meta: dict[str, Any] = config.setdefault("metadata", {}) or {}
    config["metadata"] = meta
    if meta.get("name") not in (None, name):
        raise KubeSimApiError.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the "
            f"URL ({name})"
        )
    meta["name"] = name
    config.setdefault("apiVersion", rt.api_version)
    config.setdefault("kind", rt.kind)
    sub = subresource or ""
    t = type_for(rt, api.mvcc)
    cur = api.store(rt).get(api.key(rt, namespace, name))
    applied = outside_subresource(field_set(without_managed_fields(config), t), rt, sub)
    applied -= STRIPPED
    if cur is None:
        if sub:
            raise KubeSimApiError.not_found(rt.plural, rt.stored_group, name)
        entry = Entry(manager, "Apply", rt.api_version, "", now_rfc3339(), applied)
        stored = api.create(
            rt, namespace, config, manager=manager, managed_fields=encode_entries([entry])
        )
        return stored, True
    rv = meta.get("resourceVersion")
    if rv and str(rv) != str(cur.rv):
        raise KubeSimApiError.conflict(rt.plural, rt.stored_group, name)
    live = api.view(rt, cur)
    live.setdefault("apiVersion", rt.api_version)
    live.setdefault("kind", rt.kind)
    entries = decode_entries(live["metadata"])
    mine = entry_of(entries, Entry(manager, "Apply", rt.api_version, sub))
    last, mine.fields, mine.api_version = mine.fields, applied, rt.api_version
    live_fields = without_managed_fields(live)
    merged = merge(live_fields, without_managed_fields(config), t)
    merged = prune_unapplied(merged, last, entries, t)
    take_fields(rt, live_fields, merged, entries, mine, sub, t, force)
    if manager == "kubectl" and LAST_APPLIED in ((live["metadata"].get("annotations")) or {}):
        set_last_applied(merged, config)
    return (
        api.write(
            rt, cur, merged, subresource, manager, old=live, managed_fields=encode_entries(entries)
        ),
        False,
    )
