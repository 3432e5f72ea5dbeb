"""The pytest plugin: fixtures to test an operator on KubeSim (entry point ``pytest11``).

Installed with aioinformer; pytest loads it by itself. Fixtures (each test gets its own,
torn down after it; they need pytest-asyncio, in auto or strict mode):

* ``kubesim``: a started :class:`~aioinformer.testing.KubeSim` on 127.0.0.1, bearer-token
  auth on, no TLS. Its options come from the ``kubesim_options`` fixture (override it) and
  from a ``@pytest.mark.kubesim(...)`` marker on the test, its class or module (which wins):
  KubeSim's own (``nodes=3``, ``tls=True`` for kubectl, ...) and two more, as envtest's
  environment options do: ``cluster=True`` starts the scheduler/kubelet emulation (pods
  bound to the nodes and Running shortly after; a dict gives its options, e.g.
  ``{"start_delay": 1.0}``), ``crds=[...]`` installs CustomResourceDefinitions (dicts, YAML
  text or YAML file paths) and waits until they are served, before the test (and the
  ``manager``) starts;
* ``kube_api``: a kubernetes_asyncio ``ApiClient`` for it;
* ``kube_client``: an :class:`~aioinformer.Client` on it;
* ``manager``: a running :class:`~aioinformer.Manager` built by the test module's (or a
  conftest's) ``operator`` fixture, a function ``build(manager)`` (``python -m aioinformer
  run``'s target function), synced before the test starts and stopped after it.

Helpers (``from aioinformer.testing import eventually, install_crd``): :func:`eventually`
polls a condition until it holds, failing with a clear message after a timeout;
:func:`install_crd` creates a CustomResourceDefinition from YAML or a dict and returns once
its resource is served.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._client.client import Client
from aioinformer._runtime.manager import Manager
from aioinformer._runtime.target import build_manager
from aioinformer.testing._helpers import crd_resource, eventually, install_crd, load_crd

if TYPE_CHECKING:  # (KubeSim is imported by the fixture that starts one: see kubesim())
    from kubesim import KubeSim

__all__ = ["eventually", "install_crd"]


def _async_fixture(fn: Callable[..., Any]) -> Any:
    """``fn`` as an async fixture (pytest-asyncio's, so it works in strict mode too); where
    pytest-asyncio is missing, a fixture that says so."""
    try:
        import pytest_asyncio
    except ImportError:

        @pytest.fixture(name=fn.__name__)
        def missing() -> None:
            pytest.fail("aioinformer's fixtures need pytest-asyncio: pip install pytest-asyncio")

        return missing
    return pytest_asyncio.fixture(fn)


_FAST_CLUSTER: Mapping[str, Any] = {"start_delay": 0.05, "delete_grace_cap": 0.1}
"""The emulation's defaults under ``cluster=True``: pods Running 50 ms after they are
bound, graceful deletions done within 100 ms (tests wait less than a cluster would)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kubesim(**options): options of the kubesim fixture's KubeSim (nodes=, tls=, ...), "
        "cluster= (start the scheduler/kubelet emulation) and crds= (CRDs to install first)",
    )


@pytest.fixture
def kubesim_options() -> dict[str, Any]:
    """Options for the ``kubesim`` fixture's KubeSim (override it to change them; see the
    module docstring for ``cluster`` and ``crds``)."""
    return {}


@_async_fixture
async def kubesim(
    kubesim_options: dict[str, Any], request: pytest.FixtureRequest
) -> AsyncIterator[KubeSim]:
    """A started KubeSim (loopback, auth on), with the cluster emulation and the CRDs its
    options ask for."""
    options = dict(kubesim_options)
    marker = request.node.get_closest_marker("kubesim")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("@pytest.mark.kubesim takes keyword options only")
        options.update(marker.kwargs)
    cluster = options.pop("cluster", False)
    crds = [load_crd(crd) for crd in options.pop("crds", ())]
    try:
        from kubesim import KubeSim
    except ImportError as exc:
        pytest.fail(
            f"the kubesim fixture needs KubeSim: pip install 'aioinformer[kubesim]' ({exc})"
        )
    async with KubeSim(**options) as sim:
        if cluster:
            chosen = cluster if isinstance(cluster, Mapping) else {}
            sim.start_cluster(**{**_FAST_CLUSTER, **chosen})
        for crd in crds:
            sim.create("customresourcedefinitions", crd)
        for crd in crds:
            group_version, plural = crd_resource(crd)
            await sim.wait_served(f"{group_version}/{plural}")
        yield sim


@_async_fixture
async def kube_api(kubesim: KubeSim) -> AsyncIterator[Any]:
    """A kubernetes_asyncio ``ApiClient`` for ``kubesim``."""
    async with kubesim.api_client() as api:
        yield api


@_async_fixture
async def kube_client(kube_api: Any) -> Client:
    """An aioinformer :class:`~aioinformer.Client` for ``kubesim``."""
    return Client(kube_api, field_manager="pytest")


@pytest.fixture
def operator() -> Callable[[Manager], Any]:
    """The build function of the operator under test: override this fixture."""
    raise pytest.UsageError(
        "the 'manager' fixture needs an 'operator' fixture returning your build(manager) "
        "function (define it in the test module or a conftest.py)"
    )


@_async_fixture
async def manager(kube_api: Any, operator: Callable[[Manager], Any]) -> AsyncIterator[Manager]:
    """A running Manager with ``operator`` built on it, synced; stopped after the test (and
    the error it failed with, if any, raised then)."""
    m = Manager(kube_api, metrics_port=0, discovery_timeout=10.0, cache_sync_timeout=30.0)
    await build_manager(operator, m)
    async with m:
        yield m
