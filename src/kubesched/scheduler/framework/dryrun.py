"""The nodes of a preemption dry run (upstream ``SelectVictimsOnNode`` works on a clone of the
NodeInfo and of the cycle state). Two forms of :class:`~kubesched.scheduler.framework.capabilities.DryRunNode`:

- :class:`ClonedNode`, upstream's: pods move on the clone, the PreFilter extensions follow, every
  filter judges;
- :class:`ArithmeticNode`, when one filter offering
  :class:`~kubesched.scheduler.framework.capabilities.PreemptionArithmetic` is the only filter whose
  verdict depends on the node's pods: pods move in that filter's resource view, nothing is cloned.

and :class:`ArithmeticBatch`, the arithmetic case for many nodes at once (no statuses: a node it
rejects is asked again node by node when its status is wanted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np

from kubesched.scheduler.framework.capabilities import PluginsRunner, PreemptionArithmetic, VictimRequests
from kubesched.scheduler.framework.interface import CycleState, FilterPlugin, Status
from kubesched.scheduler.framework.nominated import NominatedLoad
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot


class ClonedNode:
    __slots__ = ("_runner", "_state", "_pod", "_node", "pods")

    def __init__(self, runner: PluginsRunner, state: CycleState, pod: PodInfo, node: NodeInfo) -> None:
        self._runner = runner
        self._state = state.clone()
        self._pod = pod
        self._node = node.clone()
        self.pods = node.pods  # the original's list: the clone's changes as pods move

    @property
    def name(self) -> str:
        return self._node.name

    def remove_pod(self, pod: PodInfo) -> Status | None:
        self._node.remove_pod(pod)
        return self._runner.run_remove_pod(self._state, self._pod, pod, self._node)

    def add_pod(self, pod: PodInfo) -> Status | None:
        self._node.add_pod(pod)
        return self._runner.run_add_pod(self._state, self._pod, pod, self._node)

    def remove_pods(self, pods: Sequence[PodInfo]) -> Status | None:
        for pod in pods:
            status = self.remove_pod(pod)
            if status is not None:
                return status
        return None

    @property
    def state(self) -> CycleState:
        """The clone's cycle state (to read the PreFilter states; move pods through the methods)."""
        return self._state

    def remove_pod_elsewhere(self, pod: PodInfo, node: NodeInfo) -> Status | None:
        """Take ``pod``, running on another ``node``, out of the clone's cycle state (the PreFilter
        extensions' RemovePod with that node's labels): what the filters count of other nodes
        follows, the node being dry-run is left as it is."""
        return self._runner.run_remove_pod(self._state, self._pod, pod, node)

    def add_pod_elsewhere(self, pod: PodInfo, node: NodeInfo) -> Status | None:
        """Undo :meth:`remove_pod_elsewhere`."""
        return self._runner.run_add_pod(self._state, self._pod, pod, node)

    def run_filters(self, pods_only: bool) -> Status | None:
        return self._runner.run_filter_with_nominated(self._state, self._pod, self._node, pods_only)

    def reprieve(self, pods: Sequence[PodInfo]) -> tuple[list[bool], Status | None]:
        kept: list[bool] = []
        for pod in pods:
            status = self.add_pod(pod)
            if status is not None:
                return kept, status
            if self.run_filters(pods_only=True) is None:
                kept.append(True)
                continue
            status = self.remove_pod(pod)
            if status is not None:
                return kept, status
            kept.append(False)
        return kept, None


