"""kube-apiserver's feature gates that change what KubeSim serves.

``WatchList`` (streaming lists, off by default in v1.28) and ``ShardedListAndWatch``
(``shardSelector`` on lists and watches, KEP-5866, alpha and off by default in v1.36; see
:mod:`kubesim.machinery.shards`). :func:`parse_feature_gates` reads kube-apiserver's
``--feature-gates`` syntax (``A=true,B=false``); :func:`feature_gates` checks a mapping.
Unknown names and values are refused with kube-apiserver's messages.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DEFAULT_GATES", "feature_gates", "parse_feature_gates"]

#: every gate KubeSim knows, with its default
DEFAULT_GATES: Mapping[str, bool] = {"WatchList": False, "ShardedListAndWatch": False}

_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "true", "TRUE", "True"), True),
    **dict.fromkeys(("0", "f", "F", "false", "FALSE", "False"), False),
}


def feature_gates(gates: Mapping[str, bool] | None) -> dict[str, bool]:
    """The defaults overridden by ``gates``; a ValueError names an unknown gate."""
    out = dict(DEFAULT_GATES)
    for name, value in (gates or {}).items():
        if name not in out:
            raise ValueError(f"unrecognized feature gate: {name}")
        out[name] = bool(value)
    return out


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``--feature-gates`` text (``A=true,B=false``, Go's ParseBool values) as a mapping
    for :func:`feature_gates`; a ValueError says what is wrong."""
    gates: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if name not in DEFAULT_GATES:
            raise ValueError(f"unrecognized feature gate: {name}")
        if value not in _BOOLS:
            raise ValueError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                "invalid syntax"
            )
        gates[name] = _BOOLS[value]
    return gates
