"""The NodeResourceTopologyMatch plugin: the node views it keeps (read from the cluster's
NodeResourceTopology objects through the topology cache, foreign pods detected), Filter and Score
per node and per kind of node view, Reserve and PostBind for the reservation cache."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME
from kubesched.scheduler.framework.capabilities import (
    FilterRejectionsNoted,
    FilterVector,
    FilterVectorAt,
    ScoreVector,
)
from kubesched.scheduler.framework.interface import (
    ADD,
    DELETE,
    MAX_NODE_SCORE,
    UPDATE,
    UPDATE_NODE_ALLOCATABLE,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PostBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.plugins.noderesourcetopology.alignment import (
    EvictionImpossible,
    align_pod,
    pinned_of,
    post_eviction,
    request_of,
)
from kubesched.scheduler.plugins.noderesourcetopology.args import LEAST_NUMA_NODES, parse_args
from kubesched.scheduler.plugins.noderesourcetopology.vector import (
    MAX_MASK_RESOURCES,
    ViewCodes,
    allocatable_mask,
    allocatable_masks,
    request_key,
    requested_names,
)
from kubesched.topology.nrt import KIND, PodData, TopologyView, parse_nrt
from kubesched.topology.nrtcache import DiscardReserved, OverReserve, Passthrough, TopologyCache
from kubesched.topology.qos import BEST_EFFORT, GUARANTEED, PodRequest, is_native
from kubesched.topology.scoring import STRATEGIES, container_scope_score, least_numa_nodes, zones_score

NAME = "NodeResourceTopologyMatch"
SINGLE_NUMA_NODE = "single-numa-node"
INVALID_DATA = "invalid node topology data"
EVICTION_IMPOSSIBLE = "eviction simulation in NRT is not possible:"
#: the scheduler-wide set of profile names whose pods are not foreign
KNOWN_PROFILES = "NodeResourceTopologyMatch/foreign-pods-profiles"


@dataclass(slots=True)
class _CycleData:
    request: PodRequest
    victims: list[PodInfo] = field(default_factory=list)
    #: what of the request Filter and Score read (memo keys) and the resources it names
    key: Any = None
    names: tuple[str, ...] = ()
    #: a BestEffort pod without extended resources: Filter passes on every node
    passes_everywhere: bool = False

    @staticmethod
    def of(request: PodRequest) -> _CycleData:
        everywhere = request.qos == BEST_EFFORT and not any(
            not is_native(r) for c in request.all_containers() for r in c.requests)
        return _CycleData(request, [], request_key(request), requested_names(request), everywhere)

    def clone(self) -> _CycleData:
        return _CycleData(self.request, list(self.victims), self.key, self.names, self.passes_everywhere)


class NodeResourceTopologyMatch(
    PreFilterPlugin, PreFilterExtensions, FilterPlugin, FilterVector, FilterVectorAt, FilterRejectionsNoted, ScorePlugin,
    ScoreVector, ReservePlugin, PostBindPlugin, EnqueueExtensions,
):
    name = NAME

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        settings = parse_args(args or {})
        self.handle = handle
        self.strategy, self.weights, self.preemption = settings.strategy, settings.weights, settings.preemption
        self.cache: TopologyCache
        if settings.discard_reserved:
            self.cache = DiscardReserved()
        elif settings.resync_period > 0 or settings.on_update:
            self.cache = OverReserve(float(settings.resync_period or 1), settings.cache["resyncMethod"],
                                     settings.on_update, keep_pods=self.preemption == "Enabled")
        else:
            self.cache = Passthrough()
        #: each node's latest object, parsed (the caches read this map)
        self._parsed: dict[str, TopologyView] = {}
        #: the cluster's mark for NodeResourceTopology changes (None: read them all next time)
        self._mark: int | None = None
        #: each node's view as the cache gives it, until the cache reports it changed
        self._views: dict[str, tuple[TopologyView | None, bool]] = {}
        self._codes = ViewCodes(self._view)
        #: answers per (request key, view code, allocatable mask) and per (request key, view code)
        self._verdicts: dict[tuple[Any, int, int], Status | None] = {}
        self._scores: dict[tuple[Any, int], int] = {}
        #: foreign pods detection (only with the reservation cache, as upstream): pods whose
        #: schedulerName no detecting profile has, all of them or only those with exclusive resources
        self.foreign_pods = settings.cache["foreignPodsDetect"] if isinstance(self.cache, OverReserve) else "None"
        #: shared by the scheduler's profiles, read once they all exist (at detection time)
        self._known_profiles = handle.shared_set(KNOWN_PROFILES)
        if self.foreign_pods != "None":
            self._known_profiles.add(handle.scheduler_name or DEFAULT_SCHEDULER_NAME)
        #: per node, the pods :meth:`_node_pods` listed: (NodeInfo, its generation, resources, pods)
        self._pods_of: dict[str, tuple[NodeInfo, int, frozenset[str], list[PodData]]] = {}
        self._seen_generation: dict[str, int] = {}
        #: the snapshot's mark for node changes at the last foreign pods detection
        self._node_mark: int | None = None
        self._foreign_seen: dict[str, dict[str, str]] = {}  # node -> foreign pod uid -> resourceVersion

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("Pod", DELETE),
            ClusterEvent("Node", ADD | UPDATE_NODE_ALLOCATABLE),
            ClusterEvent(KIND, ADD | UPDATE),
        ]

    # -- the node views -----------------------------------------------------------------------
    def _refresh(self) -> None:
        changed = self._read_objects()
        self.cache.refresh(self.handle.now(), self._parsed, changed, self._node_pods)
        if self.foreign_pods != "None":
            self._detect_foreign_pods(self._parsed, changed)
        self._forget_changed()
        if len(self._codes) > 4 * len(self._parsed) + 1024:  # views long gone keep their codes
            self._codes.clear()
            self._verdicts.clear()
            self._scores.clear()
        elif len(self._verdicts) + len(self._scores) > 1 << 16:
            self._verdicts.clear()
            self._scores.clear()

    def _read_objects(self) -> set[str]:
        """Bring :attr:`_parsed` up to date with the cluster; the nodes whose object came, went or
        was replaced. Only the objects the cluster's journal names are read, when it can tell."""
        self._mark, keys = self.handle.changes(KIND, self._mark)
        changed: set[str] = set()
        gone: list[str] = []
        if keys is None:
            seen: set[str] = set()
            for obj in self.handle.list(KIND):
                name = str((obj.get("metadata") or {}).get("name", ""))
                seen.add(name)
                if self._take(name, obj):
                    changed.add(name)
            gone = [n for n in self._parsed if n not in seen]
        else:
            for key in keys:
                name = key.rpartition("/")[2]
                current = self.handle.get(KIND, "", name)
                if current is None:
                    if name in self._parsed:
                        gone.append(name)
                elif self._take(name, current):
                    changed.add(name)
        for name in gone:
            del self._parsed[name]
            self._pods_of.pop(name, None)
            changed.add(name)
        return changed

    def _take(self, name: str, obj: Mapping[str, Any]) -> bool:
        """Keep ``obj`` as the node's object, parsed unless its resourceVersion is the one kept;
        whether it was new."""
        parsed = self._parsed.get(name)
        if parsed is not None and parsed.resource_version == str((obj.get("metadata") or {}).get("resourceVersion", "")):
            return False
        self._parsed[name] = parse_nrt(obj)
        return True

    def _is_foreign(self, pod: PodInfo, resources: frozenset[str]) -> bool:
        if pod.scheduler_name in self._known_profiles:
            return False
        return self.foreign_pods == "All" or bool(pinned_of(pod, resources))

    def _detect_foreign_pods(self, latest: Mapping[str, TopologyView], changed: Collection[str]) -> None:
        """Upstream's pod informer handler, from the snapshot: a node whose foreign pods (uid and
        resourceVersion) differ from what the last look found had a foreign pod added, updated or
        deleted; only nodes that changed since are looked at (those the snapshot's journal names
        and those whose object is new, when the journal can tell)."""
        assert isinstance(self.cache, OverReserve)
        snapshot = self.handle.snapshot()
        self._node_mark, touched = snapshot.node_changes(self._node_mark)
        names: Collection[str] = latest if touched is None else {
            n for n in itertools.chain(touched, changed) if n in latest}
        for name in names:
            info = snapshot.get(name)
            generation = info.generation if info is not None else -1
            if self._seen_generation.get(name) == generation:
                continue
            self._seen_generation[name] = generation
            foreign = {} if info is None else {
                p.uid: str((p.obj.get("metadata") or {}).get("resourceVersion") or "")
                for p in info.pods if self._is_foreign(p, latest[name].resource_names)}
            if foreign != self._foreign_seen.get(name, {}):
                self.cache.node_has_foreign_pods(name)
            self._foreign_seen[name] = foreign

    def _node_pods(self, view: TopologyView) -> list[PodData]:
        """The scheduler's pods on the view's node; the same list while they stay the same."""
        info = self.handle.snapshot().get(view.node)
        if info is None:
            return []
        kept = self._pods_of.get(view.node)
        if kept is not None and kept[0] is info and kept[1] == info.generation and kept[2] == view.resource_names:
            return kept[3]
        pods = [PodData(p.namespace, p.name, pinned_of(p, view.resource_names)) for p in info.pods]
        self._pods_of[view.node] = (info, info.generation, view.resource_names, pods)
        return pods

    def _view(self, node: str) -> tuple[TopologyView | None, bool]:
        found = self._views.get(node)
        if found is None:
            found = self.cache.view(node)
            self._views[node] = found
        return found

    def _forget_changed(self) -> None:
        """Forget what was kept of the nodes whose view the cache reports changed."""
        for node in self.cache.take_dirty():
            self._views.pop(node, None)
            self._codes.forget(node)

    def _data(self, state: CycleState, pod: PodInfo) -> _CycleData:
        data = state.read(NAME)
        if data is None:
            self.pre_filter(state, pod)
            data = state.read(NAME)
        assert isinstance(data, _CycleData)
        return data

    # -- PreFilter (+ extensions for preemption dry runs) ---------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        self._refresh()
        state.write(NAME, _CycleData.of(request_of(pod)))
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        data = self._data(state, pod)
        data.victims = [v for v in data.victims if v.uid != to_add.uid]
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        self._data(state, pod).victims.append(to_remove)
        return None

    # -- Filter -----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = self._data(state, pod)
        if data.passes_everywhere:
            return None
        victims = [v for v in data.victims if v.node_name == node.name] if self.preemption == "Enabled" else []
        if victims:
            return self._filter_after_eviction(data.request, node, victims)
        status = self._verdict(data, node.name, allocatable_mask(data.names, node.allocatable), node.allocatable)
        if status is not None:
            self._note_rejected(node.name)
        return status

    def _note_rejected(self, name: str) -> None:
        """Filter rejected node ``name`` (no victims taken off it): the reservation cache notes it
        for its next resync, unless the node's data could not be used at all.

        As upstream, this holds in preemption dry runs too (DefaultPreemption calls Filter on a clone
        of the node and of the cycle state): always with ``preemptionMode: Disabled``, and with
        ``Enabled`` only where no victim was taken off the node (upstream's Filter skips the note
        in its preemption flow). The dry run never bypasses this Filter: the plugin is neither a
        ``PodIndependentFilter`` nor ``PodMovesNeutral``, so with it in a cycle a dry-run node is
        always a ``ClonedNode`` whose filters are called, never an ``ArithmeticNode`` or an
        ``ArithmeticBatch`` (those need NodeResourcesFit to be the only filter depending on the
        node's pods, or the others to be neutral); and nodes NodeResourcesFit's arithmetic rules
        out before any filter is asked are ruled out so only when no filter acting on its
        rejections runs before it (``rejections_noted_before``)."""
        if self._view(name)[1]:
            self.cache.node_maybe_overreserved(name)

    def _verdict(self, data: _CycleData, name: str, mask: int, allocatable: Collection[str]) -> Status | None:
        """Filter's answer on node ``name`` without victims (``mask``: :func:`allocatable_mask` of
        its ``allocatable``), worked out once per view code and mask."""
        key = (data.key, self._codes.code(name), mask)
        if key in self._verdicts:
            return self._verdicts[key]
        view, usable = self._view(name)
        if not usable:
            status: Status | None = Status.unschedulable(INVALID_DATA)
        elif view is None or view.policy != SINGLE_NUMA_NODE:
            status = None
        else:
            status = align_pod(data.request, view, allocatable)
        self._verdicts[key] = status
        return status

    def _filter_after_eviction(self, request: PodRequest, node: NodeInfo, victims: list[PodInfo]) -> Status | None:
        """Filter during a preemption dry run, with ``victims`` taken off the node."""
        view, usable = self._view(node.name)
        if not usable:
            return Status.unschedulable(INVALID_DATA)
        if view is None or view.policy != SINGLE_NUMA_NODE:
            return None
        placement = self.cache.placement(node.name)
        if placement is not None and len(placement) > 0:
            try:
                view = post_eviction(view, victims, placement)
            except EvictionImpossible as why:
                return Status.unschedulable(EVICTION_IMPOSSIBLE + str(why))
        return align_pod(request, view, node.allocatable)

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        return self._filter_nodes(state, pod, snapshot, None)

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        return self._filter_nodes(state, pod, snapshot, where)

    def _filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray | None
    ) -> np.ndarray | None:
        """Filter on every node (or nodes ``where``), one answer per view code and allocatable
        mask; None (ask per node) when victims were taken off nodes. What Filter does on a
        rejection besides answering is left to :meth:`note_rejections`."""
        data = self._data(state, pod)
        size = len(snapshot.node_infos) if where is None else len(where)
        if data.passes_everywhere:
            return np.ones(size, dtype=bool)
        if (self.preemption == "Enabled" and data.victims) or len(data.names) > MAX_MASK_RESOURCES:
            return None
        codes = self._codes.array(snapshot)
        masks = allocatable_masks(snapshot, data.names)
        if where is not None:
            codes, masks = codes[where], masks[where]
        keys = (codes << len(data.names)) | masks
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        infos = snapshot.node_infos
        passing = np.empty(len(unique), dtype=bool)
        for u, k in enumerate(first.tolist()):
            info = infos[k if where is None else int(where[k])]
            mask = int(masks[k])
            passing[u] = self._verdict(data, info.name, mask, info.allocatable) is None
        out: np.ndarray = passing[inverse]
        return out

    def note_rejections(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot,
                        rejected: np.ndarray) -> None:
        """What the per-node Filter does on each node it rejects (:meth:`_note_rejected`); only the
        reservation cache keeps anything of it."""
        if not isinstance(self.cache, OverReserve):
            return
        infos = snapshot.node_infos
        for j in rejected.tolist():
            self._note_rejected(infos[j].name)

    # -- Score ------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        data = self._data(state, pod)
        if data.request.qos != GUARANTEED:
            return MAX_NODE_SCORE
        return self._score(data, node.name)

    def score_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray) -> np.ndarray:
        data = self._data(state, pod)
        if data.request.qos != GUARANTEED:
            return np.full(len(idx), MAX_NODE_SCORE, dtype=np.int64)
        codes = self._codes.array(snapshot)[idx]
        unique, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        infos = snapshot.node_infos
        scores = np.fromiter((self._score(data, infos[int(idx[k])].name) for k in first.tolist()), dtype=np.int64,
                             count=len(unique))
        out: np.ndarray = scores[inverse]
        return out

    def _score(self, data: _CycleData, name: str) -> int:
        """Score of a Guaranteed pod on node ``name``, worked out once per view code."""
        key = (data.key, self._codes.code(name))
        found = self._scores.get(key)
        if found is None:
            found = self._scores[key] = self._score_view(data.request, *self._view(name))
        return found

    def _score_view(self, request: PodRequest, view: TopologyView | None, usable: bool) -> int:
        if not usable or view is None:
            return 0
        if view.scope == "pod":
            requests = [request.effective()]
        else:
            requests = [c.requests for c in request.all_containers()]
        if self.strategy == LEAST_NUMA_NODES:
            zones = [z.copy() for z in view.zones]
            return least_numa_nodes(request.qos, requests, zones, view.max_numa_nodes)
        if view.policy != SINGLE_NUMA_NODE:
            return 0
        strategy = STRATEGIES[self.strategy]
        if view.scope == "pod":
            return zones_score(requests[0], view.zones, strategy, self.weights)
        return container_scope_score(requests, view.zones, strategy, self.weights)

    # -- Reserve / PostBind -------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.cache.reserve(node_name, pod.key, self._data(state, pod).request.effective())
        self._forget_changed()
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.unreserve(node_name, pod.key)
        self._forget_changed()

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.post_bind(node_name, pod.key)
        self._forget_changed()

