"""The SimulationResult document (docs/scenarios.md describes its fields)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.api.quantity import format_quantity, parse_quantity

if TYPE_CHECKING:
    from kubesched.sim.runner import Simulation

API_VERSION = "kubesched.io/v1alpha1"


def build_result(sim: Simulation, *, decisions: bool = False) -> dict[str, Any]:
    """The document of a finished simulation (built once, by ``Simulation.run``). ``decisions``: add
    the scheduler's preemption decisions and scheduling attempts (empty unless it recorded them)."""
    events = sim.log.events
    pods = dict(sorted(sim.history.pods.items()))
    for key, pod in pods.items():
        pod["identity"] = sim.identities.of[key]
    scheduled = len({e["pod"] for e in events if e["reason"] == "Scheduled"})
    pending = sum(1 for p in pods.values() if p["phase"] == "Pending")
    preemptions = [r for r in sim.scheduler.records.preemptions if r.outcome == "preempted"]
    victims = {e["pod"] for e in events if e["reason"] == "Preempted"}
    result: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "SimulationResult",
        "scenario": sim.scenario.name,
        "seed": sim.seed,
        "events": events,
        "pods": pods,
        "summary": {
            "scheduled": scheduled,
            "pending": pending,
            "preemptions": len(preemptions),
            "victims": len(victims),
        },
        "rejected": sim.log.rejected,
        "nodes": node_utilisation(sim),
        "cluster": sim.cluster.subsystem_reports(),
        "endTime": round(sim.loop.now(), 6),
    }
    if sim.initial.restored_kinds:
        result["snapshot"] = sim.initial.report()
    if sim.drains:
        result["drains"] = [drain.report() for drain in sim.drains]
    if sim.race is not None:
        result["racing"] = sim.race.report()
    if sim.gangs.groups:
        result["podGroups"] = sim.gangs.report()
    policies = preemption_policies(sim)
    if policies:
        result["preemptionPolicies"] = policies
    if decisions:
        result["preemptionDecisions"] = [r.to_dict() for r in sim.scheduler.records.preemptions]
        result["attempts"] = [a.to_dict() for a in sim.scheduler.records.attempts]
    return result


def preemption_policies(sim: Simulation) -> dict[str, dict[str, int]]:
    """What kubesched's opt-in preemption plugins did, per plugin that some profile of some
    scheduler of the run enables: their own counters (``POLICY_COUNTERS`` in
    kubesched/scheduler/metrics.py), summed over the schedulers."""
    out: dict[str, dict[str, int]] = {}
    for scheduler in sim.schedulers:
        names = sorted({pl.name for fwk in scheduler.frameworks.values() for pl in fwk.post_filter_plugins})
        for plugin, counts in scheduler.metrics.policy_report(names).items():
            mine = out.setdefault(plugin, dict.fromkeys(counts, 0))
            for name, count in counts.items():
                mine[name] += count
    return dict(sorted(out.items()))


def node_utilisation(sim: Simulation) -> list[dict[str, Any]]:
    """Requested vs allocatable per node at the end of the run (cpu, memory, pods)."""
    rows = []
    cache = sim.scheduler.cache
    cache.update_snapshot()
    for info in sorted(cache.node_infos, key=lambda n: n.name):
        row: dict[str, Any] = {"node": info.name, "pods": len(info.pods), "allocatablePods": info.allowed_pods}
        for resource in ("cpu", "memory"):
            row[resource] = {
                "requested": format_quantity(resource, info.requested.get(resource, 0)),
                "allocatable": format_quantity(resource, info.allocatable.get(resource, 0)),
            }
        rows.append(row)
    return rows


def requested_share(rows: list[dict[str, Any]], resource: str) -> float | None:
    """``resource`` (cpu or memory) requested over allocatable, each summed over ``rows`` of a
    result's ``nodes`` section; None where nothing of it is allocatable."""
    allocatable = sum(parse_quantity(r[resource]["allocatable"]) for r in rows)
    if not allocatable:
        return None
    return float(sum(parse_quantity(r[resource]["requested"]) for r in rows) / allocatable)
