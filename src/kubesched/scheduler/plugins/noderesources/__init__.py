"""NodeResourcesFit (Filter + Score with LeastAllocated / MostAllocated / RequestedToCapacityRatio,
:mod:`.fitplugin`) and NodeResourcesBalancedAllocation (:mod:`.balancedallocation`), vectorised over
the node table.

Every filter and score formula exists twice: a per-node reference (the fit check is
:func:`~kubesched.scheduler.plugins.fit.fits`, the score strategies are in :mod:`.scoring`) and the
vector form over the node table; tests check they agree. NodeResourcesFit also offers the
resource-only preemption arithmetic.
"""

from kubesched.scheduler.plugins.noderesources.balancedallocation import NodeResourcesBalancedAllocation
from kubesched.scheduler.plugins.noderesources.fitplugin import NodeResourcesFit

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesFit"]
