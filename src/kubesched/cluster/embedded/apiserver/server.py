"""The embedded API server: every read and write of the embedded cluster's objects passes here.

Upstream only the API server talks to etcd; here only :class:`ApiServer` holds the
:class:`~kubesched.cluster.embedded.apiserver.store.ObjectStore`. Controllers, the simulated
kubelets, the autoscaler and the scheduler-facing :class:`EmbeddedCluster` read through
:meth:`get` / :meth:`list` / :meth:`iter` / :meth:`watch` and write through the verbs below, each
doing what the real API server does for it:

- :meth:`create`: the namespace is defaulted (and created when missing, as the
  ``NamespaceAutoProvision`` admission plugin does), then the admission chain of
  :mod:`~kubesched.cluster.embedded.apiserver.admission` runs (defaulting, priority, default
  tolerations, resource quota) before the object is stored;
- :meth:`restore`: an object of a snapshot, which already exists, is stored as it is (no admission);
- :meth:`bind` (``pods/binding``): the pod must still exist with the same uid, be unassigned and
  ungated, and the node must exist; the pod gets ``spec.nodeName`` and ``PodScheduled=True``;
- :meth:`patch_pod_status` (``pods/status``): conditions merged by type, an empty value removes a
  field; nothing is written when nothing changes;
- :meth:`update` and :meth:`patch`: stored as they are (the simulator has no admission plugin that
  acts on updates);
- :meth:`delete`: the object is removed at once. Graceful pod deletion is carried out by the
  simulated kubelet (:meth:`NodeAgent.delete_pod
  <kubesched.cluster.embedded.kubelet.nodeagent.NodeAgent.delete_pod>`): it writes the
  ``deletionTimestamp`` through :meth:`update` and removes the pod through :meth:`delete` once its
  containers have stopped, which keeps the timeline's order of events where the kubelet acts.

The eviction subresource's decision (PodDisruptionBudgets) is :func:`~kubesched.cluster.embedded.apiserver.eviction.admit_eviction`;
drains (:mod:`~kubesched.cluster.embedded.drain`) go through it, while the autoscaler's scale-down and
preemption delete pods.

One write skips an admission step the real API server would run; it is named
:meth:`rewrite_created_pod` and says why.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Hashable, Iterator
from typing import Protocol

from kubesched.cluster.embedded.apiserver.admission import (
    SYSTEM_PRIORITY_CLASSES,
    Admission,
    ensure_system_priority_classes,
)
from kubesched.cluster.embedded.apiserver.store import IndexFunc, ObjectStore
from kubesched.k8s.kinds import is_namespaced, resource_name
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, ApiError, Obj
from kubesched.k8s.timefmt import rfc3339
from kubesched.scheduler.ports import ClusterEventHandler


class CreateAudit(Protocol):
    """Told about one create request: after admission, just before the object is stored, or when
    the request is refused (with the namespace-defaulted object)."""

    def admitted(self, obj: Obj) -> None: ...

    def refused(self, obj: Obj, err: ApiError) -> None: ...


def merge_conditions(old: list[Obj], new: list[Obj]) -> list[Obj]:
    """Conditions merged by ``type``: a new one replaces the old of its type in place, others are
    appended in their order."""
    merged = {c["type"]: c for c in old}
    order = [c["type"] for c in old]
    for cond in new:
        if cond["type"] not in merged:
            order.append(cond["type"])
        merged[cond["type"]] = cond
    return [merged[t] for t in order]


class ApiServer:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._store = ObjectStore(clock)
        self.admission = Admission(self._store)

    # -- reading ---------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        return self._store.get(kind, namespace, name)

    def list(self, kind: str) -> list[Obj]:
        return self._store.list(kind)

    def iter(self, kind: str) -> Iterator[Obj]:
        return self._store.iter(kind)

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        return self._store.changes(kind, since)

    def add_index(self, kind: str, name: str, values: IndexFunc) -> None:
        self._store.add_index(kind, name, values)

    def by_index(self, kind: str, name: str, value: Hashable) -> builtins.list[Obj]:
        return self._store.by_index(kind, name, value)

    def watch(self, handler: ClusterEventHandler) -> None:
        """Deliver every later change to ``handler`` (in registration order, see the store)."""
        self._store.watch(handler)

    @property
    def resource_version(self) -> int:
        return self._store.resource_version

    def current(self, pod: Obj) -> Obj:
        """The stored version of ``pod``; 404 if it is gone or was replaced (a uid precondition)."""
        meta = pod["metadata"]
        stored = self._store.get("Pod", meta.get("namespace"), meta["name"])
        if stored is None or stored["metadata"].get("uid") != meta.get("uid"):
            raise ApiError(404, "NotFound", f'pods "{meta["name"]}" not found')
        return stored

    # -- create ----------------------------------------------------------------------------------
    def create(self, obj: Obj, audit: CreateAudit | None = None) -> Obj:
        """Admit and store a copy of ``obj``; raises :class:`ApiError` when it is refused."""
        obj, kind, meta = self._incoming(obj)
        try:
            admitted = self.admission.admit_create(obj, self._clock())
            if audit is not None:
                audit.admitted(admitted)
            return self._store.create(admitted)
        except ApiError as err:
            if audit is not None:
                audit.refused(obj, err)
            raise

    def restore(self, obj: Obj, audit: CreateAudit | None = None) -> Obj | None:
        """Store an object that already exists in the cluster a snapshot was taken of (it carries its
        uid, timestamps and status): no admission runs again. A pod without ``spec.priority`` gets the
        one its class gives (0 if the class is unknown). Objects the API server made itself are kept
        as they are (``None`` is returned): the two ``system-`` PriorityClasses, and a Namespace
        created implicitly before its own document came (its labels are taken over). The store
        takes ``obj`` itself, not a copy: the caller hands it over (a snapshot's objects are
        copied, or not, once, when the simulation's plan is made)."""
        obj, kind, meta = self._incoming(obj, copy=False)
        ns = meta.get("namespace") if is_namespaced(kind) else None
        present = self._store.get(kind, ns, meta["name"])
        if present is not None and kind == "PriorityClass" and meta["name"] in SYSTEM_PRIORITY_CLASSES:
            return None
        if present is not None and kind == "Namespace":
            self._store.update({**present, "metadata": {**present["metadata"], "labels": meta.get("labels") or {}}})
            return None
        try:
            if present is not None:
                raise ApiError(409, "AlreadyExists", f'{resource_name(kind)} "{meta["name"]}" already exists')
            if kind == "Pod":
                self.admission.restore_priority(obj)
        except ApiError as err:
            if audit is not None:
                audit.refused(obj, err)
            raise
        if audit is not None:
            audit.admitted(obj)
        return self._store.create(obj)

    def _incoming(self, obj: Obj, copy: bool = True) -> tuple[Obj, str, Obj]:
        """A new object (a copy of it, unless ``copy`` is False), its kind and metadata; its namespace
        defaulted and made to exist."""
        if copy:
            obj = deep_copy(obj)
        kind = obj["kind"]
        meta = obj.setdefault("metadata", {})
        if is_namespaced(kind):
            meta.setdefault("namespace", DEFAULT_NAMESPACE)
            self._ensure_namespace(meta["namespace"])
        return obj, kind, meta

    def _ensure_namespace(self, namespace: str) -> None:
        if self._store.get("Namespace", None, namespace) is None:
            self._store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    # -- update, patch, delete -------------------------------------------------------------------
    def update(self, obj: Obj) -> Obj:
        return self._store.update(obj)

    def patch(self, kind: str, namespace: str | None, name: str, merge: Obj) -> Obj:
        """RFC 7386 merge patch."""
        return self._store.patch(kind, namespace, name, merge)

    def delete(self, kind: str, namespace: str | None, name: str) -> Obj:
        """Remove the object now; returns it as it was."""
        return self._store.remove(kind, namespace, name)

    def rewrite_created_pod(self, pod: Obj) -> Obj:
        """Store ``pod`` rewritten by a mutating hook right after it was created (the kubelet's
        ping-pong avoidance). A real mutating admission webhook changes the pod before it is
        stored; here the rewrite is an update made while the pod's ADDED event is delivered, so
        watchers registered after the hook see the pod first as created, then as rewritten. Doing it
        at admission would change what those watchers see and when, so it stays an update."""
        return self._store.update(pod)

    # -- pods: binding and status ----------------------------------------------------------------
    def bind(self, pod: Obj, node_name: str) -> Obj:
        """``pods/binding``: assign ``pod`` to ``node_name``; returns the bound pod."""
        current = self.current(pod)
        name = current["metadata"]["name"]
        spec = current.get("spec") or {}
        if spec.get("nodeName"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": '
                           f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if spec.get("schedulingGates"):
            raise ApiError(403, "Forbidden", "pod has scheduling gates")
        if self._store.get("Node", None, node_name) is None:
            raise ApiError(404, "NotFound", f'nodes "{node_name}" not found')
        new = dict(current)
        new["spec"] = {**spec, "nodeName": node_name}
        status = dict(current.get("status") or {})
        status["conditions"] = merge_conditions(
            status.get("conditions") or [],
            [{"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(self._clock())}],
        )
        new["status"] = status
        return self._store.update(new)

    def patch_pod_status(self, pod: Obj, status_patch: Obj) -> Obj:
        """``pods/status`` patch: ``conditions`` merged by type, ``None`` or ``""`` removes a field.
        Returns the pod as stored afterwards (unchanged, and not written, if nothing changed)."""
        current = self.current(pod)
        status = dict(current.get("status") or {})
        changed = False
        for key, value in status_patch.items():
            if key == "conditions":
                merged = merge_conditions(status.get("conditions") or [], value)
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
        if not changed:
            return current
        return self._store.update({**current, "status": status})

    # -- resource quota bookkeeping --------------------------------------------------------------
    def take_quota_charge(self, namespace: str, name: str) -> bool:
        """Whether admission already charged the quotas for the pod ``namespace/name`` (whose ADDED
        event the quota controller now handles); the mark is used up."""
        key = (namespace, name)
        if key in self.admission.charged:
            self.admission.charged.discard(key)
            return True
        return False

    def forget_quota_charge(self, namespace: str, name: str) -> None:
        self.admission.charged.discard((namespace, name))

    # -- start-up --------------------------------------------------------------------------------
    def ensure_system_priority_classes(self) -> None:
        """Create the two ``system-`` PriorityClasses if missing, as the API server does when it
        starts (through admission, which accepts them)."""
        ensure_system_priority_classes(self)
