"""The Pod Preemption design proposal's worked examples (examples/preemption-design/; the proposal is
kubernetes/community `contributors/design-proposals/scheduling/pod-preemption.md`) and its "minimise
victims" rule, as kube-scheduler v1.28 realises them: victims chosen by reprieve in importance order,
the preemptor nominated and bound once its victims are gone.

Each example is checked as a time-ordered list of steps: at each instant, the set of
Preempted / Nominated / Scheduled / Deleted events (events at the same instant have no order
upstream — victims are deleted in parallel), plus the causal orderings that do matter and the
narrated FailedScheduling texts.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from kubesched.testkit.builders import make_priority_class
from kubesched.testkit.runs import ScenarioRun, run_path
from kubesched.testkit.scenarios import create_step

from .conftest import node, pod, scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption-design"
KEY = ("Preempted", "Nominated", "Scheduled", "Deleted")

INSUFFICIENT = "0/{n} nodes are available: {n} Insufficient cpu."
NO_VICTIMS = "0/{n} nodes are available: {n} Insufficient cpu. preemption: 0/{n} nodes are available: " \
             "{n} No preemption victims found for incoming pod.."
NOT_ELIGIBLE = "0/{n} nodes are available: {n} Insufficient cpu. preemption: not eligible due to a " \
               "terminating pod on the nominated node.."


def load(n: int) -> ScenarioRun:
    return run_path(EXAMPLES / f"example-{n}.yaml", explain=True)


def steps(run: ScenarioRun) -> list[tuple[float, set[tuple]]]:
    """Key events grouped by time: ``[(t, {(reason, pod, node[, preemptor])…})…]`` in time order."""
    groups: dict[float, set[tuple]] = defaultdict(set)
    for e in run.events:
        if e["reason"] not in KEY:
            continue
        item: tuple = (e["reason"], e["pod"].split("/")[1], e.get("node"))
        if e["reason"] == "Preempted":
            item += (e["preemptor"].split("/")[1],)
        groups[e["time"]].add(item)
    return sorted(groups.items())


def index(run: ScenarioRun, reason: str, pod_name: str, nth: int = 0) -> int:
    hits = [i for i, e in enumerate(run.events) if e["reason"] == reason and e["pod"] == f"default/{pod_name}"]
    return hits[nth]


def test_example_1_c_preempts_a_and_b_d_waits_behind_nomination():
    """One node of 10: C (1000) preempts A and B and is nominated; D (50) sees C's nomination and
    stays pending even after B is gone; C binds once A (grace 60 s) is gone."""
    run = load(1)
    assert steps(run) == [
        (1.0, {("Preempted", "a", "node-1", "c"), ("Preempted", "b", "node-1", "c"), ("Nominated", "c", "node-1")}),
        (31.0, {("Deleted", "b", "node-1")}),
        (61.0, {("Deleted", "a", "node-1"), ("Scheduled", "c", "node-1")}),
    ]
    assert index(run, "Deleted", "a") < index(run, "Scheduled", "c")
    assert run.failed("c")[0] == (1.0, INSUFFICIENT.format(n=1))
    assert all(m == NOT_ELIGIBLE.format(n=1) for t, m in run.failed("c")[1:] if t < 61.0)
    # D: no victims of lower priority; after B is gone (5 cpu free) C's nomination still blocks it
    assert run.failed("d")[0] == (1.0, NO_VICTIMS.format(n=1))
    assert 31.0 in [t for t, _ in run.failed("d")]
    assert all(m == NO_VICTIMS.format(n=1) for _, m in run.failed("d"))
    assert run.nominations("d") == []
    assert run.pod("c") == {"node": "node-1", "phase": "Running", "priority": 1000, "nominatedNodeName": "node-1"}
    assert run.pod("d")["phase"] == "Pending" and run.node_of("d") is None
    assert {run.phase("a"), run.phase("b")} == {"Deleted"}
    assert run.result["summary"] == {"scheduled": 1, "pending": 1, "preemptions": 1, "victims": 2}


def test_example_2_c_binds_elsewhere_when_node_2_frees_d_takes_node_1():
    """C preempts A and B on node-1; E leaves node-2 at 10 s and C binds there instead (keeping its
    nominatedNodeName node-1); D binds to node-1 once B is gone."""
    run = load(2)
    assert steps(run) == [
        (1.0, {("Preempted", "a", "node-1", "c"), ("Preempted", "b", "node-1", "c"), ("Nominated", "c", "node-1")}),
        (10.0, {("Deleted", "e", "node-2"), ("Scheduled", "c", "node-2")}),
        (31.0, {("Deleted", "b", "node-1"), ("Scheduled", "d", "node-1")}),
        (61.0, {("Deleted", "a", "node-1")}),
    ]
    assert index(run, "Deleted", "e") < index(run, "Scheduled", "c")
    assert index(run, "Deleted", "b") < index(run, "Scheduled", "d")
    assert run.failed("c")[0] == (1.0, INSUFFICIENT.format(n=2))
    assert run.failed("d")[0] == (1.0, NO_VICTIMS.format(n=2))
    assert run.pod("c") == {"node": "node-2", "phase": "Running", "priority": 1000, "nominatedNodeName": "node-1"}
    assert run.pod("d")["node"] == "node-1" and run.phase("d") == "Running"
    assert run.result["summary"]["pending"] == 0


def test_example_3_d_fits_node_2_at_once_c_binds_node_1_later():
    """E uses 8 of node-2's 10, so D (2) binds to node-2 immediately while A and B terminate; C binds
    to node-1 once A is gone."""
    run = load(3)
    assert steps(run) == [
        (1.0, {("Preempted", "a", "node-1", "c"), ("Preempted", "b", "node-1", "c"), ("Nominated", "c", "node-1"),
               ("Scheduled", "d", "node-2")}),
        (31.0, {("Deleted", "b", "node-1")}),
        (61.0, {("Deleted", "a", "node-1"), ("Scheduled", "c", "node-1")}),
    ]
    assert index(run, "Scheduled", "c") > index(run, "Deleted", "a")
    assert run.failed("d") == []
    assert run.pod("c")["node"] == "node-1" and run.pod("d")["node"] == "node-2"
    assert run.phase("e") == "Running"


def test_example_4_f_takes_over_node_1_c_and_d_stay_pending():
    """F (2000) arrives at 10 s while A and B terminate: it ignores C's nomination, re-preempts the
    terminating A and B, takes node-1's nomination (C's is cleared) and binds when A is gone; C and D
    stay pending."""
    run = load(4)
    assert steps(run) == [
        (1.0, {("Preempted", "a", "node-1", "c"), ("Preempted", "b", "node-1", "c"), ("Nominated", "c", "node-1")}),
        (10.0, {("Preempted", "a", "node-1", "f"), ("Preempted", "b", "node-1", "f"), ("Nominated", "c", None),
                ("Nominated", "f", "node-1")}),
        (31.0, {("Deleted", "b", "node-1")}),
        (61.0, {("Deleted", "a", "node-1"), ("Scheduled", "f", "node-1")}),
    ]
    assert run.failed("f")[0] == (10.0, INSUFFICIENT.format(n=1))
    # C while A still terminates: F counted as nominated → its dry run fails on cpu
    c_31 = [m for t, m in run.failed("c") if t == 31.0]
    assert c_31 == ["0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                    "1 Insufficient cpu.."]
    c_61 = [m for t, m in run.failed("c") if t == 61.0]
    assert c_61 == [NO_VICTIMS.format(n=1)]
    assert run.scheduled("c") == [] and run.scheduled("d") == []
    assert run.pod("c") == {"node": None, "phase": "Pending", "priority": 1000, "nominatedNodeName": None}
    assert run.pod("d")["phase"] == "Pending"
    assert run.pod("f") == {"node": "node-1", "phase": "Running", "priority": 2000, "nominatedNodeName": "node-1"}
    assert run.result["summary"] == {"scheduled": 1, "pending": 2, "preemptions": 2, "victims": 2}


# -- design "minimise victims": reprieve in importance order ------------------------------------
@pytest.mark.parametrize(
    ("running", "wanted", "victims"),
    [
        pytest.param({"p0": 3, "p1": 1, "p2": 5, "p3": 1}, 5, {"p2"}, id="design-example-only-priority-2-deleted"),
        pytest.param({"p0": 3, "p1": 1, "p2": 5, "p3": 1}, 6, {"p2", "p0"}, id="needs-6-greedy-by-importance"),
        pytest.param({"p0": 3, "p1": 1, "p2": 5, "p3": 1}, 1, {"p0"}, id="needs-1-least-important-deleted"),
    ],
)
def test_design_minimise_victims(simulate, running, wanted, victims):
    """Capacity 10, running priorities/requests {0:3, 1:1, 2:5, 3:1}; preemptor priority 10. Reprieve in
    importance order (3, 2, 1, 0) keeps every pod that still fits."""
    docs = [*[make_priority_class(f"c{i}", i) for i in (0, 1, 2, 3, 10)], node("n1", cpu="10"),
            *[pod(name, str(cpu), priority_class=f"c{name[1:]}", node="n1") for name, cpu in running.items()],
            scenario([create_step(1, pod("p10", str(wanted), priority_class="c10"))])]
    run = simulate(docs)
    assert run.victims() == victims
    assert {p: run.phase(p) for p in running if p not in victims} == dict.fromkeys(set(running) - victims, "Running")
    assert run.scheduled("p10") == [(31.0, "n1")]
