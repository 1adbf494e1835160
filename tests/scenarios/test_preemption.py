"""Preemption behaviours of kube-scheduler v1.28 (upstream
`pkg/scheduler/framework/preemption/preemption.go`,
`pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`), the nominated-node
protocol around them, victims' graceful termination, and kubelet eviction under memory pressure.

Defaults unless stated: PriorityClasses low=100, mid=500, high=1000; nodes of 4 cpu.
"""

from __future__ import annotations

import pytest

from kubesched.testkit.builders import make_pdb, make_priority_class, make_taint
from kubesched.testkit.scenarios import create_step, delete_step, patch_step

from .conftest import ago, node, pod, scenario, std_classes

INSUFFICIENT_1 = "0/1 nodes are available: 1 Insufficient cpu."
NO_VICTIMS_1 = "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
NOT_ELIGIBLE_TERMINATING = "preemption: not eligible due to a terminating pod on the nominated node."
NOT_ELIGIBLE_NEVER = "preemption: not eligible due to preemptionPolicy=Never."
DISRUPTION_TARGET = {
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "default-scheduler: preempting to accommodate a higher priority pod",
}


def msg(*parts: str) -> str:
    """FitError text: the parts joined by a space, each already ending in '.'; the final one gets
    its own '.' appended by the outer FitError (hence '..')."""
    return " ".join(parts[:-1] + (parts[-1] + ".",)) if len(parts) > 1 else parts[0]


# -- basic preemption --------------------------------------------------------------------------
def test_basic_preemption_marks_deletes_victim_nominates_and_binds_after_grace(simulate):
    docs = [*std_classes(), node("n1"), pod("v", "3", priority_class="low", node="n1"),
            scenario([create_step(5, pod("p", "2", priority_class="high"))])]
    run = simulate(docs, deep=True)
    # victim: Preempted event, DisruptionTarget condition, graceful deletion (30 s default)
    (pre,) = run.ev("Preempted")
    assert (pre["time"], pre["pod"], pre["node"], pre["preemptor"], pre["message"]) == (
        5.0, "default/v", "n1", "default/p", "Preempted by a pod on node n1")
    assert [c for _, c in run.conditions("v", "DisruptionTarget")] == [DISRUPTION_TARGET]
    assert run.conditions("v", "DisruptionTarget")[0][0] == 5.0
    assert run.times("Terminating", "v") == [5.0]
    assert run.times("Deleted", "v") == [35.0]
    # preemptor: FailedScheduling without PostFilter message, nominated, PodScheduled=False/Unschedulable
    assert run.failed("p")[0] == (5.0, INSUFFICIENT_1)
    assert run.nominations("p") == [(5.0, "n1")]
    first_cond = run.conditions("p", "PodScheduled")[0]
    assert first_cond == (5.0, {"status": "False", "reason": "Unschedulable", "message": INSUFFICIENT_1})
    # bound once the victim is gone; binding does not clear nominatedNodeName in v1.28 (only the
    # ClearingNominatedNodeNameAfterBinding feature gate, alpha in v1.34, does)
    assert run.scheduled("p") == [(35.0, "n1")]
    assert run.pod("p") == {"node": "n1", "phase": "Running", "priority": 1000, "nominatedNodeName": "n1"}
    assert run.result["summary"]["preemptions"] == 1
    assert run.result["summary"]["victims"] == 1


# -- no preemption: equal priority, preemptionPolicy Never -------------------------------------
@pytest.mark.parametrize(
    ("victim_cls", "preemptor_cls", "expected"),
    [
        pytest.param("high", "high", msg(INSUFFICIENT_1, NO_VICTIMS_1), id="equal-priority-is-never-a-victim"),
        pytest.param("low", "never", msg(INSUFFICIENT_1, NOT_ELIGIBLE_NEVER), id="preemptionPolicy-Never"),
    ],
)
def test_no_preemption_message_and_no_nomination(simulate, victim_cls, preemptor_cls, expected):
    docs = [*std_classes(), make_priority_class("never", 1000, policy="Never"), node("n1"),
            pod("v", "3", priority_class=victim_cls, node="n1"),
            scenario([create_step(5, pod("p", "2", priority_class=preemptor_cls))], until=100)]
    run = simulate(docs, deep=True)
    assert run.failed("p")[0] == (5.0, expected)
    assert run.messages("p") == [expected] * len(run.messages("p"))
    assert run.ev("Preempted") == []
    assert run.nominations("p") == []
    assert run.pod("p")["nominatedNodeName"] is None
    assert run.pod("v")["phase"] == "Running"
    # scheduler_preemption_attempts_total counts every PostFilter call, whatever the outcome
    assert run.sim.scheduler.metrics.preemption_attempts == len(run.messages("p")) >= 1


