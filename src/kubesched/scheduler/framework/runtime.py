"""The framework runtime: one profile's plugins run at each extension point
(upstream ``framework/runtime/framework.go``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kubesched.k8s.objects import ApiError
from kubesched.scheduler.framework.interface import (
    ALL,
    ClusterEvent,
    Code,
    CycleState,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.helpers import MAX_NODE_SCORE


class NominatorView(Protocol):
    def pods_for_node(self, node: str) -> list[PodInfo]: ...

    def nodes(self) -> Iterable[str]: ...


@dataclass
class Profile:
    """Which plugins run where, as resolved from a KubeSchedulerConfiguration profile."""

    scheduler_name: str
    plugins: dict[str, Any]  # name -> instance
    points: dict[str, list[str]]  # extension point -> ordered plugin names
    weights: dict[str, int] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


class Framework:
    def __init__(self, profile: Profile, nominator: NominatorView) -> None:
        self.profile = profile
        self.name = profile.scheduler_name
        self.nominator = nominator
        p = profile.plugins

        def at(point: str) -> list[Any]:
            return [p[n] for n in profile.points.get(point, ())]

        sorts = at("queueSort")
        self.queue_sort = sorts[0] if sorts else None
        self.pre_enqueue_plugins = at("preEnqueue")
        self.pre_filter_plugins = at("preFilter")
        self.filter_plugins = at("filter")
        self.post_filter_plugins = at("postFilter")
        self.pre_score_plugins = at("preScore")
        self.score_plugins = at("score")
        self.reserve_plugins = at("reserve")
        self.permit_plugins = at("permit")
        self.pre_bind_plugins = at("preBind")
        self.bind_plugins = at("bind")
        self.post_bind_plugins = at("postBind")
        self.weights = {name: (profile.weights.get(name) or 1) for name in profile.points.get("score", ())}
        self._extensions = [pl for pl in self.pre_filter_plugins if hasattr(pl, "add_pod")]
        self._pod_dependent_filters = [pl for pl in self.filter_plugins if getattr(pl, "depends_on_pods", True)]

    @property
    def percentage_of_nodes_to_score(self) -> int | None:
        return self.profile.percentage_of_nodes_to_score

    def events_by_plugin(self) -> dict[str, list[ClusterEvent]]:
        """Each plugin's registered events. A plugin without ``events_to_register`` is interested in
        every event (upstream ``fillEnqueueExtensions`` gives it ``UnrollWildCardResource()``)."""
        out: dict[str, list[ClusterEvent]] = {}
        for name, plugin in self.profile.plugins.items():
            register = getattr(plugin, "events_to_register", None)
            out[name] = list(register()) if register is not None else [ClusterEvent("*", ALL)]
        return out

    # -- queue ------------------------------------------------------------------------------
    def sort_key(self, priority: int, timestamp: float) -> tuple[Any, ...]:
        if self.queue_sort is None:
            return (timestamp,)
        key: tuple[Any, ...] = self.queue_sort.sort_key(priority, timestamp)
        return key

    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        for pl in self.pre_enqueue_plugins:
            status = pl.pre_enqueue(pod)
            if status is not None and not status.is_success():
                return status.with_plugin(pl.name)
        return None

    # -- filtering --------------------------------------------------------------------------
    def run_pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        result: PreFilterResult | None = None
        contributors: list[str] = []
        for pl in self.pre_filter_plugins:
            res, status = pl.pre_filter(state, pod)
            if status is not None:
                if status.code == Code.SKIP:
                    state.skip_filter_plugins.add(pl.name)
                    continue
                if not status.is_success():
                    if status.is_rejected():
                        return None, status.with_plugin(pl.name)
                    return None, Status.error(f'running PreFilter plugin "{pl.name}": {status.message()}', pl.name)
            if res is not None and res.node_names is not None:
                contributors.append(pl.name)
                result = res if result is None else result.merge(res)
                if result.node_names is not None and not result.node_names:
                    # upstream: a plain Unschedulable status with no failed plugin recorded
                    if len(contributors) > 1:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(contributors)}] simultaneously"
                    else:
                        msg = f"node(s) didn't satisfy plugin {contributors[0]}"
                    return None, Status.unschedulable(msg)
        return result, None

    def run_add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> None:
        for pl in self._extensions:
            if pl.name not in state.skip_filter_plugins:
                pl.add_pod(state, pod, to_add, node)

    def run_remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> None:
        for pl in self._extensions:
            if pl.name not in state.skip_filter_plugins:
                pl.remove_pod(state, pod, to_remove, node)

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, pods_only: bool = False) -> Status | None:
        """Filters in order, stopping at the first failure. ``pods_only`` skips plugins whose verdict
        depends only on the node (``depends_on_pods = False``): valid when they already passed on
        this node and only the node's pods changed, as in the preemption reprieve loop."""
        skip = state.skip_filter_plugins
        for pl in self._pod_dependent_filters if pods_only else self.filter_plugins:
            if pl.name in skip:
                continue
            status = pl.filter(state, pod, node)
            if status is not None and not status.is_success():
                return _filter_failed(status, pl.name)
        return None

    def nominated_pods_to_add(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        return [
            p for p in self.nominator.pods_for_node(node_name) if p.priority >= pod.priority and p.uid != pod.uid
        ]

    def run_filter_with_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pods_only: bool = False
    ) -> Status | None:
        """Upstream RunFilterPluginsWithNominatedPods: pass 1 with higher-or-equal nominated pods
        added to the node, pass 2 without them (only when pass 1 added pods)."""
        nominated = self.nominated_pods_to_add(pod, node.name)
        if not nominated:
            return self.run_filter(state, pod, node, pods_only)
        node_with = node.clone()
        state_with = state.clone()
        for other in nominated:
            node_with.add_pod(other)
            self.run_add_pod(state_with, pod, other, node_with)
        status = self.run_filter(state_with, pod, node_with, pods_only)
        if status is not None:
            return status
        return self.run_filter(state, pod, node, pods_only)

    def filter_all(
        self, state: CycleState, pod: PodInfo, snapshot: Any
    ) -> tuple[np.ndarray, np.ndarray, dict[int, Status]]:
        """Evaluate the filters on every node of the snapshot at once.

        Returns the feasibility mask, the index of the first failing filter plugin per node (-1 if
        none) and the statuses already computed (by per-node plugins). Nodes with nominated pods are
        evaluated per node with the two-pass rule.
        """
        nodes = snapshot.node_infos
        n = len(nodes)
        alive = np.ones(n, dtype=bool)
        first_fail = np.full(n, -1, dtype=np.int64)
        statuses: dict[int, Status] = {}
        skip = state.skip_filter_plugins
        for i, pl in enumerate(self.filter_plugins):
            if pl.name in skip:
                continue
            vector = getattr(pl, "filter_vector", None)
            mask = vector(state, pod, snapshot) if vector is not None else None
            if mask is None:
                mask = np.ones(n, dtype=bool)
                for j in np.flatnonzero(alive):
                    status = pl.filter(state, pod, nodes[j])
                    if status is not None and not status.is_success():
                        mask[j] = False
                        statuses[int(j)] = _filter_failed(status, pl.name)
            newly = alive & ~mask
            first_fail[newly] = i
            alive &= mask
        # nodes that have nominated pods of >= priority: redo them with the two-pass rule
        for node_name in list(self.nominator.nodes()):
            info = snapshot.get(node_name)
            if info is None or not self.nominated_pods_to_add(pod, node_name):
                continue
            j = info.index
            status = self.run_filter_with_nominated(state, pod, info)
            statuses.pop(j, None)
            if status is None:
                alive[j] = True
                first_fail[j] = -1
            else:
                alive[j] = False
                statuses[j] = status
                first_fail[j] = -2
        return alive, first_fail, statuses

    def status_for(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, first_fail: int, statuses: dict[int, Status]
    ) -> Status:
        known = statuses.get(node.index)
        if known is not None:
            return known
        if first_fail >= 0:
            pl = self.filter_plugins[first_fail]
            status = pl.filter(state, pod, node)
            if status is not None:
                return _filter_failed(status, pl.name)
        status = self.run_filter_with_nominated(state, pod, node)
        return status if status is not None else Status(Code.SUCCESS)

    def statuses_for(
        self, state: CycleState, pod: PodInfo, snapshot: Any, indices: list[int], first_fail: np.ndarray,
        statuses: dict[int, Status],
    ) -> list[Status]:
        """:meth:`status_for` for many failed nodes: plugins offering ``failure_statuses`` (the
        vector form of their Filter's rejection) answer for all their nodes at once."""
        nodes = snapshot.node_infos
        out: list[Status | None] = [None] * len(indices)
        by_plugin: dict[int, list[int]] = {}
        for pos, j in enumerate(indices):
            known = statuses.get(j)
            if known is not None:
                out[pos] = known
                continue
            f = int(first_fail[j])
            if f >= 0 and hasattr(self.filter_plugins[f], "failure_statuses"):
                by_plugin.setdefault(f, []).append(pos)
            else:
                out[pos] = self.status_for(state, pod, nodes[j], f, statuses)
        for f, positions in by_plugin.items():
            pl = self.filter_plugins[f]
            idx = np.asarray([indices[p] for p in positions], dtype=np.int64)
            for pos, status in zip(positions, pl.failure_statuses(state, pod, snapshot, idx)):
                out[pos] = status.with_plugin(pl.name)
        return [st if st is not None else Status(Code.SUCCESS) for st in out]

    # -- post filter ------------------------------------------------------------------------
    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        failed = ""
        for pl in self.post_filter_plugins:
            r, s = pl.post_filter(state, pod, statuses)
            if s.is_success():
                return r, s
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s.with_plugin(pl.name)
            if not s.is_rejected():
                return None, Status(Code.ERROR, s.reasons, pl.name)
            if r is not None and r.nominated_node_name is not None:
                result = r
            reasons.extend(s.reasons)
            failed = failed or pl.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), failed)

    # -- scoring ----------------------------------------------------------------------------
    def run_score(
        self, state: CycleState, pod: PodInfo, snapshot: Any, idx: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """PreScore + Score + NormalizeScore + weights for the feasible nodes ``idx``.
        Returns the totals and the weighted score of each plugin (for explanations)."""
        nodes = snapshot.node_infos
        feasible = [nodes[i] for i in idx.tolist()]
        for pl in self.pre_score_plugins:
            status = pl.pre_score(state, pod, feasible)
            if status is not None and status.code == Code.SKIP:
                state.skip_score_plugins.add(pl.name)
            elif status is not None and not status.is_success():
                raise RuntimeError(f'running PreScore plugin "{pl.name}": {status.message()}')
        totals = np.zeros(len(idx), dtype=np.int64)
        per_plugin: dict[str, np.ndarray] = {}
        for pl in self.score_plugins:
            if pl.name in state.skip_score_plugins:
                continue
            vector = getattr(pl, "score_vector", None)
            if vector is not None:
                scores = vector(state, pod, snapshot, idx)
            else:
                scores = np.array([pl.score(state, pod, node) for node in feasible], dtype=np.int64)
            normalize_vector = getattr(pl, "normalize_vector", None)
            normalize = getattr(pl, "normalize_score", None)
            if normalize_vector is not None:
                scores = normalize_vector(state, pod, scores)
            elif normalize is not None:
                as_list = [int(s) for s in scores]
                normalize(state, pod, feasible, as_list)
                scores = np.array(as_list, dtype=np.int64)
            if len(scores) and (scores.min() < 0 or scores.max() > MAX_NODE_SCORE):
                raise RuntimeError(f"plugin {pl.name} returned a score out of range [0, 100]")
            weighted = scores * self.weights.get(pl.name, 1)
            per_plugin[pl.name] = weighted
            totals += weighted
        return totals, per_plugin

    # -- binding ----------------------------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.reserve_plugins:
            status = pl.reserve(state, pod, node_name)
            if status is not None and not status.is_success():
                return _failed(status, "Reserve", pl.name)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            unreserve = getattr(pl, "unreserve", None)
            if unreserve is not None:
                unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.permit_plugins:
            status = pl.permit(state, pod, node_name)
            if status is not None and not status.is_success() and status.code != Code.WAIT:
                return _failed(status, "Permit", pl.name)
            # (waiting Permit plugins are not supported: a Wait counts as an approval)
        return None

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """PreBind then Bind (the first Bind plugin not returning Skip). A plugin raising an API
        error fails with that error's message, as upstream's DefaultBinder returns it."""
        for pl in self.pre_bind_plugins:
            status = pl.pre_bind(state, pod, node_name)
            if status is not None and not status.is_success():
                return _failed(status, "PreBind", pl.name)
        for pl in self.bind_plugins:
            try:
                status = pl.bind(state, pod, node_name)
            except ApiError as err:
                status = Status.error(err.message)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and not status.is_success():
                return _failed(status, "Bind", pl.name)
            return status
        return None

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)


def _failed(status: Status, point: str, plugin: str) -> Status:
    """A Reserve/Permit/PreBind/Bind failure as upstream's runtime reports it: a rejection keeps
    its reasons and records the plugin; any other code becomes an Error whose message is prefixed
    ``running <point> plugin "<name>": ``."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.error(f'running {point} plugin "{plugin}": {status.message()}', plugin)


def _filter_failed(status: Status, plugin: str) -> Status:
    """Upstream ``RunFilterPlugins``: a Filter may only reject; any other code becomes an Error
    ``running "<name>" filter plugin: <message>``. The failing plugin is recorded either way."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.error(f'running "{plugin}" filter plugin: {status.message()}', plugin)
