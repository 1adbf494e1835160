"""Score strategies of NodeResourceTopologyMatch (scheduler-plugins ``noderesourcetopology``), as
pure functions over one NUMA zone's *available* amounts.

Amounts come in kubesched units and are compared as upstream compares ``Quantity.Value()``: cpu in
whole cores rounded up, everything else as is.

- ``LeastAllocated``: per requested resource ``(available - request) * 100 / available`` (0 if the
  zone lacks it or the request does not fit), weighted mean.
- ``MostAllocated``: ``request * 100 / available`` (same zero rules), weighted mean.
- ``BalancedAllocation``: ``(1 - variance of request/available fractions) * 100``; 0 if a fraction
  exceeds 1; a resource the zone lacks counts as fraction 1. Variance is the sample variance (as
  gonum's ``stat.Variance``); with fewer than two resources it is 0.
- The node score for a request is the smallest non-zero zone score (0 if every zone scores 0);
  scope ``container`` averages the containers' scores (init containers included).
- ``LeastNUMANodes``: ``100 - k * (100 / maxNUMANodes)``, k the fewest zones that together can hold
  the request (containers in order, each taking from the zones it was given), plus half a zone's
  worth when those zones are also the closest together.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence

from kubesched.k8s.objects import MAX_NODE_SCORE
from kubesched.topology.nrt import Zone
from kubesched.topology.qos import GUARANTEED, is_numa_affine

MIN_NODE_SCORE = 0
MAX_DISTANCE = 255
DEFAULT_WEIGHT = 1

Strategy = Callable[[Mapping[str, int], Mapping[str, int], Mapping[str, int]], int]


def value(resource: str, amount: int) -> int:
    """``Quantity.Value()``: cpu rounded up to whole cores, other resources unchanged."""
    return -(-amount // 1000) if resource == "cpu" else amount


def _weight(weights: Mapping[str, int], resource: str) -> int:
    w = weights.get(resource, DEFAULT_WEIGHT)
    return w if w >= 1 else DEFAULT_WEIGHT


def least_allocated(request: Mapping[str, int], available: Mapping[str, int], weights: Mapping[str, int]) -> int:
    total = weight_sum = 0
    for resource, amount in request.items():
        req, avail = value(resource, amount), value(resource, available.get(resource, 0))
        score = 0 if avail == 0 or req > avail else (avail - req) * MAX_NODE_SCORE // avail
        w = _weight(weights, resource)
        total += score * w
        weight_sum += w
    return total // weight_sum if weight_sum else 0


def most_allocated(request: Mapping[str, int], available: Mapping[str, int], weights: Mapping[str, int]) -> int:
    total = weight_sum = 0
    for resource, amount in request.items():
        req, avail = value(resource, amount), value(resource, available.get(resource, 0))
        score = 0 if avail == 0 or req > avail else req * MAX_NODE_SCORE // avail
        w = _weight(weights, resource)
        total += score * w
        weight_sum += w
    return total // weight_sum if weight_sum else 0


def balanced_allocation(request: Mapping[str, int], available: Mapping[str, int], weights: Mapping[str, int]) -> int:
    fractions: list[float] = []
    for resource, amount in request.items():
        avail = value(resource, available.get(resource, 0))
        fraction = 1.0 if avail == 0 else value(resource, amount) / avail
        if fraction > 1:
            return 0
        fractions.append(fraction)
    if len(fractions) < 2:
        return MAX_NODE_SCORE
    mean = sum(fractions) / len(fractions)
    variance = sum((f - mean) ** 2 for f in fractions) / (len(fractions) - 1)
    return int((1 - variance) * MAX_NODE_SCORE)


STRATEGIES: dict[str, Strategy] = {
    "LeastAllocated": least_allocated,
    "MostAllocated": most_allocated,
    "BalancedAllocation": balanced_allocation,
}


def zones_score(request: Mapping[str, int], zones: Sequence[Zone], strategy: Strategy,
                weights: Mapping[str, int]) -> int:
    """upstream ``scoreForEachNUMANode``: the smallest non-zero zone score."""
    best = 0
    for zone in zones:
        score = strategy(request, zone.available, weights)
        if best == 0 or (score != 0 and score < best):
            best = score
    return best


def container_scope_score(requests: Sequence[Mapping[str, int]], zones: Sequence[Zone], strategy: Strategy,
                          weights: Mapping[str, int]) -> int:
    if not requests:
        return 0
    scores = [float(zones_score(r, zones, strategy, weights)) for r in requests]
    return int(math.fsum(scores) / len(scores))


# -- LeastNUMANodes ---------------------------------------------------------------------------------
def suitable(qos: str, resource: str, request: int, available: int) -> bool:
    """upstream ``isResourceSetSuitable``: non-Guaranteed pods are not aligned on cpu/memory/hugepages."""
    if qos != GUARANTEED and is_numa_affine(resource):
        return True
    return available >= request


def only_non_numa(zones: Sequence[Zone], request: Mapping[str, int]) -> bool:
    return not any(resource in z.available for resource in request for z in zones)


def _avg_distance(zones: Sequence[Zone], combo: Sequence[int]) -> float:
    if not combo:
        return float(MAX_DISTANCE)
    total = 0
    for a in combo:
        for b in combo:
            total += zones[a].costs.get(zones[b].numa_id, MAX_DISTANCE)
    return total / (len(combo) * len(combo))


def numa_nodes_required(qos: str, zones: Sequence[Zone], request: Mapping[str, int]) -> tuple[list[int] | None, bool]:
    """The fewest zones (positions in ``zones``) that together hold ``request``, preferring the
    closest ones; and whether that set has the minimal average distance of its size."""
    for size in range(1, len(zones) + 1):
        combos = list(itertools.combinations(range(len(zones)), size))
        min_avg = min(_avg_distance(zones, c) for c in combos)
        chosen: list[int] | None = None
        chosen_distance = MAX_DISTANCE + 1.0
        for combo in combos:
            if any(resource not in zones[i].available for i in combo for resource in request):
                continue
            if not all(
                amount == 0 or suitable(qos, resource, amount, sum(zones[i].available[resource] for i in combo))
                for resource, amount in request.items()
            ):
                continue
            distance = _avg_distance(zones, combo)
            if distance == min_avg:
                return list(combo), True
            if distance < chosen_distance:
                chosen, chosen_distance = list(combo), distance
        if chosen is not None:
            return chosen, False
    return None, False


def subtract_from_zones(request: Mapping[str, int], zones: Sequence[Zone], chosen: Sequence[int]) -> None:
    """upstream ``subtractFromNUMAs``: take the request from the chosen zones in order, in place."""
    for resource, amount in request.items():
        left = amount
        for i in chosen:
            if left == 0:
                break
            available = zones[i].available
            if resource not in available:
                continue
            take = min(left, available[resource])
            available[resource] -= take
            left -= take


def normalize_numa_score(count: int, min_distance: bool, max_numa_nodes: int) -> int:
    per_node = MAX_NODE_SCORE // max_numa_nodes
    score = MAX_NODE_SCORE - count * per_node
    return score + per_node // 2 if min_distance else score


def least_numa_nodes(qos: str, requests: Sequence[Mapping[str, int]], zones: Sequence[Zone],
                     max_numa_nodes: int) -> int:
    """LeastNUMANodes for a sequence of requests (one: scope pod; each container: scope container).
    ``zones`` is modified (pass a copy)."""
    most = 0
    all_closest = True
    for request in requests:
        if only_non_numa(zones, request):
            continue
        chosen, closest = numa_nodes_required(qos, zones, request)
        if chosen is None:
            return MIN_NODE_SCORE
        all_closest = all_closest and closest
        most = max(most, len(chosen))
        subtract_from_zones(request, zones, chosen)
    if most == 0:
        return MAX_NODE_SCORE
    return max(MIN_NODE_SCORE, normalize_numa_score(most, all_closest, max_numa_nodes))
