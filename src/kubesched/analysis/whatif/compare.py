"""Comparing the two runs of a what-if and explaining the differences: who would be preempted (by
whom, where, why, and which PodDisruptionBudgets that violates), which pods would start, stop, not
start or move, what a drain's evicted pods were replaced by, and the impact per namespace and
PriorityClass (:func:`compare`, the WhatIfResult document)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.pairing import Pairing
from kubesched.analysis.whatif.preemption import BaselinePreemption
from kubesched.api.budgets import BudgetIndex
from kubesched.api.loader import Scenario
from kubesched.api.snapshot import pod_state
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj


@dataclass
class Run:
    """One of the two simulations: its result, and what the simulation knew of its pods (their
    controllers and labels, which the result does not carry)."""

    result: dict[str, Any]
    #: pod key -> its controller: namespace, and the controlling ownerReference's kind, name and uid
    owners: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)


def _pod_key(pod: Obj) -> str:
    """The key a run's result gives the pod."""
    meta = pod["metadata"]
    return f"{meta.get('namespace') or DEFAULT_NAMESPACE}/{meta['name']}"


@dataclass
class Before:
    """What the comparison reads of the scenarios, taken before a simulation may take their objects."""

    budgets: BudgetIndex  # the changed cluster's PodDisruptionBudgets
    placed: set[str]  # pods the input already has on a node (running, or bound and starting)
    initial: set[str]  # every pod of the changed scenario's input
    preemption: BaselinePreemption  # whether the baseline preempts, and why

    @classmethod
    def of(cls, baseline: Scenario, changed: Scenario, preemption: BaselinePreemption) -> Before:
        placed = {_pod_key(o) for o in baseline.objects if o["kind"] == "Pod" and pod_state(o) in ("running", "starting")}
        initial = {_pod_key(o) for o in changed.objects if o["kind"] == "Pod"}
        budgets = BudgetIndex(deep_copy(o) for o in changed.objects if o["kind"] == "PodDisruptionBudget")
        return cls(budgets, placed, initial, preemption)


def _violated_budgets(victim: str, run: Run, budgets: BudgetIndex) -> list[str]:
    """The budgets selecting the victim (as the scheduler's preemption selects them), by name."""
    return sorted(budgets.selecting(victim.split("/", 1)[0], run.labels.get(victim, {})))


def _preemptions(run: Run, budgets: BudgetIndex) -> list[dict[str, Any]]:
    out = []
    for decision in run.result.get("preemptionDecisions", []):
        if decision["outcome"] != "preempted":
            continue
        chosen = next(c for c in decision["candidates"] if c["node"] == decision["chosen"])
        # CrossNodePreemption: victims on other nodes than the chosen one, with what named them
        named_by = {v["pod"]: v["namedBy"] for v in chosen.get("victimsElsewhere") or ()}
        for victim in chosen["victims"]:
            violates = victim["pod"] in chosen.get("pdbViolatingVictims", [])
            entry = {
                "time": decision["time"], "victim": victim["pod"], "victimPriority": victim["priority"],
                "preemptor": decision["pod"], "preemptorPriority": decision["priority"],
                "node": decision["chosen"], "victimNode": victim.get("node") or decision["chosen"],
                "criterion": decision["criterion"],
                "violatesPDB": violates,
                "violatedPDBs": _violated_budgets(victim["pod"], run, budgets) if violates else [],
            }
            if victim["pod"] in named_by:
                entry["namedBy"] = named_by[victim["pod"]]
            out.append(entry)
    return out


def _impact(result: dict[str, Any], victims: set[str]) -> dict[tuple[str, str], Counter[str]]:
    impact: dict[tuple[str, str], Counter[str]] = {}
    for key, pod in result["pods"].items():
        group = (key.split("/", 1)[0], pod.get("priorityClassName") or "(none)")
        counter = impact.setdefault(group, Counter())
        counter[pod["phase"]] += 1
        if key in victims:
            counter["Preempted"] += 1
    return impact


def _running(result: dict[str, Any], key: str | None) -> bool:
    return key is not None and result["pods"][key]["phase"] in ("Running", "Succeeded")


#: the events that start a pod's going away (graceful deletion, or deletion at once), after which
#: its controller makes a new pod (a ReplicaSet counts a terminating pod out at once)
_GOING = ("Terminating", "Deleted")


