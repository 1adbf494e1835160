"""The node axis as arrays (DESIGN.md principle 4).

One column per node, in snapshot order; one row per resource. Filters and scores that only need
numbers (NodeResourcesFit, BalancedAllocation, NodeUnschedulable) evaluate every node in one vector
operation over these arrays. The cache keeps them in step with the NodeInfos on every pod and node
change, at O(#resources) per change.
"""

from __future__ import annotations

import numpy as np

from kubesched.scheduler.framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, NodeInfo

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)


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
        self.priority_requested = {}
        self.priority_count = {}
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
        self.unschedulable[i] = info.unschedulable
        self.has_hard_taints[i] = any(
            t.get("effect") in ("NoSchedule", "NoExecute") for t in info.taints
        )
        self.has_prefer_taints[i] = any(t.get("effect") == "PreferNoSchedule" for t in info.taints)

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
            column[row, index] += sign * amount

    def below_priority(self, priority: int) -> tuple[np.ndarray, np.ndarray]:
        """(requested per resource, pod count) of each node's pods with a lower priority."""
        requested = np.zeros((len(self.resources), self.n), dtype=np.int64)
        count = np.zeros(self.n, dtype=np.int64)
        for level, arr in self.priority_requested.items():
            if level < priority:
                requested += arr
                count += self.priority_count[level]
        return requested, count
