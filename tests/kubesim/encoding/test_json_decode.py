"""Request JSON with invalid UTF-8 (kubesim.encoding.json_decode): accepted with U+FFFD, as Go's decoder
(which the apiserver's is a fork of) does; other malformed JSON is still the 400."""

from __future__ import annotations

import orjson
import pytest

from aioinformer.testing import KubeSim
from kubesim.encoding.json_decode import loads
from tests.kubesim.replay import recorder


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b'{"k":"a\xffb"}', "a\ufffdb"),  # one invalid byte
        (b'{"k":"a\xe2\x82b"}', "a\ufffd\ufffdb"),  # a truncated sequence: one per byte
        (b'{"k":"\\ud800x"}', "\ufffdx"),  # a lone surrogate escape
        (b'{"k":"\\ud83d\\ude00"}', "\U0001f600"),  # a valid pair is the character
        (b'{"k":"plain"}', "plain"),
    ],
)
def test_loads_replaces_what_go_replaces(raw: bytes, value: str) -> None:
    assert loads(raw) == {"k": value}


def test_loads_still_refuses_what_is_not_json() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        loads(b'{"k": "\xff"')
    with pytest.raises(orjson.JSONDecodeError):
        loads(b'{"k": NaN, "j": "\xff"}')


async def test_invalid_utf8_in_a_string_field_is_stored_replaced(sim: KubeSim) -> None:
    """POST and merge PATCH bodies with invalid bytes in string fields succeed; what is
    stored, and read back, has U+FFFD where the bytes were; truncated JSON is still 400."""
    async with recorder(sim) as http:
        body = b'{"metadata":{"name":"cm","labels":{"a":"b"}},"data":{"k":"caf\xe9"}}'
        async with http.post(
            "/api/v1/namespaces/default/configmaps",
            data=body,
            headers={"Content-Type": "application/json"},
        ) as r:
            assert r.status == 201
            assert (await r.json())["data"] == {"k": "caf\ufffd"}
        patch = b'{"data":{"j":"\\udc00\xc3"}}'
        merge = {"Content-Type": "application/merge-patch+json"}
        async with http.patch(
            "/api/v1/namespaces/default/configmaps/cm", data=patch, headers=merge
        ) as r:
            assert r.status == 200
        async with http.post(
            "/api/v1/namespaces/default/configmaps",
            data=b'{"metadata":{"name":"x"},"data":{"k":"\xff',
            headers={"Content-Type": "application/json"},
        ) as r:
            assert r.status == 400 and (await r.json())["reason"] == "BadRequest"
    assert sim.get("configmaps", "cm", "default")["data"] == {"k": "caf\ufffd", "j": "\ufffd\ufffd"}
