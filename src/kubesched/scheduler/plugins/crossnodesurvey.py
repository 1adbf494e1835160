"""CrossNodePreemption's survey of one preemption attempt: the lower-priority pods that a failing
constraint may name for a node other than their own, and the nodes whose dry run would name any.

InterPodAffinity counts a pod under an anti-affinity topology key (its own required anti-affinity
against the preemptor P, or P's against it) and PodTopologySpread under a hard constraint's key;
their PreFilter states already hold the counts per (key, value), for pods of every priority. A pod
can only be named for another node N when it is counted in one of N's domains, so:

- a domain with no count (a *cold* one) names nobody;
- a domain of one node names nobody for another node;
- a node without lower-priority pods holds nobody to name.

Only the nodes left (in a hot domain of two nodes or more, with lower-priority pods) are scanned pod
by pod, and a node *crosses* (its dry run removes pods elsewhere) when one of its domains holds a
counted pod on another node. Every other node is dry-run as DefaultPreemption does it, which is what
lets them go through the batched dry run. Where the node table cannot answer (a label value it
cannot represent, a snapshot without one), every node is scanned and may cross.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableView
from kubesched.scheduler.plugins.interpodaffinity import PRE_FILTER_STATE_KEY as AFFINITY_STATE_KEY
from kubesched.scheduler.plugins.interpodaffinity import PreFilterState as AffinityState
from kubesched.scheduler.plugins.podtopologyspread import PRE_FILTER_STATE_KEY as SPREAD_STATE_KEY
from kubesched.scheduler.plugins.podtopologyspread import PreFilterState as SpreadState


@dataclass(slots=True)
class Counted:
    """A lower-priority pod on some node that a failing constraint may name: the topology keys
    under which the filters count it, with its node's values."""

    pod: PodInfo
    node: NodeInfo
    domains: tuple[tuple[str, str], ...]
    #: the keys InterPodAffinity counts it under (anti-affinity, either way), and PodTopologySpread
    anti: frozenset[str] = frozenset()
    spread: frozenset[str] = frozenset()


class Survey:
    """What one attempt for ``pod`` (its cycle ``state`` after PreFilter) may name across nodes,
    among ``nodes`` (the snapshot's, ``table``: its node table, None without one)."""

    def __init__(self, pod: PodInfo, state: CycleState, nodes: Sequence[NodeInfo], table: NodeTableView | None) -> None:
        skip = state.skip_filter_plugins
        affinity = None if "InterPodAffinity" in skip else state.read(AFFINITY_STATE_KEY)
        spread = None if "PodTopologySpread" in skip else state.read(SPREAD_STATE_KEY)
        self.affinity = affinity if isinstance(affinity, AffinityState) else None
        self.spread = spread if isinstance(spread, SpreadState) else None
        self.uid = pod.uid
        #: per node column, whether its dry run may name pods elsewhere (None: any node may)
        self.crossing: np.ndarray | None = None
        scope = self._scope(pod, table) if table is not None else None
        self.counted = self._counted(pod, nodes, scope)
        if table is not None and scope is not None:
            self.crossing = self._crossing(table, len(scope))

    def _hot(self) -> dict[str, set[str]]:
        """Per topology key, the values whose domain counts some pod (of any priority)."""
        hot: dict[str, set[str]] = defaultdict(set)
        if self.affinity is not None:
            for key, value in [*self.affinity.existing_anti, *self.affinity.anti]:
                hot[key].add(value)
        if self.spread is not None:
            for constraint, counts in zip(self.spread.constraints, self.spread.counts):
                hot[constraint.topology_key].update(v for v, n in counts.items() if n > 0)
        return hot

    def _scope(self, pod: PodInfo, table: NodeTableView) -> np.ndarray | None:
        """Per node column: whether it may hold a pod named for another node (in a hot domain of
        two nodes or more, with lower-priority pods); None when the table cannot tell."""
        n = table.n
        scope = np.zeros(n, dtype=bool)
        if self.affinity is None and self.spread is None:
            return scope
        for key, values in self._hot().items():
            column = table.label_column(key)
            if column is None:
                return None
            codes = [column.code[v] for v in values if v in column.code]
            if not codes:
                continue
            node_codes = column.codes
            hot = np.isin(node_codes, codes)
            sizes = np.bincount(node_codes[hot], minlength=len(column.values))
            scope |= hot & (sizes[np.where(hot, node_codes, 0)] >= 2)
        if scope.any():
            _, below = table.below_priority(pod.priority)
            scope &= below > 0
        return scope

    def _counted(self, pod: PodInfo, nodes: Sequence[NodeInfo], scope: np.ndarray | None) -> list[Counted]:
        """Every lower-priority pod (on the nodes in ``scope``; all of them without one) that
        InterPodAffinity counts under an anti-affinity key or PodTopologySpread under a hard
        constraint's key, with those keys' values on its node."""
        affinity, spread = self.affinity, self.spread
        if affinity is None and spread is None:
            return []
        if scope is not None:
            nodes = [nodes[i] for i in np.flatnonzero(scope).tolist()]
        found: list[Counted] = []
        priority = pod.priority
        for info in nodes:
            labels = info.labels or {}
            for p in info.pods:
                if p.priority >= priority:
                    continue
                anti = affinity.keys_counting(p)[0] if affinity is not None else frozenset()
                spreading = frozenset(spread.constraints[i].topology_key for i in spread.counted(p, pod, info)) \
                    if spread is not None else frozenset()
                domains = tuple((k, labels[k]) for k in sorted(anti | spreading) if k in labels)
                if domains:
                    found.append(Counted(p, info, domains, anti, spreading))
        return found

    def _crossing(self, table: NodeTableView, n: int) -> np.ndarray:
        """Per node column: whether one of its domains holds a counted pod on another node."""
        crossing = np.zeros(n, dtype=bool)
        holders: dict[tuple[str, str], set[int]] = defaultdict(set)
        for c in self.counted:
            for pair in c.domains:
                holders[pair].add(c.node.index)
        for (key, value), where in holders.items():
            column = table.label_column(key)
            assert column is not None  # it answered in _scope
            domain = column.codes == column.code[value]
            if len(where) == 1:
                domain[next(iter(where))] = False
            crossing |= domain
        return crossing

    def named_elsewhere(self, node: NodeInfo | None, name: str) -> list[Counted]:
        """The counted pods on other nodes than ``name`` that share one of its domains (``node``:
        its NodeInfo in the snapshot), in the snapshot's order."""
        values = (node.labels or {}) if node is not None else {}
        return [c for c in self.counted if c.node.name != name
                and any(values.get(key) == value for key, value in c.domains)]
