"""Helpers shared by plugins (upstream ``plugins/helper``)."""

from __future__ import annotations

MAX_NODE_SCORE = 100


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


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
