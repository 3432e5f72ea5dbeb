"""The apiserver's health endpoints: ``/healthz``, ``/livez``, ``/readyz`` and their checks.

:func:`health_response` answers a path as kube-apiserver v1.28 does (29a): ``ok`` (two bytes,
no newline) for the endpoint or one of its checks; with ``?verbose`` one ``[+]<check> ok``
line per check and ``<endpoint> check passed``; ``exclude=<check>`` turns that line into
``[+]<check> excluded: ok`` (a name matching no check adds the upstream ``warn:`` line); an
unknown check is the plain-text ``404 page not found``. Every answer is
``text/plain; charset=utf-8`` whatever the Accept header; every check always passes.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web

__all__ = ["HEALTH_ENDPOINTS", "health_response", "is_health_path"]

#: The checks /livez and /healthz run, in the recorded order.
_LIVEZ = (
    "ping log etcd poststarthook/start-kube-apiserver-admission-initializer "
    "poststarthook/generic-apiserver-start-informers "
    "poststarthook/priority-and-fairness-config-consumer "
    "poststarthook/priority-and-fairness-filter "
    "poststarthook/storage-object-count-tracker-hook poststarthook/start-apiextensions-informers "
    "poststarthook/start-apiextensions-controllers poststarthook/crd-informer-synced "
    "poststarthook/start-service-ip-repair-controllers poststarthook/rbac/bootstrap-roles "
    "poststarthook/scheduling/bootstrap-system-priority-classes "
    "poststarthook/priority-and-fairness-config-producer "
    "poststarthook/start-system-namespaces-controller poststarthook/bootstrap-controller "
    "poststarthook/start-cluster-authentication-info-controller "
    "poststarthook/start-kube-apiserver-identity-lease-controller "
    "poststarthook/start-deprecated-kube-apiserver-identity-lease-garbage-collector "
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector "
    "poststarthook/start-legacy-token-tracking-controller "
    "poststarthook/start-kube-aggregator-informers "
    "poststarthook/apiservice-registration-controller "
    "poststarthook/apiservice-status-available-controller "
    "poststarthook/kube-apiserver-autoregistration autoregister-completion "
    "poststarthook/apiservice-openapi-controller poststarthook/apiservice-openapiv3-controller "
    "poststarthook/apiservice-discovery-controller"
).split()
#: /readyz adds etcd-readiness and informer-sync after etcd, and shutdown last.
_READYZ = (*_LIVEZ[:3], "etcd-readiness", "informer-sync", *_LIVEZ[3:], "shutdown")

HEALTH_ENDPOINTS: dict[str, tuple[str, ...]] = {
    "healthz": tuple(_LIVEZ),
    "livez": tuple(_LIVEZ),
    "readyz": _READYZ,
}
_TEXT = "text/plain; charset=utf-8"


def is_health_path(path: str) -> bool:
    """Whether ``path`` (without a trailing slash) is a health endpoint or one of its checks."""
    return path.lstrip("/").split("/", 1)[0] in HEALTH_ENDPOINTS


def _text(body: str, status: int = 200, *, nosniff: bool = True) -> web.Response:
    headers = {"Cache-Control": "no-cache, private", "Content-Type": _TEXT}
    if nosniff:
        headers["X-Content-Type-Options"] = "nosniff"
    return web.Response(body=body.encode(), status=status, headers=headers)


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def health_response(path: str, verbose: bool, exclude: Sequence[str]) -> web.Response:
    """The answer to ``GET <path>`` (see the module docstring); ``verbose`` is whether the
    query has ``verbose``, ``exclude`` its ``exclude`` values."""
    endpoint, _, check = path.lstrip("/").partition("/")
    checks = HEALTH_ENDPOINTS[endpoint]
    if check:
        if check not in checks:
            return _text("404 page not found\n", 404)
        return _text("ok", nosniff=False)
    if not verbose:
        return _text("ok")
    excluded = set(exclude)
    lines = []
    for name in checks:
        if name in excluded:
            excluded.discard(name)
            lines.append(f"[+]{name} excluded: ok\n")
        else:
            lines.append(f"[+]{name} ok\n")
    if excluded:
        missing = _quoted(sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {missing}\n")
    return _text("".join(lines) + f"{endpoint} check passed\n")
