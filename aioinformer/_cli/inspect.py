"""``python -m aioinformer dump|top``: informers from the command line.

``dump RESOURCE`` syncs one informer and prints its cached objects as JSON lines, sorted
by key: ``{"key": "ns/name", "resourceVersion": "..."}`` per object, or with ``--full``
the whole object (``metadata.managedFields`` left out unless ``--show-managed-fields``),
then one summary line ``{"count": N, "resourceVersion": "..."}`` (the RV the cache
reflects). ``top RESOURCE...`` shows each informer's statistics until interrupted: a live
table on a terminal, a table every ``--interval`` seconds otherwise (a log shows it is
alive); ``top --lease-name NAME`` shows, above them or alone, the shard ring of a sharded
operator as its Leases say (:mod:`aioinformer._coordination.ring`). RESOURCE is resolved
as :mod:`aioinformer._cli.resources` describes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from aioinformer._cache.factory import InformerFactory
from aioinformer._cache.informer import Informer, InformerStatistics
from aioinformer._cli.failures import fail
from aioinformer._cli.helpformat import add_command
from aioinformer._cli.resources import resolve_resource
from aioinformer._cli.tables import Column, fit_table, print_table
from aioinformer._client.config import load_api_client
from aioinformer._client.discovery import ApiResource
from aioinformer._client.rest import RestClient
from aioinformer._coordination.lease import LeaseClient
from aioinformer._coordination.ring import Ring, RingShard, read_ring
from aioinformer._core.errors import AioinformerError, ConfigError
from aioinformer._core.objects import KubeObject, drop_managed_fields
from aioinformer._core.projection import project
from aioinformer._core.shardkeys import ShardSelector

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = [
    "RING_COLUMNS",
    "TOP_COLUMNS",
    "add_parsers",
    "human_bytes",
    "ring_table",
    "run",
    "top_table",
]

_RESOURCE_HELP = """
RESOURCE is a name as kubectl takes it (pods, pod, po, statefulsets, sts,
podsets.example.aioinformer.dev) or GROUP/VERSION/PLURAL (v1/pods,
apps/v1/statefulsets). Without --kubeconfig the cluster is the pod's service
account when in a pod, else $KUBECONFIG or ~/.kube/config.
"""

_DUMP = """
Sync an informer on RESOURCE and print its cached objects as JSON lines, sorted by
key: {"key": "NAMESPACE/NAME", "resourceVersion": "RV"} per object, or the whole
object with --full, then one summary line {"count": N, "resourceVersion": "RV"}
(the resourceVersion the cache reflects).
"""

_DUMP_EXAMPLES = """
examples:
  python -m aioinformer dump pods
  python -m aioinformer dump -n default -l app=web --full pods
  python -m aioinformer dump --full apps/v1/statefulsets | head -n -1 | jq .spec
"""

_TOP = """
Show the statistics of one informer per RESOURCE until interrupted (Ctrl-C): cached
objects, resourceVersion, events per second, FIFO depth and peak, staleness, the bytes
the cache holds (in all and per object; plain: with bodies uncompressed), relists,
watch restarts and decode errors. On a terminal the table updates in place; otherwise
a table is printed every --interval seconds. Columns that do not fit the terminal's
width are left out, the least important first. --compact and --project show what
compact mode and a projection would hold for your objects; --shard what one replica of a
sharded controller would cache (its buckets of the key space, KEP-5866): who filters
("server" when the API server applies shardSelector, else "client"), the share of the key
space, and the objects it kept and dropped as outside it.

--lease-name NAME (the --lease-name, or the target's name, given to "run --shards") shows
the ring of that sharded operator as its Leases in --lease-namespace say, read from the
server: each shard's holder, whether it is ready there (its caches synced and caught
up: its keys are reconciled), the label buckets it covers, when it was last renewed
(or that it expired), and the live replicas. RESOURCE can then be left out.
"""

_TOP_EXAMPLES = """
examples:
  python -m aioinformer top pods
  python -m aioinformer top -n default pods configmaps leases
  python -m aioinformer top --project spec.nodeName --project status.phase pods
  python -m aioinformer top --shard 0/4 pods
  python -m aioinformer top --lease-name podset --lease-namespace ops
