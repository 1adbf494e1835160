"""NodeAffinity: nodeSelector and required node affinity (Filter), preferred terms (Score),
plus the profile's ``addedAffinity`` arg."""

from __future__ import annotations

from typing import Any

from kubesched.api.selectors import (
    node_selector_matches,
    node_selector_term_error,
    node_selector_term_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
    preferred_terms_error,
    required_node_names,
)
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PodIndependentFilter,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.helpers import default_normalize

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"


class NodeAffinity(
    PreFilterPlugin, FilterPlugin, PodIndependentFilter, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions,
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

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], scores: list[int]
    ) -> None:
        default_normalize(scores)
