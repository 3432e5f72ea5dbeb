"""go-cmp's ``core.PodSpec`` diff, as upstream's Pod update error embeds it (pure functions,
no I/O).

:func:`pod_spec_diff` is the ``cmp.Diff(oldPod.Spec, mungedSpec)`` that upstream's Pod update
error embeds, computed over the *internal* core.PodSpec. We rebuild that struct's top level from
the v1 JSON (field order, pointers, the host* fields folded into SecurityContext) and print as
go-cmp does: -/+ lines for changed fields, two unchanged fields of context each side,
"... // N identical fields" otherwise, keys aligned, U+00A0 in the indent (the recorded server's
pick). Exact for scalar and pointer fields; a changed composite is shown whole as -/+ lines
(go-cmp descends into it instead). :func:`pod_specs_equal` is the matching equality
(apimachinery's Semantic.DeepEqual over the same view).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.encoding.gofmt import go_quote

__all__ = ["pod_spec_diff", "pod_specs_equal"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


# -- go-cmp rendering of core.PodSpec ------------------------------------------------------------

_POD_SPEC_GO = (
    "[]core.Volume Volumes,[]core.Container InitContainers,[]core.Container Containers,"
    "[]core.EphemeralContainer EphemeralContainers,. RestartPolicy,* TerminationGracePeriodSeconds,"
    "* ActiveDeadlineSeconds,. DNSPolicy,map[string]string NodeSelector,. ServiceAccountName,"
    "* AutomountServiceAccountToken,. NodeName,*core.PodSecurityContext SecurityContext,"
    "[]core.LocalObjectReference ImagePullSecrets,. Hostname,. Subdomain,* SetHostnameAsFQDN,"
    "*core.Affinity Affinity,. SchedulerName,[]core.Toleration Tolerations,[]core.HostAlias "
    "HostAliases,. PriorityClassName,* Priority,* PreemptionPolicy,*core.PodDNSConfig DNSConfig,"
    "[]core.PodReadinessGate ReadinessGates,* RuntimeClassName,core.ResourceList Overhead,"
    "* EnableServiceLinks,[]core.TopologySpreadConstraint TopologySpreadConstraints,*core.PodOS OS,"
    "[]core.PodSchedulingGate SchedulingGates,[]core.PodResourceClaim ResourceClaims"
)
_SPECIAL_GO_NAMES = {"DNSPolicy": "dnsPolicy", "DNSConfig": "dnsConfig", "OS": "os"}
_GO_NAMES = {
    "hostPID": "HostPID",
    "hostIPC": "HostIPC",
    "tty": "TTY",
    "seLinuxOptions": "SELinuxOptions",
}
_GO_NAMES |= {"fsGroup": "FSGroup", "fsGroupChangePolicy": "FSGroupChangePolicy", "uid": "UID"}
_MAPS = frozenset("nodeSelector labels annotations limits requests overhead".split())
_PTRS = frozenset(
    "securityContext livenessProbe readinessProbe startupProbe lifecycle affinity dnsConfig os "
    "nodeAffinity podAffinity podAntiAffinity seLinuxOptions seccompProfile valueFrom fieldRef "
    "configMapKeyRef secretKeyRef exec httpGet tcpSocket configMap secret emptyDir hostPath "
    "persistentVolumeClaim projected downwardAPI capabilities tolerationSeconds runAsUser "
    "runAsGroup runAsNonRoot fsGroup readOnlyRootFilesystem privileged allowPrivilegeEscalation "
    "defaultMode optional shareProcessNamespace hostUsers restartPolicy".split()
)
_NBSP2 = "\u00a0\u00a0"


@dataclass(frozen=True, slots=True)
class _Ptr:
    elem: object


@dataclass(frozen=True, slots=True)
class _Agg:
    """A Go struct (keyed by field), slice (keys None) or map (keys quoted); nil if items None."""

    kind: str
    items: tuple[tuple[str | None, object], ...] | None


def _go(v: object, key: str = "") -> object:
    """A v1 JSON value found under *key* as a Go value (pointer-ness guessed from the key)."""
    if isinstance(v, dict):
        if key in _MAPS:
            return _Agg("map", tuple((go_quote(k), _go(x)) for k, x in sorted(v.items())))
        agg = _Agg(
            "struct",
            tuple((_GO_NAMES.get(k, k[:1].upper() + k[1:]), _go(x, k)) for k, x in v.items()),
        )
        return _Ptr(agg) if key in _PTRS else agg
    if isinstance(v, list):
        return _Agg("slice", tuple((None, _go(x)) for x in v))
    return _Ptr(v) if v is not None and key in _PTRS else v


def _go_pod_spec(spec: Mapping[str, Any]) -> list[tuple[str, str, object]]:
    host = {
        k: spec[k]
        for k in ("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "hostUsers")
        if k in spec
    }
    out: list[tuple[str, str, object]] = []
    for entry in _POD_SPEC_GO.split(","):
        typ, name = entry.split(" ")
        key = _SPECIAL_GO_NAMES.get(name, name[:1].lower() + name[1:])
        raw = host | _d(spec.get(key)) if name == "SecurityContext" else spec.get(key)
        if raw is None:
            val: object = None if typ[0] == "*" else "" if typ == "." else _Agg("", None)
        else:
            val = _Ptr(raw) if typ == "*" else _go(raw, key) if typ != "." else raw
            val = _Ptr(val) if typ.startswith("*c") and not isinstance(val, _Ptr) else val
        out.append((name, typ, val))
    return out


def _zero(v: object, semantic: bool = False) -> bool:
    if isinstance(v, _Agg):
        if v.kind == "struct":
            return all(_zero(x, semantic) for _, x in v.items or ())
        return v.items is None or (semantic and not v.items)
    return v is None or v == "" or (v is not True and v == 0)


def _canon(v: object) -> object:
    """Comparable form under apimachinery's Semantic.DeepEqual (nil equals empty slice/map)."""
    if isinstance(v, _Ptr):
        return ("&", _canon(v.elem))
    if isinstance(v, _Agg):
        items = tuple(
            (k, _canon(x)) for k, x in v.items or () if not (v.kind == "struct" and _zero(x, True))
        )
        return ("agg", tuple(sorted(items, key=repr)) if v.kind != "slice" else items)
    return (type(v).__name__, v)


