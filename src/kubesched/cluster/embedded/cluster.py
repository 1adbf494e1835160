"""The embedded cluster: what an API server, its controllers and the kubelets would do, in-process.

It implements the :class:`~kubesched.k8s.objects.Cluster` protocol the scheduler talks to, on
top of an :class:`ObjectStore`, running admission on every create and driving simulated node agents
and controllers from the simulation's event loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.cluster.embedded.apiserver.admission import Admission
from kubesched.cluster.embedded.apiserver.store import ObjectStore
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.cluster.embedded.kubelet.nodeagent import NodeAgent
from kubesched.des.clock import EventLoop
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import ApiError, Obj, is_namespaced, key_of
from kubesched.k8s.timefmt import rfc3339
from kubesched.scheduler.ports import ClusterEventHandler


def _merge_conditions(old: list[Obj], new: list[Obj]) -> list[Obj]:
    merged = {c["type"]: c for c in old}
    order = [c["type"] for c in old]
    for cond in new:
        if cond["type"] not in merged:
            order.append(cond["type"])
        merged[cond["type"]] = cond
    return [merged[t] for t in order]


class EmbeddedCluster:
    def __init__(self, loop: EventLoop, log: EventLog, rng: np.random.Generator) -> None:
        self.loop = loop
        self.log = log
        self.rng = rng
        self.store = ObjectStore(loop.now)
        self.admission = Admission(self.store)
        self.node_agent = NodeAgent(self)
        self.store.watch(_Timeline(self))
        self.controllers: list[Any] = []
        self.settings: dict[str, Any] = {}
        self.subsystems: dict[str, Any] = {}

    def configure(self, settings: dict[str, Any]) -> None:
        """Apply a Scenario's ``spec.cluster`` (validated by the loader): admission settings and the
        optional subsystems (kubelet eviction, cluster autoscaler, NUMA topology)."""
        from kubesched.cluster.embedded.subsystems import factory

        self.settings = settings
        admission = settings.get("admission") or {}
        if admission.get("limitedResources"):
            self.admission.limited_resources = list(admission["limitedResources"])
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

    # -- Cluster protocol: reading ---------------------------------------------------------
    def now(self) -> float:
        return self.loop.now()

    def watch(self, handler: ClusterEventHandler) -> None:
        self.store.watch(handler)

    def list(self, kind: str) -> list[Obj]:
        return self.store.list(kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.store.get(kind, namespace, name)

    # -- user / controller writes ----------------------------------------------------------
    def create(self, obj: Obj) -> Obj | None:
        """Create through admission. A refused object is logged as rejected and ``None`` returned."""
        obj = deep_copy(obj)
        kind = obj["kind"]
        meta = obj.setdefault("metadata", {})
        if is_namespaced(kind):
            meta.setdefault("namespace", "default")
            self._ensure_namespace(meta["namespace"])
        try:
            admitted = self.admission.admit_create(obj, self.now())
            if kind == "Pod":
                # logged at the API call (not at watch delivery), in order with any rejection
                self.log.record("Created", key_of(admitted))
            return self.store.create(admitted)
        except ApiError as err:
            self.log.reject(kind, key_of(obj), err.code, err.message)
            return None

    def _ensure_namespace(self, namespace: str) -> None:
        if self.store.get("Namespace", None, namespace) is None:
            self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    def patch(self, kind: str, namespace: str | None, name: str, merge: Obj) -> Obj:
        return self.store.patch(kind, namespace, name, merge)

    def update(self, obj: Obj) -> Obj:
        return self.store.update(obj)

    def delete(self, kind: str, namespace: str | None, name: str, grace: int | None = None) -> None:
        if kind == "Pod":
            pod = self.store.get("Pod", namespace, name)
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            self.node_agent.delete_pod(pod, grace)
        else:
            self.store.remove(kind, namespace, name)

    # -- Cluster protocol: scheduler actions -----------------------------------------------
    def bind(self, pod: Obj, node_name: str) -> None:
        meta = pod["metadata"]
        current = self.store.get("Pod", meta.get("namespace"), meta["name"])
        if current is None or current["metadata"].get("uid") != meta.get("uid"):
            raise ApiError(404, "NotFound", f'pods "{meta["name"]}" not found')
        if (current.get("spec") or {}).get("nodeName"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{meta["name"]}": '
                           f'pod {meta["name"]} is already assigned to node "{current["spec"]["nodeName"]}"')
        if (current.get("spec") or {}).get("schedulingGates"):
            raise ApiError(403, "Forbidden", "pod has scheduling gates")
        if self.store.get("Node", None, node_name) is None:
            raise ApiError(404, "NotFound", f'nodes "{node_name}" not found')
        new = dict(current)
        new["spec"] = dict(current.get("spec") or {})
        new["spec"]["nodeName"] = node_name
        status = dict(current.get("status") or {})
        status["conditions"] = _merge_conditions(
            status.get("conditions") or [],
            [{"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(self.now())}],
        )
        new["status"] = status
        self.store.update(new)  # the node agent starts the pod when it sees the binding

    def patch_pod_status(self, pod: Obj, status_patch: Obj) -> None:
        meta = pod["metadata"]
        current = self.store.get("Pod", meta.get("namespace"), meta["name"])
        if current is None or current["metadata"].get("uid") != meta.get("uid"):
            raise ApiError(404, "NotFound", f'pods "{meta["name"]}" not found')
        status = dict(current.get("status") or {})
        changed = False
        for key, value in status_patch.items():
            if key == "conditions":
                merged = _merge_conditions(status.get("conditions") or [], value)
                if merged != status.get("conditions"):
                    status["conditions"] = merged
                    changed = True
            elif value is None or value == "":
                if key in status:
                    del status[key]
                    changed = True
            elif status.get(key) != value:
                status[key] = value
                changed = True
        if changed:
            new = dict(current)
            new["status"] = status
            self.store.update(new)

    def delete_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        current = self.store.get("Pod", meta.get("namespace"), meta["name"])
        if current is None or current["metadata"].get("uid") != meta.get("uid"):
            raise ApiError(404, "NotFound", f'pods "{meta["name"]}" not found')
        self.node_agent.delete_pod(current, None)

    def record_event(
        self, obj: Obj, *, type: str, reason: str, action: str, note: str, related: Obj | None = None
    ) -> None:
        fields: dict[str, Any] = {}
        spec = obj.get("spec") or {}
        if reason == "Scheduled":
            fields["node"] = _node_from_note(note)
        elif reason == "Preempted":
            fields["node"] = spec.get("nodeName")
            if related is not None:
                fields["preemptor"] = key_of(related)
            fields["message"] = note
        else:
            fields["message"] = note
        self.log.record(reason, key_of(obj), **fields)


def _node_from_note(note: str) -> str:
    return note.rsplit(" to ", 1)[-1]


class _Timeline:
    """Turns store changes into the result's lifecycle events (Created, Nominated, Deleted, ...)."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            nominated = (obj.get("status") or {}).get("nominatedNodeName")
            if nominated:
                self.cluster.log.record("Nominated", key_of(obj), node=nominated)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind != "Pod":
            return
        before = (old.get("status") or {}).get("nominatedNodeName") or None
        after = (new.get("status") or {}).get("nominatedNodeName") or None
        if before != after:
            self.cluster.log.record("Nominated", key_of(new), node=after)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self.cluster.log.record("Deleted", key_of(obj), node=(obj.get("spec") or {}).get("nodeName"))
