"""Finding a node for one pod (upstream ``schedulePod`` in ``pkg/scheduler/schedule_one.go``, with
``findNodesThatFitPod``, ``findNodesThatPassFilters``, ``prioritizeNodes`` and ``selectHost``):
PreFilter, the nominated node alone, Filter over the nodes from where the last search stopped
until enough fit, the extenders' filter, then Score and a seeded pick among the best.

When no node fits, the :class:`FitError` carries every failed node's status: which filter failed a
node first is known from the filter pass itself (a per-node plugin's status too), so only the
message of a node's first failing vector filter is asked of that one plugin.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.scheduler.framework.extender import EXTENDER_NAME
from kubesched.scheduler.framework.extenders import FilterVerdict, add_scores, apply_verdicts, filter_indices
from kubesched.scheduler.framework.found import FoundStatuses, LazyNodeStatuses
from kubesched.scheduler.framework.interface import Code, CycleState, PreFilterResult, Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import NodeStatuses, PodInfo
from kubesched.scheduler.messages import fit_error_message

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: the first window of nodes filtered holds at least this many; each next one is twice the last
MIN_FILTER_WINDOW = 256

logger = logging.getLogger("kubesched.scheduler")


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """Upstream ``numFeasibleNodesToFind``: how many feasible nodes are enough to stop filtering
    (``percentageOfNodesToScore``; 0 is adaptive: 50 % less 1 % per 125 nodes, at least 5 %)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    found = num_all_nodes * percentage // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


class FitError(Exception):
    """No node fits the pod: every failed node's status, the plugins that failed them (for the
    queue's requeueing hints) and the message parts upstream's ``FitError.Error`` joins."""

    def __init__(self, num_all_nodes: int, statuses: dict[str, Status], plugins: set[str], pre_filter_msg: str = ""):
        super().__init__()
        self.num_all_nodes = num_all_nodes
        self.statuses = statuses
        self.plugins = plugins
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = ""

    def message(self) -> str:
        statuses = self.statuses
        return fit_error_message(
            self.num_all_nodes, self.pre_filter_msg,
            statuses if isinstance(statuses, NodeStatuses) else statuses.values(), self.post_filter_msg
        )


class NoNodes(Exception):
    """The snapshot has no nodes at all (upstream ``ErrNoNodesAvailable``)."""


