"""bench/manager_bench.py at a tiny scale through its entry point: every configuration
produces every figure, finite, with every informer holding real objects; the JSON has the
summary the markdown is rendered from."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_manager_bench", ROOT / "bench" / "manager_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = load_bench()


def test_every_configuration_produces_every_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manager.json"
    argv = ["--pods", "200", "--per-owner", "100", "--namespaces", "2", "--objects", "2"]
    argv += ["--informers", "1,16", "--repeat", "1", "--idle", "0.5", "--duration", "1"]
    argv += ["--rate", "50", "--readers", "2", "--json", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_bytes())
    (checkout,) = report["checkouts"]
    assert checkout["path"] == str(ROOT) and checkout["kubesim_src"] is True
    assert report["options"]["pods"] == 200
    assert len(report["options"]["objects"]) == 15  # every kind after pods
    assert [(r["informers"], r["checkout"]) for r in report["rows"]] == [
        (1, checkout["label"]),
        (16, checkout["label"]),
    ]
    for r in report["rows"]:
        n = r["informers"]
        assert len(r["objects"]) == n and r["objects"][0] == 200, n
        assert all(count > 0 for count in r["objects"]), (n, r["objects"])
        for key in bench.FIGURES:
            value = r[key]
            assert isinstance(value, (int, float)) and math.isfinite(value), (n, key)
        assert r["threads"] >= 1 and r["os_threads"] >= r["threads"], n
        assert sum(r["thread_names"].values()) == r["threads"], n
        assert r["tcp_connections"] >= 1, n  # at least the pods informer's watch
        assert r["rss_bytes"] > 0 and r["sync_seconds"] > 0, n
        assert r["idle_seconds"] >= 0.5 and r["idle_cpu_percent"] >= 0, n
        assert r["changes"] > 0 and r["published_all"] is True, n
        assert r["staleness_p50"] <= r["staleness_p99"] <= r["staleness_max"], n
        assert r["reads"] > 0 and r["load_cpu_percent"] > 0, n
    assert [(s["informers"], s["runs"]) for s in report["summary"]] == [(1, 1), (16, 1)]
    for s in report["summary"]:
        assert set(s["figures"]) == set(bench.FIGURES)
    assert report["ratios"] == []  # one checkout: nothing to compare with
    assert set(report["spread"]) == set(bench.FIGURES)  # None: one run per configuration
    table = capsys.readouterr().out
    assert f"| 1 | {checkout['label']} |" in table
    assert f"| 16 | {checkout['label']} |" in table


def test_every_figure_is_documented() -> None:
    for key in bench.FIGURES:
        assert f"``{key}``" in bench.__doc__, key


def test_a_checkout_without_the_package_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no aioinformer package"):
        bench.main(["--checkout", str(tmp_path)])


def test_ratios_and_spread_compare_medians() -> None:
    def row(label: str, threads: int) -> dict[str, object]:
        return {"checkout": label, "informers": 4, **dict.fromkeys(bench.FIGURES, 1.0),
                "threads": threads}  # fmt: skip

    rows = [row("a", 10), row("b", 2), row("a", 12), row("b", 2)]
    result = bench.summarise(rows, ["a", "b"])
    a = result["summary"][0]["figures"]["threads"]
    assert a == {"median": 11.0, "min": 10.0, "max": 12.0}
    (ratio,) = result["ratios"]
    assert ratio["checkout"] == "b" and ratio["baseline"] == "a"
    assert ratio["figures"]["threads"] == round(2 / 11, 4)
    assert result["spread"]["threads"] == round(2 / 11, 4)
    assert result["spread"]["rss_bytes"] == 0.0
