"""A sweep variant over a history base: the history's scenario with the variant's configuration,
changes and node pool applied (as :func:`~kubesched.sweep.variants.variant_scenario` applies them to
a scenario), simulated with the variant's seed, and compared with the recording as ``kubesched
replay`` compares (:func:`kubesched.replay.compare.comparison`).

Its metrics are a scenario variant's (:func:`~kubesched.sweep.metrics.variant_metrics`) and
:data:`HISTORY_METRICS`: the agreement with the recording (bound or not, same node, same node pool),
the node-hours of the window, and where the nodes have GPUs (an openb trace) the GPU allocation
against the arrived GPU workload (:mod:`.gpu_curve`). What ``--out`` keeps of it is its
ReplayResult (``kubesched replay -o json``'s document).
"""

from __future__ import annotations

import time
from typing import Any

from kubesched.analysis.grouping import POOL_LABELS
from kubesched.api.loader import Scenario
from kubesched.replay import History
from kubesched.replay.compare import replay_run
from kubesched.sweep.gpu_curve import gpu_metrics
from kubesched.sweep.metrics import pending_pods, variant_metrics
from kubesched.sweep.spec import Sweep, Variant
from kubesched.sweep.variants import Outcome, variant_scenario

#: the agreement rates (0..1; None where no pod could be compared that way)
AGREEMENT = {"agreementBound": "bound", "agreementNode": "node", "agreementPool": "pool"}


def node_hours(scenario: Scenario) -> float:
    """Hours of every node over the run: the nodes at the start for the whole window, a node a step
    creates from then on, one a step deletes until then."""
    until = scenario.until or 0.0
    seconds = until * sum(1 for o in scenario.objects if o.get("kind") == "Node")
    for step in scenario.steps:
        if step.kind == "Node" and step.at <= until:
            if step.action == "create":
                seconds += until - step.at
            elif step.action == "delete":
                seconds -= until - step.at
    return round(seconds / 3600, 4)


def history_metrics(history: History, scenario: Scenario, document: dict[str, Any]) -> dict[str, Any]:
    """The replay's own metrics of a variant: agreement rates and the window's node-hours."""
    agreement = document["summary"]["agreement"]
    return {**{metric: agreement[key]["rate"] for metric, key in AGREEMENT.items()},
            "nodeHours": node_hours(scenario)}


def variant_changes(sweep: Sweep, variant: Variant) -> list[str]:
    """The variant's changes in words, as the ReplayResult records them."""
    words = [f"{k}={v}" for k, v in variant.axes(with_seed=False).items()]
    if variant.change is not None:
        words += sweep.changes[variant.change].describe()
    return words


def run_history_variant(history: History, sweep: Sweep, variant: Variant, keep_result: bool = True) -> Outcome:
    """Replay the history as the variant has it; an error of the variant's own is its outcome."""
    started = time.monotonic()
    try:
        scenario = variant_scenario(history.scenario, sweep, variant)
        labels = (sweep.history.pool_label,) if sweep.history and sweep.history.pool_label else POOL_LABELS
        # replayed as `kubesched replay` replays it (controllers' pods, writes at run time)
        document, outcome = replay_run(history, scenario, seed=variant.seed, pool_labels=labels,
                                       changes=variant_changes(sweep, variant), owned=False, decisions=True)
        result = outcome.result
        metrics = variant_metrics(result, extended=outcome.extended_resources())
        autoscaled = metrics["nodeHours"]
        metrics.update(history_metrics(history, scenario, document))
        if autoscaled is not None:  # the autoscaler's own count, where it ran
            metrics["nodeHours"] = autoscaled
        metrics.update(gpu_metrics(scenario, result))
        return Outcome(variant, metrics, document if keep_result else None, seconds=time.monotonic() - started,
                       pending=pending_pods(result))
    except Exception as exc:  # noqa: BLE001 - reported with the variant's inputs; the others go on
        return Outcome(variant, error=f"{type(exc).__name__}: {exc}", seconds=time.monotonic() - started)
