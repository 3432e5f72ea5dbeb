"""Example: an operator packaged to be tried out on an embedded KubeSim and soaked under faults.

An :class:`Example` names an operator and says how to set it up and how to tell that it is
done: ``build(manager)`` registers its informers and controllers (the function ``python -m
aioinformer run`` takes), ``crds`` and ``samples`` are what :meth:`Example.install` creates
before it starts (each unless it exists; a CRD is waited for until it is served), and
``progress(client)`` reads the API server (not a cache) and answers ``(line, done)``: a
line saying where the samples stand, and whether they have converged exactly. It conforms
to :class:`~aioinformer.testing.Operator`, so a :class:`~aioinformer.testing.FaultMix`
runs it under faults; :meth:`Example.main` makes it a program.

An operator's module describes its example with plain names, so that importing the
operator imports nothing of the testing kit: ``build`` and ``progress`` (functions),
``CRDS`` and ``SAMPLES`` (optional lists); :meth:`Example.from_module` reads them (the name
is the module's file name), and only the script's ``__main__`` block imports this::

    if __name__ == "__main__":
        from aioinformer.testing import Example

        sys.exit(Example.from_module(sys.modules[__name__]).main())

Run as ``python podset.py``, it serves an embedded KubeSim with three nodes and the
scheduler/kubelet emulation, installs the CRDs and samples, runs the operator and prints a
progress line whenever it changes (and ``NAME: converged``) until Ctrl-C; ``--once`` exits
0 once converged (1 if not within ``--timeout`` seconds), ``--kubeconfig PATH`` runs against
that cluster instead, ``-v`` logs at INFO. A configuration error (e.g. a kubeconfig that is
not there) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from aioinformer._client.client import Client
from aioinformer._client.config import load_api_client
from aioinformer._core.errors import AlreadyExists, ConfigError
from aioinformer._runtime.manager import Manager
from aioinformer._runtime.target import build_manager
from aioinformer.testing._helpers import install_crd
from kubesim import KubeSim

__all__ = ["Example"]

_POLL = 0.2


@dataclass(frozen=True)
class Example:
    """An operator, its setup and its convergence check (see the module docstring)."""

    name: str
    """What the progress lines and the fault mix's results call it."""
    build: Callable[[Manager], object]
    """Registers the operator's informers and controllers on a manager (a coroutine
    function is awaited)."""
    progress: Callable[[Client], Awaitable[tuple[str, bool]]]
    """``(line, done)`` from the API server: done once the samples have converged."""
    crds: Sequence[Mapping[str, Any] | str | Path] = ()
    """CustomResourceDefinitions to install (dicts, YAML text or YAML file paths)."""
    samples: Sequence[Mapping[str, Any]] = ()
    """Objects to create, in order, after the CRDs (namespaces first, then what is in them)."""

    @classmethod
    def from_module(cls, module: ModuleType) -> Example:
        """The example ``module`` describes (see the module docstring): its ``build`` and
        ``progress`` functions, its ``CRDS`` and ``SAMPLES`` (none where it has none),
        named after its file. :class:`~aioinformer.ConfigError` if a function is missing."""
        name = Path(module.__file__ or module.__name__).stem
        build, progress = getattr(module, "build", None), getattr(module, "progress", None)
        if not callable(build) or not callable(progress):
            raise ConfigError(f"{name}: an example defines build(manager) and progress(client)")
        crds = getattr(module, "CRDS", ())
        samples = getattr(module, "SAMPLES", ())
        return cls(name, build, progress, crds=list(crds), samples=list(samples))

    async def install(self, client: Client) -> None:
        """Create the CRDs (waiting until each is served), then the samples; what exists
        already is left as it is."""
        for crd in self.crds:
            await install_crd(client, crd)
        for body in self.samples:
            with contextlib.suppress(AlreadyExists):
                await client.create(body)

    def main(self, argv: Sequence[str] | None = None) -> int:
        """The example as a program (see the module docstring); the exit status."""
        parser = argparse.ArgumentParser(prog=f"python {self.name}.py")
        parser.add_argument("--kubeconfig", help="run against this cluster instead of KubeSim")
        parser.add_argument("--once", action="store_true", help="exit 0 once converged")
        parser.add_argument(
            "--timeout", type=float, default=60.0, help="--once gives up after this (seconds)"
        )
        parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
        args = parser.parse_args(argv)
        level = logging.INFO if args.verbose else logging.WARNING
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        try:
            return asyncio.run(self._run(args))
        except KeyboardInterrupt:
            print("stopped")
            return 0
        except ConfigError as exc:
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 2

    async def _run(self, args: argparse.Namespace) -> int:
        async with contextlib.AsyncExitStack() as stack:  # closed in reverse order
            if args.kubeconfig:
                api = await load_api_client(args.kubeconfig)
            else:
                sim = await stack.enter_async_context(KubeSim(nodes=3))
                sim.start_cluster(start_delay=0.05, delete_grace_cap=0.1)
                nodes = ", ".join(n["metadata"]["name"] for n in sim.list("nodes"))
                print(f"KubeSim serving on {sim.url} with nodes {nodes}", flush=True)
                api = sim.api_client()
            await stack.enter_async_context(api)
            client = Client(api, field_manager=self.name)
            await self.install(client)
            manager = Manager(api)
            await build_manager(self.build, manager)
            # entered once synced; if the manager fails, the lines stop and its error is
            # raised; once the lines are done, the manager is stopped
            async with manager:
                return await self._report(client, args)

    async def _report(self, client: Client, args: argparse.Namespace) -> int:
        """Print progress lines as they change; with ``--once`` return once converged
        (else run until cancelled)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + args.timeout
        last, converged = "", False
        while True:
            line, done = await self.progress(client)
            if line != last:
                print(line, flush=True)
                last = line
            if done and not converged:
                print(f"{self.name}: converged", flush=True)
                if args.once:
                    return 0
            converged = done
            if args.once and loop.time() > deadline:
                print(f"{self.name}: not converged after {args.timeout:g}s", flush=True)
                return 1
            await asyncio.sleep(_POLL)
