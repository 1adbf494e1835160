"""Cluster dumps as kubectl writes them, for tests of snapshot input: :class:`ClusterDump` (the
node, pod and workload builders it inherits, the policy and storage objects, and writing the whole
as one List) and :func:`small_eks_cluster`, a ready-made one.
"""

from __future__ import annotations

from pathlib import Path

from kubesched.k8s.objects import Obj
from kubesched.testkit.dumps.kubectl_list import FORMATS, write_items
from kubesched.testkit.dumps.metadata import timestamp
from kubesched.testkit.dumps.workloads import SYSTEM_CLASSES, WorkloadBuilders


class ClusterDump(WorkloadBuilders):
    """A cluster, described briefly, written out as kubectl would print it."""

    # -- policy objects -------------------------------------------------------------------------------
    def priority_class(self, name: str, value: int, *, preemption_policy: str = "PreemptLowerPriority",
                       global_default: bool = False) -> Obj:
        meta = self._meta(name, minutes_before=30000, api_version="scheduling.k8s.io/v1", kind="PriorityClass")
        pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta,
                   "preemptionPolicy": preemption_policy, "value": value}
        if global_default:
            pc["globalDefault"] = True
        self.classes.append(pc)
        return pc

    def system_classes(self) -> None:
        """The two classes every cluster has (and every dump of priorityclasses lists)."""
        for name, value in SYSTEM_CLASSES.items():
            meta = self._meta(name, minutes_before=40000, api_version="scheduling.k8s.io/v1", kind="PriorityClass")
            self.classes.append({"apiVersion": "scheduling.k8s.io/v1", "description": "Used for system critical pods "
                                 "that must run in the cluster, but can be moved to another node if necessary.",
                                 "kind": "PriorityClass", "metadata": meta, "preemptionPolicy": "PreemptLowerPriority",
                                 "value": value})

    def pdb(self, name: str, namespace: str, selector: dict[str, str], *, min_available: int | str | None = None,
            max_unavailable: int | str | None = None, allowed: int = 0, healthy: int = 0, expected: int = 0) -> Obj:
        meta = self._meta(name, namespace=namespace, minutes_before=850, api_version="policy/v1",
                          kind="PodDisruptionBudget")
        meta["generation"] = 1
        spec: Obj = {"selector": {"matchLabels": selector}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec,
               "status": {"conditions": [{"lastTransitionTime": timestamp(800), "message": "", "observedGeneration": 1,
                                          "reason": "SufficientPods" if allowed else "InsufficientPods",
                                          "status": "True" if allowed else "False", "type": "DisruptionAllowed"}],
                          "currentHealthy": healthy, "desiredHealthy": healthy - allowed,
                          "disruptionsAllowed": allowed, "expectedPods": expected, "observedGeneration": 1}}
        self.pdbs.append(pdb)
        return pdb

    # -- storage ------------------------------------------------------------------------------------
    def storage_class(self, name: str, provisioner: str = "pd.csi.storage.gke.io", *, default: bool = False,
                      binding: str = "WaitForFirstConsumer") -> Obj:
        meta = self._meta(name, minutes_before=30000, api_version="storage.k8s.io/v1", kind="StorageClass")
        if default:
            meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        sc = {"allowVolumeExpansion": True, "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
              "metadata": meta, "parameters": {"type": "pd-balanced"}, "provisioner": provisioner,
              "reclaimPolicy": "Delete", "volumeBindingMode": binding}
        self.storage.append(sc)
        return sc

    def bound_claim(self, name: str, namespace: str = "default", *, storage_class: str, zone: str,
                    node: str, size: str = "10Gi", provisioner: str = "pd.csi.storage.gke.io") -> tuple[Obj, Obj]:
        """A claim provisioned for ``node`` and its volume in ``zone``, both Bound, as the PV controller
        and the provisioner leave them."""
        cmeta = self._meta(name, namespace=namespace, minutes_before=900, kind="PersistentVolumeClaim",
                           manager="kube-controller-manager")
        volume_name = f"pvc-{cmeta['uid']}"
        cmeta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
                                "volume.beta.kubernetes.io/storage-provisioner": provisioner,
                                "volume.kubernetes.io/selected-node": node,
                                "volume.kubernetes.io/storage-provisioner": provisioner}
        cmeta["finalizers"] = ["kubernetes.io/pvc-protection"]
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": cmeta,
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                          "storageClassName": storage_class, "volumeMode": "Filesystem", "volumeName": volume_name},
                 "status": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}, "phase": "Bound"}}
        vmeta = self._meta(volume_name, minutes_before=899, kind="PersistentVolume", manager="csi-provisioner")
        vmeta["annotations"] = {"pv.kubernetes.io/provisioned-by": provisioner,
                                "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                                "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""}
        vmeta["finalizers"] = ["kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer"]
        volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": vmeta, "spec": {
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size},
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": name, "namespace": namespace,
                         "resourceVersion": cmeta["resourceVersion"], "uid": cmeta["uid"]},
            "csi": {"driver": provisioner, "fsType": "ext4",
                    "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-0-" + provisioner},
                    "volumeHandle": f"projects/p/zones/{zone}/disks/{volume_name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}},
            "persistentVolumeReclaimPolicy": "Delete", "storageClassName": storage_class, "volumeMode": "Filesystem"},
            "status": {"lastPhaseTransitionTime": timestamp(899), "phase": "Bound"}}
        self.storage.extend([volume, claim])
        return claim, volume

    # -- output ---------------------------------------------------------------------------------------
    def sort(self) -> None:
        """Each kind's objects in the order the API server lists them (and kubectl prints them): by
        namespace, then name."""
        for objects in (self.nodes, self.pods, self.pdbs, self.classes, self.quotas, self.workloads, self.storage):
            objects.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def items(self, *, with_workloads: bool = False) -> list[Obj]:
        """The List's items, in the order kubectl prints them (see :meth:`as_list`)."""
        return self.as_list(with_workloads=with_workloads)["items"]

    def write(self, path: str | Path, fmt: str | None = None, *, with_workloads: bool = True) -> Path:
        """Write the dump to ``path`` as kubectl prints it (``fmt``: yaml, json or jsonl; default:
        from the file's suffix); with the workloads (``deploy,rs,sts,ds``) unless told not to."""
        path = Path(path)
        if fmt is None:
            fmt = next((f for f, suffix in FORMATS.items() if path.suffix == suffix), "yaml")
        with path.open("w", encoding="utf-8") as out:
            write_items(self.items(with_workloads=with_workloads), out, fmt)
        return path

    def as_list(self, *, with_workloads: bool = False) -> Obj:
        """``kubectl get nodes,pods,pdb,priorityclasses,resourcequotas -A -o yaml`` (``with_workloads``: with
        ``deploy,rs,sts,ds`` appended to the command; ``sc,pv,pvc`` appended when there are storage objects)."""
        items = [*self.nodes, *self.pods, *self.pdbs, *self.classes, *self.quotas]
        if with_workloads:
            kinds = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
            items += sorted(self.workloads, key=lambda o: kinds.index(o["kind"]))
        if self.storage:  # ``sc,pv,pvc`` at the end of the command
            order = ("StorageClass", "PersistentVolume", "PersistentVolumeClaim")
            items += sorted(self.storage, key=lambda o: order.index(o["kind"]))
        return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def small_eks_cluster() -> tuple[ClusterDump, list[str]]:
    """A small EKS cluster: managed node groups ``general`` (3 nodes) and ``gpu`` (1, tainted),
    DaemonSet pods, the system PriorityClasses, a Deployment ``shop/api`` of 3 on the general nodes and
    one ``batch/etl`` pod left pending (no general node has its 3 cpu free). Returns the dump and
    the general group's node names."""
    dump = ClusterDump()
    general = [n["metadata"]["name"] for n in dump.eks_nodegroup("general", 3)]
    dump.eks_nodegroup("gpu", 1, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    dump.daemonset_pods("aws-node")
    dump.system_classes()
    dump.deployment("api", 3, general, namespace="shop", cpu="2")
    dump.deployment("etl", 1, [None], namespace="batch", cpu="3")
    return dump, general