# -- reprieve order ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "preemptor_cpu", "deleted"),
    [
        pytest.param(("2", ago(10)), ("2", ago(1)), "2", "b", id="equal-size-newer-deleted"),
        pytest.param(("2", ago(1)), ("2", ago(10)), "2", "a", id="equal-size-newer-deleted-mirror"),
        pytest.param(("1", ago(10)), ("3", ago(1)), "3", "b", id="older-small-kept"),
        pytest.param(("3", ago(10)), ("1", ago(1)), "2", "a", id="older-is-reprieved-first-but-does-not-fit"),
    ],
)
def test_reprieve_by_importance_not_size(simulate, a, b, preemptor_cpu, deleted):
    """`SelectVictimsOnNode` reprieves victims in importance order (priority, then earlier start
    time: `MoreImportantPod` in `pkg/scheduler/util/utils.go`), not by size."""
    docs = [*std_classes(), node("n1"),
            pod("a", a[0], priority_class="low", node="n1", start_time=a[1]),
            pod("b", b[0], priority_class="low", node="n1", start_time=b[1]),
            scenario([create_step(1, pod("p", preemptor_cpu, priority_class="high"))])]
    run = simulate(docs)
    assert run.victims() == {deleted}
    assert run.scheduled("p") == [(31.0, "n1")]


# -- unresolvable nodes ------------------------------------------------------------------------
def test_untolerated_taint_node_is_not_a_candidate(simulate):
    """n1 is UnschedulableAndUnresolvable (untolerated taint), so preemption skips it
    (`nodesWherePreemptionMightHelp`) and only n2 is a candidate, even though n1's victim would be
    the cheaper one."""
    docs = [*std_classes(), node("n1", taints=[make_taint()]), node("n2"),
            pod("v1", "4", priority_class="low", node="n1"), pod("v2", "4", priority_class="mid", node="n2"),
            scenario([create_step(1, pod("p", "2", priority_class="high"))])]
    run = simulate(docs)
    assert run.failed("p")[0] == (
        1.0, "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {k: v}.")
    (decision,) = [d for d in run.decisions("p") if d["outcome"] == "preempted"]
    assert [c["node"] for c in decision["candidates"]] == ["n2"]
    assert run.preempted() == [(1.0, "v2", "p")]
    assert run.nominations("p") == [(1.0, "n2")]
    assert run.scheduled("p") == [(31.0, "n2")]


def test_all_nodes_unresolvable_preemption_not_helpful(simulate):
    docs = [*std_classes(), node("n1", taints=[make_taint()]), node("n2", taints=[make_taint()]),
            pod("v1", "4", priority_class="low", node="n1"), pod("v2", "4", priority_class="low", node="n2"),
            scenario([create_step(1, pod("p", "2", priority_class="high"))])]
    run = simulate(docs)
    assert run.failed("p")[0] == (1.0, "0/2 nodes are available: 2 node(s) had untolerated taint {k: v}. "
                                  "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..")
    assert run.ev("Preempted") == []
    assert run.nominations("p") == []


# -- node choice -------------------------------------------------------------------------------
def _two_node_choice(v1: dict, v2: dict, extra=()) -> list:
    return [*std_classes(), make_priority_class("neg", -5), node("n1"), node("n2"),
            *[pod(name, node="n1", **kw) for name, kw in v1.items()],
            *[pod(name, node="n2", **kw) for name, kw in v2.items()],
            *extra,
            scenario([create_step(1, pod("p", "4", priority_class="high"))])]


