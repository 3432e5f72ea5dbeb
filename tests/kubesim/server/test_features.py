"""kube-apiserver feature gates as KubeSim takes them (kubesim.server.features)."""

from __future__ import annotations

import pytest

from aioinformer.testing import KubeSim
from kubesim.server.features import DEFAULT_GATES, feature_gates, parse_feature_gates


def test_defaults_are_off_as_in_the_releases_that_introduced_them() -> None:
    assert feature_gates(None) == {"WatchList": False, "ShardedListAndWatch": False}
    assert feature_gates({"ShardedListAndWatch": True})["ShardedListAndWatch"] is True
    assert DEFAULT_GATES["ShardedListAndWatch"] is False


def test_parse_the_command_line_syntax() -> None:
    """``--feature-gates``: comma-separated ``Name=bool`` with Go's ParseBool spellings."""
    assert parse_feature_gates("ShardedListAndWatch=true, WatchList=F") == {
        "ShardedListAndWatch": True,
        "WatchList": False,
    }
    assert parse_feature_gates("") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Sharded=true", "unrecognized feature gate: Sharded"),
        ("ShardedListAndWatch", "missing bool value for ShardedListAndWatch"),
        (
            "ShardedListAndWatch=yes",
            'invalid value of ShardedListAndWatch=yes, err: strconv.ParseBool: parsing "yes": '
            "invalid syntax",
        ),
    ],
)
def test_bad_gates_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
        parse_feature_gates(text)


def test_kubesim_refuses_an_unknown_gate_and_maps_watch_list() -> None:
    with pytest.raises(ValueError, match="unrecognized feature gate: Nope"):
        KubeSim(feature_gates={"Nope": True})
    sim = KubeSim(feature_gates={"WatchList": True, "ShardedListAndWatch": True})
    assert (sim.options.watch_list, sim.options.sharding) == (True, True)
    default = KubeSim()
    assert (default.options.watch_list, default.options.sharding) == (False, False)
