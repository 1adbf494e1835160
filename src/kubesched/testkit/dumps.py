"""Cluster dumps as kubectl writes them, for tests of snapshot input.

``kubectl get nodes,pods,pdb,priorityclasses,resourcequotas -A -o yaml`` prints one ``v1 List`` whose
items come in the order of the command's arguments (all nodes, then all pods, ...), each item with
what the API server stored: ``uid``, ``resourceVersion``, ``creationTimestamp``, ``managedFields``,
the fields admission and defaulting added (pod ``priority``, default tolerations, the service account
token volume, ``dnsPolicy``, ...), ``ownerReferences`` and ``status``. :class:`ClusterDump` builds such
dumps from a short description of the cluster: nodes, Deployments (with their ReplicaSet and pods),
DaemonSets, bare pods, PDBs and classes, placed and timestamped as a real cluster would show them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]

#: when the dump is "taken" (every timestamp is before it)
TAKEN_AT = datetime(2026, 11, 20, 9, 30, 0, tzinfo=UTC)
SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


def _ts(minutes_before: float) -> str:
    return (TAKEN_AT - timedelta(minutes=minutes_before)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(*parts: str) -> str:
    h = hashlib.sha1("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _hash(*parts: str) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    h = int(hashlib.sha1("/".join(parts).encode()).hexdigest(), 16)
    out = ""
    for _ in range(10):
        h, r = divmod(h, len(alphabet))
        out += alphabet[r]
    return out


def _managed(manager: str, operation: str, minutes_before: float, api_version: str = "v1") -> list[Obj]:
    return [{"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}},
             "manager": manager, "operation": operation, "time": _ts(minutes_before)}]


@dataclass
class ClusterDump:
    """A cluster, described briefly, written out as kubectl would print it."""

    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    quotas: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)  # deploy, rs, sts, ds in kubectl's order
    storage: list[Obj] = field(default_factory=list)  # sc, pv, pvc (appended to the command when present)
    _rv: int = 1000

    def _meta(self, name: str, *, namespace: str | None = None, minutes_before: float = 600,
              labels: dict[str, str] | None = None, manager: str = "kubectl-client-side-apply",
              api_version: str = "v1", kind: str = "") -> Obj:
        self._rv += 7
        meta: Obj = {"creationTimestamp": _ts(minutes_before)}
        if labels:
            meta["labels"] = dict(labels)
        meta["managedFields"] = _managed(manager, "Update", minutes_before, api_version)
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        meta["resourceVersion"] = str(self._rv)
        meta["uid"] = _uid(kind, namespace or "", name)
        return meta

    # -- nodes -------------------------------------------------------------------------------------
    def node(self, name: str, cpu: str = "4", memory: str = "16Gi", zone: str = "zone-a", *,
             unschedulable: bool = False, taints: list[Obj] | None = None) -> Obj:
        labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "node.kubernetes.io/instance-type": "e2-standard-4", "topology.kubernetes.io/region": "region-1",
                  "topology.kubernetes.io/zone": zone}
        meta = self._meta(name, minutes_before=20000, labels=labels, manager="kubelet", kind="Node")
        meta["annotations"] = {"node.alpha.kubernetes.io/ttl": "0",
                               "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
        spec: Obj = {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"], "providerID": f"gce://p/{zone}/{name}"}
        all_taints = list(taints or [])
        if unschedulable:
            spec["unschedulable"] = True
            all_taints.append({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable",
                               "timeAdded": _ts(30)})
        if all_taints:
            spec["taints"] = all_taints
        ready = {"lastHeartbeatTime": _ts(1), "lastTransitionTime": _ts(20000), "message": "kubelet is posting ready status",
                 "reason": "KubeletReady", "status": "True", "type": "Ready"}
        node = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": {
            "addresses": [{"address": "10.0.0.2", "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": {"cpu": cpu, "ephemeral-storage": "47060071478", "hugepages-2Mi": "0",
                            "memory": memory, "pods": "110"},
            "capacity": {"cpu": cpu, "ephemeral-storage": "98831908Ki", "hugepages-2Mi": "0",
                         "memory": memory, "pods": "110"},
            "conditions": [ready],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": ["registry.k8s.io/pause@sha256:3ec98b8452dc8ae265a6917dfb81587ac78849e520d5dbba6de524851d20eca6",
                                  "registry.k8s.io/pause:3.9"], "sizeBytes": 321520}],
            "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.2",
                         "kernelVersion": "6.1.0", "kubeProxyVersion": "v1.28.7", "kubeletVersion": "v1.28.7",
                         "machineID": "m", "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12",
                         "bootID": "b", "systemUUID": "s"}}}
        self.nodes.append(node)
        return node

    # -- pods ----------------------------------------------------------------------------------------
    def pod(self, name: str, namespace: str = "default", *, node: str | None, cpu: str = "100m",
            memory: str = "128Mi", labels: dict[str, str] | None = None, owner: Obj | None = None,
            priority_class: str | None = None, priority: int = 0, minutes_before: float = 300,
            phase: str | None = None, spec_extra: Obj | None = None, uid: str | None = None,
            preemption_policy: str = "PreemptLowerPriority") -> Obj:
        """A pod; ``node=None`` for a pending one. ``owner``: the controlling object (its kind, name, uid)."""
        meta = self._meta(name, namespace=namespace, minutes_before=minutes_before, labels=labels,
                          manager="kube-controller-manager" if owner else "kubectl-create", kind="Pod")
        if uid is not None:
            meta["uid"] = uid
        if owner is not None:
            meta["generateName"] = owner["metadata"]["name"] + "-"
            meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "blockOwnerDeletion": True,
                                        "controller": True, "kind": owner["kind"],
                                        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
        token = f"kube-api-access-{_hash(name)[:5]}"
        spec: Obj = {
            "containers": [{"image": "registry.k8s.io/pause:3.9", "imagePullPolicy": "IfNotPresent", "name": "app",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                              "name": token, "readOnly": True}]}],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
            "preemptionPolicy": preemption_policy, "priority": priority,
            "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {},
            "serviceAccount": "default", "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace"}]}}]}}],
        }
        if priority_class:
            spec["priorityClassName"] = priority_class
        if node:
            spec["nodeName"] = node
        for key, value in (spec_extra or {}).items():
            spec[key] = value
        created = _ts(minutes_before)
        if node:
            started = _ts(minutes_before - 0.1)
            status: Obj = {
                "conditions": [
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "Initialized"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "Ready"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "ContainersReady"},
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "PodScheduled"}],
                "containerStatuses": [{"containerID": "containerd://" + _hash(name, "c") * 6, "image": "registry.k8s.io/pause:3.9",
                                       "imageID": "registry.k8s.io/pause@sha256:3ec9", "lastState": {}, "name": "app",
                                       "ready": True, "restartCount": 0, "started": True,
                                       "state": {"running": {"startedAt": started}}}],
                "hostIP": "10.0.0.2", "phase": phase or "Running", "podIP": "10.244.1.7",
                "podIPs": [{"ip": "10.244.1.7"}], "qosClass": "Burstable", "startTime": created}
        else:
            status = {"conditions": [{"lastProbeTime": None, "lastTransitionTime": created,
                                      "message": "0/3 nodes are available: 3 Insufficient cpu.",
                                      "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}],
                      "phase": phase or "Pending", "qosClass": "Burstable"}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
        self.pods.append(pod)
        return pod

    def deployment(self, name: str, replicas: int, nodes: list[str | None], namespace: str = "default", *,
                   cpu: str = "100m", memory: str = "128Mi", priority_class: str | None = None, priority: int = 0,
                   include_workloads: bool = True, template_extra: Obj | None = None,
                   preemption_policy: str = "PreemptLowerPriority") -> tuple[Obj, Obj, list[Obj]]:
        """A Deployment, its current ReplicaSet and one pod per entry of ``nodes`` (None: pending)."""
        labels = {"app": name}
        template_spec: Obj = {
            "containers": [{"image": "registry.k8s.io/pause:3.9", "imagePullPolicy": "IfNotPresent", "name": "app",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "terminationGracePeriodSeconds": 30}
        if priority_class:
            template_spec["priorityClassName"] = priority_class
        template_spec.update(template_extra or {})
        dep_meta = self._meta(name, namespace=namespace, minutes_before=900, labels=labels,
                              api_version="apps/v1", kind="Deployment")
        dep_meta["annotations"] = {"deployment.kubernetes.io/revision": "1"}
        dep_meta["generation"] = 1
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dep_meta, "spec": {
            "progressDeadlineSeconds": 600, "replicas": replicas, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec}},
            "status": {"availableReplicas": replicas, "observedGeneration": 1, "readyReplicas": replicas,
                       "replicas": replicas, "updatedReplicas": replicas}}
        h = _hash(namespace, name)
        rs_labels = {**labels, "pod-template-hash": h}
        rs_meta = self._meta(f"{name}-{h}", namespace=namespace, minutes_before=900, labels=rs_labels,
                             manager="kube-controller-manager", api_version="apps/v1", kind="ReplicaSet")
        rs_meta["annotations"] = {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                  "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                                  "deployment.kubernetes.io/revision": "1"}
        rs_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                       "kind": "Deployment", "name": name, "uid": dep_meta["uid"]}]
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": rs_meta, "spec": {
            "replicas": replicas, "selector": {"matchLabels": rs_labels},
            "template": {"metadata": {"creationTimestamp": None, "labels": rs_labels}, "spec": template_spec}},
            "status": {"availableReplicas": replicas, "fullyLabeledReplicas": replicas, "observedGeneration": 1,
                       "readyReplicas": replicas, "replicas": replicas}}
        pods = []
        for i, node in enumerate(nodes):
            pod_name = f"{name}-{h}-{_hash(name, str(i))[:5]}"
            extra = {k: v for k, v in template_spec.items() if k not in ("containers", "priorityClassName")}
            pods.append(self.pod(pod_name, namespace, node=node, cpu=cpu, memory=memory, labels=rs_labels, owner=rs,
                                 priority_class=priority_class, priority=priority, minutes_before=800 - i,
                                 spec_extra=extra, preemption_policy=preemption_policy))
        if include_workloads:
            self.workloads.extend([deployment, rs])
        return deployment, rs, pods

    def daemonset_pods(self, name: str, namespace: str = "kube-system", *, cpu: str = "100m",
                       memory: str = "64Mi") -> Obj:
        """A DaemonSet with one running pod per node (node-affinity pinned, as its controller writes it)."""
        labels = {"k8s-app": name}
        meta = self._meta(name, namespace=namespace, minutes_before=20000, labels=labels,
                          api_version="apps/v1", kind="DaemonSet")
        template_spec: Obj = {
            "containers": [{"image": "registry.k8s.io/pause:3.9", "imagePullPolicy": "IfNotPresent", "name": "agent",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "priorityClassName": "system-node-critical", "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"operator": "Exists"}]}
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": {
            "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec},
            "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"}},
            "status": {"currentNumberScheduled": len(self.nodes), "desiredNumberScheduled": len(self.nodes),
                       "numberAvailable": len(self.nodes), "numberMisscheduled": 0, "numberReady": len(self.nodes),
                       "observedGeneration": 1, "updatedNumberScheduled": len(self.nodes)}}
        for node in self.nodes:
            node_name = node["metadata"]["name"]
            affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
            self.pod(f"{name}-{_hash(name, node_name)[:5]}", namespace, node=node_name, cpu=cpu, memory=memory,
                     labels={**labels, "controller-revision-hash": "6d4b7c", "pod-template-generation": "1"},
                     owner=ds, priority_class="system-node-critical", priority=SYSTEM_CLASSES["system-node-critical"],
                     minutes_before=19000, spec_extra={"affinity": affinity, "tolerations": [{"operator": "Exists"}]})
        self.workloads.append(ds)
        return ds

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
               "status": {"conditions": [{"lastTransitionTime": _ts(800), "message": "", "observedGeneration": 1,
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
            "status": {"lastPhaseTransitionTime": _ts(899), "phase": "Bound"}}
        self.storage.extend([volume, claim])
        return claim, volume

    # -- output ---------------------------------------------------------------------------------------
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