@pytest.mark.parametrize(
    ("n1_victims", "n2_victims", "extra", "chosen", "criterion"),
    [
        pytest.param({"a": dict(cpu="4", priority_class="low", labels={"app": "g"})}, {"b": dict(cpu="4", priority_class="mid")},
                     [make_pdb("g", {"matchLabels": {"app": "g"}}, min_available=1, disruptions_allowed=0)], "n2", "fewest PDB violations",
                     id="pdb-violation-avoided"),
        pytest.param({"a": dict(cpu="4", priority_class="low", labels={"app": "g"})}, {"b": dict(cpu="4", priority_class="mid")},
                     [make_pdb("g", {"matchLabels": {"app": "g"}}, min_available=1, disruptions_allowed=1)], "n1",
                     "lowest priority of the most important victim", id="pdb-with-budget-no-violation"),
        pytest.param({"a": dict(cpu="4", priority_class="mid")}, {"b": dict(cpu="4", priority_class="low")}, [], "n2",
                     "lowest priority of the most important victim", id="highest-victim-priority"),
        pytest.param({"a": dict(cpu="4", priority_class="low")}, {"b": dict(cpu="4", priority_class="mid")}, [], "n1",
                     "lowest priority of the most important victim", id="highest-victim-priority-mirror"),
        pytest.param({"a": dict(cpu="2", priority_class="low"), "c": dict(cpu="2", priority_class="low")},
                     {"b": dict(cpu="4", priority_class="low")}, [], "n2",
                     "smallest sum of victim priorities", id="sum-of-priorities"),
        pytest.param({"a": dict(cpu="4", priority_class="low")},
                     {"b": dict(cpu="2", priority_class="low"), "c": dict(cpu="2", priority_class="low")}, [], "n1",
                     "smallest sum of victim priorities", id="sum-of-priorities-mirror"),
        pytest.param({"a": dict(cpu="2", priority_class="neg"), "c": dict(cpu="2", priority_class="neg")},
                     {"b": dict(cpu="4", priority_class="neg")}, [], "n2",
                     "smallest sum of victim priorities", id="sum-of-negative-priorities-offset-2^31"),
        pytest.param({"a": dict(cpu="4", priority_class="low", start_time=ago(10))}, {"b": dict(cpu="4", priority_class="low", start_time=ago(1))},
                     [], "n2", "latest start time of the most important victims", id="latest-start"),
        pytest.param({"a": dict(cpu="4", priority_class="low", start_time=ago(1))}, {"b": dict(cpu="4", priority_class="low", start_time=ago(10))},
                     [], "n1", "latest start time of the most important victims", id="latest-start-mirror"),
    ],
)
def test_pick_one_node_for_preemption(simulate, n1_victims, n2_victims, extra, chosen, criterion):
    """`pickOneNodeForPreemption` is lexicographic: fewest PDB violations, then the lowest priority
    of the most important victim, then the smallest sum of victim priorities (each offset by 2^31),
    then fewest victims, then the latest start time of the most important victims."""
    run = simulate(_two_node_choice(n1_victims, n2_victims, extra))
    (decision,) = [d for d in run.decisions("p") if d["outcome"] == "preempted"]
    assert decision["chosen"] == chosen
    assert decision["criterion"] == criterion
    expected_victims = set(n1_victims if chosen == "n1" else n2_victims)
    assert run.victims() == expected_victims
    assert run.nominations("p")[0] == (1.0, chosen)
    assert run.node_of("p") == chosen


# -- PDB budget ordering -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("with_pdb", "deleted"),
    [pytest.param(True, "x", id="pdb-budget-consumed-by-more-important-x"),
     pytest.param(False, "y", id="no-pdb-less-important-y")],
)
def test_pdb_budget_ordering(simulate, with_pdb, deleted):
    """`filterPodsWithPDBViolation` spends a PDB's budget in importance order: with
    disruptionsAllowed=1, x (more important) is non-violating and y violating; violating pods are
    reprieved first → y survives, x deleted, numPDBViolations=0."""
    docs = [*std_classes(), make_priority_class("p200", 200), make_priority_class("p100", 100), node("n1"),
            pod("x", "2", priority_class="p200", node="n1", labels={"app": "db"}),
            pod("y", "2", priority_class="p100", node="n1", labels={"app": "db"}),
            *([make_pdb("db", {"matchLabels": {"app": "db"}}, min_available=1, disruptions_allowed=1)] if with_pdb else []),
            scenario([create_step(1, pod("p", "2", priority_class="high"))])]
    run = simulate(docs)
    assert run.victims() == {deleted}
    (decision,) = [d for d in run.decisions("p") if d["outcome"] == "preempted"]
    assert decision["candidates"][0]["pdbViolations"] == 0


