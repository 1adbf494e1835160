"""What-if analysis: simulate a cluster snapshot twice from the same seed — as it is, and with
changes applied — and report the difference: who would be preempted (by whom, where, why), which
pending pods would start, PDB violations, and the impact per PriorityClass and namespace."""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import KubeschedError, ManifestError
from kubesched.api.loader import Scenario, Step, default_object, load_manifests
from kubesched.api.selectors import LabelSelector
from kubesched.api.validation import SCHEDULER_CONFIGURATION_KIND
from kubesched.cluster.embedded.apiserver.admission import SYSTEM_PRIORITY_CLASSES
from kubesched.k8s.objects import DEFAULT_NAMESPACE, DEFAULT_SCHEDULER_NAME, Obj, key_of
from kubesched.sim import simulate

PREEMPTION = "DefaultPreemption"
POD_TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


@dataclass
class Changes:
    """The changes of a what-if run (all optional)."""

    preemption: bool | None = None  # True: baseline without, changed with; False: the reverse
    apply: list[Obj] = field(default_factory=list)  # objects to add or replace
    priority_classes: list[tuple[str, str]] = field(default_factory=list)  # (pod selector, class)
    cordon: list[str] = field(default_factory=list)
    drain: list[str] = field(default_factory=list)
    scheduler_configuration: Obj | None = None
    scheduler_configuration_source: str | None = None  # the file it came from, for error messages

    def describe(self) -> list[str]:
        out = []
        if self.preemption is not None:
            out.append("enable preemption" if self.preemption else "disable preemption")
        out += [f"apply {o['kind']} {key_of(o)}" for o in self.apply]
        out += [f"re-prioritise {sel} to {pc}" for sel, pc in self.priority_classes]
        out += [f"cordon {n}" for n in self.cordon] + [f"drain {n}" for n in self.drain]
        if self.scheduler_configuration is not None:
            out.append("new scheduler configuration")
        return out


