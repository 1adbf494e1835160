"""NodeAffinity: nodeSelector and required node affinity (Filter), preferred terms (Score),
plus the profile's ``addedAffinity`` arg.

Filter and Score also come as vector forms over the node table's label columns; the per-node
methods stay the reference (and serve explanations and dry runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from kubesched.api.selectors import (
    node_selector_matches,
    node_selector_term_error,
    node_selector_term_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
    preferred_terms_error,
    required_node_affinity,
    required_node_names,
)
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FailureStatusesVector,
    FilterPlugin,
    FilterVector,
    FilterVectorAt,
    Handle,
    NodeTableSnapshot,
    NodeTableView,
    NormalizeVector,
    PodIndependentFilter,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    ScoreVector,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.helpers import default_normalize, default_normalize_vector
from kubesched.scheduler.plugins.nodeaffinity.vector import (
    Selector,
    Term,
    compile_node_selector,
    compile_pod_node_selector,
    compile_preferred,
    weighted_sum,
)

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"

#: PodInfo.cache keys of the pod's compiled selectors (the plugin's own addedAffinity is kept apart)
REQUIRED_CACHE_KEY = "NodeAffinity/required"
PREFERRED_CACHE_KEY = "NodeAffinity/preferred"

_T = TypeVar("_T")


class _Unsupported:
    """Marks a compiled form that could not be built (the per-node methods answer instead)."""


UNSUPPORTED = _Unsupported()


def _compiled(build: Callable[[], _T]) -> _T | _Unsupported:
    """``build()``, or :data:`UNSUPPORTED` when it raises: :class:`Unsupported` for inputs the
    compiled form does not represent, anything else for malformed input on which the per-node
    reference may raise too (it then does so itself, node by node, as before)."""
    try:
        return build()
    except Exception:  # noqa: BLE001 - see above; Unsupported included
        return UNSUPPORTED


def pod_required(pod: PodInfo) -> tuple[Term | None, Selector | None] | _Unsupported:
    """The pod's nodeSelector and required node affinity, compiled once per PodInfo (PodTopologySpread's
    nodeAffinityPolicy reads them too)."""
    hit = pod.cache.get(REQUIRED_CACHE_KEY)
    if hit is None:
        hit = pod.cache[REQUIRED_CACHE_KEY] = _compiled(
            lambda: (compile_pod_node_selector(pod.spec), compile_node_selector(required_node_affinity(pod.obj)))
        )
    return hit  # type: ignore[no-any-return]


def _pod_preferred(pod: PodInfo) -> tuple[tuple[int, Term], ...] | _Unsupported:
    """The pod's preferred node affinity terms, compiled once per PodInfo."""
    hit = pod.cache.get(PREFERRED_CACHE_KEY)
    if hit is None:
        hit = pod.cache[PREFERRED_CACHE_KEY] = _compiled(
            lambda: compile_preferred(
                ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                    "preferredDuringSchedulingIgnoredDuringExecution"
                )
            )
        )
    return hit  # type: ignore[no-any-return]


def required_mask(table: NodeTableView, parts: tuple[Term | Selector | None, ...]) -> np.ndarray | None:
    """Which nodes meet every one of ``parts`` (None: some label column cannot answer, ask per
    node). Worked out for all nodes once per distinct selector and kept in the table's node memo
    (pods of one workload share their selectors, labels change seldom): do not modify it."""
    memo = table.node_memo()
    key = (REQUIRED_CACHE_KEY, *parts)
    mask = memo.get(key, UNSUPPORTED)
    if mask is UNSUPPORTED:
        mask = np.ones(table.n, dtype=bool)
        for part in parts:
            if part is not None:
                part_mask = part.mask(table)
                if part_mask is None:
                    mask = None
                    break
                mask &= part_mask
        memo[key] = mask
    return mask  # type: ignore[no-any-return]


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
        self._added_required = _compiled(lambda: compile_node_selector(self.added_required))
        self._added_preferred = _compiled(lambda: compile_preferred(self.added_preferred))

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

    def _enforced_mask(self, snapshot: NodeTableSnapshot) -> np.ndarray | None | _Unsupported:
        """Which nodes match ``addedAffinity``'s required selector (None: there is none)."""
        added = self._added_required
        if isinstance(added, _Unsupported) or added is None:
            return added
        mask = required_mask(snapshot.table, (added,))
        return UNSUPPORTED if mask is None else mask

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        return self._matching(pod, snapshot, None)

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        return self._matching(pod, snapshot, where)

    def _matching(self, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None) -> np.ndarray | None:
        own, added = pod_required(pod), self._added_required
        if isinstance(own, _Unsupported) or isinstance(added, _Unsupported):
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
        if isinstance(enforced, _Unsupported):
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
        own = _pod_preferred(pod)
        added = self._added_preferred
        if not isinstance(own, _Unsupported) and not isinstance(added, _Unsupported):
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
