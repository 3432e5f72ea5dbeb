"""Service address allocation, as the apiserver's service REST does it on create.

:func:`allocate` fills what a v1.28 single-stack IPv4 cluster sets on a new Service (the
fields of 18a's recorded Service, in Go struct order):

* ``clusterIP``/``clusterIPs``: a free address of the service CIDR (:data:`SERVICE_CIDR`,
  kubeadm's default; the first address is left for the ``kubernetes`` Service), chosen at
  random as the bitmap allocator does; a requested address must be in the range and free
  (else the apiserver's 422); ``None`` makes a headless Service. ``ExternalName`` Services
  get no address.
* ``ipFamilies: [IPv4]`` and ``ipFamilyPolicy``: ``SingleStack``, or ``RequireDualStack``
  for a headless Service without selector (on this single-stack cluster its families are
  still ``[IPv4]``).
* ``NodePort`` and ``LoadBalancer`` Services: a free ``nodePort`` (30000-32767) per port
  that has none, ``externalTrafficPolicy: Cluster``, and for ``LoadBalancer``
  ``allocateLoadBalancerNodePorts: true``.

:func:`keep_allocated` is the update side: a write that leaves the addresses or node ports
out keeps the stored ones, and changing a cluster IP once set is refused (422).
Addresses are in use while a stored Service holds them, so a deleted Service frees its own.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable, Mapping
from typing import Any

from kubesim.encoding.gofmt import go_quote
from kubesim.errors import KubeSimApiError
from kubesim.machinery.validation import Cause, GoRepr

__all__ = ["NODE_PORTS", "SERVICE_CIDR", "allocate", "keep_allocated"]

SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
_SPEC_ORDER = (
    "ports selector clusterIP clusterIPs type externalIPs sessionAffinity loadBalancerIP "
    "loadBalancerSourceRanges externalName externalTrafficPolicy healthCheckNodePort "
    "publishNotReadyAddresses sessionAffinityConfig ipFamilies ipFamilyPolicy "
    "allocateLoadBalancerNodePorts loadBalancerClass internalTrafficPolicy"
).split()


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _used(services: Iterable[Mapping[str, Any]]) -> tuple[set[str], set[int]]:
    ips: set[str] = set()
    ports: set[int] = set()
    for svc in services:
        spec = _d(svc.get("spec"))
        ips.update(ip for ip in spec.get("clusterIPs") or [] if isinstance(ip, str))
        ports.update(
            p["nodePort"]
            for p in spec.get("ports") or []
            if isinstance(p, dict) and isinstance(p.get("nodePort"), int)
        )
    return ips, ports


def _strings(values: list[str]) -> GoRepr:
    return GoRepr("[]string{" + ", ".join(go_quote(v) for v in values) + "}")


def _order(spec: dict[str, Any]) -> None:
    rank = {k: i for i, k in enumerate(_SPEC_ORDER)}
    items = sorted(spec.items(), key=lambda kv: rank.get(kv[0], len(rank)))
    spec.clear()
    spec.update(items)


def _pick_ip(used: set[str]) -> str:
    first, size = int(SERVICE_CIDR.network_address), SERVICE_CIDR.num_addresses
    start = random.randrange(2, size - 1)  # not the network, .1 or the broadcast address
    for i in range(size - 3):
        candidate = str(ipaddress.IPv4Address(first + 2 + (start - 2 + i) % (size - 3)))
        if candidate not in used:
            return candidate
    raise ValueError("range is full")


def allocate(obj: dict[str, Any], existing: Iterable[Mapping[str, Any]]) -> list[Cause]:
    """Allocate ``obj``'s addresses and node ports (see the module docstring) against the
    ``existing`` Services; returns the causes of a 422 (an unusable requested address or
    node port) and changes nothing then."""
    spec = obj.setdefault("spec", {}) if isinstance(obj.get("spec"), dict) else {}
    obj["spec"] = spec
    kind = spec.get("type") or "ClusterIP"
    used_ips, used_ports = _used(existing)
    if not isinstance(spec.get("clusterIPs", []), list):
        raise KubeSimApiError.bad_request(
            'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal '
            "string into Go struct field ServiceSpec.spec.clusterIPs of type []string"
        )
    if kind != "ExternalName":
        wanted = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
        if wanted and wanted[0] != "None":
            ip = str(wanted[0])
            detail = None
            try:
                in_range = ipaddress.IPv4Address(ip) in SERVICE_CIDR
            except ValueError:
                in_range = False
            if not in_range:
                detail = (
                    f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid "
                    f"range. The range of valid IPs is {SERVICE_CIDR}"
                )
            elif ip in used_ips:
                detail = f"failed to allocate IP {ip}: provided IP is already allocated"
            if detail is not None:
                value = _strings([str(v) for v in wanted])
                return [
                    Cause(
                        "FieldValueInvalid", f"Invalid value: {value}: {detail}", "spec.clusterIPs"
                    )
                ]
        elif not wanted:
            wanted = [_pick_ip(used_ips)]
        spec["clusterIP"], spec["clusterIPs"] = wanted[0], [str(v) for v in wanted]
        headless_unselected = wanted[0] == "None" and not spec.get("selector")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault(
            "ipFamilyPolicy", "RequireDualStack" if headless_unselected else "SingleStack"
        )
    if kind in ("NodePort", "LoadBalancer"):
        for port in (p for p in spec.get("ports") or [] if isinstance(p, dict)):
            if not isinstance(port.get("nodePort"), int):
                free = [n for n in NODE_PORTS if n not in used_ports]
                port["nodePort"] = random.choice(free)
                used_ports.add(port["nodePort"])
        spec.setdefault("externalTrafficPolicy", "Cluster")
        if kind == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
    _order(spec)
    return []


def keep_allocated(old: Mapping[str, Any], new: dict[str, Any]) -> list[Cause]:
    """The update side (see the module docstring); returns the causes of a 422."""
    old_spec, spec = _d(old.get("spec")), _d(new.get("spec"))
    new["spec"] = spec
    if old_spec.get("clusterIPs"):
        given = [spec["clusterIP"]] if spec.get("clusterIP") else spec.get("clusterIPs") or []
        if given and given[0] != old_spec["clusterIPs"][0]:
            value = _strings([str(v) for v in given])
            return [
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {value}: may not change once set",
                    "spec.clusterIPs[0]",
                )
            ]
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key in old_spec and key not in spec:
                spec[key] = old_spec[key]
    old_ports = {
        p.get("port"): p.get("nodePort") for p in old_spec.get("ports") or [] if isinstance(p, dict)
    }
    for port in (p for p in spec.get("ports") or [] if isinstance(p, dict)):
        if "nodePort" not in port and isinstance(old_ports.get(port.get("port")), int):
            port["nodePort"] = old_ports[port.get("port")]
    _order(spec)
    return []