def pod_specs_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two v1 pod specs are equal as internal ``core.PodSpec`` under Semantic.DeepEqual."""
    if a == b:
        return True
    return [_canon(x[2]) for x in _go_pod_spec(a)] == [_canon(y[2]) for y in _go_pod_spec(b)]


def _fmt(v: object, typ: str = "") -> str:
    """go-cmp's one-line value text; *typ* prefixes a non-nil composite on -/+ lines."""
    if isinstance(v, _Ptr):
        return "&" + _fmt(v.elem, typ[1:] if typ.startswith("*c") else "")
    if isinstance(v, _Agg):
        if v.items is None:
            return "nil"
        shown = [
            f"{k}: {_fmt(x)}" if k else _fmt(x)
            for k, x in v.items
            if not (v.kind == "struct" and _zero(x))
        ]
        return (typ if typ[:1] in "[cm" else "") + "{" + ", ".join(shown) + "}"
    if isinstance(v, str):
        raw_ok = "`" not in v and all(c.isprintable() or c == "\t" for c in v)
        return go_quote(v) if len(go_quote(v)) == len(v) + 2 or not raw_ok else f"`{v}`"
    return "nil" if v is None else ("true" if v else "false") if isinstance(v, bool) else str(v)


def pod_spec_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """``cmp.Diff(old, new)`` text for two v1 pod specs viewed as internal ``core.PodSpec``."""
    a, b = _go_pod_spec(old), _go_pod_spec(new)
    same = [_canon(x[2]) == _canon(y[2]) for x, y in zip(a, b, strict=True)]
    runs: list[list[int]] = []  # [equal, start, end)
    for i, eq in enumerate(same):
        if runs and runs[-1][0] == eq:
            runs[-1][2] = i + 1
        else:
            runs.append([int(eq), i, i + 1])
    recs: list[tuple[str, str, str] | int] = []  # (indent, key, value) or an elided count
    for r, (equal, lo, hi) in enumerate(runs):
        if not equal:
            for i in range(lo, hi):
                recs += [
                    ("-\u00a0", a[i][0], _fmt(a[i][2], a[i][1])),
                    ("+\u00a0", b[i][0], _fmt(b[i][2], b[i][1])),
                ]
            continue
        n_lo = 0 if r == 0 else min(2, hi - lo)
        n_hi = 0 if r == len(runs) - 1 else min(2, hi - lo - n_lo)
        n_hi += 1 if hi - lo - n_lo - n_hi == 1 else 0  # go-cmp never elides a single field
        recs += [(_NBSP2, b[i][0], _fmt(b[i][2])) for i in range(lo, lo + n_lo)]
        recs += [hi - lo - n_lo - n_hi] if hi - lo > n_lo + n_hi else []
        recs += [(_NBSP2, b[i][0], _fmt(b[i][2])) for i in range(hi - n_hi, hi)]
    lines, group = [_NBSP2 + "core.PodSpec{"], []
    for rec in [*recs, 0]:  # the trailing 0 flushes the last alignment group
        if isinstance(rec, tuple):
            group.append(rec)
            continue
        width = max((len(k) for _, k, _ in group), default=0)
        lines += [f"{ind}\t{k}: {' ' * (width - len(k))}{v}," for ind, k, v in group]
        lines += [f"{_NBSP2}\t... // {rec} identical field{'s' if rec > 1 else ''}"] if rec else []
        group = []
    return "\n".join([*lines, _NBSP2 + "}", ""])
