"""A fake framework handle and snapshot for plugin unit tests.

Node and pod objects become ``NodeInfo``/``PodInfo`` through the real code (``NodeInfo.from_node``,
``PodInfo.from_pod``, or a real :class:`~kubesched.scheduler.cache.Cache`); the handle around them
answers what plugins ask the framework (the
:class:`~kubesched.scheduler.framework.interface.Handle` protocol, upstream ``framework.Handle``):
the snapshot, objects of a kind, namespace labels, the clock and the random source, the cluster
(a :class:`FakeCluster` over the same objects), and what preemption uses (nominator, metrics, the
framework's runner, the decision records).
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.capabilities import PluginsRunner
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.metrics import Metrics
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.ports import Cluster, ClusterEventHandler, T
from kubesched.scheduler.queue import Nominator

if TYPE_CHECKING:
    from kubesched.scheduler.framework.candidates import PreemptionRecord
    from kubesched.scheduler.framework.extender import Extender
    from kubesched.scheduler.framework.interface import Handle
    from kubesched.scheduler.framework.waiting import WaitingPod

Obj = dict[str, Any]


def pod_info(pod: Obj | PodInfo) -> PodInfo:
    return pod if isinstance(pod, PodInfo) else PodInfo.from_pod(pod)


def node_info(node: Obj, *pods: Obj | PodInfo) -> NodeInfo:
    """A NodeInfo for ``node`` holding ``pods`` (whatever their nodeName says)."""
    info = NodeInfo.from_node(node)
    for p in pods:
        info.add_pod(pod_info(p))
    return info


def cache_of(nodes: Iterable[Obj], pods: Iterable[Obj] = ()) -> Cache:
    """A scheduler cache holding ``nodes`` and the bound ``pods``, snapshot taken."""
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(PodInfo.from_pod(p))
    cache.update_snapshot()
    return cache


class NodeListSnapshot:
    """A snapshot over NodeInfos kept in the order given (the cache orders nodes by zone). Its node
    table is built when first read (which numbers the NodeInfos in that order)."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self._nodes = nodes
        self._table: NodeTable | None = None

    @property
    def node_infos(self) -> list[NodeInfo]:
        return self._nodes

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]:
        return [n for n in self._nodes if n.pods_with_affinity]

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        return [n for n in self._nodes if n.pods_with_required_anti_affinity]

    def get(self, node_name: str) -> NodeInfo | None:
        return next((n for n in self._nodes if n.name == node_name), None)

    def node_changes(self, since: int | None) -> tuple[int, list[str] | None]:
        """Never told: tests change the NodeInfos directly."""
        return 0, None

    def image_num_nodes(self, image: str) -> int:
        return sum(1 for n in self._nodes if image in n.images)

    def is_pvc_used(self, key: str) -> bool:
        return any(key in pod.pvc_refs for n in self._nodes for pod in n.pods)

    @property
    def table(self) -> NodeTable:
        if self._table is None:
            self._table = NodeTable()
            self._table.rebuild(self._nodes)
        return self._table


class FakeCluster:
    """The scheduler's cluster port over fixed objects: reads answer from ``objects`` (kind -> list,
    shared with the :class:`FakeHandle`), writes change nothing and are kept in ``writes`` as
    ``(verb, object, detail)`` in call order."""

    def __init__(self, objects: dict[str, list[Obj]], clock: Callable[[], float]) -> None:
        self.objects = objects
        self._clock = clock
        self.writes: list[tuple[str, Obj, Any]] = []

    def now(self) -> float:
        return self._clock()

    def watch(self, handler: ClusterEventHandler) -> None:
        pass

    def list(self, kind: str) -> list[Obj]:
        return list(self.objects.get(kind, ()))

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The object of that name; ``namespace`` is checked when given (pods without one are in
        ``default``)."""
        for obj in self.objects.get(kind, ()):
            meta = obj["metadata"]
            if meta["name"] == name and (not namespace or (meta.get("namespace") or "default") == namespace):
                return obj
        return None

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        """Never told: tests change ``objects`` directly, so readers read everything every time."""
        return 0, None

    def bind(self, pod: Obj, node_name: str) -> None:
        self.writes.append(("bind", pod, node_name))

    def update(self, obj: Obj) -> Obj:
        self.writes.append(("update", obj, None))
        return obj

    def call_all(self, calls: Sequence[Callable[[], T]]) -> builtins.list[T]:
        return [call() for call in calls]

    def patch_pod_status(self, pod: Obj, status_patch: Obj, *, wait: bool = True) -> None:
        self.writes.append(("patch_pod_status", pod, status_patch))

    def delete_pod(self, pod: Obj) -> None:
        self.writes.append(("delete_pod", pod, None))

    def record_event(self, obj: Obj, *, type: str, reason: str, action: str, note: str,
                     related: Obj | None = None, node: str | None = None) -> None:
        self.writes.append(("record_event", obj, {"type": type, "reason": reason, "action": action,
                                                  "note": note, "related": related, "node": node}))


class FakeHandle:
    """A framework handle for one plugin under test.

    ``nodes`` is a snapshot (a :class:`Cache` from :func:`cache_of`, say) or a list of NodeInfos,
    shown in that order and read afresh on every ``snapshot()``. ``objects`` maps a kind to what
    ``list(kind)`` returns; ``namespaces`` maps a namespace to its labels. ``time`` is what
    ``now()`` returns. ``framework`` is the runner a preemption plugin's dry runs use (given here or
    set later; asking for it before fails the test). ``cluster`` defaults to a :class:`FakeCluster` over
    ``objects``. Preemption records go to ``preemptions``. ``scheduler_name`` is the profile's name;
