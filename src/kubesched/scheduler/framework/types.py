"""PodInfo and NodeInfo: the parsed views of pods and nodes the framework and plugins work on
(upstream ``framework/types.go``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.resources import (
    has_restartable_init_container,
    node_allocatable,
    pod_host_ports,
    pod_nonzero_requests,
    pod_requests,
    wrap_int64,
)
from kubesched.api.volumes.claims import pod_pvc_refs
from kubesched.k8s.objects import DEFAULT_NAMESPACE, DEFAULT_SCHEDULER_NAME, DISRUPTION_TARGET
from kubesched.k8s.timefmt import parse_rfc3339

if TYPE_CHECKING:
    from kubesched.scheduler.framework.interface import Status

Obj = dict[str, Any]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def _has_pod_affinity(spec: Obj) -> tuple[bool, bool]:
    affinity = spec.get("affinity") or {}
    pa = affinity.get("podAffinity") or {}
    paa = affinity.get("podAntiAffinity") or {}
    has_any = bool(
        pa.get("requiredDuringSchedulingIgnoredDuringExecution")
        or pa.get("preferredDuringSchedulingIgnoredDuringExecution")
        or paa.get("requiredDuringSchedulingIgnoredDuringExecution")
        or paa.get("preferredDuringSchedulingIgnoredDuringExecution")
    )
    return has_any, bool(paa.get("requiredDuringSchedulingIgnoredDuringExecution"))


def _same_resources(a: Obj, b: Obj) -> bool:
    """Whether two specs of a pod ask for the same resources: the same (or equal) containers, init
    containers and overhead. Updates usually share the sub-objects; copies compare equal."""
    for k in ("containers", "initContainers", "overhead"):
        x, y = a.get(k), b.get(k)
        if x is not y and x != y:
            return False
    return True


@dataclass(slots=True, eq=False)
class PodInfo:
    obj: Obj
    uid: str
    name: str
    namespace: str
    key: str
    labels: dict[str, str]
    priority: int
    preemption_policy: str
    requests: dict[str, int]
    nonzero_cpu: int
    nonzero_mem: int
    node_name: str
    nominated_node_name: str
    scheduler_name: str
    start_time: float | None
    deleting: bool
    gates: tuple[str, ...]
    tolerations: list[Obj]
    host_ports: list[tuple[str, str, int]]
    has_affinity: bool
    has_required_anti_affinity: bool
    restartable_init: bool
    cache: dict[str, Any] = field(default_factory=dict)
    #: ``namespace/claim`` of the pod's persistentVolumeClaim volumes (upstream ``PVCRefCounts``)
    pvc_refs: tuple[str, ...] = ()

    @classmethod
    def from_pod(cls, pod: Obj, previous: PodInfo | None = None) -> PodInfo:
        """Parse a pod. ``previous`` (the same pod's earlier PodInfo) lets unchanged containers,
        overhead and affinity skip re-parsing: updates share those sub-objects."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        namespace = meta.get("namespace") or DEFAULT_NAMESPACE
        name = meta["name"]
        start = status.get("startTime")
        if previous is not None and _same_resources(previous.spec, spec):
            requests = previous.requests
            nz_cpu, nz_mem = previous.nonzero_cpu, previous.nonzero_mem
            host_ports = previous.host_ports
            restartable = previous.restartable_init
        else:
            requests = pod_requests(pod)
            nz_cpu, nz_mem = pod_nonzero_requests(pod)
            host_ports = pod_host_ports(pod)
            restartable = has_restartable_init_container(pod)
        has_aff, has_req_anti = _has_pod_affinity(spec)
        return cls(
            obj=pod,
            uid=meta.get("uid") or f"{namespace}/{name}",
            name=name,
            namespace=namespace,
            key=f"{namespace}/{name}",
            labels=meta.get("labels") or {},
            priority=int(spec.get("priority") or 0),
            preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
            requests=requests,
            nonzero_cpu=nz_cpu,
            nonzero_mem=nz_mem,
            node_name=spec.get("nodeName") or "",
            nominated_node_name=status.get("nominatedNodeName") or "",
            scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
            start_time=parse_rfc3339(start) if start else None,
            deleting=bool(meta.get("deletionTimestamp")),
            gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
            tolerations=spec.get("tolerations") or [],
            host_ports=host_ports,
            has_affinity=has_aff,
            has_required_anti_affinity=has_req_anti,
            restartable_init=restartable,
            pvc_refs=tuple(pod_pvc_refs(pod)) if spec.get("volumes") else (),
        )

    @property
    def spec(self) -> Obj:
        return self.obj.get("spec") or {}

    @property
    def phase(self) -> str:
        return (self.obj.get("status") or {}).get("phase") or "Pending"

    def condition(self, ctype: str) -> Obj | None:
        for cond in (self.obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == ctype:
                return cond
        return None

    def preempted_by_scheduler(self) -> bool:
        """True if the pod carries DisruptionTarget=True with reason PreemptionByScheduler."""
        cond = self.condition(DISRUPTION_TARGET)
        return bool(
            cond and cond.get("status") == "True" and cond.get("reason") == PREEMPTION_BY_SCHEDULER
        )


def _index_of(pods: list[PodInfo], uid: str) -> int | None:
    for i, existing in enumerate(pods):
        if existing.uid == uid:
            return i
    return None


def _swap_remove(pods: list[PodInfo], index: int | None) -> None:
    if index is not None:
        pods[index] = pods[-1]
        pods.pop()


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    node: Obj | None
    labels: dict[str, str]
    taints: list[Obj]
    unschedulable: bool
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_mem: int = 0
    pods: list[PodInfo] = field(default_factory=list)
    pods_with_affinity: list[PodInfo] = field(default_factory=list)
    pods_with_required_anti_affinity: list[PodInfo] = field(default_factory=list)
    used_ports: list[tuple[str, str, int]] = field(default_factory=list)
    images: dict[str, int] = field(default_factory=dict)  # image name -> size in bytes
    generation: int = 0
    index: int = -1

    @classmethod
    def from_node(cls, node: Obj) -> NodeInfo:
        info = cls(name=node["metadata"]["name"], node=None, labels={}, taints=[], unschedulable=False,
                   allocatable={})
        info.set_node(node)
        return info

    def set_node(self, node: Obj) -> None:
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.node = node
        self.labels = (node.get("metadata") or {}).get("labels") or {}
        self.taints = spec.get("taints") or []
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = node_allocatable(node)
        images: dict[str, int] = {}
        for image in status.get("images") or ():
            for image_name in image.get("names") or ():
                images.setdefault(image_name, int(image.get("sizeBytes") or 0))  # first entry wins
        self.images = images
        self.generation += 1

    @property
    def allowed_pods(self) -> int:
        return self.allocatable.get(PODS, 0)

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        self._account(pod, 1)
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pod)
        self.used_ports.extend(p for p in pod.host_ports if p not in self.used_ports)  # a set, upstream
        self.generation += 1

    def remove_pod(self, pod: PodInfo) -> bool:
        """Remove by UID the way upstream's NodeInfo.RemovePod does: the last pod takes the removed
        one's place (pod order on a node decides ties between equally important victims)."""
        index = _index_of(self.pods, pod.uid)
        if index is None:
            return False
        existing = self.pods[index]
        _swap_remove(self.pods, index)
        self._account(existing, -1)
        if existing.has_affinity:
            _swap_remove(self.pods_with_affinity, _index_of(self.pods_with_affinity, pod.uid))
        if existing.has_required_anti_affinity:
            _swap_remove(self.pods_with_required_anti_affinity,
                         _index_of(self.pods_with_required_anti_affinity, pod.uid))
        if existing.host_ports:
            self.used_ports = [p for p in self.used_ports if p not in existing.host_ports]
        self.generation += 1
        return True

    def _account(self, pod: PodInfo, sign: int) -> None:
        """Add or take away the pod's requests: int64 sums that wrap as upstream's do."""
        requested = self.requested
        for resource, amount in pod.requests.items():
            requested[resource] = wrap_int64(requested.get(resource, 0) + sign * amount)
        self.nonzero_cpu = wrap_int64(self.nonzero_cpu + sign * pod.nonzero_cpu)
        self.nonzero_mem = wrap_int64(self.nonzero_mem + sign * pod.nonzero_mem)

    def clone(self) -> NodeInfo:
        return NodeInfo(
            name=self.name,
            node=self.node,
            labels=self.labels,
            taints=self.taints,
            unschedulable=self.unschedulable,
            allocatable=self.allocatable,
            requested=dict(self.requested),
            nonzero_cpu=self.nonzero_cpu,
            nonzero_mem=self.nonzero_mem,
            pods=list(self.pods),
            pods_with_affinity=list(self.pods_with_affinity),
            pods_with_required_anti_affinity=list(self.pods_with_required_anti_affinity),
            used_ports=list(self.used_ports),
            images=self.images,
            generation=self.generation,
            index=self.index,
        )


# -- FitError (upstream framework/types.go FitError.Error) -----------------------------------------
if TYPE_CHECKING:
    _StatusMap = dict[str, Status]
else:  # Status is defined above this module (in interface.py, which imports it)
    _StatusMap = dict


class NodeStatuses(_StatusMap):
    """Failed nodes' statuses by node name (upstream ``NodeToStatusMap``). Nodes that failed alike
    share one Status object: :meth:`alike` counts each once, on first use (the map is not to
    change after that)."""

    __slots__ = ("_alike",)
    _alike: list[tuple[Status, int]]

    def fill(self, names: list[str], statuses: list[Status], alike: list[tuple[Status, int]] | None) -> None:
        """Add the nodes ``names`` with their ``statuses``; ``alike``: how many of them have each
        distinct Status object, when known (kept only when the map was empty: then it is the
        map's whole count)."""
        was_empty = not self
        self.update(zip(names, statuses))
        if alike is not None and was_empty:
            self._alike = alike

    def alike(self) -> list[tuple[Status, int]]:
        """Each distinct Status object and how many nodes have it."""
        try:
            return self._alike
        except AttributeError:
            pass
        self._alike = _count_alike(list(self.values()))
        return self._alike


def _count_alike(statuses: list[Status]) -> list[tuple[Status, int]]:
    ids = list(map(id, statuses))
    by_id = dict(zip(ids, statuses))
    return [(by_id[key], n) for key, n in Counter(ids).items()]


def alike_statuses(statuses: Iterable[Status] | NodeStatuses) -> list[tuple[Status, int]]:
    """Each distinct Status object of ``statuses`` (some statuses, or a :class:`NodeStatuses`) and
    how many times it occurs."""
    if isinstance(statuses, NodeStatuses):
        return statuses.alike()
    return _count_alike(list(statuses))


def reasons_histogram(statuses: Iterable[Status] | NodeStatuses) -> list[str]:
    """``"<count> <reason>"`` strings sorted byte-wise, as upstream sorts them (``statuses``: some
    statuses, or a :class:`NodeStatuses`)."""
    counts: Counter[str] = Counter()
    for status, n in alike_statuses(statuses):
        for reason in status.reasons:
            counts[reason] += n
    return sorted((f"{n} {reason}" for reason, n in counts.items()), key=lambda s: s.encode())


def fit_error_message(
    num_all_nodes: int, pre_filter_msg: str, statuses: Iterable[Status] | NodeStatuses, post_filter_msg: str
) -> str:
    msg = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram = reasons_histogram(statuses)
        if histogram:
            msg += f" {', '.join(histogram)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}."
    return msg
