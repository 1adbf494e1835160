"""Filtering and scoring behaviours of kube-scheduler v1.28 (upstream `pkg/scheduler/schedule_one.go`
and the NodeResourcesFit, NodeResourcesBalancedAllocation and TaintToleration plugins under
`pkg/scheduler/framework/plugins/`): the nominated node first, score arithmetic, plugin weights, the
random tie-break and percentageOfNodesToScore."""

from __future__ import annotations

import re

import pytest

from kubesched.testkit.builders import make_taint

from .conftest import node, pod, scenario


def _scores(run, pod_name: str = "p") -> dict[str, dict]:
    (attempt,) = [a for a in run.attempts(pod_name) if a["outcome"] == "scheduled"]
    return {s["node"]: s for s in attempt["scores"]}


# -- nominated node first, no scoring ----------------------------------------------------------
@pytest.mark.parametrize(
    ("nominated", "expected", "scored"),
    [pytest.param("n1", "n1", False, id="nominated-fits-bound-without-scoring"),
     pytest.param(None, "n2", True, id="control-without-nomination-scores-n2-higher")],
)
def test_nominated_node_tried_first_without_scoring(simulate, nominated, expected, scored):
    status = {"nominatedNodeName": nominated} if nominated else None
    run = simulate(node("n1"), node("n2"), pod("x", "3", node="n1"), pod("p", "1", status=status),
                   scenario(until=5))
    assert run.scheduled("p") == [(0.0, expected)]
    assert bool(_scores(run)) == scored


def test_nominated_node_not_fitting_falls_back_to_all_nodes(simulate):
    """If the nominated node no longer fits, the other nodes are filtered and scored as usual and
    another node is used; the nomination stays on the pod object."""
    run = simulate(node("n1"), node("n2"), pod("x", "4", node="n1"),
                   pod("p", "1", status={"nominatedNodeName": "n1"}), scenario(until=5))
    assert run.scheduled("p") == [(0.0, "n2")]
    assert run.pod("p")["nominatedNodeName"] == "n1"


# -- LeastAllocated / BalancedAllocation arithmetic -----------------------------------------------
def test_least_allocated_and_balanced_allocation_arithmetic(simulate):
    run = simulate(node("n1", cpu="4000m", memory="8Gi"), node("n2", cpu="4000m", memory="8Gi"),
                   pod("x", "1000m", "2Gi", node="n1"), pod("p", "1000m", "1Gi"), scenario(until=5))
    scores = _scores(run)
    assert scores["n1"]["plugins"]["NodeResourcesFit"] == 56  # ⌊(50 + 62)/2⌋
    assert scores["n1"]["plugins"]["NodeResourcesBalancedAllocation"] == 93  # ⌊(1 − 0.125/2)·100⌋
    assert scores["n2"]["plugins"]["NodeResourcesFit"] == 81  # ⌊(75 + 87)/2⌋
    assert scores["n2"]["plugins"]["NodeResourcesBalancedAllocation"] == 93
    assert run.scheduled("p") == [(0.0, "n2")]


# -- default requests only in scoring ----------------------------------------------------------
def test_default_requests_used_for_scoring_but_not_filtering(simulate):
    """No requests → filtered as 0 (fits a cpu-full node), scored as 100m/200Mi (the non-zero
    defaults of `pkg/scheduler/util/pod_resources.go`)."""
    run = simulate(node("n1", cpu="4000m", memory="8Gi"), node("full", cpu="4000m", memory="8Gi"),
                   pod("hog", "4000m", node="full"), pod("p"), scenario(until=5))
    scores = _scores(run)
    assert set(scores) == {"n1", "full"}  # the cpu-full node is feasible
    assert scores["n1"]["plugins"]["NodeResourcesFit"] == 97  # cpu ⌊3900·100/4000⌋=97, mem ⌊(8Gi−200Mi)·100/8Gi⌋=97
    assert scores["n1"]["plugins"]["NodeResourcesBalancedAllocation"] == 100  # actual requests: 0/0
    # cpu: 4000m + 100m > 4000m → 0; mem: hog's and p's default 200Mi each → ⌊(8Gi−400Mi)·100/8Gi⌋ = 95
    assert scores["full"]["plugins"]["NodeResourcesFit"] == 47
    assert run.scheduled("p") == [(0.0, "n1")]


