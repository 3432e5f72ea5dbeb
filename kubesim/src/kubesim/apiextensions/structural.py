"""What apiextensions-apiserver's ``ValidateStructural`` checks of a CRD's schema that
KubeSim checks too: every ``pattern`` compiles as Go's ``regexp`` compiles it.

A CRD whose schema holds a pattern Go refuses (a lookahead, a backreference, ``\\Z``) is
refused with 422, one cause per pattern, e.g. ``spec.validation.openAPIV3Schema.properties
[spec].properties[v].pattern: Invalid value: "(?=a)": must be a valid regular expression,
but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?=```. The schema is
walked as upstream walks it (``properties``, ``items``, ``additionalProperties``, and the
``anyOf``/``allOf``/``oneOf``/``not`` value validations with their ``items`` and
``properties``); the causes are sorted by their text, as upstream sorts them.

Where the causes' paths start: a CRD whose versions all have the same schema is held with
one top-level schema inside the apiserver, so its paths start ``spec.validation.
openAPIV3Schema``; otherwise ``spec.versions[i].schema.openAPIV3Schema``
(:func:`schema_causes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubesim.machinery.goregexp import go_error
from kubesim.machinery.validation import Cause, invalid

__all__ = ["pattern_causes", "schema_causes"]

_JUNCTORS = ("anyOf", "allOf", "oneOf")


def schema_causes(versions: list[dict[str, Any]]) -> tuple[list[Cause], dict[int, list[Cause]]]:
    """The causes of ``spec.versions``' schemas: those of the one top-level schema (when
    every version has the same), and those of each version's own otherwise (by index)."""
    schemas = [(v.get("schema") or {}).get("openAPIV3Schema") for v in versions]
    if schemas and all(s == schemas[0] for s in schemas):
        schema = schemas[0]
        top = pattern_causes(schema, "spec.validation.openAPIV3Schema") if schema else []
        return top, {}
    per_version = {
        i: pattern_causes(s, f"spec.versions[{i}].schema.openAPIV3Schema")
        for i, s in enumerate(schemas)
        if isinstance(s, Mapping)
    }
    return [], per_version


def pattern_causes(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """One cause per pattern under ``schema`` (at ``path``) that Go's regexp refuses."""
    causes = [
        invalid(f"{at}.pattern", pattern, f"must be a valid regular expression, but isn't: {err}")
        for at, pattern in _patterns(schema, path, nested=False)
        if (err := go_error(pattern)) is not None
    ]
    return sorted(causes, key=lambda c: f"{c.field}: {c.message}")


def _patterns(s: Any, path: str, *, nested: bool) -> Iterator[tuple[str, str]]:
    """Every (path, pattern) under schema node ``s``, in the order upstream visits them."""
    if not isinstance(s, Mapping):
        return
    if isinstance(s.get("items"), Mapping):
        yield from _patterns(s["items"], f"{path}.items", nested=nested)
    for key, sub in (s.get("properties") or {}).items():
        yield from _patterns(sub, f"{path}.properties[{key}]", nested=nested)
    extra = s.get("additionalProperties")
    if not nested and isinstance(extra, Mapping):
        yield from _patterns(extra, f"{path}.additionalProperties", nested=False)
    for junctor in _JUNCTORS:
        for i, sub in enumerate(s.get(junctor) or []):
            yield from _patterns(sub, f"{path}.{junctor}[{i}]", nested=True)
    if isinstance(s.get("not"), Mapping):
        yield from _patterns(s["not"], f"{path}.not", nested=True)
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        yield path, pattern