def _replacements(run: Run, initial: set[str]) -> dict[str, str]:
    """For each pod of a controller that went away during ``run``, the pod that controller made in
    its place: each controller's going pods and the pods it made during the run (any pod not in the
    input ``initial``, and a pod made again under its old name), paired in the order of the run's
    events. A pod is told by its controller (namespace, kind, name and uid), never by its generated
    name, which says nothing of which pod replaced which (a StatefulSet's new pod has the old one's
    name). The order is per controller and not per event: a controller that sees a pod go makes the
    new one at once, before the going is logged."""
    going: dict[tuple[str, str, str, str], list[str]] = {}
    made: dict[tuple[str, str, str, str], list[str]] = {}
    alive: set[str] = set()  # pods created and not going yet (a key has one pod at a time)
    created: set[str] = set()
    for event in run.result["events"]:
        reason, key = event["reason"], event["pod"]
        owner = run.owners.get(key)
        if reason == "Created":
            if owner is not None and (key not in initial or key in created):
                made.setdefault(owner, []).append(key)
            created.add(key)
            alive.add(key)
        elif reason in _GOING and key in alive:
            alive.discard(key)
            if owner is not None:
                going.setdefault(owner, []).append(key)
    return {gone: new for owner, gone_pods in going.items() for gone, new in zip(gone_pods, made.get(owner, []))}


def _replaced_by(run: Run, key: str) -> dict[str, Any]:
    pod = run.result["pods"][key]
    return {"pod": key, "node": pod["node"], "phase": pod["phase"], "identity": pod.get("identity") or key}


def _drains(new: Run, replaced: dict[str, str]) -> list[dict[str, Any]]:
    drains = []
    for drain in new.result.get("drains", []):
        pods = []
        for entry in drain["pods"]:
            entry = dict(entry)
            replacement = replaced.get(entry["pod"])
            if replacement is not None:
                entry["replacedBy"] = _replaced_by(new, replacement)
            elif entry["evicted"] is not None:
                entry["lost"] = True  # nothing the drain evicted it for came back
            pods.append(entry)
        drains.append({**drain, "pods": pods})
    return drains


def _preemption_note(preemption: BaselinePreemption, changes: Changes) -> str | None:
    """Why --enable/--disable-preemption cannot make a difference, when the baseline is so already."""
    if changes.preemption is None or preemption.enabled != changes.preemption:
        return None
    flag = "--enable-preemption" if changes.preemption else "--disable-preemption"
    return (f"preemption is already {'enabled' if changes.preemption else 'disabled'} in the baseline "
            f"({preemption.reason}): {flag} changes nothing")


