"""Extension points of the scheduling framework, statuses, cycle state and the Handle plugins get
(upstream ``pkg/scheduler/framework/interface.go`` in Python). In this order:

1. the twelve extension points, in the order a pod meets them: PreEnqueue, QueueSort, PreFilter
   (with its AddPod/RemovePod extensions), Filter, PostFilter, PreScore, Score (with
   NormalizeScore), Reserve (with Unreserve), Permit, PreBind, Bind, PostBind; then
   EnqueueExtensions and :data:`EXTENSION_POINTS`, their configuration names;
2. what they exchange: statuses, the cycle state, PreFilter and PostFilter results, cluster events;
3. what the framework hands to plugins: views of the snapshot, its node table and the nominator,
   the runner preemption dry runs use, and the :class:`Handle`;
4. capabilities beyond upstream's points: vector forms, pod independence, preemption arithmetic.

Every extension point is a :class:`typing.Protocol`. A plugin states the points it implements by
listing their protocols as its bases (``class NodeResourcesFit(PreFilterPlugin, FilterPlugin, ...)``,
as upstream asserts ``var _ framework.FilterPlugin = &Fit{}``); mypy then checks every signature. The
framework sorts plugins by these protocols once, when it is built.

Besides upstream's points, a plugin may offer *vector capabilities*: the same answer as one of its
extension points, computed for every node of the node table at once. They are optional; each states
the exactness it owes (the framework uses the vector form in place of the per-node one, so any
difference would change a scheduling decision). Capabilities are declared like extension points:
the runtime finds them with ``isinstance``, which only sees that the members exist, so a plugin lists
every protocol it is used through among its bases, or mypy would not check that signature
(``tests/scheduler/test_declared_capabilities.py`` holds every registered plugin to it).

Success is spelled ``None`` in hot paths (filters, AddPod/RemovePod) so that passing costs nothing.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

# the score range, re-exported for plugins (its one definition is with the other shared constants)
from kubesched.k8s.objects import MAX_NODE_SCORE as MAX_NODE_SCORE
from kubesched.k8s.objects import MIN_NODE_SCORE as MIN_NODE_SCORE

if TYPE_CHECKING:
    import numpy as np

    from kubesched.api.selectors import LabelSelector
    from kubesched.k8s.objects import Obj
    from kubesched.scheduler.framework.extender import Extender
    from kubesched.scheduler.framework.nominated import NominatedLoad
    from kubesched.scheduler.framework.preemption import PreemptionRecord
    from kubesched.scheduler.framework.types import NodeInfo, PodInfo
    from kubesched.scheduler.framework.waiting import WaitingPod
    from kubesched.scheduler.ports import Cluster


# -- the extension points, in the order a pod meets them ----------------------------------------
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


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEvent]:
        """The cluster events that may make a pod this plugin rejected schedulable. A plugin without
        this method is interested in every event."""


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


# -- what the extension points exchange: statuses, cycle state, results, cluster events -----------
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


#: CycleState key the framework writes before PreScore: (the feasible nodes' list as given to
#: PreScore, their columns in the node table), so that vector plugins need not look them up
FEASIBLE_COLUMNS = "kubesched.io/feasible-columns"


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



#: the CycleState key of the pods a plugin wants moved to activeQ at the end of a successful
#: scheduling cycle (upstream ``framework.PodsToActivateKey``): a dict ``namespace/name -> PodInfo``
PODS_TO_ACTIVATE = "kubernetes.io/pods-to-activate"


# -- what the framework hands to plugins: views, the runner, the Handle ------------------------
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

    def node_changes(self, since: int | None) -> tuple[int, list[str] | None]:
        """A mark to pass next time and the names of the nodes whose NodeInfo changed (added,
        removed, its object or pods) since ``since`` (a mark this method gave), or None for the
        names when that cannot be told (a snapshot may always answer None)."""

    def is_pvc_used(self, key: str) -> bool:
        """Whether a pod on a node of the snapshot uses the claim ``namespace/name``."""

    def image_num_nodes(self, image: str) -> int:
        """On how many nodes ``image`` is present."""


#: the code of a node label column where the node lacks the key
ABSENT_LABEL = -1


class LabelColumnView(Protocol):
    """One node label key over the node axis: ``codes[i]`` is the code of node i's value,
    :data:`ABSENT_LABEL` where node i lacks the key; ``code`` maps each value to its code."""

    @property
    def codes(self) -> np.ndarray: ...

    @property
    def code(self) -> Mapping[str, int]: ...

    @property
    def values(self) -> list[str]:
        """Indexed by code: the label value."""

    def as_int64(self) -> tuple[np.ndarray, np.ndarray]:
        """Indexed by code: the value as a base-10 int64 and whether it parses as one."""

    def first_seen(self) -> list[int]:
        """The codes the nodes have, in the order of the first node having each."""

    def codes_or_empty(self) -> tuple[np.ndarray, int]:
        """The node codes with a missing key read as the value "", and how many codes there are."""


class PodGroupsView(Protocol):
    """The nodes' pods grouped by (namespace, labels, being deleted), and the pods with pod
    (anti-)affinity grouped by their terms."""

    def count(self, namespace: str, selector: LabelSelector) -> np.ndarray:
        """Per node: how many of its pods of ``namespace`` (not being deleted) have labels that
        ``selector`` matches."""

    def matching_nodes(self, namespace: str, selector: LabelSelector) -> tuple[np.ndarray, np.ndarray]:
        """The nodes holding pods of ``namespace`` (not being deleted) that ``selector`` matches and
        how many each; a node may appear more than once (sum them)."""

    def label_groups(self) -> Iterator[tuple[str, dict[str, str], np.ndarray, np.ndarray]]:
        """Every (namespace, labels) group on some node, pods being deleted included: namespace,
        labels, the node indices holding them and how many each."""

    def affinity_groups(self) -> Iterator[tuple[PodInfo, np.ndarray, np.ndarray]]:
        """Pods with pod (anti-)affinity grouped by their terms (and namespace): one of them, the
        node indices holding them and how many each."""


@dataclass(frozen=True, slots=True)
class NodeFlags:
    """Facts about all the table's nodes at once."""

    all_have_objects: bool  # every node's Node object is known
    any_hard_taints: bool  # some node has a NoSchedule or NoExecute taint
    any_prefer_taints: bool  # some node has a PreferNoSchedule taint