"""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``dump`` and ``top``."""
    dump = add_command(
        sub,
        "dump",
        help="sync an informer and print its objects as JSON lines",
        description=_DUMP + _RESOURCE_HELP,
        epilog=_DUMP_EXAMPLES,
    )
    top = add_command(
        sub,
        "top",
        help="show live informer statistics until interrupted",
        description=_TOP + _RESOURCE_HELP,
        epilog=_TOP_EXAMPLES,
    )
    for p in (dump, top):
        p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file")
        p.add_argument("--context", help="kubeconfig context (default: its current one)")
        p.add_argument("-n", "--namespace", help="one namespace (default: all)")
        p.add_argument("-l", "--selector", metavar="SELECTOR", help="label selector")
    dump.add_argument("--full", action="store_true", help="print whole objects")
    dump.add_argument(
        "--show-managed-fields",
        action="store_true",
        help="with --full, keep metadata.managedFields",
    )
    dump.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the sync",
    )
    dump.add_argument("resource", metavar="RESOURCE", help="what to dump")
    top.add_argument(
        "--interval", type=float, default=1.0, metavar="SECONDS", help="time between updates"
    )
    top.add_argument(
        "--compact", action="store_true", help="keep the bodies compressed (compact mode)"
    )
    top.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="PATH",
        help="cache only this body field path (repeat it; metadata is always kept)",
    )
    top.add_argument(
        "--shard",
        type=shard_arg,
        metavar="BUCKETS/N",
        help="watch only these of N equal buckets of the uid hash space (e.g. 0/4, 0,2/4)",
    )
    top.add_argument(
        "--lease-name",
        metavar="NAME",
        help="show the shard ring of the sharded operator whose Leases are NAME-shard-I",
    )
    top.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        metavar="NAMESPACE",
        help="namespace of those Leases, $POD_NAMESPACE when set",
    )
    top.add_argument("resources", nargs="*", metavar="RESOURCE", help="what to watch")


def shard_arg(text: str) -> ShardSelector:
    """``BUCKETS/N`` (``"0/4"``, ``"0,2/4"``) as the selector of those buckets of ``N``."""
    buckets, sep, n = text.rpartition("/")
    try:
        if not sep:
            raise ValueError(text)
        return ShardSelector.of_buckets((int(b) for b in buckets.split(",")), int(n))
    except (ValueError, ConfigError) as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not BUCKETS/N (e.g. 0/4 or 0,2/4): {exc}"
        ) from None


def run(args: argparse.Namespace) -> int:
    """Run ``dump`` or ``top``: exit status 0; 2 for a bad argument or configuration
    (the cluster unreachable or refusing the credentials included), 1 for a failure on the
    way, each said in one line (:mod:`aioinformer._cli.failures`)."""
    if args.command == "top":
        import rich  # noqa: F401 (fail before connecting when the extra is missing)

        if not args.resources and not args.lease_name:
            return fail("top", ConfigError("name a RESOURCE to watch, or --lease-name NAME"))
    try:
        return asyncio.run(_dump(args) if args.command == "dump" else _top(args))
    except AioinformerError as exc:
        return fail(args.command, exc)
    except KeyboardInterrupt:
        return 130


def _informer(
    factory: InformerFactory, resource: ApiResource, args: argparse.Namespace, **options: Any
) -> Informer:
    return factory.informer(
        resource.group_version,
        resource.plural,
        namespace=args.namespace if resource.namespaced else None,
        label_selector=args.selector,
        **options,
    )


async def _dump(args: argparse.Namespace) -> int:
    async with await load_api_client(args.kubeconfig, args.context) as api:
        rest = RestClient(api)
        resource = await resolve_resource(rest, args.resource)
        transform = None if args.show_managed_fields else drop_managed_fields
        async with InformerFactory(rest) as factory:
            inf = _informer(factory, resource, args, transform=transform)
            await factory.wait_for_sync(timeout=args.timeout)
            snap = inf.snapshot()
            out = sys.stdout.buffer
            for obj in sorted(snap.list(), key=lambda o: o.key):
                line = _whole(obj, resource) if args.full else _brief(obj)
                out.write(orjson.dumps(line) + b"\n")
            summary = {"count": len(snap), "resourceVersion": str(snap.resource_version)}
            out.write(orjson.dumps(summary) + b"\n")
            out.flush()
    return 0


def _brief(obj: KubeObject) -> dict[str, Any]:
    return {"key": obj.key, "resourceVersion": str(obj.rv)}


def _whole(obj: KubeObject, resource: ApiResource) -> dict[str, Any]:
    """The object as ``kubectl get -o json`` shows it: apiVersion and kind first (a list's
    items may come without them)."""
    body = obj.to_dict()
    return {
        "apiVersion": body.pop("apiVersion", None) or resource.api_version,
        "kind": body.pop("kind", None) or resource.kind,
        **body,
    }


TOP_COLUMNS = (
    Column("informer", justify="left"),
    Column("synced"),
    Column("objects"),
    Column("RV", priority=3),
    Column("deltas/s", priority=2, short="d/s"),
    Column("FIFO", priority=1),
    Column("peak", priority=4),
    Column("staleness", short="stale"),
    Column("cached bytes", priority=2, short="bytes"),
    Column("bytes/object", priority=3, short="B/obj"),
    Column("plain bytes", priority=5, short="plain"),
    Column("relists", priority=3),
    Column("restarts", priority=4),
    Column("decode errors", priority=5, short="errors"),
    Column("shard", priority=2),
    Column("kept", priority=3),
    Column("dropped", priority=3),
)
"""The columns of ``top``, most important at priority 0 (always shown). The bytes are
``InformerStatistics.cached_bytes`` (as held), per object, and ``plain_bytes`` (bodies
uncompressed: more than the cached bytes only in compact mode); ``shard`` is who filters a
sharded informer and its share of the key space (``client 25%``), ``kept`` and
``dropped`` the objects it received inside and outside its ranges."""


