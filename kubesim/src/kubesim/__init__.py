"""KubeSim: an embedded Kubernetes API server, in Python, for tests, examples and benchmarks.

``async with KubeSim() as sim:`` serves the Kubernetes wire protocol on 127.0.0.1 (list,
watch, create, update, patch, apply, delete, discovery, OpenAPI, CRDs, Leases, JSON, YAML
and protobuf) as kube-apiserver v1.28 does, so any client (kubectl, client-go, the official
Python client, kubernetes_asyncio, kopf, lightkube, kr8s) can be tested against it with no
cluster, container or binary. What it serves is documented in ``docs/kubesim.md``.

The public API is what this module exports (``__all__``); every submodule is private.
KubeSim imports nothing of aioinformer.
"""

from __future__ import annotations

from kubesim.faults import Faults as Faults
from kubesim.kubesim import KubeSim as KubeSim
from kubesim.server import User as User
from kubesim.status import ApiError as ApiError

__version__ = "0.1.0"

__all__ = ["ApiError", "Faults", "KubeSim", "User"]
