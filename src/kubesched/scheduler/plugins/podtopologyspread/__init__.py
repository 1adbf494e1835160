from kubesched.scheduler.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
    PreFilterState,
    PreScoreState,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH", "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY", "PodTopologySpread", "PreFilterState", "PreScoreState",
]
