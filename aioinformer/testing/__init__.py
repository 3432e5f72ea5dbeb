"""Testing support for aioinformer users: KubeSim, an embedded Kubernetes API server.

``aioinformer.testing`` is public API: users test their own controllers against KubeSim
as controller-runtime users do with envtest, with no cluster, container or binary.
:class:`SimProcess` runs KubeSim in a child process (for load tests and benchmarks, so
server and client do not share a core), and :func:`run_seed` is the seed scenario
(kubernetes/kubernetes#130767) that ``python -m aioinformer demo`` and ``bench/seed.py`` run.
"""

from __future__ import annotations

from ._faultmix import FaultMix as FaultMix
from ._faultmix import FaultMixResult as FaultMixResult
from ._faultmix import FaultStep as FaultStep
from ._faultmix import Operator as Operator
from ._faultmix import example_operators as example_operators
from ._faults import Faults as Faults
from ._kubesim import KubeSim as KubeSim
from ._seed import ConfigResult as ConfigResult
from ._seed import SeedOptions as SeedOptions
from ._seed import SeedReport as SeedReport
from ._seed import run_seed as run_seed
from ._server import User as User
from ._simproc import SimProcess as SimProcess
from ._simproc import SimProcessError as SimProcessError
from ._status import ApiError as ApiError

__all__ = [
    "ApiError",
    "ConfigResult",
    "FaultMix",
    "FaultMixResult",
    "FaultStep",
    "Faults",
    "KubeSim",
    "Operator",
    "SeedOptions",
    "SeedReport",
    "SimProcess",
    "SimProcessError",
    "User",
    "example_operators",
    "run_seed",
]
