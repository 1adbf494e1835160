"""Capabilities beyond upstream's extension points: what a plugin may offer the framework so that it
finds the same answers faster, and what the framework offers preemption plugins on top of them.

1. vector forms: the answer of one of the plugin's points for every node of the node table at once
   (Filter, Filter on a window of nodes, the statuses of its rejections, Score, NormalizeScore),
   and the rejections a vector filter is handed when its per-node form would act on them;
2. preemption dry runs: filters that may be skipped (a verdict independent of the node's pods, or
   of given pods) or judged by arithmetic (the resource-only :class:`PreemptionArithmetic`);
3. what a preemption (PostFilter) plugin gets from the framework for its dry runs: the
   :class:`PluginsRunner` (upstream's, plus the fast paths built on 2.), its dry-run nodes one by
   one or many at once, and the preemption metrics.

The plugin capabilities (1. and 2.) are optional; each states the exactness it owes (the framework
uses it in place of the per-node form, so any difference would change a scheduling decision). They
are declared like extension points: the runtime finds them with ``isinstance``, which only sees that
the members exist, so a plugin lists every protocol it is used through among its bases, or mypy would
not check that signature (``tests/scheduler/test_declared_capabilities.py`` holds every registered
plugin to it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from kubesched.scheduler.framework.interface import Plugin

if TYPE_CHECKING:
    import numpy as np

    from kubesched.scheduler.framework.found import StatusGroups
    from kubesched.scheduler.framework.interface import CycleState, PreFilterResult, Status
    from kubesched.scheduler.framework.nominated import NominatedLoad
    from kubesched.scheduler.framework.types import NodeInfo, PodInfo
    from kubesched.scheduler.framework.views import NodeTableSnapshot


# -- vector forms (each owes exactly the answer of the point it stands for) ---------------------------
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
    ) -> list[Status] | StatusGroups:
        """For nodes ``idx`` that this plugin's Filter rejects: the Status Filter returns for each
        (same code and reasons, in order), as a list or as groups; equal statuses may be one shared
        object."""


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


#: the requests of the named resources of a dry run's victims (all nodes' lists laid end to end),
#: one row per resource and one column per victim, as int64: a policy that keeps them per node
#: hands them over instead of the filter reading every victim's own
VictimRequests = Callable[[tuple[str, ...]], "np.ndarray"]


@runtime_checkable
class PreemptionArithmetic(Plugin, Protocol):
    """The resource-only preemption fast path of a filter whose verdict depends on the node's pods
    only through their summed requests and their count (NodeResourcesFit). When it is the only such
    filter of a cycle, a dry run may move pods by arithmetic instead of cloning the node and
    re-running every filter. Obligation: exact — :meth:`preemption_view`'s verdicts equal Filter's on
    a NodeInfo holding the same pods, so the same victims are chosen with the same statuses."""

    def preemption_view(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> ResourceView: ...

    def preemption_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> np.ndarray:
        """For each node ``idx[k]`` (by index) at once: true only where the node has pods of lower priority than
        ``pod`` and Filter would still reject it with all of them removed and its ``nominated``
        load added. Obligation: never true where :meth:`preemption_view` would accept that node."""

    def nominated_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> StatusGroups:
        """Filter on each node ``idx[k]`` with its ``nominated`` load added, for all of them at
        once: None where it passes, else its rejection (nodes failing alike share a Status). Obligation: exactly :meth:`preemption_view`
        with those nominated pods added, then ``filter()``."""

    def removal_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> StatusGroups:
        """Filter on each node ``idx[k]`` with every pod of lower priority than ``pod`` removed and
        its ``nominated`` load added, for all at once (None where it passes). Obligation: exactly
        :meth:`preemption_view` with those pods removed and added, then ``filter()``."""

    def reprieve_many(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, nodes: Sequence[NodeInfo],
        nominated: NominatedLoad, victims: Sequence[Sequence[PodInfo]], requests: VictimRequests | None = None,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """For every node at once, :meth:`preemption_view` of ``nodes[k]`` with its ``nominated``
        load added and ``victims[k]`` removed: whether ``filter()`` passes (per node) and, where it
        does, ``reprieve(victims[k])`` (per pod of the lists laid end to end; False elsewhere).
        None when it cannot answer exactly. ``requests``, when given, reads the victims' requests
        (instead of each victim's own). Obligation: exactly those per-node verdicts."""


# -- what the framework offers preemption plugins for their dry runs ---------------------------------
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
        self, nodes: Sequence[NodeInfo], victims: Sequence[Sequence[PodInfo]], requests: VictimRequests | None = None,
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

    def rejections_noted_before(self, state: CycleState, plugin: object) -> bool:
        """Whether a filter acting on its rejections (:class:`FilterRejectionsNoted`) runs before
        ``plugin`` in this cycle: a dry run must then call it even on nodes ``plugin`` rules out."""

    def dry_run_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, arithmetic: PreemptionArithmetic | None
    ) -> DryRunNode:
        """``node`` ready for a dry run: by arithmetic with ``arithmetic`` (what
        :meth:`preemption_arithmetic` returned), else a clone of the node and of ``state``."""

    def nominated_load(self, pod: PodInfo, snapshot: NodeTableSnapshot) -> NominatedLoad:
        """The nominated pods ``pod``'s filters count on each node (priority >= its own, itself
        left out), summed per column of ``snapshot``'s node table."""

    def removal_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        arithmetic: PreemptionArithmetic, nominated: NominatedLoad,
    ) -> list[Status | None]:
        """What :meth:`dry_run_node` with ``arithmetic`` (exact: :meth:`preemption_arithmetic`)
        says on each node ``idx[k]`` once every pod of lower priority than the pod is removed
        (``run_filters(pods_only=False)``), for all of them at once."""

    def dry_run_batch(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, arithmetic: PreemptionArithmetic,
        nominated: NominatedLoad,
    ) -> DryRunBatch | None:
        """The dry run of many nodes of ``snapshot`` at once, with ``arithmetic`` (what
        :meth:`preemption_fit` returned) and the ``nominated`` load (what :meth:`nominated_load`
        returned). The other filters of the cycle that depend on the node's pods must offer
        :class:`PodMovesNeutral` (else None): the batch answers for the nodes where none of them
        is affected by the victims or the nominated pods."""


class PreemptionMetrics(Protocol):
    """The preemption metrics (``scheduler_preemption_attempts_total``, ``scheduler_preemption_victims``)."""

    preemption_attempts: int

    def observe_victims(self, count: int) -> None: ...

    def count_policy(self, plugin: str, counter: str, n: int = 1) -> None:
        """kubesched's opt-in preemption plugins: count ``n`` for ``plugin``'s ``counter`` (see
        :data:`kubesched.scheduler.metrics.POLICY_COUNTERS`)."""

    def observe_preemption_goroutine(self, result: str, seconds: float) -> None:
        """One asynchronous preemption's background work done (``result``: "success" or "error")."""
