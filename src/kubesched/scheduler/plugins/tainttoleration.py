"""TaintToleration: Filter on NoSchedule/NoExecute taints, Score on PreferNoSchedule taints."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.tolerations import (
    count_intolerable_prefer_no_schedule,
    find_untolerated_taint,
    format_taint,
)
from kubesched.scheduler.framework.capabilities import (
    FilterVector,
    FilterVectorAt,
    NormalizeVector,
    PodIndependentFilter,
    ScoreVector,
)
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot, NodeTableView
from kubesched.scheduler.plugins.helpers import default_normalize, default_normalize_vector

HARD_EFFECTS = ("NoSchedule", "NoExecute")


class TaintToleration(
    FilterPlugin, PodIndependentFilter, FilterVector, FilterVectorAt, ScorePlugin, ScoreVector, ScoreExtensions,
    NormalizeVector, EnqueueExtensions,
):
    name = "TaintToleration"
    depends_on_pods = False  # verdict depends only on the node and the pod

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ADD | UPDATE)]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.taints:
            return None
        taint = find_untolerated_taint(node.taints, pod.tolerations, HARD_EFFECTS)
        if taint is None:
            return None
        return Status.unresolvable(f"node(s) had untolerated taint {format_taint(taint)}")

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        """Filter once per distinct taint list (nodes with alike taints share the verdict)."""
        table = snapshot.table
        return self._verdicts(pod, table, table.taint_codes, table.has_hard_taints)

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        table = snapshot.table
        return self._verdicts(pod, table, table.taint_codes[where], table.has_hard_taints[where])

    @staticmethod
    def _verdicts(pod: PodInfo, table: NodeTableView, codes: np.ndarray, hard: np.ndarray) -> np.ndarray:
        if not table.flags().any_hard_taints:
            return np.ones(len(codes), dtype=bool)
        ok = np.ones(len(table.taint_lists), dtype=bool)
        for code in np.unique(codes[hard]).tolist():
            ok[code] = find_untolerated_taint(table.taint_lists[code], pod.tolerations, HARD_EFFECTS) is None
        mask: np.ndarray = ok[codes]
        return mask

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return count_intolerable_prefer_no_schedule(node.taints, pod.tolerations)

    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        table = snapshot.table
        if not table.flags().any_prefer_taints:
            return np.zeros(len(idx), dtype=np.int64)
        codes = table.taint_codes[idx]
        counts = np.zeros(len(table.taint_lists), dtype=np.int64)
        for code in np.unique(codes[table.has_prefer_taints[idx]]).tolist():
            counts[code] = count_intolerable_prefer_no_schedule(table.taint_lists[code], pod.tolerations)
        out: np.ndarray = counts[codes]
        return out

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], scores: list[int]
    ) -> None:
        default_normalize(scores, reverse=True)

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize_vector(scores, reverse=True)
