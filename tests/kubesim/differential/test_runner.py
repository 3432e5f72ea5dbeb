"""The runner's comparison helpers: the diff a failure shows, the managedFields the
recordings cut, objects nested in Tables."""

from __future__ import annotations

from tests.kubesim.differential.runner import DIFF_LINES, body_diff, masked_deep, uncut


def test_the_diff_is_cut_to_a_readable_size() -> None:
    want = {f"k{i}": i for i in range(200)}
    got = {f"k{i}": i + 1 for i in range(200)}
    lines = body_diff(want, got).splitlines()
    assert lines[:2] == ["--- recorded", "+++ got"]
    assert len(lines) == DIFF_LINES + 1 and lines[-1].endswith("more diff lines")
    assert body_diff({"a": "x" * 500}, {"a": "y"}).count("...") == 1  # long lines cut


def test_uncut_keeps_only_the_entry_the_recording_kept() -> None:
    """The recordings cut a managedFields of more than 2 entries to 1: the answer is cut
    the same way where it has that entry, and left whole where it does not."""
    entry = ("a", "Update", "")
    others = [("b", "Apply", ""), ("c", "Update", "status")]
    recorded = {"metadata": {"managedFields": [entry]}}
    assert uncut(recorded, {"metadata": {"managedFields": [entry, *others]}}) == recorded
    missing = {"metadata": {"managedFields": [("z", "Update", ""), *others]}}
    assert uncut(recorded, missing) == missing
    two = {"metadata": {"managedFields": [entry, others[0]]}}
    assert uncut(recorded, two) == two


def test_objects_in_a_table_are_masked_too() -> None:
    row = {"cells": ["t-1"], "object": {"metadata": {"name": "t-1", "uid": "u1"}}}
    table = {"kind": "Table", "metadata": {"resourceVersion": "9"}, "rows": [row]}
    got = masked_deep(table)
    assert got["metadata"]["resourceVersion"] == "*"
    assert got["rows"][0]["object"]["metadata"] == {"name": "t-1", "uid": "*"}
