"""The args kube-scheduler v1.28 gives the in-tree plugins that take any, where a profile's
pluginConfig does not set them (upstream ``pkg/scheduler/apis/config/v1/defaults.go``, the
``SetDefaults_*Args`` functions), from the constants the plugins themselves fall back on: what a
configuration view shows as a plugin's effective args. VolumeBinding's ``shape`` only exists behind
an alpha gate and is left out.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesched.scheduler.plugins.defaultpreemption import (
    DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
    DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
)
from kubesched.scheduler.plugins.interpodaffinity.plugin import DEFAULT_HARD_POD_AFFINITY_WEIGHT
from kubesched.scheduler.plugins.noderesources.fitplugin import DEFAULT_SCORING_STRATEGY
from kubesched.scheduler.plugins.noderesources.scoring import DEFAULT_RESOURCES
from kubesched.scheduler.plugins.podtopologyspread.constraints import LIST_DEFAULTING, SYSTEM_DEFAULTING
from kubesched.scheduler.plugins.volumebinding.plugin import DEFAULT_BIND_TIMEOUT_SECONDS

DEFAULT_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
                          "minCandidateNodesAbsolute": DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE},
    "InterPodAffinity": {"hardPodAffinityWeight": DEFAULT_HARD_POD_AFFINITY_WEIGHT,
                         "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {"resources": DEFAULT_RESOURCES},
    "NodeResourcesFit": {"scoringStrategy": {"type": DEFAULT_SCORING_STRATEGY, "resources": DEFAULT_RESOURCES}},
    "PodTopologySpread": {"defaultingType": SYSTEM_DEFAULTING},
    "VolumeBinding": {"bindTimeoutSeconds": DEFAULT_BIND_TIMEOUT_SECONDS},
}


def with_defaults(plugin: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` as kube-scheduler defaults them for ``plugin``: each field the profile leaves out
    set to its default (a plugin without defaults: the args as given)."""
    given = copy.deepcopy(args or {})
    if plugin not in DEFAULT_ARGS:
        return given
    merged = {**copy.deepcopy(DEFAULT_ARGS[plugin]), **given}
    if plugin == "NodeResourcesFit":  # a strategy given in part gets the rest of the default
        strategy = {"type": DEFAULT_SCORING_STRATEGY, **(given.get("scoringStrategy") or {})}
        if not strategy.get("resources"):
            strategy["resources"] = copy.deepcopy(DEFAULT_RESOURCES)
        merged["scoringStrategy"] = strategy
    elif plugin == "NodeResourcesBalancedAllocation" and not merged.get("resources"):
        merged["resources"] = copy.deepcopy(DEFAULT_RESOURCES)
    elif plugin == "PodTopologySpread" and "defaultingType" not in given:
        # upstream: constraints given and no defaultingType is List, else System (which has none)
        merged["defaultingType"] = LIST_DEFAULTING if given.get("defaultConstraints") else SYSTEM_DEFAULTING
    return merged
