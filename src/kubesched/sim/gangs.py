"""What became of the gangs: each PodGroup's pods and the most of them bound to nodes at once (the
result's ``podGroups``, there when the run had PodGroups; docs/gang-scheduling.md).

A gang is placed when ``minMember`` of its pods are bound at the same moment: Coscheduling's Permit
lets none of them go before (upstream scheduler-plugins ``coscheduling``), and without it the
default profile may place some and leave the rest pending for ever. ``mostScheduled`` says which
happened, whatever became of the pods later (finished and deleted, preempted): a gang whose
``mostScheduled`` stayed below ``minMember`` never had all its members scheduled. It is counted
from the pods themselves (bound: ``spec.nodeName`` set, finished ones included, as the PodGroup
status's ``scheduled`` counts them), at every change, so that no moment is missed between two
syncs of the PodGroup controller.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesched.k8s.objects import POD_GROUP_LABEL, Obj, key_of, namespace_of


def _group_of(pod: Obj) -> str | None:
    """``namespace/name`` of the PodGroup the pod's label names, if any."""
    name = ((pod.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
    return f"{namespace_of(pod)}/{name}" if name else None


class GangHistory:
    """Watches the cluster's PodGroups and their pods (a watch handler, as ``PodHistory``)."""

    def __init__(self) -> None:
        #: each PodGroup as last seen (kept when it is deleted)
        self.groups: dict[str, Obj] = {}
        #: each group's pods that exist now, and whether each is bound
        self.members: dict[str, dict[str, bool]] = {}
        self.bound: Counter[str] = Counter()
        self.most_bound: Counter[str] = Counter()

    def on_add(self, kind: str, obj: Obj) -> None:
        self._seen(kind, obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        self._seen(kind, new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        group = _group_of(obj) if kind == "Pod" else None
        if group is not None and self.members.get(group, {}).pop(key_of(obj), False):
            self.bound[group] -= 1

    def _seen(self, kind: str, obj: Obj) -> None:
        if kind == "PodGroup":
            self.groups[key_of(obj)] = obj
            return
        group = _group_of(obj) if kind == "Pod" else None
        if group is None:
            return
        pods = self.members.setdefault(group, {})
        bound = bool((obj.get("spec") or {}).get("nodeName"))
        was = pods.get(key_of(obj), False)
        pods[key_of(obj)] = bound
        if bound != was:
            self.bound[group] += 1 if bound else -1
            self.most_bound[group] = max(self.most_bound[group], self.bound[group])

    def report(self) -> dict[str, dict[str, Any]]:
        """Per PodGroup (``namespace/name``): ``minMember``, its status's ``phase`` at the end,
        ``mostScheduled`` (the most of its pods bound at once) and ``pods`` (those that exist at
        the end)."""
        out = {}
        for key in sorted(self.groups):
            group = self.groups[key]
            out[key] = {"minMember": int((group.get("spec") or {}).get("minMember") or 0),
                        "phase": (group.get("status") or {}).get("phase"),
                        "mostScheduled": self.most_bound[key],
                        "pods": sorted(self.members.get(key, {}))}
        return out
