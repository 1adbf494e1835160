"""Scheduler cache and snapshot (upstream ``internal/cache``).

The cache holds a NodeInfo per node with the pods bound (or assumed) to it, and the node table
arrays. The scheduler processes cluster events between cycles, so a cycle's snapshot is the cache
itself, refreshed at the start of the cycle (node order, affinity lists); assume/forget change it
directly.
"""

from __future__ import annotations

from kubesched.k8s.journal import Journal
from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.nodetable import NodeTable

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


def zone_key(labels: dict[str, str]) -> str:
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def _counts_alike(old: PodInfo, new: PodInfo) -> bool:
    """Whether two versions of a pod weigh the same in the node table: requests, host ports and
    priority (usage), namespace, labels and deletion (pod groups), no pod (anti-)affinity."""
    return (old.requests == new.requests and old.nonzero_cpu == new.nonzero_cpu
            and old.nonzero_mem == new.nonzero_mem and old.host_ports == new.host_ports
            and old.priority == new.priority and old.namespace == new.namespace and old.labels == new.labels
            and old.deleting == new.deleting and not (old.has_affinity or old.has_required_anti_affinity
                                                      or new.has_affinity or new.has_required_anti_affinity))


def _node_journal_bound(nodes: int) -> int:
    """How many node changes the journal keeps: a reader further behind than twice the nodes
    (and some slack) looks at every node."""
    return 2 * nodes + 4096


