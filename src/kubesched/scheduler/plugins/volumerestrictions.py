"""VolumeRestrictions: volumes that cannot be shared (upstream ``plugins/volumerestrictions``, v1.28
with ReadWriteOncePod on, its default there).

- **Disk conflicts**: a GCE persistent disk, AWS EBS volume, iSCSI target or Ceph RBD image that a
  pod on the node already mounts (unless both mount a GCE PD / iSCSI / RBD read-only) →
  Unschedulable "node(s) had no available disk".
- **ReadWriteOncePod**: a claim with that access mode used by any pod already bound or assumed
  anywhere → Unschedulable on every node "node has pod using PersistentVolumeClaim with the same name
  and ReadWriteOncePod access mode"; preemption may free it by removing that pod (AddPod/RemovePod
  keep the count). A claim that does not exist → UnschedulableAndUnresolvable
  ``persistentvolumeclaim "<name>" not found``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.volumes.claims import pod_claims
from kubesched.scheduler.framework.interface import (
    ADD,
    DELETE,
    UPDATE,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo

NAME = "VolumeRestrictions"
STATE_KEY = "PreFilter" + NAME
ERR_DISK_CONFLICT = "node(s) had no available disk"
ERR_RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
_CONFLICTING_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def _volume_conflict(volume: dict[str, Any], pod: PodInfo) -> bool:
    """``isVolumeConflict``: does ``volume`` clash with a volume of ``pod``?"""
    for existing in pod.spec.get("volumes") or ():
        gce, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
        if gce is not None and other is not None and gce.get("pdName") == other.get("pdName") \
                and not (gce.get("readOnly") and other.get("readOnly")):
            return True
        ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
        if ebs is not None and other is not None and ebs.get("volumeID") == other.get("volumeID"):
            return True
        iscsi, other = volume.get("iscsi"), existing.get("iscsi")
        if iscsi is not None and other is not None and iscsi.get("iqn") == other.get("iqn") \
                and not (iscsi.get("readOnly") and other.get("readOnly")):
            return True
        rbd, other = volume.get("rbd"), existing.get("rbd")
        if rbd is not None and other is not None and set(rbd.get("monitors") or ()) & set(other.get("monitors") or ()) \
                and rbd.get("pool", "rbd") == other.get("pool", "rbd") and rbd.get("image") == other.get("image") \
                and not (rbd.get("readOnly") and other.get("readOnly")):
            return True
    return False


def _needs_check(volume: dict[str, Any]) -> bool:
    return any(volume.get(source) is not None for source in _CONFLICTING_SOURCES)


@dataclass
class _State:
    rwop_claims: frozenset[str]  # names (in the pod's namespace)
    conflicts: int

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicts)

    def update_with(self, pod: PodInfo, sign: int) -> None:
        for name, ephemeral in pod_claims(pod.obj):
            if not ephemeral and name in self.rwop_claims:
                self.conflicts += sign


class VolumeRestrictions(PreFilterPlugin, PreFilterExtensions, FilterPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", DELETE), ClusterEvent("Node", ADD),
                ClusterEvent("PersistentVolumeClaim", ADD | UPDATE)]

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(_needs_check(v) for v in pod.spec.get("volumes") or ())
        rwop: set[str] = set()
        for name, ephemeral in pod_claims(pod.obj):
            if ephemeral:
                continue
            claim = self.handle.get("PersistentVolumeClaim", pod.namespace, name)
            if claim is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            if "ReadWriteOncePod" in ((claim.get("spec") or {}).get("accessModes") or ()):
                rwop.add(name)
        snapshot = self.handle.snapshot()
        conflicts = sum(1 for name in rwop if snapshot.is_pvc_used(f"{pod.namespace}/{name}"))
        if not needs_check and conflicts == 0:
            return None, Status.skip()
        state.write(STATE_KEY, _State(frozenset(rwop), conflicts))
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            return Status.error(f'cannot read "{STATE_KEY}" from cycleState')
        data.update_with(to_add, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            return Status.error(f'cannot read "{STATE_KEY}" from cycleState')
        data.update_with(to_remove, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        for volume in pod.spec.get("volumes") or ():
            if _needs_check(volume) and any(_volume_conflict(volume, other) for other in node.pods):
                return Status.unschedulable(ERR_DISK_CONFLICT)
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            return Status.error(f'cannot read "{STATE_KEY}" from cycleState')
        if data.conflicts > 0:
            return Status.unschedulable(ERR_RWOP_CONFLICT)
        return None
