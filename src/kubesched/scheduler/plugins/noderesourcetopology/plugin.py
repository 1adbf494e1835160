"""NodeResourceTopologyMatch (kubernetes-sigs/scheduler-plugins ``noderesourcetopology``): NUMA-aware
Filter and Score from NodeResourceTopology objects, with Reserve for the reservation-aware view.
Opt-in: enable it in a profile (``multiPoint`` enables every point it implements).

Filter (nodes whose Topology Manager policy is ``single-numa-node``; others always pass):
- pods of QoS BestEffort without extended resources pass;
- a node without an object passes; a node whose view may not be used (see
  :mod:`kubesched.topology.nrtcache`) fails with "invalid node topology data";
- scope ``container``: each init container must fit one zone; each app container must fit one zone,
  the lowest-numbered one that fits is charged (as the kubelet picks it) before the next container;
  scope ``pod``: the pod's effective request must fit one zone. A resource fits a zone if the zone
  has it available; for non-Guaranteed pods cpu, memory and hugepages always fit (they come from the
  shared pool); a resource no zone reports passes if it is a storage or extended resource.
- During a preemption dry run (``preemptionMode: Enabled``), when the view's cache has a container
  placement for the node (only the reservation cache has, once it flushed the node: see
  :mod:`kubesched.topology.nrtcache`), the app containers' exclusive resources of the victims it
  places are given back to their zone before the check, so victims are chosen until the preemptor
  fits one zone; if no victim resource can be given back, or one would exceed its zone's allocatable,
  the node fails with "eviction simulation in NRT is not possible:<why>". Without a placement the
  check runs on the unchanged zones (the preemptor fits no better: no candidate).

Score: non-Guaranteed pods 100; no object 0; ``LeastNUMANodes`` on every node, the other strategies
only on ``single-numa-node`` nodes (0 elsewhere). See :mod:`kubesched.topology.scoring`.

Args (upstream names and defaults): ``scoringStrategy: {type: LeastAllocated, resources: [{name,
weight}]}``, ``cacheResyncPeriodSeconds: 0``, ``discardReservedNodes: false``, ``cache:
{foreignPodsDetect, resyncMethod, informerMode, resyncScope}``, ``preemptionMode: Disabled``.
With the reservation cache, foreign pods make their node's data invalid until a resync finds the
exporter caught up, as upstream. A pod is foreign when its ``schedulerName`` is none of the profiles
that registered for the detection: as scheduler-plugins' process-wide ``RegisterSchedulerProfileName``
set, every profile of the scheduler whose NodeResourceTopologyMatch uses the reservation cache with
``foreignPodsDetect`` other than ``None`` (``OnlyExclusiveResources``: only foreign pods with
exclusive resources count). Informer mode and resync scope are accepted and validated but not
modelled.
kubesched extension: ``cacheResyncMode: Periodic`` (upstream) or ``OnUpdate`` (flush a node's
reservations as soon as its object reflects the scheduler's pods; turns the cache on by itself).

Filter and Score are worked out once per kind of node view and spread over the nodes with that
view (:mod:`kubesched.scheduler.plugins.noderesourcetopology.vector`); the views are kept until the topology cache
reports them changed, and only the objects the cluster's change journal names are read again.
With the reservation cache, Filter notes each node it rejects; its vector forms leave that to
:meth:`NodeResourceTopologyMatch.note_rejections`, given the rejected nodes the earlier filters passed.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME
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
    FilterRejectionsNoted,
    FilterVector,
    FilterVectorAt,
    Handle,
    NodeTableSnapshot,
    PostBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    ScoreVector,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.noderesourcetopology.vector import (
    MAX_MASK_RESOURCES,
    ViewCodes,
    allocatable_mask,
    allocatable_masks,
    request_key,
    requested_names,
)
from kubesched.topology.nrt import KIND, PodData, TopologyView, Zone, parse_nrt
from kubesched.topology.nrtcache import (
    RESYNC_ALL,
    RESYNC_AUTODETECT,
    RESYNC_EXCLUSIVE,
    DiscardReserved,
    OverReserve,
    Passthrough,
    TopologyCache,
)
from kubesched.topology.numaplacement import Placement
from kubesched.topology.qos import (
    BEST_EFFORT,
    GUARANTEED,
    PodRequest,
    is_exclusive,
    is_host_level,
    is_native,
    is_numa_affine,
    pinned_containers,
    pod_request,
)
from kubesched.topology.scoring import (
    STRATEGIES,
    container_scope_score,
    least_numa_nodes,
    suitable,
    zones_score,
)

NAME = "NodeResourceTopologyMatch"
SINGLE_NUMA_NODE = "single-numa-node"
LEAST_NUMA_NODES = "LeastNUMANodes"
STRATEGY_TYPES = ("LeastAllocated", "MostAllocated", "BalancedAllocation", LEAST_NUMA_NODES)
INVALID_DATA = "invalid node topology data"
CANNOT_ALIGN_CONTAINER = "cannot align container"
CANNOT_ALIGN_INIT = "cannot align init container"
CANNOT_ALIGN_POD = "cannot align pod"
EVICTION_IMPOSSIBLE = "eviction simulation in NRT is not possible:"
NOTHING_TO_ADD = "no resources to add, cannot process eviction simulation"
EXCEEDS_ALLOCATABLE = "resource release request exceeds NUMA allocatable"
ARGS = {
    "scoringStrategy", "cacheResyncPeriodSeconds", "cacheResyncMode", "discardReservedNodes", "cache", "preemptionMode",
}
RESYNC_MODES = ("Periodic", "OnUpdate")
CACHE_ENUMS = {
    "foreignPodsDetect": ("All", "None", "OnlyExclusiveResources"),  # the first is the default
    "resyncMethod": (RESYNC_AUTODETECT, RESYNC_ALL, RESYNC_EXCLUSIVE),
    "informerMode": ("Shared", "Dedicated"),
    "resyncScope": ("All", "OnlyResources"),
}
REQUEST_KEY = "NodeResourceTopologyMatch/request"
#: the scheduler-wide set of profile names whose pods are not foreign
KNOWN_PROFILES = "NodeResourceTopologyMatch/foreign-pods-profiles"


def _enum(value: Any, allowed: Sequence[str], what: str, default: str) -> str:
    if value is None:
        return default
    if value not in allowed:
        raise ValueError(f"{what}: unsupported value {value!r} (allowed: {', '.join(allowed)})")
    return str(value)


def _weights(raw: Any) -> dict[str, int]:
    if raw is None:
        return {"cpu": 1, "memory": 1}
    if not isinstance(raw, list):
        raise ValueError("scoringStrategy.resources: must be a list of {name, weight}")
    out: dict[str, int] = {}
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ValueError(f"scoringStrategy.resources[{i}].name is required")
        weight = spec.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
            raise ValueError(f"scoringStrategy.resources[{i}].weight: must be an integer in 0..100, got {weight!r}")
        out[spec["name"]] = weight or 1
    return out or {"cpu": 1, "memory": 1}


def request_of(pod: PodInfo) -> PodRequest:
    """The pod's parsed requests (kept on the PodInfo)."""
    cached = pod.cache.get(REQUEST_KEY)
    if cached is None:
        cached = pod_request(pod.obj)
        pod.cache[REQUEST_KEY] = cached
    assert isinstance(cached, PodRequest)
    return cached


