"""bench/staleness_bench.py: a tiny KubeSim run through its entry point writes every figure;
its real-server mode (``--kubeconfig``) runs whole against an in-process KubeSim posing as
the server (pods populated, PATCHes from the writer process, the namespace removed, also
when the run is cancelled as Ctrl-C cancels it), and against a real cluster when
``$AIOINFORMER_TEST_KUBECONFIG`` names one; the pinning options parse and pin without a
server."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim, eventually
from tests.support import REPO

sys.path.insert(0, str(REPO / "bench"))
import pinning
import realserver
import staleness_bench as bench

pytestmark = pytest.mark.timeout(300)

KUBECONFIG_ENV = "AIOINFORMER_TEST_KUBECONFIG"
TINY = ["--pods", "100", "--rate", "40", "--duration", "0.3", "--pipelines", "thread"]


def assert_every_figure(row: dict[str, Any], *, patches: bool) -> None:
    for key in bench.FIGURES:
        value = row[key]
        assert isinstance(value, (int, float)) and math.isfinite(value), (row["read"], key)
    for key in bench.PATCH_FIGURES:
        if patches:
            assert isinstance(row[key], (int, float)) and math.isfinite(row[key]), key
        else:  # KubeSim's own writes go over no HTTP: no PATCH latency to show
            assert row[key] is None, key
    assert row["published_all"] is True
    assert row["changes"] > 0 and row["objects"] == row["pods"]
    assert 0 < row["own_latency_p50"] <= row["own_latency_p99"] <= row["own_latency_max"]
    assert row["staleness_p99"] <= row["staleness_max"]
    if row["readers"]:
        assert row["reads"] > 0
    if patches:
        assert row["patch_errors"] == 0
        assert 0 < row["patch_p50"] <= row["patch_p99"] <= row["patch_max"]


def test_a_tiny_kubesim_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "stale.json"
    argv = [*TINY, "--readers", "0,4", "--modes", "none,mixed", "--json", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_bytes())
    assert report["server"] == {"kind": "kubesim"}
    assert [(r["read"], r["readers"]) for r in report["rows"]] == [("none", 0), ("mixed", 4)]
    for row in report["rows"]:
        assert_every_figure(row, patches=False)
        assert row["server_rss_bytes"] > 0  # KubeSim's process
    none, mixed = report["rows"]
    assert none["by_read"] == {}
    # readers of every pattern in the one run, each pattern's reads apart
    assert {m: r["readers"] for m, r in mixed["by_read"].items()} == {
        "scan": 2,
        "index": 1,
        "chunks": 1,
    }
    assert sum(r["reads"] for r in mixed["by_read"].values()) == mixed["reads"]
    for figures in mixed["by_read"].values():
        assert figures["reads"] > 0 and figures["objects_per_second"] > 0
        assert 0 < figures["read_p50"] <= figures["read_p99"] <= figures["read_max"]
    owns = [t for t in report["targets"] if t["what"].startswith("latency from the socket")]
    assert [t["readers"] for t in owns] == [0, 4]
    assert report["command"].endswith(" ".join(argv))


def test_unknown_reader_modes_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--modes", "none,scans"])
    assert "--modes 'none,scans'" in capsys.readouterr().err


def test_the_command_names_the_machines_values_and_leaves_the_note_out() -> None:
    argv = ["--kubeconfig", "/home/me/.kube/config", "--server-pids=12,34", "--note", "why"]
    argv += ["--note=again", "--informer-cpu", "0", "--pods", "2000"]
    assert bench.measured_args(argv) == [
        "--kubeconfig",
        "KUBECONFIG",
        "--server-pids=PIDS",
        "--informer-cpu",
        "0",
        "--pods",
        "2000",
    ]


def test_runs_pair_each_reader_mode_with_each_count() -> None:
    modes = ["none", "index", "scan", "chunks"]
    assert bench.runs(modes, [0, 4, 16]) == [
        ("none", 0),
        ("index", 4),
        ("index", 16),
        ("scan", 4),
        ("scan", 16),
        ("chunks", 4),
        ("chunks", 16),
    ]
    assert bench.runs(["scan"], [4]) == [("scan", 4)]
    assert bench.runs(["scan"], [0, 4]) == [("none", 0), ("scan", 4)]
    assert bench.runs(["none", "index"], [4]) == [("none", 0), ("index", 4)]


def test_figures_time_each_change_from_its_commit_and_from_the_watchers_read() -> None:
    raw = {
        "t_start": 10.0,
        "t_end": 20.0,
        "publishes": [[10.5, 5], [11.0, 7], [30.0, 9]],
        "receipts": [[5, 10.4, 10.41], [7, 10.9, 10.95], [7, 10.97, 10.98], [9, 29.0, 29.5]],
        "socket_reads": [[10.3, 10.39], [10.35, 10.6], [10.62, 10.8], [10.96, 10.97]],
        "latencies": [0.001, 0.003],
        "latencies_by_read": {"scan": [0.003], "index": [0.001]},
        "readers_by_read": {"scan": 2, "index": 1},
        "objects_by_read": {"scan": 30, "index": 5},
    }
    log = {
        "commits": [(5, 10.2), (7, 10.6), (9, 25.0), (3, 9.0)],  # rv 3 is before the load
        "latencies": [(10.2, 0.01), (10.6, 0.03), (25.0, 0.5)],  # 25.0: after it
        "errors": 0,
        "skipped": 0,
    }
    f = bench.figures(raw, log)
    assert f["changes"] == 2
    assert f["load_seconds"] == pytest.approx(10.0)
    assert f["writes_per_second"] == pytest.approx(0.2)  # 2 commits in the 10 s of load
    assert f["by_read"]["scan"] == {
        "readers": 2,
        "reads": 1,
        "objects_per_second": 3,  # 30 objects in the 10 s
        "read_p50": 0.003,
        "read_p99": 0.003,
        "read_max": 0.003,
    }
    assert f["by_read"]["index"]["readers"] == 1
    assert f["staleness_max"] == pytest.approx(0.4)  # rv 7: 10.6 -> 11.0
    assert f["own_latency_max"] == pytest.approx(0.1)  # rv 5: 10.4 -> 10.5 (first receipt)
    assert f["own_decode_p99"] == pytest.approx(0.05)  # rv 7: read 10.9, queued 10.95
    assert f["wire_p99"] == pytest.approx(0.3)  # rv 7: 10.6 -> 10.9
    # rv 5 read at 10.4: the last socket read before it (10.39) got bytes the kernel had
    # at 10.3; rv 7 read at 10.9: the read at 10.8 (kernel 10.62)
    assert f["socket_latency_max"] == pytest.approx(0.38)  # rv 7: 10.62 -> 11.0
    assert f["socket_latency_p50"] == pytest.approx(0.2)  # rv 5: 10.3 -> 10.5
    assert f["socket_wait_p99"] == pytest.approx(0.28)  # rv 7: 10.62 -> 10.9
    assert f["patch_max"] == pytest.approx(0.03) and f["patch_p50"] == pytest.approx(0.01)
    assert bench.figures(raw, {"commits": log["commits"], "latencies": None})["patch_p99"] is None


SOCKET_STAMPS = """
import asyncio, time
from bench import socketstamps

