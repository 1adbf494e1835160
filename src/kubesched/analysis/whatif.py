"""What-if analysis: simulate a cluster snapshot twice from the same seed — as it is, and with
changes applied — and report the difference: who would be preempted (by whom, where, why), which
pending pods would start, PDB violations, and the impact per PriorityClass and namespace.

"As it is" includes whether the cluster's scheduler preempts. A kubectl dump carries no scheduler
configuration, but kube-scheduler writes on every pod it cannot place a message that ends in
``preemption: ...`` whenever a PostFilter plugin (DefaultPreemption) ran (upstream
``framework/types.go FitError.Error``): the pending pods' messages tell (:func:`baseline_preemption`)."""

from __future__ import annotations

import copy
import dataclasses
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import KubeschedError, Location, ManifestError
from kubesched.api.forked import Forked
from kubesched.api.loader import Scenario, Step, default_object, load_manifests
from kubesched.api.selectors import LabelSelector
from kubesched.api.snapshot import pod_state
from kubesched.api.validation import SCHEDULER_CONFIGURATION_KIND
from kubesched.cluster.embedded.apiserver.admission import SYSTEM_PRIORITY_CLASSES
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, DEFAULT_SCHEDULER_NAME, Obj, key_of
from kubesched.sim import simulate

PREEMPTION = "DefaultPreemption"
POD_TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


@dataclass
class Changes:
    """The changes of a what-if run (all optional)."""

    preemption: bool | None = None  # the changed run with preemption on (True) or off (False)
    apply: list[Obj] = field(default_factory=list)  # objects to add or replace
    priority_classes: list[tuple[str, str]] = field(default_factory=list)  # (pod selector, class)
    cordon: list[str] = field(default_factory=list)
    drain: list[str] = field(default_factory=list)
    #: kubectl drain's flags for every --drain (force, ignoreDaemonSets, deleteEmptyDirData,
    #: gracePeriodSeconds, timeout), as a drain step takes them
    drain_options: dict[str, Any] = field(default_factory=dict)
    scheduler_configuration: Obj | None = None
    #: where it was read (a file's document), for error messages
    scheduler_configuration_source: Location | str | None = None

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


def preemption_enabled(config: Obj | None) -> bool:
    """Whether DefaultPreemption runs in the first profile of ``config`` (None: the default profile)."""
    profiles = (config or {}).get("profiles") or [{}]
    plugins = profiles[0].get("plugins") or {}
    for point in ("multiPoint", "postFilter"):
        if any(d.get("name") in (PREEMPTION, "*") for d in (plugins.get(point) or {}).get("disabled") or []):
            return False
    return True


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
        if post and enabled:
            post["disabled"] = [d for d in post.get("disabled") or [] if d.get("name") != PREEMPTION]
    return cfg


#: what kube-scheduler puts before its PostFilter's part of an unschedulable pod's message
PREEMPTION_CLAUSE = " preemption: "


@dataclass(frozen=True)
class BaselinePreemption:
    """Whether the baseline preempts, what decided it (``snapshotConfiguration``, ``schedulerConfig``,
    ``pendingPodMessages`` or ``default``) and why, in words."""

    enabled: bool
    decided_by: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "decidedBy": self.decided_by, "reason": self.reason}


def _scheduler_message(pod: Obj) -> tuple[str | None, bool]:
    """A pending pod's ``PodScheduled`` message from kube-scheduler (None: none), and whether the
    scheduler nominated a node for it (which only a PostFilter does)."""
    status = pod.get("status") or {}
    message = next((c.get("message") for c in status.get("conditions") or []
                    if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
                    and c.get("reason") == "Unschedulable"), None)
    return (message or None), bool(status.get("nominatedNodeName"))