class NodeSearch:
    """One pod's search for a node in one cycle. ``start`` is the scheduler's
    ``nextStartNodeIndex``; :attr:`next_start` is where the next search starts."""

    def __init__(self, fwk: Framework, state: CycleState, pod: PodInfo, cache: Cache, *, start: int,
                 percentage: int, rng: np.random.Generator, keep_scores: bool) -> None:
        self.fwk = fwk
        self.state = state
        self.pod = pod
        self.cache = cache
        self.next_start = start
        #: the profile's percentageOfNodesToScore, else the scheduler's
        self.percentage = percentage if fwk.percentage_of_nodes_to_score is None else fwk.percentage_of_nodes_to_score
        self.rng = rng
        self.keep_scores = keep_scores
        #: the best nodes' scores (the top 10: each plugin's weighted score and its Score before
        #: NormalizeScore) when ``keep_scores``
        self.scores: list[dict[str, Any]] = []

    def schedule_pod(self) -> str:
        """The chosen node's name: the only feasible node, or a seeded pick among the best scored;
        :class:`FitError` when none fits, :class:`NoNodes` when there are none."""
        cache = self.cache
        if cache.num_nodes() == 0:
            raise NoNodes()
        feasible = self.find_nodes_that_fit()
        if len(feasible) == 1:
            return cache.node_infos[int(feasible[0])].name
        raw: dict[str, np.ndarray] | None = {} if self.keep_scores else None
        totals, per_plugin = self.fwk.run_score(self.state, self.pod, cache, feasible, raw)
        if self.fwk.extenders:
            infos = [cache.node_infos[j] for j in feasible.tolist()]
            add_scores(self.fwk.extenders, self.pod, infos, totals, per_plugin)
        winners = np.flatnonzero(totals == totals.max())
        choice = int(winners[0]) if len(winners) == 1 else int(winners[self.rng.integers(len(winners))])
        if self.keep_scores:
            for k in np.argsort(-totals, kind="stable")[:10].tolist():
                self.scores.append({
                    "node": cache.node_infos[int(feasible[k])].name,
                    "total": int(totals[k]),
                    "plugins": {name: int(v[k]) for name, v in per_plugin.items()},
                    # each plugin's Score before NormalizeScore (extenders have none)
                    "raw": {name: int(v[k]) for name, v in (raw or {}).items()},
                })
        return cache.node_infos[int(feasible[choice])].name

    def find_nodes_that_fit(self) -> np.ndarray:
        """Upstream ``findNodesThatFitPod``: PreFilter, the nominated node alone, then the (PreFilter-
        restricted) node list from ``nextStartNodeIndex`` until enough feasible nodes are found.
        The feasible nodes by index, in the scan's order."""
        pre_result = self._pre_filter()
        diagnosis = LazyNodeStatuses()
        plugins: set[str] = set()
        only, nominated_index = self._nominated_node(diagnosis, plugins)
        if only is not None:
            return only
        return self._scan(self._scan_order(pre_result), nominated_index, diagnosis, plugins)

    def _pre_filter(self) -> PreFilterResult | None:
        pre_result, status = self.fwk.run_pre_filter(self.state, self.pod)
        if status is None:
            return pre_result
        if status.code == Code.ERROR:
            raise RuntimeError(status.message())
        nodes = self.cache.node_infos
        raise FitError(len(nodes), NodeStatuses((info.name, status) for info in nodes),
                       {status.plugin} if status.plugin else set(), status.message())

    def _nominated_node(self, diagnosis: NodeStatuses, plugins: set[str]) -> tuple[np.ndarray | None, int | None]:
        """Upstream ``evaluateNominatedNode``: the pod's nominated node, alone, first. Returns it (as
        the only feasible node) when it passes the filters and extenders; else None and its index when
        it failed with a status (recorded in ``diagnosis``)."""
        fwk, pod = self.fwk, self.pod
        info = self.cache.get(pod.nominated_node_name) if pod.nominated_node_name else None
        if info is None:
            return None, None
        status = fwk.run_filter_with_nominated(self.state, pod, info)
        if status is not None:
            if status.code == Code.ERROR:  # upstream only logs an error on the nominated node
                return None, None
            diagnosis[info.name] = status
            plugins.add(status.plugin)
            return None, info.index
        only = np.asarray([info.index], dtype=np.int64)
        if not fwk.extenders:
            return only, None
        try:
            only, verdicts = filter_indices(fwk.extenders, pod, self.cache.node_infos, only)
        except RuntimeError as err:  # upstream logs an error on the nominated node
            logger.error("evaluation failed on nominated node %s of pod %s: %s", info.name, pod.key, err)
            return None, None
        if len(only):
            return only, None
        apply_verdicts(diagnosis, verdicts)
        return None, info.index if info.name in diagnosis else None

    def _scan_order(self, pre_result: PreFilterResult | None) -> np.ndarray:
        """The nodes to filter (by index): all, or those a PreFilter named, from
        ``nextStartNodeIndex`` on, round."""
        nodes = self.cache.node_infos
        if pre_result is not None and pre_result.node_names is not None:
            # v1.28.7 fails the whole attempt when a PreFilter names a node the snapshot lacks
            # (fixed in v1.28.10, #124764)
            missing = sorted(n for n in pre_result.node_names if self.cache.get(n) is None)
            if missing:
                raise RuntimeError(f'nodeinfo not found for node name "{missing[0]}"')
            order = np.asarray([i.index for i in nodes if i.name in pre_result.node_names], dtype=np.int64)
        else:
            order = np.arange(len(nodes), dtype=np.int64)
        start = self.next_start % len(order) if len(order) else 0
        return np.concatenate([order[start:], order[:start]]) if start else order

    def _scan(self, order: np.ndarray, nominated_index: int | None, diagnosis: NodeStatuses,
              plugins: set[str]) -> np.ndarray:
        """Upstream ``findNodesThatPassFilters`` and ``findNodesThatPassExtenders`` over ``order``:
        the feasible nodes, or a :class:`FitError` naming every node that failed."""
        fwk, state, pod, cache = self.fwk, self.state, self.pod, self.cache
        total = len(order)
        to_find = num_feasible_nodes_to_find(self.percentage, total)
        ok, first_fail, known = filter_in_windows(fwk, state, pod, cache, order, to_find)
        positions = np.flatnonzero(ok)
        if len(positions) > to_find:
            processed = int(positions[to_find - 1]) + 1
            positions = positions[:to_find]
        else:
            processed = total
        scanned = order[:processed]
        # a filter Error aborts the attempt (upstream: the error channel cancels the search; the
        # failing node gets no status)
        error = None
        if any(st.code == Code.ERROR for st in known.distinct()):
            error = next(
                ((k, st) for k, j in enumerate(scanned.tolist())
                 if (st := known.get(j)) is not None and st.code == Code.ERROR),
                None,
            )
        if error is not None:
            scanned = scanned[: error[0]]
            processed = error[0]
        if total:
            # processedNodes = #feasible + #statuses, updated even after an error; the nominated
            # node's status counts too unless the scan evaluated (and so overwrote) it
            extra = 1 if nominated_index is not None and not bool(np.any(scanned == nominated_index)) else 0
            self.next_start = (self.next_start + processed + extra) % total
        if error is not None:
            raise RuntimeError(error[1].message())
        feasible = order[positions]
        verdicts: list[FilterVerdict] = []
        if len(feasible) and fwk.extenders:
            before = len(feasible)
            feasible, verdicts = filter_indices(fwk.extenders, pod, cache.node_infos, feasible)
            if len(feasible) != before:
                # upstream puts the fake plugin name "Extender" in the pod's unschedulable plugins
                plugins.add(EXTENDER_NAME)
        if len(feasible):
            return feasible
        nodes = cache.node_infos
        failed = scanned[~ok[:processed]]
        shared, which, alike = fwk.grouped_statuses_for(state, pod, cache, failed, first_fail, known)
        names = cache.node_names  # replaced, never changed, when the nodes change
        if isinstance(diagnosis, LazyNodeStatuses) and not diagnosis and not verdicts:
            # the entries made only if something reads them (explanations, extenders)
            def index_of(name: str) -> int:
                if names is cache.node_names:  # the nodes as scanned: their indices hold
                    info = cache.get(name) if name else None
                    return info.index if info is not None else -1
                return names.index(name) if name in names else -1

            diagnosis.fill_later(names, failed, shared, which, alike, index_of)
        else:
            diagnosis.fill(list(map(names.__getitem__, failed.tolist())), shared[which].tolist(),
                           None if verdicts else alike)
        apply_verdicts(diagnosis, verdicts)
        plugins.update(st.plugin for st, _ in diagnosis.alike())
        plugins.discard("")
        raise FitError(len(nodes), diagnosis, plugins)


