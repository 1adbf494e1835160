"""NodeVolumeLimits: CSI attach limits (upstream ``plugins/nodevolumelimits/csi.go``, v1.28).

A node's CSINode object says, per CSI driver, how many volumes may be attached
(``spec.drivers[].allocatable.count``; an ``attachable-volumes-csi-<driver>`` amount in the node's
allocatable counts too, the CSINode winning). The pod's claims are counted per driver — a bound
claim by its volume's CSI source, an unbound one by its class's provisioner — as unique volume
handles, leaving out those already attached for pods on the node. More than the limit →
Unschedulable "node(s) exceed max volume count". A claim of the pod that does not exist fails the
attempt with an error; volumes of other kinds, and in-tree cloud volumes (CSI migration), are not
counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.volumes.claims import claim_class, pod_claims
from kubesched.api.volumes.topology import ATTACHABLE_VOLUMES_PREFIX, csi_attach_limit_key
from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.capabilities import FilterVector
from kubesched.scheduler.framework.interface import (
    ADD,
    DELETE,
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
from kubesched.scheduler.framework.views import NodeTableSnapshot

NAME = "NodeVolumeLimits"
ERR_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
#: stands for upstream's random prefix of the handles of volumes not provisioned yet
_UNPROVISIONED = "unprovisioned"


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, FilterVector, EnqueueExtensions):
    name = NAME

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("CSINode", ADD), ClusterEvent("Pod", DELETE)]

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        for volume in pod.spec.get("volumes") or ():
            if volume.get("persistentVolumeClaim") is not None or volume.get("ephemeral") is not None:
                return None, None
        return None, Status.skip()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        csi_node = self.handle.get("CSINode", "", node.name)
        new: dict[str, str] = {}
        try:
            self._attachable(pod, new, new_pod=True)
        except RuntimeError as err:
            return Status.error(str(err))
        if not new:
            return None
        limits = _volume_limits(node, csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for other in node.pods:
            self._attachable(other, attached, new_pod=False)
        attached_count: dict[str, int] = {}
        for handle_name, key in attached.items():
            new.pop(handle_name, None)
            attached_count[key] = attached_count.get(key, 0) + 1
        new_count: dict[str, int] = {}
        for key in new.values():
            new_count[key] = new_count.get(key, 0) + 1
        for key, count in new_count.items():
            limit = limits.get(key)
            if limit is not None and attached_count.get(key, 0) + count > limit:
                return Status.unschedulable(ERR_MAX_VOLUME_COUNT)
        return None

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        """Only nodes with an attach limit for a driver of the pod's volumes can refuse it (a
        CSINode count, or an ``attachable-volumes-*`` allocatable amount): those are checked one by
        one, every other node passes."""
        if not pod.spec.get("volumes"):
            return None
        new: dict[str, str] = {}
        try:
            self._attachable(pod, new, new_pod=True)
        except RuntimeError:
            return None  # the per-node Filter reports the error
        table = snapshot.table
        mask = np.ones(table.n, dtype=bool)
        if not new:
            return mask
        if any(name.startswith(ATTACHABLE_VOLUMES_PREFIX) for name in table.row):
            return None
        keys = set(new.values())
        nodes = snapshot.node_infos
        for csi_node in self.handle.list("CSINode"):
            limited = any(csi_attach_limit_key(str(d.get("name") or "")) in keys
                          and (d.get("allocatable") or {}).get("count") is not None
                          for d in (csi_node.get("spec") or {}).get("drivers") or ())
            i = table.node_index(str((csi_node.get("metadata") or {}).get("name")))
            if limited and i is not None:
                mask[i] = self.filter(state, pod, nodes[i]) is None
        return mask

    def _attachable(self, pod: PodInfo, out: dict[str, str], *, new_pod: bool) -> None:
        """``filterAttachableVolumes``: unique volume name -> attach limit key, per claim."""
        for name, _ in pod_claims(pod.obj):
            if not name:
                raise RuntimeError("PersistentVolumeClaim had no name")
            claim = self.handle.get("PersistentVolumeClaim", pod.namespace, name)
            if claim is None:
                if new_pod:
                    raise RuntimeError(f'looking up PVC {pod.namespace}/{name}: persistentvolumeclaim "{name}" '
                                       "not found")
                continue
            driver, volume_handle = self._driver_of(claim)
            if driver and volume_handle:
                out[f"{driver}/{volume_handle}"] = csi_attach_limit_key(driver)

    def _driver_of(self, claim: Obj) -> tuple[str, str]:
        cluster = self.handle.cluster
        volume_name = (claim.get("spec") or {}).get("volumeName") or ""
        pv = cluster.get("PersistentVolume", "", volume_name) if volume_name else None
        if pv is not None:
            csi = (pv.get("spec") or {}).get("csi")
            if csi is None:
                return "", ""
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        cls_name = claim_class(claim)
        storage_class = cluster.get("StorageClass", "", cls_name) if cls_name else None
        if storage_class is None:
            return "", ""
        meta = claim.get("metadata") or {}
        return str(storage_class.get("provisioner") or ""), f"{_UNPROVISIONED}-{meta.get('namespace')}/{meta.get('name')}"


def _volume_limits(node: NodeInfo, csi_node: Obj | None) -> dict[str, int]:
    limits = {k: v for k, v in node.allocatable.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)}
    for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[csi_attach_limit_key(str(driver.get("name") or ""))] = int(count)
    return limits
