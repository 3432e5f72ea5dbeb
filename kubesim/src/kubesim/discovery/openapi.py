"""``/openapi/v2`` and ``/openapi/v3``: the documents kube-apiserver v1.28 serves, and how.

The built-in documents are the recorded ones (``openapi/*.json.gz`` in this package, as
served by a real v1.28.0). Established CRDs add their versions
(:mod:`kubesim.apiextensions.openapi`): a ``/openapi/v3/apis/<group>/<version>`` document each,
listed in the v3 index, and their paths and definitions in v2. The example CRD present on the
recording server is not served unless it is installed. Documents are read and built on first use
and cached until the set of served custom types changes, so starting a KubeSim costs nothing.

HTTP behaviour as recorded (27a): ``ETag`` is the quoted upper-case SHA-512 of the body,
``If-None-Match`` with it gives 304; every document but the v3 index has ``Vary: Accept``
(v2 also ``Vary: Accept-Encoding``); the index is ``text/plain; charset=utf-8``; a v3
document asked for with its current ``?hash=`` is ``Cache-Control: public, immutable``
with ``Expires`` one year ahead (Go's RFC 1123 with ``UTC``), a wrong hash is a 301 to the
right one, no (or an empty) hash is ``no-cache, private``. Every document is also served as
gnostic protobuf under the same ETag and cache headers: ``/openapi/v2`` as
``openapi.v2.Document`` (:mod:`kubesim.discovery.openapi_v2_proto`; kubectl asks for nothing else)
and each v3 document as ``openapi.v3.Document`` (:mod:`kubesim.discovery.openapi_v3_proto`),
encoded on first request and cached with the JSON. The form is chosen as kube-openapi chooses it:
the ``Accept`` clauses by quality, then specificity (a missing header is ``*/*``), the first that
admits ``application/json`` or one of the protobuf types (``...spec.v3.v1.0+protobuf`` or the
deprecated ``...spec.v3@v1.0+protobuf``; the answer is always the former) wins; an
``Accept`` that admits neither gets 406 with an empty body.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import orjson
from aiohttp import web
from multidict import CIMultiDict

from kubesim.apiextensions.openapi import (
    CrdApi,
    schema_name,
    v2_additions,
    v2_template_keys,
    v3_document,
)
from kubesim.discovery.openapi_v2_proto import encode_document
from kubesim.discovery.openapi_v3_proto import encode_document as encode_v3_document
from kubesim.machinery.recorded import recorded, recorded_json
from kubesim.registry.resource import ResourceType
from kubesim.registry.types import ResourceRegistry

__all__ = ["OpenApiDocs", "Served", "crd_apis"]

_EXAMPLE_GV = "apis/example.aioinformer.dev/v1"
_V2_PROTOBUF_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V3_PROTOBUF_TYPE = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
_PROTOBUF_V2 = ("com.github.proto-openapi.spec.v2@v1.0+protobuf", _V2_PROTOBUF_TYPE[12:])
_PROTOBUF_V3 = ("com.github.proto-openapi.spec.v3@v1.0+protobuf", _V3_PROTOBUF_TYPE[12:])
#: A ``q=`` weight (each character has one place to go: linear time in Python's ``re``).
_Q = re.compile(r"[-+]?(\d+(?:\.\d*)?|\.\d+)([eE][-+]?\d+)?")
_YEAR = 365 * 24 * 3600
_SORTED = orjson.OPT_SORT_KEYS
_SCALE_SCHEMAS = "io.k8s.api.autoscaling.v1.Scale"


def _file_for(path: str) -> str:
    return "v3-" + path.replace("/", "_") + ".json.gz"


def _http_date(ts: float) -> str:
    return formatdate(ts, usegmt=True)


def _go_rfc1123_utc(ts: float) -> str:
    """Go's ``time.RFC1123`` of a UTC time: like an HTTP date, but ending in ``UTC``."""
    return formatdate(ts, usegmt=True).removesuffix("GMT") + "UTC"


@dataclass(frozen=True)
class Served:
    """One document as served: its bytes, hash (the ETag without quotes) and time."""

    body: bytes
    hash: str
    last_modified: str

    @classmethod
    def of(cls, body: bytes, built: float) -> Served:
        return cls(body, hashlib.sha512(body).hexdigest().upper(), _http_date(built))

    @property
    def etag(self) -> str:
        return f'"{self.hash}"'


def crd_apis(types: list[ResourceType]) -> dict[str, list[CrdApi]]:
    """The served custom types as builder input, by ``apis/<group>/<version>``."""
    out: dict[str, list[CrdApi]] = {}
    for rt in types:
        if not rt.custom or rt.crd_version is None:
            continue
        api = CrdApi.from_version(
            rt.group, rt.kind, rt.list_kind, rt.plural, rt.namespaced, rt.crd_version
        )
        out.setdefault(f"apis/{rt.group}/{rt.version}", []).append(api)
    return out