# -- empty-selector PDB ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("selector", "chosen"),
    [pytest.param({}, "n1", id="empty-selector-ignored"),
     pytest.param({"matchLabels": {"app": "a"}}, "n2", id="matching-selector-protects")],
)
def test_empty_selector_pdb_does_not_protect(simulate, selector, chosen):
    """Preemption's PDB check treats a PDB with selector {} as matching nothing (whereas the eviction
    API and the disruption controller take it to select every pod of the namespace)."""
    docs = [*std_classes(), node("n1"), node("n2"),
            pod("a", "4", priority_class="low", node="n1", labels={"app": "a"}),
            pod("b", "4", priority_class="mid", node="n2", namespace="other", labels={"app": "a"}),
            make_pdb("guard", selector, min_available=1, disruptions_allowed=0),
            scenario([create_step(1, pod("p", "4", priority_class="high"))])]
    run = simulate(docs)
    assert run.nominations("p")[0] == (1.0, chosen)
    assert run.victims() == ({"a"} if chosen == "n1" else {"b"})


# -- terminating victims block re-preemption ----------------------------------------------------
def test_terminating_victim_blocks_repreemption(simulate):
    """`PodEligibleToPreemptOthers`: while v (grace 60 s) terminates, retries of p say "not eligible
    due to a terminating pod on the nominated node." and delete nothing else (w would be the next
    victim); p keeps n1."""
    docs = [*std_classes(), make_priority_class("top", 2000), node("n1"),
            pod("v", "3", priority_class="low", node="n1", grace=60),
            pod("w", "1", priority_class="low", node="n1"),
            pod("z", priority_class="top", node="n1"),
            scenario([create_step(1, pod("p", "2", priority_class="high")), delete_step(20, "Pod", "z", namespace="default", grace=0)])]
    run = simulate(docs)
    assert run.preempted() == [(1.0, "v", "p")]
    retries = run.failed("p")[1:]
    assert any(t == 20.0 for t, _ in retries), retries
    assert retries and all(m == msg(INSUFFICIENT_1, NOT_ELIGIBLE_TERMINATING) for _, m in retries)
    assert run.nominations("p") == [(1.0, "n1")]
    assert run.scheduled("p") == [(61.0, "n1")]
    assert run.phase("w") == "Running"


# -- nominated space reserved for ≤ priority ---------------------------------------------------
def test_nominated_space_reserved_for_lower_or_equal_priority(simulate):
    """Filtering counts the pods nominated to a node with priority ≥ the pod's own (pass 1 of
    `RunFilterPluginsWithNominatedPods`): q (mid, 3 cpu) created while v terminates cannot preempt
    (p counted), and once v is gone q is still rejected on the now-empty n1 because pass 1 counts the
    nominated p.

    Timeline (upstream): p fails at 1 (preempts v) and again at 2 (the victim's update, handled while
    p's cycle was open, sends p through backoffQ: the `moveRequestCycle` rule); z's deletion at 30.5
    retries p (→ backoff 4 s until 34.5) and q (→ backoff 2 s until 32.5); v is deleted at 31, so q is
    tried at 33 with n1 empty but p still nominated; p binds at 35."""
    docs = [*std_classes(), make_priority_class("top", 2000), node("n1"),
            pod("v", "3", priority_class="low", node="n1"), pod("z", priority_class="top", node="n1"),
            scenario([create_step(1, pod("p", "2", priority_class="high")), create_step(5, pod("q", "3", priority_class="mid")),
                      delete_step(30.5, "Pod", "z", namespace="default", grace=0)])]
    run = simulate(docs)
    assert run.preempted() == [(1.0, "v", "p")]
    assert run.failed("q")[0] == (
        5.0, msg(INSUFFICIENT_1, "preemption: 0/1 nodes are available: 1 Insufficient cpu."))
    v_gone = run.times("Deleted", "v")[0]
    assert v_gone == 31.0
    (p_bound,) = run.scheduled("p")
    assert p_bound[1] == "n1"
    between = [(t, m) for t, m in run.failed("q") if v_gone <= t < p_bound[0]]
    assert between, "q must be retried after v is gone while p is still only nominated"
    assert all(m == msg(INSUFFICIENT_1, NO_VICTIMS_1) for _, m in between)
    assert p_bound == (35.0, "n1")
    assert run.scheduled("q") == []
    assert run.phase("q") == "Pending"
    assert run.nominations("q") == []


