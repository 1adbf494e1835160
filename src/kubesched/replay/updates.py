"""Recorded updates made into replay steps: a pod's label and annotation changes (patch steps, by
identity for a pod a replayed controller makes), and the workloads' lifecycle (created, spec changed,
scaled, deleted). Parts of :class:`~kubesched.replay.timeline.Timeline`, kept apart for size."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.api.loader import default_object
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import Obj
from kubesched.replay.history import ReadReport
from kubesched.replay.objects import CompactObjects, replayable_object
from kubesched.replay.owners import IdentityStep, Owners, metadata_patch

if TYPE_CHECKING:
    from kubesched.replay.audit import AuditEvent

#: the spec fields a recorded workload update is replayed with (what users change: replicas, the
#: template of a rollout, a Job's parallelism or suspension); the rest is immutable or the API
#: server's
WORKLOAD_SPEC_FIELDS = {"Deployment": ("replicas", "template", "paused", "strategy"), "ReplicaSet": ("replicas",),
                        "StatefulSet": ("replicas", "template"), "Job": ("parallelism", "suspend")}
#: the labels the API server gives a Job's pods (and, without ``manualSelector``, its selector):
#: the recorded ones carry the recorded Job's uid
_JOB_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name")
#: a pod's metadata a replay plays (the rest is the API server's or a controller's)
_POD_METADATA = ("labels", "annotations")


def replayable_workload(obj: Obj) -> Obj:
    """A recorded workload as the replay creates it: without status, the API server's metadata and
    owner references; a Job without the selector and labels the API server derived from its uid."""
    out = replayable_object(obj)
    if out["kind"] == "Job" and not (out.get("spec") or {}).get("manualSelector"):
        spec = out.setdefault("spec", {})
        spec.pop("selector", None)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        for label in _JOB_LABELS:
            labels.pop(label, None)
    return out


def _spec_fields(kind: str, obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    return {f: deep_copy(spec.get(f)) for f in WORKLOAD_SPEC_FIELDS[kind]}


class PodUpdates:
    """Pod ``update``/``patch`` requests: their label and annotation changes are patch steps."""

    report: ReadReport
    last: CompactObjects
    identity_steps: list[IdentityStep]

    def _step(self, e: AuditEvent, at: float, action: str, **fields: Any) -> None:
        raise NotImplementedError

    def _pod_update(self, e: AuditEvent, at: float, live: Any) -> None:
        if live is None:
            self.report.skip("updates of pods the history never created", e.where)
            return
        if e.obj is not None:
            old = self.last.get(("Pod", e.key))
            self.last[("Pod", e.key)] = e.obj
            patch = metadata_patch(old, e.obj)
            if old is not None and _other_changes(old, e.obj):
                self.report.skip("pod changes other than labels and annotations (spec, finalizers: not replayed)",
                                 e.where)
        elif isinstance(e.request, dict) and not e.request.get("kind"):
            meta = e.request.get("metadata") or {}
            patch = {"metadata": {k: meta[k] for k in _POD_METADATA if isinstance(meta.get(k), dict)}}
            if not patch["metadata"]:
                patch = None
            if set(e.request) - {"metadata"} or set(meta) - set(_POD_METADATA):
                self.report.skip("pod changes other than labels and annotations (spec, finalizers: not replayed)",
                                 e.where)
        else:
            self.report.skip("pod updates without the pod (Metadata level, or a strategic merge patch)", e.where)
            return
        if patch is None:
            return
        if live.identity is not None:
            self.identity_steps.append(IdentityStep(at, "patch", live.identity, merge=patch, source=e.where))
        else:
            self._step(e, at, "patch", merge=patch)
        self.report.counts["pod label and annotation changes"] += 1


def _other_changes(old: Obj, new: Obj) -> bool:
    """Whether a pod's update changed something a replay does not play: its spec (but the binding's
    ``nodeName``), finalizers or owners."""
    def spec(o: Obj) -> dict[str, Any]:
        return {k: v for k, v in (o.get("spec") or {}).items() if k != "nodeName"}
    keys = ("finalizers", "ownerReferences")
    return spec(old) != spec(new) or any((old.get("metadata") or {}).get(k) != (new.get("metadata") or {}).get(k)
                                         for k in keys)


class WorkloadEvents:
    """Deployments, ReplicaSets, StatefulSets and Jobs: created, changed, scaled, deleted (see
    :mod:`.owners` for the rule)."""

    report: ReadReport
    owners: Owners
    last: CompactObjects
    snapshot: dict[tuple[str, str], Obj]

    def _step(self, e: AuditEvent, at: float, action: str, **fields: Any) -> None:
        raise NotImplementedError

    def _workload(self, e: AuditEvent, at: float) -> None:
        kind = {"deployments": "Deployment", "replicasets": "ReplicaSet", "statefulsets": "StatefulSet",
                "jobs": "Job"}[e.resource]
        counts = self.report.counts
        owner = (kind, e.namespace or "default", e.name)
        last = self.last.get((kind, e.key))
        if e.verb == "create" and not e.subresource:
            obj = e.obj or self.snapshot.get((kind, e.key))
            if obj is None:
                self.report.skip("workload creations without the object (Metadata level, not in --snapshot)",
                                 e.where)
                return
            self.last[(kind, e.key)] = obj
            if kind == "ReplicaSet" and self.owners.deployment_of(obj) is not None:
                self.owners.add(obj)  # the Deployment's next revision: its controller makes it
                counts["ReplicaSets of replayed Deployments (their controller's)"] += 1
                return
            made = default_object(replayable_workload(obj))
            self.owners.add(made)
            self._step(e, at, "create", obj=made)
            counts["workload creations"] += 1
            return
        if owner not in self.owners.replayed:
            self.report.skip("writes to workloads the replay does not have", e.where)
            return
        if last is not None and kind == "ReplicaSet" and self.owners.deployment_of(last) is not None:
            counts["writes to ReplicaSets of replayed Deployments (their controller's)"] += 1
            return
        if e.verb in ("delete", "deletecollection") and not e.subresource:
            self._step(e, at, "delete")
            counts["workload deletions"] += 1
        elif e.subresource == "scale" and isinstance(((e.request or {}).get("spec") or {}).get("replicas"), int):
            self._step(e, at, "patch", merge={"spec": {"replicas": e.request["spec"]["replicas"]}})  # type: ignore[index]
            counts["workload changes"] += 1
        elif e.subresource:
            counts["workload status writes (their controllers' own)"] += 1
        elif e.obj is not None:
            self.last[(kind, e.key)] = e.obj
            new = _spec_fields(kind, e.obj)
            if last is not None and _spec_fields(kind, last) == new:
                counts["workload updates that change no replayed field"] += 1
                return
            self._step(e, at, "patch", merge={"spec": new})
            counts["workload changes"] += 1
        else:
            self.report.skip("workload changes without the object (Metadata level, or a strategic merge patch)",
                             e.where)
