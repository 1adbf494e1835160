"""The framework runtime: one profile's plugins run at each extension point
(upstream ``framework/runtime/framework.go``).

Plugins are sorted by the extension points and vector capabilities they implement (the protocols of
:mod:`~kubesched.scheduler.framework.interface` and :mod:`~kubesched.scheduler.framework.capabilities`)
once, when the framework is built; running a point is then a loop over a typed list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from kubesched.k8s.objects import ApiError
from kubesched.scheduler.framework.capabilities import (
    DryRunNode,
    FailureStatusesVector,
    FilterRejectionsNoted,
    FilterVector,
    FilterVectorAt,
    NormalizeVector,
    PodIndependentFilter,
    PodMovesNeutral,
    PreemptionArithmetic,
    ScoreVector,
)
from kubesched.scheduler.framework.dryrun import ArithmeticBatch, ArithmeticNode, ClonedNode
from kubesched.scheduler.framework.extender import Extender, ExtenderError
from kubesched.scheduler.framework.interface import (
    ALL,
    EXTENSION_POINTS,
    FEASIBLE_COLUMNS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    PendingBind,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.nominated import NominatedLoad, NominatedSums
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot, NominatorView
from kubesched.scheduler.framework.waiting import MAX_WAIT_SECONDS, WaitingPod, WaitingPods


@dataclass
class Profile:
    """Which plugins run where, as resolved from a KubeSchedulerConfiguration profile."""

    scheduler_name: str
    plugins: dict[str, Plugin]  # name -> instance
    points: dict[str, list[str]]  # extension point -> ordered plugin names
    weights: dict[str, int] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


@dataclass(slots=True)
class _Scorer:
    """A Score plugin with the optional forms of its score and normalization."""

    plugin: ScorePlugin
    vector: ScoreVector | None
    normalize_vector: NormalizeVector | None
    normalize: ScoreExtensions | None


class Framework:
    def __init__(self, profile: Profile, nominator: NominatorView, extenders: list[Extender] | None = None) -> None:
        self.profile = profile
        #: the scheduler's extenders, in calling order (upstream ``Handle.Extenders``)
        self.extenders: list[Extender] = list(extenders or ())
        #: ``(extension point, status label, seconds)`` of each point run, once timing is enabled
        self.observe: Callable[[str, str, float], None] | None = None
        self.name = profile.scheduler_name
        self.nominator = nominator
        self._nominated_sums = NominatedSums(nominator)
        p = profile.plugins

        def at(point: str) -> list[Any]:
            """The plugins enabled at ``point``, in order; each must implement its protocol
            (upstream ``updatePluginList``: "plugin %q does not extend %s plugin")."""
            protocol = EXTENSION_POINTS[point]
            out = [p[n] for n in profile.points.get(point, ())]
            for pl in out:
                if not isinstance(pl, protocol):
                    raise TypeError(f'plugin "{pl.name}" does not extend {point} plugin')
            return out

        sorts: list[QueueSortPlugin] = at("queueSort")
        self.queue_sort = sorts[0] if sorts else None
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = at("preEnqueue")
        self.pre_filter_plugins: list[PreFilterPlugin] = at("preFilter")
        self.filter_plugins: list[FilterPlugin] = at("filter")
        self.post_filter_plugins: list[PostFilterPlugin] = at("postFilter")
        self.pre_score_plugins: list[PreScorePlugin] = at("preScore")
        self.score_plugins: list[ScorePlugin] = at("score")
        self.reserve_plugins: list[ReservePlugin] = at("reserve")
        self.permit_plugins: list[PermitPlugin] = at("permit")
        #: pods assumed on a node and held at Permit until allowed, rejected or timed out
        self.waiting_pods = WaitingPods()
        self.pre_bind_plugins: list[PreBindPlugin] = at("preBind")
        self.bind_plugins: list[BindPlugin] = at("bind")
        self.post_bind_plugins: list[PostBindPlugin] = at("postBind")
        self.weights = {name: (profile.weights.get(name) or 1) for name in profile.points.get("score", ())}
        # the optional capabilities, sorted once
        self._pre_filter_extensions = [pl for pl in self.pre_filter_plugins if isinstance(pl, PreFilterExtensions)]
        self._filter_vectors = [pl if isinstance(pl, FilterVector) else None for pl in self.filter_plugins]
        self._filter_vectors_at = [pl if isinstance(pl, FilterVectorAt) else None for pl in self.filter_plugins]
        self._rejections_noted = [pl if isinstance(pl, FilterRejectionsNoted) else None for pl in self.filter_plugins]
        self._failure_statuses = [
            pl if isinstance(pl, FailureStatusesVector) else None for pl in self.filter_plugins
        ]
        self._pod_dependent_filters = [
            pl for pl in self.filter_plugins
            if not (isinstance(pl, PodIndependentFilter) and pl.depends_on_pods is False)
        ]
        self._scorers = [
            _Scorer(
                pl,
                pl if isinstance(pl, ScoreVector) else None,
                pl if isinstance(pl, NormalizeVector) else None,
                pl if isinstance(pl, ScoreExtensions) else None,
            )
            for pl in self.score_plugins
        ]

    @property
    def percentage_of_nodes_to_score(self) -> int | None:
        return self.profile.percentage_of_nodes_to_score

    def events_by_plugin(self) -> dict[str, list[ClusterEvent]]:
        """Each plugin's registered events. A plugin without ``events_to_register`` is interested in
        every event (upstream ``fillEnqueueExtensions`` gives it ``UnrollWildCardResource()``)."""
        out: dict[str, list[ClusterEvent]] = {}
        for name, plugin in self.profile.plugins.items():
            if isinstance(plugin, EnqueueExtensions):
                out[name] = list(plugin.events_to_register())
            else:
                out[name] = [ClusterEvent("*", ALL)]
        return out

    # -- queue ------------------------------------------------------------------------------
    def sort_key(self, pod: PodInfo, timestamp: float, initial_timestamp: float | None) -> tuple[Any, ...]:
        if self.queue_sort is None:
            return (timestamp,)
        return self.queue_sort.sort_key(pod, timestamp, initial_timestamp)

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

    def run_add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """Upstream ``RunPreFilterExtensionAddPod``: the first failure, as an Error
        ``running AddPod on PreFilter plugin "<name>": <message>``."""
        for pl in self._pre_filter_extensions:
            if pl.name not in state.skip_filter_plugins:
                status = pl.add_pod(state, pod, to_add, node)
                if status is not None and not status.is_success():
                    return _extension_failed(status, "AddPod", pl.name)
        return None

    def run_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Upstream ``RunPreFilterExtensionRemovePod`` (failures as for :meth:`run_add_pod`)."""
        for pl in self._pre_filter_extensions:
            if pl.name not in state.skip_filter_plugins:
                status = pl.remove_pod(state, pod, to_remove, node)
                if status is not None and not status.is_success():
                    return _extension_failed(status, "RemovePod", pl.name)
        return None

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, pods_only: bool = False) -> Status | None:
        """Filters in order, stopping at the first failure. ``pods_only`` skips plugins whose verdict
        depends only on the node (:class:`PodIndependentFilter`): valid when they already passed on
        this node and only the node's pods changed, as in the preemption reprieve loop."""
        skip = state.skip_filter_plugins
        for pl in self._pod_dependent_filters if pods_only else self.filter_plugins:
            if pl.name in skip:
                continue
            status = pl.filter(state, pod, node)
            if status is not None and not status.is_success():
                return _filter_failed(status, pl.name)
        return None

    # -- preemption dry runs -------------------------------------------------------------------
    def preemption_arithmetic(self, state: CycleState) -> PreemptionArithmetic | None:
        dependent = [pl for pl in self._pod_dependent_filters if pl.name not in state.skip_filter_plugins]
        if len(dependent) != 1 or not isinstance(dependent[0], PreemptionArithmetic):
            return None
        return dependent[0]

    def preemption_fit(self, state: CycleState) -> PreemptionArithmetic | None:
        skip = state.skip_filter_plugins
        return next((pl for pl in self._pod_dependent_filters
                     if isinstance(pl, PreemptionArithmetic) and pl.name not in skip), None)

    def dry_run_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, arithmetic: PreemptionArithmetic | None
    ) -> DryRunNode:
        if arithmetic is None:
            return ClonedNode(self, state, pod, node)
        nominated = self.nominated_pods_to_add(pod, node.name)
        return ArithmeticNode(self.filter_plugins, arithmetic, state, pod, node, nominated, _filter_failed)

    def dry_run_batch(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, arithmetic: PreemptionArithmetic,
        nominated: NominatedLoad,
    ) -> ArithmeticBatch | None:
        skip = state.skip_filter_plugins
        others = [pl for pl in self._pod_dependent_filters if pl is not arithmetic and pl.name not in skip]
        neutral = [pl for pl in others if isinstance(pl, PodMovesNeutral)]
        if len(neutral) < len(others):
            return None
        decided = None if not neutral else functools.partial(self._unaffected, state, pod, snapshot, neutral, nominated)
        return ArithmeticBatch(arithmetic, state, pod, snapshot, nominated, functools.partial(
            self.filters_pass_except, state, pod, snapshot, excepted=arithmetic), decided)

    def _unaffected(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, neutral: Sequence[PodMovesNeutral],
        nominated: NominatedLoad, nodes: Sequence[NodeInfo], victims: Sequence[Sequence[PodInfo]],
    ) -> np.ndarray:
        """Per node, whether none of the ``neutral`` filters is affected by the node's ``victims``
        nor by its nominated pods: their verdicts on the node as it is then hold throughout its dry run
        (the pods come and go, the nominated ones are added in pass 1 and left out in pass 2)."""
        out = np.zeros(len(nodes), dtype=bool)
        count = nominated.count
        for k, (info, pods) in enumerate(zip(nodes, victims)):
            moving = list(pods)
            if count[info.index] > 0:
                moving += self.nominated_pods_to_add(pod, info.name)
            out[k] = all(pl.unaffected_by(state, pod, info, moving) for pl in neutral)
        return out

    def nominated_load(self, pod: PodInfo, snapshot: NodeTableSnapshot) -> NominatedLoad:
        return self._nominated_sums.load(pod, snapshot)

    def filters_pass_except(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, nodes: Sequence[NodeInfo],
        excepted: object,
    ) -> np.ndarray:
        """Whether every filter of the cycle but ``excepted`` passes on each of ``nodes`` as they
        are (vector forms where the plugins offer them)."""
        ok = np.ones(len(nodes), dtype=bool)
        idx: np.ndarray | None = None
        skip = state.skip_filter_plugins
        for pl, vector, noted in zip(self.filter_plugins, self._filter_vectors, self._rejections_noted):
            if pl is excepted or pl.name in skip:
                continue
            mask = vector.filter_vector(state, pod, snapshot) if vector is not None else None
            if mask is not None:
                if idx is None:
                    idx = np.fromiter((info.index for info in nodes), dtype=np.int64, count=len(nodes))
                passed = mask[idx]
                _note_rejections(noted, state, pod, snapshot, ok, passed, idx)
                ok &= passed
                continue
            for k in np.flatnonzero(ok).tolist():
                status = pl.filter(state, pod, nodes[k])
                if status is not None and not status.is_success():
                    ok[k] = False
        return ok

    def nominated_pods_to_add(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        return [
            p for p in self.nominator.pods_for_node(node_name) if p.priority >= pod.priority and p.uid != pod.uid
        ]

    def run_filter_with_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pods_only: bool = False
    ) -> Status | None:
        """Upstream RunFilterPluginsWithNominatedPods: pass 1 with higher-or-equal nominated pods
        added to the node, pass 2 without them (only when pass 1 added pods). An AddPod failure
        while adding them is the answer (an Error)."""
        nominated = self.nominated_pods_to_add(pod, node.name)
        if not nominated:
            return self.run_filter(state, pod, node, pods_only)
        node_with = node.clone()
        state_with = state.clone()
        for other in nominated:
            node_with.add_pod(other)
            added = self.run_add_pod(state_with, pod, other, node_with)
            if added is not None:
                return added
        status = self.run_filter(state_with, pod, node_with, pods_only)
        if status is not None:
            return status
        return self.run_filter(state, pod, node, pods_only)

    def filter_all(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, dict[int, Status]]:
        """Evaluate the filters on every node of the snapshot at once, or on nodes ``where`` only
        (the arrays then follow ``where``: entry k is node ``where[k]``).

        Returns the feasibility mask, the index of the first failing filter plugin per node (-1 if
        none) and the statuses already computed (by per-node plugins; keyed by node index). Nodes
        with nominated pods are evaluated per node with the two-pass rule.
        """
        alive, first_fail, statuses = self._filter(state, pod, snapshot, where, True)
        assert first_fail is not None
        return alive, first_fail, statuses

    def filter_passing(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None, dict[int, Status]]:
        """:meth:`filter_all` without working out which filter fails each node first (None then),
        unless nominated pods need it: what a cycle that finds nodes wants."""
        return self._filter(state, pod, snapshot, where, False)

    def _filter(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None, track: bool,
    ) -> tuple[np.ndarray, np.ndarray | None, dict[int, Status]]:
        nodes = snapshot.node_infos
        size = len(nodes) if where is None else len(where)
        alive = np.ones(size, dtype=bool)
        has_nominated = self.nominator.has_any()  # the two-pass rule below reads the first failures
        first_fail = np.full(size, -1, dtype=np.int64) if track or has_nominated else None
        statuses: dict[int, Status] = {}
        skip = state.skip_filter_plugins
        for i, (pl, vector, at, noted) in enumerate(zip(
                self.filter_plugins, self._filter_vectors, self._filter_vectors_at, self._rejections_noted)):
            if pl.name in skip:
                continue
            if where is None:
                mask = vector.filter_vector(state, pod, snapshot) if vector is not None else None
            elif at is not None:
                mask = at.filter_vector_at(state, pod, snapshot, where)
            else:
                mask = vector.filter_vector(state, pod, snapshot) if vector is not None else None
                mask = None if mask is None else mask[where]
            if mask is not None:
                _note_rejections(noted, state, pod, snapshot, alive, mask, where)
            else:
                mask = np.ones(size, dtype=bool)
                for k in np.flatnonzero(alive).tolist():
                    j = k if where is None else int(where[k])
                    status = pl.filter(state, pod, nodes[j])
                    if status is not None and not status.is_success():
                        mask[k] = False
                        statuses[j] = _filter_failed(status, pl.name)
            if first_fail is not None:
                first_fail[alive & ~mask] = i
            alive &= mask
        # nodes that have nominated pods of >= priority: redo them with the two-pass rule
        if not has_nominated:
            return alive, first_fail, statuses
        assert first_fail is not None
        if where is None:
            position = np.arange(len(nodes), dtype=np.int64)
        else:  # node index -> its entry in the arrays (-1: not asked about)
            position = np.full(len(nodes), -1, dtype=np.int64)
            position[where] = np.arange(len(where), dtype=np.int64)
        arithmetic = self.preemption_fit(state)
        exact = arithmetic is not None and self.preemption_arithmetic(state) is arithmetic
        arithmetic_at = next((k for k, pl in enumerate(self.filter_plugins) if pl is arithmetic), -1)
        if arithmetic is None or not exact and any(
                pl.name not in state.skip_filter_plugins for pl in self.filter_plugins[:arithmetic_at]
                if pl in self._pod_dependent_filters):
            for node_name, nominated in list(self.nominator.nominated_to_add(pod).items()):
                info = snapshot.get(node_name) if nominated else None
                if info is not None and position[info.index] >= 0:
                    self._nominated_node_by_node(state, pod, info, int(position[info.index]), alive, first_fail,
                                                 statuses)
            return alive, first_fail, statuses
        # the filters before the arithmetic one depend on the node alone: a node one of them rejects
        # stays rejected with or without the nominated pods, and pass 1 on the others fails where
        # the arithmetic filter fails with the nominated pods' requests. Where that passes and it is
        # the only filter whose verdict depends on the node's pods (``exact``), the verdict already
        # found holds (pass 2, with fewer pods, cannot fail where pass 1 passed); otherwise the
        # node is asked with the two-pass rule
        load = self.nominated_load(pod, snapshot)
        held = np.flatnonzero(load.count > 0)
        held = held[position[held] >= 0]
        without_object = held[~snapshot.table.has_object[held]]
        held = held[snapshot.table.has_object[held]]
        held = held[(first_fail[position[held]] < 0) | (first_fail[position[held]] >= arithmetic_at)]
        found = arithmetic.nominated_failures(state, pod, snapshot, held, load)
        named: dict[int, Status] = {}  # nodes failing alike share a Status: name each once
        for j, failure in zip(held.tolist(), found):
            k = int(position[j])
            if failure is not None:
                alive[k] = False
                status = named.get(id(failure))
                if status is None:
                    status = named[id(failure)] = _filter_failed(failure, arithmetic.name)
                statuses[j] = status
                first_fail[k] = -2
            elif not exact:
                self._nominated_node_by_node(state, pod, nodes[j], k, alive, first_fail, statuses)
        for j in without_object.tolist():
            self._nominated_node_by_node(state, pod, nodes[j], int(position[j]), alive, first_fail, statuses)
        return alive, first_fail, statuses

    def _nominated_node_by_node(
        self, state: CycleState, pod: PodInfo, info: NodeInfo, at: int, alive: np.ndarray, first_fail: np.ndarray,
        statuses: dict[int, Status],
    ) -> None:
        """The two-pass verdict on ``info`` into entry ``at`` of the arrays."""
        status = self.run_filter_with_nominated(state, pod, info)
        statuses.pop(info.index, None)
        if status is None:
            alive[at] = True
            first_fail[at] = -1
        else:
            alive[at] = False
            statuses[info.index] = status
            first_fail[at] = -2

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
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, indices: np.ndarray | Sequence[int],
        first_fail: np.ndarray, statuses: dict[int, Status],
    ) -> list[Status]:
        """:meth:`status_for` for many failed nodes: plugins offering ``failure_statuses`` (the
        vector form of their Filter's rejection) answer for all their nodes at once."""
        nodes = snapshot.node_infos
        indices = np.asarray(indices, dtype=np.int64)
        count = len(indices)
        out = np.empty(count, dtype=object)
        pending = np.ones(count, dtype=bool)
        if statuses:
            for pos in np.flatnonzero(np.isin(indices, np.fromiter(statuses, dtype=np.int64))).tolist():
                out[pos] = statuses[int(indices[pos])]
                pending[pos] = False
        failing = first_fail[indices]
        for f in np.unique(failing[pending]).tolist():
            vector = self._failure_statuses[f] if f >= 0 else None
            if vector is None:
                continue
            positions = np.flatnonzero(pending & (failing == f))
            name = self.filter_plugins[f].name
            found = vector.failure_statuses(state, pod, snapshot, indices[positions])
            shared: dict[int, Status] = {}  # the plugin's nodes share Status objects: name each once
            out[positions] = [named if (named := shared.get(id(st))) is not None
                              else shared.setdefault(id(st), st.with_plugin(name)) for st in found]
            pending[positions] = False
        for pos in np.flatnonzero(pending).tolist():
            j = int(indices[pos])
            out[pos] = self.status_for(state, pod, nodes[j], int(failing[pos]), statuses)
        return list(out)

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
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """PreScore + Score + NormalizeScore + weights for the feasible nodes ``idx``.
        Returns the totals and the weighted score of each plugin (for explanations)."""
        feasible = snapshot.table.node_array()[idx].tolist()
        state.write(FEASIBLE_COLUMNS, (feasible, idx))
        observe = self.observe
        started = perf_counter() if observe is not None else 0.0
        for pre in self.pre_score_plugins:
            status = pre.pre_score(state, pod, feasible)
            if status is not None and status.code == Code.SKIP:
                state.skip_score_plugins.add(pre.name)
            elif status is not None and not status.is_success():
                if observe is not None:
                    observe("PreScore", "Error", perf_counter() - started)
                raise RuntimeError(f'running PreScore plugin "{pre.name}": {status.message()}')
        if observe is not None:
            observe("PreScore", "Success", perf_counter() - started)
            started = perf_counter()
        totals = np.zeros(len(idx), dtype=np.int64)
        per_plugin: dict[str, np.ndarray] = {}
        raw: dict[str, np.ndarray] = {}  # each plugin's normalized scores, before weights
        for scorer in self._scorers:
            pl = scorer.plugin
            if pl.name in state.skip_score_plugins:
                continue
            if scorer.vector is not None:
                scores = scorer.vector.score_vector(state, pod, snapshot, idx)
            else:
                scores = np.array([pl.score(state, pod, node) for node in feasible], dtype=np.int64)
            if scorer.normalize_vector is not None:
                scores = scorer.normalize_vector.normalize_vector(state, pod, scores)
            elif scorer.normalize is not None:
                as_list = [int(s) for s in scores]
                scorer.normalize.normalize_score(state, pod, feasible, as_list)
                scores = np.array(as_list, dtype=np.int64)
            raw[pl.name] = scores
            weighted = scores * self.weights.get(pl.name, 1)
            per_plugin[pl.name] = weighted
            totals += weighted
        if len(idx) and raw:
            stacked = np.concatenate(list(raw.values()))  # one range check for all plugins
            if stacked.min() < MIN_NODE_SCORE or stacked.max() > MAX_NODE_SCORE:
                _raise_invalid_score(raw)
        if observe is not None:
            observe("Score", "Success", perf_counter() - started)
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
            pl.unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | WaitingPod | None:
        """Upstream ``RunPermitPlugins``: the first rejection (or error) ends it; when plugins asked
        to wait and none rejected, the pod joins the waiting pods and is returned as a
        :class:`WaitingPod` (its timeouts are the caller's to arm)."""
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            status, timeout = pl.permit(state, pod, node_name)
            if status is None or status.is_success():
                continue
            if status.code == Code.WAIT:
                waits[pl.name] = min(float(timeout), MAX_WAIT_SECONDS)
                continue
            return _failed(status, "Permit", pl.name)
        if waits:
            waiting = WaitingPod(pod, node_name, waits)
            self.waiting_pods.add(waiting)
            return waiting
        return None

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | BindWait | None:
        """PreBind then Bind (the first Bind plugin not returning Skip). A plugin raising an API
        error fails with that error's message, as upstream's DefaultBinder returns it. A PreBind
        plugin that waits (:class:`PendingBind`) pauses the cycle: a :class:`BindWait` is returned
        and the caller resumes it once the wait is over."""
        return self._bind_from(state, pod, node_name, 0)

    def _bind_from(self, state: CycleState, pod: PodInfo, node_name: str, first: int) -> Status | BindWait | None:
        if self.observe is None:
            return self._bind_steps(state, pod, node_name, first)
        started = perf_counter()
        outcome = self._bind_steps(state, pod, node_name, first)
        # PreBind and Bind in one span: a PreBind plugin that waits makes them two calls anyway
        self.observe("Bind", status_label(outcome), perf_counter() - started)
        return outcome

    def _bind_steps(self, state: CycleState, pod: PodInfo, node_name: str, first: int) -> Status | BindWait | None:
        for i in range(first, len(self.pre_bind_plugins)):
            pre = self.pre_bind_plugins[i]
            status = pre.pre_bind(state, pod, node_name)
            if isinstance(status, PendingBind):
                return BindWait(status, self._resume_after(state, pod, node_name, i))
            if status is not None and not status.is_success():
                return _failed(status, "PreBind", pre.name)
        # upstream ``extendersBinding``: the first interested bind extender binds instead of the
        # Bind plugins
        binder = next((e for e in self.extenders if e.is_binder and e.is_interested(pod)), None)
        if binder is not None:
            try:
                binder.bind(pod, node_name)
            except ExtenderError as err:
                return Status.error(str(err))
            except ApiError as err:
                return Status.error(err.message)
            return None
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

    def _resume_after(
        self, state: CycleState, pod: PodInfo, node_name: str, index: int
    ) -> Callable[[Status | None], Status | BindWait | None]:
        def resume(result: Status | None) -> Status | BindWait | None:
            if result is not None and not result.is_success():
                return _failed(result, "PreBind", self.pre_bind_plugins[index].name)
            return self._bind_from(state, pod, node_name, index + 1)

        return resume

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)


    # -- metrics ----------------------------------------------------------------------------------
    def enable_timing(self, observe_point: Callable[[str, str, float], None],
                      observe_plugin: Callable[[str, str, str, float], None], sampling: Callable[[], bool]) -> None:
        """Measure each extension point run (``framework_extension_point_duration_seconds``) and,
        in the cycles ``sampling()`` picks, each plugin call (``plugin_execution_duration_seconds``):
        the methods are wrapped once, so a framework without timing runs untouched code."""
        if self.observe is not None:
            return
        self.observe = observe_point
        for attr, point in FRAMEWORK_POINTS:
            setattr(self, attr, _timed(getattr(self, attr), point, observe_point))
        for plugin in self.profile.plugins.values():
            for attr, point in PLUGIN_METHOD_POINTS:
                method = getattr(plugin, attr, None)
                if callable(method):
                    setattr(plugin, attr, _sampled(method, plugin.name, point, observe_plugin, sampling))