class OpenApiDocs:
    """The OpenAPI documents of one KubeSim (see the module docstring)."""

    def __init__(self, registry: ResourceRegistry, clock: Callable[[], float] = time.time):
        self.registry = registry
        self.clock = clock
        self.started = clock()
        self._signature: tuple[Any, ...] | None = None
        self._crds: dict[str, list[CrdApi]] = {}
        self._built: dict[str, Served] = {}
        self._crds_changed = self.started

    # -- documents ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        types = [rt for rt in self.registry.all() if rt.custom]
        signature = tuple(
            (rt.group, rt.version, rt.plural, orjson.dumps(rt.crd_version, option=_SORTED))
            for rt in types
        )
        if signature != self._signature:
            self._signature = signature
            self._crds = crd_apis(types)
            self._built.clear()
            self._crds_changed = self.clock()

    def v2(self) -> Served:
        """``/openapi/v2`` (JSON)."""
        self._refresh()
        if "v2" not in self._built:
            if not self._crds:
                doc_bytes = self._v2_bytes({}, {})
            else:
                apis = [a for group in self._crds.values() for a in group]
                paths, defs = v2_additions(apis, recorded_json("v2.json.gz"))
                doc_bytes = self._v2_bytes(paths, defs)
            self._built["v2"] = Served.of(doc_bytes, self._crds_changed)
        return self._built["v2"]

    def v2_protobuf(self) -> Served:
        """``/openapi/v2`` as gnostic protobuf (same hash and time as the JSON)."""
        json_doc = self.v2()
        if "v2.pb" not in self._built:
            body = encode_document(orjson.loads(json_doc.body))
            self._built["v2.pb"] = Served(body, json_doc.hash, json_doc.last_modified)
        return self._built["v2.pb"]

    @staticmethod
    def _v2_bytes(paths: dict[str, Any], defs: dict[str, Any]) -> bytes:
        doc = dict(recorded_json("v2.json.gz"))
        all_paths = {k: v for k, v in doc["paths"].items() if k not in v2_template_keys()}
        all_paths.update(paths)
        example = schema_name("example.aioinformer.dev", "v1", "PodSet")
        all_defs = {
            k: v for k, v in doc["definitions"].items() if k not in (example, example + "List")
        }
        all_defs.update(defs)
        doc["paths"] = dict(sorted(all_paths.items()))
        doc["definitions"] = dict(sorted(all_defs.items()))
        return orjson.dumps(doc)

    def v3(self, path: str) -> Served | None:
        """``/openapi/v3/<path>`` (``api/v1``, ``apis/apps/v1``, ...), or None."""
        self._refresh()
        if path in self._built:
            return self._built[path]
        if path in self._crds:
            template = recorded_json(_file_for(_EXAMPLE_GV))
            apps = recorded_json(_file_for("apis/apps/v1"))["components"]["schemas"]
            scale = {k: v for k, v in apps.items() if k.startswith(_SCALE_SCHEMAS)}
            body = orjson.dumps(v3_document(self._crds[path], template, scale))
            served = Served.of(body, self._crds_changed)
        elif path != _EXAMPLE_GV and path in recorded_json("v3-index.json")["paths"]:
            served = Served.of(recorded(_file_for(path)), self.started)
        else:
            return None
        self._built[path] = served
        return served

    def v3_protobuf(self, path: str) -> Served | None:
        """``/openapi/v3/<path>`` as gnostic protobuf (same hash and time as the JSON)."""
        json_doc = self.v3(path)
        if json_doc is None:
            return None
        key = path + ".pb"
        if key not in self._built:
            body = encode_v3_document(orjson.loads(json_doc.body))
            self._built[key] = Served(body, json_doc.hash, json_doc.last_modified)
        return self._built[key]

    def v3_index(self) -> bytes:
        """``/openapi/v3``: every document's server-relative URL with its current hash."""
        self._refresh()
        recorded = [p for p in recorded_json("v3-index.json")["paths"] if p != _EXAMPLE_GV]
        paths = {}
        for path in sorted({*recorded, *self._crds}):
            served = self.v3(path)
            assert served is not None
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={served.hash}"}
        return orjson.dumps({"paths": paths})

    # -- HTTP ----------------------------------------------------------------------------------

    def serve(self, request: web.Request, path: str) -> web.StreamResponse:
        """Answer a GET of ``/openapi/v2`` or ``/openapi/v3[/...]`` (any other path: 404)."""
        accept = request.headers.get("Accept", "")
        if path == "/openapi/v2":
            vary = ["Accept-Encoding", "Accept"]
            form = _negotiate(accept, _PROTOBUF_V2)
            if form is None:
                return _not_acceptable(vary)
            if form == "protobuf":
                pb = self.v2_protobuf()
                return self._document(request, pb, vary, immutable=False, ctype=_V2_PROTOBUF_TYPE)
            return self._document(request, self.v2(), vary, immutable=False)
        if path == "/openapi/v3":
            headers = {"Cache-Control": "no-cache, private", "Accept-Ranges": "bytes"}
            headers["Last-Modified"] = _http_date(self._crds_changed)
            return web.Response(
                body=self.v3_index(), headers=headers, content_type="text/plain", charset="utf-8"
            )
        gv = path.removeprefix("/openapi/v3/")
        found = self.v3(gv)
        if found is None:
            return web.Response(status=404, text="404 page not found\n")
        form = _negotiate(accept, _PROTOBUF_V3)
        if form is None:
            return _not_acceptable(["Accept"])
        ctype = _V3_PROTOBUF_TYPE if form == "protobuf" else "application/json"
        want = request.query.get("hash", "")
        if want and want != found.hash:
            moved: CIMultiDict[str] = CIMultiDict(
                {
                    "Cache-Control": "no-cache, private",
                    "Etag": found.etag,
                    "Location": f"{path}?hash={found.hash}",
                    "Vary": "Accept",
                }
            )
            return web.Response(status=301, headers=moved, content_type=ctype)
        doc = self.v3_protobuf(gv) if form == "protobuf" else found
        assert doc is not None
        return self._document(request, doc, ["Accept"], immutable=bool(want), ctype=ctype)

    def _document(
        self,
        request: web.Request,
        doc: Served,
        vary: list[str],
        *,
        immutable: bool,
        ctype: str = "application/json",
    ) -> web.Response:
        headers: CIMultiDict[str] = CIMultiDict()
        if immutable:
            headers["Cache-Control"] = "public, immutable"
        else:
            headers["Cache-Control"] = "no-cache, private"
        headers["Etag"] = doc.etag
        if immutable:
            headers["Expires"] = _go_rfc1123_utc(self.clock() + _YEAR)
        for v in vary:
            headers.add("Vary", v)
        if request.headers.get("If-None-Match") == doc.etag:
            return web.Response(status=304, headers=headers)
        headers["Accept-Ranges"] = "bytes"
        headers["Last-Modified"] = doc.last_modified
        headers["Content-Type"] = ctype
        return web.Response(body=doc.body, headers=headers)


