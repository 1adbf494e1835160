"""InterPodAffinity's PreFilter and PreScore counts from the node table's pod groups.

Pods with the same namespace and labels match any term alike, and pods whose (anti-)affinity is
written alike match any incoming pod alike; the node table keeps, per such group, how many of its
pods each node holds. A term is then matched once per group, and the group's per-node counts are
summed per topology value with ``np.bincount`` over the key's label column. Each function fills the
same counters as the per-pod loops of the plugin (:mod:`.plugin`), exactly, or returns False
(leaving them to be rebuilt by those loops) when the table cannot answer. Filter's vector form
reads the counters through :func:`pairs_mask` and :func:`codes_mask`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import numpy as np

from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.views import LabelColumnView, NodeTableSnapshot, NodeTableView
from kubesched.scheduler.plugins.affinityterms import (
    AffinityTerm,
    NamespaceLabels,
    PairCounts,
    PodTerms,
    WeightedTerm,
    parse_pod_terms,
    pod_matches_all_terms,
)
from kubesched.scheduler.plugins.helpers import table_of


class _GroupPod:
    """What a term reads of a pod (its namespace and labels), for a whole group of pods."""

    __slots__ = ("namespace", "labels")

    def __init__(self, namespace: str, labels: dict[str, str]) -> None:
        self.namespace = namespace
        self.labels = labels


def _sums_by_code(table: NodeTableView, key: str, where: np.ndarray, counts: np.ndarray
                  ) -> tuple[LabelColumnView, np.ndarray] | None:
    """The key's label column and, per value code (plus a last entry, 0, for nodes without the
    key), the pods of ``counts`` on the nodes ``where``; None when the column cannot be built."""
    column = table.label_column(key)
    if column is None:
        return None
    codes = column.codes[where]
    present = codes >= 0
    sums = np.bincount(codes[present], weights=counts[present], minlength=len(column.values) + 1)
    return column, sums.astype(np.int64)


def _per_value(table: NodeTableView, key: str, where: np.ndarray, counts: np.ndarray
               ) -> list[tuple[str, int]] | None:
    """``(value of key, pods)`` for the nodes ``where`` holding ``counts`` pods, nodes without the
    key left out; None when the key's column cannot be built."""
    found = _sums_by_code(table, key, where, counts)
    if found is None:
        return None
    column, sums = found
    return [(column.values[code], int(sums[code])) for code in np.flatnonzero(sums).tolist()]


class CodeCounts:
    """Pod counts per (topologyKey, value) held as one array per key, indexed by the label column's
    value codes (the last entry, always 0, stands for nodes without the key): what PreFilter counts,
    in the form the vector Filter reads; :meth:`pairs` gives the dict the per-node Filter reads."""

    __slots__ = ("arrays", "values")

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.values: dict[str, list[str]] = {}

    def add(self, table: NodeTableView, key: str, where: np.ndarray, counts: np.ndarray) -> bool:
        found = _sums_by_code(table, key, where, counts)
        if found is None:
            return False
        column, added = found
        before = self.arrays.get(key)
        self.arrays[key] = added if before is None else before + added
        self.values[key] = column.values
        return True

    def __bool__(self) -> bool:
        return any(bool(array.any()) for array in self.arrays.values())

    def positive(self, table: NodeTableView, key: str) -> np.ndarray | None:
        """Per value code of the key's column (the last entry: key absent), whether its count is
        positive; None when the column changed since (then the caller asks the pairs)."""
        column = table.label_column(key)
        if column is None:
            return None
        array = self.arrays.get(key)
        if array is None:
            return np.zeros(len(column.values) + 1, dtype=bool)
        if len(array) != len(column.values) + 1:
            return None
        return array > 0

    def node_mask(self, table: NodeTableView, key: str) -> np.ndarray | None:
        """Per node, whether its value of the key has a positive count (None as :meth:`positive`)."""
        positive = self.positive(table, key)
        column = table.label_column(key)
        if positive is None or column is None:
            return None
        result: np.ndarray = positive[column.codes]
        return result

    def pairs(self) -> PairCounts:
        out = PairCounts()
        for key, array in self.arrays.items():
            values = self.values[key]
            for code in np.flatnonzero(array[:-1]).tolist():
                out[(key, values[code])] = int(array[code])
        return out