# -- weights: TaintToleration counts 3 times ---------------------------------------------------
@pytest.mark.parametrize(
    ("n1_taints", "n2_taints", "n1_weighted", "n2_weighted"),
    [pytest.param(0, 1, 300, 0, id="tolerated-vs-one-untolerated-differ-by-300"),
     pytest.param(1, 2, 150, 0, id="normalized-reverse-100-minus-100*count/max"),
     pytest.param(1, 1, 0, 0, id="equal-counts")],
)
def test_taint_toleration_score_weight_3(simulate, n1_taints, n2_taints, n1_weighted, n2_weighted):
    def prefer(n: int) -> list:
        return [make_taint(f"t{i}", "x", "PreferNoSchedule") for i in range(n)] or None

    run = simulate(node("n1", taints=prefer(n1_taints)), node("n2", taints=prefer(n2_taints)),
                   pod("p", "1"), scenario(until=5))
    scores = _scores(run)
    assert scores["n1"]["plugins"]["TaintToleration"] == n1_weighted
    assert scores["n2"]["plugins"]["TaintToleration"] == n2_weighted
    assert scores["n1"]["total"] - scores["n2"]["total"] == n1_weighted - n2_weighted


# -- random tie-break among the best scores (selectHost) ---------------------------------------
def test_equal_scores_break_ties_uniformly_at_random(simulate):
    nodes = [node(n, cpu="1000", memory="4Ti") for n in ("n1", "n2")]
    pods = [pod(f"p{i:03d}", "10m", "10Mi") for i in range(100)]
    run = simulate(*nodes, *pods, scenario(seed=7))
    placements = [e["node"] for e in run.ev("Scheduled")]
    assert len(placements) == 100
    # all integer scores stay equal
    for a in run.attempts():
        totals = {s["total"] for s in a["scores"]}
        assert len(totals) == 1, a
    counts = {n: placements.count(n) for n in ("n1", "n2")}
    assert min(counts.values()) >= 25, counts  # Binomial(100, ½): P(< 25) ≈ 3e-7
    alternating = all(x != y for x, y in zip(placements, placements[1:]))
    assert not alternating
    longest_run = max(len(m.group(0)) for m in re.finditer(r"(1+|2+)", "".join(p[-1] for p in placements)))
    assert 2 <= longest_run <= 20


# -- percentageOfNodesToScore ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("num_nodes", "num_tainted", "expected"),
    [
        pytest.param(1000, 420, "tainted", id="1000-nodes-stop-after-420-feasible"),
        pytest.param(1000, 419, "n0419", id="1000-nodes-420th-node-is-scored"),
        pytest.param(100, 99, "n0099", id="100-nodes-all-evaluated"),
    ],
)
def test_percentage_of_nodes_to_score_adaptive(simulate, num_nodes, num_tainted, expected):
    """Adaptive `numFeasibleNodesToFind` (`pkg/scheduler/schedule_one.go`): N=1000 → 50 − 1000/125 =
    42 % → 420 feasible nodes are scored; N ≤ 100 → all.
    The first ``num_tainted`` nodes (in creation order) carry an untolerated PreferNoSchedule taint
    (−300 points), so the pod lands on an untainted node iff one was among those scored."""
    prefer = [make_taint("slow", "yes", "PreferNoSchedule")]
    nodes = [node(f"n{i:04d}", cpu="8", taints=prefer if i < num_tainted else None) for i in range(num_nodes)]
    run = simulate(*nodes, pod("p", "1"), scenario(until=5))
    ((_, chosen),) = run.scheduled("p")
    if expected == "tainted":
        assert int(chosen[1:]) < num_tainted
    else:
        assert chosen == expected