def pinned_of(pod: PodInfo, resources: frozenset[str]) -> tuple[str, ...]:
    """The pod's containers holding exclusive resources on a node reporting ``resources`` (kept on
    the PodInfo)."""
    key = f"{NAME}/pinned"
    cached = pod.cache.get(key)
    if cached is None or cached[0] != resources:
        cached = (resources, pinned_containers(request_of(pod), resources))
        pod.cache[key] = cached
    pinned: tuple[str, ...] = cached[1]
    return pinned


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


class EvictionImpossible(Exception):
    pass


def post_eviction(view: TopologyView, victims: Sequence[PodInfo], placement: Placement) -> TopologyView:
    """upstream ``GetNRTPostPodsEviction``: the zones once ``victims`` are gone — each app container
    ``placement`` knows gives its zone back its exclusive requests. Raises
    :class:`EvictionImpossible` when nothing is given back or a zone would exceed its allocatable."""
    back: dict[int, dict[str, int]] = {}
    for victim in victims:
        request = request_of(victim)
        for c in request.containers:
            zone = placement.zone_of(victim.namespace, victim.name, c.name)
            if zone is None:
                continue
            for resource, amount in c.requests.items():
                if is_exclusive(request.qos, resource, amount, view.resource_names):
                    given = back.setdefault(zone, {})
                    given[resource] = given.get(resource, 0) + amount
    if not back:
        raise EvictionImpossible(NOTHING_TO_ADD)
    out = view.copy()
    for z in out.zones:
        for resource, amount in back.get(z.numa_id, {}).items():
            if resource not in z.available:
                continue
            if z.available[resource] + amount > z.allocatable.get(resource, 0):
                raise EvictionImpossible(EXCEEDS_ALLOCATABLE)
            z.available[resource] += amount
    return out


def align(request: Mapping[str, int], zones: Sequence[Zone], qos: str,
          allocatable: Collection[str]) -> tuple[bool, Zone | None]:
    """upstream ``resourcesAvailableInAnyNUMANodes``: whether one zone can hold ``request`` and the
    zone the kubelet would pick (lowest id), None if no resource needs a zone (``allocatable``:
    the resources the node's ``status.allocatable`` names)."""
    fitting: set[int] | None = None
    for resource, amount in request.items():
        if amount == 0:
            continue
        if resource not in allocatable:
            return False, None
        reported = False
        here: set[int] = set()
        for z in zones:
            if resource not in z.available:
                continue
            reported = True
            if suitable(qos, resource, amount, z.available[resource]):
                here.add(z.numa_id)
        if not reported and is_host_level(resource):
            continue
        fitting = here if fitting is None else fitting & here
        if not fitting:
            return False, None
    if fitting is None:
        return True, None
    best = min(fitting)
    return True, next(z for z in zones if z.numa_id == best)