``shared`` holds the sets the profiles of one scheduler share (``shared_set``).
    """

    def __init__(self, nodes: NodeTableSnapshot | list[NodeInfo] | None = None, *,
                 objects: Mapping[str, list[Obj]] | None = None,
                 namespaces: Mapping[str, dict[str, str]] | None = None, time: float = 0.0, seed: int = 0,
                 framework: PluginsRunner | None = None, cluster: Cluster | None = None,
                 scheduler_name: str = "default-scheduler", shared: dict[str, set[str]] | None = None) -> None:
        self.nodes: NodeTableSnapshot | list[NodeInfo] = nodes if nodes is not None else []
        self.objects: dict[str, list[Obj]] = dict(objects or {})
        self.namespaces: dict[str, dict[str, str]] = dict(namespaces or {})
        self.time = time
        self._rng = np.random.default_rng(seed)
        self._framework = framework
        self._cluster: Cluster = cluster if cluster is not None else FakeCluster(self.objects, self.now)
        self.metrics = Metrics()
        self.nominator = Nominator(lambda pod: True)
        self.preemptions: list[PreemptionRecord] = []
        self.keep_all_candidates = False
        self.keep_rejected_nodes = True
        #: pods held at Permit, by uid (tests put them here)
        self.waiting: dict[str, WaitingPod] = {}
        self.scheduler_name = scheduler_name
        #: what ``shared_set`` answers from (give the same dict to handles of one scheduler's profiles)
        self.shared: dict[str, set[str]] = shared if shared is not None else {}
        self._generations = itertools.count()
        #: the feature gates that are on (``feature_enabled``)
        self.features: dict[str, bool] = {}
        #: the pods plugins asked to activate, in order
        self.activated: list[PodInfo] = []

    def snapshot(self) -> NodeTableSnapshot:
        return NodeListSnapshot(self.nodes) if isinstance(self.nodes, list) else self.nodes

    def list(self, kind: str) -> list[Obj]:
        return self._cluster.list(kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._cluster.get(kind, namespace, name)

    def generation(self, kind: str) -> int:
        """A new value on every call: tests change ``objects`` directly, so no cache may hold."""
        return next(self._generations)

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        return self._cluster.changes(kind, since)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self.namespaces.get(namespace, {})

    def now(self) -> float:
        return self.time

    def shared_set(self, key: str) -> builtins.set[str]:
        return self.shared.setdefault(key, set())

    @property
    def rng(self) -> np.random.Generator:
        return self._rng

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def framework(self) -> PluginsRunner:
        assert self._framework is not None, "FakeHandle(framework=...) was not given"
        return self._framework

    @framework.setter
    def framework(self, runner: PluginsRunner) -> None:
        """Set once the framework of the plugins built on this handle exists (as the scheduler does)."""
        self._framework = runner

    def current_pod(self, pod: PodInfo) -> PodInfo | None:
        return pod

    def waiting_pods(self) -> builtins.list[WaitingPod]:
        return list(self.waiting.values())

    def extenders(self) -> builtins.list[Extender]:
        return []

    def record_preemption(self, record: PreemptionRecord) -> None:
        self.preemptions.append(record)

    def feature_enabled(self, name: str) -> bool:
        return self.features.get(name, False)

    def activate(self, pods: builtins.list[PodInfo]) -> None:
        self.activated.extend(pods)

    def run_detached(self, work: Callable[[], str | None], then: Callable[[str | None], None]) -> None:
        then(work())  # at once, as a simulation runs it



if TYPE_CHECKING:  # mypy checks here that FakeHandle is a framework Handle
    _FAKE_HANDLE_IS_A_HANDLE: type[Handle] = FakeHandle
