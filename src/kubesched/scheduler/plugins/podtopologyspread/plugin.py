"""PodTopologySpread: hard spread constraints as a filter, soft ones as a score
(upstream ``pkg/scheduler/framework/plugins/podtopologyspread``, v1.28 semantics with
MinDomains, MatchLabelKeys and NodeInclusionPolicy enabled).

PreFilter and PreScore count matching pods over the node table when it can answer, and Filter,
Score and NormalizeScore also come as vector forms (see ``_topology_spread_vector``); the per-node
methods stay the reference (and serve explanations and dry runs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.selectors import LabelSelector, Requirement, pod_matches_node_selector_and_affinity
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.k8s.objects import Obj, namespace_of
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
    FailureStatusesVector,
    FilterPlugin,
    FilterVector,
    FilterVectorAt,
    Handle,
    NodeTableSnapshot,
    NormalizeVector,
    PodMovesNeutral,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    ScoreVector,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.nodetable import labels_key
from kubesched.scheduler.plugins.helpers import table_of
from kubesched.scheduler.plugins.podtopologyspread import vector as vec

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
_MAX_INT32 = 2**31 - 1
_DO_NOT_SCHEDULE_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
_ARG_KEYS = frozenset({"defaultConstraints", "defaultingType", "apiVersion", "kind"})

SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed ``TopologySpreadConstraint`` of one action (upstream ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def count_pods_matching(pods: Sequence[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """Matching pods of ``namespace``, not terminating. An empty (or nil) selector counts 0."""
    if selector.is_empty:
        return 0
    return sum(1 for p in pods if not p.deleting and p.namespace == namespace and selector.matches(p.labels))


def _has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class NodeInclusion:
    """Evaluates nodeAffinityPolicy / nodeTaintsPolicy for one incoming pod, memoised per node (the
    vector form narrows whole columns with it)."""

    __slots__ = ("pod", "trivial_affinity", "_affinity", "_taints")

    def __init__(self, pod: PodInfo) -> None:
        spec = pod.spec
        self.pod = pod
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        self.trivial_affinity = not spec.get("nodeSelector") and node_affinity.get(
            "requiredDuringSchedulingIgnoredDuringExecution") is None
        self._affinity: dict[str, bool] = {}
        self._taints: dict[str, bool] = {}

    def affinity_ok(self, node: NodeInfo) -> bool:
        """The pod's nodeSelector and required node affinity accept the node."""
        ok = self._affinity.get(node.name)
        if ok is None:
            ok = pod_matches_node_selector_and_affinity(self.pod.obj, node.node or {})
            self._affinity[node.name] = ok
        return ok

    def taints_ok(self, node: NodeInfo) -> bool:
        """The pod tolerates the node's NoSchedule and NoExecute taints."""
        tolerated = self._taints.get(node.name)
        if tolerated is None:
            tolerated = find_untolerated_taint(
                node.taints, self.pod.tolerations, _DO_NOT_SCHEDULE_TAINT_EFFECTS) is None
            self._taints[node.name] = tolerated
        return tolerated

    def matches(self, c: Constraint, node: NodeInfo) -> bool:
        if c.node_affinity_policy == HONOR and not self.trivial_affinity and not self.affinity_ok(node):
            return False
        if c.node_taints_policy == HONOR and node.taints and not self.taints_ok(node):
            return False
        return True


class _CriticalPaths:
    """The two topology values with the fewest matching pods (upstream ``criticalPaths``);
    ``num[0]`` is the global minimum as long as updates touch one domain at a time."""

    __slots__ = ("value", "num")

    def __init__(self) -> None:
        self.value = ["", ""]
        self.num = [_MAX_INT32, _MAX_INT32]

    def copy(self) -> _CriticalPaths:
        other = _CriticalPaths()
        other.value = list(self.value)
        other.num = list(self.num)
        return other

    def update(self, value: str, num: int) -> None:
        v, n = self.value, self.num
        i = 0 if value == v[0] else 1 if value == v[1] else -1
        if i >= 0:
            n[i] = num
            if n[0] > n[1]:
                v[0], v[1] = v[1], v[0]
                n[0], n[1] = n[1], n[0]
        elif num < n[0]:
            v[1], n[1] = v[0], n[0]
            v[0], n[0] = value, num
        elif num < n[1]:
            v[1], n[1] = value, num


@dataclass(slots=True)
class PreFilterState:
    constraints: tuple[Constraint, ...]
    counts: list[dict[str, int]]  # per constraint: topology value -> matching pods
    paths: list[_CriticalPaths]
    domains: list[int]  # per constraint: number of eligible domains (fixed at PreFilter)
    inclusion: NodeInclusion
    #: kind of pod (:func:`labels_key`) -> the constraints whose selector matches it (shared by clones)
    selected: dict[Any, tuple[int, ...]] = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints, [dict(m) for m in self.counts], [p.copy() for p in self.paths],
            self.domains, self.inclusion, self.selected,
        )

    def selecting(self, pod: PodInfo) -> tuple[int, ...]:
        """The constraints whose selector matches ``pod``'s labels, worked out once per kind of pod."""
        kind = labels_key(pod)
        hit = self.selected.get(kind)
        if hit is None:
            hit = self.selected[kind] = tuple(i for i, c in enumerate(self.constraints)
                                              if c.selector.matches(pod.labels))
        return hit

    def counted_on_node(self, preemptor: PodInfo, node: NodeInfo) -> tuple[int, ...]:
        """The constraints under which ``node`` counts pods of the preemptor's namespace (none when
        the node lacks a topology key or is not found)."""
        if node.node is None or not _has_all_keys(node.labels or {}, self.constraints):
            return ()
        return tuple(i for i, c in enumerate(self.constraints) if self.inclusion.matches(c, node))

    def min_match(self, i: int) -> int:
        if self.domains[i] < self.constraints[i].min_domains:
            return 0  # fewer eligible domains than minDomains: the global minimum is 0
        return self.paths[i].num[0]

    def counted(self, updated: PodInfo, preemptor: PodInfo, node: NodeInfo) -> list[int]:
        """The constraints whose counts ``updated`` adds to on ``node`` (AddPod / RemovePod)."""
        if updated.namespace != preemptor.namespace:
            return []
        selecting = self.selecting(updated)
        if not selecting:
            return []
        return [i for i in self.counted_on_node(preemptor, node) if i in selecting]

    def update_with_pod(self, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int) -> None:
        labels = node.labels or {}
        for i in self.counted(updated, preemptor, node):
            c = self.constraints[i]
            value = labels[c.topology_key]
            num = self.counts[i].get(value, 0) + delta
            self.counts[i][value] = num
            self.paths[i].update(value, num)


