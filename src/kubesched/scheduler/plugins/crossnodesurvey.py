"""CrossNodePreemption's survey of one preemption attempt: the lower-priority pods that a failing
constraint may name for a node other than their own, and the nodes whose dry run would name any.

InterPodAffinity counts a pod under an anti-affinity topology key (its own required anti-affinity
against the preemptor P, or P's against it) and PodTopologySpread under a hard constraint's key. A
pod can only be named for another node N when it is counted in one of N's domains, so:

- an anti-affinity domain where InterPodAffinity's PreFilter counts nothing (for pods of every
  priority) names nobody, and so does a node holding no pod of P's namespace that a spread
  constraint's selector matches (the node table's pod groups tell, per group of alike labels);
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
from kubesched.scheduler.framework.views import ABSENT_LABEL, NodeTableView
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


def _shared(codes: np.ndarray, size: int) -> np.ndarray:
    """Per node: whether it has the label and another node has the same value."""
    present = codes != ABSENT_LABEL
    nodes_per_value = np.bincount(codes[present], minlength=size)
    return present & (nodes_per_value[np.where(present, codes, 0)] >= 2)


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

    def _scope(self, pod: PodInfo, table: NodeTableView) -> np.ndarray | None:
        """Per node column: whether it may hold a pod named for another node (in a domain of two
        nodes or more that counts it, with lower-priority pods); None when the table cannot tell."""
        n = table.n
        scope = np.zeros(n, dtype=bool)
        if self.affinity is not None:
            # anti-affinity, either way: the PreFilter's counts per (key, value), pods of any priority
            hot: dict[str, set[str]] = defaultdict(set)
            for key, value in [*self.affinity.existing_anti, *self.affinity.anti]:
                hot[key].add(value)
            for key, values in hot.items():
                column = table.label_column(key)
                if column is None:
                    return None
                codes = [column.code[v] for v in values if v in column.code]
                if codes:
                    scope |= _shared(column.codes, len(column.values)) & np.isin(column.codes, codes)
        if self.spread is not None:
            # hard spreading: the nodes holding pods its selectors match in P's namespace (those
            # being deleted too, which its AddPod/RemovePod count as upstream's do)
            groups = [where for namespace, labels, where, _ in table.pod_groups().label_groups()
                      if namespace == pod.namespace and any(c.selector.matches(labels)
                                                            for c in self.spread.constraints)]
            if groups:
                holding = np.zeros(n, dtype=bool)
                holding[np.concatenate(groups)] = True
                for key in {c.topology_key for c in self.spread.constraints}:
                    column = table.label_column(key)
                    if column is None:
                        return None
                    scope |= holding & _shared(column.codes, len(column.values))
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
