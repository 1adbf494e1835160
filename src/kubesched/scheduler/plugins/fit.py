"""Does a pod's request fit a node's free resources? (upstream ``plugins/noderesources/fit.go``:
``Fits`` / ``fitsRequest`` and ``InsufficientResource``.)

The one place this is computed: NodeResourcesFit's Filter and its preemption arithmetic, the
scheduler's node-event pre-check, the autoscaler's simulated nodes and ``explain``'s hints all call
:func:`fits`. Callers choose which requests are checked; :func:`fit_requests` is upstream's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.api.resources import is_extended_resource_name, is_scalar_resource_name
from kubesched.scheduler.framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

NATIVE = (CPU, MEMORY, EPHEMERAL_STORAGE)
TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One reason a pod does not fit: ``requested`` more of ``resource_name`` than the node's
    ``capacity`` minus what is ``used`` (for the pod count: one more pod)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


def is_tracked_scalar(resource: str) -> bool:
    """A name NodeInfo keeps among its scalar resources (extended, hugepages-*, prefixed native,
    attachable-volumes-*), other than the natively tracked cpu, memory and ephemeral storage."""
    return resource not in NATIVE and is_scalar_resource_name(resource)


def is_ignorable(resource: str, ignored: set[str], ignored_groups: set[str]) -> bool:
    """fitsRequest: only *extended* resources can be ignored, by exact name (ignoredResources) or by
    the part before the ``/`` (ignoredResourceGroups)."""
    if not is_extended_resource_name(resource):
        return False
    return resource in ignored or resource.split("/", 1)[0] in ignored_groups


def fit_requests(
    requests: Mapping[str, int], ignored: Callable[[str], bool] | None = None
) -> list[tuple[str, int]]:
    """The (resource, amount) pairs ``fitsRequest`` compares, in its order: cpu, memory, ephemeral
    storage when requested, then the scalar resources with a non-zero request that are not
    ``ignored`` (``Resource.SetMaxResource`` keeps no other names)."""
    checked = [(r, requests[r]) for r in NATIVE if requests.get(r, 0) > 0]
    checked += [
        (r, v) for r, v in requests.items()
        if is_tracked_scalar(r) and v != 0 and (ignored is None or not ignored(r))
    ]
    return checked


def insufficient(resource: str) -> str:
    """The reason a resource falls short (``Insufficient <name>``)."""
    return f"Insufficient {resource}"


def fits(
    checked: Iterable[tuple[str, int]], *, allocatable: Mapping[str, int], requested: Mapping[str, int],
    pods: int, allowed_pods: int | None,
) -> list[InsufficientResource]:
    """Upstream ``noderesources.Fits``: what is insufficient for one more pod requesting ``checked``
    on a node with ``pods`` pods (``allowed_pods`` at most; None: no limit) and ``requested`` of its
    ``allocatable`` in use. Empty when the pod fits. The pod count comes first, then ``checked`` in
    its order."""
    out: list[InsufficientResource] = []
    if allowed_pods is not None and pods + 1 > allowed_pods:
        out.append(InsufficientResource(PODS, TOO_MANY_PODS, 1, pods, allowed_pods))
    for resource, amount in checked:
        capacity = allocatable.get(resource, 0)
        used = requested.get(resource, 0)
        if amount > capacity - used:
            out.append(InsufficientResource(resource, insufficient(resource), amount, used, capacity))
    return out


def headroom(
    checked: Iterable[tuple[str, int]], *, allocatable: Mapping[str, int], requested: Mapping[str, int]
) -> list[int]:
    """What would be left of each resource of ``checked`` with the pod placed: capacity minus what
    is used minus the pod's amount. :func:`fits` reports a resource exactly where this is negative,
    so pods moving on and off the node become plain additions (the preemption arithmetic)."""
    return [allocatable.get(resource, 0) - requested.get(resource, 0) - amount for resource, amount in checked]


def shortfall_reasons(names: Sequence[str], left: Sequence[int], pods_left: int) -> tuple[str, ...]:
    """The reasons :func:`fits` gives, from the :func:`headroom` ``left`` of each of ``names`` and
    the pod slots ``pods_left`` once the pod is counted (negative: too many pods)."""
    reasons = (TOO_MANY_PODS,) if pods_left < 0 else ()
    return reasons + tuple(insufficient(name) for name, value in zip(names, left) if value < 0)
