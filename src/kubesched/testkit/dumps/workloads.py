"""The pods of a dump and the workloads that own them: bare pods (with what admission adds: the
default tolerations, the service account token volume, priority), Deployments with their current
ReplicaSet, StatefulSets and DaemonSets, each pod named, labelled, placed and given the status its
controller and kubelet (or, when pending, kube-scheduler: :func:`fit_message`) would write.
"""

from __future__ import annotations

import hashlib

from kubesched.k8s.objects import Obj
from kubesched.testkit.dumps.metadata import fields_v1, managed_entry, name_hash, timestamp
from kubesched.testkit.dumps.nodes import NodeBuilders

#: the two PriorityClasses every cluster has, with their values
SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
#: what admission (DefaultTolerationSeconds) adds to a pod that does not tolerate these taints already
DEFAULT_TOLERATIONS: list[Obj] = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]
#: what the DaemonSet controller adds to its pods' tolerations
DAEMONSET_TOLERATIONS: list[Obj] = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]


def _suffix(taken: set[str], *parts: str) -> str:
    """The 5-character name suffix a controller picks for ``parts``, picked again (as the controller
    retries a name that exists) until it is not in ``taken``; it is added to ``taken``."""
    suffix, attempt = name_hash(*parts)[:5], 0
    while suffix in taken:
        attempt += 1
        suffix = name_hash(*parts, str(attempt))[:5]
    taken.add(suffix)
    return suffix


def fit_message(total: int, reasons: dict[str, int], preemption: dict[str, int] | str | None) -> str:
    """kube-scheduler's message on a pod no node takes (upstream ``FitError.Error``): its reasons
    counted and sorted as it sorts them, then what its PostFilter said: ``preemption``, the reasons
    counted for the dry runs or the whole text after ``preemption: ``; None for a scheduler that runs
    no PostFilter plugin (DefaultPreemption disabled), whose messages have no ``preemption:`` clause."""
    def counted(found: dict[str, int]) -> str:
        return ", ".join(sorted(f"{n} {reason}" for reason, n in found.items() if n))
    message = f"0/{total} nodes are available: {counted(reasons)}."
    if preemption is None:
        return message
    tail = preemption if isinstance(preemption, str) else f"0/{total} nodes are available: {counted(preemption)}."
    return f"{message} preemption: {tail}"


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    return any((t.get("key") == taint["key"] or (not t.get("key") and t.get("operator") == "Exists"))
               and t.get("effect") in (None, "", taint["effect"]) for t in tolerations)


def with_tolerations(tolerations: list[Obj], added: list[Obj]) -> list[Obj]:
    """``tolerations`` and those of ``added`` whose taints they do not tolerate yet, as admission
    and the DaemonSet controller add theirs."""
    return [*tolerations, *(t for t in added if not _tolerates(tolerations, t))]


def _qos(resources: Obj) -> str:
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    if not requests and not limits:
        return "BestEffort"
    if all(limits.get(r) is not None and requests.get(r, limits[r]) == limits[r] for r in ("cpu", "memory")):
        return "Guaranteed"
    return "Burstable"


