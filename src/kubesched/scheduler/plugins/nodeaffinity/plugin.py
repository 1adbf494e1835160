"""The NodeAffinity plugin: its per-node methods (the reference, which also serves explanations and
dry runs) and its vector forms, which read the compiled selectors of :mod:`.vector`."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.selectors import (
    node_selector_matches,
    node_selector_term_error,
    node_selector_term_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
    preferred_terms_error,
    required_node_names,
)
from kubesched.scheduler.framework.capabilities import (
    FailureStatusesVector,
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
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.plugins.helpers import default_normalize, default_normalize_vector
from kubesched.scheduler.plugins.nodeaffinity.vector import (
    UNCOMPILED,
    Uncompiled,
    compile_node_selector,
    compile_preferred,
    compiled,
    pod_preferred,
    pod_required,
    required_mask,
    weighted_sum,
)

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"


class NodeAffinity(
    PreFilterPlugin, FilterPlugin, PodIndependentFilter, FilterVector, FilterVectorAt, FailureStatusesVector,
    PreScorePlugin, ScorePlugin, ScoreVector, ScoreExtensions, NormalizeVector, EnqueueExtensions,
):
    name = "NodeAffinity"
    depends_on_pods = False  # verdict depends only on the node and the pod

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        added = (args or {}).get("addedAffinity") or {}
        if not isinstance(added, dict):
            raise ValueError("NodeAffinityArgs.addedAffinity must be a NodeAffinity object")
        self.added_required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.added_preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        # New(): NewNodeSelector / NewPreferredSchedulingTerms reject terms that do not parse
        for i, term in enumerate((self.added_required or {}).get("nodeSelectorTerms") or []):
            err = node_selector_term_error(term) if term else None
            if err is not None:
                raise ValueError(f"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                                 f"nodeSelectorTerms[{i}].{err}")
        err = preferred_terms_error(self.added_preferred)
        if err is not None:
            raise ValueError(f"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution{err}")
        self._added_required = compiled(lambda: compile_node_selector(self.added_required))
        self._added_preferred = compiled(lambda: compile_preferred(self.added_preferred))

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ADD | UPDATE)]

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        spec = pod.spec
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        if required is None and self.added_required is None and spec.get("nodeSelector") is None:
            return None, Status.skip()
        names = required_node_names(pod.obj)
        if names is None:
            return None, None
        if not names:
            return None, Status.unresolvable(REASON_CONFLICT)
        return PreFilterResult(names), None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        node_obj = node.node or {}
        if self.added_required is not None and not node_selector_matches(self.added_required, node_obj):
            return Status.unresolvable(REASON_ENFORCED)
        if not pod_matches_node_selector_and_affinity(pod.obj, node_obj):
            return Status.unresolvable(REASON_POD)
        return None

    def _enforced_mask(self, snapshot: NodeTableSnapshot) -> np.ndarray | None | Uncompiled:
        """Which nodes match ``addedAffinity``'s required selector (None: there is none)."""
        added = self._added_required
        if isinstance(added, Uncompiled) or added is None:
            return added
        mask = required_mask(snapshot.table, (added,))
        return UNCOMPILED if mask is None else mask

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        return self._matching(pod, snapshot, None)

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        return self._matching(pod, snapshot, where)

    def _matching(self, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None) -> np.ndarray | None:
        own, added = pod_required(pod), self._added_required
        if isinstance(own, Uncompiled) or isinstance(added, Uncompiled):
            return None
        mask = required_mask(snapshot.table, (added, *own))
        if mask is None:
            return None
        return mask.copy() if where is None else mask[where]

    def failure_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> list[Status]:
        """Filter's rejection for nodes ``idx`` (known to fail): the enforced selector's reason
        where ``addedAffinity`` rejects the node, else the pod's."""
        enforced = self._enforced_mask(snapshot)
        if isinstance(enforced, Uncompiled):
            nodes = snapshot.node_infos
            return [self.filter(state, pod, nodes[int(i)]) or Status(Code.SUCCESS) for i in idx]
        by_pod = Status.unresolvable(REASON_POD)
        if enforced is None:
            return [by_pod] * len(idx)
        by_scheduler = Status.unresolvable(REASON_ENFORCED)
        return [by_pod if ok else by_scheduler for ok in enforced[idx].tolist()]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status | None:
        preferred = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution"
        )
        # getPodPreferredNodeAffinity: a preferred term that does not parse is an error for the pod
        err = preferred_terms_error(preferred)
        if err is not None:
            return Status.error(err, self.name)
        if not preferred and not self.added_preferred:
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        node_obj = node.node or {}
        total = preferred_node_affinity_score(pod.obj, node_obj)
        for term in self.added_preferred:
            if node_selector_term_matches(term.get("preference") or {}, node_obj):
                total += int(term.get("weight") or 0)
        return total

    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        own = pod_preferred(pod)
        added = self._added_preferred
        if not isinstance(own, Uncompiled) and not isinstance(added, Uncompiled):
            total = weighted_sum(own + added, snapshot.table)
            if total is not None:
                scores: np.ndarray = total[idx]
                return scores
        nodes = snapshot.node_infos
        return np.array([self.score(state, pod, nodes[int(i)]) for i in idx], dtype=np.int64)

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], scores: list[int]
    ) -> None:
        default_normalize(scores)

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize_vector(scores)
