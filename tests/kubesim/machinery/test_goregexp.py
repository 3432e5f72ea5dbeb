"""Go's regexp as KubeSim compiles and matches patterns (kubesim.machinery.goregexp),
against the answers Go 1.21's ``regexp`` gave for the same patterns and values
(``go-regexp-go1.21.json``: the toolchain the v1.28.0 kube-apiserver was built with)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesim.machinery.goregexp import GoRegexpError, compile_go, go_error

RECORDED = json.loads((Path(__file__).parent / "go-regexp-go1.21.json").read_text())
VALUES: list[str] = RECORDED["values"]


@pytest.mark.parametrize("case", RECORDED["patterns"], ids=lambda c: repr(c["pattern"])[:40])
def test_a_pattern_compiles_and_matches_as_go_1_21s_regexp(case: dict[str, Any]) -> None:
    """Go's error text for a pattern it refuses (C++ RE2's texts mapped, and what C++ RE2
    accepts but Go 1.21 refuses: ``(?<name>``, ``\\C``, non-ASCII capture names); for one
    it accepts, exactly the values Go's ``MatchString`` matches (``$`` only at the end,
    ASCII ``\\d`` ``\\w`` ``\\s``, Unicode case folding)."""
    assert (go_error(case["pattern"]) or "") == case["error"]
    if not case["error"]:
        compiled = compile_go(case["pattern"])
        assert [v for v in VALUES if compiled.search(v) is not None] == case["matches"]


@pytest.mark.parametrize("case", RECORDED["built_patterns"], ids=lambda c: str(c["parts"])[:40])
def test_go_1_21s_limits_on_nesting_and_size(case: dict[str, Any]) -> None:
    """Go refuses a parse tree more than 1000 levels deep (``expression nests too
    deeply``) and a program of more than 3,355,443 instructions (``expression too
    large``), naming the whole pattern; C++ RE2's own limits differ, Go's are applied."""
    pattern = "".join(text * n for text, n in case["parts"])
    assert (go_error(pattern) or "") == case["error"]


def test_the_catastrophic_backtracking_pattern_is_matched_in_one_pass() -> None:
    """``^(a+)+$`` against 33 a's and a '!' takes 2^33 steps in a backtracking engine; RE2
    answers at once, and as Go does (no match)."""
    assert compile_go("^(a+)+$").search("a" * 33 + "!") is None
    assert compile_go("^(a+)+$").search("a" * 100_000 + "!") is None
    assert compile_go("^(a+)+$").search("a" * 100_000) is not None


def test_the_error_is_a_value_error_carrying_gos_text() -> None:
    with pytest.raises(GoRegexpError) as err:
        compile_go("(?=a)")
    assert isinstance(err.value, ValueError)
    assert str(err.value) == "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
