"""Testing support for aioinformer users: KubeSim, an embedded Kubernetes API server, and
seeded fault mixes.

``aioinformer.testing`` is public API: users test their own controllers against KubeSim
as controller-runtime users do with envtest, with no cluster, container or binary, and run
them through :class:`FaultMix` (random writes under random network and server faults, then
a check that every cache and every controller converged exactly) and through a
:class:`Simulation` (several replicas of the operator under leader election or sharding,
on a virtual clock, a seeded schedule of faults between every request and its answer, the
invariants checked at every step; a :class:`Workload` says what the operator's objects
are; a failing seed replays exactly); an :class:`Example`
packages an operator to be tried out on an embedded KubeSim and soaked that way. The pytest
plugin (loaded by pytest on its own) gives the fixtures ``kubesim``, ``kube_api``,
``kube_client`` and ``manager`` (and the ``kubesim`` marker); :func:`eventually` and
:func:`install_crd` are the helpers tests need.
"""

from __future__ import annotations

from aioinformer.testing._example import Example as Example
from aioinformer.testing._faultmix import FaultMix as FaultMix
from aioinformer.testing._faultmix import FaultMixResult as FaultMixResult
from aioinformer.testing._faultmix import FaultStep as FaultStep
from aioinformer.testing._faultmix import Operator as Operator
from aioinformer.testing._faultmix import example_operators as example_operators
from aioinformer.testing._helpers import eventually as eventually
from aioinformer.testing._helpers import install_crd as install_crd
from aioinformer.testing._sim_invariants import Violation as Violation
from aioinformer.testing._sim_plan import SimulationPlan as SimulationPlan
from aioinformer.testing._sim_workload import Workload as Workload
from aioinformer.testing._simulation import Simulation as Simulation
from aioinformer.testing._simulation import SimulationResult as SimulationResult
from kubesim import Faults as Faults
from kubesim import KubeSim as KubeSim
from kubesim import KubeSimApiError as KubeSimApiError
from kubesim import KubeSimError as KubeSimError
from kubesim import User as User

__all__ = [
    "Example",
    "FaultMix",
    "FaultMixResult",
    "FaultStep",
    "Faults",
    "KubeSim",
    "KubeSimApiError",
    "KubeSimError",
    "Operator",
    "Simulation",
    "SimulationPlan",
    "SimulationResult",
    "User",
    "Violation",
    "Workload",
    "eventually",
    "example_operators",
    "install_crd",
]
