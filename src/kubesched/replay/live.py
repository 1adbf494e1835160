"""``kubesched replay --kubeconfig FILE --speed X``: a history played against a real API server (a
test cluster) at ``X`` times its recorded pace, while whatever scheduler runs there (kube-scheduler,
``kubesched run``) places the pods; the bindings it made are read back and compared with the
recording, as a simulated replay's are.

The history's starting objects are created first (namespaces as needed; nodes, then their capacity
written to ``nodes/status``, since a node's status is not taken from a create), then each step is
sent at ``at / X`` seconds of wall time: creates (POST), deletes (DELETE with the recorded grace
period), evictions (``pods/eviction``), patches (JSON merge patches). Writes go through the kube
backend's :class:`~kubesched.cluster.kube.transport.Transport`: 429s (honouring ``Retry-After``),
5xx and connection failures are retried as the scheduler's own requests are; a write that still
fails is listed in ``run.rejected`` with its status, never dropped silently.

What the cluster did is seen through watches of pods and ReplicaSets (from a list, resumed on a
dropped stream, relisted on 410), timed on the replay's clock (wall seconds since the start × X): a
pod's creation, its first ``nodeName``, a ``DisruptionTarget`` condition (``PreemptionByScheduler``,
``EvictionByEvictionAPI``). A final list at the window's end catches bindings a watch had not
delivered yet. Pods a controller of the cluster makes are told by their identity, as in a
simulation (:class:`~kubesched.sim.identity.PodIdentities`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.loader import Scenario, Step
from kubesched.cluster.kube.resources import Resource
from kubesched.cluster.kube.transport import MERGE_PATCH, ClientOptions, Transport, load_api_client
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import ApiError, Obj, key_of, namespace_of
from kubesched.replay.compare import API_VERSION, comparison
from kubesched.replay.dynamic import split_recreations
from kubesched.replay.history import History, ReplayError
from kubesched.replay.owners import IdentityStep
from kubesched.replay.timeline import RECREATION
from kubesched.sim.identity import PodIdentities

#: what an object keeps of the metadata a replay restores it with (the rest is the API server's to set)
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
#: how often a re-creation waiting for its earlier pod to go looks again (wall seconds)
RECREATE_POLL = 0.2
#: the DisruptionTarget reasons a replay reads (kube-scheduler's preemption, the eviction API)
_PREEMPTED, _EVICTED = "PreemptionByScheduler", "EvictionByEvictionAPI"


def _disruption(pod: Obj) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return str(cond.get("reason") or "")
    return None


@dataclass
class Observed:
    """What the live cluster did, on the replay's clock: the run's events (as a simulation's result
    has them: ``Created``, ``Scheduled``, ``Preempted``, ``Evicted``) and every pod's identity."""

    now: Callable[[], float]
    events: list[dict[str, Any]] = field(default_factory=list)
    identities: PodIdentities = field(default_factory=lambda: PodIdentities(()))
    lock: threading.Lock = field(default_factory=threading.Lock)
    _seen: dict[str, dict[str, Any]] = field(default_factory=dict)  # pod uid -> what was reported

    def pod(self, pod: Obj, *, created_at: float | None = None) -> None:
        meta = pod["metadata"]
        uid, key = meta.get("uid") or key_of(pod), key_of(pod)
        with self.lock:
            seen = self._seen.get(uid)
            now = self.now()
            if seen is None:
                seen = self._seen[uid] = {}
                self.identities.on_add("Pod", pod)
                self.events.append({"time": created_at if created_at is not None else now, "reason": "Created",
                                    "pod": key})
            node = (pod.get("spec") or {}).get("nodeName")
            if node and "node" not in seen:
                seen["node"] = node
                self.events.append({"time": now, "reason": "Scheduled", "pod": key, "node": node})
            reason = _disruption(pod)
            if reason in (_PREEMPTED, _EVICTED) and "end" not in seen:
                seen["end"] = reason
                self.events.append({"time": now, "reason": "Preempted" if reason == _PREEMPTED else "Evicted",
                                    "pod": key})

    def replica_set(self, rs: Obj) -> None:
        with self.lock:
            self.identities.on_add("ReplicaSet", rs)

    def result(self) -> dict[str, Any]:
        with self.lock:
            events = sorted(self.events, key=lambda e: e["time"])
            return {"events": events, "pods": {k: {"identity": v} for k, v in self.identities.of.items()}}