class WorkloadBuilders(NodeBuilders):
    """The pod and workload builders of :class:`~kubesched.testkit.dumps.cluster.ClusterDump`
    (a DaemonSet has a pod on every node built before it)."""

    def pod(self, name: str, namespace: str = "default", *, node: str | None, cpu: str = "100m",
            memory: str = "128Mi", labels: dict[str, str] | None = None, owner: Obj | None = None,
            priority_class: str | None = None, priority: int = 0, minutes_before: float = 300,
            phase: str | None = None, spec_extra: Obj | None = None, uid: str | None = None,
            preemption_policy: str = "PreemptLowerPriority", resources: Obj | None = None,
            container_extra: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
            message: str | None = None) -> Obj:
        """A pod; ``node=None`` for a pending one (``message``: kube-scheduler's on its PodScheduled
        condition). ``owner``: the controlling object (its kind, name, uid). ``resources``: the
        container's (default: requests of ``cpu`` and ``memory``); ``container_extra``: more container
        fields (ports, probes, ...). Tolerations in ``spec_extra`` get the default ones added."""
        meta = self._meta(name, namespace=namespace, minutes_before=minutes_before, labels=labels,
                          manager="kube-controller-manager" if owner else "kubectl-create", kind="Pod")
        if uid is not None:
            meta["uid"] = uid
        if owner is not None:
            if owner["kind"] != "StatefulSet":  # a StatefulSet names its pods itself
                meta["generateName"] = owner["metadata"]["name"] + "-"
            meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "blockOwnerDeletion": True,
                                        "controller": True, "kind": owner["kind"],
                                        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
        token = f"kube-api-access-{name_hash(namespace, name)[:5]}"
        container: Obj = {"image": image, "imagePullPolicy": "IfNotPresent", "name": "app",
                          "resources": resources if resources is not None else {"requests": {"cpu": cpu, "memory": memory}},
                          "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                          **(container_extra or {})}
        sent: Obj = {"containers": [dict(sorted(container.items()))],
                     "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "restartPolicy": "Always",
                     "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30}
        if priority_class:
            sent["priorityClassName"] = priority_class
        sent.update(spec_extra or {})
        creator_fields = fields_v1({"metadata": {k: meta[k] for k in ("generateName", "labels", "ownerReferences")
                                                 if k in meta}, "spec": sent})
        container["volumeMounts"] = [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                      "name": token, "readOnly": True}]
        spec: Obj = {
            **sent,
            "containers": [container],
            "preemptionPolicy": preemption_policy, "priority": priority,
            "serviceAccount": "default", "serviceAccountName": "default",
            "tolerations": with_tolerations(list(sent.get("tolerations") or []), DEFAULT_TOLERATIONS),
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace"}]}}]}}],
        }
        spec.update({k: v for k, v in (spec_extra or {}).items() if k != "tolerations"})
        if node:
            spec["nodeName"] = node
        created = timestamp(minutes_before)
        qos = _qos(container["resources"])
        if node:
            started = timestamp(minutes_before - 0.1)
            host_ip, pod_ip = self._addresses(node)
            image_id = image.rsplit(":", 1)[0] + "@sha256:" + hashlib.sha256(image.encode()).hexdigest()
            status: Obj = {
                "conditions": [
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "Initialized"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "Ready"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "ContainersReady"},
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "PodScheduled"}],
                "containerStatuses": [{"containerID": "containerd://" + name_hash(name, "c") * 6, "image": image,
                                       "imageID": image_id, "lastState": {}, "name": container["name"],
                                       "ready": True, "restartCount": 0, "started": True,
                                       "state": {"running": {"startedAt": started}}}],
                "hostIP": host_ip, "phase": phase or "Running", "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}], "qosClass": qos, "startTime": created}
            status_entry = managed_entry("kubelet", fields_v1({"status": {k: v for k, v in status.items() if k != "qosClass"}}),
                                  minutes_before - 0.1, "status")
        else:
            scheduled = {"lastProbeTime": None, "lastTransitionTime": created,
                         "message": message or "0/3 nodes are available: 3 Insufficient cpu.",
                         "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}
            status = {"conditions": [scheduled], "phase": phase or "Pending", "qosClass": qos}
            status_entry = managed_entry("kube-scheduler", fields_v1({"status": {"conditions": [scheduled]}}),
                                  minutes_before, "status")
        meta["managedFields"] = [managed_entry(meta["managedFields"][0]["manager"], creator_fields, minutes_before),
                                 status_entry]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(sorted(spec.items())),
               "status": status}
        self.pods.append(pod)
        return pod

    @staticmethod
    def _template_spec(cpu: str, memory: str, resources: Obj | None, container_extra: Obj | None, image: str,
                       priority_class: str | None, template_extra: Obj | None, name: str = "app") -> Obj:
        container = {"image": image, "imagePullPolicy": "IfNotPresent", "name": name,
                     "resources": resources if resources is not None else {"requests": {"cpu": cpu, "memory": memory}},
                     "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                     **(container_extra or {})}
        spec: Obj = {"containers": [container], "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                     "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30}
        if priority_class:
            spec["priorityClassName"] = priority_class
        spec.update(template_extra or {})
        return spec

    def deployment(self, name: str, replicas: int, nodes: list[str | None], namespace: str = "default", *,
                   cpu: str = "100m", memory: str = "128Mi", priority_class: str | None = None, priority: int = 0,
                   include_workloads: bool = True, template_extra: Obj | None = None,
                   preemption_policy: str = "PreemptLowerPriority", resources: Obj | None = None,
                   container_extra: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
                   pending_message: str | None = None) -> tuple[Obj, Obj, list[Obj]]:
        """A Deployment, its current ReplicaSet and one pod per entry of ``nodes`` (None: pending,
        with ``pending_message`` as kube-scheduler's). ``resources``, ``container_extra``: as :meth:`pod`."""
        labels = {"app": name}
        template_spec = self._template_spec(cpu, memory, resources, container_extra, image, priority_class,
                                            template_extra)
        ready = sum(1 for n in nodes if n)
        dep_meta = self._meta(name, namespace=namespace, minutes_before=900, labels=labels,
                              api_version="apps/v1", kind="Deployment")
        dep_meta["annotations"] = {"deployment.kubernetes.io/revision": "1"}
        dep_meta["generation"] = 1
        dep_status: Obj = {"availableReplicas": ready, "observedGeneration": 1, "readyReplicas": ready,
                           "replicas": len(nodes), "updatedReplicas": len(nodes)}
        if ready < len(nodes):
            dep_status["unavailableReplicas"] = len(nodes) - ready
        if not ready:
            for key in ("availableReplicas", "readyReplicas"):
                del dep_status[key]
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dep_meta, "spec": {
            "progressDeadlineSeconds": 600, "replicas": replicas, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec}},
            "status": dep_status}
        h = name_hash(namespace, name)
        rs_labels = {**labels, "pod-template-hash": h}
        rs_meta = self._meta(f"{name}-{h}", namespace=namespace, minutes_before=900, labels=rs_labels,
                             manager="kube-controller-manager", api_version="apps/v1", kind="ReplicaSet")
        rs_meta["annotations"] = {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                  "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                                  "deployment.kubernetes.io/revision": "1"}
        rs_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                       "kind": "Deployment", "name": name, "uid": dep_meta["uid"]}]
        rs_status: Obj = {"availableReplicas": ready, "fullyLabeledReplicas": len(nodes), "observedGeneration": 1,
                          "readyReplicas": ready, "replicas": len(nodes)}
        if not ready:
            for key in ("availableReplicas", "readyReplicas"):
                del rs_status[key]
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": rs_meta, "spec": {
            "replicas": replicas, "selector": {"matchLabels": rs_labels},
            "template": {"metadata": {"creationTimestamp": None, "labels": rs_labels}, "spec": template_spec}},
            "status": rs_status}
        pods = []
        taken: set[str] = set()
        extra = {k: v for k, v in template_spec.items() if k not in ("containers", "priorityClassName")}
        container = template_spec["containers"][0]
        for i, node in enumerate(nodes):
            pod_name = f"{name}-{h}-{_suffix(taken, name, str(i))}"
            pods.append(self.pod(pod_name, namespace, node=node, cpu=cpu, memory=memory, labels=rs_labels, owner=rs,
                                 priority_class=priority_class, priority=priority, minutes_before=800 - i % 600,
                                 spec_extra=extra, preemption_policy=preemption_policy,
                                 resources=container["resources"], container_extra=container_extra, image=image,
                                 message=pending_message))
        if include_workloads:
            self.workloads.extend([deployment, rs])
        return deployment, rs, pods

    def statefulset(self, name: str, nodes: list[str | None], namespace: str = "default", *,
                    cpu: str = "100m", memory: str = "128Mi", priority_class: str | None = None, priority: int = 0,
                    template_extra: Obj | None = None, resources: Obj | None = None,
                    container_extra: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
                    service_name: str | None = None, pending_message: str | None = None) -> tuple[Obj, list[Obj]]:
        """A StatefulSet and its pods ``name-0`` .. ``name-<n-1>``, one per entry of ``nodes`` (None:
        pending), labelled and named by ordinal as its controller makes them."""
        labels = {"app": name}
        template_spec = self._template_spec(cpu, memory, resources, container_extra, image, priority_class,
                                            template_extra)
        replicas, ready = len(nodes), sum(1 for n in nodes if n)
        meta = self._meta(name, namespace=namespace, minutes_before=950, labels=labels,
                          api_version="apps/v1", kind="StatefulSet")
        meta["generation"] = 1
        revision = f"{name}-{name_hash(namespace, name, 'revision')}"
        status: Obj = {"availableReplicas": ready, "collisionCount": 0, "currentReplicas": replicas,
                       "currentRevision": revision, "observedGeneration": 1, "readyReplicas": ready,
                       "replicas": replicas, "updateRevision": revision, "updatedReplicas": replicas}
        if not ready:
            del status["readyReplicas"]
        sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": {
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "podManagementPolicy": "OrderedReady", "replicas": replicas, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels}, "serviceName": service_name or name,
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec},
            "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}},
            "status": status}
        extra = {k: v for k, v in template_spec.items() if k not in ("containers", "priorityClassName")}
        pods = []
        for i, node in enumerate(nodes):
            pod_name = f"{name}-{i}"
            pod_labels = {**labels, "apps.kubernetes.io/pod-index": str(i), "controller-revision-hash": revision,
                          "statefulset.kubernetes.io/pod-name": pod_name}
            pods.append(self.pod(pod_name, namespace, node=node, cpu=cpu, memory=memory, labels=pod_labels,
                                 owner=sts, priority_class=priority_class, priority=priority,
                                 minutes_before=940 - i % 600,
                                 spec_extra={**extra, "hostname": pod_name, "subdomain": service_name or name},
                                 resources=template_spec["containers"][0]["resources"],
                                 container_extra=container_extra, image=image, message=pending_message))
        self.workloads.append(sts)
        return sts, pods

    def daemonset_pods(self, name: str, namespace: str = "kube-system", *, cpu: str = "100m",
                       memory: str = "64Mi", resources: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
                       priority_class: str = "system-node-critical") -> Obj:
        """A DaemonSet with one running pod per node (node-affinity pinned, as its controller writes it)."""
        labels = {"k8s-app": name}
        meta = self._meta(name, namespace=namespace, minutes_before=20000, labels=labels,
                          api_version="apps/v1", kind="DaemonSet")
        meta["annotations"] = {"deprecated.daemonset.template.generation": "1"}
        meta["generation"] = 1
        template_spec = self._template_spec(cpu, memory, resources, None, image, priority_class,
                                            {"tolerations": [{"operator": "Exists"}]}, name="agent")
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": {
            "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec},
            "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"}},
            "status": {"currentNumberScheduled": len(self.nodes), "desiredNumberScheduled": len(self.nodes),
                       "numberAvailable": len(self.nodes), "numberMisscheduled": 0, "numberReady": len(self.nodes),
                       "observedGeneration": 1, "updatedNumberScheduled": len(self.nodes)}}
        priority = SYSTEM_CLASSES.get(priority_class, 0)
        taken: set[str] = set()
        tolerations = [{"operator": "Exists"}, *DAEMONSET_TOLERATIONS]
        container = template_spec["containers"][0]
        for node in self.nodes:
            node_name = node["metadata"]["name"]
            affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
            self.pod(f"{name}-{_suffix(taken, name, node_name)}", namespace, node=node_name, cpu=cpu, memory=memory,
                     labels={**labels, "controller-revision-hash": "6d4b7c", "pod-template-generation": "1"},
                     owner=ds, priority_class=priority_class, priority=priority, minutes_before=19000,
                     spec_extra={"affinity": affinity, "tolerations": tolerations}, resources=container["resources"],
                     container_extra={"name": "agent"}, image=image)
        self.workloads.append(ds)
        return ds