class NodeTableView(Protocol):
    """The node axis as arrays: one column per node in snapshot order (``NodeInfo.index``), one row
    per resource (``row[name]``). Read by the vector capabilities only."""

    @property
    def n(self) -> int: ...

    @property
    def row(self) -> dict[str, int]: ...

    @property
    def alloc(self) -> np.ndarray: ...

    @property
    def requested(self) -> np.ndarray: ...

    @property
    def nonzero(self) -> np.ndarray:
        """Rows cpu and memory as counted for scoring (defaults for pods requesting nothing)."""

    @property
    def pod_count(self) -> np.ndarray: ...

    @property
    def allowed_pods(self) -> np.ndarray: ...

    @property
    def unschedulable(self) -> np.ndarray: ...

    @property
    def has_hard_taints(self) -> np.ndarray: ...

    @property
    def has_prefer_taints(self) -> np.ndarray: ...

    @property
    def taint_codes(self) -> np.ndarray:
        """Per node, the code of its taints: nodes whose taints have the same keys, values and
        effects in the same order share it; 0 is no taints."""

    @property
    def taint_lists(self) -> list[Any]:
        """Indexed by code: the taints of a node with that code."""

    @property
    def has_ports(self) -> np.ndarray:
        """Whether the node's pods use any host port."""

    @property
    def nameless(self) -> list[int]:
        """The nodes whose object has no name."""

    @property
    def has_object(self) -> np.ndarray:
        """Whether the node's Node object is known (a NodeInfo may exist for pods alone)."""

    @property
    def layout(self) -> int:
        """Changes whenever the columns are laid out anew (nodes added, removed or reordered)."""

    def node_array(self) -> np.ndarray:
        """The NodeInfos in column order, as an object array."""

    def pod_groups(self) -> PodGroupsView:
        """The nodes' pods by (namespace, labels), kept until the table is rebuilt."""

    def label_column(self, key: str) -> LabelColumnView | None:
        """The column of node label ``key``; None when some node's value cannot be represented
        (then ask per node)."""

    def node_index(self, name: str) -> int | None:
        """The column of the node called ``name``."""

    def flags(self) -> NodeFlags:
        """What holds of all the nodes at once."""

    def node_memo(self) -> dict[Any, Any]:
        """Answers worked out from the nodes' objects alone (labels, names, taints), kept until a
        node changes: key them by what asked and what was asked."""

    def ensure_resource(self, name: str) -> int:
        """The row of ``name``, added (zero everywhere) if missing; take arrays only after it."""

    def below_priority(self, priority: int) -> tuple[np.ndarray, np.ndarray]:
        """(requested per resource, pod count) of each node's pods with a lower priority."""


