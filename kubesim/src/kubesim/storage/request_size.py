"""etcd's limit on one request: an object whose stored form would not fit is refused."""

from __future__ import annotations

from kubesim.errors import KubeSimApiError

__all__ = ["ETCD_MAX_REQUEST_BYTES", "check_stored_size"]

#: etcd's default ``--max-request-bytes`` (1.5 MiB); the key and request framing count
#: too, so the object itself may be a little smaller than this
ETCD_MAX_REQUEST_BYTES = 1536 * 1024
_ETCD_OVERHEAD = 512


def check_stored_size(raw: bytes, key: str) -> None:
    """500 ``etcdserver: request is too large`` (no reason, no details; 25c) when the stored
    form of an object would not fit in one etcd request."""
    if len(raw) + len(key) + _ETCD_OVERHEAD > ETCD_MAX_REQUEST_BYTES:
        raise KubeSimApiError.internal("etcdserver: request is too large")