# -- higher priority ignores nomination --------------------------------------------------------
def test_higher_priority_ignores_nomination_and_repreempts_terminating_victim(simulate):
    docs = [*std_classes(), make_priority_class("top", 2000), node("n1"),
            pod("v", "3", priority_class="low", node="n1"), pod("z", priority_class="top", node="n1"),
            scenario([create_step(1, pod("p", "2", priority_class="high")), create_step(5, pod("r", "3", priority_class="top")),
                      delete_step(10, "Pod", "z", namespace="default", grace=0)])]
    run = simulate(docs)
    assert run.preempted() == [(1.0, "v", "p"), (5.0, "v", "r")]
    assert run.failed("r")[0] == (5.0, INSUFFICIENT_1)
    assert run.nominations("r") == [(5.0, "n1")]
    assert run.nominations("p") == [(1.0, "n1"), (5.0, None)]
    # p while v still exists: r is counted as nominated → "Insufficient cpu.."
    p_at_10 = [m for t, m in run.failed("p") if t == 10.0]
    assert p_at_10 == [msg(INSUFFICIENT_1, "preemption: 0/1 nodes are available: 1 Insufficient cpu.")]
    assert run.times("Deleted", "v") == [31.0]
    assert run.scheduled("r") == [(31.0, "n1")]
    # once r is bound nothing of lower priority is left
    p_after = [m for t, m in run.failed("p") if t >= 31.0]
    assert p_after and p_after[0] == msg(INSUFFICIENT_1, NO_VICTIMS_1)
    assert run.phase("p") == "Pending"
    assert run.pod("p")["nominatedNodeName"] is None


# -- clearing lower nominations ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("p1_cls", "p2_cls", "p1_cleared"),
    [pytest.param("mid", "high", True, id="lower-priority-nomination-cleared"),
     pytest.param("high", "mid", False, id="higher-priority-nomination-kept")],
)
def test_preemption_clears_lower_priority_nominations_on_node(simulate, p1_cls, p2_cls, p1_cleared):
    """`prepareCandidate`: after preempting on n1, nominations to n1 of pods with lower priority than
    the preemptor are cleared (and only those)."""
    docs = [*std_classes(), node("n1", cpu="6"),
            pod("v", "3", priority_class="low", node="n1", start_time=ago(10)),
            pod("w", "3", priority_class="low", node="n1", start_time=ago(1)),
            scenario([create_step(1, pod("p1", "3", priority_class=p1_cls)), create_step(5, pod("p2", "3", priority_class=p2_cls))])]
    run = simulate(docs)
    assert run.preempted()[0] == (1.0, "w", "p1")
    assert run.nominations("p1")[0] == (1.0, "n1")
    assert (5.0, "n1") in run.nominations("p2")
    p1_at_5 = [n for t, n in run.nominations("p1") if t == 5.0]
    assert p1_at_5 == ([None] if p1_cleared else [])
    first_bound = min((run.scheduled(p)[0][0], p) for p in ("p1", "p2"))
    assert first_bound == (31.0, "p2" if p1_cleared else "p1")


# -- no candidates clears nomination -----------------------------------------------------------
def test_no_candidates_clears_nomination(simulate):
    """When no node is left where preemption might help (the nominated node became untolerated, no
    other candidate), the preemptor's nominatedNodeName is cleared."""
    docs = [*std_classes(), make_priority_class("top", 2000), node("n1"),
            pod("v", "3", priority_class="low", node="n1"), pod("z", priority_class="top", node="n1"),
            scenario([create_step(1, pod("p", "2", priority_class="high")),
                      patch_step(3, "Node", "n1", {"spec": {"taints": [make_taint()]}}),
                      delete_step(5, "Pod", "z", namespace="default", grace=0)])]
    run = simulate(docs)
    assert run.nominations("p") == [(1.0, "n1"), (5.0, None)]
    # (the clearing patch lands while p is in flight, which may requeue it at once: ≥ 1 attempt at t=5)
    at_5 = [m for t, m in run.failed("p") if t == 5.0]
    assert at_5 and set(at_5) == {
        "0/1 nodes are available: 1 node(s) had untolerated taint {k: v}. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.."}
    assert run.pod("p")["nominatedNodeName"] is None
    assert run.phase("p") == "Pending"


