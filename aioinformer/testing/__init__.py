"""Testing support for aioinformer users: KubeSim, an embedded Kubernetes API server.

``aioinformer.testing`` is public API: users test their own controllers against KubeSim
as controller-runtime users do with envtest, with no cluster, container or binary.
"""

from __future__ import annotations

from ._faultmix import FaultMix as FaultMix
from ._faultmix import FaultMixResult as FaultMixResult
from ._faultmix import FaultStep as FaultStep
from ._faultmix import Operator as Operator
from ._faultmix import example_operators as example_operators
from ._faults import Faults as Faults
from ._kubesim import KubeSim as KubeSim
from ._server import User as User
from ._status import ApiError as ApiError

__all__ = [
    "ApiError",
    "FaultMix",
    "FaultMixResult",
    "FaultStep",
    "Faults",
    "KubeSim",
    "Operator",
    "User",
    "example_operators",
]
