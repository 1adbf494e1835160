"""Pod resource requests, host ports and node allocatable (upstream semantics)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.quantity import resource_amount

#: scoring-only defaults for a container that requests no cpu / no memory
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # 209715200

_Amounts = dict[str, int]


def _containers(pod: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    items = (pod.get("spec") or {}).get(field) or []
    return [c for c in items if isinstance(c, Mapping)]


def is_restartable_init_container(container: Mapping[str, Any]) -> bool:
    """An init container with ``restartPolicy: Always`` (a sidecar)."""
    return container.get("restartPolicy") == "Always"


def has_restartable_init_container(pod: Mapping[str, Any]) -> bool:
    return any(is_restartable_init_container(c) for c in _containers(pod, "initContainers"))


def _amounts(resources: Mapping[str, Any] | None) -> _Amounts:
    return {name: resource_amount(name, q) for name, q in (resources or {}).items()}


def container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """The container's ``resources.requests`` as integer amounts (cpu in milli)."""
    return _amounts((container.get("resources") or {}).get("requests"))


def _add(into: _Amounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _max(into: _Amounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if name not in into or value > into[name]:
            into[name] = value


def _effective(pod: Mapping[str, Any], per_container: Callable[[Mapping[str, Any]], _Amounts]) -> _Amounts:
    """max(Σ regular + Σ restartable init, max_i(init_i + Σ restartable init before i)) + overhead."""
    total: _Amounts = {}
    for c in _containers(pod, "containers"):
        _add(total, per_container(c))
    sidecars: _Amounts = {}
    init_peak: _Amounts = {}
    for c in _containers(pod, "initContainers"):
        req = per_container(c)
        if is_restartable_init_container(c):
            _add(total, req)
            _add(sidecars, req)
            _max(init_peak, sidecars)
        else:
            candidate = dict(req)
            _add(candidate, sidecars)
            _max(init_peak, candidate)
    _max(total, init_peak)
    _add(total, _amounts((pod.get("spec") or {}).get("overhead")))
    return total


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Effective pod requests per resource name (cpu in milli-cpu, everything else in integer units),
    including init containers, sidecars and ``spec.overhead``.  Only resources that appear somewhere
    in the pod are keys (use ``.get(name, 0)``).  Limits are ignored: requests are defaulted from
    limits at load time (:func:`default_pod_requests_from_limits`)."""
    return _effective(pod, container_requests)


def _nonzero_container(container: Mapping[str, Any]) -> _Amounts:
    requests = (container.get("resources") or {}).get("requests") or {}
    cpu = resource_amount("cpu", requests["cpu"]) if "cpu" in requests else DEFAULT_MILLI_CPU_REQUEST
    mem = resource_amount("memory", requests["memory"]) if "memory" in requests else DEFAULT_MEMORY_REQUEST
    return {"cpu": cpu, "memory": mem}


def pod_nonzero_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(milli-cpu, memory bytes) for scoring: a container without a cpu request counts 100m, without
    a memory request 200Mi (an explicit 0 stays 0); combined like :func:`pod_requests` (the init
    container max included), then the overhead is added."""
    total = _effective(pod, _nonzero_container)
    return total.get("cpu", 0), total.get("memory", 0)


def pod_host_ports(pod: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """``(hostIP, protocol, hostPort)`` for every port of a regular container with hostPort > 0;
    hostIP defaults to ``0.0.0.0`` and protocol to ``TCP``."""
    out: list[tuple[str, str, int]] = []
    for c in _containers(pod, "containers"):
        for port in c.get("ports") or []:
            if not isinstance(port, Mapping):
                continue
            host_port = port.get("hostPort") or 0
            if isinstance(host_port, int) and host_port > 0:
                out.append((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", host_port))
    return out


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """``status.allocatable`` (or ``status.capacity`` when allocatable is absent or empty) as integer
    amounts: cpu in milli-cpu, memory/storage in bytes, ``pods`` as a count."""
    status = node.get("status") or {}
    resources = status.get("allocatable") or status.get("capacity") or {}
    return _amounts(resources)


def default_requests_from_limits(container: dict[str, Any]) -> None:
    """API-server defaulting, in place: every resource with a limit but no request gets a request
    equal to the limit."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return
    limits = resources.get("limits")
    if not isinstance(limits, dict) or not limits:
        return
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = {}
        resources["requests"] = requests
    for name, value in limits.items():
        if name not in requests:
            requests[name] = value


def default_pod_requests_from_limits(pod_or_template: dict[str, Any]) -> None:
    """:func:`default_requests_from_limits` for every container and init container of a pod (or of
    a pod template: anything with ``spec.containers``), in place."""
    spec = pod_or_template.get("spec")
    if not isinstance(spec, dict):
        return
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                default_requests_from_limits(c)
