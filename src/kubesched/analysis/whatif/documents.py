"""A scenario written back as the documents it is read from (``kubesched whatif --save-changed``,
the web app's download of a what-if's changed scenario and of the edited scenario)."""

from __future__ import annotations

from typing import Any

from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj


def scenario_documents(scenario: Scenario) -> list[Obj]:
    """A scenario as a YAML-able document stream (objects, then the Scenario document)."""
    spec: dict[str, Any] = {"seed": scenario.seed}
    if scenario.until is not None:
        spec["until"] = f"{scenario.until:g}s"
    if scenario.scheduler_configuration is not None:
        spec["schedulerConfiguration"] = scenario.scheduler_configuration
    if scenario.schedulers:  # each configuration written inline, wherever it was read
        spec["schedulers"] = [
            {"name": s.name, **({"configuration": s.configuration} if s.configuration is not None else {}),
             "informerDelay": f"{s.informer_delay:g}s", "bindDelay": f"{s.bind_delay:g}s"}
            for s in scenario.schedulers]
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
