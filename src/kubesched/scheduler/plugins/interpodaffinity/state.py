"""InterPodAffinity's cycle state: the three PreFilter counters (see the package), kept up to date
by AddPod / RemovePod, and the PreScore topology score with the :class:`Scorer` that sums it pod by
pod."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.affinityterms import (
    AffinityTerm,
    NamespaceLabels,
    PairCounts,
    PodTerms,
    WeightedTerm,
    parse_pod_terms,
    pod_matches_all_terms,
)
from kubesched.scheduler.plugins.interpodaffinity.vector import CodeCounts
from kubesched.scheduler.podgroups import affinity_key, labels_key


def node_labels(node: NodeInfo) -> Mapping[str, str]:
    """The node's labels, empty when it has none."""
    return node.labels or {}


@dataclass(slots=True)
class PreFilterState:
    incoming: PodInfo
    terms: PodTerms
    ns_labels: dict[str, str]  # the incoming pod's namespace labels
    lookup: NamespaceLabels  # namespace labels for the incoming pod's namespace selectors
    #: existing_anti, affinity, anti as (topologyKey, value) -> count, built on first use
    counts: list[PairCounts] | None = None
    #: the same counts by label code, from the node table; dropped once a pod is added or removed
    codes: tuple[CodeCounts, CodeCounts, CodeCounts] | None = None
    #: per kind of pod (labels and terms alike): see :meth:`keys_counting`
    _counting: dict[Any, tuple[frozenset[str], tuple[str, ...]]] = field(default_factory=dict)

    def _dicts(self) -> list[PairCounts]:
        if self.counts is None:
            self.counts = [c.pairs() for c in self.codes] if self.codes is not None else [
                PairCounts(), PairCounts(), PairCounts()]
        return self.counts

    @property
    def existing_anti(self) -> PairCounts:
        return self._dicts()[0]

    @property
    def affinity(self) -> PairCounts:
        return self._dicts()[1]

    @property
    def anti(self) -> PairCounts:
        return self._dicts()[2]

    def has(self, which: int) -> bool:
        """Whether counter ``which`` (0: existing_anti, 1: affinity, 2: anti) has any pair."""
        if self.counts is None and self.codes is not None:
            return bool(self.codes[which])
        return bool(self._dicts()[which])

    def clone(self) -> PreFilterState:
        if self.counts is None and self.codes is not None:
            # clones are made to have pods added and removed (a preemption dry run clones one per
            # node): turn the codes into pairs once here, each clone then copies the dicts
            self._dicts()
        counts = None if self.counts is None else [c.copy() for c in self.counts]
        return PreFilterState(self.incoming, self.terms, self.ns_labels, self.lookup, counts, self.codes)

    def own_ns(self, _namespace: str) -> Mapping[str, str]:
        return self.ns_labels

    def keys_counting(self, pod: PodInfo) -> tuple[frozenset[str], tuple[str, ...]]:
        """The topology keys under which the counters would count ``pod`` on a node having them:
        its own anti-affinity terms matching the incoming pod and the incoming pod's anti-affinity
        terms matching it; and the affinity terms' keys if it matches all of them (else none).
        Worked out once per kind of pod (alike labels, namespace and terms)."""
        kind = (labels_key(pod), affinity_key(pod) if pod.has_affinity else None)
        hit = self._counting.get(kind)
        if hit is None:
            anti = {t.topology_key for t in parse_pod_terms(pod).required_anti_affinity
                    if t.matches(self.incoming, self.own_ns)}
            anti.update(t.topology_key for t in self.terms.required_anti_affinity if t.matches(pod, self.lookup))
            affinity = self.terms.required_affinity
            hit = self._counting[kind] = (frozenset(anti), tuple(t.topology_key for t in affinity)
                                          if pod_matches_all_terms(affinity, pod, self.lookup) else ())
        return hit

    def update_with_pod(self, pod: PodInfo, node: NodeInfo, delta: int) -> None:
        """Account ``pod`` (added or removed on ``node``) in the three counters."""
        existing_anti, affinity, anti = self._dicts()
        self.codes = None
        labels = node_labels(node)
        existing_anti.add_anti_affinity(
            parse_pod_terms(pod).required_anti_affinity, self.incoming, self.own_ns, labels, delta
        )
        affinity.add_affinity(self.terms.required_affinity, pod, self.lookup, labels, delta)
        anti.add_anti_affinity(self.terms.required_anti_affinity, pod, self.lookup, labels, delta)


@dataclass(slots=True)
class PreScoreState:
    topology_score: dict[str, dict[str, int]]

    def clone(self) -> PreScoreState:
        return self


class Scorer:
    """Accumulates upstream's ``topologyScore`` (topologyKey -> value -> score)."""

    __slots__ = ("terms", "pod", "ns_labels", "lookup", "hard_weight", "topology_score")

    def __init__(self, terms: PodTerms, pod: PodInfo, ns_labels: dict[str, str], lookup: NamespaceLabels,
                 hard_weight: int) -> None:
        self.terms = terms
        self.pod = pod
        self.ns_labels = ns_labels
        self.lookup = lookup
        self.hard_weight = hard_weight
        self.topology_score: dict[str, dict[str, int]] = {}

    def own_ns(self, _namespace: str) -> Mapping[str, str]:
        return self.ns_labels

    def _term(self, term: AffinityTerm, weight: int, target: PodInfo, ns: NamespaceLabels,
              labels: Mapping[str, str]) -> None:
        if term.matches(target, ns):
            value = labels.get(term.topology_key)
            if value is not None:
                per_key = self.topology_score.setdefault(term.topology_key, {})
                per_key[value] = per_key.get(value, 0) + weight

    def _terms(self, terms: tuple[WeightedTerm, ...], target: PodInfo, ns: NamespaceLabels,
               labels: Mapping[str, str], sign: int) -> None:
        for wt in terms:
            self._term(wt.term, wt.weight * sign, target, ns, labels)

    def process_existing_pod(self, existing: PodInfo, labels: Mapping[str, str]) -> None:
        incoming = self.pod
        # The incoming pod's preferred terms matched against the existing pod.
        self._terms(self.terms.preferred_affinity, existing, self.lookup, labels, 1)
        self._terms(self.terms.preferred_anti_affinity, existing, self.lookup, labels, -1)
        # The existing pod's terms matched against the incoming pod.
        other = parse_pod_terms(existing)
        if self.hard_weight > 0:
            for term in other.required_affinity:
                self._term(term, self.hard_weight, incoming, self.own_ns, labels)
        self._terms(other.preferred_affinity, incoming, self.own_ns, labels, 1)
        self._terms(other.preferred_anti_affinity, incoming, self.own_ns, labels, -1)
