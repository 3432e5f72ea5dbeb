"""``python -m aioinformer dump|top``: an informer from the command line.

``dump RESOURCE`` syncs one informer and prints one JSON line per cached object
(``{"key": "ns/name", "resourceVersion": "..."}``) then a summary line with the count and
the list RV. ``top RESOURCE...`` shows a live table (objects, RV, events/s, FIFO depth,
staleness) until interrupted. RESOURCE is ``pods``, ``v1/pods``, ``apps/v1/statefulsets``
or ``GROUP/VERSION/PLURAL``. Without ``--kubeconfig`` the usual kubeconfig / in-cluster
resolution of kubernetes_asyncio applies.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

import orjson

from aioinformer._cache.factory import InformerFactory
from aioinformer._core.errors import AioinformerError, ConfigError

__all__ = ["add_parsers", "parse_resource"]

_WELL_KNOWN = {
    "statefulsets": "apps/v1",
    "deployments": "apps/v1",
    "daemonsets": "apps/v1",
    "replicasets": "apps/v1",
    "controllerrevisions": "apps/v1",
    "leases": "coordination.k8s.io/v1",
    "customresourcedefinitions": "apiextensions.k8s.io/v1",
}


def parse_resource(text: str) -> tuple[str, str]:
    """``pods`` -> ("v1", "pods"); ``apps/v1/statefulsets`` -> ("apps/v1", "statefulsets")."""
    parts = [p for p in text.strip().split("/") if p]
    if len(parts) == 1:
        return _WELL_KNOWN.get(parts[0], "v1"), parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3:
        return f"{parts[0]}/{parts[1]}", parts[2]
    raise ConfigError(f"bad resource {text!r}: use PLURAL, VERSION/PLURAL or GROUP/VERSION/PLURAL")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``dump`` and ``top``."""
    for name, help_ in (
        ("dump", "sync an informer and print one JSON line per cached object"),
        ("top", "show live informer statistics until interrupted"),
    ):
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file (default: usual)")
        p.add_argument("-n", "--namespace", help="one namespace (default: all)")
        p.add_argument("-l", "--selector", help="label selector")
        p.add_argument("--timeout", type=float, default=60.0, help="sync timeout (seconds)")
        if name == "dump":
            p.add_argument("resource", help="pods, v1/pods, apps/v1/statefulsets, G/V/PLURAL")
        else:
            p.add_argument("resources", nargs="+", help="resources as for dump")
            p.add_argument("--interval", type=float, default=1.0, help="refresh (seconds)")


async def _api_client(kubeconfig: str | None) -> Any:
    from kubernetes_asyncio import client, config

    if kubeconfig:
        return await config.new_client_from_config(config_file=kubeconfig)
    try:
        await config.load_kube_config()
    except Exception:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    return client.ApiClient()


async def _dump(args: argparse.Namespace) -> int:
    group_version, plural = parse_resource(args.resource)
    async with await _api_client(args.kubeconfig) as api:
        async with InformerFactory(api, namespace=args.namespace) as factory:
            inf = factory.informer(group_version, plural, label_selector=args.selector)
            await factory.wait_for_sync(timeout=args.timeout)
            snap = inf.snapshot()
            out = sys.stdout.buffer
            for obj in sorted(snap.list(), key=lambda o: o.key):
                out.write(orjson.dumps({"key": obj.key, "resourceVersion": str(obj.rv)}) + b"\n")
            out.write(
                orjson.dumps({"count": len(snap), "resourceVersion": str(snap.resource_version)})
                + b"\n"
            )
            out.flush()
    return 0


async def _top(args: argparse.Namespace) -> int:
    from rich.live import Live
    from rich.table import Table

    async with await _api_client(args.kubeconfig) as api:
        async with InformerFactory(api, namespace=args.namespace) as factory:
            informers = [
                factory.informer(*parse_resource(r), label_selector=args.selector)
                for r in args.resources
            ]
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError):
                    loop.add_signal_handler(sig, stop.set)

            def table() -> Table:
                t = Table(title="aioinformer top")
                for col in (
                    "informer",
                    "synced",
                    "objects",
                    "RV",
                    "events/s",
                    "FIFO",
                    "peak",
                    "staleness",
                    "relists",
                    "restarts",
                    "decode errors",
                ):
                    t.add_column(col, justify="left" if col == "informer" else "right")
                for inf in informers:
                    s = inf.statistics()
                    t.add_row(
                        s.name,
                        "yes" if s.has_synced else "no",
                        str(s.objects),
                        str(s.resource_version),
                        f"{s.events_per_second:.0f}",
                        str(s.fifo_depth),
                        str(s.fifo_peak),
                        f"{s.staleness * 1000:.0f} ms",
                        str(s.relists),
                        str(s.watch_restarts),
                        str(s.decode_errors),
                    )
                return t

            with Live(table(), refresh_per_second=4) as live:
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), args.interval)
                    live.update(table())
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``dump`` or ``top``; errors are printed clearly, exit code 1."""
    try:
        return asyncio.run(_dump(args) if args.command == "dump" else _top(args))
    except AioinformerError as exc:
        print(f"aioinformer {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
