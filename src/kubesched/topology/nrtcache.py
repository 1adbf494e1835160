"""The NodeResourceTopologyMatch plugin's view of each node's zones (scheduler-plugins'
``noderesourcetopology/cache``), chosen by the plugin args:

- **Passthrough** (``cacheResyncPeriodSeconds: 0``, the default): the latest NodeResourceTopology
  object as it is. Pods the scheduler placed since the exporter last wrote it are not in it: two pods
  placed between two updates can both be counted against the same free zone.
- **OverReserve** (``cacheResyncPeriodSeconds > 0``): the reservation-aware view. The object seen
  first is cached; every pod reserved on the node since then is subtracted from *every* zone (the
  scheduler cannot know which zone the kubelet will pick: pessimistic over-reservation). Every resync
  period, each node that was filtered out since the last flush is flushed — replaced by its latest
  object, reservations dropped — if that object's pod set fingerprint matches the pods the scheduler
  has on the node, i.e. once the exporter has caught up with the scheduler's placements.
- **OverReserve, flushed on update** (``cacheResyncMode: OnUpdate``, a kubesched extension): the same
  reservations, but a node is flushed as soon as its latest object's fingerprint matches the pods the
  scheduler has there (no period, no need to have been filtered out), and a node without
  reservations always shows its latest object. This is "subtract the pods placed since the object
  was last written": exact about *which* pods, still pessimistic about *where* they went.
- **DiscardReserved** (``discardReservedNodes: true``): a node with a pod between Reserve and PostBind
  is not considered at all.

Resync runs lazily, at the first scheduling cycle of each period (periods are aligned to
multiples of ``cacheResyncPeriodSeconds``); the outcome is that of a periodic resync for every
decision the scheduler takes.

**Container placement** (for preemption dry runs, ``preemptionMode: Enabled``): only OverReserve
gives one, as upstream. A flush keeps the pods the scheduler has on the node along with the object
(the pods its fingerprint was checked against); the object's ``numaplacement`` attributes are decoded
with them when first asked for (:func:`~kubesched.topology.nrt.placement_of`). The object first seen
has no pods, so no placement. With ``OnUpdate``, whenever a clean node's object is taken (the first
one too), the node's pods are kept with it if its fingerprint matches them. Passthrough and
DiscardReserved give none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kubesched.topology.nrt import METHOD_EXCLUSIVE, PodData, TopologyView, placement_of, pods_fingerprint
from kubesched.topology.numaplacement import Placement

RESYNC_AUTODETECT = "Autodetect"
RESYNC_ALL = "All"
RESYNC_EXCLUSIVE = "OnlyExclusiveResources"

#: every pod the scheduler has on a node (the node of the object given, whose resources tell which
#: containers hold exclusive ones)
NodePods = Callable[[TopologyView], list[PodData]]


class TopologyCache(Protocol):
    def refresh(self, now: float, latest: Mapping[str, TopologyView], changed: Collection[str],
                node_pods: NodePods) -> None:
        """Catch up with the latest object of every node (``latest``, the caller's map, changed
        by it only between two calls; ``changed``: the nodes whose object came, went or was
        replaced since the last call)."""

    def take_dirty(self) -> set[str]:
        """The nodes whose :meth:`view` may answer differently than when this was last asked."""

    def view(self, node: str) -> tuple[TopologyView | None, bool]:
        """(the zones to use — None if the node publishes none —, whether they may be used)."""

    def placement(self, node: str) -> Placement | None:
        """Where the containers on ``node`` are (upstream ``GetCachedNUMAPlacementInfo``)."""

    def reserve(self, node: str, pod_key: str, request: Mapping[str, int]) -> None: ...

    def unreserve(self, node: str, pod_key: str) -> None: ...

    def post_bind(self, node: str, pod_key: str) -> None: ...

    def node_maybe_overreserved(self, node: str) -> None: ...


class _DirtyNodes:
    """:meth:`TopologyCache.take_dirty` over a ``dirty`` set the cache adds to on every change.

    Not a :class:`~kubesched.k8s.journal.Journal` with a reader's mark: a topology cache has one
    reader, the plugin that owns it, which takes every change at the start of each cycle and
    wants each node once. A set gives it just that; a journal would hold an entry per reservation
    (many per node) and add a "forget every node" answer no reader needs."""

    __slots__ = ()
    dirty: set[str]

    def take_dirty(self) -> set[str]:
        dirty = set(self.dirty)
        self.dirty.clear()
        return dirty


@dataclass(slots=True)
class Passthrough(_DirtyNodes):
    latest: Mapping[str, TopologyView] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)

    def refresh(self, now: float, latest: Mapping[str, TopologyView], changed: Collection[str],
                node_pods: NodePods) -> None:
        self.latest = latest
        self.dirty.update(changed)

    def view(self, node: str) -> tuple[TopologyView | None, bool]:
        return self.latest.get(node), True

    def placement(self, node: str) -> Placement | None:
        return None

    def reserve(self, node: str, pod_key: str, request: Mapping[str, int]) -> None:
        pass

    def unreserve(self, node: str, pod_key: str) -> None:
        pass

    def post_bind(self, node: str, pod_key: str) -> None:
        pass

    def node_maybe_overreserved(self, node: str) -> None:
        pass


@dataclass(slots=True)
class DiscardReserved(Passthrough):
    reserved: dict[str, set[str]] = field(default_factory=dict)

    def view(self, node: str) -> tuple[TopologyView | None, bool]:
        if self.reserved.get(node):
            return None, False
        return self.latest.get(node), True

    def reserve(self, node: str, pod_key: str, request: Mapping[str, int]) -> None:
        self.reserved.setdefault(node, set()).add(pod_key)
        self.dirty.add(node)

    def unreserve(self, node: str, pod_key: str) -> None:
        self.reserved.get(node, set()).discard(pod_key)
        self.dirty.add(node)

    def post_bind(self, node: str, pod_key: str) -> None:
        self.reserved.get(node, set()).discard(pod_key)
        self.dirty.add(node)


def subtract_everywhere(view: TopologyView, request: Mapping[str, int]) -> None:
    """Take ``request`` from every zone that has the resource (never below zero), in place."""
    for zone in view.zones:
        for resource, amount in request.items():
            if resource in zone.available:
                zone.available[resource] = max(0, zone.available[resource] - amount)


@dataclass(slots=True)
class OverReserve(_DirtyNodes):
    period: float
    resync_method: str = RESYNC_AUTODETECT
    on_update: bool = False
    #: keep the pods with each flushed object (``preemptionMode: Enabled``), for :meth:`placement`
    keep_pods: bool = False
    cached: dict[str, TopologyView] = field(default_factory=dict)
    assumed: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    maybe_overreserved: set[str] = field(default_factory=set)
    #: nodes where pods of another scheduler came, went or changed since the last flush: their
    #: cached data cannot be trusted until a resync finds the exporter caught up
    foreign: set[str] = field(default_factory=set)
    flushes: int = 0
    #: the pods on the node when its cached object was flushed in (none: the object seen first)
    pods: dict[str, list[PodData]] = field(default_factory=dict)
    _placements: dict[str, Placement | None] = field(default_factory=dict)
    _latest: Mapping[str, TopologyView] = field(default_factory=dict)
    _next_resync: float = 0.0
    #: per node, the last :meth:`_matching_pods` question (object, pods) and its answer
    _checked: dict[str, tuple[TopologyView, list[PodData], list[PodData] | None]] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    #: nodes a reservation was taken off since the last refresh (a clean node takes its latest object)
    _unreserved: set[str] = field(default_factory=set)

    def refresh(self, now: float, latest: Mapping[str, TopologyView], changed: Collection[str],
                node_pods: NodePods) -> None:
        self._latest = latest
        # the cached nodes are those of the previous ``latest``: only changed ones come or go
        first_seen: set[str] = set()
        for name in changed:
            if name in latest and name not in self.cached:
                self.cached[name] = latest[name]
                first_seen.add(name)
                self.dirty.add(name)
            elif name not in latest and name in self.cached:
                del self.cached[name]
                self._checked.pop(name, None)
                self.assumed.pop(name, None)
                self.maybe_overreserved.discard(name)
                self.foreign.discard(name)
                self._keep(name, None)
                self.dirty.add(name)
        if self.on_update:
            # a node none of these names shows its latest object already and has nothing to flush
            candidates = {*changed, *self._unreserved, *self.foreign, *(n for n, pods in self.assumed.items() if pods)}
            self._unreserved.clear()
            for name in sorted(n for n in candidates if n in latest):
                if not self.assumed.get(name) and name not in self.foreign:
                    if name in first_seen or self.cached[name] is not latest[name]:
                        self.cached[name] = latest[name]
                        self.dirty.add(name)
                        self._keep(name, self._matching_pods(latest[name], node_pods) if self.keep_pods else None)
                    continue
                pods = self._matching_pods(latest[name], node_pods)
                if pods is not None:
                    self._flush(name, latest[name], pods)
        elif now >= self._next_resync:
            self.resync(node_pods)
            self._next_resync = (math.floor(now / self.period) + 1) * self.period

    def _method(self, view: TopologyView) -> str:
        if self.resync_method != RESYNC_AUTODETECT:
            return self.resync_method
        return RESYNC_EXCLUSIVE if view.fingerprint_method == METHOD_EXCLUSIVE else RESYNC_ALL

    def _matching_pods(self, latest: TopologyView, node_pods: NodePods) -> list[PodData] | None:
        """The scheduler's pods on ``latest``'s node if ``latest`` reflects exactly them, else None.
        The answer is kept for as long as the object and the list of pods given are the same
        objects (a ``node_pods`` that gives the same list while the pods are the same saves the
        fingerprint of every node with reservations in every refresh)."""
        if not latest.fingerprint:
            return None
        pods = node_pods(latest)
        checked = self._checked.get(latest.node)
        if checked is not None and checked[0] is latest and checked[1] is pods:
            return checked[2]
        only_exclusive = self._method(latest) == RESYNC_EXCLUSIVE
        keys = [p.key for p in pods if p.exclusive or not only_exclusive]
        matching = pods if pods_fingerprint(keys) == latest.fingerprint else None
        self._checked[latest.node] = (latest, pods, matching)
        return matching

    def _keep(self, node: str, pods: list[PodData] | None) -> None:
        """The pods that go with the node's cached object (None: none kept)."""
        self._placements.pop(node, None)
        if pods is not None and self.keep_pods:
            self.pods[node] = pods
        else:
            self.pods.pop(node, None)

    def _flush(self, node: str, latest: TopologyView, pods: list[PodData]) -> None:
        self.cached[node] = latest
        self.dirty.add(node)
        self._keep(node, pods)
        self.assumed.pop(node, None)
        self.maybe_overreserved.discard(node)
        self.foreign.discard(node)
        self.flushes += 1

    def resync(self, node_pods: NodePods) -> None:
        """Flush every node filtered out, or with foreign pods, since its last flush whose latest
        object has caught up."""
        for node in sorted(self.maybe_overreserved | self.foreign):
            latest = self._latest.get(node)
            pods = self._matching_pods(latest, node_pods) if latest is not None else None
            if latest is not None and pods is not None:
                self._flush(node, latest, pods)

    def placement(self, node: str) -> Placement | None:
        """Decoded from the cached object with the pods kept with it, on first use (upstream
        ``GetNUMAPlacementInfoByNodeName``)."""
        if node not in self._placements:
            view, pods = self.cached.get(node), self.pods.get(node)
            self._placements[node] = placement_of(view, pods) if view is not None and pods else None
        return self._placements[node]

    def view(self, node: str) -> tuple[TopologyView | None, bool]:
        if node in self.foreign:
            return None, False  # upstream GetCachedNRTCopy: "invalid node topology data"
        base = self.cached.get(node)
        assumed = self.assumed.get(node)
        if base is None or not assumed:
            return base, True
        view = base.copy()
        for request in assumed.values():
            subtract_everywhere(view, request)
        return view, True

    def reserve(self, node: str, pod_key: str, request: Mapping[str, int]) -> None:
        if node in self.cached:
            self.assumed.setdefault(node, {})[pod_key] = dict(request)
            self.dirty.add(node)

    def unreserve(self, node: str, pod_key: str) -> None:
        if self.assumed.get(node, {}).pop(pod_key, None) is not None:
            self.dirty.add(node)
            if self.on_update:
                self._unreserved.add(node)

    def post_bind(self, node: str, pod_key: str) -> None:
        pass

    def node_maybe_overreserved(self, node: str) -> None:
        self.maybe_overreserved.add(node)

    def node_has_foreign_pods(self, node: str) -> None:
        """A pod another scheduler placed on ``node`` appeared, changed or went (upstream
        ``NodeHasForeignPods``: only for a node whose data is cached)."""
        if node in self.cached:
            self.foreign.add(node)
            self.dirty.add(node)
