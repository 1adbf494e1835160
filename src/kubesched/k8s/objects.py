"""Kubernetes objects as plain JSON dicts (treated as immutable: an update replaces the object), with
the accessors and constants every layer shares."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

#: the pod condition set on pods about to be disrupted (preemption victims, kubelet evictions)
DISRUPTION_TARGET = "DisruptionTarget"

NAMESPACED_KINDS = frozenset(
    {
        "Pod",
        "ResourceQuota",
        "PodDisruptionBudget",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "Service",
        "ReplicationController",
        "Event",
        "Lease",
    }
)


class ApiError(Exception):
    """An API call failed the way a Kubernetes API server would answer it."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


def is_namespaced(kind: str) -> bool:
    return kind in NAMESPACED_KINDS
