from kubesched.scheduler.plugins.noderesourcetopology.plugin import (
    EvictionImpossible,
    NodeResourceTopologyMatch,
    align_containers,
    post_eviction,
)

__all__ = ["EvictionImpossible", "NodeResourceTopologyMatch", "align_containers", "post_eviction"]
