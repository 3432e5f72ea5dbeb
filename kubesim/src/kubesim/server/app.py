"""KubeSim's HTTP layer: routing, authentication, content negotiation, faults.

Parses a Kubernetes REST request, checks the bearer token and the user's permissions,
applies any injected fault, calls one verb of the generic store
(:class:`kubesim.registry.store.Api`) and encodes the answer the way kube-apiserver v1.28
does (``tests/kubesim/conformance``). Every failure is a ``Status`` body
with the recorded code and message; no request ever gets a traceback or a hung connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubesim.apis.authorization import rbac
from kubesim.apis.authorization.reviews import ReviewStrategy, user_groups
from kubesim.apis.core.namespace import finalize
from kubesim.apis.core.pod.binding import bind
from kubesim.discovery.discovery import Discovery, version_info
from kubesim.discovery.openapi import OpenApiDocs
from kubesim.encoding.prototypes import kind_message
from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.apply import check_patch_options, is_apply
from kubesim.registry.apply import server_side_apply
from kubesim.registry.context import Requester, as_requester
from kubesim.registry.dryrun import OPTIONS_KIND, dry_run, parse_dry_run
from kubesim.registry.scale import get_scale, patch_scale, update_scale
from kubesim.registry.store import Api
from kubesim.registry.types import ResourceRegistry
from kubesim.server.auth import User, authenticate, deny_anonymous
from kubesim.server.bodies import MAX_DEPTH
from kubesim.server.decoding import (
    add_warnings,
    decode_body,
    field_validation,
    writing,
)
from kubesim.server.faults import Faults, fault_error
from kubesim.server.health import health_response, is_health_path
from kubesim.server.lists import list_response, read_page, selectors, shard_selector
from kubesim.server.negotiation import Media, errors_as_protobuf, negotiate
from kubesim.server.objects import object_response
from kubesim.server.requests import (
    Route,
    check_kind,
    check_subresource,
    delete_options,
    json_body,
    manager_of,
    parse_resource_path,
    request_body,
    verb_of,
)
from kubesim.server.responses import error_response, json_response, response
from kubesim.server.watch import serve_watch
from kubesim.server.watch_request import watch_spec
from kubesim.storage.mvcc import Mvcc

__all__ = ["SimOptions", "SimServer", "User"]

log = logging.getLogger("kubesim")

_PUBLIC_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})


@dataclass
class SimOptions:
    """Server behaviour switches (see :class:`kubesim.KubeSim`)."""

    auth: bool = True
    watch_list: bool = False  # the WatchList feature gate (off by default in v1.28)
    sharding: bool = False  # the ShardedListAndWatch feature gate (v1.36 alpha, off)
    bookmark_interval: float = 60.0
    too_large_rv_wait: float = 3.0
    tokens: dict[str, User] = field(default_factory=dict)


class SimServer:
    """The aiohttp application of one KubeSim."""

    def __init__(
        self, api: Api, mvcc: Mvcc, registry: ResourceRegistry, faults: Faults, options: SimOptions
    ) -> None:
        self.api = api
        self.mvcc = mvcc
        self.registry = registry
        self.faults = faults
        self.options = options
        self.requests_served = 0
        self.open_watches = 0
        self.server_address = "127.0.0.1:0"
        self.openapi = OpenApiDocs(registry)
        self.discovery = Discovery(registry)
        faults.wake = self.wake_watches

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def wake_watches(self) -> None:
        """Wake every watch stream (after a fault changed)."""
        for ts in self.mvcc.types.values():
            ts.wake()

    # -- entry point ------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests_served += 1
        path = request.path.rstrip("/") or "/"
        on_resource = False  # an error of a resource request may be a protobuf Status
        try:
            user = authenticate(request, self.options.auth, self.options.tokens)
            delay = self.faults.latency_for(path)
            if delay:
                await asyncio.sleep(delay)
            if is_health_path(path) or path in _PUBLIC_PATHS or not path.startswith("/api"):
                return self._non_resource(request, path, user)
            route = parse_resource_path(path, self.registry)
            if route is None:
                return self._discovery(request, path, user)
            on_resource = True
            watch = request.query.get("watch", "") in ("1", "true", "True")
            verb = verb_of(request.method, route.name is not None, watch)
            resource = rbac.request_resource(route.rt.plural, route.subresource)
            strategy = route.rt.strategy
            open_to_user = isinstance(strategy, ReviewStrategy) and strategy.open_to(user.name)
            if not user.allows(verb, route.rt.group, resource) and not open_to_user:
                raise KubeSimApiError.forbidden(
                    user.name,
                    verb,
                    route.rt.plural,
                    route.rt.group,
                    route.namespace,
                    name=route.name,
                    subresource=route.subresource,
                )
            fault = self.faults.take_request_fault(path, verb, user.name, request.method)
            if fault is None:
                return await self._resource(request, route, verb, user)
            if fault.lose_answer:  # served (or refused), then the answer is lost
                with contextlib.suppress(KubeSimApiError):
                    await self._resource(request, route, verb, user)
                return _lost(request)
            if fault.body is not None:
                ctype = {"Content-Type": fault.content_type}
                return web.Response(status=fault.status, body=fault.body, headers=ctype)
            raise fault_error(fault.status, fault.retry_after)
        except KubeSimApiError as err:
            accept = request.headers.get("Accept", "")
            return error_response(err, on_resource and errors_as_protobuf(accept))
        except ConnectionResetError:  # the client went away mid-answer: nothing to report
            return _lost(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in the sim must still answer like a server
            log.exception("KubeSim internal error on %s %s", request.method, path)
            return error_response(KubeSimApiError.internal(f"KubeSim internal error: {exc!r}"))

    # -- non-resource paths and discovery ------------------------------------------------------

    def _non_resource(self, request: web.Request, path: str, user: User) -> web.StreamResponse:
        if path == "/version":
            # the apiserver writes /version with json.MarshalIndent: indented, no newline
            body = json.dumps(version_info(), indent=2).encode()
            return web.Response(body=body, content_type="application/json")
        if is_health_path(path):
            q = request.query
            return health_response(path, "verbose" in q, q.getall("exclude", []))
        if path == "/openapi/v2" or path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            deny_anonymous(user, path)
            return self.openapi.serve(request, path)
        raise KubeSimApiError.page_not_found()

    def _discovery(self, request: web.Request, path: str, user: User) -> web.StreamResponse:
        if request.method != "GET":
            raise KubeSimApiError.method_not_allowed()
        deny_anonymous(user, path)
        parts = path.strip("/").split("/")
        accept = request.headers.get("Accept", "")
        doc: dict[str, Any] | None = None
        if parts == ["api"]:
            if "as=APIGroupDiscoveryList" in accept:
                doc = self.discovery.aggregated_discovery(core=True)
            else:
                doc = self.discovery.api_versions(self.server_address)
        elif parts == ["apis"]:
            if "as=APIGroupDiscoveryList" in accept:
                doc = self.discovery.aggregated_discovery(core=False)
            else:
                doc = self.discovery.api_group_list()
        elif len(parts) == 2 and parts[0] == "api":
            doc = self.discovery.api_resource_list("", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = self.discovery.api_group(parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = self.discovery.api_resource_list(parts[1], parts[2])
        if doc is None:
            raise KubeSimApiError.page_not_found()
        headers: dict[str, str] = {}
        if "as=APIGroupDiscoveryList" in accept and parts in (["api"], ["apis"]):
            resp = json_response(doc)
            resp.content_type = "application/json"
            resp.headers["Content-Type"] = (
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            )
            return resp
        return json_response(doc, headers=headers)

    # -- resources ----------------------------------------------------------------------------

    async def _resource(
        self, request: web.Request, route: Route, verb: str, user: User
    ) -> web.StreamResponse:
        rt = route.rt
        media = negotiate(
            request.headers.get("Accept", ""),
            protobuf=not rt.custom and kind_message(rt.api_version, rt.kind) is not None,
        )
        if isinstance(rt.strategy, ReviewStrategy):
            return await self._review(request, route, rt.strategy, verb, user, media)
        if route.subresource is not None:
            check_subresource(route, verb)
        dry = False
        if verb in ("create", "update", "patch"):
            dry = parse_dry_run(request.query.getall("dryRun", []), OPTIONS_KIND[verb])
        who = Requester(user.name, tuple(user_groups(user.name, user.rules)))
        with dry_run(dry), as_requester(who):
            return await self._verb(request, route, verb, media)

    async def _review(
        self,
        request: web.Request,
        route: Route,
        strategy: ReviewStrategy,
        verb: str,
        user: User,
        media: Media,
    ) -> web.StreamResponse:
        if verb != "create" or route.name is not None:
            raise KubeSimApiError.method_not_allowed()
        body = await json_body(request)
        check_kind(route.rt, body)

        def rules_of(name: str) -> tuple[rbac.Rule, ...] | None:
            found = next((u for u in self.options.tokens.values() if u.name == name), None)
            return None if found is None else found.rules

        doc = strategy.review(route.rt, body, user.name, user.rules, rules_of, route.namespace)
        return response(doc, 201, media)

    async def _verb(
        self, request: web.Request, route: Route, verb: str, media: Media
    ) -> web.StreamResponse:
        rt = route.rt
        q = request.query
        manager = manager_of(request)
        if route.subresource == "scale":
            return await self._scale(request, route, verb, manager, media)
        if route.subresource == "finalize":
            body = await json_body(request)
            check_kind(rt, body)
            obj = finalize(self.api, rt, route.name or "", body, manager=manager)
            return object_response(self.api, rt, obj, media)
        if verb == "watch":
            return await self._watch(request, route, media)
        if verb == "list":
            return await self._list(request, route, media)
        if verb == "get":
            obj = self.api.get(rt, route.namespace, route.name or "")
            return object_response(self.api, rt, obj, media, query=q)
        if verb == "create":
            if route.subresource == "binding":
                body = await json_body(request)
                target = (body.get("target") or {}).get("name", "")
                bind(self.api, route.namespace or "", route.name or "", target)
                return response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "code": 201,
                    },
                    201,
                    media,
                )
            if route.name is not None:
                raise KubeSimApiError.method_not_allowed()
            if rt.namespaced and route.namespace is None:
                raise KubeSimApiError.method_not_allowed()
            directive = field_validation(q, "CreateOptions")
            decoded = decode_body(rt, await request_body(request, rt), directive)
            check_kind(rt, decoded.obj)
            with writing(directive, decoded.depth):
                obj = self.api.create(rt, route.namespace, decoded.obj, manager=manager)
            resp = object_response(self.api, rt, obj, media, 201, query=q)
            return add_warnings(resp, decoded.warnings)
        if verb == "update":
            directive = field_validation(q, "UpdateOptions")
            decoded = decode_body(rt, await request_body(request, rt), directive)
            check_kind(rt, decoded.obj)
            with writing(directive, decoded.depth):
                obj = self.api.update(
                    rt,
                    route.namespace,
                    route.name or "",
                    decoded.obj,
                    subresource=route.subresource,
                    manager=manager,
                )
            resp = object_response(self.api, rt, obj, media, query=q)
            return add_warnings(resp, decoded.warnings)
        if verb == "patch":
            ctype = request.headers.get("Content-Type", "")
            check_patch_options(ctype, q)
            if is_apply(ctype):
                obj, created = server_side_apply(
                    self.api,
                    rt,
                    route.namespace,
                    route.name or "",
                    await request.read(),
                    q,
                    subresource=route.subresource,
                )
                return object_response(self.api, rt, obj, media, 201 if created else 200)
            patch = await json_body(request, allow_list=True)
            directive = field_validation(q, "PatchOptions")
            with writing(directive, MAX_DEPTH) as ctx:
                obj = self.api.patch(
                    rt,
                    route.namespace,
                    route.name or "",
                    ctype,
                    patch,
                    subresource=route.subresource,
                    manager=manager,
                )
            return add_warnings(object_response(self.api, rt, obj, media, query=q), ctx.warnings)
        if verb == "delete":
            opts = await delete_options(request)
            outcome = self.api.delete(rt, route.namespace, route.name or "", opts)
            if outcome.obj is not None:
                return object_response(self.api, rt, outcome.obj, media, outcome.code)
            return response(outcome.status, outcome.code, media)
        if verb == "deletecollection":
            opts = await delete_options(request)
            lsel, fsel = selectors(rt, q)
            page = self.api.delete_collection(
                rt,
                route.namespace,
                label_selector=lsel,
                field_selector=fsel,
                shard_selector=shard_selector(q, self.options.sharding),
                options=opts,
            )
            return await list_response(request, self.api, rt, page, media, self.faults)
        raise KubeSimApiError.method_not_allowed()

    async def _scale(
        self, request: web.Request, route: Route, verb: str, manager: str, media: Media
    ) -> web.StreamResponse:
        rt, ns, name = route.rt, route.namespace, route.name or ""
        if verb == "get":
            return response(get_scale(self.api, rt, ns, name), media=media)
        if verb == "update":
            body = await json_body(request)
            scale = update_scale(self.api, rt, ns, name, body, manager=manager)
            return response(scale, media=media)
        ctype = request.headers.get("Content-Type", "")
        patch = await json_body(request, allow_list=True)
        scale = patch_scale(self.api, rt, ns, name, ctype, patch, manager=manager)
        return response(scale, media=media)

    # -- collections --------------------------------------------------------------------------

    async def _list(self, request: web.Request, route: Route, media: Media) -> web.StreamResponse:
        wait = self.options.too_large_rv_wait
        page = await read_page(
            self.api,
            route.rt,
            route.namespace,
            request.query,
            too_large_rv_wait=wait,
            sharding=self.options.sharding,
        )
        return await list_response(request, self.api, route.rt, page, media, self.faults)

    async def _watch(self, request: web.Request, route: Route, media: Media) -> web.StreamResponse:
        spec, ts = await watch_spec(
            self.api,
            route.rt,
            route.namespace,
            request.query,
            media,
            watch_list=self.options.watch_list,
            too_large_rv_wait=self.options.too_large_rv_wait,
            sharding=self.options.sharding,
        )
        self.open_watches += 1
        try:
            return await serve_watch(
                request,
                spec,
                ts,
                self.mvcc,
                self.faults,
                bookmark_interval=self.options.bookmark_interval,
            )
        finally:
            self.open_watches -= 1


def _lost(request: web.Request) -> web.StreamResponse:
    """Close the request's connection without an answer (the response returned is never
    sent)."""
    if request.transport is not None:
        request.transport.close()
    return web.Response(status=499)
