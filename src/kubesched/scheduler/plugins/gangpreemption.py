"""GangPreemption (kubesched, opt-in): preemption that places a whole gang or evicts nobody.

With Coscheduling, upstream's DefaultPreemption still preempts member by member: the first member
of a PodGroup that does not fit evicts pods for itself alone, although the group can only run once
``minMember`` members are placed. When the rest cannot be placed, those victims were evicted for
nothing, and the half-placed gang holds their nodes until its Permit times out.

GangPreemption replaces DefaultPreemption in a profile. For a pod without a PodGroup (or whose group
already has ``minMember`` members placed) it is DefaultPreemption. For a member of an incomplete
group it plans the members still needed, the failing pod first and then the other pending members
by creation: each goes to a node where it fits without preemption, else to the candidate
DefaultPreemption's rules would pick for it — every member on a node of its own. Only when every
needed member has a node does it act: the victims of all of them are preempted, the failing pod
is nominated to its node (the PostFilter result) and the other planned members are nominated to
theirs, so that the freed room waits for the gang. Otherwise nothing is evicted and the attempt
says which member could not be placed.
"""

from __future__ import annotations

from kubesched.k8s.objects import ApiError
from kubesched.k8s.timefmt import parse_rfc3339
from kubesched.scheduler.framework.candidates import Candidate, PreemptionRecord
from kubesched.scheduler.framework.interface import Code, CycleState, PostFilterResult, Status
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.coscheduling import assigned_members, group_members, group_name
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption

NAME = "GangPreemption"


class GangPreemption(DefaultPreemption):
    name = NAME

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        name = group_name(pod)
        group = self.handle.get("PodGroup", pod.namespace, name) if name else None
        current = self.handle.current_pod(pod)
        if group is None or current is None:
            return super().post_filter(state, pod, statuses)
        min_member = int((group.get("spec") or {}).get("minMember") or 0)
        needed = min_member - assigned_members(self.handle, pod.namespace, name)
        ok, _ = self.pod_eligible_to_preempt_others(current, statuses.get(current.nominated_node_name))
        if needed <= 0 or not ok:
            return super().post_filter(state, pod, statuses)
        self.handle.metrics.preemption_attempts += 1
        record = PreemptionRecord(time=self.handle.now(), pod=current.key, priority=current.priority)
        self.handle.record_preemption(record)
        result, status = self._preempt_gang(state, current, statuses, f"{pod.namespace}/{name}", needed, record)
        record.message = status.message()
        if status.message():
            return result, Status(status.code, (f"preemption: {status.message()}",))
        return result, status

    # -- the plan --------------------------------------------------------------------------------
    def _pending_members(self, pod: PodInfo, group: str) -> list[PodInfo]:
        """The failing pod, then the group's other unassigned, undeleted members, oldest first."""
        others: list[tuple[float, str, PodInfo]] = []
        for obj in group_members(self.handle, pod.namespace, group):
            meta = obj.get("metadata") or {}
            if meta.get("uid") == pod.uid or (obj.get("spec") or {}).get("nodeName") or meta.get("deletionTimestamp"):
                continue
            created = parse_rfc3339(meta["creationTimestamp"]) if meta.get("creationTimestamp") else 0.0
            others.append((created, str(meta.get("name") or ""), PodInfo.from_pod(obj)))
        return [pod] + [info for _, _, info in sorted(others, key=lambda t: (t[0], t[1]))]

    def _preempt_gang(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status], full_name: str, needed: int,
        record: PreemptionRecord,
    ) -> tuple[PostFilterResult | None, Status]:
        members = self._pending_members(pod, full_name.split("/", 1)[1])
        if len(members) < needed:
            record.outcome = "no candidates"
            return None, Status.unschedulable(
                f"PodGroup {full_name} needs {needed} more members to run and only {len(members)} are pending")
        plan: list[tuple[PodInfo, Candidate]] = []
        used: set[str] = set()
        for member in members[:needed]:
            candidate, reason = self._place(member, state if member is pod else None,
                                            statuses if member is pod else None, used)
            if candidate is None:
                record.outcome = "no candidates"
                record.candidates = [c for _, c in plan]
                return None, Status.unschedulable(
                    f"not every member of PodGroup {full_name} can be placed ({len(plan)} of {needed}); "
                    f"pod {member.name}: {reason}")
            used.add(candidate.node)
            plan.append((member, candidate))
        record.candidates = [c for _, c in plan]
        record.chosen = plan[0][1].node
        record.criterion = f"gang of {needed}"
        for member, candidate in plan:
            if candidate.victims:
                error = self.evaluator.prepare_candidate(candidate, member)
                if error is not None:
                    record.outcome = "error"
                    return None, error
            if member is not pod:
                self._nominate(member, candidate.node)
        record.outcome = "preempted"
        return PostFilterResult(plan[0][1].node), Status(Code.SUCCESS)

    def _place(self, member: PodInfo, state: CycleState | None, statuses: dict[str, Status] | None,
               used: set[str]) -> tuple[Candidate | None, str]:
        """A node for ``member`` outside ``used``: one where it fits as things are (no victims), else
        the preemption candidate DefaultPreemption's rules pick; or why there is none."""
        fwk = self.handle.framework
        if state is None or statuses is None:
            ok, why = self.pod_eligible_to_preempt_others(member, None)
            if not ok:
                return None, why
            state = CycleState()
            _, pre = fwk.run_pre_filter(state, member)
            if pre is not None:
                return None, pre.message()
            statuses = {}
            for info in self.handle.snapshot().node_infos:
                if info.name in used:
                    continue
                st = fwk.run_filter_with_nominated(state, member, info)
                if st is None:
                    return Candidate(info.name, [], 0), ""
                statuses[info.name] = st
        scratch = PreemptionRecord(time=self.handle.now(), pod=member.key, priority=member.priority)
        candidate, _, status = self.evaluator.find_candidate(state, member, statuses, scratch, exclude=used)
        return candidate, status.message()

    def _nominate(self, member: PodInfo, node: str) -> None:
        try:
            self.handle.cluster.patch_pod_status(member.obj, {"nominatedNodeName": node})
        except ApiError:
            pass  # the member is gone or changed: its own cycle will find a node