def _raise_invalid_score(raw: dict[str, np.ndarray]) -> None:
    """Upstream RunScorePlugins' error for the first plugin (in order) with a score out of range, as
    handleSchedulingFailure reports it."""
    for name, scores in raw.items():
        out = scores[(scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)]
        if len(out):
            raise RuntimeError(
                f'applying score defaultWeights on Score plugins: plugin "{name}" returns an invalid score '
                f"{int(out[0])}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")


#: upstream's status code names: the ``status`` label of the duration metrics
CODE_LABELS = {Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
               Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
               Code.SKIP: "Skip"}
#: framework methods timed as one extension point each (PreScore/Score and PreBind/Bind are timed
#: inside run_score and the binding)
FRAMEWORK_POINTS = (("run_pre_filter", "PreFilter"), ("filter_passing", "Filter"), ("run_post_filter", "PostFilter"),
                    ("run_reserve", "Reserve"), ("run_unreserve", "Unreserve"), ("run_permit", "Permit"),
                    ("run_post_bind", "PostBind"))
#: plugin methods timed when sampled, with their extension points (a vector form counts as the point)
PLUGIN_METHOD_POINTS = (
    ("pre_filter", "PreFilter"), ("filter", "Filter"), ("filter_vector", "Filter"), ("post_filter", "PostFilter"),
    ("pre_score", "PreScore"), ("score", "Score"), ("score_vector", "Score"),
    ("normalize_score", "ScoreExtensionNormalize"), ("normalize_vector", "ScoreExtensionNormalize"),
    ("reserve", "Reserve"), ("unreserve", "Unreserve"), ("permit", "Permit"), ("pre_bind", "PreBind"),
    ("bind", "Bind"), ("post_bind", "PostBind"),
)


