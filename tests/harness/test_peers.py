"""bench/peers.py at a tiny scale through its entry point: every peer produces every figure
and the JSON has the documented keys; the memory guard skips a run it projects over budget."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.timeout(300)


def load_peers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "bench" / "peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


peers = load_peers()


def test_every_peer_produces_every_metric(tmp_path: Path) -> None:
    out, png = tmp_path / "peers.json", tmp_path / "peers.png"
    argv = ["--sizes", "200", "--per-owner", "100", "--readers", "2", "--rate", "200"]
    argv += ["--duration", "0.5", "--backlog", "300", "--json", str(out), "--plot", str(png)]
    assert peers.main(argv) == 0
    report = json.loads(out.read_bytes())
    assert set(report) == {"options", "machine", "sims", "results"}
    assert report["sims"][0]["pods"] == 200
    assert [r["peer"] for r in report["results"]] == list(peers.PEERS)
    for r in report["results"]:
        name = r["peer"]
        assert tuple(r) == peers.RESULT_KEYS, name
        assert r["skipped"] is None and r["pods"] == 200, name
        for key in peers.MEASURED_KEYS:
            value = r[key]
            assert isinstance(value, (int, float)) and math.isfinite(value), (name, key)
        assert r["load_caught_up"] is True, name
        assert r["sync_seconds"] > 0 and r["events_per_second"] > 0, name
        assert r["backlog_events"] >= 300 and r["backlog_seconds"] > 0, name
        assert r["load_changes"] > 0 and r["load_applied_rate"] > 0, name
        assert r["reader_calls"] > 0, name
        assert r["staleness_p50"] <= r["staleness_p99"] <= r["staleness_max"], name
        assert r["rss_synced_bytes"] > 0 and r["peak_rss_bytes"] >= r["rss_synced_bytes"], name
    assert png.read_bytes().startswith(PNG_MAGIC)


def test_every_result_key_is_documented() -> None:
    for key in peers.RESULT_KEYS:
        assert f"``{key}``" in peers.__doc__, key


def test_memory_guard_skips_a_run_projected_over_budget(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    argv = ["--sizes", "50", "--per-owner", "50", "--peers", "asyncio-watch-loop"]
    assert peers.main([*argv, "--max-rss", "1M", "--json", str(out)]) == 0
    (r,) = json.loads(out.read_bytes())["results"]
    assert r["peer"] == "asyncio-watch-loop" and r["pods"] == 50
    assert "--max-rss" in r["skipped"] and r["projected_peak_rss_bytes"] > 1 << 20
    assert all(r[key] is None for key in peers.MEASURED_KEYS)


def test_projection_scales_the_largest_smaller_run() -> None:
    done = [
        {
            "peer": "x",
            "pods": 100,
            "skipped": None,
            "rss_before_bytes": 1000,
            "peak_rss_bytes": 11000,
        },
        {
            "peer": "x",
            "pods": 10,
            "skipped": None,
            "rss_before_bytes": 1000,
            "peak_rss_bytes": 9000,
        },
        {"peer": "y", "pods": 100, "skipped": None, "rss_before_bytes": 0, "peak_rss_bytes": 10**9},
    ]
    assert peers.project_peak("x", 1000, done) == 1000 + 100 * 1000
    prior = peers.PRIOR_PEAK_BYTES_PER_POD["asyncio-watch-loop"]
    assert peers.project_peak("asyncio-watch-loop", 1000, done) == (100 << 20) + prior * 1000
    assert peers.parse_bytes("8G") == 8 << 30 and peers.parse_bytes("1.5GiB") == 3 << 29


def test_prior_runs_not_redone_are_kept_in_order() -> None:
    def run(peer: str, pods: int, skipped: str | None) -> dict[str, object]:
        return {"peer": peer, "pods": pods, "skipped": skipped}

    prior = [
        run("official-sharedinformer", 200, "over budget"),
        run("aioinformer-snapshot", 200, None),
        run("official-sharedinformer", 10, None),
    ]
    now = [run("official-sharedinformer", 200, None)]
    merged = peers.carry_over(prior, now)
    assert [(r["peer"], r["pods"], r["skipped"]) for r in merged] == [
        ("official-sharedinformer", 10, None),
        ("aioinformer-snapshot", 200, None),
        ("official-sharedinformer", 200, None),
    ]
