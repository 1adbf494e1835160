"""Pure formulas of kubelet node-pressure eviction (``pkg/kubelet/eviction/helpers.go``): the
ranking, critical pods, and the texts the kubelet writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.quantity import format_quantity, resource_amount

#: ``scheduling.SystemCriticalPriority``: pods at or above it are never evicted by the kubelet
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"

EVICTED_REASON = "Evicted"
TERMINATION_BY_KUBELET = "TerminationByKubelet"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One running pod as the ranking sees it: amounts in the resource's integer unit."""

    key: str
    priority: int
    usage: int
    request: int

    @property
    def exceeds_request(self) -> bool:
        return self.usage > self.request


def rank_for_eviction(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Memory (and disk) pressure order, first to evict first: pods using more than their request
    before those that don't; then lower priority first; then the larger ``usage - request`` first.
    Remaining ties go by ``namespace/name`` so runs are deterministic."""
    return sorted(
        candidates,
        key=lambda c: (0 if c.exceeds_request else 1, c.priority, -(c.usage - c.request), c.key),
    )


def is_critical(pod: Mapping[str, Any]) -> bool:
    """``kubelettypes.IsCriticalPod``: static, mirror, or priority ≥ 2,000,000,000."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if MIRROR_POD_ANNOTATION in annotations or annotations.get(CONFIG_SOURCE_ANNOTATION) not in (None, "api"):
        return True
    priority = (pod.get("spec") or {}).get("priority")
    return isinstance(priority, int) and priority >= SYSTEM_CRITICAL_PRIORITY


def container_usages(pod: Mapping[str, Any], resource: str, pod_usage: int) -> list[tuple[str, int, int]]:
    """``(container name, usage, request)`` for the regular containers: a pod-level usage is shared
    in proportion to the containers' requests (evenly when none requests the resource; rounding
    left-overs go to the first container)."""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    if not containers:
        return []
    requests = []
    for c in containers:
        value = ((c.get("resources") or {}).get("requests") or {}).get(resource)
        requests.append(resource_amount(resource, value) if value is not None else 0)
    total = sum(requests)
    if total > 0:
        shares = [pod_usage * r // total for r in requests]
    else:
        shares = [pod_usage // len(containers)] * len(containers)
    shares[0] += pod_usage - sum(shares)
    return [(str(c.get("name") or ""), u, r) for c, u, r in zip(containers, shares, requests, strict=True)]


def eviction_message(
    resource: str, threshold: int | None, available: int | None, containers: Iterable[tuple[str, int, int]]
) -> str:
    """``evictionMessage``: "The node was low on resource: memory. Threshold quantity: 100Mi,
    available: 12Mi. Container app was using 1Gi, request is 0, has larger consumption of memory. " """
    message = f"The node was low on resource: {resource}. "
    if threshold is not None and available is not None:
        message += (f"Threshold quantity: {format_quantity(resource, threshold)}, "
                    f"available: {format_quantity(resource, available)}. ")
    for name, usage, request in containers:
        if usage > request:
            message += (f"Container {name} was using {format_quantity(resource, usage)}, request is "
                        f"{format_quantity(resource, request)}, has larger consumption of {resource}. ")
    return message


def admission_message(conditions: Iterable[str]) -> str:
    """The kubelet's admission refusal under node pressure: "The node had condition: [MemoryPressure]. " """
    return f"The node had condition: [{' '.join(conditions)}]. "
