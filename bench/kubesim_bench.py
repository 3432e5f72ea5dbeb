"""KubeSim at the contention scenario's scale: bulk create, full list, watch fan-out, memory.

The sim runs in a child process (so its CPU and memory are measured apart from the
client's); the parent talks to it over HTTP like any client, and drives in-process writes
in the child through a line protocol on its stdin.

    python bench/kubesim_bench.py --pods 200000 --owners 200 --churn 20000 --json out.json

Reports: seconds to create the pods in bulk (in-process API), seconds to serve one full
list (client reads raw bytes, no decoding), watch events served per second to 1 and to 8
watchers, and the child's RSS once the pods are loaded.

    python bench/kubesim_bench.py --idle-watches 1000

instead reports what idle watches cost the sim: its RSS growth in MB per 1,000 open,
idle watches (each on its own connection), over http and over https.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

import aiohttp

CHILD = r"""
import asyncio, json, sys, time, resource
from aioinformer.testing import KubeSim
from aioinformer._harness.workload import realistic_pod

async def main(pods, owners, history):
    async with KubeSim(history_size=history, nodes=0) as sim:
        per = max(1, pods // owners)
        t0 = time.perf_counter()
        n = 0
        for o in range(owners):
            ns = f"ns-{o % 20}"
            if o < 20:
                sim.create("namespaces", {"metadata": {"name": ns}})
            n += sim.create_many(
                "pods",
                (realistic_pod(ns, f"sts-{o}", i, node=f"node-{i % 50}", phase="Running") for i in range(per)),
                ns,
                keep_status=True,
            )
        dt = time.perf_counter() - t0
        rss = int(open("/proc/self/statm").read().split()[1]) * 4096
        print(json.dumps({"url": sim.url, "token": sim.token, "pods": n, "create_s": dt, "rss_bytes": rss}), flush=True)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        keys = list(sim.api.store(sim.resource("pods")).keys)
        i = 0
        while line := (await reader.readline()).decode().strip():
            cmd, arg = line.split()
            if cmd == "churn":
                t0 = time.perf_counter()
                for k in range(int(arg)):
                    ns, name = keys[i % len(keys)].split("/")
                    i += 1
                    sim.patch("pods", name, {"metadata": {"annotations": {"bench/tick": str(i)}}}, ns)
                    if k % 500 == 0:
                        await asyncio.sleep(0)
                print(json.dumps({"churn_s": time.perf_counter() - t0}), flush=True)

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
"""


IDLE_CHILD = r"""
import asyncio, json, sys
from aioinformer.testing import KubeSim

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096

async def main(tls):
    async with KubeSim(tls=tls, nodes=0) as sim:
        ca = str(sim.ca_file) if tls else None
        print(json.dumps({"url": sim.url, "token": sim.token, "ca": ca}), flush=True)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while (await reader.readline()).strip() == b"rss":
            print(json.dumps({"rss_bytes": rss()}), flush=True)

asyncio.run(main(sys.argv[1] == "https"))
"""


async def idle_watches(n: int, scheme: str) -> float:
    """The sim's RSS growth, in MB per 1,000 watches, with ``n`` idle watches open."""
    import ssl

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", IDLE_CHILD, scheme,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None

    async def rss() -> int:
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdin.write(b"rss\n")
        await proc.stdin.drain()
        return int(json.loads(await proc.stdout.readline())["rss_bytes"])

    info = json.loads(await proc.stdout.readline())
    tls = ssl.create_default_context(cafile=info["ca"]) if info["ca"] else False
    headers = {"Authorization": f"Bearer {info['token']}"}
    connector = aiohttp.TCPConnector(limit=0, ssl=tls)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(
        base_url=info["url"], headers=headers, connector=connector, timeout=timeout
    ) as s:
        async with s.get("/api/v1/namespaces") as r:  # warm: code paths, caches
            await r.read()
        before = await rss()
        params = {"watch": "1", "timeoutSeconds": "600", "resourceVersion": "0"}
        watches = []
        for _ in range(n):
            watches.append(await s.get("/api/v1/namespaces", params=params))
        after = await rss()
        for w in watches:
            w.close()
    proc.stdin.write(b"\n")
    await proc.stdin.drain()
    await proc.wait()
    return (after - before) / 1e6 * 1000 / n


async def count_events(
    session: aiohttp.ClientSession, rv: str, want: int, ready: asyncio.Event
) -> float:
    """Watch pods from ``rv`` until ``want`` events arrived; returns when the last came."""
    got = 0
    async with session.get(
        "/api/v1/pods", params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "600"}
    ) as r:
        ready.set()
        async for data, _ in r.content.iter_chunks():
            got += data.count(b"\n")
            if got >= want:
                return time.perf_counter()
    raise RuntimeError(f"watch ended after {got} of {want} events")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(args.pods),
        str(args.owners),
        str(max(args.churn * 2, 10_000)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    info = json.loads(await proc.stdout.readline())
    result: dict[str, Any] = {
        "pods": info["pods"],
        "create_seconds": round(info["create_s"], 2),
        "create_pods_per_second": round(info["pods"] / info["create_s"]),
        "sim_rss_bytes": info["rss_bytes"],
        "sim_rss_bytes_per_pod": round(info["rss_bytes"] / info["pods"]),
    }
    headers = {"Authorization": f"Bearer {info['token']}"}
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(base_url=info["url"], headers=headers, timeout=timeout) as s:
        t0 = time.perf_counter()
        size = 0
        async with s.get("/api/v1/pods") as r:
            async for data, _ in r.content.iter_chunks():
                size += len(data)
        result["full_list_seconds"] = round(time.perf_counter() - t0, 2)
        result["full_list_bytes"] = size
        result["bytes_per_pod_on_the_wire"] = round(size / info["pods"])
        async with s.get("/api/v1/namespaces/default/pods", params={"limit": "1"}) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        # writes first (timed in the child), then K watchers replay them from the watch
        # cache at full speed: that measures what the sim can serve, not how fast it writes
        proc.stdin.write(f"churn {args.churn}\n".encode())
        await proc.stdin.drain()
        done = json.loads(await proc.stdout.readline())
        result["writes_per_second"] = round(args.churn / done["churn_s"])
        for watchers in (1, 8):
            ready = [asyncio.Event() for _ in range(watchers)]
            t0 = time.perf_counter()
            tasks = [asyncio.create_task(count_events(s, rv, args.churn, e)) for e in ready]
            ends = await asyncio.gather(*tasks)
            elapsed = max(ends) - t0
            result[f"watch_{watchers}_events_per_second_per_watcher"] = round(args.churn / elapsed)
            result[f"watch_{watchers}_events_per_second_total"] = round(
                args.churn * watchers / elapsed
            )
    proc.stdin.write(b"\n")
    await proc.stdin.drain()
    proc.stdin.close()
    await proc.wait()
    return result


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pods", type=int, default=200_000)
    p.add_argument("--owners", type=int, default=200)
    p.add_argument("--churn", type=int, default=20_000, help="updates streamed per watch test")
    p.add_argument("--json", metavar="PATH", help="write the figures here as JSON")
    p.add_argument(
        "--idle-watches",
        type=int,
        metavar="N",
        help="instead: the sim's MB per 1,000 idle watches, N of them open, http and https",
    )
    args = p.parse_args()
    if args.idle_watches:
        result: dict[str, Any] = {
            f"{scheme}_mb_per_1000_idle_watches": round(
                asyncio.run(idle_watches(args.idle_watches, scheme)), 1
            )
            for scheme in ("http", "https")
        }
        result["idle_watches"] = args.idle_watches
    else:
        result = asyncio.run(run(args))
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
