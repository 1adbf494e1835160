"""The PodTopologySpread plugin: each pod's constraints (its own, or the defaults with the selector
of its Services and controller), PreFilter / Filter with AddPod and RemovePod, PreScore / Score /
NormalizeScore, each per node and as the vector forms of :mod:`.vector`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.selectors import LabelSelector, Requirement
from kubesched.k8s.objects import Obj, namespace_of
from kubesched.scheduler.framework.capabilities import (
    FailureStatusesVector,
    FilterVector,
    FilterVectorAt,
    NormalizeVector,
    PodMovesNeutral,
    ScoreVector,
)
from kubesched.scheduler.framework.interface import (
    ADD,
    ALL,
    DELETE,
    FEASIBLE_COLUMNS,
    MAX_NODE_SCORE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.plugins.helpers import table_of
from kubesched.scheduler.plugins.podtopologyspread import vector as vec
from kubesched.scheduler.plugins.podtopologyspread.constraints import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
    Constraint,
    NodeInclusion,
    count_pods_matching,
    has_all_keys,
    parse_args,
    parse_constraints,
)
from kubesched.scheduler.plugins.podtopologyspread.state import CriticalPaths, PreFilterState, PreScoreState

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


def _round_half_away(x: float) -> int:
    """Go ``math.Round`` for non-negative values."""
    r = math.floor(x)
    return int(r + 1 if x - r >= 0.5 else r)


def _controller_ref(pod: PodInfo) -> Mapping[str, Any] | None:
    for ref in (pod.obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") is True:
            return ref  # type: ignore[no-any-return]
    return None


class PodTopologySpread(
    PreFilterPlugin, PreFilterExtensions, FilterPlugin, FilterVector, FilterVectorAt, FailureStatusesVector,
    PodMovesNeutral, PreScorePlugin, ScorePlugin, ScoreVector, ScoreExtensions, NormalizeVector, EnqueueExtensions,
):
    name = NAME

    def __init__(self, args: dict[str, Any] | None, handle: Handle) -> None:
        self.default_constraints, self.system_defaulted = parse_args(args or {})
        # the default constraints have no selector (each pod's is worked out for it), so they read
        # the same for every pod: parsed once per whenUnsatisfiable
        self._defaults = {action: parse_constraints(self.default_constraints, {}, action)
                          for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)}
        self.handle = handle
        self._services_by_namespace: dict[str, list[Obj]] = {}
        self._services_at = -1  # the Service generation the index is of

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", ALL), ClusterEvent("Node", ADD | DELETE | UPDATE_NODE_LABEL)]

    # -- constraints -----------------------------------------------------------------------
    def _services(self, namespace: str) -> list[Obj]:
        """The Services of ``namespace``, in the informer's order (indexed per namespace until a
        Service changes)."""
        generation = self.handle.generation("Service")
        if self._services_at != generation:
            by_namespace: dict[str, list[Obj]] = {}
            for svc in self.handle.list("Service"):
                by_namespace.setdefault(namespace_of(svc), []).append(svc)
            self._services_by_namespace, self._services_at = by_namespace, generation
        return self._services_by_namespace.get(namespace, [])

    def default_selector(self, pod: PodInfo) -> LabelSelector:
        """Upstream ``helper.DefaultSelector``: the selectors of the Services selecting the pod and
        of its controlling ReplicationController / ReplicaSet / StatefulSet, ANDed."""
        label_set: dict[str, str] = {}
        for svc in self._services(pod.namespace):
            sel = (svc.get("spec") or {}).get("selector")
            if sel is None:
                continue  # a nil service selector matches nothing
            if all(pod.labels.get(k) == v for k, v in sel.items()):
                label_set.update(sel)
        requirements: list[Requirement] = []
        owner = _controller_ref(pod)
        if owner is not None:
            gvk = (owner.get("apiVersion"), owner.get("kind"))
            name = owner.get("name") or ""
            if gvk == ("v1", "ReplicationController"):
                rc = self.handle.get("ReplicationController", pod.namespace, name)
                if rc is not None:
                    label_set.update((rc.get("spec") or {}).get("selector") or {})
            elif gvk in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
                obj = self.handle.get(gvk[1], pod.namespace, name)
                if obj is not None:
                    try:
                        other = LabelSelector.from_dict((obj.get("spec") or {}).get("selector"))
                    except ValueError:
                        other = LabelSelector.from_dict(None)
                    if not other.is_nil:
                        requirements.extend(Requirement(k, "In", frozenset([v])) for k, v in other.match_labels)
                        requirements.extend(other.requirements)
        return LabelSelector(tuple(sorted(label_set.items())), tuple(requirements))

    def get_constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """The pod's own constraints of ``action``, or the default ones when it has none."""
        own = pod.spec.get("topologySpreadConstraints") or []
        if own:
            return parse_constraints(own, pod.labels, action)
        constraints = self._defaults[action]
        if not constraints:
            return []
        selector = self.default_selector(pod)
        if selector.is_empty:
            return []
        return [Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy,
                           c.node_taints_policy) for c in constraints]

    # -- PreFilter / extensions ------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = tuple(self.get_constraints(pod, DO_NOT_SCHEDULE))
        except ValueError as err:
            return None, Status.error(f"get constraints from pod: {err}", NAME)
        if not constraints:
            return None, Status.skip()
        inclusion = NodeInclusion(pod)
        snapshot = self.handle.snapshot()
        vector_counts = vec.pre_filter_counts(snapshot, constraints, inclusion, pod.namespace)
        counts: list[dict[str, int]] = [{} for _ in constraints] if vector_counts is None else vector_counts
        for node in snapshot.node_infos if vector_counts is None else ():
            if node.node is None:
                continue
            labels = node.labels or {}
            if not has_all_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not inclusion.matches(c, node):
                    continue
                value = labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + count_pods_matching(
                    node.pods, c.selector, pod.namespace)
        paths = []
        for per_value in counts:
            p = CriticalPaths()
            for value, num in per_value.items():
                p.update(value, num)
            paths.append(p)
        state.write(PRE_FILTER_STATE_KEY,
                    PreFilterState(constraints, counts, paths, [len(m) for m in counts], inclusion))
        return None, None

    def _filter_state(self, state: CycleState) -> PreFilterState | Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        return s

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        s = self._filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add, pod, node, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        s = self._filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove, pod, node, -1)
        return None

    def unaffected_by(self, state: CycleState, pod: PodInfo, node: NodeInfo, pods: Sequence[PodInfo]) -> bool:
        """None of ``pods`` is counted on ``node`` (:meth:`PreFilterState.counted`): AddPod and
        RemovePod leave the counts (and the critical paths) as they are, and Filter reads nothing
        else of the node's pods."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return False
        counting = s.counted_on_node(pod, node)
        if not counting:
            return True
        namespace = pod.namespace
        return not any(p.namespace == namespace and any(i in counting for i in s.selecting(p)) for p in pods)

    # -- Filter ----------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is None:
            return Status.error("node not found", NAME)
        s = self._filter_state(state)
        if isinstance(s, Status):
            return s
        labels = node.labels or {}
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = s.counts[i].get(value, 0) + self_match - s.min_match(i)
            if skew > c.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
        return None

    # -- Score -----------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status | None:
        all_nodes = self.handle.snapshot().node_infos
        if not nodes or not all_nodes:
            return Status.skip()
        try:
            constraints = tuple(self.get_constraints(pod, SCHEDULE_ANYWAY))
        except ValueError as err:
            return Status.error(f"calculating preScoreState: {err}", NAME)
        if not constraints:
            return Status.skip()
        # Only system-default spreading tolerates nodes lacking some topology keys (e.g. no zone).
        require_all = bool(pod.spec.get("topologySpreadConstraints")) or not self.system_defaulted
        inclusion = NodeInclusion(pod)
        given = state.read(FEASIBLE_COLUMNS)
        vector = vec.pre_score_counts(self.handle.snapshot(), constraints, inclusion, pod.namespace, nodes,
                                      require_all, LABEL_HOSTNAME, given[1] if given and given[0] is nodes else None)
        if vector is not None:
            state.write(PRE_SCORE_STATE_KEY, PreScoreState(constraints, *vector))
            return None
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node in nodes:
            labels = node.labels or {}
            if require_all and not has_all_keys(labels, constraints):
                ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key != LABEL_HOSTNAME:
                    counts[i].setdefault(labels.get(c.topology_key, ""), 0)
        weights = []
        for i, c in enumerate(constraints):
            size = len(nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else len(counts[i])
            weights.append(math.log(size + 2))

        for node in all_nodes:
            if node.node is None:
                continue
            labels = node.labels or {}
            if require_all and not has_all_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                value = labels.get(c.topology_key, "")
                if c.topology_key == LABEL_HOSTNAME or value not in counts[i]:
                    continue
                if not inclusion.matches(c, node):
                    continue
                counts[i][value] += count_pods_matching(node.pods, c.selector, pod.namespace)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(constraints, ignored, counts, weights))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState) or node.name in s.ignored_nodes:
            return 0
        labels = node.labels or {}
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_matching(node.pods, c.selector, pod.namespace)
            else:
                cnt = s.counts[i].get(value, 0)
            total += float(cnt) * s.weights[i] + float(c.max_skew - 1)
        return _round_half_away(total)

    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], scores: list[int]) -> None:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return
        lo: int | None = None
        hi = 0
        valid = [node.name not in s.ignored_nodes for node in nodes]
        for ok, raw in zip(valid, scores):
            if ok:
                lo = raw if lo is None or raw < lo else lo
                hi = max(hi, raw)
        for i, ok in enumerate(valid):
            if not ok:
                scores[i] = 0
            elif hi == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (hi + (lo or 0) - scores[i]) // hi

    # -- vector forms ----------------------------------------------------------------------
    def _skews(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot,
               where: np.ndarray | None = None) -> list[vec.Skew] | None:
        s = state.read(PRE_FILTER_STATE_KEY)
        table = table_of(snapshot)
        if not isinstance(s, PreFilterState) or table is None:
            return None
        return vec.skews(table, s.constraints, s.counts, [s.min_match(i) for i in range(len(s.constraints))],
                         pod.labels, where)

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        return self._passing(self._skews(state, pod, snapshot), len(snapshot.node_infos))

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        return self._passing(self._skews(state, pod, snapshot, where), len(where))

    @staticmethod
    def _passing(skews: list[vec.Skew] | None, size: int) -> np.ndarray | None:
        if skews is None:
            return None
        mask = np.ones(size, dtype=bool)
        for has_key, too_skewed in skews:
            mask &= has_key & ~too_skewed
        return mask

    def failure_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> list[Status]:
        skews = self._skews(state, pod, snapshot)
        if skews is None:
            nodes = snapshot.node_infos
            return [self.filter(state, pod, nodes[int(i)]) or Status(Code.SUCCESS) for i in idx]
        statuses = (Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME),
                    Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME))
        return [statuses[r] for r in vec.first_failure(skews, idx).tolist()]

    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        s = state.read(PRE_SCORE_STATE_KEY)
        nodes = snapshot.node_infos
        if not isinstance(s, PreScoreState):
            return np.array([self.score(state, pod, nodes[int(i)]) for i in idx], dtype=np.int64)
        valid = None
        if s.ignored_nodes:
            valid = np.array([nodes[int(i)].name not in s.ignored_nodes for i in idx], dtype=bool)
        s.scored_valid = valid  # for normalize_vector, which sees the scores only
        table = table_of(snapshot)
        scores = None if table is None else vec.spread_scores(
            table, s.constraints, s.counts, s.weights, pod.namespace, idx, LABEL_HOSTNAME)
        if scores is None:
            return np.array([self.score(state, pod, nodes[int(i)]) for i in idx], dtype=np.int64)
        if valid is not None:
            scores[~valid] = 0
        return scores

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return scores
        return vec.normalize(scores, s.scored_valid)
