"""Which representation a resource request is answered in, from its ``Accept`` header, as
kube-apiserver v1.28 chooses (recordings 16a-16g, 24a-24f, 28a).

The media types are tried in the order the client lists them. JSON may ask for a
``PartialObjectMetadata``, ``PartialObjectMetadataList`` or ``Table`` view (``as=``);
protobuf for the object itself (built-in kinds only: a custom resource skips it, so
``protobuf, application/json`` gets JSON) or its ``PartialObjectMetadata`` views (any
kind; a Table has no protobuf form); YAML as the object. Nothing acceptable is a 406: for
an ``Accept`` of protobuf alone (a custom resource) the short message, otherwise the list
of available representations.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesim.encoding.protobuf import PROTOBUF
from kubesim.errors import KubeSimApiError, status_body
from kubesim.server.tables import table_version

__all__ = ["JSON", "Media", "errors_as_protobuf", "negotiate"]

_JSON = frozenset({"application/json", "*/*", "application/*"})
_NOT_ACCEPTABLE = (
    "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, "
    "application/vnd.kubernetes.protobuf, application/json;stream=watch, "
    "application/vnd.kubernetes.protobuf;stream=watch"
)
_ACCEPTED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


def _parts(accept: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for part in accept.split(","):
        params = [p.strip() for p in part.split(";")]
        opts = dict(p.split("=", 1) for p in params[1:] if "=" in p)
        out.append((params[0].lower(), opts))
    return out


@dataclass(frozen=True)
class Media:
    """The negotiated answer: a ``view`` ("object", "partial", "partial-list",
    "table-v1", "table-v1beta1") in an encoding ("json", "yaml" or "protobuf")."""

    view: str = "object"
    encoding: str = "json"

    @property
    def partial(self) -> bool:
        return self.view in ("partial", "partial-list")

    @property
    def table(self) -> str | None:
        """The Table version asked for, or None."""
        return self.view.removeprefix("table-") if self.view.startswith("table-") else None

    @property
    def protobuf(self) -> bool:
        return self.encoding == "protobuf"


JSON = Media()
_VIEWS = {"PartialObjectMetadata": "partial", "PartialObjectMetadataList": "partial-list"}


def negotiate(accept: str, protobuf: bool) -> Media:
    """The first representation ``accept`` lists that is served (``protobuf``: the
    resource itself has a protobuf form); 406 when none is."""
    if not accept:
        return JSON
    parts = _parts(accept)
    for mime, opts in parts:
        as_ = opts.get("as")
        if mime in _JSON:
            if as_ is None:
                return JSON
            if as_ in _VIEWS:
                return Media(_VIEWS[as_])
            version = table_version(opts)
            if version is not None:
                return Media(f"table-{version}")
        elif mime == "application/yaml":
            return Media(encoding="yaml")
        elif mime == PROTOBUF and as_ is None and protobuf:
            return Media(encoding="protobuf")
        elif mime == PROTOBUF and as_ in _VIEWS:
            return Media(_VIEWS[as_], "protobuf")
    if all(mime == PROTOBUF for mime, _ in parts):
        raise KubeSimApiError.not_acceptable(_ACCEPTED)
    raise KubeSimApiError(406, status_body(406, _NOT_ACCEPTABLE, "NotAcceptable", {}))


def errors_as_protobuf(accept: str) -> bool:
    """Whether an error ``Status`` is written as protobuf: the first media type listed that
    a ``Status`` can be written in is protobuf."""
    for mime, opts in _parts(accept):
        if mime in _JSON or mime == "application/yaml":
            return False
        if mime == PROTOBUF and opts.get("as") in (None, *_VIEWS):
            return True
    return False