def charge(zone: Zone, request: Mapping[str, int], qos: str) -> None:
    """upstream ``subtractResourcesFromNUMANodeList`` for the chosen zone."""
    for resource, amount in request.items():
        if (qos != GUARANTEED and is_numa_affine(resource)) or amount == 0 or resource not in zone.available:
            continue
        zone.available[resource] -= amount


def align_containers(request: PodRequest, view_zones: Sequence[Zone], allocatable: Collection[str]) -> Status | None:
    """Container scope: the init containers one by one, then each container in turn with what the
    ones before it took charged to copies of the zones (upstream ``singleNUMAContainerLevelHandler``)."""
    qos = request.qos
    zones = [z.copy() for z in view_zones]
    for c in request.init_containers:
        fits, _ = align(c.requests, zones, qos, allocatable)
        if not fits:
            return Status.unschedulable(CANNOT_ALIGN_INIT)
    for c in request.containers:
        fits, zone = align(c.requests, zones, qos, allocatable)
        if not fits:
            return Status.unschedulable(CANNOT_ALIGN_CONTAINER)
        if zone is not None:
            charge(zone, c.requests, qos)
    return None


class NodeResourceTopologyMatch(
    PreFilterPlugin, PreFilterExtensions, FilterPlugin, FilterVector, FilterVectorAt, FilterRejectionsNoted, ScorePlugin,
    ScoreVector, ReservePlugin, PostBindPlugin, EnqueueExtensions,
):
    name = NAME

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        args = args or {}
        unknown = sorted(set(args) - ARGS)
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(ARGS))})")
        self.handle = handle
        strategy = args.get("scoringStrategy") or {}
        if not isinstance(strategy, dict):
            raise ValueError("scoringStrategy: must be an object {type, resources}")
        self.strategy = _enum(strategy.get("type"), STRATEGY_TYPES, "scoringStrategy.type", "LeastAllocated")
        self.weights = _weights(strategy.get("resources"))
        period = args.get("cacheResyncPeriodSeconds", 0)
        if not isinstance(period, int) or isinstance(period, bool) or period < 0:
            raise ValueError(f"cacheResyncPeriodSeconds: must be a non-negative integer, got {period!r}")
        discard = args.get("discardReservedNodes", False)
        if not isinstance(discard, bool):
            raise ValueError("discardReservedNodes: must be a boolean")
        cache_args = args.get("cache") or {}
        if not isinstance(cache_args, dict) or set(cache_args) - set(CACHE_ENUMS):
            raise ValueError(f"cache: must be an object with fields {', '.join(CACHE_ENUMS)}")
        cache_opts = {k: _enum(cache_args.get(k), v, f"cache.{k}", v[0]) for k, v in CACHE_ENUMS.items()}
        self.preemption = _enum(args.get("preemptionMode"), ("Disabled", "Enabled"), "preemptionMode", "Disabled")
        on_update = _enum(args.get("cacheResyncMode"), RESYNC_MODES, "cacheResyncMode", "Periodic") == "OnUpdate"
        self.cache: TopologyCache
        if discard:
            self.cache = DiscardReserved()
        elif period > 0 or on_update:
            self.cache = OverReserve(float(period or 1), cache_opts["resyncMethod"], on_update,
                                     keep_pods=self.preemption == "Enabled")
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
        self.foreign_pods = cache_opts["foreignPodsDetect"] if isinstance(self.cache, OverReserve) else "None"
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
        self._mark, keys = self.handle.cluster.changes(KIND, self._mark)
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
        for its next resync, unless the node's data could not be used at all."""
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
            status = self._align_pod(data.request, view, allocatable)
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
        return self._align_pod(request, view, node.allocatable)

    def _align_pod(self, request: PodRequest, view: TopologyView, allocatable: Collection[str]) -> Status | None:
        qos = request.qos
        if view.scope == "pod":
            fits, _ = align(request.effective(), view.zones, qos, allocatable)
            return None if fits else Status.unschedulable(CANNOT_ALIGN_POD)
        if not request.init_containers and len(request.containers) == 1:
            # one container: nothing is charged before it and nothing after it reads the charge,
            # so the zones are read as they are (align does not change them)
            fits, _ = align(request.containers[0].requests, view.zones, qos, allocatable)
            return None if fits else Status.unschedulable(CANNOT_ALIGN_CONTAINER)
        return align_containers(request, view.zones, allocatable)

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

