"""Pod resource requests, host ports and node allocatable (upstream semantics)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import is_cpu_resource, parse_quantity, resource_amount

#: scoring-only defaults for a container that requests no cpu / no memory
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # 209715200

_Amounts = dict[str, int]
_Exact = dict[str, Fraction]


_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
NATIVE_RESOURCE_PREFIX = "kubernetes.io/"
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_RESOURCE_REQUESTS_PREFIX = "requests."


def _is_qualified_name(value: str) -> bool:
    """apimachinery ``validation.IsQualifiedName``: ``[prefix/]name``."""
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME_RE.fullmatch(name) is not None


def is_prefixed_native_resource(name: str) -> bool:
    """Upstream ``v1helper.IsPrefixedNativeResource``: the name *contains* ``kubernetes.io/``."""
    return NATIVE_RESOURCE_PREFIX in name


def is_native_resource(name: str) -> bool:
    """Upstream ``v1helper.IsNativeResource``: no ``/`` in the name, or a prefixed native one."""
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``v1helper.IsExtendedResourceName``: not native, not ``requests.``-prefixed, and
    ``requests.<name>`` is a qualified name (e.g. ``example.com/gpu``)."""
    if is_native_resource(name) or name.startswith(DEFAULT_RESOURCE_REQUESTS_PREFIX):
        return False
    return _is_qualified_name(DEFAULT_RESOURCE_REQUESTS_PREFIX + name)


