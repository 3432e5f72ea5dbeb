"""What an informer's sync leaves resident, and why: RSS, the C heap's bytes in use and free,
Python's small-object allocator, per cached pod; and what the pods are made of.

    python bench/sync_heap.py --pods 50000                       # KubeSim in its own process
    python bench/sync_heap.py --kubeconfig PATH --namespace NS   # pods already on a server

The report is JSON on stdout.

Each run (``--runs``) is a fresh informer process, as bench/_stalechild.py makes it (the pods
of one namespace, ``drop_managed_fields`` or ``--project``'s projection, the pipeline thread
or ``--pipeline loop``; ``--compact``, ``--cpu``):
after its sync (a gc; the informer has trimmed the heap) it reports, / pods, the RSS after
minus before, the C heap's bytes in use and free (glibc's ``mallinfo2``: free bytes are
what the heap holds but could not return, in how many free chunks) and pymalloc's
allocated bytes (``sys._debugmallocstats``). Then the sizes of the parts of the first page
of pods as the server sends them: JSON bytes of each metadata field, ``spec``, ``status``,
the body the informer keeps, managedFields and its entries (manager, operation,
subresource, bytes). ``--pythonpath`` runs the informer from another checkout (the code
before a change). glibc only (``mallinfo2``: glibc 2.33 or later).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_ROOT = str(Path(__file__).resolve().parent.parent)
_TOKEN_ENV = "SYNC_HEAP_TOKEN"
_MALLINFO_FIELDS = (
    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
)
_PYMALLOC = {
    "# arenas allocated current": "arenas",
    "# bytes in allocated blocks": "allocated",
}


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO_FIELDS]


def mallinfo() -> dict[str, int]:
    """glibc's ``mallinfo2()`` (every arena): ``arena`` + ``hblkhd`` the heap's size,
    ``uordblks`` in use, ``fordblks`` free, ``ordblks`` free chunks."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {name: int(getattr(info, name)) for name in _MALLINFO_FIELDS}


def pymalloc() -> dict[str, int]:
    """pymalloc's arenas and allocated bytes (what ``sys._debugmallocstats`` prints on the
    C stderr)."""
    out: dict[str, int] = {}
    with tempfile.TemporaryFile("w+") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        for line in tmp:
            for prefix, name in _PYMALLOC.items():
                if line.startswith(prefix):
                    out[name] = int(line.rsplit("=", 1)[1].replace(",", ""))
    return out


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def heap() -> dict[str, Any]:
    return {"rss": rss(), "malloc": mallinfo(), "pymalloc": pymalloc()}


async def _api(args: argparse.Namespace, token: str = "") -> Any:
    from aioinformer._client.config import load_api_client
    from aioinformer._harness.simproc import sim_api_client

    if args.kubeconfig:
        return await load_api_client(args.kubeconfig)
    return sim_api_client(args.url, token or os.environ[_TOKEN_ENV])


async def sync_once(args: argparse.Namespace) -> dict[str, Any]:
    """One informer's sync in this process (see the module docstring)."""
    if args.cpu is not None:
        for tid in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(tid), {args.cpu})
    from aioinformer import InformerFactory, drop_managed_fields, project

    labels: Any = args.labels.split(",") if args.labels else True
    transform: Any = (
        project(*args.project.split(","), labels=labels) if args.project else drop_managed_fields
    )
    async with await _api(args) as api:
        factory = InformerFactory(api, pipeline=args.pipeline)
        extra = {"compact": True} if args.compact else {}
        pods = factory.informer(
            "v1", "pods", namespace=args.namespace, transform=transform, **extra
        )
        gc.collect()
        before = heap()
        t0 = time.perf_counter()
        async with factory:
            await pods.wait_for_sync()
            seconds = time.perf_counter() - t0
            gc.collect()
            after = heap()
            n = len(pods.snapshot())
    malloc = {k: (after["malloc"][k] - before["malloc"][k]) / n for k in _MALLINFO_FIELDS}
    return {
        "pods": n,
        "sync_seconds": round(seconds, 2),
        "rss_per_pod": round((after["rss"] - before["rss"]) / n),
        "heap_per_pod": round(malloc["arena"] + malloc["hblkhd"]),
        "malloc_in_use_per_pod": round(malloc["uordblks"]),
        "malloc_free_per_pod": round(malloc["fordblks"]),
        "malloc_free_chunks_per_pod": round(malloc["ordblks"], 3),
        "pymalloc_per_pod": round(
            (after["pymalloc"].get("allocated", 0) - before["pymalloc"].get("allocated", 0)) / n
        ),
    }