def preemption_in_messages(objects: list[Obj]) -> BaselinePreemption | None:
    """Whether the default scheduler of the cluster the objects were read from preempts, from its
    pending pods' messages: one with a ``preemption:`` clause (or a nominated node) says yes, pods with
    messages and none with a clause say no; no such pod: None (nothing to tell)."""
    told = preempting = 0
    for obj in objects:
        if obj.get("kind") != "Pod" or pod_state(obj) != "pending":
            continue
        if ((obj.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME) != DEFAULT_SCHEDULER_NAME:
            continue
        message, nominated = _scheduler_message(obj)
        if message is None and not nominated:
            continue
        told += 1
        preempting += nominated or PREEMPTION_CLAUSE in (message or "")
    if not told:
        return None
    clause = "kube-scheduler's 'preemption:' clause"
    if not preempting:
        whose = "the pending pod's message lacks" if told == 1 else f"none of the {told} pending pods' messages has"
        return BaselinePreemption(False, "pendingPodMessages",
                                  f"{whose} {clause}, which it adds whenever DefaultPreemption runs")
    whose = "the pending pod's message has" if told == 1 else f"{preempting} of the {told} pending pods' messages have"
    return BaselinePreemption(True, "pendingPodMessages", f"{whose} {clause} (or a nominated node): DefaultPreemption runs")


def baseline_preemption(base: Scenario, changes: Changes) -> BaselinePreemption:
    """Whether the baseline (the cluster as it is) preempts: as the snapshot's own scheduler
    configuration says; else, when the changes switch preemption, as ``--scheduler-config`` (the
    configuration being changed) says; else as the pending pods' messages tell; else as the default
    profile does (DefaultPreemption on)."""
    def runs(enabled: bool) -> str:
        return "runs DefaultPreemption" if enabled else "disables DefaultPreemption"

    if base.scheduler_configuration is not None:
        enabled = preemption_enabled(base.scheduler_configuration)
        return BaselinePreemption(enabled, "snapshotConfiguration",
                                  f"the snapshot's scheduler configuration {runs(enabled)}")
    if changes.preemption is not None and changes.scheduler_configuration is not None:
        enabled = preemption_enabled(changes.scheduler_configuration)
        read_from = changes.scheduler_configuration_source
        source = f"--scheduler-config {read_from.file}" if isinstance(read_from, Location) else \
            read_from or "--scheduler-config"
        return BaselinePreemption(enabled, "schedulerConfig", f"{source} {runs(enabled)}")
    told = preemption_in_messages(base.objects)
    if told is not None:
        return told
    return BaselinePreemption(True, "default", "no pending pod carries kube-scheduler's message to tell; "
                                               "the default profile runs DefaultPreemption")


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


def _own_copy(scenario: Scenario) -> Scenario:
    """A scenario whose lists are its own but whose objects are shared with ``scenario``: an object
    is copied where it is changed (:func:`apply_changes`), and a simulation copies what it restores,
    so that a dump of 150 000 pods is not copied whole for each side of the comparison."""
    return dataclasses.replace(scenario, objects=list(scenario.objects), sources=list(scenario.sources),
                               steps=list(scenario.steps), warnings=list(scenario.warnings),
                               scheduler_configuration=copy.deepcopy(scenario.scheduler_configuration),
                               cluster=copy.deepcopy(scenario.cluster))


def apply_changes(base: Scenario, changes: Changes,
                  preemption: BaselinePreemption | None = None) -> tuple[Scenario, Scenario]:
    """(baseline, changed) scenarios; neither changes ``base``'s objects. ``preemption``: whether
    the baseline preempts (default: :func:`baseline_preemption`). A cluster without a configuration
    of its own whose scheduler does not preempt gets the default profile without DefaultPreemption,
    in both runs unless the changes give the changed run a configuration."""
    if preemption is None:
        preemption = baseline_preemption(base, changes)
    baseline = _own_copy(base)
    changed = _own_copy(base)
    if base.scheduler_configuration is None and not preemption.enabled:
        baseline.scheduler_configuration = with_preemption(None, False)
        changed.scheduler_configuration = with_preemption(None, False)
    if changes.scheduler_configuration is not None:
        changed.scheduler_configuration = copy.deepcopy(changes.scheduler_configuration)
        changed.scheduler_configuration_source = changes.scheduler_configuration_source
    if changes.preemption is not None:
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
        for i, obj in enumerate(objects):
            if not _selects(selector, obj):
                continue
            obj = objects[i] = deep_copy(obj)
            if obj["kind"] == "Pod":
                _reprioritise(obj["spec"], pc)
            else:
                _reprioritise(obj["spec"].setdefault("template", {}).setdefault("spec", {}), pc)
    for name in changes.cordon:
        for i, obj in enumerate(objects):
            if obj["kind"] == "Node" and obj["metadata"]["name"] == name:
                obj = objects[i] = deep_copy(obj)
                obj.setdefault("spec", {})["unschedulable"] = True
    for i, name in enumerate(changes.drain):  # kubectl drain at t=0: cordon, then evictions
        changed.steps.insert(i, Step(at=0.0, action="drain", kind="Node", name=name,
                                     drain=dict(changes.drain_options), source="--drain"))
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
        elif step.action == "drain":
            entry["drain"] = {"node": step.name, **(step.drain or {})}
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

    pdbs: list[Obj]  # the changed cluster's PodDisruptionBudgets
    placed: set[str]  # pods the input already has on a node (running, or bound and starting)
    initial: set[str]  # every pod of the changed scenario's input
    preemption: BaselinePreemption  # whether the baseline preempts, and why

    @classmethod
    def of(cls, baseline: Scenario, changed: Scenario, preemption: BaselinePreemption) -> Before:
        placed = {_pod_key(o) for o in baseline.objects if o["kind"] == "Pod" and pod_state(o) in ("running", "starting")}
        initial = {_pod_key(o) for o in changed.objects if o["kind"] == "Pod"}
        pdbs = [deep_copy(o) for o in changed.objects if o["kind"] == "PodDisruptionBudget"]
        return cls(pdbs, placed, initial, preemption)


def _violated_budgets(victim: str, run: Run, pdbs: list[Obj]) -> list[str]:
    ns = victim.split("/", 1)[0]
    labels = run.labels.get(victim, {})
    return [key_of(pdb) for pdb in pdbs
            if (pdb["metadata"].get("namespace") or DEFAULT_NAMESPACE) == ns
            and (pdb.get("spec") or {}).get("selector") is not None
            and LabelSelector.from_dict(pdb["spec"]["selector"]).matches(labels)]


def _preemptions(run: Run, pdbs: list[Obj]) -> list[dict[str, Any]]:
    out = []
    for decision in run.result.get("preemptionDecisions", []):
        if decision["outcome"] != "preempted":
            continue
        chosen = next(c for c in decision["candidates"] if c["node"] == decision["chosen"])
        for victim in chosen["victims"]:
            violates = victim["pod"] in chosen.get("pdbViolatingVictims", [])
            out.append({
                "time": decision["time"], "victim": victim["pod"], "victimPriority": victim["priority"],
                "preemptor": decision["pod"], "preemptorPriority": decision["priority"],
                "node": decision["chosen"], "criterion": decision["criterion"],
                "violatesPDB": violates,
                "violatedPDBs": _violated_budgets(victim["pod"], run, pdbs) if violates else [],
            })
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


def _running(result: dict[str, Any], key: str) -> bool:
    return result["pods"].get(key, {}).get("phase") in ("Running", "Succeeded")


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


def _drains(new: Run, replaced: dict[str, str]) -> list[dict[str, Any]]:
    drains = []
    for drain in new.result.get("drains", []):
        pods = []
        for entry in drain["pods"]:
            entry = dict(entry)
            replacement = replaced.get(entry["pod"])
            if replacement is not None:
                entry["replacedBy"] = {"pod": replacement, "node": new.result["pods"][replacement]["node"],
                                       "phase": new.result["pods"][replacement]["phase"]}
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


def compare(baseline: Scenario, before: Before, base: Run | dict[str, Any], new: Run | dict[str, Any],
            changes: Changes) -> dict[str, Any]:
    """The diff document of two runs of the ``baseline`` and changed scenarios (``before``: what was
    read of them before they ran)."""
    base = base if isinstance(base, Run) else Run(base)
    new = new if isinstance(new, Run) else Run(new)
    base_pre, new_pre = _preemptions(base, before.pdbs), _preemptions(new, before.pdbs)
    base_pairs = {(p["victim"], p["preemptor"]) for p in base_pre}
    new_pairs = {(p["victim"], p["preemptor"]) for p in new_pre}
    preempted = [p for p in new_pre if (p["victim"], p["preemptor"]) not in base_pairs]
    not_preempted = [p for p in base_pre if (p["victim"], p["preemptor"]) not in new_pairs]
    b, n = base.result, new.result
    keys = sorted(set(b["pods"]) | set(n["pods"]))
    rescued = {p["victim"] for p in not_preempted}
    now_running = [k for k in keys if _running(n, k) and not _running(b, k)]
    started = [{"pod": k, "node": n["pods"][k]["node"]} for k in now_running
               if k not in rescued and b["pods"].get(k, {}).get("phase", "Pending") == "Pending"]
    kept = [{"pod": k, "node": n["pods"][k]["node"], "phaseInBaseline": b["pods"][k]["phase"]}
            for k in now_running if k in b["pods"] and (k in rescued or b["pods"][k]["phase"] != "Pending")]
    gone = [k for k in keys if _running(b, k) and not _running(n, k)]
    replaced = _replacements(new, before.initial)

    def no_longer_running(k: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"pod": k, "node": b["pods"][k]["node"],
                                 "phaseAfter": n["pods"].get(k, {}).get("phase", "absent")}
        if k in replaced:
            entry["replacedBy"] = {"pod": replaced[k], "node": n["pods"][replaced[k]]["node"],
                                   "phase": n["pods"][replaced[k]]["phase"]}
        return entry

    # only a pod that runs before anything is simulated can stop; one the baseline starts (pending
    # in the input, or made during the run) and the changed run does not, would not start
    stopped = [no_longer_running(k) for k in gone if k in before.placed]
    not_started = [no_longer_running(k) for k in gone if k not in before.placed]
    moved = [{"pod": k, "from": b["pods"][k]["node"], "to": n["pods"][k]["node"]} for k in keys
             if _running(b, k) and _running(n, k) and b["pods"][k]["node"] != n["pods"][k]["node"]]
    impact_base = _impact(b, {p["victim"] for p in base_pre})
    impact_new = _impact(n, {p["victim"] for p in new_pre})
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
        },
        "preempted": preempted,
        "noLongerPreempted": not_preempted,
        "started": started,
        "keptRunning": kept,
        "stopped": stopped,
        "notStarted": not_started,
        "moved": moved,
        "impact": impact,
    }
    if "drains" in n:
        result["drains"] = _drains(new, replaced)
    note = _preemption_note(before.preemption, changes)
    if note is not None:
        result["note"] = note
    result["baseline"] = b
    result["changed"] = n
    return result


