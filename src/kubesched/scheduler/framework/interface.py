"""Extension points of the scheduling framework, statuses and cycle state (upstream
``pkg/scheduler/framework/interface.go`` in Python).

A plugin is a class with a ``name`` and a constructor ``(args: dict, handle: Handle)``; it implements
the extension points it needs as methods with the names below. The runtime finds them by duck typing,
so a plugin lists only what it does.

Success is spelled ``None`` in hot paths (filters, AddPod/RemovePod) so that passing costs nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from kubesched.scheduler.framework.types import NodeInfo, PodInfo


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(slots=True)
class Status:
    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, (message,), plugin)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


class StateData(Protocol):
    def clone(self) -> StateData: ...


@dataclass(slots=True)
class CycleState:
    """Per-cycle data written by PreFilter/PreScore and read by later points (cloned for dry runs)."""

    data: dict[str, Any] = field(default_factory=dict)
    skip_filter_plugins: set[str] = field(default_factory=set)
    skip_score_plugins: set[str] = field(default_factory=set)

    def read(self, key: str) -> Any:
        return self.data.get(key)

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value

    def clone(self) -> CycleState:
        copied: dict[str, Any] = {}
        for key, value in self.data.items():
            clone = getattr(value, "clone", None)
            copied[key] = clone() if clone is not None else value
        return CycleState(copied, set(self.skip_filter_plugins), set(self.skip_score_plugins))


@dataclass(slots=True)
class PreFilterResult:
    """Node names the pod may use (``None`` = all)."""

    node_names: set[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str | None  # "" clears the nomination (Override mode), None = Noop


# Cluster-event bits (upstream framework/types.go ActionType)
ADD = 1
DELETE = 2
UPDATE_NODE_ALLOCATABLE = 4
UPDATE_NODE_LABEL = 8
UPDATE_NODE_TAINT = 16
UPDATE_NODE_CONDITION = 32
UPDATE = UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
ALL = 63


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: str  # "Pod", "Node", ...
    action: int
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        if self.resource == "*" and self.action == ALL:
            return True
        return (self.resource == "*" or self.resource == other.resource) and bool(self.action & other.action)


WILDCARD_EVENT = ClusterEvent("*", ALL, "WildCardEvent")


class SnapshotView(Protocol):
    """The nodes of the current cycle (upstream ``SharedLister``)."""

    @property
    def node_infos(self) -> list[NodeInfo]:
        """All nodes, in scheduling (node-tree) order."""

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]: ...

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def image_num_nodes(self, image: str) -> int:
        """On how many nodes ``image`` is present."""


class Handle(Protocol):
    """What plugins may use from the framework (upstream ``framework.Handle``)."""

    def snapshot(self) -> SnapshotView: ...

    def list(self, kind: str) -> list[dict[str, Any]]:
        """Objects of a kind from the informers (Service, ReplicaSet, StatefulSet, PodDisruptionBudget, ...)."""

    def namespace_labels(self, namespace: str) -> dict[str, str]: ...

    def now(self) -> float: ...

    @property
    def rng(self) -> np.random.Generator: ...


class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...