async def parts(args: argparse.Namespace, token: str = "") -> dict[str, Any]:
    """The JSON sizes of the parts of the first page of pods (mean bytes per pod)."""
    import orjson

    from aioinformer._client.rest import Request, RestClient
    from aioinformer._core.objects import decode_object

    async with await _api(args, token) as api:
        rest = RestClient(api)
        path = f"/api/v1/namespaces/{args.namespace}/pods"
        about = Request("list", "pods", args.namespace)
        answer = await rest.request("GET", path, about, query=[("limit", "500")])
    items = orjson.loads(answer.body)["items"]
    sizes: dict[str, float] = {}
    entries: dict[str, float] = {}
    for item in items:
        parts = {f"metadata.{k}": v for k, v in item["metadata"].items()}
        parts.update({k: v for k, v in item.items() if k != "metadata"})
        parts["item"] = item
        for key, value in parts.items():
            sizes[key] = sizes.get(key, 0.0) + len(orjson.dumps(value))
        sizes["kept body"] = sizes.get("kept body", 0.0) + len(
            decode_object(orjson.dumps(item)).body
        )
        for entry in item["metadata"].get("managedFields", ()):
            who = f"{entry.get('manager')} {entry.get('operation')} {entry.get('subresource', '')}"
            entries[who.strip()] = entries.get(who.strip(), 0.0) + len(orjson.dumps(entry))
    n = max(1, len(items))
    return {
        "pods": len(items),
        "bytes_per_pod": {k: round(v / n, 1) for k, v in sorted(sizes.items())},
        "managed_fields_entries": {k: round(v / n, 1) for k, v in sorted(entries.items())},
    }


async def measure(args: argparse.Namespace, url: str = "", token: str = "") -> dict[str, Any]:
    """``--runs`` informer processes, then the pods' parts, against ``url`` (KubeSim) or
    the kubeconfig's server."""
    where = ["--kubeconfig", args.kubeconfig] if args.kubeconfig else ["--url", url]
    where += ["--namespace", args.namespace]
    if args.compact:
        where.append("--compact")
    if args.project:
        where += ["--project", args.project]
    if args.labels:
        where += ["--labels", args.labels]
    where += ["--pipeline", args.pipeline]
    if args.cpu is not None:
        where += ["--cpu", str(args.cpu)]
    path = os.pathsep.join(p for p in (args.pythonpath or _ROOT, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, _TOKEN_ENV: token, "PYTHONPATH": path}
    runs = []
    for _ in range(args.runs):
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--child", *where, stdout=asyncio.subprocess.PIPE, env=env
        )
        out, _ = await child.communicate()
        if child.returncode:
            raise RuntimeError(f"the informer process exited with {child.returncode}")
        runs.append(json.loads(out))
    args.url = url
    return {"runs": runs, "parts": await parts(args, token)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    if args.kubeconfig:
        return {"server": "kubeconfig", **await measure(args)}
    from aioinformer._harness.simproc import SimProcess

    async with SimProcess() as sim:
        owners = max(1, args.pods // 1000)
        await sim.populate(owners, args.pods // owners, namespaces=1, nodes=100)
        args.namespace = "sts-ns-0"  # (populate's one namespace)
        return {"server": "kubesim", **await measure(args, sim.url, sim.token)}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pods", type=int, default=50_000, help="KubeSim: how many pods to make")
    p.add_argument("--kubeconfig", help="a server whose --namespace holds the pods already")
    p.add_argument("--namespace", default="sts-ns-0")
    p.add_argument("--runs", type=int, default=1, help="informer processes, one after another")
    p.add_argument("--compact", action="store_true", help="the informer in compact mode")
    p.add_argument("--cpu", type=int, help="pin the informer's process to this CPU")
    p.add_argument(
        "--project",
        metavar="PATHS",
        help="project(PATHS) (comma-separated) for drop_managed_fields",
    )
    p.add_argument("--labels", metavar="KEYS", help="--project: keep only these labels")
    p.add_argument("--pipeline", choices=("thread", "loop"), default="thread")
    p.add_argument("--pythonpath", help="run the informer from this checkout")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The report as JSON on stdout (an informer process prints its run's line)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result = sync_once(args) if args.child else main_async(args)
    print(json.dumps(asyncio.run(result), indent=None if args.child else 2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
