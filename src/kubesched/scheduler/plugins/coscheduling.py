"""Coscheduling: gang scheduling with PodGroups, as kubernetes-sigs/scheduler-plugins' plugin of the
same name (release v0.28, built against kube-scheduler v1.28). Opt-in: enable it in a
KubeSchedulerConfiguration (``multiPoint`` plus ``queueSort``, see docs/gang-scheduling.md).

A pod joins the PodGroup named by its label ``scheduling.x-k8s.io/pod-group`` (in its namespace).
The group (``scheduling.x-k8s.io/v1alpha1``) says how many members must run together
(``spec.minMember``), optionally what they need in all (``spec.minResources``) and how long members
may wait for each other (``spec.scheduleTimeoutSeconds``, else the plugin's
``permitWaitingTimeSeconds``, 60 by default).

- **QueueSort**: higher priority first; then the group's creation time (a pod without group: the time
  of its first attempt); then ``namespace/name`` — so a gang's members come out of the queue together.
- **PreFilter**: a group whose scheduling failed recently (``podGroupBackoffSeconds``) waits it out;
  a group with fewer pods than ``minMember`` is refused ("pre-filter pod <name> cannot find enough
  sibling pods, current pods number: <n>, minMember of group: <m>"); ``minResources`` must be
  available in the cluster, counting the group's own pods as free (checked once per schedule
  timeout).
- **Permit**: once ``minMember`` members are assigned counting this one, every waiting member is
  allowed; before, the pod waits (the first one to wait also moves its siblings to activeQ).
- **PostFilter** (after DefaultPreemption, when it found nothing): unless the group is (almost, 90%)
  complete, its waiting members are rejected ("optimistic rejection in PostFilter") so they free
  their nodes for another gang.
- **Unreserve**: when a member fails or times out, the group's waiting members are rejected too.

Not as upstream: the ``resource gap`` message lists the missing amounts in kubesched's quantity
format (scheduler-plugins prints Go's internal form of a Quantity); preemption is not gang-aware (as
in scheduler-plugins v0.28: victims are chosen pod by pod).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.quantity import format_quantity, resource_amount
from kubesched.k8s.objects import POD_GROUP_LABEL, Obj
from kubesched.k8s.timefmt import parse_rfc3339
from kubesched.scheduler.framework.interface import (
    ADD,
    PODS_TO_ACTIVATE,
    UPDATE,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    Handle,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueueSortPlugin,
    ReservePlugin,
    Status,
)
from kubesched.scheduler.framework.types import PodInfo

NAME = "Coscheduling"
DEFAULT_PERMIT_WAITING_SECONDS = 60
PERMIT_STATE_KEY = "PermitCoscheduling"


def group_name(pod: PodInfo) -> str:
    return str(pod.labels.get(POD_GROUP_LABEL) or "")


def group_members(handle: Handle, namespace: str, name: str) -> list[Obj]:
    """The pods of PodGroup ``namespace/name`` (its label), in the informer's order."""
    return [p for p in handle.list("Pod")
            if (p["metadata"].get("namespace") or "default") == namespace
            and ((p["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)) == name]


def assigned_members(handle: Handle, namespace: str, name: str, but: str = "") -> int:
    """Members bound or assumed on a node of the snapshot, waiting ones included (``but``: a uid not
    to count, the pod of this cycle, which upstream's snapshot does not hold yet)."""
    return sum(1 for info in handle.snapshot().node_infos for p in info.pods
               if p.namespace == namespace and group_name(p) == name and p.node_name and p.uid != but)


@dataclass
class _PermitState:
    activate: bool

    def clone(self) -> _PermitState:
        return self


class Coscheduling(QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin,
                   EnqueueExtensions):
    name = NAME

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        args = args or {}
        wait = args.get("permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_SECONDS)
        backoff = args.get("podGroupBackoffSeconds", 0)
        for field, value in (("permitWaitingTimeSeconds", wait), ("podGroupBackoffSeconds", backoff)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"CoschedulingArgs.{field}: must be a non-negative integer")
        self.handle = handle
        self.schedule_timeout = float(wait)
        self.backoff = float(backoff)
        self._permitted: dict[str, float] = {}  # group full name -> until when minResources were found
        self._backed_off: dict[str, float] = {}  # group full name -> until when it waits

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", ADD), ClusterEvent("PodGroup", ADD | UPDATE)]

    # -- lookups ---------------------------------------------------------------------------------
    def _group(self, pod: PodInfo) -> tuple[str, Obj | None]:
        name = group_name(pod)
        if not name:
            return "", None
        return f"{pod.namespace}/{name}", self.handle.get("PodGroup", pod.namespace, name)

    def _members(self, namespace: str, name: str) -> list[Obj]:
        return group_members(self.handle, namespace, name)

    def _assigned(self, namespace: str, name: str, but: str = "") -> int:
        return assigned_members(self.handle, namespace, name, but)

    @staticmethod
    def _min_member(group: Obj) -> int:
        return int((group.get("spec") or {}).get("minMember") or 0)

    def _wait_seconds(self, group: Obj | None) -> float:
        seconds = ((group or {}).get("spec") or {}).get("scheduleTimeoutSeconds")
        return float(seconds) if seconds else self.schedule_timeout

    # -- QueueSort -------------------------------------------------------------------------------
    def sort_key(self, pod: PodInfo, timestamp: float, initial_timestamp: float | None) -> tuple[Any, ...]:
        created = initial_timestamp if initial_timestamp is not None else timestamp
        _, group = self._group(pod)
        if group is not None and (group.get("metadata") or {}).get("creationTimestamp"):
            created = parse_rfc3339(group["metadata"]["creationTimestamp"])
        return (-pod.priority, created, pod.key)

    # -- PreFilter -------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        full_name, group = self._group(pod)
        if group is None:
            return None, None
        now = self.handle.now()
        if self._backed_off.get(full_name, -1.0) > now:
            return None, Status.unresolvable(f"podGroup {full_name} failed recently")
        members = self._members(pod.namespace, group_name(pod))
        min_member = self._min_member(group)
        if len(members) < min_member:
            return None, Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                f"{len(members)}, minMember of group: {min_member}")
        min_resources = (group.get("spec") or {}).get("minResources")
        if not min_resources or self._permitted.get(full_name, -1.0) > now:
            return None, None
        gap = self._resource_gap(full_name, min_resources, min_member)
        if gap:
            return None, Status.unresolvable("resource gap: map[" + " ".join(
                f"{name}:{format_quantity(name, amount)}" for name, amount in sorted(gap.items())) + "]")
        self._permitted[full_name] = now + self.schedule_timeout
        return None, None

    def _resource_gap(self, full_name: str, min_resources: dict[str, Any], min_member: int) -> dict[str, int]:
        """``CheckClusterResource``: what is still missing after taking each node's free resources
        (its pods of the group counted as free) in node order."""
        wanted = {name: resource_amount(name, q) for name, q in min_resources.items()}
        wanted["pods"] = min_member
        for info in self.handle.snapshot().node_infos:
            if info.node is None:
                continue
            used: dict[str, int] = {}
            pods = 0
            for p in info.pods:
                if f"{p.namespace}/{group_name(p)}" == full_name:
                    continue
                pods += 1
                for name, amount in p.requests.items():
                    used[name] = used.get(name, 0) + amount
            for name in list(wanted):
                free = (info.allowed_pods - pods) if name == "pods" else info.allocatable.get(name, 0) - used.get(name, 0)
                left = wanted[name] - free
                if left <= 0:
                    del wanted[name]
                else:
                    wanted[name] = left
            if not wanted:
                return {}
        return wanted

    # -- PostFilter ------------------------------------------------------------------------------
    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: dict[str, Status]) -> tuple[PostFilterResult | None, Status]:
        full_name, group = self._group(pod)
        if group is None:
            return None, Status.unschedulable("can not find pod group")
        name = group_name(pod)
        min_member = self._min_member(group)
        assigned = self._assigned(pod.namespace, name)
        if assigned >= min_member:
            return None, Status(Code.UNSCHEDULABLE)
        missing = (min_member - assigned) / min_member if min_member else 0.0
        if missing <= 0.1:
            return None, Status(Code.UNSCHEDULABLE)
        for waiting in self.handle.waiting_pods():
            if waiting.pod.namespace == pod.namespace and group_name(waiting.pod) == name:
                waiting.reject(NAME, "optimistic rejection in PostFilter")
        if self.backoff and len(self._members(pod.namespace, name)) >= min_member:
            self._backed_off[full_name] = self.handle.now() + self.backoff
        self._permitted.pop(full_name, None)
        return None, Status.unschedulable(
            f"PodGroup {full_name} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter")

    # -- Permit ----------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        full_name, group = self._group(pod)
        if not full_name:
            return None, 0.0
        if group is None:
            return Status.unschedulable("PodGroup not found"), 0.0
        name = group_name(pod)
        assigned = self._assigned(pod.namespace, name, but=pod.uid)
        if assigned + 1 >= self._min_member(group):
            for waiting in self.handle.waiting_pods():
                if f"{waiting.pod.namespace}/{group_name(waiting.pod)}" == full_name:
                    waiting.allow(NAME)
            return None, 0.0
        if assigned == 0:
            state.write(PERMIT_STATE_KEY, _PermitState(True))
        self._activate_siblings(state, pod, name)
        return Status(Code.WAIT), self._wait_seconds(group)

    def _activate_siblings(self, state: CycleState, pod: PodInfo, name: str) -> None:
        permit: _PermitState | None = state.read(PERMIT_STATE_KEY)
        to_activate: dict[str, PodInfo] | None = state.read(PODS_TO_ACTIVATE)
        if permit is None or not permit.activate or to_activate is None:
            return
        for sibling in self._members(pod.namespace, name):
            info = PodInfo.from_pod(sibling)
            if info.uid != pod.uid:
                to_activate[info.key] = info

    # -- Reserve ---------------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        full_name, group = self._group(pod)
        if group is None:
            return
        name = group_name(pod)
        for waiting in self.handle.waiting_pods():
            if waiting.pod.namespace == pod.namespace and group_name(waiting.pod) == name:
                waiting.reject(NAME, "rejection in Unreserve")
        self._permitted.pop(full_name, None)
