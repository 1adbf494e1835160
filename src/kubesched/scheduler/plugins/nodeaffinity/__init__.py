"""NodeAffinity: nodeSelector and required node affinity (Filter), preferred terms (Score),
plus the profile's ``addedAffinity`` arg (upstream ``pkg/scheduler/framework/plugins/nodeaffinity``).

Filter and Score also come as vector forms over the node table's label columns
(:mod:`.vector`); the per-node methods of :mod:`.plugin` stay the reference (and serve explanations
and dry runs).
"""

from kubesched.scheduler.plugins.nodeaffinity.plugin import (
    REASON_CONFLICT,
    REASON_ENFORCED,
    REASON_POD,
    NodeAffinity,
)

__all__ = ["REASON_CONFLICT", "REASON_ENFORCED", "REASON_POD", "NodeAffinity"]