# -- grace period ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("victim_kw", "bind_at"),
    [
        pytest.param({}, 35.0, id="default-30s-grace"),
        pytest.param({"grace": 10}, 15.0, id="explicit-grace"),
        pytest.param({"annotations": {"kubesched.io/run-for": "20s"}}, 20.0, id="victim-turns-terminal-first"),
    ],
)
def test_preemptor_binds_only_after_victim_gone_or_terminal(simulate, victim_kw, bind_at):
    docs = [*std_classes(), node("n1"), pod("v", "3", priority_class="low", node="n1", **victim_kw),
            scenario([create_step(5, pod("p", "2", priority_class="high"))])]
    run = simulate(docs)
    assert run.preempted() == [(5.0, "v", "p")]
    assert run.scheduled("p") == [(bind_at, "n1")]
    gone = run.times("Deleted", "v") + run.times("Completed", "v")
    assert min(gone) == bind_at


# -- design rule: BestEffort pods are not preempted to free resources ----------------------------
@pytest.mark.parametrize(
    ("running", "preemptor_cpu", "victims", "bound"),
    [
        pytest.param([("be", None, "low"), ("v", "3", "low")], "2", {"v"}, True, id="besteffort-reprieved"),
        pytest.param([("be", None, "low"), ("h", "4", "high")], "1", set(), False, id="besteffort-alone-useless"),
    ],
)
def test_besteffort_pods_not_preempted_for_resources(simulate, running, preemptor_cpu, victims, bound):
    """The Pod Preemption design's rule that BestEffort pods are not preempted to free resources
    follows from the reprieve: zero-request pods are reprieved unless the pod count requires
    removal."""
    docs = [*std_classes(), node("n1"),
            *[pod(n, cpu, priority_class=c, node="n1") for n, cpu, c in running],
            scenario([create_step(1, pod("p", preemptor_cpu, priority_class="mid"))])]
    run = simulate(docs)
    assert run.victims() == victims
    assert run.phase("be") == "Running"
    if not bound:
        assert run.failed("p")[0] == (
            1.0, msg(INSUFFICIENT_1, "preemption: 0/1 nodes are available: 1 Insufficient cpu."))
    assert bool(run.scheduled("p")) == bound


def test_besteffort_pod_preempted_when_pod_count_requires(simulate):
    """The pod-count limit ("Too many pods") can make a BestEffort pod a victim."""
    docs = [*std_classes(), node("n1", pods="2"),
            pod("be", priority_class="low", node="n1"), pod("h", "1", priority_class="high", node="n1"),
            scenario([create_step(1, pod("p", "1", priority_class="mid"))])]
    run = simulate(docs)
    assert run.failed("p")[0][1].startswith("0/1 nodes are available: 1 Too many pods.")
    assert run.victims() == {"be"}


