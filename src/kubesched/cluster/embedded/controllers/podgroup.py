"""PodGroup status (scheduler-plugins' PodGroup controller, release v0.28), for groups of
Coscheduling: ``Pending`` while fewer pods than ``minMember`` exist, ``Scheduling`` once they do,
``Running`` when ``minMember`` members run (or succeeded), ``Finished`` when ``minMember`` succeeded,
``Failed`` when a member failed and the group cannot make ``minMember`` otherwise. ``running``,
``succeeded``, ``failed`` and ``scheduled`` (members bound to a node) count the members;
``occupiedBy`` names the owner of the first member. Finished and Failed groups are left alone.

Upstream moves one phase per reconcile (each status write triggers the next); here a sync runs the
same steps until the phase is stable, with one write.
"""

from __future__ import annotations

from typing import Any

from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.k8s.objects import POD_GROUP_LABEL, Obj, key_of, namespace_of

_DONE = ("Finished", "Failed")


class PodGroupController(Controller):
    kind = "PodGroup"

    def start(self) -> None:
        for group in sorted(self.api.list(self.kind), key=key_of):
            self.enqueue(key_of(group))

    def pod_changed(self, pod: Obj) -> None:
        name = ((pod.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
        if name:
            self.enqueue(f"{namespace_of(pod)}/{name}")

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self.pod_changed(obj)

    def sync(self, key: str) -> None:
        group = self.get(key)
        if group is None:
            return
        status: dict[str, Any] = dict(group.get("status") or {})
        if status.get("phase") in _DONE:
            return
        namespace, name = namespace_of(group), group["metadata"]["name"]
        members = sorted((p for p in self.api.iter("Pod") if namespace_of(p) == namespace
                          and ((p["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)) == name),
                         key=lambda p: p["metadata"]["name"])
        min_member = int((group.get("spec") or {}).get("minMember") or 0)
        for _ in range(4):  # the phases reachable in one go: "" -> Pending -> Scheduling -> Running...
            before = status.get("phase")
            self._step(status, members, min_member)
            if status.get("phase") == before:
                break
        status["scheduled"] = sum(1 for p in members if (p.get("spec") or {}).get("nodeName"))
        self.update_status(group, status)

    @staticmethod
    def _step(status: dict[str, Any], members: list[Obj], min_member: int) -> None:
        phase = status.get("phase") or ""
        if phase == "":
            status["phase"] = "Pending"
            return
        if phase == "Pending":
            if len(members) >= min_member:
                status["phase"] = "Scheduling"
                refs = (members[0]["metadata"].get("ownerReferences") or []) if members else []
                if refs:
                    status["occupiedBy"] = f"{namespace_of(members[0])}/{refs[0].get('name')}"
            return
        phases = [(p.get("status") or {}).get("phase") for p in members]
        running, succeeded, failed = phases.count("Running"), phases.count("Succeeded"), phases.count("Failed")
        status.update(running=running, succeeded=succeeded, failed=failed)
        if len(members) < min_member:
            status["phase"] = "Pending"
            return
        status["phase"] = "Running" if succeeded + running >= min_member else "Scheduling"
        if failed and failed + running + succeeded >= min_member:
            status["phase"] = "Failed"
        if succeeded >= min_member:
            status["phase"] = "Finished"