def _not_acceptable(vary: list[str]) -> web.Response:
    headers: CIMultiDict[str] = CIMultiDict()
    for v in vary:
        headers.add("Vary", v)
    return web.Response(status=406, headers=headers)


def _negotiate(accept: str, protobuf: tuple[str, ...]) -> str | None:
    """``"json"``, ``"protobuf"`` or None (406): kube-openapi's choice for ``accept``.

    The clauses are parsed and ordered as goautoneg does (case-sensitive types; a ``q`` that
    does not parse is 0; an insertion sort where a clause goes before its predecessor if
    its ``q`` is higher or it is more specific), then the first clause that admits
    ``application/json`` or a protobuf subtype (wildcards included) decides, JSON first."""
    clauses: list[tuple[float, str, str]] = []
    for part in (accept or "*/*").split(","):
        media, *params = part.strip(" ").split(";")
        kind, *subs = media.split("/")
        kind = kind.strip(" ")
        if not subs and kind == "*":
            sub = "*"
        elif len(subs) == 1:
            sub = subs[0].strip(" ")
        else:
            continue
        q = 1.0
        for param in params:
            token, eq, value = param.partition("=")
            if eq and token.strip(" ") == "q":
                q = float(value) if _Q.fullmatch(value) else 0.0
        clauses.append((q, kind, sub))
    for i in range(1, len(clauses)):
        j = i
        while j > 0 and _before(clauses[j], clauses[j - 1]):
            clauses[j - 1], clauses[j] = clauses[j], clauses[j - 1]
            j -= 1
    for _, kind, sub in clauses:
        if kind not in ("application", "*"):
            continue
        if sub in ("json", "*"):
            return "json"
        if sub in protobuf:
            return "protobuf"
    return None


def _before(a: tuple[float, str, str], b: tuple[float, str, str]) -> bool:
    """goautoneg's ``Less``."""
    return a[0] > b[0] or (a[1] != "*" and b[1] == "*") or (a[2] != "*" and b[2] == "*")
