"""``python -m aioinformer sim``: run KubeSim on its own until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aioinformer._cli.crd_files import CrdDocument, CrdFileError, read_crd_files
from aioinformer._cli.extras import missing_extra
from aioinformer._cli.helpformat import PROG, add_command

if TYPE_CHECKING:
    from kubesim import KubeSim

__all__ = ["add_sim_parser", "run_sim"]


_DESCRIPTION = """
Serve KubeSim, an embedded Kubernetes API server, until interrupted (Ctrl-C or
SIGTERM). It speaks the real wire protocol (list, watch, create, update, patch,
apply, delete, discovery, CRDs, Leases), over https with a self-signed CA by default,
so kubectl and any client work against it through the kubeconfig it writes.

With --crd, it installs CustomResourceDefinitions first: each is served before the
kubeconfig is written and the "serving" line printed, so the next command can use it.
"""

_EXAMPLES = """
examples:
  python -m aioinformer sim --port 0 --kubeconfig-out sim.kubeconfig
  python -m aioinformer sim --kubeconfig-out sim.kubeconfig --crd examples/crds
  kubectl --kubeconfig sim.kubeconfig get pods -A
  python -m aioinformer sim --nodes 3 --cluster --kubeconfig-out sim.kubeconfig
  python -m aioinformer sim --plain-http --no-auth --latency 0.05
"""


def add_sim_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sim``."""
    p = add_command(
        sub,
        "sim",
        help="serve an embedded Kubernetes API server (KubeSim) until interrupted",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    p.add_argument("--port", type=int, default=8001, help="port to bind; 0 for any free port")
    p.add_argument("--kubeconfig-out", metavar="PATH", help="write a kubeconfig for the sim here")
    p.add_argument("--nodes", type=int, default=0, metavar="N", help="create N nodes")
    p.add_argument("--cluster", action="store_true", help="run the scheduler/kubelet emulation")
    p.add_argument(
        "--crd",
        dest="crds",
        action="append",
        default=[],
        metavar="PATH",
        help="install the CustomResourceDefinitions of this YAML or JSON file (one or more "
        "documents) or of this directory's .yaml, .yml and .json files, served before the "
        "kubeconfig is written; repeatable",
    )
    p.add_argument("--start-delay", type=float, default=1.0, metavar="SECONDS",
                   help="with --cluster, how long a pod stays Pending")  # fmt: skip
    scheme = p.add_mutually_exclusive_group()
    scheme.add_argument(
        "--tls",
        dest="plain_http",
        action="store_false",
        help="serve https with a self-signed CA written into the kubeconfig (the default)",
    )
    scheme.add_argument(
        "--plain-http",
        dest="plain_http",
        action="store_true",
        help="serve plain http (kubectl then sends no token: use --no-auth with it)",
    )
    p.set_defaults(plain_http=False)
    p.add_argument("--no-auth", action="store_true", help="accept requests without a token")
    token = p.add_mutually_exclusive_group()
    token.add_argument(
        "--token",
        metavar="TOKEN",
        help="the admin bearer token (default: a new random one), so a restarted sim keeps "
        "the token its clients already use",
    )
    token.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the admin bearer token from this file (keeps it out of the process list)",
    )
    p.add_argument("--watch-list", action="store_true", help="enable the WatchList gate")
    p.add_argument(
        "--feature-gates",
        default="",
        metavar="A=true,B=false",
        help="kube-apiserver feature gates KubeSim serves, off unless given: WatchList, "
        "ShardedListAndWatch (v1.36 alpha: shardSelector on lists and watches)",
    )
    p.add_argument("--history-size", type=int, default=10_000, metavar="N",
                   help="watch history kept per resource, in events")  # fmt: skip
    p.add_argument("--event-ttl", type=_seconds, default=3600.0, metavar="SECONDS",
                   help="delete an Event this long after its last write (kube-apiserver's "
                   "--event-ttl); 0 keeps Events forever")  # fmt: skip
    g = p.add_argument_group("faults")
    g.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                   help="delay every request")  # fmt: skip
    g.add_argument("--watch-delay", type=float, default=0.0, metavar="SECONDS",
                   help="delay every watch event")  # fmt: skip
    g.add_argument("--drop-watches-every", type=float, default=0.0, metavar="SECONDS",
                   help="close every open watch this often; 0 for never")  # fmt: skip
    g.add_argument("--restart-every", type=float, default=0.0, metavar="SECONDS",
                   help="restart the server this often; 0 for never")  # fmt: skip
    g.add_argument("--fail-next", type=int, default=0, metavar="N", help="fail the next N requests")
    g.add_argument("--fail-status", type=int, default=500, choices=(429, 500, 503, 504),
                   help="the status of those failures")  # fmt: skip