def filter_in_windows(fwk: Framework, state: CycleState, pod: PodInfo, cache: Cache, order: np.ndarray,
                      to_find: int) -> tuple[np.ndarray, np.ndarray, FoundStatuses]:
    """The filters' verdicts on the nodes of ``order`` (the scan's order), a window of nodes at a
    time until more than ``to_find`` nodes pass — the scan stops at the ``to_find``-th, and looks at
    every node only when no more pass — or every node is done: for a big cluster most nodes need
    not be filtered at all (upstream stops checking nodes once it has found enough, too). Returns
    per node of ``order`` as far as it got whether it passes; by node index, the first filter
    failing each node filtered (as :meth:`Framework.filter_all`; -1 for the nodes not reached); and
    the statuses computed on the way (by node index)."""
    total = len(order)
    window = max(2 * (to_find + 1), MIN_FILTER_WINDOW)
    if window >= total:
        mask, first_fail, statuses = fwk.filter_all(state, pod, cache)
        return mask[order], first_fail, statuses
    passes: list[np.ndarray] = []
    first_fail = np.full(len(cache.node_infos), -1, dtype=np.int64)
    known = FoundStatuses()
    done = found = 0
    while done < total:
        where = order[done:done + window]
        mask, fails, statuses = fwk.filter_all(state, pod, cache, where)
        passes.append(mask)
        first_fail[where] = fails
        known.update(statuses)
        done += len(where)
        found += int(np.count_nonzero(mask))
        if found > to_find:
            break
        # none passed so far: the rest at once (a window only saves work when enough nodes pass)
        window = total - done if not found else window * 2
    return np.concatenate(passes), first_fail, known
