"""bench/store_vs_dict.py at a tiny scale through its entry point: every shape of store
gets every figure; what the persistent map costs shows where it must (a reader holding
every snapshot makes each write copy, a view held across writes retains more the more
writes it outlives, a dict reader's copy with indexes costs more than one without)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from tests.support import REPO

sys.path.insert(0, str(REPO / "bench"))
import store_vs_dict as bench

pytestmark = pytest.mark.timeout(120)


def test_every_shape_gets_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "svd.json"
    argv = ["--pods", "300", "--per-owner", "100", "--updates", "50", "--repeat", "1"]
    argv += ["--alloc-writes", "30", "--settle", "100", "--retain", "1,200", "--json", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_bytes())
    shapes = report["shapes"]
    assert list(shapes) == list(bench.SHAPES)
    for row in shapes.values():
        for key in ("ns_per_write_batch1", "ns_per_write_batch100", "bytes_per_object_loaded"):
            assert math.isfinite(row[key]) and row[key] > 0, key
        assert row["allocated_bytes_per_write"] > 0
        assert row["get_ns"] > 0 and row["by_index_us"] > 0 and row["list_ms"] > 0
        assert row["bytes_per_object"] >= row["bytes_per_object_loaded"] * 0.99
    d, snap = shapes["dict"], shapes["snapshot"]
    assert 0 < d["objects_copy_bytes"] < d["full_copy_bytes"]
    assert d["objects_copy_ms"] >= 0 and d["full_copy_ms"] >= 0
    retained = snap["retained_bytes_after_k_writes"]
    assert 0 < retained["1"] < retained["200"]
    assert snap["snapshot_take_ns"] > 0
    # a held snapshot makes every write copy what it changes: more bytes per write; the
    # threaded store keeps a second map once writes came after the load
    assert shapes["snapshot_threaded"]["bytes_per_object"] > snap["bytes_per_object"]
    assert shapes["snapshot_held"]["allocated_bytes_per_write"] > snap["allocated_bytes_per_write"]
    assert set(report["ratios"]) == {"snapshot", "snapshot_threaded", "snapshot_held"}
    assert report["ratios"]["snapshot"]["bytes_per_object"] == pytest.approx(
        snap["bytes_per_object"] / d["bytes_per_object"], abs=0.01
    )
    assert report["command"] == "python bench/store_vs_dict.py " + " ".join(argv)
