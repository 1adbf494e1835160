"""VolumeZone: a pod's bound volumes carry zone and region labels; it may only run on nodes in
those zones (upstream ``plugins/volumezone``, v1.28).

For each claim of the pod that is bound, the volume's ``topology.kubernetes.io/zone`` and
``/region`` labels (and their ``failure-domain.beta`` forms; ``a__b`` names several zones) must
match the node's — on nodes that have any of these labels at all → UnschedulableAndUnresolvable
"node(s) had no available volume zone". Unbound claims of ``WaitForFirstConsumer`` classes are left to
VolumeBinding; other unbound claims, a missing claim, class or volume are UnschedulableAndUnresolvable
with upstream's texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.volumes.claims import WAIT_FOR_FIRST_CONSUMER, claim_class, class_binding_mode, pod_claims
from kubesched.api.volumes.topology import ZONE_LABELS, label_zones
from kubesched.scheduler.framework.capabilities import PodIndependentFilter
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo

NAME = "VolumeZone"
STATE_KEY = "PreFilter" + NAME
ERR_CONFLICT = "node(s) had no available volume zone"


@dataclass(frozen=True)
class _Topology:
    volume: str
    key: str
    values: frozenset[str]


@dataclass
class _State:
    topologies: list[_Topology]

    def clone(self) -> _State:
        return self


class VolumeZone(PreFilterPlugin, FilterPlugin, PodIndependentFilter, EnqueueExtensions):
    name = NAME
    #: Filter reads the node's labels and the volumes, never the pods on the node
    depends_on_pods = False

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("StorageClass", ADD), ClusterEvent("Node", ADD | UPDATE_NODE_LABEL),
                ClusterEvent("PersistentVolumeClaim", ADD), ClusterEvent("PersistentVolume", ADD | UPDATE)]

    def _topologies(self, pod: PodInfo) -> tuple[list[_Topology], Status | None]:
        cluster = self.handle.cluster
        out: list[_Topology] = []
        for name, ephemeral in pod_claims(pod.obj):
            if ephemeral:
                continue
            if not name:
                return [], Status.unresolvable("PersistentVolumeClaim had no name")
            claim = cluster.get("PersistentVolumeClaim", pod.namespace, name)
            if claim is None:
                return [], Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            volume_name = (claim.get("spec") or {}).get("volumeName") or ""
            if not volume_name:
                cls_name = claim_class(claim)
                if not cls_name:
                    return [], Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = cluster.get("StorageClass", "", cls_name)
                if storage_class is None:
                    return [], Status.unresolvable(f'storageclass.storage.k8s.io "{cls_name}" not found')
                if class_binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], Status.unresolvable("PersistentVolume had no name")
            pv = cluster.get("PersistentVolume", "", volume_name)
            if pv is None:
                return [], Status.unresolvable(f'persistentvolume "{volume_name}" not found')
            labels = (pv.get("metadata") or {}).get("labels") or {}
            for key in ZONE_LABELS:
                if key in labels:
                    zones = label_zones(str(labels[key]))
                    if zones is not None:
                        out.append(_Topology(volume_name, key, frozenset(zones)))
        return out, None

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(STATE_KEY, _State(topologies))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            topologies, status = self._topologies(pod)
            if status is not None:
                return status
        else:
            topologies = data.topologies
        labels = node.labels
        if not any(key in labels for key in ZONE_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None or value not in topology.values:
                return Status.unresolvable(ERR_CONFLICT)
        return None
