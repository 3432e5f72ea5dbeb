"""Testing support for aioinformer users: KubeSim, an embedded Kubernetes API server.

``aioinformer.testing`` is public API: users test their own controllers against KubeSim
as controller-runtime users do with envtest, with no cluster, container or binary.
:class:`SimProcess` runs KubeSim in a child process (for load tests and benchmarks, so
server and client do not share a core), and :func:`run_seed` is the seed scenario
(kubernetes/kubernetes#130767) that ``python -m aioinformer demo`` and ``bench/seed.py`` run.
"""

from __future__ import annotations

from aioinformer._harness.seed import ConfigResult as ConfigResult
from aioinformer._harness.seed import SeedOptions as SeedOptions
from aioinformer._harness.seed import SeedReport as SeedReport
from aioinformer._harness.seed import run_seed as run_seed
from aioinformer._harness.simproc import SimProcess as SimProcess
from aioinformer._harness.simproc import SimProcessError as SimProcessError
from aioinformer.testing._faultmix import FaultMix as FaultMix
from aioinformer.testing._faultmix import FaultMixResult as FaultMixResult
from aioinformer.testing._faultmix import FaultStep as FaultStep
from aioinformer.testing._faultmix import Operator as Operator
from aioinformer.testing._faultmix import example_operators as example_operators
from aioinformer.testing._kubesim.faults import Faults as Faults
from aioinformer.testing._kubesim.kubesim import KubeSim as KubeSim
from aioinformer.testing._kubesim.server import User as User
from aioinformer.testing._kubesim.status import ApiError as ApiError

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
