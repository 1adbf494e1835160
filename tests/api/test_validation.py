from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from kubesched.api.validation import object_ref, validate_object
from kubesched.k8s.kinds import MANIFEST_KINDS, is_namespaced

DELETE = object()


def template(labels: dict | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels if labels is not None else {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


VALID: dict[str, dict[str, Any]] = {
    "Node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
             "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}}},
    "Pod": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                         "annotations": {"kubesched.io/run-for": "5m", "kubesched.io/exit-after": "10s"}},
            "spec": {
                "containers": [{"name": "c", "image": "nginx",
                                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": 1}},
                                "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]}],
                "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
                "priorityClassName": "high", "priority": 1000, "preemptionPolicy": "Never",
                "nodeSelector": {"zone": "a"}, "overhead": {"cpu": "10m"},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                                {"operator": "Exists"},
                                {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["2"]}],
                             "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]},
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}},
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                               "minDomains": 2, "labelSelector": {"matchLabels": {"app": "web"}}}],
                "schedulingGates": [{"name": "example.com/gate"}],
                "terminationGracePeriodSeconds": 60},
            "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}},
    "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    "ResourceQuota": {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                      "spec": {"hard": {"pods": "10", "requests.cpu": "4"},
                               "scopeSelector": {"matchExpressions": [
                                   {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}},
    "PriorityClass": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                      "value": 1000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"},
    "PodDisruptionBudget": {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
                            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
                            "status": {"disruptionsAllowed": 0}},
    "Deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template()}},
    "ReplicaSet": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template()}},
    "StatefulSet": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ss"},
                    "spec": {"replicas": 1, "serviceName": "ss", "selector": {"matchLabels": {"app": "web"}},
                             "template": template()}},
    "DaemonSet": {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
                  "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                           "template": template()}},
    "Job": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"completions": 3, "parallelism": 2, "template": template(restartPolicy="Never")}},
    "Service": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": {"app": "web"}}},
    "RuntimeClass": {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
                     "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m"}},
                     "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                                    "tolerations": [{"key": "sandbox", "operator": "Exists"}]}},
    "ReplicationController": {"apiVersion": "v1", "kind": "ReplicationController",
                              "metadata": {"name": "rc", "namespace": "default"},
                              "spec": {"selector": {"app": "rc"}}},
    "NodeResourceTopology": {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                             "metadata": {"name": "n1"}, "topologyPolicies": ["SingleNUMANodeContainerLevel"],
                             "zones": [{"name": "node-0", "type": "Node",
                                        "resources": [{"name": "cpu", "capacity": "8", "allocatable": "7",
                                                       "available": "7"}],
                                        "costs": [{"name": "node-1", "value": 20}]}]},
    "PersistentVolume": {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
                         "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "storageClassName": "local", "local": {"path": "/mnt/disks/1"},
                                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                      {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}},
    "PersistentVolumeClaim": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                              "metadata": {"name": "data-db-0", "namespace": "default"},
                              "spec": {"accessModes": ["ReadWriteOncePod"], "storageClassName": "fast",
                                       "resources": {"requests": {"storage": "5Gi"}}}},
    "StorageClass": {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
                     "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
                     "allowedTopologies": [{"matchLabelExpressions": [
                         {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]},
    "CSINode": {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
                "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25},
                                      "topologyKeys": ["topology.kubernetes.io/zone"]}]}},
    "CSIDriver": {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"},
                  "spec": {"attachRequired": True, "storageCapacity": False}},
    "CSIStorageCapacity": {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                           "metadata": {"name": "cap-a", "namespace": "kube-system"}, "storageClassName": "fast",
                           "capacity": "100Gi",
                           "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}},
    "PodGroup": {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": "train", "namespace": "ml"},
                 "spec": {"minMember": 4, "minResources": {"cpu": "12"}, "scheduleTimeoutSeconds": 30}},
    "Scenario": {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "s"},
                 "spec": {"seed": 7, "until": "10m",
                          "schedulerConfiguration": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                                     "kind": "KubeSchedulerConfiguration"},
                          "steps": [
                              {"at": "5s", "create": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                      "spec": {"containers": [{"name": "c", "image": "x"}]}}},
                              {"at": "30s", "delete": {"kind": "Pod", "name": "v", "namespace": "default",
                                                       "gracePeriodSeconds": 0}},
                              {"at": 40, "patch": {"kind": "Node", "name": "n1",
                                                   "merge": {"spec": {"unschedulable": True}}}}]}},
}


