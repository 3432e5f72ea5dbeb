"""The Leases ``python -m aioinformer run`` takes, named as docs/running.md says: leader
election's is NAME; sharding's are PREFIX-shard-I and PREFIX-member-IDENTITY, PREFIX by
default the last part of the target's module name (lower case, ``-`` for ``_``), IDENTITY
by default the hostname and six random hex digits; all in ``--lease-namespace``, by
default ``$POD_NAMESPACE``, else ``default``."""

from __future__ import annotations

import re

import pytest

from aioinformer import Manager
from aioinformer._cli.main import build_parser
from aioinformer._cli.run import manager_from_args
from aioinformer._coordination.leader import LeaderElector
from aioinformer._coordination.sharding import ShardManager


def manager(*argv: str) -> Manager:
    return manager_from_args(object(), build_parser().parse_args(["run", *argv]))


def shards(*argv: str) -> ShardManager:
    made = manager(*argv).shards
    assert made is not None
    return made


def elector(*argv: str) -> LeaderElector:
    made = manager(*argv).elector
    assert made is not None
    return made


@pytest.mark.parametrize(
    ("target", "prefix"),
    [
        ("examples/podset.py:build", "podset"),
        ("my_operator.main:build", "main"),
        ("ops/My_Operator.py:build", "my-operator"),
    ],
)
def test_the_shard_leases_are_named_after_the_target(target: str, prefix: str) -> None:
    made = shards(target, "--shards", "3", "--lease-namespace", "ops")
    assert [made.shard_name(i) for i in range(3)] == [f"{prefix}-shard-{i}" for i in range(3)]
    assert re.fullmatch(rf"{prefix}-member-[a-z0-9.-]{{1,50}}-[0-9a-f]{{6}}", made.member_lease)
    assert made.namespace == "ops"
    named = shards(target, "--shards", "3", "--lease-name", "web", "--identity", "pod-a")
    assert named.shard_name(0) == "web-shard-0"
    assert named.member_lease == "web-member-pod-a"


def test_the_leader_lease_is_the_name_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    made = elector("examples/podset.py:build", "--leader-election", "podset-op")
    assert (made.name, made.namespace) == ("podset-op", "default")
    monkeypatch.setenv("POD_NAMESPACE", "website-system")
    made = elector("examples/podset.py:build", "--leader-election", "podset-op")
    assert made.namespace == "website-system"
