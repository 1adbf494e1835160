"""Statuses, cycle state, the extension points and the Handle of the scheduling framework (upstream
``pkg/scheduler/framework/interface.go`` and ``cycle_state.go`` in Python). In this order:

1. statuses: :class:`Code` and :class:`Status` (success is spelled ``None`` in hot paths, filters
   and AddPod/RemovePod, so that passing costs nothing);
2. the cycle state plugins share within one cycle, with the keys the framework writes to it;
3. the extension points, in the order a pod meets them, each next to what it returns: PreEnqueue,
   QueueSort and EnqueueExtensions (with the cluster events) for the queue; PreFilter (with its
   AddPod/RemovePod extensions), Filter, PostFilter, PreScore, Score (with NormalizeScore), Reserve
   (with Unreserve) and Permit for the scheduling cycle; PreBind, Bind and PostBind for the binding
   cycle; then :data:`EXTENSION_POINTS`, their configuration names;
4. the :class:`Handle`, what plugins may use from the scheduler.

What the Handle gives out is elsewhere: the views of the snapshot, its node table and the nominator
in :mod:`~kubesched.scheduler.framework.views`; the runner preemption dry runs use, with what a
plugin may offer beyond upstream's points (vector forms, pod independence, preemption arithmetic),
in :mod:`~kubesched.scheduler.framework.capabilities`.

Every extension point is a :class:`typing.Protocol`. A plugin states the points it implements by
listing their protocols as its bases (``class NodeResourcesFit(PreFilterPlugin, FilterPlugin, ...)``,
as upstream asserts ``var _ framework.FilterPlugin = &Fit{}``); mypy then checks every signature. The
framework sorts plugins by these protocols once, when it is built.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# the score range, re-exported for plugins (its one definition is with the other shared constants)
from kubesched.k8s.objects import MAX_NODE_SCORE as MAX_NODE_SCORE
from kubesched.k8s.objects import MIN_NODE_SCORE as MIN_NODE_SCORE

if TYPE_CHECKING:
    import numpy as np

    from kubesched.k8s.objects import Obj
    from kubesched.scheduler.framework.candidates import PreemptionRecord
    from kubesched.scheduler.framework.capabilities import PluginsRunner, PreemptionMetrics
    from kubesched.scheduler.framework.extender import Extender
    from kubesched.scheduler.framework.types import NodeInfo, PodInfo
    from kubesched.scheduler.framework.views import NodeTableSnapshot, NominatorView
    from kubesched.scheduler.framework.waiting import WaitingPod
    from kubesched.scheduler.ports import Cluster


# -- statuses ------------------------------------------------------------------------------------
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


# -- the cycle state -----------------------------------------------------------------------------
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


#: CycleState key the framework writes before PreScore: (the feasible nodes' list as given to
#: PreScore, their columns in the node table), so that vector plugins need not look them up
FEASIBLE_COLUMNS = "kubesched.io/feasible-columns"


#: the CycleState key of the pods a plugin wants moved to activeQ at the end of a successful
#: scheduling cycle (upstream ``framework.PodsToActivateKey``): a dict ``namespace/name -> PodInfo``
PODS_TO_ACTIVATE = "kubernetes.io/pods-to-activate"


# -- the extension points, in the order a pod meets them: the queue ------------------------------
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """Before the pod enters activeQ: a failure keeps it in the unschedulable pool (gated)."""


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, pod: PodInfo, timestamp: float, initial_timestamp: float | None) -> tuple[Any, ...]:
        """Upstream ``Less`` as a key: a pod sorts before another when its key is smaller
        (``timestamp``: when the pod entered the queue this time; ``initial_timestamp``: when it
        was first tried, None before)."""


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


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEvent]:
        """The cluster events that may make a pod this plugin rejected schedulable. A plugin without
        this method is interested in every event."""


# -- the scheduling cycle ------------------------------------------------------------------------
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


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        """Once per cycle, before the filters: may restrict the nodes, reject the pod, or Skip (then
        this plugin's Filter and extensions do not run this cycle)."""


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """Keeps a PreFilter plugin's cycle state right when pods are added to or removed from a node
    in a what-if (nominated pods, preemption dry runs). A failure aborts that what-if."""

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """None (or Success) if the pod may run on the node; else a rejection (any other code is
        reported as an Error)."""


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str | None  # "" clears the nomination (Override mode), None = Noop


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """When no node fits (``statuses``: each node's filter failure), e.g. preemption."""


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...


@runtime_checkable
class ScoreExtensions(Plugin, Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], scores: list[int]) -> None:
        """Rewrite ``scores`` (one per node of ``nodes``) in place into [0, MAX_NODE_SCORE]."""


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Undo :meth:`reserve` (called in reverse order when a later step fails); must not fail."""


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """The verdict and, with a Wait status, how long the pod may wait (seconds; capped at 15
        minutes)."""


# -- the binding cycle ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PendingBind:
    """What a PreBind plugin returns when it has made its API writes and must wait for other
    components to finish (VolumeBinding waits for the PersistentVolume controller; upstream polls
    with ``wait.Poll``): the binding cycle pauses, the scheduler goes on with other pods, and
    ``poll()`` is asked first ``interval`` seconds later, then every ``interval`` seconds. ``poll``
    answers ``(done, status)``: done with ``None`` goes on to the next PreBind plugin, done with a
    status fails the binding with it. When ``timeout`` seconds have passed without an answer, the
    binding fails with the Error ``timeout_message``."""

    poll: Callable[[], tuple[bool, Status | None]]
    interval: float
    timeout: float
    timeout_message: str


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | PendingBind | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Bind the pod, or Skip to leave it to the next Bind plugin."""


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


