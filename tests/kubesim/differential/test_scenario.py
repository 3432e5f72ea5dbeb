"""The scenario data's own rules: masks by field path, the order exchanges are replayed
in, what is left out."""

from __future__ import annotations

from tests.kubesim.differential.scenario import LIST_BEFORE_WATCH, Mask, Scenario, label_of


def test_a_mask_reaches_only_its_path() -> None:
    """``*`` stands for every key or item; an absent path is left alone; a pattern masks
    only what it matches; other fields are untouched, and the input is not changed."""
    doc = {"items": [{"spec": {"clusterIP": "10.0.0.1", "type": "ClusterIP"}}, {"spec": {}}]}
    masked = Mask("items.*.spec.clusterIP", "allocated").apply(doc)
    assert masked == {"items": [{"spec": {"clusterIP": "*", "type": "ClusterIP"}}, {"spec": {}}]}
    assert doc["items"][0]["spec"]["clusterIP"] == "10.0.0.1"
    message = {"message": "Too large resource version: 99, current: 201"}
    assert Mask("message", "rv", pattern=r"(?<=current: )\d+").apply(message) == {
        "message": "Too large resource version: 99, current: *"
    }
    assert Mask("status.phase", "absent").apply(message) == message


def test_a_rewrite_turns_a_value_into_its_recorded_description() -> None:
    mask = Mask("a", "described", rewrite=lambda v: "<long>" if v == "x" * 9 else v)
    assert mask.apply({"a": "x" * 9}) == {"a": "<long>"}
    assert mask.apply({"a": "short"}) == {"a": "short"}


def test_a_watch_recording_replays_in_the_order_it_was_recorded() -> None:
    """Setup, the list before the watch, the watch, its writes, then more_exchanges."""
    steps = Scenario("17a").steps()
    parts = [part for part, _ in steps]
    assert parts[:5] == ["setup"] * 5
    assert label_of(steps[5][1]) == "LIST configmaps before"
    assert parts[6] == "watch" and set(parts[7:15]) == {"write"}
    assert parts[15:] == ["exchange"] * 3
    assert label_of(Scenario("06").steps()[0][1]) == LIST_BEFORE_WATCH


def test_left_out_by_label_prefix() -> None:
    scenario = Scenario("23c", leave_out={"poll": "timing"})
    left = [label_of(ex) for ex in scenario.exchanges() if scenario.left_out(ex)]
    assert left == ["poll CRD", "poll LIST recpodsets"]