class Cache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self._zones: dict[str, list[str]] = {}  # zone -> node names in insertion order
        self._node_zone: dict[str, str] = {}
        self._pods: dict[str, tuple[PodInfo, str]] = {}  # uid -> (pod, node name)
        self._assumed: set[str] = set()
        self._orphans: dict[str, dict[str, PodInfo]] = {}  # pods on nodes we have not seen
        self.table = NodeTable()
        self._order_dirty = True
        self._lists_dirty = True
        self._node_infos: list[NodeInfo] = []
        self._node_names: list[str] = []
        self._with_affinity: list[NodeInfo] = []
        self._with_anti_affinity: list[NodeInfo] = []
        self._image_nodes: dict[str, int] = {}
        self._image_sizes: dict[str, int] = {}  # the size the first node reporting an image gave
        #: names of the nodes whose NodeInfo changed, in order (see :meth:`node_changes`)
        self._node_journal: Journal[str] = Journal(_node_journal_bound(0))

    # -- SnapshotView ----------------------------------------------------------------------
    @property
    def node_infos(self) -> list[NodeInfo]:
        return self._node_infos

    @property
    def node_names(self) -> list[str]:
        """The names of :attr:`node_infos`, in their order."""
        return self._node_names

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]:
        if self._lists_dirty:
            self._refresh_lists()
        return self._with_affinity

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        if self._lists_dirty:
            self._refresh_lists()
        return self._with_anti_affinity

    def get(self, node_name: str) -> NodeInfo | None:
        return self.nodes.get(node_name)

    def node_changes(self, since: int | None) -> tuple[int, list[str] | None]:
        """A mark to pass next time and the names of the nodes whose NodeInfo was added, removed
        or changed (its object or its pods: every change that moves its ``generation``) since
        ``since``, a mark this method gave; None for the names when that cannot be told (no mark,
        or the journal forgot since): then look at every node."""
        return self._node_journal.since(since)

    def image_num_nodes(self, image: str) -> int:
        return self._image_nodes.get(image, 0)

    def image_size(self, image: str) -> int:
        """Upstream keeps one size per image: the first reporting node's, until no node has it."""
        return self._image_sizes.get(image, 0)

    def is_pvc_used(self, key: str) -> bool:
        """Whether a pod bound or assumed to a node of the snapshot uses the claim ``namespace/name``
        through a persistentVolumeClaim volume (upstream ``StorageInfos().IsPVCUsedByPods``)."""
        return any(key in pod.pvc_refs for info in self.nodes.values() for pod in info.pods if pod.pvc_refs)

    def num_nodes(self) -> int:
        return len(self._node_infos)

    def num_pods(self) -> int:
        """Pods on nodes, assumed ones included (upstream ``PodCount``)."""
        return len(self._pods)

    def num_assumed(self) -> int:
        return len(self._assumed)

    def update_snapshot(self) -> None:
        if self._order_dirty:
            self._node_names = list(self._tree_order())
            self._node_infos = [self.nodes[name] for name in self._node_names]
            self.table.rebuild(self._node_infos)
            self._order_dirty = False
            self._lists_dirty = True

    def _refresh_lists(self) -> None:
        self._with_affinity = [n for n in self._node_infos if n.pods_with_affinity]
        self._with_anti_affinity = [n for n in self._node_infos if n.pods_with_required_anti_affinity]
        self._lists_dirty = False

    def _tree_order(self) -> list[str]:
        zones = list(self._zones.values())
        order: list[str] = []
        depth = max((len(z) for z in zones), default=0)
        for i in range(depth):
            for names in zones:
                if i < len(names):
                    order.append(names[i])
        return order

    # -- nodes -----------------------------------------------------------------------------
    def add_node(self, node: Obj) -> NodeInfo:
        name = node["metadata"]["name"]
        info = self.nodes.get(name)
        if info is not None:
            return self.update_node(node)
        info = NodeInfo.from_node(node)
        self.nodes[name] = info
        zone = zone_key(info.labels)
        self._zones.setdefault(zone, []).append(name)
        self._node_zone[name] = zone
        for pod in self._orphans.pop(name, {}).values():
            info.add_pod(pod)
        self._count_images(info, 1)
        self._order_dirty = True
        self._node_journal.bound = _node_journal_bound(len(self.nodes))
        self._node_journal.note(name)
        return info

    def update_node(self, node: Obj) -> NodeInfo:
        name = node["metadata"]["name"]
        info = self.nodes[name]
        self._count_images(info, -1)
        info.set_node(node)
        self._node_journal.note(name)
        self._count_images(info, 1)
        zone = zone_key(info.labels)
        if zone != self._node_zone[name]:
            self._remove_from_zone(name)
            self._zones.setdefault(zone, []).append(name)
            self._node_zone[name] = zone
            self._order_dirty = True
        elif not self._order_dirty:
            self.table.set_node(info)
        return info

    def remove_node(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        info = self.nodes.pop(name, None)
        if info is None:
            return
        self._count_images(info, -1)
        self._remove_from_zone(name)
        if info.pods:
            self._orphans[name] = {p.uid: p for p in info.pods}
        self._order_dirty = True
        self._node_journal.bound = _node_journal_bound(len(self.nodes))
        self._node_journal.note(name)

    def _remove_from_zone(self, name: str) -> None:
        zone = self._node_zone.pop(name)
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def _count_images(self, info: NodeInfo, sign: int) -> None:
        for image, size in info.images.items():
            count = self._image_nodes.get(image, 0) + sign
            if count > 0:
                self._image_nodes[image] = count
                self._image_sizes.setdefault(image, size)
            else:
                self._image_nodes.pop(image, None)
                self._image_sizes.pop(image, None)

    # -- pods ------------------------------------------------------------------------------
    def _place(self, pod: PodInfo, node_name: str) -> None:
        self._pods[pod.uid] = (pod, node_name)
        info = self.nodes.get(node_name)
        if info is None:
            self._orphans.setdefault(node_name, {})[pod.uid] = pod
            return
        info.add_pod(pod)
        self._node_journal.note(node_name)
        self._touch(info, pod, 1)

    def _unplace(self, uid: str) -> PodInfo | None:
        entry = self._pods.pop(uid, None)
        if entry is None:
            return None
        pod, node_name = entry
        info = self.nodes.get(node_name)
        if info is None:
            self._orphans.get(node_name, {}).pop(uid, None)
        else:
            info.remove_pod(pod)
            self._node_journal.note(node_name)
            self._touch(info, pod, -1)
        return pod

    def _touch(self, info: NodeInfo, pod: PodInfo, sign: int) -> None:
        if not self._order_dirty:
            self.table.set_usage(info)
            self.table.account_priority(info.index, pod.priority, pod.requests, sign)
        if pod.has_affinity or pod.has_required_anti_affinity:
            self._lists_dirty = True

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def pod_info(self, uid: str) -> PodInfo | None:
        entry = self._pods.get(uid)
        return entry[0] if entry else None

    def pod_node(self, uid: str) -> str | None:
        entry = self._pods.get(uid)
        return entry[1] if entry else None

    def assume(self, pod: PodInfo, node_name: str) -> None:
        self._place(pod, node_name)
        self._assumed.add(pod.uid)

    def forget(self, pod: PodInfo) -> None:
        if pod.uid in self._assumed:
            self._assumed.discard(pod.uid)
            self._unplace(pod.uid)

    def add_pod(self, pod: PodInfo) -> None:
        """A bound pod seen through the informer (confirms an assumed pod)."""
        self._assumed.discard(pod.uid)
        self._replace(pod)

    def update_pod(self, pod: PodInfo) -> None:
        self._replace(pod)

    def _replace(self, pod: PodInfo) -> None:
        """The pod's new version in place of the old (removed, then added: the node's pod order is
        upstream's). A version that counts the same on the same node (the binding confirming an
        assumed pod, a status change) leaves the node table as it is."""
        entry = self._pods.get(pod.uid)
        info = self.nodes.get(pod.node_name)
        if entry is not None and entry[1] == pod.node_name and info is not None and _counts_alike(entry[0], pod):
            info.remove_pod(entry[0])
            info.add_pod(pod)
            self._node_journal.note(pod.node_name)
            self._pods[pod.uid] = (pod, pod.node_name)
            return
        self._unplace(pod.uid)
        self._place(pod, pod.node_name)

    def remove_pod(self, pod: PodInfo) -> None:
        self._assumed.discard(pod.uid)
        self._unplace(pod.uid)
