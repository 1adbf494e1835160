"""What pods actually use, as opposed to what they request.

The scheduler only knows requests; the kubelet's eviction manager acts on *usage* (the working set).
A pod declares its usage with the annotation ``kubesched.io/usage``:

- a constant per resource: ``memory=1Gi,cpu=500m``;
- a step profile, times relative to the moment the pod started on its node:
  ``memory=512Mi@0s,2Gi@30s`` (512Mi from the start, 2Gi from 30 s on). An item ``resource=q[@t]``
  starts a resource, a bare ``q@t`` continues the profile of the resource before it, so
  ``memory=512Mi@0s,2Gi@30s,cpu=250m`` is a memory profile plus a constant cpu. Times must increase
  within a resource; before its first point a resource uses nothing.

Resources are ``memory``, ``cpu`` and ``ephemeral-storage`` (the ones kubelet eviction signals
measure), quantities in Kubernetes syntax, times in Go duration syntax.

A running pod *without* the annotation uses, per resource, what it requests (``default_usage`` =
``"requests"``) or nothing (``"zero"``); the eviction manager chooses (``spec.cluster.eviction``).

:class:`NodeUsage` is a node-agent lifecycle handler: it knows which pods run on which node since
when and answers "what does node N (or pod P) use now". It calls its subscribers when a pod
starts or stops and at every step of a profile (a foreground timer, so a run does not end before a
declared usage change has happened).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api.resources import pod_requests
from kubesched.api.usage import USAGE_ANNOTATION, Profile, UsageSyntaxError, parse_usage
from kubesched.k8s.objects import Obj, key_of
from kubesched.k8s.timefmt import parse_rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

def value_at(points: list[tuple[float, int]], elapsed: float) -> int:
    """The step function's value ``elapsed`` seconds after the start (0 before the first point)."""
    i = bisect.bisect_right([t for t, _ in points], elapsed) - 1
    return points[i][1] if i >= 0 else 0


def declared_profile(pod: Mapping[str, Any]) -> Profile | None:
    """The pod's parsed annotation; None without one. An invalid value counts as absent (manifests
    are validated before a run; see :func:`check_usage_annotation`)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(USAGE_ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        return parse_usage(text)
    except UsageSyntaxError:
        return None


@dataclass(slots=True)
class RunningPod:
    """A pod as the node's usage tracker sees it."""

    pod: Obj
    node: str
    started: float
    requests: dict[str, int]
    profile: Profile | None
    default_usage: str

    @property
    def key(self) -> str:
        return key_of(self.pod)

    def usage(self, resource: str, now: float) -> int:
        if self.profile is None:
            return self.requests.get(resource, 0) if self.default_usage == "requests" else 0
        points = self.profile.get(resource)
        return value_at(points, now - self.started) if points else 0

    def request(self, resource: str) -> int:
        return self.requests.get(resource, 0)


ChangeCallback = Callable[[str], None]


class NodeUsage:
    """Usage of running pods per node (a
    :class:`~kubesched.cluster.embedded.kubelet.lifecycle.PodLifecycleHandler` of the node agent).
    Pods already running when it is created are picked up at once."""

    def __init__(self, cluster: EmbeddedCluster, default_usage: str = "requests") -> None:
        self.cluster = cluster
        self.default_usage = default_usage
        self._subscribers: list[ChangeCallback] = []
        self._pods: dict[str, dict[str, RunningPod]] = {}  # node -> uid -> pod
        cluster.node_agent.add_lifecycle_handler(self)
        for pod in cluster.api.list("Pod"):
            if (pod.get("status") or {}).get("phase") == "Running" and (pod.get("spec") or {}).get("nodeName"):
                self.pod_started(pod, pod["spec"]["nodeName"])

    def subscribe(self, callback: ChangeCallback) -> None:
        """Call ``callback(node)`` whenever what ``node`` uses may have changed."""
        self._subscribers.append(callback)

    # -- PodLifecycleHandler -------------------------------------------------------------------
    def pod_started(self, pod: Obj, node: str) -> None:
        now = self.cluster.now()
        start_time = (pod.get("status") or {}).get("startTime")
        started = min(parse_rfc3339(start_time), now) if start_time else now
        profile = declared_profile(pod)
        uid = pod["metadata"].get("uid", "")
        self._pods.setdefault(node, {})[uid] = RunningPod(
            pod, node, started, pod_requests(pod), profile, self.default_usage)
        if profile:
            for when in sorted({started + t for points in profile.values() for t, _ in points}):
                if when > now:
                    self.cluster.loop.call_at(when, lambda: self._step(node, uid))
        self._changed(node)

    def pod_stopped(self, pod: Obj, node: str) -> None:
        running = self._pods.get(node)
        if running is not None and running.pop(pod["metadata"].get("uid", ""), None) is not None:
            if not running:
                del self._pods[node]
            self._changed(node)

    def _step(self, node: str, uid: str) -> None:
        if uid in self._pods.get(node, {}):
            self._changed(node)

    def _changed(self, node: str) -> None:
        for callback in list(self._subscribers):
            callback(node)

    # -- queries -------------------------------------------------------------------------------
    def nodes(self) -> list[str]:
        return sorted(self._pods)

    def pods_on(self, node: str) -> list[RunningPod]:
        """Running pods of ``node`` in a stable order (namespace/name)."""
        return sorted(self._pods.get(node, {}).values(), key=lambda p: p.key)

    def tracks(self, node: str, uid: str) -> bool:
        """Whether the pod of ``uid`` still runs on ``node`` (its containers are not gone yet)."""
        return uid in self._pods.get(node, {})

    def node_usage(self, node: str, resource: str, now: float | None = None) -> int:
        t = self.cluster.now() if now is None else now
        return sum(p.usage(resource, t) for p in self._pods.get(node, {}).values())
