"""bench/before_after.py: one benchmark script from two checkouts in one run; the
figures are matched by name, medians per side, ratio after/before."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from tests.support import REPO

sys.path.insert(0, str(REPO / "bench"))
import before_after

pytestmark = pytest.mark.timeout(300)


def test_nested_figures_flatten_to_dotted_names() -> None:
    data = {"a": 1, "b": {"c": 2.5, "d": {"e": 3}}, "s": "text", "l": [1, 2], "t": True}
    assert before_after.flatten(data) == {"a": 1.0, "b.c": 2.5, "b.d.e": 3.0}


def test_a_list_of_named_rows_flattens_row_by_row() -> None:
    rows = [{"mode": "plain", "rss": 7000}, {"mode": "compact", "rss": 2400}, {"x": 1}]
    rows.append({"pods": 20000, "pipeline": "thread", "read": "none", "readers": 0, "rss": 1})
    assert before_after.flatten({"rows": rows}) == {
        "rows.plain.rss": 7000.0,
        "rows.compact.rss": 2400.0,
        "rows.20000-thread-none-0.pods": 20000.0,
        "rows.20000-thread-none-0.readers": 0.0,
        "rows.20000-thread-none-0.rss": 1.0,
    }  # (a row without a name is left out)


def test_the_summary_compares_medians_of_matching_figures() -> None:
    runs = [
        {"side": "before", "result": {"x_ms": 10.0, "y": 1, "only_before_ms": 5}},
        {"side": "after", "result": {"x_ms": 5.0, "y": 2}},
        {"side": "before", "result": {"x_ms": 30.0, "y": 1, "only_before_ms": 5}},
        {"side": "after", "result": {"x_ms": 15.0, "y": 2}},
        {"side": "before", "result": {"x_ms": 20.0, "y": 1, "only_before_ms": 5}},
        {"side": "after", "result": {"x_ms": 10.0, "y": 2}},
    ]
    rows = before_after.summarise(runs, "_ms$")
    assert rows == [
        {
            "figure": "x_ms",
            "before": 20.0,
            "after": 10.0,
            "ratio": 0.5,
            "before_range": [10.0, 30.0],
            "after_range": [5.0, 15.0],
        }
    ]


def test_a_tiny_run_of_both_sides_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "ba.json"
    args = ["--n", "200", "--mem-n", "200", "--gc-n", "1000", "--model-n", "5", "--repeat", "1"]
    code = before_after.main(
        ["--before", str(REPO), "--after", str(REPO), "--rounds", "1", "--figures", "^decode_us\\.",
         "--json", str(out), "bench/objects_bench.py", "--", *args]
    )  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    assert [r["side"] for r in report["runs"]] == ["before", "after"]
    assert report["summary"], "no figure matched"
    for row in report["summary"]:
        assert row["figure"].startswith("decode_us.")
        assert all(math.isfinite(v) and v > 0 for v in (row["before"], row["after"]))
