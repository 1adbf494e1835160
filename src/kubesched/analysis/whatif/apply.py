"""Applying a what-if's changes to a base scenario: the changes checked against it first
(:func:`check_changes`), then a baseline and a changed scenario made of it (:func:`apply_changes`),
with the ``--priority-class`` selectors both read as they pick pods and workloads."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from kubesched.analysis.whatif.changes import Changes, WhatIfError
from kubesched.analysis.whatif.preemption import BaselinePreemption, baseline_preemption, with_preemption
from kubesched.api.loader import Scenario, Step, default_object
from kubesched.api.selectors import LabelSelector
from kubesched.cluster.embedded.apiserver.admission import SYSTEM_PRIORITY_CLASSES
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj, key_of

POD_TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


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
    created = [s.obj for s in base.steps if s.action == "create" and s.obj is not None]
    objects = [*base.objects, *changes.apply, *created]
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
        for i, step in enumerate(changed.steps):  # and the pods and workloads its steps create
            if step.action == "create" and step.obj is not None and _selects(selector, step.obj):
                obj = deep_copy(step.obj)
                if obj["kind"] == "Pod":
                    _reprioritise(obj["spec"], pc)
                else:
                    _reprioritise(obj["spec"].setdefault("template", {}).setdefault("spec", {}), pc)
                changed.steps[i] = dataclasses.replace(step, obj=obj)
    for name in changes.cordon:
        for i, obj in enumerate(objects):
            if obj["kind"] == "Node" and obj["metadata"]["name"] == name:
                obj = objects[i] = deep_copy(obj)
                obj.setdefault("spec", {})["unschedulable"] = True
        for i, step in enumerate(changed.steps):  # a node a step creates is created cordoned
            if step.action == "create" and step.obj is not None and step.obj["kind"] == "Node" \
                    and step.obj["metadata"]["name"] == name:
                obj = deep_copy(step.obj)
                obj.setdefault("spec", {})["unschedulable"] = True
                changed.steps[i] = dataclasses.replace(step, obj=obj)
    for i, name in enumerate(changes.drain):  # kubectl drain at t=0: cordon, then evictions
        changed.steps.insert(i, Step(at=0.0, action="drain", kind="Node", name=name,
                                     drain=dict(changes.drain_options), source="--drain"))
    return baseline, changed
