"""Label selectors evaluated client-side as the API server evaluates them; KubeSim's
selector (which follows the recorded kube-apiserver) is the reference for every case."""

from __future__ import annotations

import pytest

from aioinformer import ConfigError
from aioinformer._core.labels import label_matcher
from kubesim.machinery.labels import LabelSelector

LABELS = [
    {},
    {"app": "web"},
    {"app": "db", "tier": "back"},
    {"app": "web", "tier": "front", "rank": "3"},
    {"rank": "12", "example.com/team": "a"},
    {"rank": "x"},
]
SELECTORS = [
    "",
    "app",
    "!app",
    "app=web",
    "app==web",
    "app!=web",
    "app in (web, db)",
    "app notin (web)",
    "tier in (front),app=web",
    "app=web, !tier",
    "rank>2",
    "rank<5",
    "example.com/team=a",
    "app=",
    "app!=",
]


@pytest.mark.parametrize("selector", SELECTORS)
def test_matches_as_the_server_does(selector: str) -> None:
    ours = label_matcher(selector)
    server = LabelSelector.parse(selector)
    for labels in LABELS:
        assert ours(labels) == server.matches(labels), (selector, labels)


@pytest.mark.parametrize("selector", ["a=b=c", "a in b", "a,,b", "=b", "a>x", "a in (b c)"])
def test_what_is_not_a_selector_says_so(selector: str) -> None:
    with pytest.raises(ConfigError, match="label selector"):
        label_matcher(selector)
