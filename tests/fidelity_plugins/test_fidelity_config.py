"""Profile construction pinned against upstream v1.28 (``runtime/framework.go
expandMultiPointPlugins``, ``apis/config/v1/default_plugins.go``)."""

from __future__ import annotations

from typing import Any

from kubesched.scheduler.config import build_profile
from kubesched.testkit.framework import FakeHandle


def profile(raw: dict[str, Any]) -> Any:
    return build_profile(raw, 0, lambda _name: FakeHandle())


def test_reconfigured_multipoint_plugins_keep_the_extension_point_order() -> None:
    """expandMultiPointPlugins: part 1 = multiPoint plugins re-enabled at this extension point, "in
    the order they are specified in the regular extension point"; then the other multiPoint plugins."""
    p = profile({"plugins": {"filter": {"enabled": [{"name": "NodePorts"}, {"name": "TaintToleration"}]}}})
    assert p.points["filter"][:4] == ["NodePorts", "TaintToleration", "NodeUnschedulable", "NodeName"]
    default = profile({})
    assert default.points["filter"] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                                        "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                                        "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity"]
    assert default.weights == {
        "PrioritySort": 1, "NodeUnschedulable": 1, "NodeName": 1, "TaintToleration": 3, "NodeAffinity": 2,
        "NodePorts": 1, "NodeResourcesFit": 1, "PodTopologySpread": 2, "InterPodAffinity": 2,
        "DefaultPreemption": 1, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1, "DefaultBinder": 1,
        "SchedulingGates": 1, "VolumeRestrictions": 1, "NodeVolumeLimits": 1, "VolumeBinding": 1,
        "VolumeZone": 1,
    }


def test_args_for_a_disabled_plugin_are_accepted() -> None:
    """NewFramework instantiates only the plugins some extension point needs; pluginConfig entries for
    other plugins are decoded (and validated) but unused, not an error."""
    p = profile({
        "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
        "pluginConfig": [{"name": "NodeResourcesBalancedAllocation",
                          "args": {"resources": [{"name": "cpu", "weight": 1}]}}],
    })
    assert "NodeResourcesBalancedAllocation" not in p.points["score"]
