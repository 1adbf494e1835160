from kubesched.scheduler.plugins.noderesources.fitplugin import (
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
)

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesFit"]
