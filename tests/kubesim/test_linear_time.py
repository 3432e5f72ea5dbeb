"""What KubeSim does with request data takes time linear in it: a fixed pattern applied to
a request's value, like a user's pattern, must not backtrack (Python's ``re`` can take
quadratic or exponential time; a hang stops the whole server). User patterns are RE2
(tests/kubesim/apiextensions/test_patterns.py); these are KubeSim's own patterns, each fed
the input that made it quadratic. A regression shows as the suite's per-test timeout."""

from __future__ import annotations

import aiohttp

from aioinformer.testing import KubeSim
from kubesim.discovery.openapi import _negotiate


async def test_a_quantity_of_a_million_digits_is_refused_at_once() -> None:
    """A resource quantity of a million digits and a letter: the quantity pattern took
    quadratic time (digits could go to the number or the suffix), ~2 hours; now 400 in
    the apiserver's words, and the server serves the next request."""
    async with KubeSim() as sim:
        headers = {"Authorization": f"Bearer {sim.token}"}
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as http:
            async with http.post("/api/v1/namespaces", json={"metadata": {"name": "q"}}) as r:
                assert r.status == 201
            limits = {"cpu": "1" * 1_000_000 + "x"}
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "c", "image": "i", "resources": {"limits": limits}}]
                },
            }
            async with http.post("/api/v1/namespaces/q/pods", json=pod) as r:
                body = await r.json()
            assert r.status == 400, body
            assert "quantities must match the regular expression" in body["message"]
            async with http.get("/api/v1/namespaces/q/pods") as r:
                assert r.status == 200


def test_an_accept_weight_of_many_digits_is_read_at_once() -> None:
    """A ``q=`` weight of 200,000 digits and a letter (the weight pattern took quadratic
    time): it does not parse, so it counts as any weight that does not parse."""
    unparsable = _negotiate("text/plain, application/json;q=x", ())
    long = _negotiate("text/plain, application/json;q=" + "1" * 200_000 + "x", ())
    assert long == unparsable
