"""Each feasible node's score for a pending pod, as a scheduling cycle would compute it now:
PreFilter (the cycle state PreScore and Score read), then PreScore, Score and NormalizeScore over the
nodes that pass the filters, without acting; each plugin's raw, normalised and weighted score and the
node's total. ``kubesched ui``'s pod page and a replay's decision-by-decision comparison read it."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.scheduler import Scheduler


def score_cell(weighted: int, weight: int | None, raw: int | None = None) -> dict[str, Any]:
    """One plugin's score on one node: raw (None: an extender's, which has none), normalised (the
    weighted score divided by the weight, as upstream multiplies a normalised score by an integer
    weight), weight and weighted score."""
    normalized = weighted // weight if weight else None
    return {"raw": raw, "normalized": normalized, "weight": weight, "weighted": weighted}


def node_scores(scheduler: Scheduler, fwk: Framework, obj: dict[str, Any], feasible: list[str]) -> list[dict[str, Any]]:
    """The scores of the pending pod ``obj`` on the ``feasible`` nodes, the best total first (ties in
    the order of the scheduler's node tree, as an attempt records them)."""
    pod = PodInfo.from_pod(obj)
    cache = scheduler.cache
    cache.update_snapshot()
    wanted = set(feasible)
    idx = np.array([j for j, info in enumerate(cache.node_infos) if info.name in wanted], dtype=np.int64)
    state = CycleState()
    fwk.run_pre_filter(state, pod)  # the cycle state PreScore and Score read, as a cycle leaves it
    raw: dict[str, np.ndarray] = {}
    totals, weighted = fwk.run_score(state, pod, cache, idx, raw)
    nodes = [cache.node_infos[int(j)] for j in idx]
    rows = [{"node": info.name, "total": int(totals[k]),
             "plugins": {name: score_cell(int(values[k]), fwk.weights.get(name), int(raw[name][k]))
                         for name, values in weighted.items()}}
            for k, info in enumerate(nodes)]
    return sorted(rows, key=lambda r: -r["total"])
