"""The scoring points (upstream ``RunPreScorePlugins`` and ``RunScorePlugins`` in
``framework/runtime/framework.go``): PreScore, Score and NormalizeScore, weighted, over the
feasible nodes at once where a plugin offers the vector forms.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from kubesched.scheduler.framework.interface import (
    FEASIBLE_COLUMNS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Code,
    CycleState,
)
from kubesched.scheduler.framework.timing import TimedPoints
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot


class ScorePoints(TimedPoints):
    """The framework's scoring points (PreScore and Score are timed here, in one call)."""

    def run_score(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray,
        raw_scores: dict[str, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """PreScore + Score + NormalizeScore + weights for the feasible nodes ``idx``.
        Returns the totals and the weighted score of each plugin (for explanations); each plugin's
        Score before NormalizeScore goes into ``raw_scores`` when it is given."""
        feasible = snapshot.table.node_array()[idx].tolist()
        state.write(FEASIBLE_COLUMNS, (feasible, idx))
        observe = self.observe
        started = perf_counter() if observe is not None else 0.0
        for pre in self.pre_score_plugins:
            status = pre.pre_score(state, pod, feasible)
            if status is not None and status.code == Code.SKIP:
                state.skip_score_plugins.add(pre.name)
            elif status is not None and not status.is_success():
                if observe is not None:
                    observe("PreScore", "Error", perf_counter() - started)
                raise RuntimeError(f'running PreScore plugin "{pre.name}": {status.message()}')
        if observe is not None:
            observe("PreScore", "Success", perf_counter() - started)
            started = perf_counter()
        totals = np.zeros(len(idx), dtype=np.int64)
        per_plugin: dict[str, np.ndarray] = {}
        normalized: dict[str, np.ndarray] = {}  # each plugin's normalized scores, before weights
        for scorer in self.scorers:
            pl = scorer.plugin
            if pl.name in state.skip_score_plugins:
                continue
            if scorer.vector is not None:
                scores = scorer.vector.score_vector(state, pod, snapshot, idx)
            else:
                scores = np.array([pl.score(state, pod, node) for node in feasible], dtype=np.int64)
            if raw_scores is not None:
                raw_scores[pl.name] = np.array(scores, dtype=np.int64)  # a copy: normalizing may work in place
            if scorer.normalize_vector is not None:
                scores = scorer.normalize_vector.normalize_vector(state, pod, scores)
            elif scorer.normalize is not None:
                as_list = [int(s) for s in scores]
                scorer.normalize.normalize_score(state, pod, feasible, as_list)
                scores = np.array(as_list, dtype=np.int64)
            normalized[pl.name] = scores
            weighted = scores * self.weights.get(pl.name, 1)
            per_plugin[pl.name] = weighted
            totals += weighted
        if len(idx) and normalized:
            stacked = np.concatenate(list(normalized.values()))  # one range check for all plugins
            if stacked.min() < MIN_NODE_SCORE or stacked.max() > MAX_NODE_SCORE:
                _raise_invalid_score(normalized)
        if observe is not None:
            observe("Score", "Success", perf_counter() - started)
        return totals, per_plugin


def _raise_invalid_score(normalized: dict[str, np.ndarray]) -> None:
    """Upstream RunScorePlugins' error for the first plugin (in order) with a score out of range, as
    handleSchedulingFailure reports it."""
    for name, scores in normalized.items():
        out = scores[(scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)]
        if len(out):
            raise RuntimeError(
                f'applying score defaultWeights on Score plugins: plugin "{name}" returns an invalid score '
                f"{int(out[0])}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