class Watcher(threading.Thread):
    """List, then watch, one resource in all namespaces until stopped; a dropped stream resumes
    from the last resourceVersion, a 410 (compacted) lists again."""

    def __init__(self, transport: Transport, resource: Resource, handle: Callable[[Obj], None],
                 stop: threading.Event) -> None:
        super().__init__(name=f"replay-watch-{resource.plural}", daemon=True)
        self.transport, self.resource, self.handle, self.stop = transport, resource, handle, stop
        self.listed = threading.Event()
        self.stream: Any = None

    def close(self) -> None:
        self.stop.set()
        if self.stream is not None:
            self.stream.close()

    def list_once(self) -> str:
        answer = self.transport.call("GET", self.resource.collection_path())
        for item in answer.get("items") or []:
            item.setdefault("kind", self.resource.kind)
            self.handle(item)
        return str((answer.get("metadata") or {}).get("resourceVersion") or "")

    def run(self) -> None:
        version = ""
        broken: tuple[type[BaseException], ...] = (OSError, *self.transport.connection_errors)
        while not self.stop.is_set():
            try:
                if not version:
                    version = self.list_once()
                    self.listed.set()
                stream = self.stream = self.transport.watch(self.resource.collection_path(),
                                              {"watch": "true", "resourceVersion": version,
                                               "allowWatchBookmarks": "true", "timeoutSeconds": 30}, 40.0)
                try:
                    for event in stream:
                        if self.stop.is_set():
                            break
                        obj = event.get("object") or {}
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        if event.get("type") == "ERROR":
                            version = "" if obj.get("code") == 410 else version
                            break
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            obj.setdefault("kind", self.resource.kind)
                            self.handle(obj)
                finally:
                    stream.close()
            except ApiError as err:
                version = "" if err.code == 410 else version
                self.stop.wait(0.2)
            except broken:
                self.stop.wait(0.2)


def _creatable(obj: Obj, uids: dict[tuple[str, str, str], str]) -> Obj:
    """``obj`` as a create request: without the metadata the API server sets, its controlling owner
    pointed at the uid the live cluster gave that owner (dropped when the replay made none: a
    reference to no object would have the garbage collector delete it)."""
    out = deep_copy(obj)
    meta = out.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    refs = []
    for ref in meta.get("ownerReferences") or []:
        uid = uids.get((ref.get("kind") or "", namespace_of(out), ref.get("name") or ""))
        if uid:
            refs.append({**ref, "uid": uid})
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)
    if out.get("kind") == "Pod":
        out.pop("status", None)
    return out


