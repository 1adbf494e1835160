"""Running a what-if: the changes checked and applied, the two sides simulated from the same seed
(the baseline in a forked child, at the same time as the changed side) and compared."""

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


def whatif(base: Scenario, changes: Changes, *, seed: int | None = None,
           until: float | None = None, keep_changed: bool = True) -> tuple[dict[str, Any], Scenario]:
    """The diff document and the changed scenario (which can be saved and changed further).
    ``keep_changed=False``: the caller will not use the changed scenario (nor ``base``), so its
    objects are handed to the second simulation as they are instead of copied."""
    check_changes(base, changes)
    preemption = baseline_preemption(base, changes)
    baseline, changed = apply_changes(base, changes, preemption)
    before = Before.of(baseline, changed, preemption)
    # both results carry the preemption decisions the diff is made of (attempts are not recorded)

    def run(scenario: Scenario, owned: bool) -> Run:
        outcome = simulate(scenario, seed=seed, until=until, decisions=True, owned=owned)
        history = outcome.simulation.history
        return Run(outcome.result, history.owners, history.labels)

    # the two sides at once, the baseline in a forked child (which may take the objects it shares
    # with the changed side: its memory is its own); each is the simulation it would be alone
    parent = os.getpid()
    baseline_run = Forked(lambda: run(baseline, os.getpid() != parent))
    # the changed side may take the shared objects too, once the baseline has its own copy of them
    consume = not keep_changed and baseline_run.in_child
    baseline_run.rerun = not consume
    changed_run = run(changed, consume)
    return compare(baseline, before, baseline_run.result(), changed_run, changes), changed
