"""The nominated pods as sums over the node table's columns, for filters that judge by arithmetic.

``RunFilterPluginsWithNominatedPods`` adds, on each node, the pods nominated there with a priority
at least the incoming pod's (the pod itself left out) before filtering. Where only summed requests
and pod counts matter (NodeResourcesFit), that is an addition per node column: :class:`NominatedSums`
keeps the nominator's pods summed per priority level and column, following the nominator's journal
of changes (rebuilt from scratch when the node table was laid out anew or the journal no longer
reaches back), and answers each pod with a :class:`NominatedLoad`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot, NodeTableView, NominatorView


@dataclass(slots=True)
class NominatedLoad:
    """What the nominated pods one pod's filters count add to each column of the node table:
    their number (``count``) and, per resource, their summed requests (:meth:`requested`)."""

    count: np.ndarray
    _levels: list[dict[str, np.ndarray]]
    _own: tuple[int, PodInfo] | None  # the pod's own nomination: (column, pod), to leave out
    _requested: dict[str, np.ndarray] = field(default_factory=dict)

    def requested(self, resource: str) -> np.ndarray:
        found = self._requested.get(resource)
        if found is None:
            found = np.zeros(len(self.count), dtype=np.int64)
            for level in self._levels:
                column = level.get(resource)
                if column is not None:
                    found += column
            if self._own is not None:
                found[self._own[0]] -= self._own[1].requests.get(resource, 0)
            self._requested[resource] = found
        return found


class NominatedSums:
    """The nominator's pods summed per priority level and node-table column."""

    def __init__(self, nominator: NominatorView) -> None:
        self._nominator = nominator
        self._layout: tuple[int, int] | None = None  # the node table (id, layout) the sums are for
        self._mark: int | None = None  # the nominator's journal mark the sums are at
        self._count: dict[int, np.ndarray] = {}  # priority -> pods per column
        self._requested: dict[int, dict[str, np.ndarray]] = {}  # priority -> resource -> per column

    def load(self, pod: PodInfo, snapshot: NodeTableSnapshot) -> NominatedLoad:
        """The nominated pods ``pod``'s filters count on each node, as column sums."""
        table = snapshot.table
        self._sync(table)
        priority = pod.priority
        levels = [level for level in self._count if level >= priority]
        count = np.zeros(table.n, dtype=np.int64)
        for level in levels:
            count += self._count[level]
        own: tuple[int, PodInfo] | None = None
        node = self._nominator.nominated_node(pod.uid)
        if node is not None:
            column = table.node_index(node)
            mine = next((p for p in self._nominator.pods_for_node(node) if p.uid == pod.uid), None)
            if column is not None and mine is not None and mine.priority >= priority:
                own = (column, mine)
                count[column] -= 1
        return NominatedLoad(count, [self._requested[level] for level in levels], own)

    def _sync(self, table: NodeTableView) -> None:
        layout = (id(table), table.layout)
        nominator = self._nominator
        self._mark, changes = nominator.changes(self._mark if layout == self._layout else None)
        if changes is None:
            self._layout = layout
            self._count, self._requested = {}, {}
            changes = [(1, node, pod) for node, pod in nominator.nominated()]
        for sign, node, pod in changes:
            self._account(table, sign, node, pod)

    def _account(self, table: NodeTableView, sign: int, node: str, pod: PodInfo) -> None:
        column = table.node_index(node)
        if column is None:
            return
        n = table.n
        level = pod.priority
        counts = self._count.get(level)
        if counts is None:
            counts = self._count[level] = np.zeros(n, dtype=np.int64)
            self._requested[level] = {}
        counts[column] += sign
        requested = self._requested[level]
        for resource, amount in pod.requests.items():
            sums = requested.get(resource)
            if sums is None:
                sums = requested[resource] = np.zeros(n, dtype=np.int64)
            sums[column] += sign * amount
