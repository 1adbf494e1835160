"""Job controller (NonIndexed completion mode).

- ``parallelism`` (default 1) pods run at once; with ``completions`` set, never more than the
  completions still missing; the Job is Complete once ``completions`` pods succeeded. Without
  ``completions`` any one success completes it: no pod is started after the first success and the
  Job is Complete when the remaining ones have finished.
- A pod counts as failed when its phase is Failed, or when it is deleted (or starts terminating)
  before succeeding. After a failure new pods wait ``10s * 2^(failures since the last success - 1)``
  (at most 10 min) counted from the last failure. More than ``backoffLimit`` (default 6) failures
  fail the Job (condition Failed, reason BackoffLimitExceeded) and its running pods are deleted.
- ``spec.suspend: true`` deletes the active pods and starts none.
- Pods are ``<job>-<5 random characters>`` with the template labels plus ``job-name`` and
  ``controller-uid`` (also under ``batch.kubernetes.io/``). Status: ``active``, ``ready``,
  ``succeeded``, ``failed``, ``startTime``, ``completionTime``, ``conditions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.cluster.embedded.controllers.replicaset import deletion_order
from kubesched.cluster.embedded.controllers.util import (
    controller_ref,
    is_active,
    is_deleting,
    pod_from_template,
)
from kubesched.des.clock import Timer
from kubesched.k8s.objects import Obj, split_key
from kubesched.k8s.timefmt import rfc3339

DEFAULT_BACKOFF_LIMIT = 6
POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0
BACKOFF_LIMIT_MESSAGE = "Job has reached the specified backoff limit"


@dataclass
class _JobState:
    succeeded: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    removed_by_us: set[str] = field(default_factory=set)
    failures_since_success: int = 0
    last_failure: float = 0.0
    timer: Timer | None = None


def _finished(job: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def backoff_delay(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return min(MAX_POD_FAILURE_BACKOFF, POD_FAILURE_BACKOFF * 2 ** (failures - 1))


class JobController(Controller):
    kind = "Job"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: dict[str, _JobState] = {}

    # -- accounting --------------------------------------------------------------------------
    def _count(self, st: _JobState, pod: Obj, gone: bool = False) -> None:
        uid = pod["metadata"].get("uid", "")
        if uid in st.succeeded or uid in st.failed or uid in st.removed_by_us:
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Succeeded":
            st.succeeded.add(uid)
            st.failures_since_success = 0
        elif phase == "Failed" or is_deleting(pod) or gone:
            st.failed.add(uid)
            st.failures_since_success += 1
            st.last_failure = self.cluster.now()

    def _state_of(self, pod: Obj) -> _JobState | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "Job":
            return None
        return self._state.get(str(ref.get("uid")))

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == "Pod":
            st = self._state_of(new)
            if st is not None:
                self._count(st, new)
        super().handle(kind, old, new)

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Job":
            self._state.pop(obj["metadata"]["uid"], None)
            self.delete_dependents(obj)
            return
        if kind == "Pod":
            st = self._state_of(obj)
            if st is not None:
                self._count(st, obj, gone=True)
        super().handle_delete(kind, obj)

    # -- reconcile ---------------------------------------------------------------------------
    def sync(self, key: str) -> None:
        job = self.get(key)
        if job is None or _finished(job):
            return
        uid = job["metadata"]["uid"]
        st = self._state.get(uid)
        if st is None:  # first sync: account for pods that already exist
            st = self._state[uid] = _JobState()
            for pod in self.index.pods(uid):
                self._count(st, pod)
        spec = job.get("spec") or {}
        owned = self.index.owned(uid)
        parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
        completions = spec.get("completions")
        backoff_limit = spec.get("backoffLimit")
        backoff_limit = DEFAULT_BACKOFF_LIMIT if backoff_limit is None else int(backoff_limit)
        succeeded = len(st.succeeded)
        now = self.cluster.now()
        status = dict(job.get("status") or {})
        fields: dict[str, Any] = {"startTime": status.get("startTime") or rfc3339(now)}
        conditions = list(status.get("conditions") or [])

        if len(st.failed) > backoff_limit:
            self._remove(st, [p for p in self.index.pods(uid) if is_active(p)])
            conditions.append(self._condition("Failed", now, "BackoffLimitExceeded", BACKOFF_LIMIT_MESSAGE))
        else:
            if spec.get("suspend"):
                want = 0
            elif completions is None:
                want = owned.active if succeeded > 0 else parallelism
            else:
                want = max(0, min(parallelism, int(completions) - succeeded))
            if owned.active > want:
                active = [p for p in self.index.pods(uid) if is_active(p)]
                self._remove(st, deletion_order(active)[: len(active) - want])
            elif owned.active < want:
                self._start(key, job, st, want - owned.active, now)
            done = succeeded > 0 if completions is None else succeeded >= int(completions)
            if done and not self.index.owned(uid).active:
                conditions.append(self._condition("Complete", now))
                fields["completionTime"] = rfc3339(now)
        owned = self.index.owned(uid)
        fields.update(
            {
                "active": owned.active,
                "ready": owned.ready,
                "succeeded": len(st.succeeded),
                "failed": len(st.failed),
            }
        )
        if conditions:
            fields["conditions"] = conditions
        current = self.get(key)
        if current is not None:
            self.update_status(current, fields)

    @staticmethod
    def _condition(kind: str, now: float, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
        cond: dict[str, Any] = {
            "type": kind,
            "status": "True",
            "lastProbeTime": rfc3339(now),
            "lastTransitionTime": rfc3339(now),
        }
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        return cond

    def _remove(self, st: _JobState, pods: list[Obj]) -> None:
        for pod in pods:
            st.removed_by_us.add(pod["metadata"].get("uid", ""))
            self.delete_pod(pod)

    def _start(self, key: str, job: Obj, st: _JobState, count: int, now: float) -> None:
        if self.is_blocked(key):
            return
        remaining = st.last_failure + backoff_delay(st.failures_since_success) - now
        if remaining > 0:
            self._wake_at(key, st, now + remaining)
            return
        ns, name = split_key(key)
        uid = job["metadata"]["uid"]
        labels = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        for _ in range(count):
            pod_name, generate_name = self.random_name(ns, name)
            if self.create_pod(key, pod_from_template(job, pod_name, generate_name=generate_name, labels=labels)) is None:
                break

    def _wake_at(self, key: str, st: _JobState, when: float) -> None:
        if st.timer is not None and not st.timer.cancelled and st.timer.when <= when:
            return
        if st.timer is not None:
            self.cluster.loop.cancel(st.timer)

        def wake() -> None:
            st.timer = None
            self.enqueue(key)

        st.timer = self.cluster.loop.call_at(when, wake)
