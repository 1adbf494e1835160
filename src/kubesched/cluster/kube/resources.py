"""The REST resources the kube backend talks to: a kind's endpoints, from its group, version,
plural and scope in :mod:`kubesched.k8s.kinds`."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from kubesched.k8s.kinds import KINDS, Kind
from kubesched.k8s.objects import DEFAULT_NAMESPACE


@dataclass(frozen=True, slots=True)
class Resource:
    """The endpoints of one kind (``Resource.of("Pod")``)."""

    spec: Kind

    @classmethod
    def of(cls, kind: str) -> Resource:
        return cls(KINDS[kind])

    @property
    def kind(self) -> str:
        return self.spec.name

    @property
    def plural(self) -> str:
        return self.spec.plural

    @property
    def namespaced(self) -> bool:
        return self.spec.namespaced

    @property
    def api_version(self) -> str:
        return self.spec.api_version

    @property
    def prefix(self) -> str:
        group, version = self.spec.group, self.spec.version
        return f"/apis/{group}/{version}" if group else f"/api/{version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """All objects (``namespace=None``), or one namespace's."""
        if namespace is not None and self.namespaced:
            return f"{self.prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{self.prefix}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        ns = (namespace or DEFAULT_NAMESPACE) if self.namespaced else None
        path = f"{self.collection_path(ns)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path


POD = Resource.of("Pod")
NODE = Resource.of("Node")
NAMESPACE = Resource.of("Namespace")
SERVICE = Resource.of("Service")
REPLICATION_CONTROLLER = Resource.of("ReplicationController")
PRIORITY_CLASS = Resource.of("PriorityClass")
POD_DISRUPTION_BUDGET = Resource.of("PodDisruptionBudget")
REPLICA_SET = Resource.of("ReplicaSet")
DEPLOYMENT = Resource.of("Deployment")
DAEMON_SET = Resource.of("DaemonSet")
JOB = Resource.of("Job")
RESOURCE_QUOTA = Resource.of("ResourceQuota")
RUNTIME_CLASS = Resource.of("RuntimeClass")
STATEFUL_SET = Resource.of("StatefulSet")
NODE_RESOURCE_TOPOLOGY = Resource.of("NodeResourceTopology")
PERSISTENT_VOLUME = Resource.of("PersistentVolume")
PERSISTENT_VOLUME_CLAIM = Resource.of("PersistentVolumeClaim")
STORAGE_CLASS = Resource.of("StorageClass")
CSI_NODE = Resource.of("CSINode")
CSI_DRIVER = Resource.of("CSIDriver")
CSI_STORAGE_CAPACITY = Resource.of("CSIStorageCapacity")
POD_GROUP = Resource.of("PodGroup")
LEASE = Resource.of("Lease")
EVENT = Resource.of("Event")

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