@dataclass(slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    ignored_nodes: set[str]
    counts: list[dict[str, int]]  # per constraint (non-hostname): topology value -> matching pods
    weights: list[float]
    scored_valid: np.ndarray | None = None  # not ignored, per node of the last score_vector call

    def clone(self) -> PreScoreState:
        return self


def _round_half_away(x: float) -> int:
    """Go ``math.Round`` for non-negative values."""
    r = math.floor(x)
    return int(r + 1 if x - r >= 0.5 else r)


def _parse_args(args: Mapping[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    unknown = sorted(set(args) - _ARG_KEYS)
    if unknown:
        raise ValueError(f"PodTopologySpreadArgs: unknown field(s) {', '.join(map(repr, unknown))}")
    defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
    constraints = args.get("defaultConstraints") or []
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ValueError(f'PodTopologySpreadArgs.defaultingType: Unsupported value: "{defaulting}": '
                         'supported values: "System", "List"')
    if not isinstance(constraints, list) or not all(isinstance(c, Mapping) for c in constraints):
        raise ValueError("PodTopologySpreadArgs.defaultConstraints: must be a list of constraints")
    if defaulting == SYSTEM_DEFAULTING and constraints:
        raise ValueError('PodTopologySpreadArgs.defaultingType: Invalid value: "System": '
                         "when .defaultConstraints are not empty")
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        path = f"PodTopologySpreadArgs.defaultConstraints[{i}]"
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            raise ValueError(f"{path}.maxSkew: Invalid value: {skew!r}: not in valid range (0, inf)")
        if not c.get("topologyKey") or not isinstance(c.get("topologyKey"), str):
            raise ValueError(f"{path}.topologyKey: Required value: can not be empty")
        action = c.get("whenUnsatisfiable")
        if action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(f'{path}.whenUnsatisfiable: Unsupported value: "{action}": '
                             'supported values: "DoNotSchedule", "ScheduleAnyway"')
        min_domains = c.get("minDomains")
        if min_domains is not None and (isinstance(min_domains, bool) or not isinstance(min_domains, int)):
            raise ValueError(f"{path}.minDomains: Invalid value: {min_domains!r}: must be an integer")
        if c.get("labelSelector") is not None:
            raise ValueError(f"{path}.labelSelector: Forbidden: constraint must not define a selector, "
                             "as they deduced for each pod")
        pair = (c["topologyKey"], action)
        if pair in seen:
            raise ValueError(f"PodTopologySpreadArgs.defaultConstraints[{i}]: Duplicate value: "
                             f'{{{pair[0]}, {pair[1]}}}')
        seen.add(pair)
    if defaulting == SYSTEM_DEFAULTING:
        return [dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS], True
    return [dict(c) for c in constraints], False


def _parse_constraints(raw: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str],
                       action: str) -> list[Constraint]:
    """Upstream ``filterTopologySpreadConstraints``: the constraints of ``action``, with
    matchLabelKeys merged into the selector and unset fields defaulted."""
    out: list[Constraint] = []
    for c in raw:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = LabelSelector.from_dict(c.get("labelSelector"))
        extra = [Requirement(k, "In", frozenset([pod_labels[k]]))
                 for k in c.get("matchLabelKeys") or () if k in pod_labels]
        if extra and not selector.is_nil:
            selector = LabelSelector(selector.match_labels, tuple(extra) + selector.requirements)
        min_domains = c.get("minDomains")
        out.append(Constraint(
            max_skew=int(c.get("maxSkew") or 0),
            topology_key=str(c.get("topologyKey") or ""),
            selector=selector,
            min_domains=1 if min_domains is None else int(min_domains),
            node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
            node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE,
        ))
    return out


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
        self.default_constraints, self.system_defaulted = _parse_args(args or {})
        # the default constraints have no selector (each pod's is worked out for it), so they read
        # the same for every pod: parsed once per whenUnsatisfiable
        self._defaults = {action: _parse_constraints(self.default_constraints, {}, action)
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
            return _parse_constraints(own, pod.labels, action)
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
            if not _has_all_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not inclusion.matches(c, node):
                    continue
                value = labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + count_pods_matching(
                    node.pods, c.selector, pod.namespace)
        paths = []
        for per_value in counts:
            p = _CriticalPaths()
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
            if require_all and not _has_all_keys(labels, constraints):
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
            if require_all and not _has_all_keys(labels, constraints):
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