def pre_filter_counts(
    snapshot: NodeTableSnapshot, incoming: PodInfo, terms: PodTerms, own_ns: NamespaceLabels,
    lookup: NamespaceLabels,
) -> tuple[CodeCounts, CodeCounts, CodeCounts] | None:
    """PreFilter's three counters: existing pods' required anti-affinity terms matching the
    incoming pod, existing pods matching all of its required affinity terms, and existing pods
    matching each of its required anti-affinity terms — per (topologyKey, value); None when the
    table cannot answer."""
    table = table_of(snapshot)
    if table is None:
        return None
    existing_anti, affinity, anti = CodeCounts(), CodeCounts(), CodeCounts()
    groups = table.pod_groups()
    for representative, where, counts in groups.affinity_groups():
        for term in parse_pod_terms(representative).required_anti_affinity:
            if term.matches(incoming, own_ns) and not existing_anti.add(table, term.topology_key, where, counts):
                return None
    if terms.required_affinity or terms.required_anti_affinity:
        for namespace, labels, where, counts in groups.label_groups():
            pod = cast(PodInfo, _GroupPod(namespace, labels))
            if pod_matches_all_terms(terms.required_affinity, pod, lookup):
                for term in terms.required_affinity:
                    if not affinity.add(table, term.topology_key, where, counts):
                        return None
            for term in terms.required_anti_affinity:
                if term.matches(pod, lookup) and not anti.add(table, term.topology_key, where, counts):
                    return None
    return existing_anti, affinity, anti


def topology_score(
    snapshot: NodeTableSnapshot, incoming: PodInfo, terms: PodTerms, own_ns: NamespaceLabels,
    lookup: NamespaceLabels, hard_weight: int, has_preferred: bool, score: dict[str, dict[str, int]],
) -> bool:
    """PreScore's ``topologyScore``: the incoming pod's preferred terms against every pod (when it
    has any), the existing pods' required affinity (at ``hard_weight``) and preferred terms against
    the incoming pod. A (key, value) some term reached is recorded even when its weights cancel out,
    as the per-pod loop does."""
    table = table_of(snapshot)
    if table is None:
        return False

    def add(term: AffinityTerm, weight: int, where: np.ndarray, counts: np.ndarray) -> bool:
        found = _per_value(table, term.topology_key, where, counts)
        if found is None:
            return False
        if found:
            per_key = score.setdefault(term.topology_key, {})
            for value, pods in found:
                per_key[value] = per_key.get(value, 0) + weight * pods
        return True

    def add_weighted(weighted: tuple[WeightedTerm, ...], target: PodInfo, ns: NamespaceLabels, sign: int,
                     where: np.ndarray, counts: np.ndarray) -> bool:
        return all(add(wt.term, wt.weight * sign, where, counts)
                   for wt in weighted if wt.term.matches(target, ns))

    groups = table.pod_groups()
    if has_preferred:
        for namespace, labels, where, counts in groups.label_groups():
            pod = cast(PodInfo, _GroupPod(namespace, labels))
            if not (add_weighted(terms.preferred_affinity, pod, lookup, 1, where, counts)
                    and add_weighted(terms.preferred_anti_affinity, pod, lookup, -1, where, counts)):
                return False
    for representative, where, counts in groups.affinity_groups():
        other = parse_pod_terms(representative)
        if hard_weight > 0:
            for term in other.required_affinity:
                if term.matches(incoming, own_ns) and not add(term, hard_weight, where, counts):
                    return False
        if not (add_weighted(other.preferred_affinity, incoming, own_ns, 1, where, counts)
                and add_weighted(other.preferred_anti_affinity, incoming, own_ns, -1, where, counts)):
            return False
    return True


def pairs_mask(table: NodeTableView, counts: Mapping[tuple[str, str], int], keys: set[str] | None,
               n: int) -> np.ndarray | None:
    """Nodes carrying a (key, value) label pair with a positive count (only ``keys``' pairs when
    given); None when a key's column cannot be built."""
    by_key: dict[str, list[str]] = {}
    for (key, value), count in counts.items():
        if count > 0 and (keys is None or key in keys):
            by_key.setdefault(key, []).append(value)
    mask = np.zeros(n, dtype=bool)
    for key, values in by_key.items():
        column = table.label_column(key)
        if column is None:
            return None
        hit = np.zeros(len(column.values) + 1, dtype=bool)  # the last entry: key absent (code -1)
        for value in values:
            code = column.code.get(value)
            if code is not None:
                hit[code] = True
        mask |= hit[column.codes]
    return mask


def codes_mask(table: NodeTableView, counts: CodeCounts, keys: set[str] | None, n: int) -> np.ndarray | None:
    """:func:`pairs_mask` from counts held by label code."""
    mask = np.zeros(n, dtype=bool)
    for key in counts.arrays:
        if keys is not None and key not in keys:
            continue
        hit = counts.node_mask(table, key)
        if hit is None:
            return None
        mask |= hit
    return mask