async def main():
    socketstamps.install()
    reads = asyncio.Queue()

    async def serve(reader, writer):
        while data := await reader.read(1):
            reads.put_nowait(data)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
    # the kernel turns timestamping on a little after the first socket asks (deferred
    # work): bytes received before carry no stamp, so send until one read has one
    for _ in range(200):
        writer.write(b"x")
        await reads.get()
        if socketstamps.READS:
            break
        await asyncio.sleep(0.01)
    assert socketstamps.READS, "no read carried the kernel's receive time"
    before = len(socketstamps.READS)
    sent = time.monotonic()
    writer.write(b"y")  # (sent at once: the transport's buffer is empty)
    written = time.monotonic()
    time.sleep(0.2)  # the bytes wait in the kernel: the loop cannot read them meanwhile
    slept = time.monotonic()
    await reads.get()
    assert len(socketstamps.READS) == before + 1
    kernel, read = socketstamps.READS[-1]
    # the stamp is when the kernel received the byte (while this thread slept), not when
    # it was read: between the write and the sleep (a few ms for the two clocks'
    # conversion and loopback delivery), and the read is after the sleep
    assert sent - 0.005 <= kernel <= written + 0.05 and read >= slept, (sent, kernel, read)
    writer.close()
    await writer.wait_closed()
    server.close()
    await server.wait_closed()
    print("ok")

