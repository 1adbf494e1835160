"""The InterPodAffinity plugin: PreFilter counts (from the node table's pod groups when it can
answer, else pod by pod), Filter per node and over the node table, PreScore / Score /
NormalizeScore."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.scheduler.framework.capabilities import FailureStatusesVector, FilterVector, PodMovesNeutral
from kubesched.scheduler.framework.interface import (
    ADD,
    ALL,
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
from kubesched.scheduler.plugins.affinityterms import (
    PairCounts,
    PodTerms,
    aggregate_message,
    namespace_labels_lookup,
    parse_pod_terms,
    pod_matches_all_terms,
)
from kubesched.scheduler.plugins.helpers import table_of
from kubesched.scheduler.plugins.interpodaffinity import vector
from kubesched.scheduler.plugins.interpodaffinity.state import (
    PreFilterState,
    PreScoreState,
    Scorer,
    node_labels,
)

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
_ARG_KEYS = frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods", "apiVersion", "kind"})


def _validate_args(args: Mapping[str, Any]) -> tuple[int, bool]:
    unknown = sorted(set(args) - _ARG_KEYS)
    if unknown:
        raise ValueError(f"InterPodAffinityArgs: unknown field(s) {', '.join(map(repr, unknown))}")
    weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    if weight is None:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise ValueError(f"InterPodAffinityArgs.hardPodAffinityWeight: must be an integer, got {weight!r}")
    if weight < 0 or weight > 100:
        raise ValueError(f"InterPodAffinityArgs.hardPodAffinityWeight: Invalid value: {weight}: "
                         "not in valid range [0, 100]")
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if ignore is None:
        ignore = False
    if not isinstance(ignore, bool):
        raise ValueError("InterPodAffinityArgs.ignorePreferredTermsOfExistingPods: must be a boolean, "
                         f"got {ignore!r}")
    return weight, ignore


class InterPodAffinity(
    PreFilterPlugin, PreFilterExtensions, FilterPlugin, FilterVector, FailureStatusesVector, PodMovesNeutral,
    PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions,
):
    name = NAME

    def __init__(self, args: dict[str, Any] | None, handle: Handle) -> None:
        self.hard_pod_affinity_weight, self.ignore_preferred_terms_of_existing_pods = _validate_args(args or {})
        self.handle = handle
        #: count pod by pod only (the reference the grouped counts are tested against)
        self.per_pod = False

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", ALL), ClusterEvent("Node", ADD | UPDATE_NODE_LABEL)]

    # -- PreFilter / extensions ------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        terms = parse_pod_terms(pod)
        if terms.errors:
            return None, Status.unresolvable(f"parsing pod: {aggregate_message(terms.errors)}", plugin=NAME)
        snapshot = self.handle.snapshot()
        ns_labels = dict(self.handle.namespace_labels(pod.namespace) or {})
        s = PreFilterState(pod, terms, ns_labels, namespace_labels_lookup(self.handle))
        if not self.per_pod:
            s.codes = vector.pre_filter_counts(snapshot, pod, terms, s.own_ns, s.lookup)
            if s.codes is not None:
                return self._pre_filter_done(state, s, terms)

        # Existing pods' required anti-affinity terms that match the incoming pod.
        for node in snapshot.have_pods_with_required_anti_affinity:
            if node.node is None:
                continue
            labels = node_labels(node)
            for existing in node.pods_with_required_anti_affinity:
                s.existing_anti.add_anti_affinity(
                    parse_pod_terms(existing).required_anti_affinity, pod, s.own_ns, labels, 1
                )

        # Existing pods matching the incoming pod's required (anti-)affinity terms.
        if terms.required_affinity or terms.required_anti_affinity:
            for node in snapshot.node_infos:
                if node.node is None:
                    continue
                labels = node_labels(node)
                for existing in node.pods:
                    s.affinity.add_affinity(terms.required_affinity, existing, s.lookup, labels, 1)
                    s.anti.add_anti_affinity(terms.required_anti_affinity, existing, s.lookup, labels, 1)
        return self._pre_filter_done(state, s, terms)

    @staticmethod
    def _pre_filter_done(state: CycleState, s: PreFilterState, terms: PodTerms
                         ) -> tuple[PreFilterResult | None, Status | None]:
        if not s.has(0) and not terms.required_affinity and not terms.required_anti_affinity:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def _filter_state(self, state: CycleState) -> PreFilterState | Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        return s

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        s = self._filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add, node, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        s = self._filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove, node, -1)
        return None

    def unaffected_by(self, state: CycleState, pod: PodInfo, node: NodeInfo, pods: Sequence[PodInfo]) -> bool:
        """Filter's verdict holds whatever of ``pods`` come and go, in two cases. None of them is
        counted on ``node``: the three counters stay as they are. Or the node passes as it is, the
        pods not on it (nominated ones, which may only come) are not counted, and the affinity
        terms still find a matching pod in the node's domains with every one of the pods on the
        node gone: taking pods off can only lower the anti-affinity counts (a pass stays a pass)
        and putting them back only raises the affinity counts."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return False
        labels = node_labels(node)
        on_node: set[str] | None = None
        gone = PairCounts()  # the affinity counts of the node's domains its counted pods take away
        for p in pods:
            anti_keys, affinity_keys = s.keys_counting(p)
            if not any(k in labels for k in anti_keys) and not any(k in labels for k in affinity_keys):
                continue  # not counted on this node
            if on_node is None:
                if self.filter(state, pod, node) is not None:
                    return False
                on_node = {q.uid for q in node.pods}
            if p.uid not in on_node:
                return False
            for key in affinity_keys:
                gone.bump(labels, key, 1)
        if not gone:
            return True  # nothing counted, or only anti-affinity counts fall
        # the node passed as it is, so it has every key and (gone being non-empty) the pods matched
        # there: the affinity must still find some after they are all gone
        return all(s.affinity.get(pair, 0) - gone.get(pair, 0) > 0
                   for term in s.terms.required_affinity
                   for pair in [(term.topology_key, labels[term.topology_key])])

    # -- Filter ----------------------------------------------------------------------------
    def _verdicts(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        """Per node, which of Filter's three checks fails first (0: affinity, 1: anti-affinity,
        2: existing pods' anti-affinity, 3: none), from the PreFilter counts and the node table's
        label columns; None where that cannot be done exactly (the per-node path answers)."""
        s = state.read(PRE_FILTER_STATE_KEY)
        table = table_of(snapshot)
        if not isinstance(s, PreFilterState) or table is None:
            return None
        n = len(snapshot.node_infos)
        verdict = np.full(n, 3, dtype=np.int8)
        codes = s.codes
        # existing pods' anti-affinity: any of the node's (key, value) pairs with a count
        existing = (vector.codes_mask(table, codes[0], None, n) if codes is not None
                    else vector.pairs_mask(table, s.existing_anti, None, n))
        if existing is None:
            return None
        verdict[existing] = 2
        # the pod's anti-affinity: per term, the node's value of its key with a count
        if s.has(2):
            keys = {t.topology_key for t in s.terms.required_anti_affinity}
            anti = vector.codes_mask(table, codes[2], keys, n) if codes is not None else vector.pairs_mask(table, s.anti, keys, n)
            if anti is None:
                return None
            verdict[anti] = 1
        # the pod's affinity: every key present, and pods matching in each term's domain
        if s.terms.required_affinity:
            has_keys = np.ones(n, dtype=bool)
            pods_exist = np.ones(n, dtype=bool)
            for term in s.terms.required_affinity:
                column = table.label_column(term.topology_key)
                if column is None:
                    return None
                has_keys &= column.codes >= 0
                matched = codes[1].positive(table, term.topology_key) if codes is not None else None
                if matched is None:
                    matched = np.zeros(len(column.values) + 1, dtype=bool)  # the last entry: key absent
                    for (key, value), count in s.affinity.items():
                        code = column.code.get(value) if key == term.topology_key else None
                        if code is not None and count > 0:
                            matched[code] = True
                pods_exist &= matched[column.codes]
            if not pods_exist.all() and not s.has(1) and pod_matches_all_terms(
                    s.terms.required_affinity, pod, s.lookup):
                pods_exist[:] = True  # the first pod of a group with affinity to itself
            verdict[~(has_keys & pods_exist)] = 0
        return verdict

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        verdict = self._verdicts(state, pod, snapshot)
        return None if verdict is None else verdict == 3

    def failure_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> list[Status]:
        verdict = self._verdicts(state, pod, snapshot)
        if verdict is None:
            nodes = snapshot.node_infos
            return [self.filter(state, pod, nodes[int(i)]) or Status(Code.SUCCESS) for i in idx]
        statuses = (Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME),
                    Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME),
                    Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME))
        return [statuses[int(v)] for v in verdict[idx]]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is None:
            return Status.error("node not found", NAME)
        s = self._filter_state(state)
        if isinstance(s, Status):
            return s
        labels = node_labels(node)
        if not _satisfy_pod_affinity(s, pod, labels):
            return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
        if not _satisfy_pod_anti_affinity(s, labels):
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
        if not _satisfy_existing_pods_anti_affinity(s, labels):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
        return None

    # -- Score -----------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status | None:
        if not nodes:
            return Status.skip()
        affinity = pod.spec.get("affinity") or {}
        has_preferred = bool(
            ((affinity.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
            or ((affinity.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
        )
        if self.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return Status.skip()
        terms = parse_pod_terms(pod)
        if terms.errors:
            return Status.error(f"failed to parse pod: {aggregate_message(terms.errors)}", NAME)
        snapshot = self.handle.snapshot()
        ns_labels = dict(self.handle.namespace_labels(pod.namespace) or {})
        scorer = Scorer(terms, pod, ns_labels, namespace_labels_lookup(self.handle), self.hard_pod_affinity_weight)
        if self.per_pod or not vector.topology_score(snapshot, pod, terms, scorer.own_ns, scorer.lookup,
                                                      self.hard_pod_affinity_weight, has_preferred,
                                                      scorer.topology_score):
            scorer.topology_score.clear()
            all_nodes = snapshot.node_infos if has_preferred else snapshot.have_pods_with_affinity
            self._score_per_pod(scorer, all_nodes, has_preferred)
        if not scorer.topology_score:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(scorer.topology_score))
        return None

    @staticmethod
    def _score_per_pod(scorer: Scorer, all_nodes: list[NodeInfo], has_preferred: bool) -> None:
        for node in all_nodes:
            if node.node is None:
                continue
            labels = node_labels(node)
            if not labels:
                continue
            for existing in node.pods if has_preferred else node.pods_with_affinity:
                scorer.process_existing_pod(existing, labels)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return 0
        labels = node_labels(node)
        total = 0
        for key, values in s.topology_score.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], scores: list[int]) -> None:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState) or not s.topology_score or not scores:
            return
        lo = min(scores)
        diff = max(scores) - lo
        for i, raw in enumerate(scores):
            scores[i] = int(float(MAX_NODE_SCORE) * ((raw - lo) / diff)) if diff > 0 else 0


def _satisfy_pod_affinity(s: PreFilterState, pod: PodInfo, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for term in s.terms.required_affinity:
        value = labels.get(term.topology_key)
        if value is None:
            return False  # every topology key must exist on the node
        if s.affinity.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # First pod of a group with affinity to itself: nothing in the cluster matches yet and the
    # pod matches its own terms -> any node that has all topology keys is fine.
    return not s.affinity and pod_matches_all_terms(s.terms.required_affinity, pod, s.lookup)


def _satisfy_pod_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    if s.anti:
        for term in s.terms.required_anti_affinity:
            value = labels.get(term.topology_key)
            if value is not None and s.anti.get((term.topology_key, value), 0) > 0:
                return False
    return True


def _satisfy_existing_pods_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    if s.existing_anti:
        for pair in labels.items():
            if s.existing_anti.get(pair, 0) > 0:
                return False
    return True
