"""Parsed pod (anti-)affinity terms and topology-pair counters (upstream ``framework.AffinityTerm`` /
``PodInfo`` term parsing): InterPodAffinity's, also read by the scheduler when an assigned pod may
unblock pods with required pod affinity, and by ``explain``'s hints.

Terms are parsed once per pod and memoised in ``PodInfo.cache`` under :data:`TERMS_CACHE_KEY`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.selectors import LabelSelector
from kubesched.scheduler.framework.interface import Handle
from kubesched.scheduler.framework.types import PodInfo

TERMS_CACHE_KEY = "InterPodAffinity/terms"

#: maps a namespace name to its labels (``{}`` when unknown)
NamespaceLabels = Callable[[str], Mapping[str, str]]

TopologyPair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A processed ``PodAffinityTerm``.

    ``namespaces`` is the explicit list, or the owning pod's namespace when neither ``namespaces``
    nor ``namespaceSelector`` is given. ``ns_selector`` is the namespaceSelector (nil = none,
    ``{}`` = every namespace); a pod's namespace qualifies if it is listed or its labels match.
    """

    selector: LabelSelector
    namespaces: frozenset[str]
    ns_selector: LabelSelector
    topology_key: str

    def matches(self, pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
        """Upstream ``AffinityTerm.Matches``: namespace qualifies and labels match the selector.

        ``ns_labels`` is only consulted when the namespace is not listed and the namespace
        selector is neither nil nor empty."""
        if pod.namespace not in self.namespaces:
            sel = self.ns_selector
            if sel.is_nil:
                return False
            if not sel.is_empty and not sel.matches(ns_labels(pod.namespace)):
                return False
        return self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    weight: int
    term: AffinityTerm


@dataclass(frozen=True, slots=True)
class PodTerms:
    """All (anti-)affinity terms of one pod. A category whose parsing failed is empty and the
    failure is listed in ``errors`` (upstream drops the whole category on the first bad term)."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    errors: tuple[str, ...] = ()


_NO_TERMS = PodTerms()


def aggregate_message(errors: tuple[str, ...] | list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several (deduplicated) joined
    with ", " inside brackets."""
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def _new_term(namespace: str, raw: Mapping[str, Any]) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise ValueError("pod affinity term must be a mapping")
    selector = LabelSelector.from_dict(raw.get("labelSelector"))
    raw_ns_selector = raw.get("namespaceSelector")
    ns_selector = LabelSelector.from_dict(raw_ns_selector)
    listed = raw.get("namespaces") or []
    namespaces = frozenset([namespace]) if not listed and raw_ns_selector is None else frozenset(listed)
    return AffinityTerm(selector, namespaces, ns_selector, str(raw.get("topologyKey") or ""))


def _required(namespace: str, raws: Any) -> tuple[AffinityTerm, ...]:
    return tuple(_new_term(namespace, raw) for raw in raws or ())


def _preferred(namespace: str, raws: Any) -> tuple[WeightedTerm, ...]:
    out = []
    for raw in raws or ():
        if not isinstance(raw, Mapping):
            raise ValueError("weighted pod affinity term must be a mapping")
        out.append(WeightedTerm(int(raw.get("weight") or 0), _new_term(namespace, raw.get("podAffinityTerm") or {})))
    return tuple(out)


def parse_pod_terms(pod: PodInfo) -> PodTerms:
    """The pod's terms (memoised in ``pod.cache``)."""
    cached = pod.cache.get(TERMS_CACHE_KEY)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    affinity = pod.spec.get("affinity") or {}
    pa = affinity.get("podAffinity") or {}
    paa = affinity.get("podAntiAffinity") or {}
    if not pa and not paa:
        pod.cache[TERMS_CACHE_KEY] = _NO_TERMS
        return _NO_TERMS
    ns = pod.namespace
    errors: list[str] = []
    parts: list[Any] = []
    sources = (
        ("requiredAffinityTerms", _required, pa, "requiredDuringSchedulingIgnoredDuringExecution"),
        ("requiredAntiAffinityTerms", _required, paa, "requiredDuringSchedulingIgnoredDuringExecution"),
        ("preferredAffinityTerms", _preferred, pa, "preferredDuringSchedulingIgnoredDuringExecution"),
        ("preferredAntiAffinityTerms", _preferred, paa, "preferredDuringSchedulingIgnoredDuringExecution"),
    )
    for label, parse, section, field in sources:
        try:
            parts.append(parse(ns, section.get(field)))
        except (ValueError, TypeError) as err:
            errors.append(f"{label}: {err}")
            parts.append(())
    terms = PodTerms(parts[0], parts[1], parts[2], parts[3], tuple(errors))
    pod.cache[TERMS_CACHE_KEY] = terms
    return terms


def namespace_labels_lookup(handle: Handle) -> NamespaceLabels:
    """A memoising ``namespace -> labels`` function over ``handle.namespace_labels`` (one per cycle)."""
    memo: dict[str, Mapping[str, str]] = {}

    def lookup(namespace: str) -> Mapping[str, str]:
        labels = memo.get(namespace)
        if labels is None:
            labels = handle.namespace_labels(namespace) or {}
            memo[namespace] = labels
        return labels

    return lookup


def pod_matches_all_terms(terms: tuple[AffinityTerm, ...], pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: False for no terms."""
    if not terms:
        return False
    return all(t.matches(pod, ns_labels) for t in terms)


class PairCounts(dict[TopologyPair, int]):
    """``topologyToMatchedTermCount``: (topologyKey, value) -> count; zero entries are dropped."""

    def bump(self, node_labels: Mapping[str, str], key: str, delta: int) -> None:
        value = node_labels.get(key)
        if value is None:
            return
        pair = (key, value)
        total = self.get(pair, 0) + delta
        if total == 0:
            self.pop(pair, None)
        else:
            self[pair] = total

    def add_affinity(
        self,
        terms: tuple[AffinityTerm, ...],
        pod: PodInfo,
        ns_labels: NamespaceLabels,
        node_labels: Mapping[str, str],
        delta: int,
    ) -> None:
        """If ``pod`` matches *all* ``terms``, count it once per term's topology pair."""
        if pod_matches_all_terms(terms, pod, ns_labels):
            for t in terms:
                self.bump(node_labels, t.topology_key, delta)

    def add_anti_affinity(
        self,
        terms: tuple[AffinityTerm, ...],
        pod: PodInfo,
        ns_labels: NamespaceLabels,
        node_labels: Mapping[str, str],
        delta: int,
    ) -> None:
        """Count ``pod`` once per term it matches, at that term's topology pair."""
        for t in terms:
            if t.matches(pod, ns_labels):
                self.bump(node_labels, t.topology_key, delta)

    def copy(self) -> PairCounts:
        return PairCounts(self)
