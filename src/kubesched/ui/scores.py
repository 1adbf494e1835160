"""The score side of a pod's page, as kube-scheduler-simulator shows it: for each node that passes
the filters, each Score plugin's raw score, its score after NormalizeScore, its weight and the
weighted score, and the node's total.

Two sources, each named on the page:

* an attempt of the run (``attempts`` of ``simulate --decisions``): the scheduler recorded, for the
  ten best nodes, each plugin's Score before NormalizeScore, its weighted score and the total; the
  normalised score is the weighted one divided by the profile's weight (upstream multiplies a
  normalised score by an integer weight, ``framework/runtime/framework.go RunScorePlugins``);
* the pod now (:func:`scores_now`): PreScore, Score and NormalizeScore run again over the finished
  simulation's cache for every node the diagnosis found feasible, without acting, keeping the raw
  scores too (as a cycle that records them does). A bound pod is scored as ``explain`` diagnoses it, as a pending pod.

Extenders' scores are not shown per plugin (they are added after the plugins, as ``Extender``).
"""

from __future__ import annotations

from typing import Any

from kubesched.analysis.diagnose import as_pending
from kubesched.analysis.scores import node_scores, score_cell
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.scheduler import Scheduler


def attempt_scores(attempt: dict[str, Any], weights: dict[str, int]) -> list[dict[str, Any]]:
    """An attempt's recorded scores (its best ten nodes), each plugin's as a cell of raw (None: an
    extender's, which has none), normalised, weight and weighted score."""
    return [{"node": row["node"], "total": row["total"],
             "plugins": {name: score_cell(value, weights.get(name), (row.get("raw") or {}).get(name))
                         for name, value in row["plugins"].items()}}
            for row in attempt.get("scores") or ()]


def weights_for(scheduler: Scheduler, pod: dict[str, Any]) -> dict[str, int]:
    """The Score plugins' weights of the profile that schedules ``pod`` (empty without one)."""
    fwk = scheduler.framework_for(PodInfo.from_pod(pod))
    return dict(fwk.weights) if fwk is not None else {}


def scores_now(scheduler: Scheduler, namespace: str, name: str, feasible: list[str]) -> list[dict[str, Any]]:
    """Every plugin's raw, normalised and weighted score on each of the ``feasible`` nodes (those the
    diagnosis found passing every filter) for the pod as it is now, the best total first (ties in
    the order of the scheduler's node tree, as an attempt records them). Empty for
    a pod no node fits, or that no profile schedules."""
    obj = scheduler.cluster.get("Pod", namespace, name)
    if obj is None:
        raise KeyError(f"pod {namespace}/{name} not found")
    fwk = scheduler.framework_for(PodInfo.from_pod(obj))
    if fwk is None or not feasible:
        return []
    if (obj.get("spec") or {}).get("nodeName"):
        with as_pending(scheduler.cache, obj) as pending:
            return _score(scheduler, fwk, pending, feasible)
    return _score(scheduler, fwk, obj, feasible)


def _score(scheduler: Scheduler, fwk: Framework, obj: dict[str, Any], feasible: list[str]) -> list[dict[str, Any]]:
    return node_scores(scheduler, fwk, obj, feasible)
