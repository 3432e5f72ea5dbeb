"""KubeSim: an embedded Kubernetes API server, in Python, for tests, examples and benchmarks.

``async with KubeSim() as sim:`` serves the Kubernetes wire protocol on 127.0.0.1 (list,
watch, create, update, patch, apply, delete, discovery, OpenAPI, CRDs, Leases, JSON, YAML
and protobuf) as kube-apiserver v1.28 does, so any client (kubectl, client-go, the official
Python client, kubernetes_asyncio, kopf, lightkube, kr8s) can be tested against it with no
cluster, container or binary. What it serves is documented in ``docs/kubesim.md``.

The public API is what this module exports (``__all__``); every submodule is private.
Errors: every one KubeSim raises on purpose is a :class:`KubeSimError`; the answer to a
request it refuses is a :class:`KubeSimApiError` (HTTP code, Status body). KubeSim imports
nothing of aioinformer.
"""

from __future__ import annotations

from kubesim.errors import KubeSimApiError as KubeSimApiError
from kubesim.errors import KubeSimError as KubeSimError
from kubesim.errors import TlsUnavailable as TlsUnavailable
from kubesim.fieldmanager.patching import STRATEGIC_PATCH as STRATEGIC_PATCH
from kubesim.kubesim import KubeSim as KubeSim
from kubesim.server.auth import User as User
from kubesim.server.faults import Faults as Faults
from kubesim.storage.mvcc import TypeStore as TypeStore

__version__ = "0.1.0"

__all__ = [
    "STRATEGIC_PATCH",
    "Faults",
    "KubeSim",
    "KubeSimApiError",
    "KubeSimError",
    "TlsUnavailable",
    "TypeStore",
    "User",
]