class NodeTableSnapshot(SnapshotView, Protocol):
    """The snapshot with its node table, as the vector capabilities receive it."""

    @property
    def table(self) -> NodeTableView: ...


class NominatorView(Protocol):
    """Pods nominated to nodes (upstream ``PodNominator``, the read side)."""

    def pods_for_node(self, node: str) -> list[PodInfo]: ...

    def nodes(self) -> Iterable[str]: ...

    def nominated_to_add(self, pod: PodInfo) -> Mapping[str, Sequence[PodInfo]]:
        """For every node with nominations, the nominated pods ``pod``'s filters must count
        (priority >= its own, itself left out), in nomination order; possibly empty (read only)."""

    def nominated_node(self, uid: str) -> str | None: ...

    def has_any(self) -> bool: ...

    @property
    def version(self) -> int:
        """How many nominations were made or withdrawn so far."""

    def changes_since(self, version: int) -> Sequence[tuple[int, str, PodInfo]] | None:
        """The changes after ``version``: ``(+1, node, pod)`` nominated, ``(-1, node, pod)`` no
        longer; None when they are no longer known (start again from :meth:`nominated`)."""

    def nominated(self) -> Iterable[tuple[str, PodInfo]]:
        """Every (node, pod) nomination now."""


class PreemptionMetrics(Protocol):
    """The preemption metrics (``scheduler_preemption_attempts_total``, ``scheduler_preemption_victims``)."""

    preemption_attempts: int

    def observe_victims(self, count: int) -> None: ...


class DryRunNode(Protocol):
    """One node during a preemption dry run (upstream ``SelectVictimsOnNode``'s cloned NodeInfo and
    CycleState, with the framework that re-runs the filters on them). Pods are removed and added
    back; the filters answer for the node as it then is."""

    @property
    def name(self) -> str: ...

    @property
    def pods(self) -> list[PodInfo]:
        """The node's pods when the dry run began (the possible victims), in node order."""

    def remove_pod(self, pod: PodInfo) -> Status | None:
        """Take ``pod`` off the node (NodeInfo.RemovePod + RunPreFilterExtensionRemovePod)."""

    def add_pod(self, pod: PodInfo) -> Status | None:
        """Put ``pod`` back (NodeInfo.AddPodInfo + RunPreFilterExtensionAddPod)."""

    def remove_pods(self, pods: Sequence[PodInfo]) -> Status | None:
        """:meth:`remove_pod` for each of ``pods`` in order; the first failure."""

    def run_filters(self, pods_only: bool) -> Status | None:
        """RunFilterPluginsWithNominatedPods on the node as it is now. ``pods_only`` skips the filters
        whose verdict does not depend on the node's pods: valid once they passed on this node."""

    def reprieve(self, pods: Sequence[PodInfo]) -> tuple[list[bool], Status | None]:
        """The reprieve loop of ``SelectVictimsOnNode``, on a node where the filters passed: each of
        ``pods`` in order is added back and stays when ``run_filters(pods_only=True)`` still passes,
        else is removed again. Which pods stayed, and the first add/remove failure (which ends it)."""


