"""``python -m aioinformer run TARGET``: run an operator in production.

TARGET is ``package.module:build`` or ``path/to/file.py:build``: a function that receives a
Manager and registers informers and controllers on it. The cluster comes from
``--kubeconfig``/``--context``, else the pod's service account, else the default
kubeconfig. The metrics port serves ``/metrics``, ``/healthz`` (the event loop answers) and
``/readyz`` (every informer synced, and the checks the operator added). With
``--leader-election NAME`` the controllers run only on the replica holding the Lease NAME;
with ``--shards N`` each replica reconciles the keys of the shards it holds and caches only
their objects (``Sharding(caches="sharded")``; ``--shard-caches full``: every replica caches
every object, ``caches="full"``).

SIGTERM (what Kubernetes sends) or SIGINT stops it gracefully: running reconciles get up to
``--shutdown-timeout`` seconds, then the Leases are released, then the informers stop, and
it exits with status 0. A second signal exits at once (status 130). A configuration error
is one line and exit status 2: a bad option or TARGET, a kubeconfig missing, malformed or
without the context, credentials the cluster rejects, a server that cannot be reached
(:mod:`aioinformer._cli.failures`). Any other error of the library on the way is one line
and status 1; an exception of another kind (a bug) is logged with its traceback, status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
import socket
from typing import Any

from aioinformer._cli.failures import fail, single
from aioinformer._cli.helpformat import add_command
from aioinformer._cli.logs import configure_logging
from aioinformer._client.config import load_api_client
from aioinformer._core import logs
from aioinformer._core.errors import AioinformerError, ConfigError
from aioinformer._core.loops import new_event_loop
from aioinformer._runtime.manager import LeaderElection, Manager, Sharding
from aioinformer._runtime.target import build_manager, load_target

__all__ = ["add_run_parser", "run_operator"]

log = logs.logger("aioinformer.run")
_EXIT_GRACE = 1.0


_DESCRIPTION = """
Run an operator until SIGTERM or SIGINT. TARGET is package.module:build or
path/to/file.py:build: a function that receives a Manager and registers informers and
controllers on it.

The cluster comes from --kubeconfig/--context, else the pod's service account, else
$KUBECONFIG or ~/.kube/config. The metrics port serves /metrics, /healthz (the event
loop answers) and /readyz (every informer synced, and the checks the operator added).
With --leader-election NAME the controllers run only on the replica holding the Lease
NAME; with --shards N each replica reconciles the keys of the shards it holds and caches
only those shards' primaries and their children (--shard-caches full: every replica
caches every object). At start it logs which informers are sharded and how.

SIGTERM (what Kubernetes sends) or SIGINT stops it gracefully: running reconciles get
up to --shutdown-timeout seconds, then the Leases are released, then the informers
stop, and it exits with status 0. A second signal exits at once (status 130). A
configuration error is one line and exit status 2.
"""

_EXAMPLES = """
examples:
  python -m aioinformer run examples/podset.py:build --kubeconfig sim.kubeconfig
  python -m aioinformer run mypkg.operator:build --leader-election my-operator
  python -m aioinformer run mypkg.operator:build --shards 4 --log-format json
  python -m aioinformer run mypkg.op:build --shards 300 --shard-caches full
"""


def add_run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``run``."""
    p = add_command(
        sub,
        "run",
        help="run an operator (MODULE:CALLABLE) against a cluster",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
    )
    p.add_argument("target", metavar="TARGET", help="package.module:build or file.py:build")
    add_manager_arguments(p)
    g = p.add_argument_group("running")
    g.add_argument("--metrics-port", type=int, default=8080, metavar="PORT",
                   help="port of /metrics, /healthz, /readyz; 0 for any free port")  # fmt: skip
    g.add_argument("--metrics-host", default="0.0.0.0", metavar="ADDRESS",
                   help="address the metrics port binds")  # fmt: skip
    g.add_argument("--shutdown-timeout", type=float, default=None, metavar="SECONDS",
                   help="how long running reconciles may take to end on SIGTERM (default: "
                        "each controller's ControllerOptions.shutdown_timeout, 30 s)")  # fmt: skip
    g.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="log lines as text or JSON")  # fmt: skip
    g.add_argument("--log-level", default="INFO", metavar="LEVEL",
                   help="DEBUG, INFO, WARNING or ERROR")  # fmt: skip