def is_scalar_resource_name(name: str) -> bool:
    """Upstream ``schedutil.IsScalarResourceName``: the names NodeInfo/Fit keep in ``ScalarResources``
    (extended, hugepages-*, prefixed native, attachable-volumes-*)."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or is_prefixed_native_resource(name)
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )


def _containers(pod: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    items = (pod.get("spec") or {}).get(field) or []
    return [c for c in items if isinstance(c, Mapping)]


def is_restartable_init_container(container: Mapping[str, Any]) -> bool:
    """An init container with ``restartPolicy: Always`` (a sidecar)."""
    return container.get("restartPolicy") == "Always"


def has_restartable_init_container(pod: Mapping[str, Any]) -> bool:
    return any(is_restartable_init_container(c) for c in _containers(pod, "initContainers"))


INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def as_int64(amount: int) -> int:
    """An amount as ``Quantity.MilliValue()`` / ``Value()`` give it: an int64. A value that does not
    fit (``cpu: 10P`` is 10^19 milli-cpu) comes out as 0, as upstream's scaled-integer form returns
    it on overflow; the scheduler then neither counts it nor fails on it."""
    return amount if INT64_MIN <= amount <= INT64_MAX else 0


def wrap_int64(amount: int) -> int:
    """``amount`` in two's-complement int64 arithmetic: a sum of int64 amounts as Go computes it
    (two pods of ``memory: 5Ei`` on one node wrap to a negative total, as in upstream's NodeInfo)."""
    return (amount - INT64_MIN) % 2**64 + INT64_MIN


def _amounts(resources: Mapping[str, Any] | None) -> _Amounts:
    return {name: as_int64(resource_amount(name, q)) for name, q in (resources or {}).items()}


def container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """The container's ``resources.requests`` as integer amounts (cpu in milli)."""
    return _amounts((container.get("resources") or {}).get("requests"))


def _exact(resources: Mapping[str, Any] | None) -> _Exact:
    return {name: parse_quantity(q) for name, q in (resources or {}).items()}


def _container_exact(container: Mapping[str, Any]) -> _Exact:
    return _exact((container.get("resources") or {}).get("requests"))


def _add(into: _Exact, other: Mapping[str, Fraction]) -> None:
    for name, value in other.items():
        into[name] = into[name] + value if name in into else value


def _max(into: _Exact, other: Mapping[str, Fraction]) -> None:
    for name, value in other.items():
        if name not in into or value > into[name]:
            into[name] = value


def _to_amount(name: str, value: Fraction) -> int:
    """``Quantity.MilliValue()`` for cpu, ``Quantity.Value()`` otherwise (both round away from 0)."""
    scaled = value * 1000 if is_cpu_resource(name) else value
    return as_int64(math.ceil(scaled) if scaled >= 0 else -math.ceil(-scaled))


def _phases(pod: Mapping[str, Any]) -> Iterator[tuple[bool, _Exact]]:
    """Upstream ``PodRequests`` walk: ``(False, requests)`` for each regular container, then for each
    init container ``(True, what runs during its start)``: the sum of the restartable (sidecar) init
    containers declared so far (itself included when it is one), plus itself when it is a plain init
    container.  A sidecar is also yielded as ``(False, own requests)``: it keeps running."""
    for c in _containers(pod, "containers"):
        yield False, _container_exact(c)
    sidecars: _Exact = {}
    for c in _containers(pod, "initContainers"):
        req = _container_exact(c)
        if is_restartable_init_container(c):
            yield False, req
            _add(sidecars, req)
            yield True, dict(sidecars)
        else:
            phase = dict(req)
            _add(phase, sidecars)
            yield True, phase


def _only_container_requests(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The requests of a pod's one container when the pod has no other container, no init container
    and no overhead (most pods): the pod's requests are then that container's, each rounded once —
    what the general walk gives, without its exact sums."""
    spec = pod.get("spec") or {}
    if spec.get("initContainers") or spec.get("overhead"):
        return None
    containers = spec.get("containers")
    if not isinstance(containers, list) or len(containers) != 1 or not isinstance(containers[0], Mapping):
        return None
    return (containers[0].get("resources") or {}).get("requests") or {}


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Effective pod requests per resource name (cpu in milli-cpu, everything else in integer units),
    including init containers, sidecars and ``spec.overhead``:
    max(Σ regular + Σ restartable init, max_i(init_i + Σ restartable init before i)) + overhead.

    Upstream ``resource.PodRequests``: quantities are summed exactly and rounded up once per pod
    (``MilliValue`` / ``Value``).  Only resources that appear somewhere in the pod are keys (use
    ``.get(name, 0)``).  Limits are ignored: requests are defaulted from limits at load time
    (:func:`default_pod_requests_from_limits`)."""
    only = _only_container_requests(pod)
    if only is not None:
        return _amounts(only)
    return _pod_requests_walk(pod)


def _pod_requests_walk(pod: Mapping[str, Any]) -> dict[str, int]:
    """The general walk of :func:`pod_requests`."""
    total: _Exact = {}
    init_peak: _Exact = {}
    for is_init, req in _phases(pod):
        if is_init:
            _max(init_peak, req)
        else:
            _add(total, req)
    _max(total, init_peak)
    _add(total, _exact((pod.get("spec") or {}).get("overhead")))
    return {name: _to_amount(name, value) for name, value in total.items()}


def _nonzero(requests: Mapping[str, Fraction]) -> tuple[int, int]:
    """Upstream ``schedutil.GetNonzeroRequests``: 100m / 200Mi for a *missing* cpu / memory entry
    (an explicit 0 stays 0)."""
    cpu = _to_amount("cpu", requests["cpu"]) if "cpu" in requests else DEFAULT_MILLI_CPU_REQUEST
    mem = _to_amount("memory", requests["memory"]) if "memory" in requests else DEFAULT_MEMORY_REQUEST
    return cpu, mem


def pod_nonzero_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(milli-cpu, memory bytes) used for scoring, as upstream ``framework.calculateResource`` (the
    pod's share of ``NodeInfo.NonZeroRequested``): the regular containers' non-zero requests summed,
    then the max with every init container phase's non-zero request (a phase = the init container
    plus the sidecars started before it; for a sidecar, the sidecars so far), then the overhead's
    cpu / memory added when present.

    Sidecar requests therefore reach the regular sum only through the init-phase max, as upstream.
    (For pods without restartable init containers this equals the incoming-pod form of
    ``resource_allocation.go calculatePodResourceRequest``; pods with them are rejected by
    NodeResourcesFit's PreFilter in 1.28 and never scored.)"""
    only = _only_container_requests(pod)
    if only is not None:
        return (as_int64(resource_amount("cpu", only["cpu"])) if "cpu" in only else DEFAULT_MILLI_CPU_REQUEST,
                as_int64(resource_amount("memory", only["memory"])) if "memory" in only else DEFAULT_MEMORY_REQUEST)
    return _pod_nonzero_requests_walk(pod)


def _pod_nonzero_requests_walk(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The general walk of :func:`pod_nonzero_requests`."""
    cpu = mem = 0
    for c in _containers(pod, "containers"):
        c_cpu, c_mem = _nonzero(_container_exact(c))
        cpu, mem = cpu + c_cpu, mem + c_mem
    for is_init, req in _phases(pod):
        if is_init:
            i_cpu, i_mem = _nonzero(req)
            cpu, mem = max(cpu, i_cpu), max(mem, i_mem)
    overhead = _exact((pod.get("spec") or {}).get("overhead"))
    if "cpu" in overhead:
        cpu += _to_amount("cpu", overhead["cpu"])
    if "memory" in overhead:
        mem += _to_amount("memory", overhead["memory"])
    return cpu, mem


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