#: extension point (its KubeSchedulerConfiguration name) -> the protocol a plugin enabled there implements
EXTENSION_POINTS: dict[str, Any] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


# -- what plugins get from the scheduler ---------------------------------------------------------
class Handle(Protocol):
    """What plugins may use from the scheduler (upstream ``framework.Handle``)."""

    @property
    def scheduler_name(self) -> str:
        """The profile's name (upstream ``Framework.ProfileName``)."""

    def shared_set(self, key: str) -> set[str]:
        """The set every profile of the scheduler shares under ``key``: what upstream plugins keep in
        package-level variables, one per scheduler process (e.g. the profile names scheduler-plugins'
        foreign pods detection registers)."""

    def snapshot(self) -> NodeTableSnapshot:
        """The cycle's snapshot (upstream ``SnapshotSharedLister``)."""

    def list(self, kind: str) -> list[Obj]:
        """Objects of a kind from the informers (Service, ReplicaSet, StatefulSet, PodDisruptionBudget, ...)."""

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """One object of a kind from the informers, by namespace and name."""

    def generation(self, kind: str) -> int:
        """Changes whenever an object of ``kind`` (not Node or Pod) is added, updated or deleted:
        what a plugin may key a cache of such objects on."""

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        """Which objects of ``kind`` the informers changed since the mark ``since`` (a mark this
        method gave; None: none yet): the next mark and their keys (``namespace/name``, or
        ``name`` for a cluster-scoped kind), or None for the keys when that cannot be told — then
        read every object again with :meth:`list`."""

    def namespace_labels(self, namespace: str) -> dict[str, str]: ...

    def current_pod(self, pod: PodInfo) -> PodInfo | None:
        """The pod as the pod lister has it now (None once it is gone)."""

    def now(self) -> float: ...

    @property
    def rng(self) -> np.random.Generator: ...

    @property
    def cluster(self) -> Cluster:
        """The API client (upstream ``ClientSet``): binding, status patches, deletions, events."""

    @property
    def nominator(self) -> NominatorView: ...

    @property
    def framework(self) -> PluginsRunner: ...

    def extenders(self) -> builtins.list[Extender]:
        """The scheduler's extenders, in calling order (upstream ``Handle.Extenders``)."""

    @property
    def metrics(self) -> PreemptionMetrics: ...

    @property
    def keep_all_candidates(self) -> bool:
        """Keep every preemption candidate in the records (when explanations were asked for)."""

    @property
    def keep_rejected_nodes(self) -> bool:
        """Keep the nodes a preemption decision ruled out, with their statuses, in its record."""

    def waiting_pods(self) -> builtins.list[WaitingPod]:
        """The pods held at Permit (upstream ``IterateOverWaitingPods``)."""

    def record_preemption(self, record: PreemptionRecord) -> None:
        """Keep what one PostFilter call of a preemption plugin considered and decided."""

    def feature_enabled(self, name: str) -> bool:
        """Whether the scheduler's feature gate ``name`` is on (kube-scheduler's ``--feature-gates``;
        see :mod:`kubesched.scheduler.features`)."""

    def activate(self, pods: builtins.list[PodInfo]) -> None:
        """Upstream ``Handle.Activate``: move the pods to activeQ (if PreEnqueue lets them)."""

    def run_detached(self, work: Callable[[], str | None], then: Callable[[str | None], None]) -> None:
        """Run API calls (``work``: an error message, or None when they all succeeded) as the
        scheduler runs binding cycles: on a worker thread while the scheduling thread goes on
        (``kubesched run``), or at once (a simulation, whose API calls take no time). ``then`` gets
        the outcome on the scheduling thread."""
