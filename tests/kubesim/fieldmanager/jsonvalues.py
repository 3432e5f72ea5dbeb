"""Hypothesis strategies for JSON values with the keys patches care about (directives,
finalizers, containers)."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["JSON", "OBJECTS"]

KEYS = st.text(max_size=3) | st.sampled_from(
    ["metadata", "finalizers", "spec", "containers", "name", "$patch", "$retainKeys",
     "$setElementOrder/containers", "$deleteFromPrimitiveList/finalizers"]
)  # fmt: skip
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
JSON = st.recursive(
    SCALARS | st.sampled_from(["delete", "replace", "merge"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=15,
)
OBJECTS = st.dictionaries(KEYS, JSON, max_size=5)
