"""What plugins get from the scheduler: the upstream ``framework.Handle`` for one profile (the
protocol is :class:`~kubesched.scheduler.framework.interface.Handle`)."""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from kubesched.scheduler.binding import BindingMode
    from kubesched.scheduler.cache import Cache
    from kubesched.scheduler.framework.candidates import PreemptionRecord
    from kubesched.scheduler.framework.extender import Extender
    from kubesched.scheduler.framework.runtime import Framework
    from kubesched.scheduler.framework.waiting import WaitingPod
    from kubesched.scheduler.metrics import Metrics
    from kubesched.scheduler.ports import Cluster
    from kubesched.scheduler.records import Recorder
from kubesched.scheduler.queue import Nominator, SchedulingQueue


class HandleHost(Protocol):
    """What a profile's handle reads from the scheduler that owns it."""

    @property
    def cluster(self) -> Cluster: ...

    @property
    def cache(self) -> Cache: ...

    @property
    def queue(self) -> SchedulingQueue: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def rng(self) -> np.random.Generator: ...

    @property
    def metrics(self) -> Metrics: ...

    @property
    def records(self) -> Recorder: ...

    @property
    def generations(self) -> Counter[str]:
        """Per kind other than Node and Pod: how many changes the scheduler saw."""

    @property
    def shared_sets(self) -> dict[str, set[str]]: ...

    @property
    def features(self) -> dict[str, bool]:
        """The feature gates, each known one with its value."""

    @property
    def binding(self) -> BindingMode: ...


class ProfileHandle:
    def __init__(self, scheduler: HandleHost, scheduler_name: str) -> None:
        self._scheduler = scheduler
        self.scheduler_name = scheduler_name
        self.framework: Framework  # set once the profile's framework exists

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self) -> Cache:
        return self._scheduler.cache

    def list(self, kind: str) -> list[Obj]:
        return self._scheduler.cluster.list(kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._scheduler.cluster.get(kind, namespace, name)

    def generation(self, kind: str) -> int:
        return self._scheduler.generations[kind]

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        return self._scheduler.cluster.changes(kind, since)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self._scheduler.cluster.get("Namespace", "", namespace)
        if ns is None:
            return {}
        labels: dict[str, str] = dict((ns.get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def now(self) -> float:
        return self._scheduler.clock()

    def shared_set(self, key: str) -> builtins.set[str]:
        return self._scheduler.shared_sets.setdefault(key, set())

    @property
    def rng(self) -> np.random.Generator:
        return self._scheduler.rng

    @property
    def cluster(self) -> Cluster:
        return self._scheduler.cluster

    @property
    def nominator(self) -> Nominator:
        return self._scheduler.queue.nominator

    @property
    def metrics(self) -> Metrics:
        return self._scheduler.metrics

    def current_pod(self, pod: PodInfo) -> PodInfo | None:
        obj = self._scheduler.cluster.get("Pod", pod.namespace, pod.name)
        if obj is None:
            return None
        return PodInfo.from_pod(obj)

    @property
    def keep_all_candidates(self) -> bool:
        """Keep every preemption candidate in the records (when explanations were asked for)."""
        return self._scheduler.records.keep_attempts

    @property
    def keep_rejected_nodes(self) -> bool:
        return self._scheduler.records.keep_rejected

    def extenders(self) -> builtins.list[Extender]:
        return self.framework.extenders

    def waiting_pods(self) -> builtins.list[WaitingPod]:
        """Upstream ``IterateOverWaitingPods``: the pods this profile holds at Permit."""
        return list(self.framework.waiting_pods)

    def record_preemption(self, record: PreemptionRecord) -> None:
        self._scheduler.records.preemption(record)

    def feature_enabled(self, name: str) -> bool:
        return self._scheduler.features[name]

    def activate(self, pods: builtins.list[PodInfo]) -> None:
        self._scheduler.queue.activate(pods)

    def run_detached(self, work: Callable[[], str | None], then: Callable[[str | None], None]) -> None:
        """On the scheduler's binding mode, as a binding cycle whose outcome is an Error status."""

        def as_status() -> Status | None:
            error = work()
            return None if error is None else Status.error(error)

        self._scheduler.binding.submit(as_status, lambda status: then(None if status is None else status.message()))
