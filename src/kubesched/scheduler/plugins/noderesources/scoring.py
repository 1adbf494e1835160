"""The score arithmetic of NodeResourcesFit and NodeResourcesBalancedAllocation, per node (upstream
``resource_allocation.go``, ``least_allocated.go``, ``most_allocated.go``,
``requested_to_capacity_ratio.go``, ``balanced_allocation.go``): the scored resources from the
args, the requests and allocatable each strategy reads, and the strategies as pure functions."""

from __future__ import annotations

import math
from typing import Any

from kubesched.scheduler.framework.interface import MAX_NODE_SCORE
from kubesched.scheduler.framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, PodInfo
from kubesched.scheduler.plugins.fit import is_tracked_scalar
from kubesched.scheduler.plugins.helpers import go_div

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
DEFAULT_RESOURCES = [{"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1}]


def resource_specs(raw: Any, what: str) -> list[tuple[str, int]]:
    """Upstream v1 defaulting (``SetDefaults_NodeResourcesFitArgs`` /
    ``SetDefaults_NodeResourcesBalancedAllocationArgs``): no (or an empty) resource list means
    cpu:1, memory:1; an unset or zero weight means 1.  Then ``validateResources``: weight in (0, 100]."""
    specs = raw if raw else DEFAULT_RESOURCES
    if not isinstance(specs, list):
        raise ValueError(f"{what}.resources must be a list of {{name, weight}}")
    out = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict) or not spec.get("name"):
            raise ValueError(f"{what}.resources[{i}].name is required")
        weight = spec.get("weight") or 1
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise ValueError(f"{what}.resources[{i}].weight: resource weight of {spec['name']} not in valid range "
                             f"(0, 100], got {weight!r}")
        out.append((str(spec["name"]), weight))
    return out


def scoring_request(pod: PodInfo, resource: str, use_requested: bool) -> int:
    if not use_requested and resource == CPU:
        return pod.nonzero_cpu
    if not use_requested and resource == MEMORY:
        return pod.nonzero_mem
    return pod.requests.get(resource, 0)


def node_alloc_req(node: NodeInfo, resource: str, pod_request: int, use_requested: bool) -> tuple[int, int]:
    """Upstream calculateResourceAllocatableRequest: (allocatable, requested incl. the pod).

    (0, 0) — "skip this resource" — for a scalar resource the pod does not request, and for any
    other name NodeInfo does not track (a non-scalar, non-native name, or a scalar the node lacks)."""
    if resource == CPU:
        used = node.requested.get(CPU, 0) if use_requested else node.nonzero_cpu
    elif resource == MEMORY:
        used = node.requested.get(MEMORY, 0) if use_requested else node.nonzero_mem
    elif resource == EPHEMERAL_STORAGE:
        used = node.requested.get(resource, 0)
    else:
        if not is_tracked_scalar(resource) or pod_request == 0 or resource not in node.allocatable:
            return 0, 0
        used = node.requested.get(resource, 0)
    return node.allocatable.get(resource, 0), used + pod_request


def least_allocated(requested: list[int], allocatable: list[int], weights: list[int]) -> int:
    score = weight_sum = 0
    for req, alloc, w in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        score += (0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc) * w
        weight_sum += w
    return score // weight_sum if weight_sum else 0


def most_allocated(requested: list[int], allocatable: list[int], weights: list[int]) -> int:
    score = weight_sum = 0
    for req, alloc, w in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        score += (min(req, alloc) * MAX_NODE_SCORE // alloc) * w
        weight_sum += w
    return score // weight_sum if weight_sum else 0


def broken_linear(shape: list[tuple[int, int]], p: int) -> int:
    for i, (util, score) in enumerate(shape):
        if p <= util:
            if i == 0:
                return score
            pu, ps = shape[i - 1]
            return ps + go_div((score - ps) * (p - pu), util - pu)
    return shape[-1][1]


def requested_to_capacity_ratio(
    shape: list[tuple[int, int]], requested: list[int], allocatable: list[int], weights: list[int]
) -> int:
    score = weight_sum = 0
    for req, alloc, w in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        util = MAX_UTILIZATION if req > alloc else req * MAX_UTILIZATION // alloc
        s = broken_linear(shape, util)
        if s > 0:
            score += s * w
            weight_sum += w
    if not weight_sum:
        return 0
    return math.floor(score / weight_sum + 0.5)


def balanced_score(requested: list[int], allocatable: list[int]) -> int:
    fractions = [min(1.0, r / a) for r, a in zip(requested, allocatable) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)
