"""The embedded cluster: what an API server, its controllers and the kubelets would do, in-process.

It implements the :class:`~kubesched.scheduler.ports.Cluster` port the scheduler talks to. Its parts:

- ``api``: the :class:`~kubesched.cluster.embedded.apiserver.server.ApiServer`, the only holder of
  the object store; every read and write of every part goes through it;
- ``node_agent``: the simulated kubelets (:mod:`kubesched.cluster.embedded.kubelet`), which take
  admission and lifecycle hooks from the optional subsystems;
- ``controllers`` (:mod:`kubesched.cluster.embedded.controllers`) and ``subsystems``
  (:mod:`kubesched.cluster.embedded.subsystems`: eviction, autoscaler, NUMA topology);
- ``log``: the timeline of the run (creations and refusals as the API server answered them, and
  the lifecycle events the parts record).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from kubesched.cluster.embedded.apiserver.eviction import admit_eviction
from kubesched.cluster.embedded.apiserver.server import ApiServer
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.cluster.embedded.kubelet.nodeagent import NodeAgent
from kubesched.cluster.embedded.subsystems import factory
from kubesched.des.clock import EventLoop
from kubesched.k8s.kinds import resource_name
from kubesched.k8s.objects import ApiError, Obj, key_of
from kubesched.scheduler.ports import ClusterEventHandler, T


class EmbeddedCluster:
    def __init__(self, loop: EventLoop, log: EventLog, rng: np.random.Generator) -> None:
        self.loop = loop
        self.log = log
        self.rng = rng
        self.api = ApiServer(loop.now)
        self.node_agent = NodeAgent(self)
        self._timeline = _Timeline(log)
        self.api.watch(self._timeline)
        self.controllers: list[Any] = []
        #: True while a snapshot's objects are being restored (see :meth:`restore_all`)
        self.restoring = False
        self.settings: dict[str, Any] = {}
        self.subsystems: dict[str, Any] = {}

    def configure(self, settings: dict[str, Any]) -> None:
        """Apply a Scenario's ``spec.cluster`` (validated by the loader): admission settings and the
        optional subsystems (kubelet eviction, cluster autoscaler, NUMA topology)."""
        self.settings = settings
        admission = settings.get("admission") or {}
        if admission.get("limitedResources"):
            self.api.admission.limited_resources = list(admission["limitedResources"])
        for key, section in settings.items():
            start = factory(key)
            if start is not None:
                self.subsystems[key] = start(self, section or {})

    def subsystem_reports(self) -> dict[str, Any]:
        reports = {}
        for key, subsystem in self.subsystems.items():
            report = getattr(subsystem, "report", None)
            if report is not None:
                reports[key] = report()
        return reports

    def start_controllers(self) -> None:
        from kubesched.cluster.embedded.controllers import start_controllers

        self.controllers = start_controllers(self)

    # -- Cluster port: reading -------------------------------------------------------------------
    def now(self) -> float:
        return self.loop.now()

    def watch(self, handler: ClusterEventHandler) -> None:
        self.api.watch(handler)

    def list(self, kind: str) -> list[Obj]:
        return self.api.list(kind)

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        return self.api.get(kind, namespace, name)

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        return self.api.changes(kind, since)

    # -- user / controller writes ----------------------------------------------------------------
    def create(self, obj: Obj) -> Obj | None:
        """Create through admission. A refused object is logged as rejected and ``None`` returned."""
        try:
            return self.api.create(obj, audit=self._timeline)
        except ApiError:
            return None

    def restore(self, obj: Obj) -> Obj | None:
        """Restore an object of a snapshot (it exists already: no admission). A refused object (a
        duplicate) is logged as rejected and ``None`` returned, as are the API server's own objects."""
        try:
            return self.api.restore(obj, audit=self._timeline)
        except ApiError:
            return None

    def restore_all(self, objects: Iterable[Obj]) -> None:
        """Restore a snapshot's objects, then tell the controllers that hold back while the cluster
        is only partly there (a volume whose claim comes later is not released) to catch up."""
        self.restoring = True
        try:
            for obj in objects:
                self.restore(obj)
        finally:
            self.restoring = False
        for controller in self.controllers:
            caught_up = getattr(controller, "after_restore", None)
            if caught_up is not None:
                caught_up()

    def evict(self, namespace: str, name: str, grace: int | None = None) -> None:
        """``pods/eviction``: refused with an :class:`ApiError` (429 while a PodDisruptionBudget
        allows no disruption), otherwise the pod is deleted gracefully."""
        pod = admit_eviction(self.api, namespace, name, self.now())
        self.node_agent.delete_pod(pod, grace)

    def patch(self, kind: str, namespace: str | None, name: str, merge: Obj) -> Obj:
        return self.api.patch(kind, namespace, name, merge)

    def update(self, obj: Obj) -> Obj:
        """PUT: replace the stored object; 409 when ``obj``'s resourceVersion is not the stored
        one (an optimistic-concurrency conflict), 404 when there is none."""
        kind, meta = obj["kind"], obj.get("metadata") or {}
        current = self.api.get(kind, meta.get("namespace"), meta["name"])
        if current is None:
            raise ApiError(404, "NotFound", f'{resource_name(kind)} "{meta["name"]}" not found')
        if meta.get("resourceVersion") and meta["resourceVersion"] != current["metadata"].get("resourceVersion"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource_name(kind)} "{meta["name"]}": '
                           "the object has been modified; please apply your changes to the latest version and "
                           "try again")
        return self.api.update(obj)

    def delete(self, kind: str, namespace: str | None, name: str, grace: int | None = None) -> None:
        if kind == "Pod":
            pod = self.api.get("Pod", namespace, name)
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            self.node_agent.delete_pod(pod, grace)
        else:
            self.api.delete(kind, namespace, name)

    # -- Cluster port: scheduler actions ---------------------------------------------------------
    def bind(self, pod: Obj, node_name: str) -> None:
        self.api.bind(pod, node_name)  # the node agent starts the pod when it sees the binding

    def call_all(self, calls: Sequence[Callable[[], T]]) -> builtins.list[T]:
        """One after another: the simulation is deterministic."""
        return [call() for call in calls]

    def patch_pod_status(self, pod: Obj, status_patch: Obj, *, wait: bool = True) -> None:
        self.api.patch_pod_status(pod, status_patch)  # at once either way: a simulation never waits

    def delete_pod(self, pod: Obj) -> None:
        self.node_agent.delete_pod(self.api.current(pod), None)

    def record_event(
        self,
        obj: Obj,
        *,
        type: str,
        reason: str,
        action: str,
        note: str,
        related: Obj | None = None,
        node: str | None = None,
        reporter: str | None = None,
    ) -> None:
        """An event about ``obj`` in the timeline. ``node``: the node the event is about; when the
        caller does not give it, a ``Scheduled`` event takes the node the pod is bound to and a
        ``Preempted`` one the victim's node. ``reporter``: the scheduler that records it, when
        several race (the event's ``scheduler`` field)."""
        fields: dict[str, Any] = {} if reporter is None else {"scheduler": reporter}
        if reason == "Scheduled":
            fields["node"] = node if node is not None else self._bound_node(obj)
        elif reason == "Preempted":
            fields["node"] = node if node is not None else (obj.get("spec") or {}).get("nodeName")
            if related is not None:
                fields["preemptor"] = key_of(related)
            fields["message"] = note
        else:
            fields["message"] = note
        self.log.record(reason, key_of(obj), **fields)

    def _bound_node(self, pod: Obj) -> str | None:
        """The node ``pod`` is bound to: as stored (the scheduler reports a binding right after it
        was written), else as the given object says."""
        meta = pod["metadata"]
        stored = self.api.get("Pod", meta.get("namespace"), meta["name"])
        if stored is not None and stored["metadata"].get("uid") == meta.get("uid"):
            pod = stored
        return (pod.get("spec") or {}).get("nodeName")


class _Timeline:
    """The run's timeline as the API server sees it: pod creations and refused creates (told by
    the API server's create), and the lifecycle events of store changes (Nominated, Deleted)."""

    def __init__(self, log: EventLog) -> None:
        self.log = log

    # -- create audit: logged at the API call (not at watch delivery), in order with refusals ----
    def admitted(self, obj: Obj) -> None:
        if obj["kind"] == "Pod":
            self.log.record("Created", key_of(obj))

    def refused(self, obj: Obj, err: ApiError) -> None:
        self.log.reject(obj["kind"], key_of(obj), err.code, err.message)

    # -- watch -----------------------------------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            nominated = (obj.get("status") or {}).get("nominatedNodeName")
            if nominated:
                self.log.record("Nominated", key_of(obj), node=nominated)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind != "Pod":
            return
        before = (old.get("status") or {}).get("nominatedNodeName") or None
        after = (new.get("status") or {}).get("nominatedNodeName") or None
        if before != after:
            self.log.record("Nominated", key_of(new), node=after)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self.log.record("Deleted", key_of(obj), node=(obj.get("spec") or {}).get("nodeName"))
