"""Helpers shared by plugins (upstream ``plugins/helper``)."""

from __future__ import annotations

import numpy as np

from kubesched.scheduler.framework.interface import MAX_NODE_SCORE
from kubesched.scheduler.framework.views import NodeTableSnapshot, NodeTableView


def default_normalize(scores: list[int], reverse: bool = False, max_priority: int = MAX_NODE_SCORE) -> None:
    """Upstream DefaultNormalizeScore, in place."""
    highest = max(scores, default=0)
    if highest <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return
    for i, score in enumerate(scores):
        scaled = max_priority * score // highest
        scores[i] = max_priority - scaled if reverse else scaled


def default_normalize_vector(scores: np.ndarray, reverse: bool = False,
                             max_priority: int = MAX_NODE_SCORE) -> np.ndarray:
    """Vector form of :func:`default_normalize` (non-negative integer scores)."""
    highest = int(scores.max()) if len(scores) else 0
    if highest <= 0:
        return np.full(len(scores), max_priority if reverse else 0, dtype=np.int64) if reverse else scores
    scaled = max_priority * scores // highest
    result: np.ndarray = max_priority - scaled if reverse else scaled
    return result


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def table_of(snapshot: NodeTableSnapshot) -> NodeTableView | None:
    """The snapshot's node table when it is in step with its node list and every node has its
    Node object (Filter's "node not found" error is left to the per-node path)."""
    table = getattr(snapshot, "table", None)
    if table is None or table.n != len(snapshot.node_infos) or not table.flags().all_have_objects:
        return None
    return table
