"""An audit log's writes, in order, made into a replay: what happened before the window is the
cluster the replay starts from, what happens in it becomes the steps, and what the real scheduler
and the pods' users did is kept as the reference (:class:`~kubesched.replay.history.Recorded`).

* A pod created in the window is created unbound at the same moment (a pod the log creates with a
  ``nodeName`` already set, placed by no scheduler, is created bound and not compared); its
  ``pods/binding`` is the reference, not a step, and so is a deletion by kube-scheduler (a
  preemption: the replay's scheduler makes its own). Its first other deletion becomes a delete step (with the
  request's grace period); an eviction (``pods/eviction``) a delete step too (the eviction API's
  PodDisruptionBudget check passed when it was recorded). A status write that ends the pod
  (``Succeeded``/``Failed``) gives it a run time (``kubesched.io/run-for``: from its recorded
  binding to its end), so that a pod placed later in the replay runs as long.
* Before the window: nodes, PriorityClasses and PodDisruptionBudgets as they stand at its start are
  created at 0; pods that exist then are created at 0, bound where the log (or the snapshot) says
  they run, or unbound (and compared) if not yet bound.
* Node updates (cordons, taints, labels) are patches; a Node's status writes (heartbeats) are not
  replayed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kubesched.api.durations import parse_duration
from kubesched.api.loader import Scenario, Step, default_object
from kubesched.cluster.embedded.apiserver.store import merge_patch
from kubesched.k8s.objects import TERMINAL_PHASES, Obj, key_of
from kubesched.k8s.timefmt import EPOCH, parse_rfc3339
from kubesched.replay.history import SCHEDULER_USER, Followed, History, ReadReport, Recorded, ReplayError
from kubesched.replay.objects import (
    CompactObjects,
    class_fields,
    inferred_classes,
    node_patch,
    replayable_object,
    replayable_pod,
)
from kubesched.replay.owners import WORKLOADS, IdentityStep, Owners, is_controller_user, restorable
from kubesched.replay.updates import PodUpdates, WorkloadEvents

if TYPE_CHECKING:
    from kubesched.replay.audit import AuditEvent

KIND_OF = {"pods": "Pod", "nodes": "Node", "priorityclasses": "PriorityClass",
           "poddisruptionbudgets": "PodDisruptionBudget", **WORKLOADS}
#: the source of a step that creates a pod again under a name the replay may still run: played at
#: run time (:mod:`.dynamic`), not as an ordinary step
RECREATION = " (a re-creation)"
RUN_FOR = "kubesched.io/run-for"


def _moment(text: str, first: float, option: str, numbers_absolute: bool) -> float:
    if numbers_absolute:
        try:
            return float(text)
        except ValueError:
            pass
    else:
        try:
            return parse_rfc3339(text)
        except ValueError:
            pass
    try:
        return first + parse_duration(text)
    except ValueError:
        absolute = "a time of the trace in seconds" if numbers_absolute else "an RFC 3339 time (2024-05-07T10:00:00Z)"
        raise ReplayError(f"{option} {text!r}: expected {absolute}, or a duration from the history's first "
                          "event (30m, 1h)") from None


@dataclass(frozen=True)
class Window:
    """The part of a history to replay: ``start`` and ``end`` as the user gave them, a moment of
    the history's own clock or a duration from its first event; None: from the first event, to
    the last."""

    start: str | None = None
    end: str | None = None

    def resolve(self, first: float, last: float, *, numbers_absolute: bool = False) -> tuple[float, float]:
        start = first if self.start is None else _moment(self.start, first, "--from", numbers_absolute)
        end = last if self.end is None else _moment(self.end, first, "--to", numbers_absolute)
        if end < start:
            raise ReplayError(f"--to is before --from ({end - start:g}s)")
        return start, end


def _plain_merge_patch(body: Obj | None) -> Obj | None:
    """A patch body that means the same as a JSON merge patch: no strategic-merge directives."""
    if not isinstance(body, dict) or body.get("kind"):
        return None
    text = repr(body)
    return None if "'$patch'" in text or "'$setElementOrder" in text or "'$retainKeys'" in text \
        or "'$deleteFromPrimitiveList" in text else body


@dataclass
class _Pod:
    recorded: Recorded | None  # None: not compared (running at the start, or created bound)
    created: Obj | None  # the pod a step creates (None: created at the window's start, or by a controller)
    deleting: bool = False
    #: the pod's identity when a replayed controller makes it (writes to it go by identity)
    identity: str | None = None


@dataclass
class _Before:
    """The cluster as the log leaves it at the window's start."""

    objects: dict[tuple[str, str], Obj] = field(default_factory=dict)
    #: pod key -> (recorded pod, node it was bound to or None)
    pods: dict[str, tuple[Obj, str | None]] = field(default_factory=dict)


