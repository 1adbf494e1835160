"""NodeResourceTopologyMatch (kubernetes-sigs/scheduler-plugins ``noderesourcetopology``): NUMA-aware
Filter and Score from NodeResourceTopology objects, with Reserve for the reservation-aware view.
Opt-in: enable it in a profile (``multiPoint`` enables every point it implements).

Filter (nodes whose Topology Manager policy is ``single-numa-node``; others always pass; the
arithmetic is in :mod:`.alignment`):
- pods of QoS BestEffort without extended resources pass;
- a node without an object passes; a node whose view may not be used (see
  :mod:`kubesched.topology.nrtcache`) fails with "invalid node topology data";
- scope ``container``: each init container must fit one zone; each app container must fit one zone,
  the lowest-numbered one that fits is charged (as the kubelet picks it) before the next container;
  scope ``pod``: the pod's effective request must fit one zone. A resource fits a zone if the zone
  has it available; for non-Guaranteed pods cpu, memory and hugepages always fit (they come from the
  shared pool); a resource no zone reports passes if it is a storage or extended resource.
- During a preemption dry run (``preemptionMode: Enabled``), when the view's cache has a container
  placement for the node (only the reservation cache has, once it flushed the node: see
  :mod:`kubesched.topology.nrtcache`), the app containers' exclusive resources of the victims it
  places are given back to their zone before the check, so victims are chosen until the preemptor
  fits one zone; if no victim resource can be given back, or one would exceed its zone's allocatable,
  the node fails with "eviction simulation in NRT is not possible:<why>". Without a placement the
  check runs on the unchanged zones (the preemptor fits no better: no candidate).

Score: non-Guaranteed pods 100; no object 0; ``LeastNUMANodes`` on every node, the other strategies
only on ``single-numa-node`` nodes (0 elsewhere). See :mod:`kubesched.topology.scoring`.

Args (:mod:`.args`; upstream names and defaults): ``scoringStrategy: {type: LeastAllocated,
resources: [{name, weight}]}``, ``cacheResyncPeriodSeconds: 0``, ``discardReservedNodes: false``,
``cache: {foreignPodsDetect, resyncMethod, informerMode, resyncScope}``, ``preemptionMode: Disabled``.
With the reservation cache, foreign pods make their node's data invalid until a resync finds the
exporter caught up, as upstream. A pod is foreign when its ``schedulerName`` is none of the profiles
that registered for the detection: as scheduler-plugins' process-wide ``RegisterSchedulerProfileName``
set, every profile of the scheduler whose NodeResourceTopologyMatch uses the reservation cache with
``foreignPodsDetect`` other than ``None`` (``OnlyExclusiveResources``: only foreign pods with
exclusive resources count). Informer mode and resync scope are accepted and validated but not
modelled.
kubesched extension: ``cacheResyncMode: Periodic`` (upstream) or ``OnUpdate`` (flush a node's
reservations as soon as its object reflects the scheduler's pods; turns the cache on by itself).

Filter and Score are worked out once per kind of node view and spread over the nodes with that
view (:mod:`.vector`); the views are kept until the topology cache reports them changed, and only
the objects the cluster's change journal names are read again.
With the reservation cache, Filter notes each node it rejects; its vector forms leave that to
:meth:`NodeResourceTopologyMatch.note_rejections`, given the rejected nodes the earlier filters passed.
"""

from kubesched.scheduler.plugins.noderesourcetopology.alignment import (
    EvictionImpossible,
    align_containers,
    post_eviction,
)
from kubesched.scheduler.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch

__all__ = ["EvictionImpossible", "NodeResourceTopologyMatch", "align_containers", "post_eviction"]