def whatif(base: Scenario, changes: Changes, *, seed: int | None = None,
           until: float | None = None, keep_changed: bool = True) -> tuple[dict[str, Any], Scenario]:
    """The diff document and the changed scenario (which can be saved and changed further).
    ``keep_changed=False``: the caller will not use the changed scenario (nor ``base``), so its
    objects are handed to the second simulation as they are instead of copied."""
    check_changes(base, changes)
    preemption = baseline_preemption(base, changes)
    baseline, changed = apply_changes(base, changes, preemption)
    before = Before.of(baseline, changed, preemption)
    # both results carry the preemption decisions the diff is made of (attempts are not recorded)

    def run(scenario: Scenario, owned: bool) -> Run:
        outcome = simulate(scenario, seed=seed, until=until, decisions=True, owned=owned)
        history = outcome.simulation.history
        return Run(outcome.result, history.owners, history.labels)

    # the two sides at once, the baseline in a forked child (which may take the objects it shares
    # with the changed side: its memory is its own); each is the simulation it would be alone
    parent = os.getpid()
    baseline_run = Forked(lambda: run(baseline, os.getpid() != parent))
    # the changed side may take the shared objects too, once the baseline has its own copy of them
    consume = not keep_changed and baseline_run.in_child
    baseline_run.rerun = not consume
    changed_run = run(changed, consume)
    return compare(baseline, before, baseline_run.result(), changed_run, changes), changed


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
