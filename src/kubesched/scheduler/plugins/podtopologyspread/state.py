"""PodTopologySpread's cycle state: the matching pods counted per constraint and topology value at
PreFilter (kept up to date by AddPod / RemovePod, with the critical paths) and at PreScore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.podtopologyspread.constraints import Constraint, NodeInclusion, has_all_keys
from kubesched.scheduler.podgroups import labels_key

_MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two topology values with the fewest matching pods (upstream ``criticalPaths``);
    ``num[0]`` is the global minimum as long as updates touch one domain at a time."""

    __slots__ = ("value", "num")

    def __init__(self) -> None:
        self.value = ["", ""]
        self.num = [_MAX_INT32, _MAX_INT32]

    def copy(self) -> CriticalPaths:
        other = CriticalPaths()
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
    paths: list[CriticalPaths]
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
        if node.node is None or not has_all_keys(node.labels or {}, self.constraints):
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