def human_bytes(n: float) -> str:
    """``n`` bytes in binary units: ``"512 B"``, ``"3.0 KiB"``, ``"41.2 MiB"``."""
    if n < 1024:
        return f"{n:.0f} B"
    n /= 1024
    units = ["KiB", "MiB", "GiB"]
    while n >= 1024 and len(units) > 1:
        n /= 1024
        units.pop(0)
    return f"{n:.1f} {units[0]}"


def top_table(
    console: Console, stats: list[InformerStatistics], title: str = "aioinformer top"
) -> Table:
    """``top``'s table of ``stats``, fitted to the console's width."""
    rows = [
        [
            s.name,
            "yes" if s.has_synced else "no",
            str(s.objects),
            str(s.resource_version),
            f"{s.deltas_per_second:.0f}",
            str(s.fifo_depth),
            str(s.fifo_peak),
            f"{s.staleness * 1000:.0f} ms",
            human_bytes(s.cached_bytes),
            human_bytes(s.cached_bytes / s.objects) if s.objects else "-",
            human_bytes(s.plain_bytes),
            str(s.relists),
            str(s.watch_restarts),
            str(s.decode_errors),
            _shard(s),
            str(s.objects_kept) if s.shard_mode else "-",
            str(s.objects_dropped) if s.shard_mode else "-",
        ]
        for s in stats
    ]
    return fit_table(console, TOP_COLUMNS, rows, title=title)


def _shard(s: InformerStatistics) -> str:
    """``top``'s shard column: the mode and the share of the key space, "parked" for an
    empty scope, "-" unsharded."""
    if s.parked:
        return "parked"
    if s.shard_mode is None:
        return "-"
    return f"{s.shard_mode} {ShardSelector.parse(s.shard_selector).fraction:.0%}"


RING_COLUMNS = (
    Column("shard"),
    Column("holder", justify="left"),
    Column("ready"),
    Column("buckets", priority=1),
    Column("renewed", priority=2),
    Column("transitions", priority=3, short="moves"),
)
"""The columns of ``top --lease-name``'s ring table: one row per shard Lease."""


def ring_table(console: Console, ring: Ring, title: str) -> Table:
    """``top --lease-name``'s table of ``ring``, fitted to the console's width."""
    rows = [
        [
            str(s.shard),
            s.holder or "(released)",
            "yes" if s.ready else "no",
            s.buckets or "-",
            _renewed(s),
            str(s.transitions),
        ]
        for s in ring.shards
    ]
    members = ", ".join(ring.members) or "none"
    caption = f"{ring.ready} of {len(ring.shards)} shards ready; live replicas: {members}"
    return fit_table(console, RING_COLUMNS, rows, title=f"{title}\n{caption}")


def _renewed(s: RingShard) -> str:
    if s.holder == "?":
        return "missing"
    if s.renewed_ago is None:
        return "-"
    ago = f"{s.renewed_ago:.0f} s ago"
    return f"expired, {ago}" if s.expired else ago


async def _top(args: argparse.Namespace) -> int:
    from rich.console import Console, Group
    from rich.live import Live

    console = Console()
    transform = project(*args.project) if args.project else None  # (bad paths: before connecting)
    async with await load_api_client(args.kubeconfig, args.context) as api:
        rest = RestClient(api)
        resources = [await resolve_resource(rest, r) for r in args.resources]
        leases = LeaseClient(rest, args.lease_namespace) if args.lease_name else None
        ring_title = f"shards {args.lease_name} in {args.lease_namespace}"
        async with InformerFactory(rest) as factory:
            informers = [
                _informer(
                    factory, r, args, compact=args.compact, transform=transform, shards=args.shard
                )
                for r in resources
            ]
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError):
                    loop.add_signal_handler(sig, stop.set)

            async def tables(title: str = "aioinformer top") -> list[Table]:
                shown = []
                if leases is not None:
                    ring = read_ring(await leases.list(), args.lease_name, datetime.now(UTC))
                    shown.append(ring_table(console, ring, f"{title}: {ring_title}"))
                if informers:
                    stats = [inf.statistics() for inf in informers]
                    shown.append(top_table(console, stats, title))
                return shown

            async def tick() -> None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), args.interval)

            if console.is_terminal:
                with Live(Group(*await tables()), console=console, refresh_per_second=4) as live:
                    while not stop.is_set():
                        await tick()
                        live.update(Group(*await tables()))
            else:
                while True:
                    await tick()
                    for table in await tables(f"aioinformer top at {time.strftime('%H:%M:%S')}"):
                        print_table(console, table)
                    if stop.is_set():
                        break
    return 0