def with_preemption(config: Obj | None, enabled: bool) -> Obj:
    """A KubeSchedulerConfiguration with DefaultPreemption enabled or disabled in every profile."""
    cfg: dict[str, Any] = copy.deepcopy(config) if config else {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    profiles = cfg.setdefault("profiles", [{"schedulerName": DEFAULT_SCHEDULER_NAME}])
    for profile in profiles:
        plugins = profile.setdefault("plugins", {})
        mp = plugins.setdefault("multiPoint", {})
        disabled = [d for d in mp.get("disabled") or [] if d.get("name") != PREEMPTION]
        if not enabled:
            disabled.append({"name": PREEMPTION})
        mp["disabled"] = disabled
        post = plugins.get("postFilter")
        if post and not enabled:
            post["enabled"] = [e for e in post.get("enabled") or [] if e.get("name") != PREEMPTION]
    return cfg


class WhatIfError(KubeschedError):
    """A change that does not fit the snapshot (an unknown node or class, a selector matching nothing)."""


def _pod_matcher(selector: str) -> Any:
    """``ns/name``, ``ns/*`` or a label selector ``k=v,k2=v2``."""
    if "=" in selector:
        parts = selector.split(",")
        if not all("=" in part and part.split("=", 1)[0] for part in parts):
            raise WhatIfError(f"--priority-class {selector!r}: a label selector is key=value[,key=value...]")
        labels = dict(part.split("=", 1) for part in parts)
        sel = LabelSelector.from_dict({"matchLabels": labels})
        return lambda ns, name, pod_labels: sel.matches(pod_labels)
    ns, _, name = selector.partition("/")
    return lambda pns, pname, _labels: pns == ns and (name in ("*", "") or pname == name)


def _reprioritise(spec: Obj, priority_class: str) -> None:
    spec["priorityClassName"] = priority_class
    spec.pop("priority", None)
    spec.pop("preemptionPolicy", None)


def _selects(selector: str, obj: Obj) -> bool:
    """Whether the ``--priority-class`` selector picks this pod, or the pods of this workload."""
    match = _pod_matcher(selector)
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace", DEFAULT_NAMESPACE)
    if obj["kind"] == "Pod":
        return bool(match(namespace, meta["name"], meta.get("labels") or {}))
    if obj["kind"] in POD_TEMPLATE_KINDS:
        tmeta = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
        return bool(match(namespace, meta["name"], tmeta.get("labels") or {}))
    return False


def check_changes(base: Scenario, changes: Changes) -> None:
    """Refuse changes that name what the snapshot does not have: every problem in one error."""
    objects = [*base.objects, *changes.apply]
    nodes = {o["metadata"]["name"] for o in objects if o["kind"] == "Node"}
    classes = {o["metadata"]["name"] for o in objects if o["kind"] == "PriorityClass"} | set(SYSTEM_PRIORITY_CLASSES)
    problems = []
    for option, names in (("--cordon", changes.cordon), ("--drain", changes.drain)):
        for name in names:
            if name not in nodes:
                known = ", ".join(sorted(nodes)[:10]) + (", ..." if len(nodes) > 10 else "")
                problems.append(f"{option} {name}: no Node of that name in the snapshot (nodes: {known or 'none'})")
    for selector, pc in changes.priority_classes:
        if pc not in classes:
            problems.append(f"--priority-class {selector}:{pc}: no PriorityClass {pc!r} in the snapshot or in "
                            f"--apply (classes: {', '.join(sorted(classes))})")
        if not any(_selects(selector, o) for o in objects):
            problems.append(f"--priority-class {selector}:{pc}: the selector matches no pod or workload")
    if problems:
        raise WhatIfError("; ".join(problems))


def apply_changes(base: Scenario, changes: Changes) -> tuple[Scenario, Scenario]:
    """(baseline, changed) scenarios."""
    baseline = copy.deepcopy(base)
    changed = copy.deepcopy(base)
    if changes.scheduler_configuration is not None:
        changed.scheduler_configuration = copy.deepcopy(changes.scheduler_configuration)
        changed.scheduler_configuration_source = changes.scheduler_configuration_source
    if changes.preemption is not None:
        baseline.scheduler_configuration = with_preemption(baseline.scheduler_configuration, not changes.preemption)
        changed.scheduler_configuration = with_preemption(changed.scheduler_configuration, changes.preemption)
    objects = changed.objects
    for new in changes.apply:
        new = default_object(new)
        key = (new["kind"], key_of(new))
        index = next((i for i, o in enumerate(objects) if (o["kind"], key_of(o)) == key), None)
        if index is not None:
            objects[index] = new
        elif new["kind"] in ("PriorityClass", "Namespace"):
            first_pod = next((i for i, o in enumerate(objects) if o["kind"] not in ("PriorityClass", "Namespace")),
                             len(objects))
            objects.insert(first_pod, new)
        else:
            objects.append(new)
    for selector, pc in changes.priority_classes:
        for obj in objects:
            if not _selects(selector, obj):
                continue
            if obj["kind"] == "Pod":
                _reprioritise(obj["spec"], pc)
            else:
                _reprioritise(obj["spec"].setdefault("template", {}).setdefault("spec", {}), pc)
    for name in changes.cordon + changes.drain:
        for obj in objects:
            if obj["kind"] == "Node" and obj["metadata"]["name"] == name:
                obj.setdefault("spec", {})["unschedulable"] = True
    for name in changes.drain:
        for obj in objects:
            if obj["kind"] == "Pod" and (obj.get("spec") or {}).get("nodeName") == name:
                meta = obj["metadata"]
                changed.steps.insert(0, Step(at=0.0, action="delete", kind="Pod", name=meta["name"],
                                             namespace=meta.get("namespace", DEFAULT_NAMESPACE), source="--drain"))
    return baseline, changed


def scenario_documents(scenario: Scenario) -> list[Obj]:
    """A scenario as a YAML-able document stream (objects, then the Scenario document)."""
    spec: dict[str, Any] = {"seed": scenario.seed}
    if scenario.until is not None:
        spec["until"] = f"{scenario.until:g}s"
    if scenario.scheduler_configuration is not None:
        spec["schedulerConfiguration"] = scenario.scheduler_configuration
    if scenario.cluster:
        spec["cluster"] = scenario.cluster
    steps = []
    for step in scenario.steps:
        entry: dict[str, Any] = {"at": f"{step.at:g}s"}
        if step.action == "create":
            entry["create"] = step.obj
        else:
            target: dict[str, Any] = {"kind": step.kind, "name": step.name}
            if step.namespace:
                target["namespace"] = step.namespace
            if step.action == "patch":
                target["merge"] = step.merge
            elif step.grace_period_seconds is not None:
                target["gracePeriodSeconds"] = step.grace_period_seconds
            entry[step.action] = target
        steps.append(entry)
    if steps:
        spec["steps"] = steps
    doc = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": scenario.name},
           "spec": spec}
    return [*scenario.objects, doc]