asyncio.run(main())
"""


def test_socket_reads_carry_the_kernels_receive_time() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", SOCKET_STAMPS], env=env, capture_output=True, timeout=60
    )
    assert done.stdout == b"ok\n", done.stderr.decode()


def test_real_server_arguments_parse_without_a_server() -> None:
    cpu = min(os.sched_getaffinity(0))
    argv = ["--kubeconfig", "/nowhere/kubeconfig", "--readers", "0,4,16", "--patch", "label"]
    args = bench.parse_args(argv)
    assert args.kubeconfig == "/nowhere/kubeconfig" and args.patch == "label"
    assert args.reader_counts == [0, 4, 16]
    assert args.pinning is None and args.server_pid_list == []
    if len(os.sched_getaffinity(0)) > 1:
        args = bench.parse_args([*argv, "--informer-cpu", str(cpu), "--server-pids", "12,34"])
        assert args.pinning.informer == cpu
        assert args.pinning.server == frozenset(os.sched_getaffinity(0)) - {cpu}
        assert args.server_pid_list == [12, 34]


@pytest.mark.parametrize(
    "argv",
    [
        ["--server-pids", "12"],  # where to: no --informer-cpu
        ["--informer-cpu", "100000"],  # not a CPU this process may use
        ["--readers", "4,-1"],
        ["--readers", ""],
        ["--informer-cpu", "0", "--server-pids", "0"],
        ["--patch", "spec"],
    ],
)
def test_bad_real_server_arguments_are_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.parse_args(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_the_plan_leaves_the_other_cpus_to_the_server() -> None:
    assert pinning.plan(None, {0, 1}) is None
    assert pinning.plan(1, {0, 1, 2}) == pinning.Pinning(1, frozenset({0, 2}))
    with pytest.raises(ValueError, match="no CPU left"):
        pinning.plan(0, {0})
    with pytest.raises(ValueError, match="may use CPUs"):
        pinning.plan(3, {0, 1})
    assert pinning.parse_pids("12, 34 56") == [12, 34, 56] and pinning.parse_pids("") == []


def test_pinning_given_no_pids_pins_nothing() -> None:
    before = os.sched_getaffinity(0)
    one = frozenset({min(before)})
    with pinning.pinned([], one) as threads:
        assert threads == 0
        assert os.sched_getaffinity(0) == before
    with pinning.pinned([os.getpid()], None) as threads:  # no --informer-cpu: no pinning
        assert threads == 0
        assert os.sched_getaffinity(0) == before


def test_pinning_moves_every_thread_and_gives_the_cpus_back() -> None:
    code = "import threading, sys; threading.Thread(target=sys.stdin.read).start(); print(1)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"1\n"  # 2 threads
        tids = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task")]
        before = {tid: os.sched_getaffinity(tid) for tid in tids}
        one = frozenset({min(os.sched_getaffinity(proc.pid))})
        with pinning.pinned([proc.pid], one) as threads:
            assert threads == len(tids) >= 2
            assert all(os.sched_getaffinity(tid) == one for tid in tids)
        assert {tid: os.sched_getaffinity(tid) for tid in tids} == before
    finally:
        proc.kill()
        proc.wait()


def namespaces_left(sim: KubeSim) -> list[str]:
    names = [ns["metadata"]["name"] for ns in sim.list("namespaces")]
    return [name for name in names if name.startswith("stalebench-")]


async def test_the_real_server_mode_runs_whole_against_kubesim_posing_as_the_server(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    config = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    argv = [*TINY, "--kubeconfig", str(config), "--readers", "2", "--modes", "index"]
    report = await bench.main_async(bench.parse_args([*argv, "--patch", "label"]))
    assert report["server"]["kind"] == "kube-apiserver" and report["server"]["patch"] == "label"
    (populated,) = report["populated"]
    assert populated["pods"] == 100 and populated["namespace"].startswith("stalebench-")
    (row,) = report["rows"]
    assert (row["read"], row["readers"]) == ("index", 2)
    assert_every_figure(row, patches=True)
    assert row["server_rss_bytes"] is None  # no --server-pids
    assert namespaces_left(kubesim) == []  # removed, its pods with it


async def test_cleanup_outlasts_the_servers_timeouts_on_deleting_the_pods(
    kubesim: KubeSim,
) -> None:
    """Tens of thousands of pods outlast a deletecollection's request timeout (504): it is
    asked again until no pod is left; a namespace already Terminating is emptied too."""
    from aioinformer._client.rest import RestClient

    kubesim.create("namespaces", {"metadata": {"name": "stalebench-t"}})
    for i in range(3):  # bound, Running: no kubelet would confirm a graceful deletion
        pod = realistic_pod("stalebench-t", "sts-0", i, node="node-0", phase="Running")
        kubesim.create("pods", pod, "stalebench-t")
    kubesim.fail_next(2, 504, path_contains="stalebench-t/pods", verbs=["deletecollection"])
    async with kubesim.api_client() as api:
        await realserver.remove_namespace(RestClient(api), "stalebench-t", timeout=30)
    assert kubesim.list("pods", "stalebench-t") == [] and namespaces_left(kubesim) == []


async def test_a_cancelled_real_server_run_removes_its_namespace_and_children(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    """asyncio.run cancels the main task on Ctrl-C: the same path as this cancel."""
    config = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    argv = ["--kubeconfig", str(config), "--pods", "100", "--duration", "60", "--readers", "0"]
    run = asyncio.create_task(bench.main_async(bench.parse_args([*argv, "--modes", "none"])))

    # the writer's and the informer's processes are running
    await eventually(lambda: len(children()) >= 2, "the two child processes", timeout=60)
    assert len(namespaces_left(kubesim)) == 1
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert namespaces_left(kubesim) == []
    assert children() == [], "child processes left behind"


def children() -> list[int]:
    """Live child processes of this process (a zombie counts as gone)."""
    me = os.getpid()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(int(pid))
    return out


@pytest.mark.skipif(
    not os.environ.get(KUBECONFIG_ENV),
    reason=f"{KUBECONFIG_ENV} is not set: point it at a disposable cluster's kubeconfig to run "
    "the benchmark's real-server mode against a real kube-apiserver",
)
def test_a_tiny_run_on_a_real_server_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "real.json"
    argv = [*TINY, "--kubeconfig", os.environ[KUBECONFIG_ENV], "--readers", "0,2"]
    assert bench.main([*argv, "--modes", "none,scan", "--json", str(out)]) == 0
    report = json.loads(out.read_bytes())
    assert report["server"]["version"].startswith("v")
    for row in report["rows"]:
        assert_every_figure(row, patches=True)
