"""Kubernetes objects as plain JSON dicts (treated as immutable: an update replaces the object), with
the accessors and constants every layer shares: object keys, pod phases, well-known names. A kind's
scope, like everything else about a kind, is in :mod:`kubesched.k8s.kinds`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.k8s.kinds import is_namespaced

Obj = dict[str, Any]

DEFAULT_NAMESPACE = "default"
#: ``spec.schedulerName`` of a pod that names no scheduler (the API server's default)
DEFAULT_SCHEDULER_NAME = "default-scheduler"
#: the Lease (``kube-system``) the default kube-scheduler elects its leader on, and kubesched's own:
#: each scheduler of a cluster has a lock of its own (upstream's "Configure Multiple Schedulers")
KUBE_SCHEDULER_LEASE_NAME = "kube-scheduler"
KUBESCHED_LEASE_NAME = "kubesched"
#: the pod condition set on pods about to be disrupted (preemption victims, kubelet evictions)
DISRUPTION_TARGET = "DisruptionTarget"
#: the score range of a scheduler Score plugin after NormalizeScore (``framework.MaxNodeScore``)
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
#: the label naming a pod's PodGroup (scheduler-plugins' Coscheduling, scheduling.x-k8s.io)
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
#: pod phases a pod never leaves (``v1.PodSucceeded``, ``v1.PodFailed``)
TERMINAL_PHASES = ("Succeeded", "Failed")


class ApiError(Exception):
    """An API call failed the way a Kubernetes API server would answer it."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def object_key(kind: str, namespace: str | None, name: str) -> str:
    """The key an object is filed under: ``namespace/name`` (namespace defaulting to ``default``)
    for a namespaced kind, ``name`` otherwise."""
    return f"{namespace or DEFAULT_NAMESPACE}/{name}" if is_namespaced(kind) else name


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of an object that has a namespace, else ``name``. For a stored object this
    is :func:`object_key` of its kind (a namespaced object always carries its namespace)."""
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


def split_key(key: str) -> tuple[str, str]:
    """``namespace/name`` -> ``(namespace, name)``."""
    ns, _, name = key.partition("/")
    return ns, name


def namespace_of(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, ``default`` when unset."""
    return str((obj.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE)


def phase_of(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("status") or {}).get("phase")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """The pod has finished: phase Succeeded or Failed."""
    return phase_of(pod) in TERMINAL_PHASES


def scheduler_name_of(pod: Mapping[str, Any]) -> str:
    """``spec.schedulerName``, the default scheduler's name when unset."""
    return str((pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME)