def _preemptions(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for decision in result.get("preemptionDecisions", []):
        if decision["outcome"] != "preempted":
            continue
        chosen = next(c for c in decision["candidates"] if c["node"] == decision["chosen"])
        for victim in chosen["victims"]:
            out.append({
                "time": decision["time"], "victim": victim["pod"], "victimPriority": victim["priority"],
                "preemptor": decision["pod"], "preemptorPriority": decision["priority"],
                "node": decision["chosen"], "criterion": decision["criterion"],
                "violatesPDB": victim["pod"] in chosen.get("pdbViolatingVictims", []),
            })
    return out


def _impact(result: dict[str, Any]) -> dict[tuple[str, str], Counter[str]]:
    impact: dict[tuple[str, str], Counter[str]] = {}
    victims = {p["victim"] for p in _preemptions(result)}
    for key, pod in result["pods"].items():
        group = (key.split("/", 1)[0], pod.get("priorityClassName") or "(none)")
        counter = impact.setdefault(group, Counter())
        counter[pod["phase"]] += 1
        if key in victims:
            counter["Preempted"] += 1
    return impact


def compare(baseline: Scenario, changed: Scenario, base: dict[str, Any], new: dict[str, Any],
            changes: Changes) -> dict[str, Any]:
    base_pre = {(p["victim"], p["preemptor"]) for p in _preemptions(base)}
    preempted = [p for p in _preemptions(new) if (p["victim"], p["preemptor"]) not in base_pre]
    not_preempted = [p for p in _preemptions(base)
                     if (p["victim"], p["preemptor"]) not in {(q["victim"], q["preemptor"]) for q in _preemptions(new)}]

    def running(result: dict[str, Any], key: str) -> bool:
        return result["pods"].get(key, {}).get("phase") in ("Running", "Succeeded")

    keys = sorted(set(base["pods"]) | set(new["pods"]))
    started = [k for k in keys if running(new, k) and not running(base, k)]
    stopped = [k for k in keys if running(base, k) and not running(new, k)]
    moved = [k for k in keys if running(base, k) and running(new, k)
             and base["pods"][k]["node"] != new["pods"][k]["node"]]
    impact_base = _impact(base)
    impact_new = _impact(new)
    groups = sorted(set(impact_base) | set(impact_new))
    impact = []
    for ns, pc in groups:
        b, n = impact_base.get((ns, pc), Counter()), impact_new.get((ns, pc), Counter())
        impact.append({
            "namespace": ns, "priorityClass": pc,
            "runningBefore": b["Running"] + b["Succeeded"], "runningAfter": n["Running"] + n["Succeeded"],
            "pendingBefore": b["Pending"], "pendingAfter": n["Pending"],
            "preemptedBefore": b["Preempted"], "preemptedAfter": n["Preempted"],
        })
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "WhatIfResult",
        "scenario": baseline.name,
        "seed": base["seed"],
        "changes": changes.describe(),
        "summary": {
            "baseline": base["summary"], "changed": new["summary"],
            "newlyPreempted": len(preempted), "started": len(started), "stopped": len(stopped),
            "pdbViolations": sum(1 for p in preempted if p["violatesPDB"]),
        },
        "preempted": preempted,
        "noLongerPreempted": not_preempted,
        "started": started,
        "stopped": stopped,
        "moved": moved,
        "impact": impact,
        "baseline": base,
        "changed": new,
    }


def whatif(base: Scenario, changes: Changes, *, seed: int | None = None,
           until: float | None = None) -> tuple[dict[str, Any], Scenario]:
    """The diff document and the changed scenario (which can be saved and changed further)."""
    check_changes(base, changes)
    baseline, changed = apply_changes(base, changes)
    # both results carry the preemption decisions the diff is made of (attempts are not recorded)
    before = simulate(baseline, seed=seed, until=until, decisions=True).result
    after = simulate(changed, seed=seed, until=until, decisions=True).result
    return compare(baseline, changed, before, after, changes), changed


def load_change_objects(paths: list[str], warnings: list[ManifestError] | None = None) -> list[Obj]:
    """The objects of ``--apply`` files (Scenario documents left out); unknown fields are appended to
    ``warnings``. A KubeSchedulerConfiguration is refused: ``--scheduler-config`` is its place."""
    from pathlib import Path

    objects = []
    for obj, source in load_manifests([Path(p) for p in paths], warnings):
        if obj.get("kind") == SCHEDULER_CONFIGURATION_KIND:
            raise WhatIfError(f"{source}: --apply takes objects; give a {SCHEDULER_CONFIGURATION_KIND} "
                              "with --scheduler-config")
        if obj.get("kind") != "Scenario":
            objects.append(obj)
    return objects
