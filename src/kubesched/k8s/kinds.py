"""The one table of the Kubernetes kinds kubesched knows: for each its API group and version, its
plural resource name, its scope, whether a manifest may hold it and where a snapshot restores it.

What depends on these reads them here: validation (the apiVersion a manifest must use,
which kinds the loader accepts), object keys (the scope), snapshot restore order, the embedded API
server's messages (``resource.group``) and the real-cluster backend's REST paths
(``cluster/kube/resources.py``); ``tools/gen_known_fields.py`` reads it for the kinds whose field
names it writes out. A new kind is one entry below, with its upstream names in
``tests/api/test_kinds.py`` (the rest it takes: "Where things go" in ``docs/architecture.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: the group of kubesched's own manifest kind (``Scenario``), served by no API server
KUBESCHED_GROUP = "kubesched.io"


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind, as the API server serves it (upstream's ``metav1.APIResource``)."""

    name: str
    #: the API group, ``""`` for the core group
    group: str
    #: the one version a manifest may use and the real-cluster backend talks
    version: str
    #: the resource name in REST paths (``pods``, ``priorityclasses``)
    plural: str
    namespaced: bool
    #: the order in which a snapshot's objects of this kind are restored (lowest first; see
    #: :mod:`kubesched.api.snapshot`): what others refer to first, pods before their controllers
    restore_rank: int
    #: whether a scenario or manifest may hold it (the loader accepts it and validation checks it);
    #: False for the kinds only the real-cluster backend writes (its Events and its Lease)
    in_manifests: bool = True

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group (``v1``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """``plural.group`` as API server messages name a resource (``priorityclasses.scheduling.k8s.io``),
        ``plural`` for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_known_fields(self) -> bool:
        """Whether the loader warns about unknown fields of its manifests from the generated field
        names (``api/known_fields_data.py``): every Kubernetes kind a manifest may hold; a Scenario's
        own fields are checked by validation."""
        return self.in_manifests and self.group != KUBESCHED_GROUP


#: the rank of kinds nothing else depends on at restore time: after the storage classes and CSI
#: objects, before the volumes, claims and pods
_UNORDERED = 10

_TABLE = (
    # name, group, version, plural, namespaced, restore rank
    Kind("Node", "", "v1", "nodes", False, 2),
    Kind("Pod", "", "v1", "pods", True, 20),
    Kind("Namespace", "", "v1", "namespaces", False, 0),
    Kind("ResourceQuota", "", "v1", "resourcequotas", True, 4),
    Kind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False, 1),
    Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True, 6),
    Kind("Deployment", "apps", "v1", "deployments", True, 26),
    Kind("ReplicaSet", "apps", "v1", "replicasets", True, 22),
    Kind("StatefulSet", "apps", "v1", "statefulsets", True, 23),
    Kind("DaemonSet", "apps", "v1", "daemonsets", True, 24),
    Kind("Job", "batch", "v1", "jobs", True, 25),
    Kind("NodeResourceTopology", "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", False, 3),
    Kind("Service", "", "v1", "services", True, 5),
    Kind("ReplicationController", "", "v1", "replicationcontrollers", True, 21),
    Kind("RuntimeClass", "node.k8s.io", "v1", "runtimeclasses", False, _UNORDERED),
    Kind("PersistentVolume", "", "v1", "persistentvolumes", False, 11),
    Kind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True, 12),
    Kind("StorageClass", "storage.k8s.io", "v1", "storageclasses", False, 7),
    Kind("CSINode", "storage.k8s.io", "v1", "csinodes", False, 9),
    Kind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", False, 8),
    Kind("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities", True, 13),
    # scheduler-plugins' Coscheduling (a CRD)
    Kind("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", True, 14),
    # kubesched's own: a scenario's settings and steps, never stored
    Kind("Scenario", KUBESCHED_GROUP, "v1alpha1", "scenarios", False, _UNORDERED),
    # written by the real-cluster backend only (events.k8s.io's Event, as upstream's recorder writes)
    Kind("Event", "events.k8s.io", "v1", "events", True, _UNORDERED, in_manifests=False),
    Kind("Lease", "coordination.k8s.io", "v1", "leases", True, _UNORDERED, in_manifests=False),
)

#: every kind by name, in the table's order
KINDS: Mapping[str, Kind] = MappingProxyType({kind.name: kind for kind in _TABLE})
#: the kinds a scenario or manifest may hold, in the table's order (validation's error message lists them so)
MANIFEST_KINDS: Mapping[str, Kind] = MappingProxyType({kind.name: kind for kind in _TABLE if kind.in_manifests})
#: a set for the test every object key makes
_NAMESPACED = frozenset(kind.name for kind in _TABLE if kind.namespaced)


def is_namespaced(kind: str) -> bool:
    """Whether objects of ``kind`` live in a namespace; a kind not in the table is taken as
    cluster-scoped (manifests of unknown kinds never get past validation)."""
    return kind in _NAMESPACED


def api_version(kind: str) -> str:
    """The apiVersion objects of ``kind`` carry (``apps/v1``)."""
    return KINDS[kind].api_version


def resource_name(kind: str) -> str:
    """``plural.group`` as API server messages name the resource of ``kind``
    (``pods``, ``priorityclasses.scheduling.k8s.io``); a kind not in the table (a caller's guess at
    a kind the simulator does not know) as its lowercase plural."""
    known = KINDS.get(kind)
    return known.resource if known is not None else kind.lower() + "s"


def restore_rank(kind: str) -> int:
    """Where objects of ``kind`` come in a snapshot's restore order (see :attr:`Kind.restore_rank`)."""
    known = KINDS.get(kind)
    return known.restore_rank if known is not None else _UNORDERED
