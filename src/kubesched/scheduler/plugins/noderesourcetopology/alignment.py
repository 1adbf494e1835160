"""Does a pod fit one NUMA zone of a node's NodeResourceTopology view (scheduler-plugins
``noderesourcetopology/filter.go``): the pod's parsed requests and pinned containers (kept on its
PodInfo), the alignment of the whole pod or of each container to one zone, and the zones once
preemption victims are gone (``GetNRTPostPodsEviction``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.types import PodInfo
from kubesched.topology.nrt import TopologyView, Zone
from kubesched.topology.numaplacement import Placement
from kubesched.topology.qos import (
    GUARANTEED,
    PodRequest,
    is_exclusive,
    is_host_level,
    is_numa_affine,
    pinned_containers,
    pod_request,
)
from kubesched.topology.scoring import suitable

CANNOT_ALIGN_CONTAINER = "cannot align container"
CANNOT_ALIGN_INIT = "cannot align init container"
CANNOT_ALIGN_POD = "cannot align pod"
NOTHING_TO_ADD = "no resources to add, cannot process eviction simulation"
EXCEEDS_ALLOCATABLE = "resource release request exceeds NUMA allocatable"
#: PodInfo.cache keys of the pod's parsed requests and of its pinned containers
REQUEST_KEY = "NodeResourceTopologyMatch/request"
PINNED_KEY = "NodeResourceTopologyMatch/pinned"


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
    cached = pod.cache.get(PINNED_KEY)
    if cached is None or cached[0] != resources:
        cached = (resources, pinned_containers(request_of(pod), resources))
        pod.cache[PINNED_KEY] = cached
    pinned: tuple[str, ...] = cached[1]
    return pinned


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


def align_pod(request: PodRequest, view: TopologyView, allocatable: Collection[str]) -> Status | None:
    """Filter's check on a ``single-numa-node`` node: the pod (scope ``pod``) or each of its containers
    (scope ``container``) fits one zone of ``view``."""
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