def mutate(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set (or delete with DELETE) ``path`` like ``spec.containers[0].image`` in a copy of obj."""
    out = copy.deepcopy(obj)
    tokens: list[str | int] = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[]*)((?:\[\d+\])*)", part)
        assert m
        tokens.append(m.group(1))
        tokens.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    cur: Any = out
    for tok in tokens[:-1]:
        cur = cur[tok]
    if value is DELETE:
        del cur[tokens[-1]]
    else:
        cur[tokens[-1]] = value
    return out


@pytest.mark.parametrize("kind", sorted(VALID))
def test_valid_objects_of_every_supported_kind_have_no_errors(kind: str) -> None:
    assert validate_object(VALID[kind]) == []


def test_every_supported_kind_has_a_valid_example() -> None:
    assert set(VALID) == set(MANIFEST_KINDS)


CASES: list[tuple[str, str, Any, str | None, str]] = [
    # kind, path to change, new value, expected error path, expected message fragment
    ("Pod", "kind", "ConfigMap", "kind", 'unsupported kind "ConfigMap"'),
    ("Pod", "kind", DELETE, "kind", "required value"),
    ("Pod", "apiVersion", "apps/v1", "apiVersion", 'served by apiVersion "v1"'),
    ("Pod", "apiVersion", DELETE, "apiVersion", "required value"),
    ("Pod", "metadata", DELETE, "metadata", "required value"),
    ("Pod", "metadata.name", DELETE, "metadata.name", "required value"),
    ("Pod", "metadata.name", "Web_1", "metadata.name", "DNS subdomain"),
    ("Pod", "metadata.name", 7, "metadata.name", "must be a string"),
    ("Namespace", "metadata.name", "a.b", "metadata.name", "DNS label"),
    ("Pod", "metadata.namespace", "Team", "metadata.namespace", "DNS label"),
    ("Node", "metadata.namespace", "default", "metadata.namespace", "not namespaced"),
    ("PersistentVolume", "spec.capacity", DELETE, "spec.capacity.storage", "required value"),
    ("PersistentVolume", "spec.accessModes", ["ReadWriteSometimes"], "spec.accessModes[0]", "unsupported value"),
    ("PersistentVolume", "spec.nodeAffinity", DELETE, "spec.nodeAffinity", "Local volume requires node affinity"),
    ("PersistentVolume", "spec.local", DELETE, "spec", "must specify a volume type"),
    ("PersistentVolumeClaim", "spec.resources", DELETE, "spec.resources.requests.storage", "required value"),
    ("PersistentVolumeClaim", "spec.accessModes", ["ReadWriteOncePod", "ReadWriteOnce"], "spec.accessModes",
     "may not use ReadWriteOncePod with other access modes"),
    ("StorageClass", "volumeBindingMode", "Lazy", "volumeBindingMode", "unsupported value"),
    ("StorageClass", "provisioner", DELETE, "provisioner", "required value"),
    ("CSINode", "spec.drivers[0].allocatable.count", -1, "spec.drivers[0].allocatable.count",
     "greater than or equal to 0"),
    ("CSIStorageCapacity", "capacity", "lots", "capacity", "quantity"),
    ("PodGroup", "spec.minMember", -1, "spec.minMember", "greater than or equal to 0"),
    ("Pod", "metadata.annotations", {"kubesched.io/barrier": "four"}, "metadata.annotations[kubesched.io/barrier]",
     "positive number of pods"),
    ("Pod", "spec.volumes", [{"name": "data", "persistentVolumeClaim": {}}],
     "spec.volumes[0].persistentVolumeClaim.claimName", "required value"),
    ("Pod", "spec.volumes", [{"name": "d", "emptyDir": {}}, {"name": "d", "emptyDir": {}}], "spec.volumes[1].name",
     "duplicate volume name"),
    ("StatefulSet", "spec.volumeClaimTemplates", [{"metadata": {"name": "data"}, "spec": {"accessModes": []}}],
     "spec.volumeClaimTemplates[0].spec.accessModes", "at least 1 access mode is required"),
    ("Pod", "metadata.labels", {"app": 1}, "metadata.labels.app", "must be a string"),
    ("Pod", "metadata.labels", {"bad key!": "x"}, "metadata.labels[bad key!]", "qualified name"),
    ("Pod", "metadata.labels", {"app": "has space"}, "metadata.labels.app", "invalid label value"),
    ("Pod", "metadata.annotations", {"kubesched.io/run-for": "5"},
     "metadata.annotations[kubesched.io/run-for]", "invalid duration"),
    ("Pod", "metadata.annotations", {"kubesched.io/exit-after": "-5s"},
     "metadata.annotations[kubesched.io/exit-after]", "must not be negative"),
    ("Pod", "spec", DELETE, "spec", "required value"),
    ("Pod", "spec.containers", [], "spec.containers", "at least one container"),
    ("Pod", "spec.containers", DELETE, "spec.containers", "required value"),
    ("Pod", "spec.containers", {"name": "c"}, "spec.containers", "must be a list"),
    ("Pod", "spec.containers[0].image", DELETE, "spec.containers[0].image", "required value"),
    ("Pod", "spec.containers[0].name", DELETE, "spec.containers[0].name", "required value"),
    ("Pod", "spec.containers[0].name", "init", "spec.initContainers[0].name", "duplicate container name"),
    ("Pod", "spec.containers[0].resources.requests.cpu", "12x",
     "spec.containers[0].resources.requests.cpu", 'invalid quantity "12x"'),
    ("Pod", "spec.containers[0].resources.requests.memory", "-1Gi",
     "spec.containers[0].resources.requests.memory", "greater than or equal to 0"),
    ("Pod", "spec.containers[0].resources.limits.cpu", "100m",
     "spec.containers[0].resources.requests.cpu", "less than or equal to cpu limit"),
    ("Pod", "spec.containers[0].resources.requests", {"example.com/gpu": "x"},
     "spec.containers[0].resources.requests[example.com/gpu]", "invalid quantity"),
    ("Pod", "spec.containers[0].ports[0].containerPort", DELETE,
     "spec.containers[0].ports[0].containerPort", "required value"),
    ("Pod", "spec.containers[0].ports[0].hostPort", 70000,
     "spec.containers[0].ports[0].hostPort", "less than or equal to 65535"),
    ("Pod", "spec.containers[0].ports[0].protocol", "HTTP", "spec.containers[0].ports[0].protocol", "unsupported value"),
    ("Pod", "spec.containers[0].restartPolicy", "Always", "spec.containers[0].restartPolicy", "non-init containers"),
    ("Pod", "spec.initContainers[0].restartPolicy", "Never", "spec.initContainers[0].restartPolicy", "unsupported value"),
    ("Pod", "spec.overhead", {"cpu": "lots"}, "spec.overhead.cpu", "invalid quantity"),
    ("Pod", "spec.priority", 2**31, "spec.priority", "less than or equal to 2147483647"),
    ("Pod", "spec.priority", "high", "spec.priority", "must be an integer"),
    ("Pod", "spec.preemptionPolicy", "Sometimes", "spec.preemptionPolicy", "PreemptLowerPriority, Never"),
    ("Pod", "spec.terminationGracePeriodSeconds", -1, "spec.terminationGracePeriodSeconds", "greater than or equal"),
    ("Pod", "spec.tolerations[0].value", "v", "spec.tolerations[0].value", "must be empty when `operator` is 'Exists'"),
    ("Pod", "spec.tolerations[0].effect", "NoWay", "spec.tolerations[0].effect", "unsupported value"),
    ("Pod", "spec.tolerations[0].operator", "Equal", None, ""),
    ("Pod", "spec.tolerations[1].operator", "Equal", "spec.tolerations[1].operator", "must be Exists when `key` is empty"),
    ("Pod", "spec.tolerations[2].effect", "NoSchedule", "spec.tolerations[2].effect", "must be 'NoExecute'"),
    ("Pod", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].values", ["2", "3"],
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values", "exactly one value"),
    ("Pod", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].values", ["two"],
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values[0]", "must be an integer"),
    ("Pod", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator", "Like",
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].operator", "unsupported value"),
    ("Pod", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchFields[0].key", "metadata.uid",
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchFields[0].key", "only \"metadata.name\""),
    ("Pod", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", [],
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
     "at least one node selector term"),
    ("Pod", "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", 101,
     "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "less than or equal to 100"),
    ("Pod", "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
            ".matchExpressions[0].values", ["x"],
     "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
     ".matchExpressions[0].values", "may not be specified when `operator` is 'Exists'"),
    ("Pod", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "",
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "must not be empty"),
    ("Pod", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
     {"matchExpressions": [{"key": "app", "operator": "In"}]},
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
     ".matchExpressions[0].values", "must be specified when `operator` is 'In'"),
    ("Pod", "spec.topologySpreadConstraints[0].whenUnsatisfiable", "ScheduleAnyway",
     "spec.topologySpreadConstraints[0].minDomains", "only use minDomains"),
    ("Pod", "spec.topologySpreadConstraints[0].maxSkew", 0,
     "spec.topologySpreadConstraints[0].maxSkew", "greater than or equal to 1"),
    ("Pod", "spec.schedulingGates", [{"name": "g"}, {"name": "g"}], "spec.schedulingGates[1].name", "duplicate"),
    ("Pod", "spec.nodeSelector", {"zone": ["a"]}, "spec.nodeSelector.zone", "must be a string"),
    ("Pod", "status.phase", "Sleeping", "status.phase", "unsupported value"),
    ("Node", "status", DELETE, "status", "status.allocatable or status.capacity"),
    ("Node", "status", {"conditions": []}, "status", "status.allocatable or status.capacity"),
    ("Node", "status", {"capacity": {"cpu": "2"}}, None, ""),
    ("Node", "status.allocatable.memory", "8GB", "status.allocatable.memory", 'invalid quantity "8GB"'),
    ("Node", "spec.taints[0].effect", DELETE, "spec.taints[0].effect", "required value"),
    ("Node", "spec.taints[0].effect", "", "spec.taints[0].effect", "unsupported value"),
    ("Node", "spec.taints[0].key", DELETE, "spec.taints[0].key", "required value"),
    ("Node", "spec.taints", [{"key": "k", "effect": "NoSchedule"}] * 2, "spec.taints[1]", "unique by key and effect"),
    ("Node", "spec.unschedulable", "yes", "spec.unschedulable", "must be a boolean"),
    ("ResourceQuota", "spec.hard.pods", "ten", "spec.hard.pods", "invalid quantity"),
    ("ResourceQuota", "spec.scopeSelector.matchExpressions[0].values", [],
     "spec.scopeSelector.matchExpressions[0].values", "must be specified"),
    ("ResourceQuota", "spec.scopeSelector.matchExpressions[0].scopeName", "Color",
     "spec.scopeSelector.matchExpressions[0].scopeName", "unsupported value"),
    ("ResourceQuota", "spec.scopes", ["Forever"], "spec.scopes[0]", "unsupported value"),
    ("PriorityClass", "value", DELETE, "value", "required value"),
    ("PriorityClass", "value", 2**31, "value", "less than or equal"),
    ("PriorityClass", "value", 1_000_000_001, None, ""),  # an admission decision, not malformed
    ("PriorityClass", "preemptionPolicy", "Always", "preemptionPolicy", "unsupported value"),
    ("PriorityClass", "globalDefault", "yes", "globalDefault", "must be a boolean"),
    ("PodDisruptionBudget", "spec.maxUnavailable", 1, "spec", "exactly one of minAvailable and maxUnavailable"),
    ("PodDisruptionBudget", "spec.minAvailable", DELETE, "spec", "exactly one of minAvailable and maxUnavailable"),
    ("PodDisruptionBudget", "spec.minAvailable", "50", "spec.minAvailable", "percentage"),
    ("PodDisruptionBudget", "spec.minAvailable", "150%", "spec.minAvailable", "greater than 100%"),
    ("PodDisruptionBudget", "spec.minAvailable", -1, "spec.minAvailable", "greater than or equal to 0"),
    ("PodDisruptionBudget", "spec.minAvailable", 2, None, ""),
    ("PodDisruptionBudget", "spec.selector", {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
     "spec.selector.matchExpressions[0].operator", "unsupported value"),
    ("PodDisruptionBudget", "status.disruptionsAllowed", -1, "status.disruptionsAllowed", "greater than or equal"),
    ("Deployment", "spec.selector", DELETE, "spec.selector", "required value"),
    ("Deployment", "spec.selector", {}, "spec.selector", "empty selector"),
    ("Deployment", "spec.selector.matchLabels.app", "db", "spec.template.metadata.labels", "does not match"),
    ("Deployment", "spec.replicas", -1, "spec.replicas", "greater than or equal to 0"),
    ("Deployment", "spec.template.spec.containers[0].image", DELETE,
     "spec.template.spec.containers[0].image", "required value"),
    ("Deployment", "spec.template.spec.restartPolicy", "Never", "spec.template.spec.restartPolicy", "must use Always"),
    ("Deployment", "spec.template", DELETE, "spec.template", "required value"),
    ("ReplicaSet", "spec.template.spec.containers[0].resources", {"requests": {"cpu": "1x"}},
     "spec.template.spec.containers[0].resources.requests.cpu", "invalid quantity"),
    ("StatefulSet", "spec.podManagementPolicy", "Random", "spec.podManagementPolicy", "unsupported value"),
    ("DaemonSet", "spec.template.metadata.annotations", {"kubesched.io/run-for": "soon"},
     "spec.template.metadata.annotations[kubesched.io/run-for]", "invalid duration"),
    ("Job", "spec.template.spec.restartPolicy", DELETE, "spec.template.spec.restartPolicy", "OnFailure or Never"),
    ("Job", "spec.template.spec.restartPolicy", "Always", "spec.template.spec.restartPolicy", "OnFailure or Never"),
    ("Job", "spec.completions", -1, "spec.completions", "greater than or equal"),
    ("NodeResourceTopology", "zones[0].resources[0].capacity", "eight", "zones[0].resources[0].capacity",
     "invalid quantity"),
    ("NodeResourceTopology", "zones[0].name", DELETE, "zones[0].name", "required value"),
    ("NodeResourceTopology", "zones", "node-0", "zones", "must be a list"),
    ("Scenario", "metadata", DELETE, None, ""),
    ("Scenario", "spec.seed", "seven", "spec.seed", "must be an integer"),
    ("Scenario", "spec.until", "forever", "spec.until", "invalid duration"),
    ("Scenario", "spec.untill", "1m", "spec.untill", "unknown field"),
    ("Scenario", "spec.schedulerConfiguration", {"kind": "Other"}, "spec.schedulerConfiguration.kind",
     "KubeSchedulerConfiguration"),
    ("Scenario", "spec.schedulerConfiguration", "default", "spec.schedulerConfiguration", "must be a mapping"),
    ("Scenario", "spec.steps[0].at", DELETE, "spec.steps[0].at", "required value"),
    ("Scenario", "spec.steps[0].at", "5", "spec.steps[0].at", "invalid duration"),
    ("Scenario", "spec.steps[0].at", "-5s", "spec.steps[0].at", "must not be negative"),
    ("Scenario", "spec.steps[0].create.spec.containers[0].resources", {"requests": {"cpu": "12x"}},
     "spec.steps[0].create.spec.containers[0].resources.requests.cpu", 'invalid quantity "12x"'),
    ("Scenario", "spec.steps[0].create.kind", "Scenario", "spec.steps[0].create.kind", "cannot create a Scenario"),
    ("Scenario", "spec.steps[0].delete", {"kind": "Pod", "name": "x"}, "spec.steps[0]", "exactly one of"),
    ("Scenario", "spec.steps[0]", {"at": "1s"}, "spec.steps[0]", "exactly one of"),
    ("Scenario", "spec.steps[0].crate", {}, "spec.steps[0].crate", "unknown field"),
    ("Scenario", "spec.steps[1].delete.name", DELETE, "spec.steps[1].delete.name", "required value"),
    ("Scenario", "spec.steps[1].delete.kind", "Widget", "spec.steps[1].delete.kind", "unsupported kind"),
    ("Scenario", "spec.steps[1].delete.gracePeriodSeconds", -3, "spec.steps[1].delete.gracePeriodSeconds",
     "greater than or equal"),
    ("Scenario", "spec.steps[2].patch.merge", DELETE, "spec.steps[2].patch.merge", "required value"),
    ("Scenario", "spec.steps[2].patch.merge", [1], "spec.steps[2].patch.merge", "must be a mapping"),
    ("Scenario", "spec.steps[2].patch.kind", DELETE, "spec.steps[2].patch.kind", "required value"),
]


@pytest.mark.parametrize(
    ("kind", "path", "value", "error_path", "fragment"),
    CASES,
    ids=[f"{k}:{p}={'<deleted>' if v is DELETE else v!r}"[:120] for k, p, v, _, _ in CASES],
)
def test_validation_reports_field_path_and_message(kind: str, path: str, value: Any, error_path: str | None,
                                                   fragment: str) -> None:
    errors = validate_object(mutate(VALID[kind], path, value))
    if error_path is None:
        assert errors == []
        return
    assert any(p == error_path and fragment in m for p, m in errors), errors


@pytest.mark.parametrize(("obj", "type_text"), [(None, "null"), ("Pod", "string"), ([1, 2], "list"), (3, "integer")])
def test_non_mapping_objects_are_rejected(obj: Any, type_text: str) -> None:
    assert validate_object(obj) == [("", f"an object must be a mapping, got {type_text}")]


def test_path_prefix_is_prepended_to_every_error() -> None:
    errors = validate_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}, "items[2]")
    assert errors == [("items[2].spec.containers", "required value")]


@pytest.mark.parametrize(
    ("obj", "ref"),
    [
        (VALID["Pod"], "Pod default/web"),
        ({"kind": "Pod", "metadata": {"name": "a", "namespace": "x"}}, "Pod x/a"),
        ({"kind": "Pod", "metadata": {"name": "a"}}, "Pod default/a"),
        (VALID["Node"], "Node n1"),
        ({"kind": "Pod"}, "Pod"),
        ("nope", ""),
    ],
)
def test_object_ref_describes_objects_for_messages(obj: Any, ref: str) -> None:
    assert object_ref(obj) == ref


@pytest.mark.parametrize(
    ("kind", "namespaced"),
    [("Pod", True), ("Node", False), ("Namespace", False), ("PriorityClass", False), ("Deployment", True),
     ("NodeResourceTopology", False), ("PodDisruptionBudget", True)],
)
def test_is_namespaced(kind: str, namespaced: bool) -> None:
    assert is_namespaced(kind) is namespaced
