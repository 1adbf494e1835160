"""The plugin registry (upstream ``pkg/scheduler/framework/plugins/registry.go``): every plugin a
KubeSchedulerConfiguration may name, and the v1.28 default profile's plugins with their score
weights (upstream ``pkg/scheduler/apis/config/v1/default_plugins.go``).

A new plugin is registered here: its class in :func:`plugin_registry`, and in
:data:`DEFAULT_MULTIPOINT` if kube-scheduler enables it by default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.scheduler.framework.interface import Handle, Plugin

# v1.28 default multiPoint list: (name, score weight). Upstream's in-tree cloud volume limits
# (EBSLimits, GCEPDLimits, AzureDiskLimits) are not modelled; VolumeBinding's Score, always 0
# without the alpha VolumeCapacityPriority gate, is left out.
DEFAULT_MULTIPOINT: list[tuple[str, int]] = [
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("SchedulingGates", 0),
]

#: how a plugin is made: ``(args, handle) -> plugin`` (the plugin classes themselves)
PluginFactory = Callable[[dict[str, Any], Handle], Plugin]


def plugin_registry() -> dict[str, PluginFactory]:
    """Plugin name -> plugin class. The plugin modules are imported here, when a profile is built,
    not when the configuration parser is imported."""
    from kubesched.scheduler.plugins.affinitypreemption import AffinityAwarePreemption
    from kubesched.scheduler.plugins.basic import (
        DefaultBinder,
        NodeName,
        NodeUnschedulable,
        PrioritySort,
        SchedulingGates,
    )
    from kubesched.scheduler.plugins.coscheduling import Coscheduling
    from kubesched.scheduler.plugins.crossnodepreemption import CrossNodePreemption
    from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
    from kubesched.scheduler.plugins.gangpreemption import GangPreemption
    from kubesched.scheduler.plugins.imagelocality import ImageLocality
    from kubesched.scheduler.plugins.interpodaffinity import InterPodAffinity
    from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
    from kubesched.scheduler.plugins.nodeports import NodePorts
    from kubesched.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
    from kubesched.scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
    from kubesched.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
    from kubesched.scheduler.plugins.podtopologyspread import PodTopologySpread
    from kubesched.scheduler.plugins.preemptiontoleration import PreemptionToleration, StrictPDBPreemption
    from kubesched.scheduler.plugins.tainttoleration import TaintToleration
    from kubesched.scheduler.plugins.volumebinding import VolumeBinding
    from kubesched.scheduler.plugins.volumerestrictions import VolumeRestrictions
    from kubesched.scheduler.plugins.volumezone import VolumeZone

    classes: list[Any] = [  # each a PluginFactory with a ``name``
        PrioritySort,
        SchedulingGates,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        NodeResourcesFit,
        NodeResourcesBalancedAllocation,
        InterPodAffinity,
        PodTopologySpread,
        ImageLocality,
        DefaultBinder,
        DefaultPreemption,
        PreemptionToleration,
        StrictPDBPreemption,
        AffinityAwarePreemption,
        CrossNodePreemption,
        NodeResourceTopologyMatch,
        VolumeRestrictions,
        NodeVolumeLimits,
        VolumeBinding,
        VolumeZone,
        Coscheduling,
        GangPreemption,
    ]
    return {cls.name: cls for cls in classes}
