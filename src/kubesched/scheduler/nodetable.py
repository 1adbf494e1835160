"""The node axis as arrays, so that filters and scores evaluate every node in one vector operation.

One column per node, in snapshot order; one row per resource. Filters and scores that only need
numbers (NodeResourcesFit, BalancedAllocation, NodeUnschedulable) evaluate every node in one vector
operation over these arrays. The cache keeps them in step with the NodeInfos on every pod and node
change, at O(#resources) per change.

Node labels are columns too (:class:`LabelColumn`), one per label key that a filter or score asked
for: built on first use after a rebuild, then kept in step on every node update. The nodes' pods in
groups (:class:`~kubesched.scheduler.podgroups.PodGroups`) are built on first use too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kubesched.api.resources import wrap_int64
from kubesched.api.selectors import parse_int64
from kubesched.scheduler.framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, NodeInfo
from kubesched.scheduler.framework.views import ABSENT_LABEL, NodeFlags
from kubesched.scheduler.podgroups import PodGroups

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)

#: the code of a node that lacks the label key
ABSENT = ABSENT_LABEL


class LabelColumn:
    """One label key over the node axis: ``codes[i]`` is the code of node i's value for the key
    (:data:`ABSENT` when the node has no such label). ``code`` maps each value seen to its code and
    ``values`` maps back; codes are never reused until the table is rebuilt."""

    __slots__ = ("codes", "code", "values", "_ints", "_int_ok", "_first_seen", "_or_empty")

    def __init__(self, n: int) -> None:
        self.codes = np.full(n, ABSENT, dtype=np.int32)
        self.code: dict[str, int] = {}
        self.values: list[str] = []
        self._ints = np.zeros(0, dtype=np.int64)
        self._int_ok = np.zeros(0, dtype=bool)
        self._first_seen: list[int] | None = None
        self._or_empty: tuple[np.ndarray, int] | None = None

    def codes_or_empty(self) -> tuple[np.ndarray, int]:
        """The node codes with a missing key read as the value "" (as ``labels.get(key, "")``
        does), and how many codes there are then."""
        if self._or_empty is None:
            empty = self.code.get("")
            size = len(self.values)
            if empty is None:
                empty, size = size, size + 1
            self._or_empty = (np.where(self.codes == ABSENT, empty, self.codes), size)
        return self._or_empty

    def first_seen(self) -> list[int]:
        """The codes the nodes have, in the order of the first node having each."""
        if self._first_seen is None:
            codes = self.codes[self.codes != ABSENT]
            present, first = np.unique(codes, return_index=True)
            self._first_seen = present[np.argsort(first, kind="stable")].tolist()
        return self._first_seen

    def put(self, index: int, labels: Any, key: str) -> bool:
        """Record node ``index``'s value of the key; False (nothing recorded) when the labels are
        not a mapping or the value is not a string, which the column cannot represent."""
        if not isinstance(labels, Mapping):
            return False
        self._first_seen = self._or_empty = None
        if key not in labels:
            self.codes[index] = ABSENT
            return True
        value = labels[key]
        if not isinstance(value, str):
            return False
        code = self.code.get(value)
        if code is None:
            code = len(self.values)
            self.code[value] = code
            self.values.append(value)
        self.codes[index] = code
        return True

    def as_int64(self) -> tuple[np.ndarray, np.ndarray]:
        """Per code: the value parsed as a base-10 int64 (as the Gt and Lt operators read it) and
        whether it parsed at all."""
        done = len(self._ints)
        if done < len(self.values):
            parsed = [parse_int64(v) for v in self.values[done:]]
            self._ints = np.concatenate([self._ints, np.array([p or 0 for p in parsed], dtype=np.int64)])
            self._int_ok = np.concatenate([self._int_ok, np.array([p is not None for p in parsed], dtype=bool)])
        return self._ints, self._int_ok


class NodeTable:
    def __init__(self) -> None:
        self.resources: list[str] = list(BASE_RESOURCES)
        self.row: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.n = 0
        self.alloc = np.zeros((len(self.resources), 0), dtype=np.int64)
        self.requested = np.zeros((len(self.resources), 0), dtype=np.int64)
        self.nonzero = np.zeros((2, 0), dtype=np.int64)  # cpu, memory as used for scoring
        self.pod_count = np.zeros(0, dtype=np.int64)
        self.allowed_pods = np.zeros(0, dtype=np.int64)
        self.unschedulable = np.zeros(0, dtype=bool)
        self.has_hard_taints = np.zeros(0, dtype=bool)
        self.has_prefer_taints = np.zeros(0, dtype=bool)
        self.has_ports = np.zeros(0, dtype=bool)  # the node's pods use host ports
        self.has_object = np.zeros(0, dtype=bool)  # the NodeInfo has its Node object
        # nodes with alike taints (same key, value and effect, in order) share a code; code 0 is
        # "no taints"; taint_lists[code] is one node's list for each code
        self.taint_codes = np.zeros(0, dtype=np.int64)
        self.taint_lists: list[list[Any]] = [[]]
        self._taint_code: dict[Any, int] = {(): 0}
        self._pod_groups: PodGroups | None = None
        self._infos: list[NodeInfo] = []
        self._node_array: np.ndarray | None = None
        self._labels: dict[str, LabelColumn | None] = {}
        self._name_index: dict[str, int] = {}
        self.nameless: list[int] = []  # nodes whose object has no name (field selectors skip them)
        self.layout = 0  # counts the rebuilds: columns keep their nodes between two of them
        self._node_memo: dict[Any, Any] = {}
        # per pod priority: what the node's pods of that priority request, and how many there are
        # (preemption sums the levels below a preemptor's priority in one vector operation)
        self.priority_requested: dict[int, np.ndarray] = {}
        self.priority_count: dict[int, np.ndarray] = {}

    def ensure_resource(self, name: str) -> int:
        row = self.row.get(name)
        if row is None:
            row = len(self.resources)
            self.resources.append(name)
            self.row[name] = row
            self.alloc = np.vstack([self.alloc, np.zeros((1, self.n), dtype=np.int64)])
            self.requested = np.vstack([self.requested, np.zeros((1, self.n), dtype=np.int64)])
            for priority, arr in self.priority_requested.items():
                self.priority_requested[priority] = np.vstack([arr, np.zeros((1, self.n), dtype=np.int64)])
        return row

    def rebuild(self, nodes: list[NodeInfo]) -> None:
        for info in nodes:
            for name in info.allocatable:
                if name != PODS:
                    self.ensure_resource(name)
            for name in info.requested:
                self.ensure_resource(name)
        self.layout += 1
        self.n = n = len(nodes)
        r = len(self.resources)
        self.alloc = np.zeros((r, n), dtype=np.int64)
        self.requested = np.zeros((r, n), dtype=np.int64)
        self.nonzero = np.zeros((2, n), dtype=np.int64)
        self.pod_count = np.zeros(n, dtype=np.int64)
        self.allowed_pods = np.zeros(n, dtype=np.int64)
        self.unschedulable = np.zeros(n, dtype=bool)
        self.has_hard_taints = np.zeros(n, dtype=bool)
        self.has_prefer_taints = np.zeros(n, dtype=bool)
        self.has_ports = np.zeros(n, dtype=bool)
        self.has_object = np.zeros(n, dtype=bool)
        self.taint_codes = np.zeros(n, dtype=np.int64)
        self.taint_lists = [[]]
        self._taint_code = {(): 0}
        self._pod_groups = None
        self.priority_requested = {}
        self.priority_count = {}
        self._infos = list(nodes)
        self._node_array = None
        self._labels = {}
        self._node_memo = {}
        self._name_index = {info.name: i for i, info in enumerate(nodes)}
        self.nameless = [i for i, info in enumerate(nodes) if not info.name]
        for i, info in enumerate(nodes):
            info.index = i
            self.set_node(info)
            self.set_usage(info)
            for pod in info.pods:
                self.account_priority(i, pod.priority, pod.requests, 1)

    def set_node(self, info: NodeInfo) -> None:
        i = info.index
        for name in info.allocatable:
            if name != PODS:
                self.ensure_resource(name)
        self.alloc[:, i] = 0
        for name, amount in info.allocatable.items():
            if name == PODS:
                self.allowed_pods[i] = amount
            else:
                self.alloc[self.row[name], i] = amount
        self._node_memo = {}
        self.unschedulable[i] = info.unschedulable
        self.has_object[i] = info.node is not None
        self.has_hard_taints[i] = any(
            t.get("effect") in ("NoSchedule", "NoExecute") for t in info.taints
        )
        self.has_prefer_taints[i] = any(t.get("effect") == "PreferNoSchedule" for t in info.taints)
        self.taint_codes[i] = self._code_of_taints(info.taints)
        stale = [key for key, column in self._labels.items() if column is None or not column.put(i, info.labels, key)]
        for key in stale:
            del self._labels[key]  # built again (or found unrepresentable again) when next asked for

    def _code_of_taints(self, taints: list[Any]) -> int:
        """The code of a taint list: what tolerating it depends on (key, value, effect per taint,
        in order) decides; a list that cannot be keyed so gets a code of its own."""
        try:
            key: Any = tuple((t.get("key"), t.get("value"), t.get("effect")) for t in taints)
            code = self._taint_code.get(key)
        except (TypeError, AttributeError):
            key, code = object(), None
        if code is None:
            code = self._taint_code[key] = len(self.taint_lists)
            self.taint_lists.append(taints)
        return code

    def set_usage(self, info: NodeInfo) -> None:
        i = info.index
        for name in info.requested:
            self.ensure_resource(name)
        self.requested[:, i] = 0
        for name, amount in info.requested.items():
            self.requested[self.row[name], i] = amount
        self.nonzero[0, i] = info.nonzero_cpu
        self.nonzero[1, i] = info.nonzero_mem
        self.pod_count[i] = len(info.pods)
        self.has_ports[i] = bool(info.used_ports)
        if self._pod_groups is not None:
            self._pod_groups.set_node(i, info.pods)

    def node_array(self) -> np.ndarray:
        """The NodeInfos in column order as an object array (to take many at once)."""
        if self._node_array is None:
            self._node_array = np.empty(len(self._infos), dtype=object)
            self._node_array[:] = self._infos
        return self._node_array

    def pod_groups(self) -> PodGroups:
        """The nodes' pods by (namespace, labels), built now if no one asked since the last rebuild."""
        if self._pod_groups is None:
            self._pod_groups = PodGroups(self._infos)
        return self._pod_groups

    def label_column(self, key: str) -> LabelColumn | None:
        """The column of label ``key``, built now if no one asked for it since the last rebuild;
        None when some node's labels cannot be represented (a value that is not a string)."""
        if key in self._labels:
            return self._labels[key]
        column = LabelColumn(self.n)
        representable = all(column.put(i, info.labels, key) for i, info in enumerate(self._infos))
        self._labels[key] = column if representable else None
        return self._labels[key]

    def flags(self) -> NodeFlags:
        """What holds of the nodes as a whole (worked out again after a node changed)."""
        flags = self._node_memo.get(NodeFlags)
        if flags is None:
            flags = self._node_memo[NodeFlags] = NodeFlags(
                bool(self.has_object.all()), bool(self.has_hard_taints.any()), bool(self.has_prefer_taints.any()))
        return flags  # type: ignore[no-any-return]

    def node_memo(self) -> dict[Any, Any]:
        """A place for answers worked out from the nodes' objects alone (labels, names, taints),
        emptied whenever a node changes or the table is rebuilt."""
        return self._node_memo

    def node_index(self, name: str) -> int | None:
        """The column of the node called ``name``, None if there is none."""
        return self._name_index.get(name)

    def account_priority(self, index: int, priority: int, requests: dict[str, int], sign: int) -> None:
        if priority not in self.priority_count:
            self.priority_count[priority] = np.zeros(self.n, dtype=np.int64)
            self.priority_requested[priority] = np.zeros((len(self.resources), self.n), dtype=np.int64)
        self.priority_count[priority][index] += sign
        column = self.priority_requested[priority]
        for name, amount in requests.items():
            row = self.row.get(name)
            if row is None:
                row = self.ensure_resource(name)
                column = self.priority_requested[priority]
            column[row, index] = wrap_int64(int(column[row, index]) + sign * amount)

    def below_priority(self, priority: int) -> tuple[np.ndarray, np.ndarray]:
        """(requested per resource, pod count) of each node's pods with a lower priority."""
        requested = np.zeros((len(self.resources), self.n), dtype=np.int64)
        count = np.zeros(self.n, dtype=np.int64)
        for level, arr in self.priority_requested.items():
            if level < priority:
                requested += arr
                count += self.priority_count[level]
        return requested, count
