"""A simulated cluster autoscaler (``spec.cluster.autoscaler``; settings in
:mod:`~kubesched.api.cluster_settings.autoscaler`).

Every ``scanInterval`` (10 s, at ``k × interval``) it runs one loop, like the real autoscaler's
``RunOnce``:

**Scale-up.** Candidates are pending pods the scheduler marked ``PodScheduled=False`` reason
``Unschedulable`` (older than ``newPodScaleUpDelay``), except

- pods whose priority is below ``expendablePodsPriorityCutoff`` (default −10): expendable, they
  wait for free space and never cause a scale-up;
- pods with ``status.nominatedNodeName`` naming an existing node: they already preempted and will
  run there soon (Pod Preemption design, "Interactions with Cluster Autoscaler"); they are put on
  that node in the autoscaler's snapshot, so the space they will take is not offered to others.

Candidates that fit an existing or upcoming node (by requests, :mod:`.nodes`) are left to
the scheduler. For the rest each node group with room estimates, by binpacking onto template nodes,
how many new nodes it needs; the expander picks one group and it grows: each new Node is registered
``scaleUpDelay`` later (NotReady, tainted ``node.kubernetes.io/not-ready:NoSchedule``) and becomes
Ready ``nodeStartupTime`` after that. Pods get ``TriggeredScaleUp`` events, pods no group can help
``NotTriggerScaleUp``. No scale-down in a loop that scaled up. When every candidate was marked
unschedulable less than 2 s before the loop, the loop waits for more (no scale-up, no scale-down).
Expendable pods are left out of the autoscaler's snapshot altogether (their space counts as free).

**Scale-down.** A Ready group node is *unneeded* when its utilization (max of cpu and memory
requested / allocatable) is below ``scaleDownUtilizationThreshold`` and every pod on it that matters
can go elsewhere: DaemonSet, mirror and expendable pods don't matter; a pod without a controller
(unless annotated ``cluster-autoscaler.kubernetes.io/safe-to-evict: "true"``), a pod annotated
``safe-to-evict: "false"``, a kube-system pod without a PodDisruptionBudget, a PDB without budget,
or a pod that fits on no other node blocks. A node unneeded for ``scaleDownUnneededTime`` — and not
within ``scaleDownDelayAfterAdd`` of a scale-up, and not taking its group below ``minSize`` — is
removed: empty nodes in bulk and, in the same loop, up to ``maxDrainParallelism`` others (parallel
drain, the default of cluster-autoscaler 1.28). A node that fails the removal simulation is not
considered again for ``unremovableNodeRecheckTimeout``. Removal taints the node
``ToBeDeletedByClusterAutoscaler:NoSchedule``, deletes its pods (grace capped at
``maxGracefulTerminationSec``; events ``ScaleDown``), and deletes the Node once they are gone.
This module decides; adding and removing nodes is carried out by :mod:`.lifecycle`.

Node lifecycle events are recorded with pod ``Node/<name>``: ``NodeAdded``, ``NodeReady``,
``NodeRemoved``. ``report()`` → ``cluster.autoscaler``: ``nodeCount`` (``[[t, n], ...]``, every Node
object of the cluster), ``nodeHours``, ``nodeHoursIncludingProvisioning``, per-group ``groups``,
``scaleUps`` and ``scaleDowns``.

The loop's timers are background timers; a pod turning unschedulable, a node that will become
removable, provisioning and draining hold foreground timers, so a run without ``until`` goes on
exactly as long as the autoscaler still has something to do.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kubesched.api.cluster_settings.autoscaler import (
    NODE_GROUP_LABEL,
    AutoscalerConfig,
    parse_config,
)
from kubesched.api.selectors import LabelSelector
from kubesched.cluster.embedded.autoscaler.lifecycle import NodeLifecycle
from kubesched.cluster.embedded.autoscaler.nodes import (
    SCALE_DOWN_DISABLED,
    TO_BE_DELETED_TAINT,
    Estimate,
    RequestCache,
    SimNode,
    check_removal,
    estimate,
    first_fit,
    priority_of,
    template_node,
)
from kubesched.cluster.embedded.autoscaler.track import NodeTracker, PodTracker
from kubesched.cluster.embedded.controllers.util import is_daemonset_pod, is_mirror_pod
from kubesched.k8s.objects import Obj, is_terminal, key_of
from kubesched.k8s.timefmt import parse_rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

__all__ = ["ClusterAutoscaler", "start_autoscaler"]


class ClusterAutoscaler:
    def __init__(self, cluster: EmbeddedCluster, config: AutoscalerConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.requests = RequestCache()
        self.lifecycle = NodeLifecycle(cluster, config)
        self.pods = PodTracker(self._pod_turned_unschedulable, self.lifecycle.pod_gone)
        self.nodes = NodeTracker(cluster.now, [g.name for g in config.groups])
        cluster.api.watch(self.pods)
        cluster.api.watch(self.nodes)
        self.unremovable_until: dict[str, float] = {}  # failed the removal simulation: not re-checked before
        self.unneeded_since: dict[str, float] = {}
        self.last_scale_up = -math.inf
        self.last_scan = -math.inf
        self.scale_ups: list[dict[str, Any]] = []
        self.scale_downs: list[dict[str, Any]] = []
        self._notified: set[tuple[str, str]] = set()
        self._wakes: set[float] = set()
        for group in config.groups:
            for _ in range(group.initial_size):
                self.lifecycle.register(self.lifecycle.next_name(group), group, initial=True)
        cluster.loop.call_at(0.0, self._scan, background=True)

    # -- timers ------------------------------------------------------------------------------------
    def _next_tick(self, after: float) -> float:
        interval = self.config.scan_interval
        tick = math.ceil(after / interval - 1e-9) * interval
        return tick + interval if tick <= self.last_scan else tick

    def _wake(self, when: float) -> None:
        """Hold the run open until the scan at ``when`` (a foreground no-op timer)."""
        if when not in self._wakes:
            self._wakes.add(when)
            self.cluster.loop.call_at(when, lambda: self._wakes.discard(when))

    def _pod_turned_unschedulable(self) -> None:
        self._wake(self._next_tick(self.cluster.now()))

    # -- the loop ------------------------------------------------------------------------------------
    def _scan(self) -> None:
        now = self.cluster.now()
        self.last_scan = now
        scaled = self._scale_up(now)
        if not scaled and self.config.scale_down_enabled:
            self._scale_down(now)
        self.cluster.loop.call_at(now + self.config.scan_interval, self._scan, background=True)

    def _snapshot(self) -> dict[str, SimNode]:
        """Existing nodes (not being removed) with their assigned pods' requests, plus upcoming ones."""
        snapshot: dict[str, SimNode] = {}
        for node in sorted(self.cluster.api.iter("Node"), key=lambda n: n["metadata"]["name"]):
            name = node["metadata"]["name"]
            if name in self.lifecycle.draining or _has_taint(node, TO_BE_DELETED_TAINT):
                continue
            group = ((node["metadata"].get("labels") or {}).get(NODE_GROUP_LABEL))
            snapshot[name] = SimNode.of(node, group, upcoming=name in self.lifecycle.starting)
        for pod in self.cluster.api.iter("Pod"):
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name in snapshot and not is_terminal(pod) and not self._expendable(pod):
                snapshot[node_name].add(self.requests(pod))
        for name, group in sorted(self.lifecycle.upcoming.items()):
            snapshot[name] = template_node(group, name, self.cluster.api.iter("DaemonSet"))
        return snapshot

    def _expendable(self, pod: Obj) -> bool:
        """Below ``expendablePodsPriorityCutoff``: left out of the autoscaler's snapshot (their space
        counts as free; a node running only them is empty)."""
        return priority_of(pod) < self.config.expendable_cutoff

    # -- scale-up ------------------------------------------------------------------------------------
    def _candidates(self, now: float) -> tuple[list[Obj], list[Obj]]:
        """(candidates for scale-up, nominated pods waiting for their victims)."""
        candidates: list[Obj] = []
        nominated: list[Obj] = []
        for pod in self.pods.unschedulable(self.cluster.api):
            created = pod["metadata"].get("creationTimestamp")
            if created and now - parse_rfc3339(created) < self.config.new_pod_scale_up_delay:
                self._wake(self._next_tick(parse_rfc3339(created) + self.config.new_pod_scale_up_delay))
                continue
            if priority_of(pod) < self.config.expendable_cutoff:
                continue
            nominated_node = (pod.get("status") or {}).get("nominatedNodeName")
            if nominated_node and self.cluster.api.get("Node", None, nominated_node) is not None:
                nominated.append(pod)
                continue
            candidates.append(pod)
        return candidates, nominated

    def _scale_up(self, now: float) -> bool:
        """Whether this loop scaled up, or chose to wait (no scale-down in either case)."""
        candidates, nominated = self._candidates(now)
        if not candidates:
            return False
        if all(now - _marked_unschedulable_at(p) < UNSCHEDULABLE_POD_TIME_BUFFER for p in candidates):
            # all of them were marked a moment ago: more may be coming; wait one loop, without
            # scaling down either (upstream allPodsAreNew)
            self._wake(self._next_tick(now + self.config.scan_interval))
            return True
        snapshot = self._snapshot()
        for pod in nominated:
            target = snapshot.get(pod["status"]["nominatedNodeName"])
            if target is not None:
                target.add(self.requests(pod))
        nodes = list(snapshot.values())
        order = sorted(candidates, key=lambda p: (-priority_of(p), p["metadata"].get("creationTimestamp") or "",
                                                  key_of(p)))
        remaining = [p for p in order if first_fit(nodes, p, self.requests(p)) is None]
        if not remaining:
            return False
        options: list[Estimate] = []
        reasons: dict[str, list[str]] = {key_of(p): [] for p in remaining}
        total = sum(1 for _ in self.cluster.api.iter("Node")) + len(self.lifecycle.upcoming)
        for group in self.config.groups:
            size = self._group_size(group.name)
            headroom = group.max_size - size
            if self.config.max_nodes_total:
                headroom = min(headroom, self.config.max_nodes_total - total)
            template = template_node(group, f"template-{group.name}", self.cluster.api.iter("DaemonSet"))
            for pod in remaining:
                if headroom <= 0:
                    reasons[key_of(pod)].append("max node group size reached")
                elif not template.copy().fits(pod, self.requests(pod)):
                    reasons[key_of(pod)].append("node(s) didn't fit a new node of the group")
            if headroom > 0:
                option = estimate(group.name, template, remaining, self.requests, headroom, group.priority)
                if option.nodes > 0:
                    options.append(option)
        for pod in remaining:  # no group can take it at all (helped later is not an event)
            if len(reasons[key_of(pod)]) == len(self.config.groups):
                self._not_triggered(pod, reasons[key_of(pod)])
        if not options:
            return False
        best = self._expand(options)
        group = next(g for g in self.config.groups if g.name == best.group)
        before = self._group_size(group.name)
        for _ in range(best.nodes):
            self.lifecycle.request(group, now)
        self.last_scale_up = now
        self.unneeded_since.clear()
        pods = sorted(key_of(p) for p in best.pods)
        self.scale_ups.append({"time": round(now, 6), "group": group.name, "from": before,
                               "to": before + best.nodes, "pods": pods})
        message = f"pod triggered scale-up: [{{{group.name} {before}->{before + best.nodes} (max: {group.max_size})}}]"
        for key in pods:
            self.cluster.log.record("TriggeredScaleUp", key, message=message)
        return True

    def _not_triggered(self, pod: Obj, reasons: list[str]) -> None:
        counts: dict[str, int] = {}
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
        detail = ", ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "no node group"
        message = f"pod didn't trigger scale-up: {detail}"
        if (key_of(pod), message) not in self._notified:
            self._notified.add((key_of(pod), message))
            self.cluster.log.record("NotTriggerScaleUp", key_of(pod), message=message)

    def _expand(self, options: list[Estimate]) -> Estimate:
        options = sorted(options, key=lambda o: o.group)
        expander = self.config.expander
        if expander == "most-pods":
            return max(options, key=lambda o: (len(o.pods), -options.index(o)))
        if expander == "least-waste":
            return min(options, key=lambda o: (o.waste, -len(o.pods), options.index(o)))
        if expander == "priority":
            return max(options, key=lambda o: (o.priority, -options.index(o)))
        if len(options) == 1:
            return options[0]
        return options[int(self.cluster.rng.integers(0, len(options)))]

    def _group_size(self, group: str) -> int:
        live = sum(1 for n in self.nodes.members(group) if n not in self.lifecycle.draining)
        return live + sum(1 for g in self.lifecycle.upcoming.values() if g.name == group)

    # -- scale-down --------------------------------------------------------------------------------------
    def _scale_down(self, now: float) -> None:
        snapshot = self._snapshot()
        for name in list(snapshot):
            if snapshot[name].upcoming:
                del snapshot[name]  # neither a candidate nor a destination
        pending, nominated = self._candidates(now)
        for pod in nominated:
            target = snapshot.get(pod["status"]["nominatedNodeName"])
            if target is not None:
                target.add(self.requests(pod))
        for pod in pending:  # pending pods that fit somewhere keep that space
            first_fit(list(snapshot.values()), pod, self.requests(pod))
        pods_by_node: dict[str, list[Obj]] = {}
        for pod in self.cluster.api.iter("Pod"):
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name in snapshot and not is_terminal(pod) and not pod["metadata"].get("deletionTimestamp") \
                    and not self._expendable(pod):
                pods_by_node.setdefault(node_name, []).append(pod)
        pdbs = [(LabelSelector.from_dict((p.get("spec") or {}).get("selector")), p)
                for p in self.cluster.api.iter("PodDisruptionBudget")]
        budget = {key_of(p): int((p.get("status") or {}).get("disruptionsAllowed") or 0) for _, p in pdbs}
        sizes = {g.name: self._group_size(g.name) for g in self.config.groups}
        candidates = sorted(
            (n for n in snapshot.values() if self._removable_kind(n)),
            key=lambda n: (self._utilization(n, pods_by_node.get(n.name, [])), n.name))
        unneeded: dict[str, list[Obj]] = {}
        self.unremovable_until = {n: t for n, t in self.unremovable_until.items() if t > now + 1e-9}
        for node in candidates:
            group = self.config.group(node.group)
            if group is None or sizes[group.name] <= group.min_size or node.name in self.unremovable_until:
                continue
            if self._utilization(node, pods_by_node.get(node.name, [])) >= \
                    self.config.scale_down_utilization_threshold:
                continue
            destinations = [d for d in snapshot.values() if d.name != node.name and d.name not in unneeded]
            verdict = check_removal(node, pods_by_node.get(node.name, []), destinations, self.requests,
                                    cutoff=self.config.expendable_cutoff, pdbs=pdbs, pdb_budget=budget,
                                    skip_system_pods=self.config.skip_nodes_with_system_pods)
            if verdict.blocker is None:
                unneeded[node.name] = verdict.movable
                sizes[group.name] -= 1
            else:
                self.unremovable_until[node.name] = now + self.config.unremovable_recheck_timeout
        self.unneeded_since = {n: self.unneeded_since.get(n, now) for n in unneeded}
        ready_at = {n: since + self.config.scale_down_unneeded_time for n, since in self.unneeded_since.items()}
        cooldown_end = self.last_scale_up + self.config.scale_down_delay_after_add
        eligible = [n for n in unneeded if ready_at[n] <= now + 1e-9]
        if now + 1e-9 < cooldown_end or not eligible:
            due = [max(t, cooldown_end) for t in ready_at.values()]
            if due:
                self._wake(self._next_tick(min(due)))
            return
        # empty nodes go in bulk and, in the same loop, non-empty ones are drained (parallel drain,
        # the default since cluster-autoscaler 1.28)
        for name in [n for n in eligible if not unneeded[n]][: self.config.max_empty_bulk_delete]:
            self._remove_node(name, [])
        slots = self.config.max_drain_parallelism - len(self.lifecycle.drains)
        for name in [n for n in eligible if unneeded[n]][: max(0, slots)]:
            self.lifecycle.drains.add(name)
            self._remove_node(name, unneeded[name])
        left = [t for n, t in ready_at.items() if n not in self.lifecycle.draining]
        if left:  # the next loop (or the one after the drain) goes on
            self._wake(self._next_tick(max(min(left), now)))

    def _removable_kind(self, node: SimNode) -> bool:
        annotations = (node.node.get("metadata") or {}).get("annotations") or {}
        return (node.group is not None and not node.upcoming and node.name not in self.lifecycle.draining
                and annotations.get(SCALE_DOWN_DISABLED) != "true")

    def _utilization(self, node: SimNode, pods: list[Obj]) -> float:
        probe = SimNode(node.name, node.node, node.group, node.allocatable)
        for pod in pods:
            if not (self.config.ignore_daemonsets_utilization and is_daemonset_pod(pod)) and not is_mirror_pod(pod):
                probe.add(self.requests(pod))
        return probe.utilization()

    def _remove_node(self, name: str, movable: list[Obj]) -> None:
        """Remove the node (:meth:`.NodeLifecycle.remove`) and record the scale-down."""
        node = self.lifecycle.remove(name)
        if node is None:
            return
        self.unneeded_since.pop(name, None)
        self.scale_downs.append({"time": round(self.cluster.now(), 6), "node": name,
                                 "group": (node["metadata"].get("labels") or {}).get(NODE_GROUP_LABEL),
                                 "pods": sorted(key_of(p) for p in movable)})

    # -- result ---------------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        now = self.cluster.now()
        return {
            "nodeCount": self.nodes.series(None),
            "nodeHours": round(self.nodes.node_hours(None, now), 4),
            "nodeHoursIncludingProvisioning": round(
                self.nodes.node_hours(None, now) + self.lifecycle.provisioning(now) / 3600.0, 4),
            "groups": {g.name: {"minSize": g.min_size, "maxSize": g.max_size,
                                "nodeCount": self.nodes.series(g.name),
                                "nodeHours": round(self.nodes.node_hours(g.name, now), 4)}
                       for g in self.config.groups},
            "scaleUps": list(self.scale_ups),
            "scaleDowns": list(self.scale_downs),
        }


#: upstream ``unschedulablePodTimeBuffer``: pods marked unschedulable more recently than this are "new"
UNSCHEDULABLE_POD_TIME_BUFFER = 2.0


def _marked_unschedulable_at(pod: Obj) -> float:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("lastTransitionTime"):
            return parse_rfc3339(condition["lastTransitionTime"])
    return -math.inf


def _has_taint(node: Obj, key: str) -> bool:
    return any(t.get("key") == key for t in (node.get("spec") or {}).get("taints") or [])


def start_autoscaler(cluster: EmbeddedCluster, section: dict[str, Any]) -> ClusterAutoscaler:
    """Factory for ``spec.cluster.autoscaler`` (see :mod:`kubesched.cluster.embedded.subsystems`)."""
    return ClusterAutoscaler(cluster, parse_config(section))