def _seconds(text: str) -> float:
    """A duration of zero or more seconds (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text}")
    return value


def _token(args: argparse.Namespace) -> str | None:
    if args.token_file:
        return Path(args.token_file).read_text().strip() or None
    return str(args.token) if args.token else None


class _CrdRejected(Exception):
    """KubeSim refused a CRD of a --crd file (the message is one line)."""


async def _install_crds(sim: KubeSim, crds: list[CrdDocument]) -> None:
    """Create ``crds`` and return once each one's resource is served."""
    from aioinformer.testing._helpers import crd_resource
    from kubesim import KubeSimApiError

    for crd in crds:
        try:
            sim.create("customresourcedefinitions", crd.body)
        except KubeSimApiError as exc:
            message = " ".join(str(exc).split())
            raise _CrdRejected(f"{crd.source}: KubeSim refused it: {message}") from None
    for crd in crds:
        group_version, plural = crd_resource(crd.body)
        await sim.wait_served(f"{group_version}/{plural}")
    if crds:
        names = ", ".join(crd.body["metadata"]["name"] for crd in crds)
        print(f"CustomResourceDefinitions served: {names}", flush=True)


async def _serve(
    args: argparse.Namespace, token: str | None, crds: list[CrdDocument], gates: dict[str, bool]
) -> None:
    from kubesim import KubeSim

    sim = KubeSim(
        feature_gates=gates,
        host=args.host,
        port=args.port,
        auth=not args.no_auth,
        token=token,
        tls=not args.plain_http,
        watch_list=args.watch_list,
        history_size=args.history_size,
        nodes=args.nodes,
        event_ttl=args.event_ttl or None,
    )
    stop = asyncio.Event()  # (set by Ctrl-C or SIGTERM from before the first line it prints)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with sim:
        await _install_crds(sim, crds)
        if args.kubeconfig_out:
            sim.write_kubeconfig(args.kubeconfig_out)
            print(f"kubeconfig written to {args.kubeconfig_out}", flush=True)
        if args.cluster:
            sim.start_cluster(start_delay=args.start_delay)
        sim.faults.set_latency(args.latency)
        sim.faults.delay_watch_events(args.watch_delay)
        if args.fail_next:
            sim.fail_next(args.fail_next, args.fail_status)
        print(f"KubeSim serving on {sim.url} (Ctrl-C to stop)", flush=True)
        periodic: list[tuple[float, Callable[[], None]]] = []
        if args.drop_watches_every:
            periodic.append((args.drop_watches_every, sim.drop_watches))
        if args.restart_every:
            periodic.append((args.restart_every, sim.restart))

        async def every(seconds: float, action: Callable[[], None]) -> None:
            while True:
                await asyncio.sleep(seconds)
                action()

        tasks = [asyncio.create_task(every(s, a)) for s, a in periodic]
        try:
            await stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    print("KubeSim stopped", flush=True)


def run_sim(args: argparse.Namespace) -> int:
    """Serve until interrupted: exit status 0; 2 when it cannot start (in one line: an
    unknown or malformed --feature-gates, a --crd PATH that is not
    CustomResourceDefinitions KubeSim accepts, the token file
    unreadable, the port taken, https without ``cryptography``)."""
    from kubesim import TlsUnavailable
    from kubesim.server.features import parse_feature_gates

    try:
        gates = parse_feature_gates(args.feature_gates)
    except ValueError as exc:
        print(f"{PROG} sim: --feature-gates: {exc}", file=sys.stderr)
        return 2
    try:
        crds = read_crd_files(args.crds)
    except CrdFileError as exc:
        print(f"{PROG} sim: --crd {exc}", file=sys.stderr)
        return 2

    try:
        token = _token(args)
    except OSError as exc:
        print(f"{PROG} sim: cannot read the token file: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(args, token, crds, gates))
    except _CrdRejected as exc:
        print(f"{PROG} sim: --crd {exc}", file=sys.stderr)
        return 2
    except TlsUnavailable:
        line = missing_extra("sim", "cryptography", "kubesim")
        print(f"{line} (or serve --plain-http)", file=sys.stderr)
        return 2
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        print(f"{PROG} sim: cannot serve on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 2
    return 0