class DryRunBatch(Protocol):
    """Many nodes of a preemption dry run at once, on the nodes where only the arithmetic filter's
    verdict depends on which of the victims are there (see :meth:`PluginsRunner.dry_run_batch`)."""

    def reprieve(
        self, nodes: Sequence[NodeInfo], victims: Sequence[Sequence[PodInfo]]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """For each of ``nodes``, with its higher-or-equal nominated pods added and ``victims[k]``
        removed: whether every filter passes (per node) and, where they do, which of ``victims[k]``
        the reprieve loop keeps, in order (per pod of the lists laid end to end), and which nodes
        those answers hold for (per node; None: all of them). Exactly what :class:`DryRunNode`'s
        ``run_filters(pods_only=False)`` and ``reprieve`` answer on those nodes, without the
        statuses; the other nodes, or all when None comes back, are to be asked node by node."""


class PluginsRunner(Protocol):
    """What plugins may run of the framework (upstream ``PluginsRunner`` and
    ``RunFilterPluginsWithNominatedPods``), with what a preemption dry run needs."""

    def run_pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]: ...

    def run_filter_with_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pods_only: bool = False
    ) -> Status | None: ...

    def run_add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def run_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def nominated_pods_to_add(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """The pods nominated to the node that ``pod``'s filters must count (priority >= its own)."""

    def preemption_arithmetic(self, state: CycleState) -> PreemptionArithmetic | None:
        """The filter offering :class:`PreemptionArithmetic` when it is the only filter of this cycle
        whose verdict depends on the node's pods (then dry runs by arithmetic are exact), else None."""

    def preemption_fit(self, state: CycleState) -> PreemptionArithmetic | None:
        """The filter of this cycle offering :class:`PreemptionArithmetic` (not skipped), whatever
        the other filters are: a node it rejects is rejected by the dry run too."""

    def dry_run_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, arithmetic: PreemptionArithmetic | None
    ) -> DryRunNode:
        """``node`` ready for a dry run: by arithmetic with ``arithmetic`` (what
        :meth:`preemption_arithmetic` returned), else a clone of the node and of ``state``."""

    def nominated_load(self, pod: PodInfo, snapshot: NodeTableSnapshot) -> NominatedLoad:
        """The nominated pods ``pod``'s filters count on each node (priority >= its own, itself
        left out), summed per column of ``snapshot``'s node table."""

    def dry_run_batch(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, arithmetic: PreemptionArithmetic,
        nominated: NominatedLoad,
    ) -> DryRunBatch | None:
        """The dry run of many nodes of ``snapshot`` at once, with ``arithmetic`` (what
        :meth:`preemption_fit` returned) and the ``nominated`` load (what :meth:`nominated_load`
        returned). The other filters of the cycle that depend on the node's pods must offer
        :class:`PodMovesNeutral` (else None): the batch answers for the nodes where none of them
        is affected by the victims or the nominated pods."""


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

    def waiting_pods(self) -> builtins.list[WaitingPod]:
        """The pods held at Permit (upstream ``IterateOverWaitingPods``)."""

    def record_preemption(self, record: PreemptionRecord) -> None:
        """Keep what one PostFilter call of a preemption plugin considered and decided."""


# -- vector capabilities (optional; each owes exactly the answer of the point it stands for) --------
@runtime_checkable
class FilterVector(Protocol):
    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        """Filter for every node of the snapshot: a bool mask with ``mask[i]`` true exactly when
        ``filter(state, pod, snapshot.node_infos[i])`` passes; None means "ask per node"."""


@runtime_checkable
class FilterVectorAt(Protocol):
    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`FilterVector.filter_vector` for nodes ``where`` only (``out[k]`` for node
        ``where[k]``), at a cost that follows ``len(where)`` rather than the snapshot's size."""


@runtime_checkable
class FilterRejectionsNoted(Protocol):
    def note_rejections(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot,
                        rejected: np.ndarray) -> None:
        """After a vector form of this plugin's Filter answered: the nodes (indices into the
        snapshot) it rejected among those every filter before it passed — exactly those where the
        per-node Filter would have been asked and would have rejected the pod. A plugin whose
        Filter does something on a rejection besides answering does it here."""


@runtime_checkable
class FailureStatusesVector(Protocol):
    def failure_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> list[Status]:
        """For nodes ``idx`` that this plugin's Filter rejects: the Status Filter returns for each
        (same code and reasons, in order); equal statuses may be one shared object."""


