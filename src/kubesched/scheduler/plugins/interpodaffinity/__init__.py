"""InterPodAffinity: required pod (anti-)affinity as a filter and preferred terms as a score
(upstream ``pkg/scheduler/framework/plugins/interpodaffinity``, v1.28 semantics).

Filter state (built in PreFilter, kept up to date by AddPod/RemovePod; :mod:`.state`) holds three
counters keyed by (topologyKey, value):

* ``existing_anti``: existing pods whose required anti-affinity terms match the incoming pod;
* ``affinity``: existing pods matching *all* of the incoming pod's required affinity terms;
* ``anti``: existing pods matching each of the incoming pod's required anti-affinity terms.

:mod:`.vector` fills them (and PreScore's topology score) from the node table's pod groups; the
per-pod loops of :mod:`.plugin` stay the reference.
"""

from kubesched.scheduler.plugins.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
)
from kubesched.scheduler.plugins.interpodaffinity.state import PreFilterState, PreScoreState

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH", "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH", "PRE_FILTER_STATE_KEY", "PRE_SCORE_STATE_KEY",
    "InterPodAffinity", "PreFilterState", "PreScoreState",
]
