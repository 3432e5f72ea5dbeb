"""``dryRun=All``: a write that runs the whole write path and stores nothing.

The HTTP layer validates the request's ``dryRun`` values (:func:`parse_dry_run`: only
``All`` is allowed, anything else is the recorded 422 of the verb's options kind) and runs
the verb inside :func:`dry_run`. Every commit point of the write path asks
:func:`is_dry_run` and, when it is set, answers what it would have stored without
committing it: no new revision, no watch event, no side effect (a CRD is not established,
no controller sees anything). Any verb routed through the same commit points (create,
update, patch of the object or a subresource, delete, deletecollection, and apply) is dry
run the same way.

What a dry-run answers (17a, 17b): a create has a fresh uid and creationTimestamp but no
resourceVersion; an update or patch has the new content with the stored (old)
resourceVersion; a delete answers what a real one would (an object with its
deletionTimestamp, or the Status) with the stored resourceVersion.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from kubesim.encoding.gofmt import go_quote
from kubesim.errors import KubeSimApiError, status_body

__all__ = ["OPTIONS_KIND", "dry_run", "is_dry_run", "parse_dry_run"]

#: The options kind whose name a verb's 422 carries.
OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}

_DRY_RUN: ContextVar[bool] = ContextVar("kubesim_dry_run", default=False)


def parse_dry_run(values: object, options_kind: str) -> bool:
    """Whether ``values`` (the ``dryRun`` query values, or a DeleteOptions body's list)
    ask for a dry run; raises the recorded 422 (``ValidateDryRun``) unless every value is
    ``All``."""
    if values is None:
        return False
    items: Sequence[object] = values if isinstance(values, list | tuple) else [values]
    if not items:
        return False
    if all(v == "All" for v in items):
        return True
    shown = "[]string{" + ", ".join(go_quote(str(v)) for v in items) + "}"
    detail = f'Unsupported value: {shown}: supported values: "All"'
    details = {
        "group": "meta.k8s.io",
        "kind": options_kind,
        "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
    }
    message = f'{options_kind}.meta.k8s.io "" is invalid: dryRun: {detail}'
    raise KubeSimApiError(422, status_body(422, message, "Invalid", details))


def is_dry_run() -> bool:
    """Whether the write being served is a dry run (commit points store nothing)."""
    return _DRY_RUN.get()


@contextmanager
def dry_run(enabled: bool) -> Iterator[None]:
    """Serve the writes inside the block as dry runs when ``enabled``."""
    token = _DRY_RUN.set(enabled)
    try:
        yield
    finally:
        _DRY_RUN.reset(token)
