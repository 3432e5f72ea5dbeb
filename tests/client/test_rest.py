"""RestClient, the client layer: every answer that is not 2xx becomes the most specific
error of the tree (by the Status' code and reason), naming verb, resource, namespace and
object, with the server's message, causes and Retry-After; a body that is not a Status is
described briefly; a failed connection is a TransportError; no error carries a secret.
Over real HTTP against KubeSim (and a server that answers HTML)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp import web

from aioinformer import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    ServerError,
    ServerTimeout,
    StatusError,
    TooManyRequests,
    TransportError,
)
from aioinformer._client.rest import (
    Request,
    RestClient,
    describe_network_error,
    parse_retry_after,
    status_error,
)
from aioinformer.testing import KubeSim
from tests.support import api_client_for, configmap, fake_server, html_server

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def about(verb: str, name: str | None = None) -> Request:
    return Request(verb, "configmaps", "default", name)


async def test_a_2xx_answer_is_returned_and_decoded(sim: KubeSim, api: Any) -> None:
    rest = RestClient(api)
    made = await rest.request_json("POST", CONFIGMAPS, about("create"), body=configmap("a"))
    assert made["metadata"]["name"] == "a" and sim.get("configmaps", "a", "default")
    got = await rest.request("GET", f"{CONFIGMAPS}/a", about("get", "a"))
    assert got.status == 200 and b'"name":"a"' in got.body.replace(b" ", b"")


async def test_error_statuses_map_to_the_most_specific_class(sim: KubeSim, api: Any) -> None:
    rest = RestClient(api)
    sim.create("configmaps", configmap("a"), "default")
    with pytest.raises(NotFound) as missing:
        await rest.request_json("GET", f"{CONFIGMAPS}/nope", about("get", "nope"))
    assert (missing.value.code, missing.value.reason, missing.value.name) == (
        404,
        "NotFound",
        "nope",
    )
    assert str(missing.value).startswith("get configmaps 'nope' in namespace \"default\": HTTP 404")
    with pytest.raises(AlreadyExists) as twice:  # a 409 by its reason
        await rest.request_json("POST", CONFIGMAPS, about("create"), body=configmap("a"))
    assert twice.value.code == 409 and twice.value.name == "a"  # from details.name
    stale = {**configmap("a"), "metadata": {"name": "a", "resourceVersion": "1"}}
    with pytest.raises(Conflict) as conflict:
        await rest.request_json("PUT", f"{CONFIGMAPS}/a", about("update", "a"), body=stale)
    assert not isinstance(conflict.value, AlreadyExists) and conflict.value.reason == "Conflict"
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_Valid"}}
    with pytest.raises(Invalid) as invalid:
        await rest.request_json("POST", CONFIGMAPS, about("create"), body=bad)
    assert invalid.value.causes and invalid.value.causes[0].field == "metadata.name"
    sim.fail_next(1, 429, retry_after=3)
    with pytest.raises(TooManyRequests) as throttled:
        await rest.request_json("GET", CONFIGMAPS, about("list"))
    assert throttled.value.retry_after == 3.0
    sim.fail_next(1, 504, retry_after=2)
    with pytest.raises(ServerTimeout):
        await rest.request_json("GET", CONFIGMAPS, about("list"))
    sim.fail_next(1, 500)
    with pytest.raises(ServerError) as failed:
        await rest.request_json("GET", CONFIGMAPS, about("list"))
    assert failed.value.code == 500 and failed.value.retry_after is None


async def test_forbidden_names_the_missing_permission(sim: KubeSim) -> None:
    token = sim.add_user("dave", (("get", "", "configmaps"),))
    cfg = sim.client_configuration()
    cfg.api_key = {"BearerToken": token}
    from kubernetes_asyncio import client

    async with client.ApiClient(configuration=cfg) as api:
        with pytest.raises(Forbidden) as info:
            await RestClient(api).request_json("GET", CONFIGMAPS, about("list"))
    message = str(info.value)
    assert 'User "dave" cannot list resource "configmaps"' in message
    assert 'missing RBAC permission: "list" on "configmaps" in namespace "default"' in message
    assert token not in message


def test_status_error_of_a_watch_error_event() -> None:
    """A Status that came as a watch ERROR event: its own code (500 when it has none),
    ``details.retryAfterSeconds`` as the Retry-After, and "ERROR event" in the message."""
    gone = status_error({"code": 410, "reason": "Expired", "message": "too old"}, about("watch"))
    assert type(gone).__name__ == "Expired" and gone.source == "ERROR event"
    assert 'watch configmaps in namespace "default": ERROR event 410 Expired: too old' in str(gone)
    shapeless = status_error({"message": "etcd leader changed"}, about("watch"))
    assert isinstance(shapeless, ServerError) and shapeless.code == 500
    slow = status_error(
        {"code": 500, "reason": "Timeout", "details": {"retryAfterSeconds": 4}}, about("watch")
    )
    assert isinstance(slow, ServerTimeout) and slow.retry_after == 4.0
    odd = status_error({"code": 418, "reason": "Teapot"}, about("get"), code=418)
    assert type(odd) is StatusError and odd.source == "HTTP"


async def test_an_html_error_body_is_a_clear_status_error() -> None:
    async with html_server(502, "text/html") as url, api_client_for(url) as api:
        with pytest.raises(StatusError) as info:
            await RestClient(api).request_json("GET", CONFIGMAPS, about("list"))
    err = info.value
    assert (err.code, err.verb, err.resource, err.retry_after) == (502, "list", "configmaps", 7.0)
    assert "non-JSON error body (text/html" in str(err) and "Bad Gateway" in str(err)


async def test_secrets_echoed_by_the_server_are_redacted(sim: KubeSim) -> None:
    """Whatever the server puts in an error (here: the request's own token, echoed), the
    error carries no secret."""

    async def echo(request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        body = {"kind": "Status", "code": 400, "reason": "BadRequest", "message": f"saw {auth}"}
        return web.json_response(body, status=400)

    async with fake_server(echo) as url:
        cfg = sim.client_configuration()
        cfg.host = url
        from kubernetes_asyncio import client

        async with client.ApiClient(configuration=cfg) as api:
            with pytest.raises(StatusError) as info:
                await RestClient(api).request_json("GET", CONFIGMAPS, about("list"))
    assert "saw Bearer" in str(info.value) and sim.token not in str(info.value)
    assert sim.token not in info.value.server_message


async def test_a_failed_connection_is_a_transport_error() -> None:
    async with html_server(200, "text/html") as url:
        pass  # the port is free again
    async with api_client_for(url) as api:
        with pytest.raises(
            TransportError, match='list configmaps in namespace "default": request failed'
        ) as info:
            await RestClient(api).request_json("GET", CONFIGMAPS, about("list"))
    assert (info.value.verb, info.value.resource, info.value.namespace) == (
        "list",
        "configmaps",
        "default",
    )


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("-2") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("") is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_describe_network_error() -> None:
    assert describe_network_error(TimeoutError()) == "timed out"
    assert describe_network_error(ConnectionResetError("peer")) == "ConnectionResetError: peer"
    assert describe_network_error(aiohttp.ServerDisconnectedError()).startswith(
        "ServerDisconnectedError"
    )