@runtime_checkable
class ScoreVector(Protocol):
    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        """Score for nodes ``idx``: ``out[k] == score(state, pod, snapshot.node_infos[idx[k]])``."""


@runtime_checkable
class NormalizeVector(Protocol):
    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """NormalizeScore on an array: equal to what ``normalize_score`` makes of the same list."""


# -- preemption dry runs: filters that may be skipped or judged by arithmetic ------------------------
@runtime_checkable
class PodIndependentFilter(Plugin, Protocol):
    """A filter whose verdict depends only on the pod and the node object (labels, taints, spec),
    never on the pods on the node: adding or removing pods cannot change it. Obligation: no read of
    ``NodeInfo.pods``, ``requested``, ``used_ports`` or of cycle state changed by AddPod/RemovePod.

    Declared by both listing this protocol among the plugin's bases and setting the class attribute
    ``depends_on_pods = False`` (what ``isinstance`` sees): preemption dry runs skip such a filter
    once it passed on a node (``run_filter(pods_only=True)``). A filter that does not declare it
    counts as depending on the node's pods, which is always safe."""

    depends_on_pods: Literal[False]


@runtime_checkable
class PodMovesNeutral(Plugin, Protocol):
    """A filter depending on the node's pods that can tell when given pods do not matter to it, so
    that a preemption dry run may treat it as depending on the node alone there."""

    def unaffected_by(self, state: CycleState, pod: PodInfo, node: NodeInfo, pods: Sequence[PodInfo]) -> bool:
        """True only where adding any of ``pods`` to ``node`` or taking them off it (with AddPod /
        RemovePod on this cycle's ``state``), in any number and order, succeeds and leaves this
        plugin's Filter verdict for ``pod`` on ``node`` as it is now (the batched dry run then
        judges the node by that verdict without moving the pods through this plugin).
        Obligation: never True otherwise (False is always allowed)."""


class ResourceView(Protocol):
    """A node's resources with pods added and removed by arithmetic (see :class:`PreemptionArithmetic`)."""

    def add_pod(self, pod: PodInfo) -> None: ...

    def remove_pod(self, pod: PodInfo) -> None: ...

    def remove_pods(self, pods: Sequence[PodInfo]) -> None: ...

    def filter(self) -> Status | None:
        """The plugin's Filter verdict on the node with those pods."""

    def reprieve(self, pods: Sequence[PodInfo]) -> list[bool]:
        """Add each of ``pods`` in order, keeping it where :meth:`filter` then passes and taking it
        off again where not; which were kept."""


@runtime_checkable
class PreemptionArithmetic(Plugin, Protocol):
    """The resource-only preemption fast path of a filter whose verdict depends on the node's pods
    only through their summed requests and their count (NodeResourcesFit). When it is the only such
    filter of a cycle, a dry run may move pods by arithmetic instead of cloning the node and
    re-running every filter. Obligation: exact — :meth:`preemption_view`'s verdicts equal Filter's on
    a NodeInfo holding the same pods, so the same victims are chosen with the same statuses."""

    def preemption_view(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> ResourceView: ...

    def preemption_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, nodes: list[NodeInfo],
        nominated: NominatedLoad,
    ) -> np.ndarray:
        """For each of ``nodes`` at once: true only where the node has pods of lower priority than
        ``pod`` and Filter would still reject it with all of them removed and its ``nominated``
        load added. Obligation: never true where :meth:`preemption_view` would accept that node."""

    def nominated_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> list[Status | None]:
        """Filter on each node ``idx[k]`` with its ``nominated`` load added, for all of them at
        once: None where it passes, else its rejection. Obligation: exactly :meth:`preemption_view`
        with those nominated pods added, then ``filter()``."""

    def reprieve_many(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, nodes: Sequence[NodeInfo],
        nominated: NominatedLoad, victims: Sequence[Sequence[PodInfo]],
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """For every node at once, :meth:`preemption_view` of ``nodes[k]`` with its ``nominated``
        load added and ``victims[k]`` removed: whether ``filter()`` passes (per node) and, where it
        does, ``reprieve(victims[k])`` (per pod of the lists laid end to end; False elsewhere).
        None when it cannot answer exactly. Obligation: exactly those per-node verdicts."""
