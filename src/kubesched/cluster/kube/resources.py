"""The REST resources the kube backend talks to: kind -> group, version, plural (the scope is the
kind's, from :mod:`kubesched.k8s.objects`)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from kubesched.k8s.objects import DEFAULT_NAMESPACE, is_namespaced


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    group: str
    version: str
    plural: str

    @property
    def namespaced(self) -> bool:
        return is_namespaced(self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """All objects (``namespace=None``), or one namespace's."""
        if namespace is not None and self.namespaced:
            return f"{self.prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{self.prefix}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        ns = (namespace or DEFAULT_NAMESPACE) if self.namespaced else None
        path = f"{self.collection_path(ns)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path


POD = Resource("Pod", "", "v1", "pods")
NODE = Resource("Node", "", "v1", "nodes")
NAMESPACE = Resource("Namespace", "", "v1", "namespaces")
SERVICE = Resource("Service", "", "v1", "services")
REPLICATION_CONTROLLER = Resource("ReplicationController", "", "v1", "replicationcontrollers")
PRIORITY_CLASS = Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses")
POD_DISRUPTION_BUDGET = Resource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets")
REPLICA_SET = Resource("ReplicaSet", "apps", "v1", "replicasets")
DEPLOYMENT = Resource("Deployment", "apps", "v1", "deployments")
DAEMON_SET = Resource("DaemonSet", "apps", "v1", "daemonsets")
JOB = Resource("Job", "batch", "v1", "jobs")
RESOURCE_QUOTA = Resource("ResourceQuota", "", "v1", "resourcequotas")
RUNTIME_CLASS = Resource("RuntimeClass", "node.k8s.io", "v1", "runtimeclasses")
STATEFUL_SET = Resource("StatefulSet", "apps", "v1", "statefulsets")
NODE_RESOURCE_TOPOLOGY = Resource("NodeResourceTopology", "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies")
PERSISTENT_VOLUME = Resource("PersistentVolume", "", "v1", "persistentvolumes")
PERSISTENT_VOLUME_CLAIM = Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims")
STORAGE_CLASS = Resource("StorageClass", "storage.k8s.io", "v1", "storageclasses")
CSI_NODE = Resource("CSINode", "storage.k8s.io", "v1", "csinodes")
CSI_DRIVER = Resource("CSIDriver", "storage.k8s.io", "v1", "csidrivers")
CSI_STORAGE_CAPACITY = Resource("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities")
POD_GROUP = Resource("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups")
LEASE = Resource("Lease", "coordination.k8s.io", "v1", "leases")
EVENT = Resource("Event", "events.k8s.io", "v1", "events")

#: what the scheduler watches (upstream's informer set, plus NodeResourceTopology when the CRD exists)
INFORMED: tuple[Resource, ...] = (
    NODE,
    POD,
    NAMESPACE,
    PRIORITY_CLASS,
    POD_DISRUPTION_BUDGET,
    SERVICE,
    REPLICATION_CONTROLLER,
    REPLICA_SET,
    STATEFUL_SET,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    CSI_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
)
OPTIONAL_INFORMED: tuple[Resource, ...] = (NODE_RESOURCE_TOPOLOGY, POD_GROUP)