def _rejected(base: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects admission refused in the changed run and not in the baseline (an object
    ``--apply`` added that names a PriorityClass the cluster has not, say): what was refused and
    the API server's words. The baseline's refusals are taken out one for one (same kind, name and
    words), so a refusal both runs have is no difference."""
    seen = Counter((r["kind"], r["name"], r["message"]) for r in base.get("rejected") or ())
    out = []
    for r in new.get("rejected") or ():
        key = (r["kind"], r["name"], r["message"])
        if seen[key]:
            seen[key] -= 1
            continue
        namespace, _, name = str(r["name"]).rpartition("/")
        out.append({"time": r["time"], "kind": r["kind"], "name": name, "namespace": namespace or None,
                    "code": r["code"], "reason": r["message"]})
    return out


def compare(baseline: Scenario, before: Before, base: Run | dict[str, Any], new: Run | dict[str, Any],
            changes: Changes) -> dict[str, Any]:
    """The diff document of two runs of the ``baseline`` and changed scenarios (``before``: what was
    read of them before they ran)."""
    base = base if isinstance(base, Run) else Run(base)
    new = new if isinstance(new, Run) else Run(new)
    b, n = base.result, new.result
    pairs = Pairing.of(b, n)
    base_pre, new_pre = _preemptions(base, before.budgets), _preemptions(new, before.budgets)
    # a preemption is the same in both runs when the same victim falls to the same preemptor
    base_pairs = {pairs.pair(p, in_baseline=True) for p in base_pre}
    new_pairs = {pairs.pair(p, in_baseline=False) for p in new_pre}
    preempted = [pairs.preemption(p, in_baseline=False) for p in new_pre
                 if pairs.pair(p, in_baseline=False) not in base_pairs]
    not_preempted = [pairs.preemption(p, in_baseline=True) for p in base_pre
                     if pairs.pair(p, in_baseline=True) not in new_pairs]
    ids = pairs.identities()
    bk, nk = pairs.base_keys, pairs.new_keys  # identity -> the pod's key in each run
    rescued = {p["victimIdentity"] for p in not_preempted}
    now_running = [i for i in ids if _running(n, nk.get(i)) and not _running(b, bk.get(i))]
    started = [{**pairs.names(i), "node": n["pods"][nk[i]]["node"]} for i in now_running
               if i not in rescued and (i not in bk or b["pods"][bk[i]]["phase"] == "Pending")]
    kept = [{**pairs.names(i), "node": n["pods"][nk[i]]["node"], "phaseInBaseline": b["pods"][bk[i]]["phase"]}
            for i in now_running if i in bk and (i in rescued or b["pods"][bk[i]]["phase"] != "Pending")]
    gone = [i for i in ids if _running(b, bk.get(i)) and not _running(n, nk.get(i))]
    replaced = _replacements(new, before.initial)

    def no_longer_running(i: str) -> dict[str, Any]:
        after = n["pods"][nk[i]] if i in nk else {}
        entry: dict[str, Any] = {**pairs.names(i), "node": b["pods"][bk[i]]["node"],
                                 "phaseAfter": after.get("phase", "absent")}
        if nk.get(i) in replaced:
            entry["replacedBy"] = _replaced_by(new, replaced[nk[i]])
        return entry

    # only a pod that runs before anything is simulated can stop; one the baseline starts (pending
    # in the input, or made during the run) and the changed run does not, would not start
    stopped = [no_longer_running(i) for i in gone if bk[i] in before.placed]
    not_started = [no_longer_running(i) for i in gone if bk[i] not in before.placed]
    moved = [{**pairs.names(i), "from": b["pods"][bk[i]]["node"], "to": n["pods"][nk[i]]["node"]} for i in ids
             if _running(b, bk.get(i)) and _running(n, nk.get(i))
             and b["pods"][bk[i]]["node"] != n["pods"][nk[i]]["node"]]
    impact_base = _impact(b, {p["victim"] for p in base_pre})
    impact_new = _impact(n, {p["victim"] for p in new_pre})
    rejected = _rejected(b, n)
    groups = sorted(set(impact_base) | set(impact_new))
    impact = []
    for ns, pc in groups:
        ib, im = impact_base.get((ns, pc), Counter()), impact_new.get((ns, pc), Counter())
        impact.append({
            "namespace": ns, "priorityClass": pc,
            "runningBefore": ib["Running"] + ib["Succeeded"], "runningAfter": im["Running"] + im["Succeeded"],
            "pendingBefore": ib["Pending"], "pendingAfter": im["Pending"],
            "preemptedBefore": ib["Preempted"], "preemptedAfter": im["Preempted"],
        })
    result = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "WhatIfResult",
        "scenario": baseline.name,
        "seed": b["seed"],
        "changes": changes.describe(),
        "baselinePreemption": before.preemption.to_dict(),
        "summary": {
            "baseline": b["summary"], "changed": n["summary"],
            "newlyPreempted": len(preempted), "started": len(started), "stopped": len(stopped),
            "notStarted": len(not_started), "savedFromPreemption": len(kept),
            "pdbViolations": sum(1 for p in preempted if p["violatesPDB"]),
            "rejected": len(rejected),
        },
        "preempted": preempted,
        "noLongerPreempted": not_preempted,
        "started": started,
        "keptRunning": kept,
        "stopped": stopped,
        "notStarted": not_started,
        "moved": moved,
        "impact": impact,
        "rejected": rejected,
    }
    if "drains" in n:
        result["drains"] = _drains(new, replaced)
    if "preemptionPolicies" in b or "preemptionPolicies" in n:
        # what kubesched's opt-in preemption plugins did in each run (their own counters)
        result["preemptionPolicies"] = {"baseline": b.get("preemptionPolicies") or {},
                                        "changed": n.get("preemptionPolicies") or {}}
    note = _preemption_note(before.preemption, changes)
    if note is not None:
        result["note"] = note
    result["baseline"] = b
    result["changed"] = n
    return result
