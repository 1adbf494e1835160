"""Simulated kubelets: the pod lifecycle on the nodes (annotations described in docs/scenarios.md).

- A bound pod starts at once: phase Running, ``status.startTime`` = bind time — once the kubelet's
  own check (:mod:`~kubesched.cluster.embedded.kubelet.predicate`: it fits next to the node's running
  pods, its node affinity matches, its host ports are free) and the registered admit handlers let it
  in. A pod bound to a node that does not exist stays Pending: no kubelet runs it (the pod garbage
  collector deletes it). A pod that is already
  Running when it is created (restored from a snapshot) is running from then on, without admission.
- ``kubesched.io/run-for: D``: the pod succeeds D after it started.
- ``kubesched.io/barrier: N`` (with ``run-for``): the pod is one of N workers that only make progress
  together (a distributed job at its first collective step): its D starts counting once N pods of
  its group run — the group being its ``scheduling.x-k8s.io/pod-group`` label in its namespace, or
  else its controller. Until then it runs and holds its node, doing nothing.
- Deleting a running pod makes it Terminating for its grace period (``terminationGracePeriodSeconds``,
  default 30, or ``kubesched.io/exit-after`` if shorter); it keeps its node until it is gone.
  Unscheduled and terminal pods, and a grace period of 0, are removed at once.

Hooks (:mod:`kubesched.cluster.embedded.kubelet.lifecycle`): before a bound pod starts, each
registered pod admit handler may refuse it (the pod then fails ``KUBELET_REJECTION_DELAY`` later with
the handler's reason as ``status.reason``, message ``Pod was rejected: ...``, and an event of that
reason, as the kubelet's ``rejectPod`` records it); the registered lifecycle handlers hear when a pod starts and when a running
pod stops. Every write goes through the cluster's API server.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from kubesched.api.durations import parse_duration
from kubesched.cluster.embedded.kubelet.lifecycle import PodAdmitHandler, PodLifecycleHandler
from kubesched.cluster.embedded.kubelet.predicate import PredicateAdmitHandler
from kubesched.k8s.objects import POD_GROUP_LABEL, Obj, is_terminal, key_of
from kubesched.k8s.timefmt import parse_rfc3339, rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

RUN_FOR = "kubesched.io/run-for"
EXIT_AFTER = "kubesched.io/exit-after"
BARRIER = "kubesched.io/barrier"
DEFAULT_GRACE_SECONDS = 30
#: a pod the kubelet refuses (e.g. TopologyAffinityError) fails this long after it was bound: the
#: kubelet's pod worker takes a moment, and controllers' replacements then loop at a finite rate
KUBELET_REJECTION_DELAY = 1.0
#: the kubelet's status message of a pod it refused: this, then the admit handler's message
REJECTED_PREFIX = "Pod was rejected: "


def _barrier_group(pod: Obj) -> str | None:
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    group = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
    if group:
        return f"{ns}/group/{group}"
    owner = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
    return f"{ns}/owner/{owner.get('uid')}" if owner else None


def _annotation_seconds(pod: Obj, name: str) -> float | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(name)
    return None if value is None else parse_duration(value)


class NodeAgent:
    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        # the kubelet's own fit / node affinity / host port check comes first
        self._admit_handlers: list[PodAdmitHandler] = [PredicateAdmitHandler(self.api)]
        self._lifecycle_handlers: list[PodLifecycleHandler] = []
        #: workers waiting at a barrier, by group: uid -> (pod, its run-for)
        self._barriers: dict[str, dict[str, tuple[Obj, float]]] = {}
        self._passed: set[str] = set()  # groups whose barrier was passed
        self.api.watch(self)

    # -- hooks -------------------------------------------------------------------------------------
    def add_pod_admit_handler(self, handler: PodAdmitHandler) -> None:
        """Ask ``handler`` (after the ones registered before it) before a pod starts."""
        self._admit_handlers.append(handler)

    def add_lifecycle_handler(self, handler: PodLifecycleHandler) -> None:
        """Tell ``handler`` (after the ones registered before it) when pods start and stop."""
        self._lifecycle_handlers.append(handler)

    # -- watch handler: start pods that got a node -----------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod" and (obj.get("spec") or {}).get("nodeName"):
            self._start_soon(obj)
        elif kind == "Node":  # its kubelet registered: it starts the pods already bound to it
            name = obj["metadata"]["name"]
            for pod in sorted(self.api.iter("Pod"), key=key_of):
                if (pod.get("spec") or {}).get("nodeName") == name and (pod.get("status") or {}).get("phase") in (
                        None, "Pending"):
                    self._start_soon(pod)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod" and not (old.get("spec") or {}).get("nodeName") and (new.get("spec") or {}).get("nodeName"):
            self._start_soon(new)

    def _start_soon(self, pod: Obj) -> None:
        """The kubelet notices the pod right after the binding (same instant, after the scheduler)."""
        uid = pod["metadata"]["uid"]

        def start() -> None:
            current = self._current(pod, uid)
            if current is None:
                return
            deadline = current["metadata"].get("deletionTimestamp")
            if not deadline:
                self._start(current)
            elif (current.get("status") or {}).get("phase") == "Running":
                # restored while terminating: it runs until its grace period ends, then goes
                self._resume(current)
                wait = max(0.0, parse_rfc3339(deadline) - self.cluster.now())
                self.cluster.loop.call_later(wait, lambda: self._finish_termination(current, uid))

        self.cluster.loop.call_at(self.cluster.now(), start)

    def on_delete(self, kind: str, obj: Obj) -> None:
        pass

    def _start(self, pod: Obj) -> None:
        status = pod.get("status") or {}
        if is_terminal(pod):
            return
        if status.get("phase") == "Running":
            self._resume(pod)
            return
        node_name = pod["spec"]["nodeName"]
        node = self.api.get("Node", None, node_name)
        if node is None:
            return  # no such node, no kubelet: the pod stays Pending (until the pod GC collects it)
        for admitter in self._admit_handlers:
            result = admitter.admit(pod, node)
            if not result.admit:
                self.cluster.loop.call_later(
                    KUBELET_REJECTION_DELAY,
                    functools.partial(
                        self._reject, pod, pod["metadata"]["uid"], node_name, result.reason, result.message
                    ),
                )
                return
        now = self.cluster.now()
        new_status = dict(status)
        new_status["phase"] = "Running"
        new_status.setdefault("startTime", rfc3339(now))
        conditions = [c for c in new_status.get("conditions") or [] if c.get("type") != "Ready"]
        if not any(c.get("type") == "PodScheduled" for c in conditions):
            # a pod created with spec.nodeName never went through binding: the kubelet records it
            conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(now)})
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(now)})
        new_status["conditions"] = conditions
        new = dict(pod)
        new["status"] = new_status
        # logged before the update: watchers reacting to it (e.g. an OrderedReady StatefulSet
        # creating the next pod) then appear after it in the timeline
        self.cluster.log.record("Started", key_of(pod), node=pod["spec"]["nodeName"])
        self._running(self.api.update(new), node_name)

    def _resume(self, pod: Obj) -> None:
        """A pod that was already running when the simulation began (restored from a snapshot, or
        written with ``status.phase: Running``): its kubelet admitted it long ago, so it is not asked
        again; it is running from now on, as its managers and the timeline learn."""
        node_name = pod["spec"]["nodeName"]
        self.cluster.log.record("Started", key_of(pod), node=node_name)
        self._running(pod, node_name)

    def _running(self, started: Obj, node_name: str) -> None:
        for handler in self._lifecycle_handlers:
            handler.pod_started(started, node_name)
        run_for = _annotation_seconds(started, RUN_FOR)
        if run_for is None:
            return
        barrier = ((started.get("metadata") or {}).get("annotations") or {}).get(BARRIER)
        group = _barrier_group(started) if barrier else None
        if group is not None and barrier is not None and group not in self._passed:
            waiting = self._barriers.setdefault(group, {})
            waiting[started["metadata"]["uid"]] = (started, run_for)
            running = {uid: item for uid, item in waiting.items() if self._is_running(item[0], uid)}
            if len(running) < int(barrier):
                self._barriers[group] = running
                return
            self._passed.add(group)
            del self._barriers[group]
            for uid, (pod, seconds) in sorted(running.items(), key=lambda e: key_of(e[1][0])):
                self._finish_in(pod, uid, seconds)
            return
        self._finish_in(started, started["metadata"]["uid"], run_for)

    def _finish_in(self, pod: Obj, uid: str, seconds: float) -> None:
        self.cluster.loop.call_later(seconds, lambda: self._complete(pod, uid))

    def _is_running(self, pod: Obj, uid: str) -> bool:
        current = self._current(pod, uid)
        return current is not None and (current.get("status") or {}).get("phase") == "Running" \
            and not (current.get("metadata") or {}).get("deletionTimestamp")

    def _reject(self, pod: Obj, uid: str, node_name: str, reason: str, message: str) -> None:
        current = self._current(pod, uid)
        if current is None or is_terminal(current):
            return
        # upstream kubelet rejectPod: a Warning event of the handler's reason, the pod Failed with it
        self.set_terminal(current, "Failed", reason, REJECTED_PREFIX + message)
        self.cluster.log.record(reason, key_of(current), node=node_name, message=message, phase="Failed")

    def _current(self, pod: Obj, uid: str) -> Obj | None:
        meta = pod["metadata"]
        current = self.api.get("Pod", meta.get("namespace"), meta["name"])
        if current is None or current["metadata"].get("uid") != uid:
            return None
        return current

    def _complete(self, pod: Obj, uid: str) -> None:
        current = self._current(pod, uid)
        if current is None or is_terminal(current):
            return
        self.set_terminal(current, "Succeeded")
        self.cluster.log.record("Completed", key_of(current), node=current["spec"].get("nodeName"))

    def set_terminal(self, pod: Obj, phase: str, reason: str | None = None, message: str | None = None) -> Obj:
        status = dict(pod.get("status") or {})
        status["phase"] = phase
        if reason:
            status["reason"] = reason
        if message:
            status["message"] = message
        status["conditions"] = [
            {**c, "status": "False"} if c.get("type") == "Ready" else c for c in status.get("conditions") or []
        ]
        new = dict(pod)
        new["status"] = status
        was_running = (pod.get("status") or {}).get("phase") == "Running"
        updated = self.api.update(new)
        if was_running:
            for handler in self._lifecycle_handlers:
                handler.pod_stopped(updated, pod["spec"].get("nodeName") or "")
        return updated

    # -- deletion ---------------------------------------------------------------------------
    def delete_pod(self, pod: Obj, grace: int | None) -> None:
        meta = pod["metadata"]
        spec = pod.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return  # already terminating
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds")
            if grace is None:
                grace = DEFAULT_GRACE_SECONDS
        if not spec.get("nodeName") or is_terminal(pod) or grace <= 0:
            self._remove(pod)
            return
        wait = float(grace)
        exit_after = _annotation_seconds(pod, EXIT_AFTER)
        if exit_after is not None:
            wait = min(wait, exit_after)
        now = self.cluster.now()
        new = dict(pod)
        new_meta = dict(meta)
        new_meta["deletionTimestamp"] = rfc3339(now + grace)
        new_meta["deletionGracePeriodSeconds"] = int(grace)
        new["metadata"] = new_meta
        terminating = self.api.update(new)
        self.cluster.log.record("Terminating", key_of(pod), node=spec.get("nodeName"))
        uid = meta["uid"]
        self.cluster.loop.call_later(wait, lambda: self._finish_termination(terminating, uid))

    def _finish_termination(self, pod: Obj, uid: str) -> None:
        current = self._current(pod, uid)
        if current is not None:
            self._remove(current)

    def _remove(self, pod: Obj) -> None:
        meta = pod["metadata"]
        self.api.delete("Pod", meta.get("namespace"), meta["name"])
        if (pod.get("status") or {}).get("phase") == "Running":
            for handler in self._lifecycle_handlers:
                handler.pod_stopped(pod, pod["spec"].get("nodeName") or "")