class ArithmeticNode:
    """The resource view starts with the node's pods plus ``nominated`` (the higher-or-equal
    nominated pods: pass 1 of RunFilterPluginsWithNominatedPods; with only sums at stake, passing
    it implies passing pass 2). The other filters depend on the node alone and are asked about the
    node itself, in their order; ``failed`` reports a filter failure as the framework does."""

    __slots__ = ("_filters", "_arithmetic", "_state", "_pod", "_node", "_view", "_failed")

    def __init__(
        self, filters: list[FilterPlugin], arithmetic: PreemptionArithmetic, state: CycleState, pod: PodInfo,
        node: NodeInfo, nominated: list[PodInfo], failed: Callable[[Status, str], Status],
    ) -> None:
        self._filters = filters
        self._arithmetic = arithmetic
        self._state = state
        self._pod = pod
        self._node = node
        self._failed = failed
        self._view = arithmetic.preemption_view(state, pod, node)
        for other in nominated:
            self._view.add_pod(other)

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def pods(self) -> list[PodInfo]:
        return self._node.pods

    def remove_pod(self, pod: PodInfo) -> Status | None:
        self._view.remove_pod(pod)
        return None

    def add_pod(self, pod: PodInfo) -> Status | None:
        self._view.add_pod(pod)
        return None

    def remove_pods(self, pods: Sequence[PodInfo]) -> Status | None:
        self._view.remove_pods(pods)
        return None

    def reprieve(self, pods: Sequence[PodInfo]) -> tuple[list[bool], Status | None]:
        return self._view.reprieve(pods), None

    def run_filters(self, pods_only: bool) -> Status | None:
        arithmetic = self._arithmetic
        if pods_only:
            status = self._view.filter()
            return None if status is None else self._failed(status, arithmetic.name)
        skip = self._state.skip_filter_plugins
        for pl in self._filters:
            if pl.name in skip:
                continue
            status = self._view.filter() if pl is arithmetic else pl.filter(self._state, self._pod, self._node)
            if status is not None and not status.is_success():
                return self._failed(status, pl.name)
        return None


class ArithmeticBatch:
    """:class:`ArithmeticNode` for many nodes at once: the filters other than the arithmetic one
    depend on the node alone, or (``decided``) do not depend on the pods that move on the nodes it
    marks, so their verdicts on the nodes as they are hold throughout (``others_pass``); the
    arithmetic filter removes, adds and reprieves pods for all nodes together."""

    __slots__ = ("_arithmetic", "_state", "_pod", "_snapshot", "_nominated", "_others_pass", "_decided", "_last")

    def __init__(
        self, arithmetic: PreemptionArithmetic, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot,
        nominated: NominatedLoad, others_pass: Callable[[Sequence[NodeInfo]], np.ndarray],
        decided: Callable[[Sequence[NodeInfo], Sequence[Sequence[PodInfo]]], np.ndarray] | None = None,
    ) -> None:
        self._arithmetic = arithmetic
        self._state = state
        self._pod = pod
        self._snapshot = snapshot
        self._nominated = nominated
        self._others_pass = others_pass
        self._decided = decided
        #: the last call's nodes and victim sets, with what ``decided`` and ``others_pass`` answered:
        #: a policy reprieving the same pods of the same nodes in other orders (AffinityAwarePreemption's
        #: options) asks them once (both depend on which pods move, not on their order)
        self._last: tuple[tuple[int, ...], Sequence[Sequence[PodInfo]], np.ndarray | None, np.ndarray] | None = None

    def reprieve(
        self, nodes: Sequence[NodeInfo], victims: Sequence[Sequence[PodInfo]], requests: VictimRequests | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        # each pod is on one node: the nodes and the set of all moving pods say which pods move where
        # (the sets compared only for the same nodes: a batch of other nodes is asked afresh)
        node_ids = tuple(map(id, nodes))
        last = self._last
        if last is not None and last[0] == node_ids and _moving(last[1]) == _moving(victims):
            decided, others = last[2], last[3]
        else:
            decided = None if self._decided is None else self._decided(nodes, victims)
            others = self._others_pass(nodes) if decided is None or decided.any() else np.zeros(0, dtype=bool)
            self._last = (node_ids, victims, decided, others)
        if decided is not None and not decided.any():
            return None
        answer = self._arithmetic.reprieve_many(self._state, self._pod, self._snapshot, nodes, self._nominated, victims,
                                                requests)
        if answer is None:
            return None
        fits, kept = answer
        fits &= others
        if not fits.all():  # reprieves on nodes that fail another filter do not count
            lengths = np.fromiter((len(pods) for pods in victims), dtype=np.int64, count=len(victims))
            kept &= np.repeat(fits, lengths)
        return fits, kept, decided


def _moving(victims: Sequence[Sequence[PodInfo]]) -> frozenset[int]:
    """The pods that move, by identity, whatever their order."""
    return frozenset(map(id, chain.from_iterable(victims)))