class LiveReplay:
    """One replay against an API server (see the module's description)."""

    def __init__(self, history: History, scenario: Scenario, transport: Transport, speed: float, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        if not speed > 0:
            raise ReplayError(f"--speed {speed:g}: expected a positive factor (2: twice the recorded pace)")
        self.history, self.transport, self.speed = history, transport, speed
        self.scenario, self.recreations = split_recreations(scenario, RECREATION)
        self.sleep, self.clock = sleep, clock
        self.t0 = clock()
        objects = [*self.scenario.objects, *(s.obj for s in scenario.steps if s.action == "create" and s.obj)]
        self.observed = Observed(self.now, identities=PodIdentities(key_of(o) for o in objects if o["kind"] == "Pod"))
        self.rejected: list[dict[str, Any]] = []
        self.kept: set[tuple[str, float]] = set()
        self.missed: list[str] = []
        self.writes = 0
        self.uids: dict[tuple[str, str, str], str] = {}
        self.namespaces: set[str] = set()

    def now(self) -> float:
        return round((self.clock() - self.t0) * self.speed, 6)

    def _wait_until(self, at: float) -> None:
        delay = self.t0 + at / self.speed - self.clock()
        if delay > 0:
            self.sleep(delay)

    # -- writes ------------------------------------------------------------------------------
    def _send(self, method: str, path: str, body: Any, what: str, *, content_type: str | None = None) -> Any:
        self.writes += 1
        try:
            return self.transport.call(method, path, body=body, content_type=content_type)
        except ApiError as err:
            self.rejected.append({"what": what, "code": err.code, "reason": err.reason, "message": err.message,
                                  "time": self.now()})
            return None

    def _namespace(self, ns: str) -> None:
        if ns in self.namespaces:
            return
        self.namespaces.add(ns)
        try:
            self.transport.call("POST", Resource.of("Namespace").collection_path(),
                                body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except ApiError as err:
            if err.code != 409:  # it exists
                self.rejected.append({"what": f"Namespace {ns}", "code": err.code, "reason": err.reason,
                                      "message": err.message, "time": self.now()})

    def create(self, obj: Obj) -> Obj | None:
        resource = Resource.of(obj["kind"])
        ns = namespace_of(obj) if resource.namespaced else None
        if ns is not None:
            self._namespace(ns)
        body = _creatable(obj, self.uids)
        at = self.now()
        made = self._send("POST", resource.collection_path(ns), body, f"create {obj['kind']} {key_of(obj)}")
        if made is None:
            return None
        made.setdefault("kind", obj["kind"])
        self.uids[(obj["kind"], ns or "", made["metadata"]["name"])] = made["metadata"].get("uid") or ""
        if obj["kind"] == "Node" and obj.get("status"):
            self._send("PATCH", resource.object_path(None, made["metadata"]["name"], "status"),
                       {"status": obj["status"]}, f"status of Node {made['metadata']['name']}",
                       content_type=MERGE_PATCH)
        if obj["kind"] == "Pod":
            self.observed.pod(made, created_at=at)
        return made

    def _pod_path(self, key: str, subresource: str | None = None) -> str:
        ns, name = key.split("/", 1)
        return Resource.of("Pod").object_path(ns, name, subresource)

    def delete(self, kind: str, ns: str | None, name: str, grace: int | None) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace is not None:
            body["gracePeriodSeconds"] = grace  # type: ignore[assignment]
        self._send("DELETE", Resource.of(kind).object_path(ns, name), body, f"delete {kind} {ns + '/' if ns else ''}{name}")

    def evict(self, key: str, grace: int | None) -> None:
        ns, name = key.split("/", 1)
        options = {} if grace is None else {"deleteOptions": {"gracePeriodSeconds": grace}}
        self._send("POST", self._pod_path(key, "eviction"), {"apiVersion": "policy/v1", "kind": "Eviction",
                                                             "metadata": {"name": name, "namespace": ns}, **options},
                   f"evict Pod {key}")

    def patch(self, kind: str, ns: str | None, name: str, merge: Obj) -> None:
        self._send("PATCH", Resource.of(kind).object_path(ns, name), merge, f"patch {kind} {name}",
                   content_type=MERGE_PATCH)

    # -- steps -------------------------------------------------------------------------------
    def step(self, step: Step) -> None:
        if step.action == "create" and step.obj is not None:
            self.create(step.obj)
        elif step.action == "delete" and step.kind and step.name:
            self.delete(step.kind, step.namespace or None, step.name, step.grace_period_seconds)
        elif step.action == "patch" and step.kind and step.name and step.merge is not None:
            self.patch(step.kind, step.namespace or None, step.name, step.merge)
        else:
            self.rejected.append({"what": f"{step.action} {step.kind} {step.name}", "code": 0, "reason": "NotReplayed",
                                  "message": "not played against a live cluster", "time": self.now()})

    def identity_step(self, step: IdentityStep) -> None:
        with self.observed.lock:
            key = next((k for k, ident in self.observed.identities.of.items() if ident == step.identity), None)
        if key is None:
            self.missed.append(f"{step.action} {step.identity} ({step.source})")
        elif step.action == "patch" and step.merge is not None:
            ns, name = key.split("/", 1)
            self.patch("Pod", ns, name, step.merge)
        elif step.action == "evict":
            self.evict(key, step.grace)
        else:
            ns, name = key.split("/", 1)
            self.delete("Pod", ns, name, step.grace)

    def recreate(self, step: Step, deadline: float) -> None:
        """A pod created again: made once the earlier one is gone; kept if it still runs."""
        assert step.obj is not None
        key = f"{step.namespace}/{step.name}"
        while True:
            try:
                current = self.transport.call("GET", self._pod_path(key))
            except ApiError as err:
                if err.code != 404:
                    raise
                self.create(step.obj)
                return
            if not current["metadata"].get("deletionTimestamp"):
                self.kept.add((key, step.at))
                return
            if self.clock() >= deadline:
                self.rejected.append({"what": f"create Pod {key}", "code": 409, "reason": "AlreadyExists",
                                      "message": "its earlier pod was still terminating at the window's end",
                                      "time": self.now()})
                return
            self.sleep(RECREATE_POLL)

    def run(self, *, settle: float = 0.0) -> dict[str, Any]:
        """Play the history; the run's result (events, identities) to compare."""
        stop = threading.Event()
        watchers = [Watcher(self.transport, Resource.of("ReplicaSet"), self.observed.replica_set, stop),
                    Watcher(self.transport, Resource.of("Pod"), self.observed.pod, stop)]
        try:
            for w in watchers:
                w.start()
                if not w.listed.wait(30.0):
                    raise ReplayError(f"{self.transport.host}: could not list {w.resource.plural}")
            self.t0 = self.clock()
            for obj in self.scenario.objects:
                self.create(obj)
            until = self.scenario.until or 0.0
            deadline = self.t0 + until / self.speed
            actions: list[tuple[float, int, Callable[[], None]]] = []
            for i, s in enumerate(self.scenario.steps):
                actions.append((s.at, i, lambda s=s: self.step(s)))  # type: ignore[misc]
            for i, r in enumerate(self.recreations):
                actions.append((r.at, i, lambda r=r: self.recreate(r, deadline)))  # type: ignore[misc]
            for i, d in enumerate(self.history.identity_steps):
                actions.append((d.at, i, lambda d=d: self.identity_step(d)))  # type: ignore[misc]
            for at, _, act in sorted(actions, key=lambda a: (a[0], a[1])):
                self._wait_until(at)
                act()
            self._wait_until(until)
            self._settle(self.clock() + settle)
        finally:
            for w in watchers:
                w.close()
        return self.observed.result()

    def _settle(self, deadline: float) -> None:
        """Read the pods back (bindings a watch had not delivered yet), again until none is pending
        (not bound, not being deleted) or ``deadline`` (wall clock) has passed."""
        while True:
            pending = 0
            for item in (self.transport.call("GET", Resource.of("Pod").collection_path()).get("items") or []):
                item.setdefault("kind", "Pod")
                self.observed.pod(item)
                pending += not (item.get("spec") or {}).get("nodeName") and not item["metadata"].get("deletionTimestamp")
            if not pending or self.clock() >= deadline:
                return
            self.sleep(min(RECREATE_POLL, max(deadline - self.clock(), 0.0)))


def live_transport(kubeconfig: str, context: str | None = None, options: ClientOptions | None = None) -> Transport:
    """The client a live replay writes with (the kube extra's)."""
    return Transport(load_api_client(kubeconfig, context), options or ClientOptions(), user_agent="kubesched/replay")


def replay_live(history: History, scenario: Scenario | None = None, *, transport: Transport, speed: float,
                pool_labels: Sequence[str] = (), changes: Sequence[str] = (), settle: float = 0.0,
                sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Replay ``history`` (or ``scenario``, the same with a what-if's changes) against the API server
    ``transport`` talks to, ``speed`` times as fast as recorded, and compare: the ReplayResult
    document, as :func:`~kubesched.replay.compare.replay` makes it, its ``run`` telling the server,
    the writes sent and retried, and the writes refused (``rejected``). ``settle``: wall seconds
    to wait after the window's end before reading the bindings back."""
    scenario = history.scenario if scenario is None else scenario
    live = LiveReplay(history, scenario, transport, speed, sleep=sleep)
    result = live.run(settle=settle)
    document: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "ReplayResult", "history": history.report.to_dict(),
        "start": history.start, "until": scenario.until, "seed": None, "changes": list(changes),
    }
    document.update(comparison(history, result, pool_labels, live.kept))
    document["run"] = {"live": {"server": transport.host, "speed": speed, "writes": live.writes,
                                "retries": transport.retries},
                       "rejected": live.rejected, "missedWrites": live.missed, "endTime": live.now()}
    return document