def status_label(outcome: object) -> str:
    """The status label of whatever an extension point returned."""
    if isinstance(outcome, tuple):
        outcome = next((x for x in outcome if isinstance(x, Status)), None)
    if isinstance(outcome, Status):
        return CODE_LABELS.get(outcome.code, "Success")
    if isinstance(outcome, WaitingPod | BindWait | PendingBind):
        return "Wait"
    return "Success"


def _timed(method: Callable[..., Any], point: str, observe: Callable[[str, str, float], None]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = perf_counter()
        try:
            outcome = method(*args, **kwargs)
        except Exception:
            observe(point, "Error", perf_counter() - started)
            raise
        observe(point, status_label(outcome), perf_counter() - started)
        return outcome

    return timed


def _sampled(method: Callable[..., Any], plugin: str, point: str, observe: Callable[[str, str, str, float], None],
             sampling: Callable[[], bool]) -> Callable[..., Any]:
    def sampled(*args: Any, **kwargs: Any) -> Any:
        if not sampling():
            return method(*args, **kwargs)
        started = perf_counter()
        outcome = method(*args, **kwargs)
        observe(plugin, point, status_label(outcome), perf_counter() - started)
        return outcome

    return sampled


@dataclass(frozen=True, slots=True)
class BindWait:
    """A binding cycle paused by a waiting PreBind plugin: wait as ``pending`` says, then call
    ``resume`` with the wait's outcome (None: done; a status: failed or timed out) to go on."""

    pending: PendingBind
    resume: Callable[[Status | None], Status | BindWait | None]


def _failed(status: Status, point: str, plugin: str) -> Status:
    """A Reserve/Permit/PreBind/Bind failure as upstream's runtime reports it: a rejection keeps
    its reasons and records the plugin; any other code becomes an Error whose message is prefixed
    ``running <point> plugin "<name>": ``."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.error(f'running {point} plugin "{plugin}": {status.message()}', plugin)


def _note_rejections(
    noted: FilterRejectionsNoted | None, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot,
    reached: np.ndarray, passed: np.ndarray, indices: np.ndarray | None,
) -> None:
    """Hand ``noted`` the nodes its vector Filter rejected (``passed`` false) among those every
    filter before it passed (``reached``): where its per-node Filter would have been asked.
    ``indices``: each entry's node index (None: the entries are the snapshot's nodes in order)."""
    if noted is None:
        return
    rejected = np.flatnonzero(reached & ~passed)
    if len(rejected):
        noted.note_rejections(state, pod, snapshot, rejected if indices is None else indices[rejected])


def _filter_failed(status: Status, plugin: str) -> Status:
    """Upstream ``RunFilterPlugins``: a Filter may only reject; any other code becomes an Error
    ``running "<name>" filter plugin: <message>``. The failing plugin is recorded either way."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.error(f'running "{plugin}" filter plugin: {status.message()}', plugin)


def _extension_failed(status: Status, operation: str, plugin: str) -> Status:
    """Upstream ``RunPreFilterExtensionAddPod/RemovePod``: any failure becomes an Error
    ``running <AddPod|RemovePod> on PreFilter plugin "<name>": <message>``."""
    return Status.error(f'running {operation} on PreFilter plugin "{plugin}": {status.message()}', plugin)