def add_manager_arguments(p: argparse.ArgumentParser) -> None:
    """The cluster and coordination flags (shared by ``run`` and ``rbac``)."""
    g = p.add_argument_group("cluster")
    g.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default: in-cluster, "
                   "then $KUBECONFIG or ~/.kube/config)")  # fmt: skip
    g.add_argument("--context", help="kubeconfig context (default: its current one)")
    g.add_argument("-n", "--namespace", help="watch one namespace (default: all)")
    g.add_argument("--field-manager", default="aioinformer", metavar="NAME",
                   help="fieldManager of the writes")  # fmt: skip
    c = p.add_argument_group("coordination")
    c.add_argument("--leader-election", metavar="NAME",
                   help="run controllers only while holding the Lease NAME")  # fmt: skip
    c.add_argument("--shards", type=int, metavar="N",
                   help="split the keys in N shards across the replicas")  # fmt: skip
    c.add_argument("--shard-caches", choices=("sharded", "full"),
                   help="with --shards: 'sharded' (the default; N <= 256): each replica "
                   "caches only its shards' primaries and their children; 'full': every "
                   "replica caches every object")  # fmt: skip
    c.add_argument("--lease-name", metavar="NAME",
                   help="prefix of the shard Leases (default: the target's name)")  # fmt: skip
    c.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "default"),
                   metavar="NAMESPACE",
                   help="namespace of the Leases, $POD_NAMESPACE when set")  # fmt: skip
    c.add_argument(
        "--identity",
        default=None,
        help="this replica's identity in the Leases (default: hostname + random)",
    )
    c.add_argument("--lease-duration", type=float, default=15.0, metavar="SECONDS",
                   help="how long a Lease holds without renewal")  # fmt: skip
    c.add_argument("--renew-deadline", type=float, default=10.0, metavar="SECONDS",
                   help="how long the holder keeps retrying a renewal before it stops")  # fmt: skip
    c.add_argument("--retry-period", type=float, default=2.0, metavar="SECONDS",
                   help="time between attempts to acquire or renew")  # fmt: skip


def manager_from_args(api: Any, args: argparse.Namespace, **options: Any) -> Manager:
    """The Manager the flags describe."""
    if args.leader_election and args.shards:
        raise ConfigError("--leader-election and --shards exclude each other")
    if args.shard_caches and not args.shards:
        raise ConfigError("--shard-caches needs --shards N")
    identity = args.identity or _default_identity()
    timing = {
        "lease_duration": args.lease_duration,
        "renew_deadline": args.renew_deadline,
        "retry_period": args.retry_period,
    }
    election = sharding = None
    if args.leader_election:
        election = LeaderElection(args.leader_election, args.lease_namespace, identity, **timing)
    if args.shards:
        prefix = args.lease_name or _lease_prefix(args.target)
        sharding = Sharding(
            prefix,
            args.lease_namespace,
            identity,
            args.shards,
            caches=args.shard_caches or "sharded",
            **timing,
        )
    return Manager(
        api,
        namespace=args.namespace,
        leader_election=election,
        sharding=sharding,
        field_manager=args.field_manager,
        **options,
    )


def _default_identity() -> str:
    host = socket.gethostname().lower().replace("_", "-").strip("-.") or "replica"
    return f"{host[:50]}-{secrets.token_hex(3)}"


def _lease_prefix(target: str) -> str:
    stem = target.rpartition(":")[0] or target
    stem = stem.rsplit("/", 1)[-1].removesuffix(".py").rsplit(".", 1)[-1]
    return stem.lower().replace("_", "-") or "aioinformer"


def run_operator(args: argparse.Namespace) -> int:
    """Run the operator until SIGTERM/SIGINT (see the module docstring); the exit status."""
    configure_logging(args.log_format, args.log_level)
    loop = _new_loop()
    main = loop.create_task(_main(args), name="aioinformer-run")
    signals = {"count": 0}

    def on_signal(signum: int) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            log.error("second signal: exiting now")
            os._exit(130)
        log.info("%s: stopping gracefully", signal.Signals(signum).name)
        main.cancel()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return loop.run_until_complete(_wait(main, signals))
    except Exception as exc:
        if isinstance(single(exc), AioinformerError):  # (said in one line: no traceback)
            return fail("run", exc)
        log.exception("the operator stopped")  # (a bug, the operator's or ours: where)
        return 1
    finally:
        _close(loop)


async def _wait(main: asyncio.Task[int], signals: dict[str, int]) -> int:
    try:
        return await main
    except asyncio.CancelledError:
        if signals["count"]:
            log.info("stopped")
            return 0
        raise


async def _main(args: argparse.Namespace) -> int:
    build = load_target(args.target)
    async with await load_api_client(args.kubeconfig, args.context) as api:
        manager = manager_from_args(
            api, args, metrics_port=args.metrics_port, metrics_host=args.metrics_host
        )
        await build_manager(build, manager)
        if args.shutdown_timeout is not None:  # (given: it overrides every controller's)
            for ctl in manager.controllers:
                options = ctl.options
                ctl.options = dataclasses.replace(options, shutdown_timeout=args.shutdown_timeout)
        await manager.run()
    return 0


def _new_loop() -> asyncio.AbstractEventLoop:
    return new_event_loop()


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left, wait a moment (not for ever: a task that ignores its
    cancellation must not hold the exit), close the loop."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=_EXIT_GRACE))
        stuck = [t.get_name() for t in pending if not t.done()]
        if stuck:
            log.warning("exiting with %d tasks still running: %s", len(stuck), ", ".join(stuck))
    with contextlib.suppress(Exception):
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), _EXIT_GRACE))
    loop.close()
