"""PodTopologySpread: hard spread constraints as a filter, soft ones as a score
(upstream ``pkg/scheduler/framework/plugins/podtopologyspread``, v1.28 semantics with
MinDomains, MatchLabelKeys and NodeInclusionPolicy enabled).

PreFilter and PreScore count matching pods over the node table when it can answer, and Filter,
Score and NormalizeScore also come as vector forms (:mod:`.vector`); the per-node methods of
:mod:`.plugin` stay the reference (and serve explanations and dry runs). The constraints and what
they count are in :mod:`.constraints`, the cycle state in :mod:`.state`.
"""

from kubesched.scheduler.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
)
from kubesched.scheduler.plugins.podtopologyspread.state import PreFilterState, PreScoreState

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH", "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY", "PodTopologySpread", "PreFilterState", "PreScoreState",
]