# -- victims re-sorted by importance (v1.32), not v1.28's violating-first order ------------------
def test_node_choice_compares_most_important_victim_after_resort(simulate):
    """The second criterion of `pickOneNodeForPreemption` ("lowest priority of the most important
    victim"): kubesched deliberately follows the behaviour fixed by kubernetes/kubernetes#128307
    (v1.32) — victims are re-sorted by importance after the reprieve, so ``victims[0]`` is the most
    important one. n1's victims are [b (500), a (100, violating)], n2's [c (200, violating)]; both
    have one violation, so the second criterion compares 500 (n1) with 200 (n2) → n2. (v1.28.7 kept
    the violating victims first, compared the first *violating* victim, 100, and picked n1.)"""
    docs = [*std_classes(), make_priority_class("p100", 100), make_priority_class("p200", 200), make_priority_class("p500", 500),
            node("n1"), node("n2"),
            pod("a", "2", priority_class="p100", node="n1", labels={"app": "g"}),
            pod("b", "2", priority_class="p500", node="n1"),
            pod("c", "4", priority_class="p200", node="n2", labels={"app": "g"}),
            make_pdb("g", {"matchLabels": {"app": "g"}}, min_available=1, disruptions_allowed=0),
            scenario([create_step(1, pod("p", "4", priority_class="high"))])]
    run = simulate(docs)
    (decision,) = [d for d in run.decisions("p") if d["outcome"] == "preempted"]
    assert decision["chosen"] == "n2"
    assert decision["criterion"] == "lowest priority of the most important victim"
    assert run.victims() == {"c"}
    n1 = next(c for c in decision["candidates"] if c["node"] == "n1")
    assert [v["pod"] for v in n1["victims"]] == ["default/b", "default/a"]


# -- re-preempting a terminating victim re-patches it ------------------------------------------------
def test_repreempting_terminating_victim_requeues_preemptor_through_backoff(simulate):
    """v1.28 lets a later preemptor select a victim that is already terminating (with KEP-4832's
    asynchronous preemption, v1.33 skips the API calls for it). A second preemptor selecting an
    already-terminating victim re-issues the DisruptionTarget patch — computed from the
    *preemptor's* status in 1.28.7 (kubernetes/kubernetes#121103, fixed by #126644), so it always
    changes the victim — and that AssignedPodUpdate during r's cycle sends r to backoffQ (the
    `moveRequestCycle` rule of v1.28's scheduling queue): r is retried 1 s later ("not eligible due
    to a terminating pod …"), exactly like the first preemptor was."""
    docs = [*std_classes(), make_priority_class("top", 2000), node("n1"), pod("v", "3", priority_class="low", node="n1"),
            scenario([create_step(1, pod("p", "2", priority_class="high")), create_step(5, pod("r", "3", priority_class="top"))])]
    run = simulate(docs)
    assert run.preempted() == [(1.0, "v", "p"), (5.0, "v", "r")]
    assert [t for t, _ in run.failed("p")][:2] == [1.0, 2.0]
    assert run.failed("r")[:2] == [(5.0, INSUFFICIENT_1), (6.0, msg(INSUFFICIENT_1, NOT_ELIGIBLE_TERMINATING))]


# -- kubelet eviction --------------------------------------------------------------------------
def test_kubelet_eviction_order_under_memory_pressure(simulate):
    """The kubelet, not the scheduler, ranks pods by *usage* under memory pressure (v1.28
    `rankMemoryPressure` in `pkg/kubelet/eviction/helpers.go`): pods using more than their memory
    request first, then lower priority, then larger usage above the request; one pod per synchronize
    (the first at 10 s, the next a second after the victim was cleaned up). The 2Gi node keeps the
    100Mi hard threshold (memory.available<100Mi) on top of its allocatable, and its pods use
    2140Mi: 8Mi available. Of the two pods over their request the
    low-priority one goes first although its excess is far smaller; 98Mi available is still under
    the threshold, so the high-priority pod over its request goes next, before the low-priority pod
    within its request, which keeps running."""
    docs = [*std_classes(), node("n1", memory="2Gi"),
            pod("lo-within", memory="1Gi", priority_class="low", node="n1", usage="memory=950Mi"),
            pod("hi-over", memory="256Mi", priority_class="high", node="n1", usage="memory=1100Mi"),
            pod("lo-over", memory="64Mi", priority_class="low", node="n1", usage="memory=90Mi"),
            scenario(cluster={"eviction": {}})]
    run = simulate(docs)
    assert run.evicted() == [(10.0, "lo-over"), (11.0, "hi-over")]
    assert [(e["signal"], e["priority"], e["usage"], e["request"]) for e in run.result["cluster"]["eviction"]["evictions"]] == [
        ("memory.available", 100, "90Mi", "64Mi"), ("memory.available", 1000, "1100Mi", "256Mi")]
    assert [run.phase(p) for p in ("lo-over", "hi-over", "lo-within")] == ["Failed", "Failed", "Running"]
    assert run.ev("Preempted") == []  # nothing was pending: the scheduler's preemption plays no part
