"""Topology Manager hints (kubelet ``cm/topologymanager``, v1.28 semantics).

A hint provider (CPU manager, memory manager, device manager) answers, for each resource a container
(or, with scope ``pod``, the whole pod) requests, with the NUMA masks that could satisfy the request
from what is *free* now; a hint is *preferred* when its mask is as narrow as the smallest mask whose
*total* capacity could ever satisfy the request. The policy merges one hint per resource (bitwise
AND of the masks, preferred only if all are) and keeps the best: preferred before not preferred,
then the narrowest mask.

- ``none``: no hints, always admitted, no affinity.
- ``best-effort``: always admitted; the best hint guides allocation.
- ``restricted``: admitted only if the best hint is preferred.
- ``single-numa-node``: only single-zone preferred hints (or "don't care") take part; admitted only
  if the result is preferred.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubesched.topology.model import Mask, masks, narrower

NONE = "none"
BEST_EFFORT = "best-effort"
RESTRICTED = "restricted"
SINGLE_NUMA_NODE = "single-numa-node"
TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"


@dataclass(frozen=True, slots=True)
class TopologyHint:
    affinity: Mask | None  # None: any zone ("don't care")
    preferred: bool


#: what a provider says about one resource: None = no preference, [] = cannot be satisfied anywhere
ResourceHints = list[TopologyHint] | None


def resource_hints(request: int, total: Mapping[int, int], available: Mapping[int, int]) -> list[TopologyHint]:
    """The hints for ``request`` units of a resource with ``total`` capacity and ``available`` free
    amount per zone (CPU manager ``generateCPUTopologyHints``, memory manager ``calculateHints``
    and device manager ``generateDeviceTopologyHints`` all follow this pattern)."""
    ids = sorted(total)
    min_size = len(ids)
    fitting: list[Mask] = []
    for mask in masks(ids):
        if sum(total[i] for i in mask) >= request and len(mask) < min_size:
            min_size = len(mask)
        if sum(available.get(i, 0) for i in mask) >= request:
            fitting.append(mask)
    return [TopologyHint(mask, len(mask) == min_size) for mask in fitting]


def _normalise(hints: Sequence[ResourceHints]) -> list[list[TopologyHint]]:
    """upstream ``filterProvidersHints``."""
    out: list[list[TopologyHint]] = []
    for entry in hints:
        if entry is None:
            out.append([TopologyHint(None, True)])
        elif not entry:
            out.append([TopologyHint(None, False)])
        else:
            out.append(list(entry))
    return out


def _single_numa_only(hints: list[list[TopologyHint]]) -> list[list[TopologyHint]]:
    """upstream ``filterSingleNumaHints``: keep preferred hints that are "don't care" or one zone."""
    return [
        [h for h in entry if h.preferred and (h.affinity is None or len(h.affinity) == 1)]
        for entry in hints
    ]


def _better(candidate: TopologyHint, best: TopologyHint) -> bool:
    if candidate.preferred != best.preferred:
        return candidate.preferred
    assert candidate.affinity is not None and best.affinity is not None
    return narrower(candidate.affinity, best.affinity)


def merge_hints(policy: str, hints: Sequence[ResourceHints], numa_ids: Sequence[int]) -> TopologyHint:
    """The best merged hint under ``policy`` (upstream ``mergeFilteredHints``)."""
    everything: Mask = tuple(sorted(numa_ids))
    entries = _normalise(hints)
    if policy == SINGLE_NUMA_NODE:
        entries = _single_numa_only(entries)
    best = TopologyHint(everything, False)
    for permutation in itertools.product(*entries):
        merged = set(everything)
        preferred = True
        for hint in permutation:
            if hint.affinity is not None:
                merged &= set(hint.affinity)
            preferred = preferred and hint.preferred
        if not merged:
            continue
        candidate = TopologyHint(tuple(sorted(merged)), preferred)
        if _better(candidate, best):
            best = candidate
    if policy == SINGLE_NUMA_NODE and best.affinity == everything:
        best = TopologyHint(None, best.preferred)
    return best


def admits(policy: str, hint: TopologyHint) -> bool:
    """Whether the policy admits a pod whose merged hint is ``hint``."""
    if policy in (RESTRICTED, SINGLE_NUMA_NODE):
        return hint.preferred
    return True
