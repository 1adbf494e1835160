"""A scheduler's configuration as it runs, for people: each profile's plugins at each extension point
in the order they run, the Score weights, each plugin's args with kube-scheduler's defaults filled in
(:func:`configuration_view`); the same as a KubeSchedulerConfiguration to edit
(:func:`editable_configuration`); and the pods that ask for a scheduler no profile provides, which
stay pending without a word from the scheduler (:func:`unserved_pods`, :func:`unserved_warning`).

The commands and the web app both say these things, so they live here.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Collection
from typing import Any

from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME, is_terminal, scheduler_name_of
from kubesched.scheduler.config import API_VERSION
from kubesched.scheduler.framework.interface import EXTENSION_POINTS
from kubesched.scheduler.plugins.defaults import DEFAULT_ARGS, with_defaults
from kubesched.scheduler.scheduler import Scheduler


def configuration_view(scheduler: Scheduler, config: dict[str, Any] | None) -> dict[str, Any]:
    """What ``scheduler`` (built from ``config``; None: kube-scheduler's defaults) runs: the
    configuration's top-level settings, its extenders, the feature gates, and per profile its
    ``schedulerName``, ``percentageOfNodesToScore`` (null: the configuration's), the plugins at each
    extension point in order (``score``'s with their weights) and ``pluginConfig``: each enabled
    plugin that takes args, with the defaults filled in."""
    settings = scheduler.settings
    profiles = []
    for raw in settings.profiles:
        name = raw.get("schedulerName", DEFAULT_SCHEDULER_NAME)
        profile = scheduler.frameworks[name].profile
        plugins: dict[str, list[dict[str, Any]]] = {}
        for point in EXTENSION_POINTS:
            plugins[point] = [{"name": plugin, **({"weight": profile.weights.get(plugin, 1)} if point == "score" else {})}
                              for plugin in profile.points.get(point, ())]
        given = {e["name"]: e.get("args") or {} for e in raw.get("pluginConfig") or ()}
        if settings.ignored_by_extenders:  # as the scheduler builds the profile
            given["NodeResourcesFit"] = {**given.get("NodeResourcesFit", {}),
                                         "ignoredResources": list(settings.ignored_by_extenders)}
        plugin_config = [{"name": plugin, "args": with_defaults(plugin, given.get(plugin, {}))}
                         for plugin in profile.plugins if plugin in given or plugin in DEFAULT_ARGS]
        profiles.append({"schedulerName": name, "percentageOfNodesToScore": profile.percentage_of_nodes_to_score,
                         "plugins": plugins, "pluginConfig": plugin_config})
    return {
        "default": config is None,
        "percentageOfNodesToScore": settings.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": settings.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": settings.pod_max_backoff_seconds,
        "extenders": copy.deepcopy((config or {}).get("extenders") or []),
        "featureGates": dict(scheduler.features),
        "profiles": profiles,
    }


def editable_configuration(view: dict[str, Any], config: dict[str, Any] | None) -> dict[str, Any]:
    """The configuration to start an edit from: ``config`` as it was given, or (None) kube-scheduler's
    default written out, each profile's Score plugins with their weights and its plugins' default
    args, so that there is a weight to change; it configures the scheduler exactly as no
    configuration does."""
    if config is not None:
        return copy.deepcopy(config)
    profiles = [{"schedulerName": p["schedulerName"],
                 "plugins": {"score": {"enabled": p["plugins"]["score"]}},
                 "pluginConfig": p["pluginConfig"]} for p in view["profiles"]]
    return {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration", "profiles": profiles}


def unserved_pods(scheduler: Scheduler, served: Collection[str] | None = None) -> dict[str, int]:
    """The pods waiting for a scheduler (not bound, not finished, not being deleted) whose
    ``schedulerName`` no profile of ``scheduler`` has (``served``: no name of these, the profiles of
    all the schedulers of a run whose schedulers race), counted by that name: no scheduler ever
    looks at them, so they stay pending and nothing says why."""
    if served is None:
        served = scheduler.frameworks
    counts: Counter[str] = Counter()
    for pod in scheduler.cluster.list("Pod"):
        if (pod.get("spec") or {}).get("nodeName") or is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
            continue
        name = scheduler_name_of(pod)
        if name not in served:
            counts[name] += 1
    return dict(sorted(counts.items()))


def unserved_warning(counts: dict[str, int], profiles: list[str]) -> str | None:
    """The warning for :func:`unserved_pods`' answer (None when there is nothing to say), e.g. "24
    pods ask for a scheduler no profile of this configuration provides: default-scheduler (its
    profiles: my-scheduler); they stay pending"."""
    total = sum(counts.values())
    if not total:
        return None
    names = ", ".join(name if len(counts) == 1 else f"{name} ({count})" for name, count in counts.items())
    pods = "1 pod asks" if total == 1 else f"{total} pods ask"
    return (f"{pods} for a scheduler no profile of this configuration provides: {names} (its profiles: "
            f"{', '.join(profiles)}); {'it stays' if total == 1 else 'they stay'} pending")
