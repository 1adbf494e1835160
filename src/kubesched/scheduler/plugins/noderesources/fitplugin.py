"""NodeResourcesFit (upstream ``fit.go``): Filter (the fit check of
:func:`~kubesched.scheduler.plugins.fit.fits`) and Score with LeastAllocated / MostAllocated /
RequestedToCapacityRatio (:mod:`.scoring`), each per node and over the node table, and the
resource-only preemption arithmetic (:class:`_ResourceView`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from kubesched.scheduler.framework.capabilities import (
    FailureStatusesVector,
    FilterVector,
    FilterVectorAt,
    PreemptionArithmetic,
    ScoreVector,
    VictimRequests,
)
from kubesched.scheduler.framework.found import StatusGroups
from kubesched.scheduler.framework.interface import (
    ADD,
    DELETE,
    MAX_NODE_SCORE,
    UPDATE,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.nominated import NominatedLoad
from kubesched.scheduler.framework.types import CPU, MEMORY, NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot, NodeTableView
from kubesched.scheduler.plugins.fit import (
    NATIVE,
    TOO_MANY_PODS,
    fit_requests,
    fits,
    headroom,
    insufficient,
    is_ignorable,
    is_tracked_scalar,
    shortfall_reasons,
)
from kubesched.scheduler.plugins.noderesources.scoring import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    broken_linear,
    least_allocated,
    most_allocated,
    node_alloc_req,
    requested_to_capacity_ratio,
    resource_specs,
    scoring_request,
)

FIT = "NodeResourcesFit"
#: upstream's default NodeResourcesFitArgs.scoringStrategy.type
DEFAULT_SCORING_STRATEGY = "LeastAllocated"
SIDECAR_REASON = "Pod has a restartable init container and the SidecarContainers feature is disabled"


def _amounts(pods: list[PodInfo], names: tuple[str, ...]) -> np.ndarray:
    """The requests of ``names`` of each of ``pods``, one row per name (each pod's read once and
    kept on the pod for the next dry runs)."""
    key = "NodeResourcesFit/amounts/" + ",".join(names)
    rows = []
    for pod in pods:
        row = pod.cache.get(key)
        if row is None:
            requests = pod.requests
            row = pod.cache[key] = tuple(requests.get(name, 0) for name in names)
        rows.append(row)
    flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(pods) * len(names))
    amounts: np.ndarray = flat.reshape(len(pods), len(names)).T
    return amounts


@dataclass(slots=True)
class _FitState:
    requests: dict[str, int]
    checked: list[tuple[str, int]]  # resources to check, in upstream order
    names: tuple[str, ...] = field(init=False)  # the resources of ``checked``

    def __post_init__(self) -> None:
        self.names = tuple(resource for resource, _ in self.checked)

    def clone(self) -> _FitState:
        return self


class NodeResourcesFit(
    PreFilterPlugin, FilterPlugin, FilterVector, FilterVectorAt, FailureStatusesVector, ScorePlugin, ScoreVector,
    EnqueueExtensions, PreemptionArithmetic,
):
    name = FIT

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        args = args or {}
        self.handle = handle
        self.ignored_resources = set(args.get("ignoredResources") or ())
        self.ignored_groups = set(args.get("ignoredResourceGroups") or ())
        strategy = args.get("scoringStrategy") or {}
        self.strategy = strategy.get("type") or DEFAULT_SCORING_STRATEGY
        if self.strategy not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
            raise ValueError(f"NodeResourcesFitArgs.scoringStrategy.type: unsupported value {self.strategy!r}")
        self.resources = resource_specs(strategy.get("resources"), "scoringStrategy")
        self.shape: list[tuple[int, int]] = []
        if self.strategy == "RequestedToCapacityRatio":
            points = (strategy.get("requestedToCapacityRatio") or {}).get("shape")
            if not points:
                raise ValueError("scoringStrategy.requestedToCapacityRatio.shape is required")
            scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            self.shape = [(int(p["utilization"]), int(p["score"]) * scale) for p in points]

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", DELETE), ClusterEvent("Node", ADD | UPDATE)]

    def _ignored(self, resource: str) -> bool:
        return is_ignorable(resource, self.ignored_resources, self.ignored_groups)

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if pod.restartable_init:
            return None, Status.unresolvable(SIDECAR_REASON)
        requests = pod.requests
        state.write(FIT, _FitState(requests, fit_requests(requests, self._ignored)))
        return None, None

    def _state(self, state: CycleState, pod: PodInfo) -> _FitState:
        s: _FitState | None = state.read(FIT)
        if s is None:
            self.pre_filter(state, pod)
            s = state.read(FIT)
        assert s is not None
        return s

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        short = fits(self._state(state, pod).checked, allocatable=node.allocatable, requested=node.requested,
                     pods=len(node.pods), allowed_pods=node.allowed_pods)
        return Status.unschedulable(*(r.reason for r in short)) if short else None

    def failure_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> StatusGroups:
        """Filter's rejection for each node of ``idx`` (nodes known to fail), computed as a vector;
        nodes failing for the same reasons share one Status."""
        return self._vector_failures(state, pod, snapshot, idx, passing=Status.unschedulable())

    def _vector_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad | None = None, passing: Status | None = None, below: int | None = None,
    ) -> StatusGroups:
        """Filter on each node ``idx[k]`` as a vector (see :meth:`_shortfalls`): ``passing`` where it
        passes, else its rejection (nodes failing for the same reasons share one Status)."""
        checks, _ = self._shortfalls(state, pod, snapshot, idx, nominated, below)
        code = np.zeros(len(idx), dtype=np.int64)
        for bit, (_, failing) in enumerate(checks):
            code |= failing.astype(np.int64) << bit
        # one Status per combination of reasons, picked for every node at once
        values, which = np.unique(code, return_inverse=True)
        shared = [passing if value == 0 else Status.unschedulable(
            *(reason for bit, (reason, _) in enumerate(checks) if value >> bit & 1)) for value in values.tolist()]
        return StatusGroups(shared, which.reshape(-1))

    def _shortfalls(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad | None, below: int | None,
    ) -> tuple[list[tuple[str, np.ndarray]], np.ndarray | None]:
        """Filter's reasons in order, each with whether it holds on each node ``idx[k]``: with the
        ``nominated`` load added when given, and without the pods of lower priority than ``below``
        when given (then also how many such pods each node has)."""
        checked = self._state(state, pod).checked
        table = snapshot.table
        for resource, _ in checked:
            table.ensure_resource(resource)  # before taking any array: it may add a row
        extra_pods = np.zeros(len(idx), dtype=np.int64)
        added = {resource: extra_pods for resource, _ in checked}  # per checked resource, per node
        if nominated is not None:
            extra_pods = nominated.count[idx]
            added = {resource: nominated.requested(resource)[idx] for resource, _ in checked}
        lower_count = None
        if below is not None:  # from the node table's per-priority sums
            lower_requested, lower_count = table.below_priority(below)
            lower_count = lower_count[idx]
            extra_pods = extra_pods - lower_count
            added = {resource: added[resource] - lower_requested[table.row[resource], idx] for resource, _ in checked}
        checks: list[tuple[str, np.ndarray]] = [
            (TOO_MANY_PODS, table.pod_count[idx] + extra_pods + 1 > table.allowed_pods[idx])]
        for resource, amount in checked:
            row = table.row[resource]
            checks.append((insufficient(resource),
                           amount > table.alloc[row, idx] - table.requested[row, idx] - added[resource]))
        return checks, lower_count

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        return self._fits(state, pod, snapshot.table, None)

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        return self._fits(state, pod, snapshot.table, where)

    def _fits(self, state: CycleState, pod: PodInfo, table: NodeTableView, where: np.ndarray | None) -> np.ndarray:
        """Filter per node (of ``where`` if given) from the table's columns."""
        s = self._state(state, pod)
        for resource, _ in s.checked:
            table.ensure_resource(resource)  # before taking any array: it may add a row

        def at(values: np.ndarray) -> np.ndarray:  # a row's take is about twice as fast as [row, where]
            return values if where is None else values.take(where)

        mask: np.ndarray = at(table.pod_count) < at(table.allowed_pods)
        for resource, amount in s.checked:
            row = table.row[resource]
            mask &= amount <= at(table.alloc[row]) - at(table.requested[row])
        return mask

    # -- preemption arithmetic ------------------------------------------------------------------
    def preemption_view(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> _ResourceView:
        return _ResourceView(self._state(state, pod), node)

    def preemption_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> np.ndarray:
        """Filter on every node ``idx[k]`` (by index) with all its pods of lower priority than ``pod`` gone
        and its ``nominated`` load added, from the node table's per-priority sums; marks only nodes that
        have such pods and still fail."""
        checks, lower_count = self._shortfalls(state, pod, snapshot, idx, nominated, pod.priority)
        assert lower_count is not None
        fails = np.zeros(len(idx), dtype=bool)
        for _, failing in checks:
            fails |= failing
        result: np.ndarray = fails & (lower_count > 0)
        return result

    def nominated_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> StatusGroups:
        return self._vector_failures(state, pod, snapshot, idx, nominated)

    def removal_failures(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        nominated: NominatedLoad,
    ) -> StatusGroups:
        """:meth:`preemption_view` on each node ``idx[k]`` with every pod of lower priority than
        ``pod`` removed and the ``nominated`` load added, then ``filter()``, for all at once."""
        return self._vector_failures(state, pod, snapshot, idx, nominated, below=pod.priority)

    def reprieve_many(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, nodes: Sequence[NodeInfo],
        nominated: NominatedLoad, victims: Sequence[Sequence[PodInfo]], requests: VictimRequests | None = None,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`preemption_view` on every node at once: ``nodes[k]`` with its ``nominated`` load
        added and ``victims[k]`` removed, whether Filter passes (per node), and where it does, the
        reprieve of ``victims[k]`` in order (per pod of the victims lists laid end to end). The
        reprieve goes position by position over all nodes together. None when an amount is too
        large for int64 sums to be exact (the per-node view then decides)."""
        checked = self._state(state, pod).checked
        table = snapshot.table
        rows = [table.ensure_resource(resource) for resource, _ in checked]  # may add rows: first
        count = len(nodes)
        idx = np.fromiter((info.index for info in nodes), dtype=np.int64, count=count)
        lengths = np.fromiter((len(pods) for pods in victims), dtype=np.int64, count=count)
        names = tuple(name for name, _ in checked)
        try:
            amounts = requests(names) if requests is not None else \
                _amounts([p for pods in victims for p in pods], names)
        except OverflowError:
            return None
        added = np.array([nominated.requested(name)[idx] for name, _ in checked],
                         dtype=np.int64).reshape(len(checked), count)
        pod_amounts = np.array([amount for _, amount in checked], dtype=np.int64).reshape(-1, 1)
        alloc, requested = table.alloc[rows][:, idx], table.requested[rows][:, idx]
        bound = 2**55  # a node holds few enough pods that sums of such amounts stay exact
        if any(int(np.abs(a).max(initial=0)) >= bound for a in (amounts, added, pod_amounts, alloc, requested)):
            return None
        left = alloc - requested - pod_amounts
        left -= added
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])) if count else lengths
        holding = np.flatnonzero(lengths)  # reduceat sums each node's run of victims (none: skipped)
        if len(holding) and amounts.shape[1]:
            left[:, holding] += np.add.reduceat(amounts, starts[holding], axis=1)
        pods_left = table.allowed_pods[idx] - table.pod_count[idx] - 1 + lengths - nominated.count[idx]
        fits: np.ndarray = (pods_left >= 0) & (left >= 0).all(axis=0)
        kept = np.zeros(int(lengths.sum()), dtype=bool)
        for j in range(int(lengths[fits].max(initial=0))):
            at = np.flatnonzero(fits & (lengths > j))
            where = starts[at] + j
            stays = (pods_left[at] >= 1) & (amounts[:, where] <= left[:, at]).all(axis=0)
            at, where = at[stays], where[stays]
            kept[where] = True
            left[:, at] -= amounts[:, where]
            pods_left[at] -= 1
        return fits, kept

    # -- score -----------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        requested, allocatable, weights = [], [], []
        for resource, weight in self.resources:
            alloc, req = node_alloc_req(node, resource, scoring_request(pod, resource, False), False)
            requested.append(req if alloc else 0)
            allocatable.append(alloc)
            weights.append(weight)
        if self.strategy == "LeastAllocated":
            return least_allocated(requested, allocatable, weights)
        if self.strategy == "MostAllocated":
            return most_allocated(requested, allocatable, weights)
        return requested_to_capacity_ratio(self.shape, requested, allocatable, weights)

    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        table = snapshot.table
        scored: list[tuple[str, int, int, int]] = []  # (resource, row, pod request, weight)
        for resource, weight in self.resources:
            pod_req = scoring_request(pod, resource, False)
            if resource not in NATIVE and (pod_req == 0 or not is_tracked_scalar(resource)):
                continue
            row = table.row.get(resource)
            if row is not None:
                scored.append((resource, row, pod_req, weight))
        if not scored:
            return np.zeros(len(idx), dtype=np.int64)
        # one row per scored resource, one column per node of idx
        alloc = table.alloc.take(idx, axis=1)[[row for _, row, _, _ in scored]]
        nonzero = table.nonzero.take(idx, axis=1) if any(r in (CPU, MEMORY) for r, _, _, _ in scored) else None
        used = np.empty_like(alloc)
        for k, (resource, row, _, _) in enumerate(scored):
            if nonzero is not None and resource == CPU:
                used[k] = nonzero[0]
            elif nonzero is not None and resource == MEMORY:
                used[k] = nonzero[1]
            else:
                used[k] = table.requested[row].take(idx)
        req = used + np.array([pod_req for _, _, pod_req, _ in scored], dtype=np.int64)[:, None]
        weights = np.array([weight for _, _, _, weight in scored], dtype=np.int64)[:, None]
        present = alloc > 0
        if self.strategy != "RequestedToCapacityRatio" and bool(present.all()):
            # every node has every resource (the usual case): the same formulas, no masks
            if self.strategy == "LeastAllocated":
                s = np.maximum(alloc - req, 0) * MAX_NODE_SCORE // alloc
            else:
                s = np.minimum(req, alloc) * MAX_NODE_SCORE // alloc
            fast: np.ndarray = (s * weights).sum(axis=0) // int(weights.sum())
            return fast
        safe = np.where(present, alloc, 1)
        if self.strategy == "LeastAllocated":
            s = np.where(req > alloc, 0, (alloc - req) * MAX_NODE_SCORE // safe)
        elif self.strategy == "MostAllocated":
            s = np.minimum(req, alloc) * MAX_NODE_SCORE // safe
        else:
            util = np.where(req > alloc, MAX_UTILIZATION, req * MAX_UTILIZATION // safe)
            s = np.array([[broken_linear(self.shape, int(u)) for u in line] for line in util],
                         dtype=np.int64).reshape(util.shape)
            present &= s > 0
        total = np.where(present, s * weights, 0).sum(axis=0)
        weight_sum = np.where(present, weights, 0).sum(axis=0)
        if self.strategy == "RequestedToCapacityRatio":
            ratio = total / np.where(weight_sum > 0, weight_sum, 1)
            out = np.floor(ratio + 0.5).astype(np.int64)
        else:
            out = total // np.where(weight_sum > 0, weight_sum, 1)
        result: np.ndarray = np.where(weight_sum > 0, out, 0)
        return result


class _ResourceView:
    """A node as Filter judges it for one pod, kept as the
    :func:`~kubesched.scheduler.plugins.fit.headroom` left of each checked resource and the pod
    slots left once the pod is placed: pods move on and off by subtraction and addition, and the
    node fits while nothing is negative."""

    __slots__ = ("names", "left", "pods_left")

    def __init__(self, fit: _FitState, node: NodeInfo) -> None:
        self.names = fit.names
        self.left = headroom(fit.checked, allocatable=node.allocatable, requested=node.requested)
        self.pods_left = node.allowed_pods - len(node.pods) - 1

    def _take(self, pod: PodInfo, sign: int) -> None:
        left, requests = self.left, pod.requests
        for i, name in enumerate(self.names):
            amount = requests.get(name)
            if amount:
                left[i] -= sign * amount
        self.pods_left -= sign

    def add_pod(self, pod: PodInfo) -> None:
        self._take(pod, 1)

    def remove_pod(self, pod: PodInfo) -> None:
        self._take(pod, -1)

    def remove_pods(self, pods: Sequence[PodInfo]) -> None:
        for pod in pods:
            self._take(pod, -1)

    def filter(self) -> Status | None:
        left = self.left
        if self.pods_left >= 0 and (not left or min(left) >= 0):
            return None
        return Status(Code.UNSCHEDULABLE, shortfall_reasons(self.names, self.left, self.pods_left))

    def reprieve(self, pods: Sequence[PodInfo]) -> list[bool]:
        names, left = self.names, self.left
        kept: list[bool] = []
        for pod in pods:
            # filter() with the pod added: a pod slot left, and no headroom going negative
            stays = self.pods_left >= 1
            if stays:
                requests = pod.requests
                for name, value in zip(names, left):
                    if requests.get(name, 0) > value:
                        stays = False
                        break
                else:
                    self._take(pod, 1)
            kept.append(stays)
        return kept
