"""The filtering points (upstream ``RunPreFilterPlugins``, ``RunPreFilterExtensionAddPod/RemovePod``,
``RunFilterPlugins``, ``RunFilterPluginsWithNominatedPods`` and ``RunPostFilterPlugins`` in
``framework/runtime/framework.go``), and what preemption's dry runs ask of the filters.

Filters run vectorised over all nodes, or the window of nodes the cycle asks about, where a plugin
offers it, per node otherwise; nodes with nominated pods are judged with the two-pass rule.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from kubesched.scheduler.framework.capabilities import (
    DryRunNode,
    FilterRejectionsNoted,
    PodMovesNeutral,
    PreemptionArithmetic,
)
from kubesched.scheduler.framework.dryrun import ArithmeticBatch, ArithmeticNode, ClonedNode
from kubesched.scheduler.framework.found import FoundStatuses, StatusGroups
from kubesched.scheduler.framework.interface import (
    Code,
    CycleState,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.nominated import NominatedLoad, NominatedSums
from kubesched.scheduler.framework.profile import PluginSet
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot, NominatorView


class FilterPoints(PluginSet):
    """The framework's filtering points; it is a
    :class:`~kubesched.scheduler.framework.capabilities.PluginsRunner`."""

    nominator: NominatorView
    #: the nominator's pods summed per node column, for the filters that judge by arithmetic
    nominated_sums: NominatedSums

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
        for pl in self.pre_filter_extensions:
            if pl.name not in state.skip_filter_plugins:
                status = pl.add_pod(state, pod, to_add, node)
                if status is not None and not status.is_success():
                    return _extension_failed(status, "AddPod", pl.name)
        return None

    def run_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Upstream ``RunPreFilterExtensionRemovePod`` (failures as for :meth:`run_add_pod`)."""
        for pl in self.pre_filter_extensions:
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
        for pl in self.pod_dependent_filters if pods_only else self.filter_plugins:
            if pl.name in skip:
                continue
            status = pl.filter(state, pod, node)
            if status is not None and not status.is_success():
                return _filter_failed(status, pl.name)
        return None

    # -- preemption dry runs -------------------------------------------------------------------
    def preemption_arithmetic(self, state: CycleState) -> PreemptionArithmetic | None:
        skip = state.skip_filter_plugins
        dependent = [k for k, pl in enumerate(self.pod_dependent_filters) if pl.name not in skip]
        return self.arithmetic_filters[dependent[0]] if len(dependent) == 1 else None

    def preemption_fit(self, state: CycleState) -> PreemptionArithmetic | None:
        skip = state.skip_filter_plugins
        return next((pl for pl in self.arithmetic_filters if pl is not None and pl.name not in skip), None)

    def rejections_noted_before(self, state: CycleState, plugin: object) -> bool:
        """Whether a filter of this cycle that acts on its rejections (:class:`FilterRejectionsNoted`,
        NodeResourceTopologyMatch noting a node for its cache's resync) runs before ``plugin``. Upstream's
        dry run calls it on a node whatever ``plugin`` would then say, so a dry run may not rule
        nodes out by ``plugin``'s verdict alone without calling it."""
        skip = state.skip_filter_plugins
        for pl, noted in zip(self.filter_plugins, self.rejections_noted):
            if pl is plugin:
                return False
            if noted is not None and pl.name not in skip:
                return True
        return False

    def dry_run_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, arithmetic: PreemptionArithmetic | None
    ) -> DryRunNode:
        if arithmetic is None:
            return ClonedNode(self, state, pod, node)
        nominated = self.nominated_pods_to_add(pod, node.name)
        return ArithmeticNode(self.filter_plugins, arithmetic, state, pod, node, nominated, _filter_failed)

    def removal_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        arithmetic: PreemptionArithmetic, nominated: NominatedLoad,
    ) -> list[Status | None]:
        """What :meth:`dry_run_node`'s arithmetic node says on each node ``idx[k]`` once every pod
        of lower priority than ``pod`` is removed (``run_filters(pods_only=False)``: the first
        filter rejecting it, in order; None where all pass), for all of them at once where the
        filters have vector forms. ``arithmetic`` must be the only filter depending on the node's
        pods (:meth:`preemption_arithmetic`); the others are asked about the node as it is."""
        nodes = snapshot.node_infos
        count = len(idx)
        out = np.full(count, None, dtype=object)
        pending = np.ones(count, dtype=bool)
        skip = state.skip_filter_plugins
        for pl, vector, failures in zip(self.filter_plugins, self.filter_vectors, self.failure_statuses):
            at = np.flatnonzero(pending)
            if not len(at):
                break
            if pl.name in skip:
                continue
            if pl is arithmetic:
                groups = arithmetic.removal_failures(state, pod, snapshot, idx[at], nominated)
                shared = np.full(len(groups.groups), None, dtype=object)
                shared[:] = [None if g is None else _filter_failed(g, pl.name) for g in groups.groups]
                failing = groups.failing()
                out[at[failing]] = shared[groups.which[failing]]
                pending[at[failing]] = False
                continue
            mask = vector.filter_vector(state, pod, snapshot) if vector is not None else None
            if mask is not None:
                rejected = at[~mask[idx[at]]]
                found: list[Status] | StatusGroups | None = \
                    failures.failure_statuses(state, pod, snapshot, idx[rejected]) if failures is not None else None
                if isinstance(found, StatusGroups):
                    shared = np.full(len(found.groups), None, dtype=object)
                    shared[:] = [None if g is None else _filter_failed(g, pl.name) for g in found.groups]
                    out[rejected] = shared[found.which]
                elif found is not None:
                    named = {id(st): _filter_failed(st, pl.name) for st in found}
                    out[rejected] = [named[id(st)] for st in found]
                else:
                    for k in rejected.tolist():
                        status = pl.filter(state, pod, nodes[int(idx[k])])
                        assert status is not None
                        out[k] = _filter_failed(status, pl.name)
                pending[rejected] = False
                continue
            for k in at.tolist():
                status = pl.filter(state, pod, nodes[int(idx[k])])
                if status is not None and not status.is_success():
                    out[k] = _filter_failed(status, pl.name)
                    pending[k] = False
        answer: list[Status | None] = out.tolist()
        return answer

    def dry_run_batch(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, arithmetic: PreemptionArithmetic,
        nominated: NominatedLoad,
    ) -> ArithmeticBatch | None:
        skip = state.skip_filter_plugins
        others = [pl for pl in self.pod_dependent_filters if pl is not arithmetic and pl.name not in skip]
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
        return self.nominated_sums.load(pod, snapshot)

    def filters_pass_except(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, nodes: Sequence[NodeInfo],
        excepted: object,
    ) -> np.ndarray:
        """Whether every filter of the cycle but ``excepted`` passes on each of ``nodes`` as they
        are (vector forms where the plugins offer them)."""
        ok = np.ones(len(nodes), dtype=bool)
        idx: np.ndarray | None = None
        skip = state.skip_filter_plugins
        for pl, vector, noted in zip(self.filter_plugins, self.filter_vectors, self.rejections_noted):
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
    ) -> tuple[np.ndarray, np.ndarray, FoundStatuses]:
        """Evaluate the filters on every node of the snapshot at once, or on nodes ``where`` only
        (the arrays then follow ``where``: entry k is node ``where[k]``).

        Returns the feasibility mask, the index of the first failing filter plugin per node (-1 if
        none; -2 when the two-pass rule for nominated pods failed it) and the statuses already
        computed (by per-node plugins; keyed by node index): what a cycle needs to report the
        nodes that failed without asking any filter again. Nodes with nominated pods are evaluated
        per node with the two-pass rule.
        """
        nodes = snapshot.node_infos
        size = len(nodes) if where is None else len(where)
        alive = np.ones(size, dtype=bool)
        first_fail = np.full(size, -1, dtype=np.int64)
        statuses = FoundStatuses()
        skip = state.skip_filter_plugins
        for i, (pl, vector, at, noted) in enumerate(zip(
                self.filter_plugins, self.filter_vectors, self.filter_vectors_at, self.rejections_noted)):
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
            np.putmask(first_fail, np.greater(alive, mask), i)  # alive until this plugin rejected it
            alive &= mask
        if self.nominator.has_any():
            self._redo_nominated(state, pod, snapshot, where, alive, first_fail, statuses)
        return alive, first_fail, statuses

    def _redo_nominated(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None,
        alive: np.ndarray, first_fail: np.ndarray, statuses: FoundStatuses,
    ) -> None:
        """The verdicts of :meth:`filter_all` on the nodes that have nominated pods of >= priority,
        redone with the two-pass rule (in place)."""
        nodes = snapshot.node_infos
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
                if pl in self.pod_dependent_filters):
            for node_name, nominated in list(self.nominator.nominated_to_add(pod).items()):
                info = snapshot.get(node_name) if nominated else None
                if info is not None and position[info.index] >= 0:
                    self._nominated_node_by_node(state, pod, info, int(position[info.index]), alive, first_fail,
                                                 statuses)
            return
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
        failing = found.failing()
        # nodes failing alike share a Status: name each once, and set them all at once
        named = [None if g is None else _filter_failed(g, arithmetic.name) for g in found.groups]
        rejected = held[failing]
        at = position[rejected]
        alive[at] = False
        first_fail[at] = -2
        statuses.put_many(rejected, named, found.which[failing])
        if not exact:
            for j in held[~failing].tolist():
                self._nominated_node_by_node(state, pod, nodes[j], int(position[j]), alive, first_fail, statuses)
        for j in without_object.tolist():
            self._nominated_node_by_node(state, pod, nodes[j], int(position[j]), alive, first_fail, statuses)

    def _nominated_node_by_node(
        self, state: CycleState, pod: PodInfo, info: NodeInfo, at: int, alive: np.ndarray, first_fail: np.ndarray,
        statuses: FoundStatuses,
    ) -> None:
        """The two-pass verdict on ``info`` into entry ``at`` of the arrays."""
        status = self.run_filter_with_nominated(state, pod, info)
        statuses.pop(info.index)
        if status is None:
            alive[at] = True
            first_fail[at] = -1
        else:
            alive[at] = False
            statuses[info.index] = status
            first_fail[at] = -2

    def status_for(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, first_fail: int, statuses: FoundStatuses
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
        first_fail: np.ndarray, statuses: FoundStatuses,
    ) -> list[Status]:
        """:meth:`status_for` for many failed nodes: plugins offering ``failure_statuses`` (the
        vector form of their Filter's rejection) answer for all their nodes at once."""
        shared, which, _ = self.grouped_statuses_for(state, pod, snapshot, indices, first_fail, statuses)
        return shared[which].tolist() if len(which) else []

    def grouped_statuses_for(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, indices: np.ndarray | Sequence[int],
        first_fail: np.ndarray, statuses: FoundStatuses,
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[Status, int]]]:
        """:meth:`statuses_for` as groups: the distinct Status objects (an object array), per node
        the index of its own, and each distinct object with how many of the nodes have it (counted
        per group of nodes failing alike, not node by node)."""
        nodes = snapshot.node_infos
        indices = np.asarray(indices, dtype=np.int64)
        count = len(indices)
        # per node the index of its Status in ``distinct`` (-1: not known yet)
        gid, have, distinct = statuses.lookup(indices) if statuses else \
            (np.full(count, -1, dtype=np.int64), np.zeros(count, dtype=bool), [])
        pending = ~have
        failing = first_fail[indices]
        for f in np.unique(failing[pending]).tolist():
            vector = self.failure_statuses[f] if f >= 0 else None
            if vector is None:
                continue
            positions = np.flatnonzero(pending & (failing == f))
            name = self.filter_plugins[f].name
            found = vector.failure_statuses(state, pod, snapshot, indices[positions])
            if not isinstance(found, StatusGroups):  # a list: group its shared objects
                slot: dict[int, int] = {}
                which = np.fromiter((slot.setdefault(id(st), len(slot)) for st in found), dtype=np.int64,
                                    count=len(found))
                found = StatusGroups(list({id(st): st for st in found}.values()), which)
            # the plugin's nodes share Status objects: name each once
            gid[positions] = found.which + len(distinct)
            for st in found.groups:
                assert st is not None  # a failing node's
                distinct.append(st.with_plugin(name))
            pending[positions] = False
        for pos in np.flatnonzero(pending).tolist():
            gid[pos] = len(distinct)
            distinct.append(self.status_for(state, pod, nodes[int(indices[pos])], int(failing[pos]), statuses))
        shared = np.empty(len(distinct), dtype=object)
        shared[:] = distinct
        counts = np.bincount(gid, minlength=len(distinct)).tolist() if count else [0] * len(distinct)
        alike: dict[int, tuple[Status, int]] = {}
        for status, n in zip(distinct, counts):
            if n:
                known = alike.get(id(status))
                alike[id(status)] = (status, n + (known[1] if known else 0))
        return shared, gid, list(alike.values())

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
