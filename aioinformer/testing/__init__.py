"""Testing support for aioinformer users: KubeSim, an embedded Kubernetes API server.

``aioinformer.testing`` is public API: users test their own controllers against KubeSim
as controller-runtime users do with envtest, with no cluster, container or binary.
"""

from __future__ import annotations

from ._faults import Faults as Faults
from ._kubesim import KubeSim as KubeSim
from ._server import User as User
from ._status import ApiError as ApiError

__all__ = ["ApiError", "Faults", "KubeSim", "User"]
