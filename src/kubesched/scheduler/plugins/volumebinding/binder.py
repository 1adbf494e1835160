"""Upstream's volume binder (``binder.go``) from Reserve on: what binding a pod's volumes takes on
its node (:class:`PodVolumes`), the volume bound to its claim as Reserve assumes it, and PreBind's
writes through the API and checks until the PersistentVolume controller has bound every claim."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.volumes.claims import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    is_claim_fully_bound,
    is_volume_bound_to_claim,
)
from kubesched.api.volumes.topology import volume_node_affinity_matches
from kubesched.k8s.objects import ApiError, Obj
from kubesched.scheduler.framework.interface import Handle, Status
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.volumebinding.assumecache import AssumeCache
from kubesched.scheduler.plugins.volumebinding.objects import claim_key, metadata, resource_version


@dataclass
class PodVolumes:
    """What binding the pod's volumes takes on one node."""

    static_bindings: list[tuple[Obj, Obj]] = field(default_factory=list)  # (volume, claim)
    dynamic_provisions: list[Obj] = field(default_factory=list)  # claims


def bind_volume_to_claim(volume: Obj, claim: Obj) -> Obj:
    """``GetBindVolumeToClaim``: the volume with its claimRef pointing at the claim and, when the
    binding is new, the bound-by-controller annotation; the volume itself when nothing changes."""
    meta = metadata(claim)
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    was_bound = is_volume_bound_to_claim(volume, claim)
    spec = dict(volume.get("spec") or {})
    vmeta = dict(metadata(volume))
    dirty = False
    if (not ref or ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace")
            or ref.get("uid") != meta.get("uid")):
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
                            "name": meta.get("name"), "uid": meta.get("uid"), "apiVersion": "v1",
                            "resourceVersion": meta.get("resourceVersion")}
        dirty = True
    annotations = dict(vmeta.get("annotations") or {})
    if not was_bound and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        vmeta["annotations"] = annotations
        dirty = True
    if not dirty:
        return volume
    return {**volume, "metadata": vmeta, "spec": spec}


class Binder:
    """PreBind's half: the assumed volumes and claims written through the API, then checked poll
    after poll; the assume caches are Reserve's."""

    def __init__(self, handle: Handle, volumes: AssumeCache, claims: AssumeCache) -> None:
        self.handle = handle
        self.volumes = volumes
        self.claims = claims

    def write(self, volumes: PodVolumes) -> tuple[list[tuple[Obj, Obj]], list[Obj]] | Status:
        """``bindAPIUpdate``: the volumes' claimRef, then the claims' selected node, through the API;
        what was not written is taken out of the assume cache."""
        written: list[tuple[Obj, Obj]] = []
        provisions: list[Obj] = []
        pending_bindings = list(volumes.static_bindings)
        pending_claims = list(volumes.dynamic_provisions)
        try:
            while pending_bindings:
                volume, claim = pending_bindings[0]
                written.append((self.handle.cluster.update(volume), claim))
                pending_bindings.pop(0)
            while pending_claims:
                provisions.append(self.handle.cluster.update(pending_claims[0]))
                pending_claims.pop(0)
        except ApiError as err:
            for volume, _ in pending_bindings:
                self.volumes.restore(volume)
            for claim in pending_claims:
                self.claims.restore(claim)
            return Status.error(err.message)
        return written, provisions

    def done(self, pod: PodInfo, node_name: str, bindings: list[tuple[Obj, Obj]],
                       provisions: list[Obj]) -> bool:
        """``checkBindings``, on the API objects: True when every claim is fully bound; raises
        RuntimeError when the binding cannot succeed any more."""
        cluster = self.handle.cluster
        node = cluster.get("Node", "", node_name)
        if node is None:
            raise RuntimeError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = metadata(node).get("labels") or {}
        if cluster.get("Pod", pod.namespace, pod.name) is None:
            raise RuntimeError(f'pod does not exist any more: pod "{pod.name}" not found')
        for written, claim in bindings:
            name = metadata(written)["name"]
            volume = self.volumes.api_get(None, name)
            if volume is None:
                raise RuntimeError(f'failed to check binding: could not find v1.PersistentVolume "{name}"')
            current = self.claims.api_get(metadata(claim).get("namespace"), metadata(claim)["name"])
            if current is None:
                raise RuntimeError(f'failed to check binding: could not find v1.PersistentVolumeClaim '
                                   f'"{claim_key(claim)}"')
            if resource_version(written) > resource_version(volume):
                return False
            if not volume_node_affinity_matches(volume, labels):
                raise RuntimeError(f'pv "{name}" node affinity doesn\'t match node "{node_name}": '
                                   "no matching NodeSelectorTerms")
            ref = (volume.get("spec") or {}).get("claimRef") or {}
            if not ref or not ref.get("uid"):
                raise RuntimeError(f'ClaimRef got reset for pv "{name}"')
            if not is_claim_fully_bound(current):
                return False
        for claim in provisions:
            current = self.claims.api_get(metadata(claim).get("namespace"), metadata(claim)["name"])
            if current is None:
                raise RuntimeError(f'failed to check provisioning pvc: could not find v1.PersistentVolumeClaim '
                                   f'"{claim_key(claim)}"')
            if resource_version(claim) > resource_version(current):
                return False
            annotations = metadata(current).get("annotations")
            if not annotations:
                raise RuntimeError(f'selectedNode annotation reset for PVC "{metadata(current)["name"]}"')
            if annotations.get(ANN_SELECTED_NODE) != node_name:
                raise RuntimeError(f'provisioning failed for PVC "{metadata(current)["name"]}"')
            volume_name = (current.get("spec") or {}).get("volumeName")
            if volume_name:
                volume = self.volumes.api_get(None, volume_name)
                if volume is None:
                    return False
                if not volume_node_affinity_matches(volume, labels):
                    raise RuntimeError(f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": '
                                       "no matching NodeSelectorTerms")
            if not is_claim_fully_bound(current):
                return False
        return True
