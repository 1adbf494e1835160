"""A fake framework handle and snapshot for plugin unit tests.

Node and pod objects become ``NodeInfo``/``PodInfo`` through the real code (``NodeInfo.from_node``,
``PodInfo.from_pod``, or a real :class:`~kubesched.scheduler.cache.Cache`); the handle around them
answers what plugins ask the framework (upstream ``framework.Handle``): the snapshot, objects of a
kind, namespace labels, the clock and the random source, plus what DefaultPreemption uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.interface import SnapshotView
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.metrics import Metrics
from kubesched.scheduler.queue import Nominator

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
    """A snapshot over NodeInfos kept in the order given (the cache orders nodes by zone)."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self._nodes = nodes

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

    def image_num_nodes(self, image: str) -> int:
        return sum(1 for n in self._nodes if image in n.images)


class FakeHandle:
    """A framework handle for one plugin under test.

    ``nodes`` is a snapshot (a :class:`Cache` from :func:`cache_of`, say) or a list of NodeInfos,
    shown in that order and read afresh on every ``snapshot()``. ``objects`` maps a kind to what
    ``list(kind)`` returns; ``namespaces`` maps a namespace to its labels. ``time`` is what
    ``now()`` returns. Preemption records go to ``preemptions``.
    """

    def __init__(self, nodes: SnapshotView | list[NodeInfo] | None = None, *,
                 objects: Mapping[str, list[Obj]] | None = None,
                 namespaces: Mapping[str, dict[str, str]] | None = None, time: float = 0.0, seed: int = 0,
                 framework: Any = None) -> None:
        self.nodes: SnapshotView | list[NodeInfo] = nodes if nodes is not None else []
        self.objects: dict[str, list[Obj]] = dict(objects or {})
        self.namespaces: dict[str, dict[str, str]] = dict(namespaces or {})
        self.time = time
        self._rng = np.random.default_rng(seed)
        self.framework = framework
        self.metrics = Metrics()
        self.nominator = Nominator(lambda pod: True)
        self.preemptions: list[Any] = []
        self.keep_all_candidates = False

    def snapshot(self) -> SnapshotView:
        return NodeListSnapshot(self.nodes) if isinstance(self.nodes, list) else self.nodes

    def list(self, kind: str) -> list[Obj]:
        return list(self.objects.get(kind, ()))

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self.namespaces.get(namespace, {})

    def now(self) -> float:
        return self.time

    @property
    def rng(self) -> np.random.Generator:
        return self._rng

    def current_pod(self, pod: PodInfo) -> PodInfo | None:
        return pod

    def record_preemption(self, record: Any) -> None:
        self.preemptions.append(record)
