"""Running a what-if: the changes checked and applied, the two sides simulated from the same seed
(the baseline in a forked child, at the same time as the changed side) and compared. A caller that
has already simulated the scenario as it is (``kubesched ui``) hands that run in as the baseline,
and only the changed side is simulated."""

from __future__ import annotations

import os
from typing import Any

from kubesched.analysis.whatif.apply import apply_changes, check_changes
from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.compare import Before, Run, compare
from kubesched.analysis.whatif.preemption import baseline_preemption
from kubesched.api.forked import Forked
from kubesched.api.loader import Scenario
from kubesched.sim import simulate
from kubesched.sim.runner import ProgressCallback


def baseline_is_base(base: Scenario, baseline: Scenario) -> bool:
    """Whether the what-if's baseline is ``base`` simulated as it is, so that a run of ``base``
    (from the scenario's own seed, to its own end) may stand for it. It is not when the changes make
    the baseline's scheduler configuration differ: a cluster without a configuration whose pending
    pods say it does not preempt gets preemption switched off in both sides."""
    return baseline.scheduler_configuration == base.scheduler_configuration


def decided_run(result: dict[str, Any], owners: dict[str, Any], labels: dict[str, Any]) -> Run:
    """The run a what-if's baseline would be (preemption decisions recorded, not explanations) of the
    same simulation run with explanations (``kubesched explain``'s and the ui's): without its
    ``attempts``, and each preemption keeping only the candidate it chose, as a run without
    explanations keeps it. The simulation is the same either way; only what is recorded differs."""
    decisions = []
    for decision in result.get("preemptionDecisions") or ():
        if decision.get("chosen"):
            decision = {**decision, "candidates": [c for c in decision.get("candidates") or ()
                                                   if c["node"] == decision["chosen"]]}
        decisions.append(decision)
    trimmed = {**result, "preemptionDecisions": decisions}
    if "attempts" in trimmed:
        trimmed["attempts"] = []
    return Run(trimmed, owners, labels)


def whatif(base: Scenario, changes: Changes, *, seed: int | None = None,
           until: float | None = None, keep_changed: bool = True, baseline: Run | None = None,
           progress: ProgressCallback | None = None) -> tuple[dict[str, Any], Scenario]:
    """The diff document and the changed scenario (which can be saved and changed further).
    ``keep_changed=False``: the caller will not use the changed scenario (nor ``base``), so its
    objects are handed to the second simulation as they are instead of copied. ``baseline``: a run
    of ``base`` made with the same ``seed`` and ``until`` (its result with the preemption decisions,
    its pods' owners and labels), used instead of simulating the baseline again when
    :func:`baseline_is_base` holds (the diff is the same). ``progress``: told how the changed side's
    simulation goes (:func:`~kubesched.sim.simulate`'s)."""
    check_changes(base, changes)
    preemption = baseline_preemption(base, changes)
    baseline_scenario, changed = apply_changes(base, changes, preemption)
    before = Before.of(baseline_scenario, changed, preemption)
    # both results carry the preemption decisions the diff is made of (attempts are not recorded)

    def run(scenario: Scenario, owned: bool, told: ProgressCallback | None = None) -> Run:
        outcome = simulate(scenario, seed=seed, until=until, decisions=True, owned=owned, progress=told)
        history = outcome.simulation.history
        return Run(outcome.result, history.owners, history.labels)

    if baseline is not None and baseline_is_base(base, baseline_scenario):
        changed_run = run(changed, not keep_changed, progress)
        return compare(baseline_scenario, before, baseline, changed_run, changes), changed
    # the two sides at once, the baseline in a forked child (which may take the objects it shares
    # with the changed side: its memory is its own); each is the simulation it would be alone
    parent = os.getpid()
    baseline_run = Forked(lambda: run(baseline_scenario, os.getpid() != parent))
    # the changed side may take the shared objects too, once the baseline has its own copy of them
    consume = not keep_changed and baseline_run.in_child
    baseline_run.rerun = not consume
    changed_run = run(changed, consume, progress)
    return compare(baseline_scenario, before, baseline_run.result(), changed_run, changes), changed
