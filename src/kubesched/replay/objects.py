"""Recorded objects made into objects to replay: what the API server added (uid, resourceVersion,
status, managed fields) taken off, pods unbound, and PriorityClasses the history only names."""

from __future__ import annotations

from typing import Any

import orjson

from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj

#: the metadata a replayed object keeps (the rest is the API server's, made anew by the replay's)
KEPT_METADATA = ("name", "namespace", "labels", "annotations")


def _metadata(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {k: deep_copy(meta[k]) for k in KEPT_METADATA if meta.get(k)}


def replayable_pod(obj: Obj, *, keep_node: bool = False) -> Obj:
    """A recorded pod as the replay creates it: its spec without ``nodeName`` (the scheduler under
    test places it; ``keep_node`` keeps it, for a pod already running when the window starts),
    without ``priority`` and ``preemptionPolicy`` (priority admission sets them again from the
    class, as the API server did), without status, owner references or API server metadata.
    Owner references go because the replay does not have this pod's controller (a pod whose
    controller it has is made by that controller: :mod:`.owners`): the history's own re-creations
    are replayed instead."""
    spec = deep_copy(obj.get("spec") or {})
    for field in ("priority", "preemptionPolicy"):
        spec.pop(field, None)
    if not keep_node:
        spec.pop("nodeName", None)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _metadata(obj), "spec": spec}
    pod["metadata"].setdefault("namespace", DEFAULT_NAMESPACE)
    return pod


def replayable_object(obj: Obj) -> Obj:
    """A node, PriorityClass or PodDisruptionBudget as recorded, without the API server's metadata
    and without status (a node's capacity and allocatable excepted: the scheduler reads them)."""
    out = {k: deep_copy(v) for k, v in obj.items() if k not in ("metadata", "status")}
    out["metadata"] = _metadata(obj)
    if obj.get("kind") == "Node":
        status = obj.get("status") or {}
        out["status"] = {k: deep_copy(status[k]) for k in ("capacity", "allocatable") if status.get(k)}
    return out


def node_patch(new: Obj) -> Obj:
    """A merge patch that makes a node's labels, taints and cordon what ``new`` (a whole recorded
    node) has: absent fields are cleared (``null``)."""
    spec = new.get("spec") or {}
    labels = (new.get("metadata") or {}).get("labels")
    return {"metadata": {"labels": deep_copy(labels) if labels else None},
            "spec": {"unschedulable": spec.get("unschedulable") or None,
                     "taints": deep_copy(spec["taints"]) if spec.get("taints") else None}}


def inferred_classes(pods: list[tuple[Obj, Obj]], known: set[str]) -> tuple[list[Obj], list[str]]:
    """PriorityClasses for the classes the recorded pods name that the history never defines,
    made of the value and preemption policy the pods carried (``(recorded pod, replayed pod)``
    pairs): without them, priority admission would refuse every such pod. Returns the classes and
    a note for each."""
    seen: dict[str, tuple[int, str]] = {}
    for recorded, _ in pods:
        spec = recorded.get("spec") or {}
        name = spec.get("priorityClassName")
        if not name or name in known or name in seen or name.startswith("system-"):
            continue
        seen[name] = (int(spec.get("priority") or 0), spec.get("preemptionPolicy") or "PreemptLowerPriority")
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, "preemptionPolicy": policy} for name, (value, policy) in sorted(seen.items())]
    notes = [f"PriorityClass {name} is not in the history: made from its pods (value {value}, {policy})"
             for name, (value, policy) in sorted(seen.items())]
    return classes, notes


class CompactObjects:
    """Objects by key, each kept as its JSON text and decoded when read: the latest version of
    every pod of a long history (what a later update is compared with) in a fraction of the memory
    of the decoded objects."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, str], str] = {}

    def __setitem__(self, key: tuple[str, str], obj: Obj) -> None:
        self._texts[key] = orjson.dumps(obj).decode()

    def get(self, key: tuple[str, str]) -> Obj | None:
        text = self._texts.get(key)
        return None if text is None else dict(orjson.loads(text))


def class_fields(pod: Obj) -> Obj:
    """What :func:`inferred_classes` reads of a recorded pod (its class, priority and policy)."""
    spec = pod.get("spec") or {}
    return {"spec": {k: spec[k] for k in ("priorityClassName", "priority", "preemptionPolicy") if k in spec}}