class Timeline(PodUpdates, WorkloadEvents):
    def __init__(self, report: ReadReport, snapshot: list[Obj], window: Window, *, follow: bool = False) -> None:
        self.report = report
        #: for a replay that follows the recording: no controller is replayed (pods as recorded)
        self.follow = follow
        self.followed: list[Followed] = []
        self.started: dict[str, float] = {}
        self.nominated: set[str] = set()
        #: bindings logged before their pod's creation, by pod
        self.early: dict[str, AuditEvent] = {}
        self.start_at = 0.0
        self.window = window
        self.snapshot = {(o["kind"], key_of(o)): o for o in snapshot if o.get("kind") in KIND_OF.values()}
        self.objects: list[Obj] = []
        self.steps: list[Step] = []
        self.recorded: list[Recorded] = []
        self.live: dict[str, _Pod] = {}
        self.nodes: dict[str, Obj] = {}
        self.pod_sources: list[tuple[Obj, Obj]] = []  # (recorded pod, replayed pod), for inferred classes
        self.ends: list[tuple[_Pod, float]] = []
        self.owners = Owners()
        self.identity_steps: list[IdentityStep] = []
        #: the latest recorded version of each pod and workload (what an update changes)
        self.last = CompactObjects()
        self.uids: dict[tuple[str, str, str], str] = {}

    # -- the whole history ------------------------------------------------------------------------
    def build(self, events: list[AuditEvent], *, name: str, seed: int) -> History:
        start, end = self.window.resolve(events[0].at, events[-1].at)
        made_by_log = {(KIND_OF[e.resource], e.key) for e in events if e.verb == "create" and not e.subresource}
        before = _Before()
        for (kind, key), obj in sorted(self.snapshot.items()):
            if (kind, key) in made_by_log or (kind == "PriorityClass" and key.startswith("system-")):
                continue
            if kind == "Pod":
                before.pods[key] = (obj, (obj.get("spec") or {}).get("nodeName") or None)
            else:
                before.objects[(kind, key)] = obj
        self.start_at = start
        index = 0
        while index < len(events) and events[index].at < start:
            self._before(before, events[index])
            index += 1
        self.report.counts["events before the window (its starting state)"] = index
        self._start(before)
        for event in events[index:]:
            if event.at > end:
                self.report.counts["events after the window (not replayed)"] += 1
                continue
            self._during(event, round(event.at - start, 6))
        for early in self.early.values():
            self.report.skip("bindings of pods the history never created", early.where)
        for pod, at in self.ends:
            rec = pod.recorded
            if pod.created is not None and rec is not None and rec.bound is not None:
                pod.created["metadata"].setdefault("annotations", {})[RUN_FOR] = f"{max(at - rec.bound, 0):.3f}s"
        known = {o["metadata"]["name"] for o in self.objects if o["kind"] == "PriorityClass"}
        known |= {s.name or "" for s in self.steps if s.action == "create" and s.kind == "PriorityClass"}
        classes, notes = inferred_classes(self.pod_sources, known)
        self.report.notes.extend(notes)
        scenario = Scenario(name=name, seed=seed, until=round(end - start, 6), objects=[*classes, *self.objects],
                            steps=self.steps, sources=[])
        scenario.sources = ["replay: starting state"] * len(scenario.objects)
        self.report.counts["steps"] = len(self.steps)
        self.report.counts["pods compared"] = sum(1 for r in self.recorded)
        self.followed.sort(key=lambda f: f.at)
        return History(scenario, self.recorded, self.report, start=_rfc3339_of(start), nodes=self.nodes,
                       identity_steps=self.identity_steps, followed=self.followed, started=self.started)

    # -- before the window: the state it starts from -------------------------------------------
    def _before(self, before: _Before, e: AuditEvent) -> None:
        kind = KIND_OF[e.resource]
        if kind == "Pod":
            self._pod_before(before, e)
            return
        if e.subresource:
            return
        key = (kind, e.key)
        if e.verb == "delete":
            before.objects.pop(key, None)
        elif e.obj is not None:
            before.objects[key] = e.obj
        elif key in before.objects and (patch := _plain_merge_patch(e.request)) is not None:
            before.objects[key] = merge_patch(before.objects[key], patch)
        elif e.verb == "create" and key in self.snapshot:
            before.objects[key] = self.snapshot[key]

    def _pod_before(self, before: _Before, e: AuditEvent) -> None:
        if e.subresource == "binding" and e.key in before.pods:
            obj, _ = before.pods[e.key]
            before.pods[e.key] = (obj, _binding_target(e.request) or (obj.get("spec") or {}).get("nodeName"))
        elif e.subresource == "status" and _ended(e) and e.key in before.pods:
            del before.pods[e.key]  # it ended before the window: it holds nothing at the start
        elif (not e.subresource and e.verb == "delete") or e.subresource == "eviction":
            before.pods.pop(e.key, None)
        elif not e.subresource and e.verb == "create":
            made = e.obj or self.snapshot.get(("Pod", e.key))
            if made is not None:
                before.pods[e.key] = (made, (made.get("spec") or {}).get("nodeName") or None)

    def _start(self, before: _Before) -> None:
        for (kind, _key), obj in sorted(before.objects.items(), key=lambda item: (_RANK[item[0][0]], item[0][1])):
            if kind in WORKLOADS.values():
                if self.follow:
                    self.report.counts["workloads at the start (not followed: their pods as recorded)"] += 1
                    continue
                if kind != "ReplicaSet" or self.owners.deployment_of(obj) is None:
                    obj = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "ownerReferences"}}
                self.owners.add(obj)
                self.objects.append(restorable(obj, self.uids))
                self.report.counts["workloads at the start"] += 1
                continue
            made = default_object(replayable_object(obj))
            self.objects.append(made)
            if kind == "Node":
                self.nodes[made["metadata"]["name"]] = made
        for key, (obj, node) in sorted(before.pods.items()):
            self.last[("Pod", key)] = obj
            if self.owners.owner_of(obj) is not None:  # restored as existing: its controller adopts it
                rec = None if node else Recorded(key, 0.0, (obj.get("spec") or {}).get("priorityClassName"))
                self.objects.append(restorable(obj, self.uids, node=node))
                self.live[key] = _Pod(rec, None, identity=key)
                if rec is not None:
                    self.recorded.append(rec)
                self.report.counts["pods pending at the start" if rec else "pods running at the start"] += 1
                continue
            pod = replayable_pod(obj, keep_node=False)
            if node:
                pod["spec"]["nodeName"] = node
                self.live[key] = _Pod(None, None)
                self.report.counts["pods running at the start"] += 1
            else:
                rec = Recorded(key, 0.0, (obj.get("spec") or {}).get("priorityClassName"))
                self.recorded.append(rec)
                self.live[key] = _Pod(rec, None)
                self.report.counts["pods pending at the start"] += 1
            self.objects.append(default_object(pod))
            self.pod_sources.append((class_fields(obj), pod))

    # -- in the window: steps and the reference --------------------------------------------------
    def _during(self, e: AuditEvent, at: float) -> None:
        handler: Callable[[AuditEvent, float], None] = {
            "pods": self._pod, "nodes": self._node}.get(e.resource, self._other)
        if e.resource in WORKLOADS:
            handler = self._workload if not self.follow else self._unfollowed
        handler(e, at)

    def _unfollowed(self, e: AuditEvent, at: float) -> None:
        self.report.counts["workload writes (not followed: their pods as recorded)"] += 1

    def _follow(self, e: AuditEvent, action: str, node: str | None = None, grace: int | None = None,
                after: float = 0.0) -> None:
        """A recorded scheduler action, at the moment the API server received it (not before
        ``after``: a scheduler may bind a pod it saw in a watch before the pod's creation request
        completed)."""
        self.followed.append(Followed(max(round(e.received - self.start_at, 6), after), action, e.key, node, grace))

    def _step(self, e: AuditEvent, at: float, action: str, **fields: Any) -> None:
        kind = KIND_OF[e.resource]
        self.steps.append(Step(at=at, action=action, kind=kind, name=e.name, namespace=e.namespace,
                               source=e.where, **fields))

    def _pod(self, e: AuditEvent, at: float) -> None:
        live = self.live.get(e.key)
        counts = self.report.counts
        if e.subresource == "binding":
            if live is None:
                # a scheduler sees a pod in its watch before the creation's response completes: its
                # binding may be logged first; played once the creation is (else skipped at the end)
                self.early.setdefault(e.key, e)
            elif live.recorded is not None and live.recorded.bound is None:
                live.recorded.bound = at
                live.recorded.node = _binding_target(e.request)
                if live.recorded.node is None:
                    snap = self.snapshot.get(("Pod", e.key))
                    live.recorded.node = ((snap or {}).get("spec") or {}).get("nodeName") or None
                if live.recorded.node is not None:
                    self._follow(e, "bind", live.recorded.node, after=live.recorded.created)
                counts["bindings (the reference)"] += 1
        elif e.subresource == "eviction" or (not e.subresource and e.verb == "delete"):
            if live is None:
                self.report.skip(f"{'evictions' if e.subresource else 'deletions'} of pods the history never created",
                                 e.where)
            elif live.deleting:
                counts["repeated deletions (the first one replayed)"] += 1
            elif e.user == SCHEDULER_USER and not e.subresource:
                # the recorded scheduler's preemption: its decision, the reference (the replay's
                # scheduler decides its own), as are the kubelet's deletions that end it
                live.deleting = True
                if live.recorded is not None:
                    live.recorded.deleted, live.recorded.deleted_by = at, e.user
                grace = (e.request or {}).get("gracePeriodSeconds")
                self._follow(e, "preempt", grace=grace if isinstance(grace, int) else None)
                counts["preemptions by the recorded scheduler (the reference)"] += 1
            elif live.identity is not None and is_controller_user(e.user):
                # a scale-down, the garbage collector: the replay's controller decides its own
                live.deleting = True
                if live.recorded is not None:
                    live.recorded.deleted, live.recorded.deleted_by = at, e.user
                counts["deletions by controllers (the reference)"] += 1
                return
            else:
                live.deleting = True
                options = (e.request or {}).get("deleteOptions") if e.subresource else e.request
                grace = (options or {}).get("gracePeriodSeconds")
                grace = grace if isinstance(grace, int) else None
                if live.identity is not None:
                    self.identity_steps.append(IdentityStep(at, "evict" if e.subresource else "delete", live.identity,
                                                            grace=grace, source=e.where))
                else:
                    self._step(e, at, "delete", grace_period_seconds=grace)
                if live.recorded is not None:
                    if e.subresource:
                        live.recorded.evicted = at
                    else:
                        live.recorded.deleted, live.recorded.deleted_by = at, e.user or None
                counts["evictions" if e.subresource else "pod deletions"] += 1
        elif e.subresource == "status":
            self._status(e, live)
            if live is not None and live.recorded is not None and _ended(e):
                live.recorded.phase = _phase(e)
                self.ends.append((live, at))
                counts["pods ended (run time kept)"] += 1
        elif not e.subresource and e.verb == "create":
            self._pod_created(e, at, live)
        elif not e.subresource and e.verb in ("update", "patch"):
            self._pod_update(e, at, live)
        else:
            counts["other pod writes (not replayed)"] += 1

    def _status(self, e: AuditEvent, live: _Pod | None) -> None:
        """What a follow replay takes of a pod's status write: its nomination and start time."""
        status = (e.obj or {}).get("status") or {}
        if live is None or live.recorded is None:
            return
        node = status.get("nominatedNodeName") or None
        if node is not None or e.key in self.nominated:  # set, or cleared once set
            self._follow(e, "nominate", node)
            if node is not None:
                self.nominated.add(e.key)
                self.report.counts["nominations by the recorded scheduler"] += 1
            else:
                self.nominated.discard(e.key)
        started = status.get("startTime")
        if isinstance(started, str) and e.key not in self.started:
            try:
                self.started[e.key] = round(parse_rfc3339(started) - self.start_at, 6)
            except ValueError:
                pass

    def _pod_created(self, e: AuditEvent, at: float, live: _Pod | None) -> None:
        if live is not None and not live.deleting:
            self.report.skip("creations of a pod that exists", e.where)
            return
        obj, pinned = e.obj, bool(((e.obj or {}).get("spec") or {}).get("nodeName"))
        if obj is None:  # the snapshot's nodeName is where the pod was bound later: not pinned
            obj = self.snapshot.get(("Pod", e.key))
            if obj is None:
                self.report.skip("pod creations without a spec (Metadata level, not in --snapshot)", e.where)
                return
            self.report.counts["pod specs from the snapshot"] += 1
        self.last[("Pod", e.key)] = obj
        owner = None if pinned else self.owners.owner_of(obj)
        if owner is not None:  # the replay's controller makes it: the reference for the pod it makes
            identity = self.owners.identity(obj, owner)
            rec = Recorded(e.key, at, (obj.get("spec") or {}).get("priorityClassName"), identity=identity)
            self.recorded.append(rec)
            self.live[e.key] = _Pod(rec, None, identity=identity)
            self.report.counts["pods made by replayed controllers (the reference)"] += 1
            self._early_binding(e.key, at)
            return
        pod = default_object(replayable_pod(obj, keep_node=pinned))
        again = live is not None  # its earlier incarnation may still run in the replay
        self._step(e, at, "create", obj=pod)
        if again:
            self.steps[-1].source += RECREATION
        incarnation = None if pinned else Recorded(e.key, at, (obj.get("spec") or {}).get("priorityClassName"))
        if incarnation is not None:
            self.recorded.append(incarnation)
        self.live[e.key] = _Pod(incarnation, pod)
        self.pod_sources.append((class_fields(obj), pod))
        self.report.counts["pods created bound (not compared)" if pinned else "pod creations"] += 1
        self._early_binding(e.key, at)

    def _early_binding(self, key: str, at: float) -> None:
        early = self.early.pop(key, None)
        if early is not None:
            self.report.counts["bindings logged before their pod's creation"] += 1
            self._pod(early, at)

    def _node(self, e: AuditEvent, at: float) -> None:
        if e.subresource:
            self.report.counts["node status writes (not replayed)"] += 1
            return
        if e.verb in ("delete", "deletecollection"):
            self._step(e, at, "delete")
            self.report.counts["node deletions"] += 1
        elif e.verb == "create":
            obj = e.obj or self.snapshot.get(("Node", e.key))
            if obj is None:
                self.report.skip("node creations without the node (Metadata level, not in --snapshot)", e.where)
                return
            node = default_object(replayable_object(obj))
            self.nodes[e.name] = node
            self._step(e, at, "create", obj=node)
            self.report.counts["node creations"] += 1
        elif e.obj is not None:
            self.nodes[e.name] = e.obj
            self._step(e, at, "patch", merge=node_patch(e.obj))
            self.report.counts["node changes"] += 1
        elif (patch := _plain_merge_patch(e.request)) is not None:
            self._step(e, at, "patch", merge=patch)
            self.report.counts["node changes"] += 1
        else:
            self.report.skip("node changes without the node (Metadata level, or a strategic merge patch)", e.where)

    def _other(self, e: AuditEvent, at: float) -> None:
        """PriorityClasses and PodDisruptionBudgets: created, changed, deleted."""
        kind = KIND_OF[e.resource]
        if e.subresource or (kind == "PriorityClass" and e.name.startswith("system-")):
            return
        what = "PriorityClass" if kind == "PriorityClass" else "PDB"
        if e.verb in ("delete", "deletecollection"):
            self._step(e, at, "delete")
        elif e.verb == "create":
            obj = e.obj or self.snapshot.get((kind, e.key))
            if obj is None:
                self.report.skip(f"{what} creations without the object", e.where)
                return
            self._step(e, at, "create", obj=default_object(replayable_object(obj)))
        elif e.obj is not None:
            merge = {"spec": e.obj.get("spec")} if kind != "PriorityClass" else {
                "globalDefault": e.obj.get("globalDefault") or None, "description": e.obj.get("description")}
            self._step(e, at, "patch", merge=merge)
        elif (patch := _plain_merge_patch(e.request)) is not None:
            self._step(e, at, "patch", merge=patch)
        else:
            self.report.skip(f"{what} changes without the object", e.where)
            return
        self.report.counts[f"{what} writes"] += 1


_RANK = {"PriorityClass": 0, "Node": 1, "PodDisruptionBudget": 2, "Job": 3, "StatefulSet": 3, "Deployment": 3,
         "ReplicaSet": 4}


def _binding_target(request: Obj | None) -> str | None:
    target = (request or {}).get("target") if (request or {}).get("kind") == "Binding" else None
    name = (target or {}).get("name")
    return name if isinstance(name, str) and name else None


def _phase(e: AuditEvent) -> str | None:
    for source in (e.obj, e.request):
        phase = ((source or {}).get("status") or {}).get("phase")
        if isinstance(phase, str):
            return phase
    return None


def _ended(e: AuditEvent) -> bool:
    return _phase(e) in TERMINAL_PHASES


def _rfc3339_of(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
