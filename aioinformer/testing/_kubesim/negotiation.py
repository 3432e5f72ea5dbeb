"""Which representation a resource request is answered in, from its ``Accept`` header, as
kube-apiserver v1.28 chooses (recordings 16a-16g, 24a-24f, 28a).

The media types are tried in the order the client lists them. JSON may ask for a
``PartialObjectMetadata``, ``PartialObjectMetadataList`` or ``Table`` view (``as=``);
protobuf is served for the built-in kinds (a custom resource skips it, so
``protobuf, application/json`` gets JSON) and only as the object itself; YAML as the
object. Nothing acceptable is a 406: for an ``Accept`` of protobuf alone (a custom
resource) the short message, otherwise the list of available representations.
"""

from __future__ import annotations

from aioinformer.testing._kubesim.protobuf import PROTOBUF
from aioinformer.testing._kubesim.status import ApiError, status_body
from aioinformer.testing._kubesim.tables import table_version

__all__ = ["errors_as_protobuf", "negotiate"]

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


def negotiate(accept: str, protobuf: bool) -> str:
    """ "json", "partial", "partial-list", "table-v1", "table-v1beta1", "yaml" or
    "protobuf" (``protobuf``: the resource has a protobuf form); 406 when nothing fits."""
    if not accept:
        return "json"
    parts = _parts(accept)
    for mime, opts in parts:
        as_ = opts.get("as")
        if mime in _JSON:
            if as_ is None:
                return "json"
            if as_ == "PartialObjectMetadata":
                return "partial"
            if as_ == "PartialObjectMetadataList":
                return "partial-list"
            version = table_version(opts)
            if version is not None:
                return f"table-{version}"
        elif mime == "application/yaml":
            return "yaml"
        elif mime == PROTOBUF and protobuf and as_ is None:
            return "protobuf"
    if all(mime == PROTOBUF for mime, _ in parts):
        raise ApiError.not_acceptable(_ACCEPTED)
    raise ApiError(406, status_body(406, _NOT_ACCEPTABLE, "NotAcceptable", {}))


def errors_as_protobuf(accept: str) -> bool:
    """Whether an error ``Status`` is written as protobuf: the first media type listed that
    a ``Status`` can be written in is protobuf."""
    for mime, opts in _parts(accept):
        if mime in _JSON or mime == "application/yaml":
            return False
        if mime == PROTOBUF and "as" not in opts:
            return True
    return False
