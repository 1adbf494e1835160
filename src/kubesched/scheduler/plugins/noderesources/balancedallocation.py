"""NodeResourcesBalancedAllocation: favours nodes whose requested shares of the scored resources
stay close to each other (upstream ``balanced_allocation.go``), per node and over the node table."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.scheduler.framework.capabilities import ScoreVector
from kubesched.scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, ScorePlugin
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.plugins.fit import NATIVE, is_tracked_scalar
from kubesched.scheduler.plugins.noderesources.scoring import (
    balanced_score,
    node_alloc_req,
    resource_specs,
    scoring_request,
)

BALANCED = "NodeResourcesBalancedAllocation"


class NodeResourcesBalancedAllocation(ScorePlugin, ScoreVector):
    name = BALANCED

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.resources = [r for r, _ in resource_specs((args or {}).get("resources"), "BalancedAllocationArgs")]

    def _pairs(self, pod: PodInfo, node: NodeInfo) -> tuple[list[int], list[int]]:
        requested, allocatable = [], []
        for resource in self.resources:
            alloc, req = node_alloc_req(node, resource, scoring_request(pod, resource, True), True)
            requested.append(req)
            allocatable.append(alloc)
        return requested, allocatable

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return balanced_score(*self._pairs(pod, node))

    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        table = snapshot.table
        scored: list[tuple[int, int]] = []  # (row, pod request)
        for resource in self.resources:
            pod_req = scoring_request(pod, resource, True)
            row = table.row.get(resource)
            if row is None or (resource not in NATIVE and (pod_req == 0 or not is_tracked_scalar(resource))):
                continue
            scored.append((row, pod_req))
        if not scored:
            return np.full(len(idx), MAX_NODE_SCORE, dtype=np.int64)
        rows = [row for row, _ in scored]
        alloc = table.alloc.take(idx, axis=1)[rows]
        req = table.requested.take(idx, axis=1)[rows] + np.array([r for _, r in scored], dtype=np.int64)[:, None]
        present = alloc > 0
        if len(scored) == 2 and bool(present.all()):
            fractions = np.minimum(1.0, req / alloc)
            std = np.abs((fractions[0] - fractions[1]) / 2)
            return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
        nodes = snapshot.node_infos
        return np.array([self.score(state, pod, nodes[i]) for i in idx], dtype=np.int64)
