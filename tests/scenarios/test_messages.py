"""FitError texts and resource accounting as kube-scheduler v1.28 has them: the FitError message
(`FitError.Error` in `pkg/scheduler/framework/types.go`: reasons counted per node and sorted
bytewise, the first failing filter only), pod requests (`PodRequests` in
`pkg/api/v1/resource/helpers.go`) and the FailedScheduling note limit."""

from __future__ import annotations

import pytest

from kubesched.testkit.builders import make_container, make_taint

from .conftest import node, pod, scenario

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def _pending(name: str = "p", cpu: str | None = "2", **kw) -> dict:
    return pod(name, cpu, **kw)


@pytest.mark.parametrize(
    ("cluster", "pending", "expected"),
    [
        pytest.param(
            [node(f"a{i:02d}", cpu="1") for i in range(12)] + [node(f"t{i}", taints=[make_taint()]) for i in range(3)],
            _pending(),
            "0/15 nodes are available: 12 Insufficient cpu, 3 node(s) had untolerated taint {k: v}. "
            f"preemption: 0/15 nodes are available: 12 {NO_VICTIMS}, 3 {NOT_HELPFUL}..",
            id="bytewise-sort-12-before-3",
        ),
        pytest.param(
            [node("n1", cpu="1", unschedulable=True)],
            _pending(),
            f"0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}..",
            id="first-failing-plugin-only-cordoned-and-short",
        ),
        pytest.param(
            [node("n1", cpu="1", taints=[make_taint("a", "1"), make_taint("b", "2")])],
            _pending(),
            f"0/1 nodes are available: 1 node(s) had untolerated taint {{a: 1}}. "
            f"preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}..",
            id="first-untolerated-taint-only",
        ),
        pytest.param(
            [node("n1", cpu="1", memory="1Gi")],
            _pending(memory="2Gi"),
            f"0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. "
            f"preemption: 0/1 nodes are available: 1 {NO_VICTIMS}..",
            id="all-failing-resources-listed",
        ),
        pytest.param(
            [node("n1", pods="1"), pod("be", node="n1")],
            _pending(cpu=None),
            f"0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 {NO_VICTIMS}..",
            id="besteffort-rejected-by-pod-count",
        ),
        pytest.param(
            [node("n1", cpu="1", labels={"zone": "a"}), node("n2", cpu="3", labels={"zone": "b"})],
            _pending(nodeSelector={"zone": "a"}),
            f"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector. "
            f"preemption: 0/2 nodes are available: 1 {NO_VICTIMS}, 1 {NOT_HELPFUL}..",
            id="uppercase-sorts-before-lowercase",
        ),
    ],
)
def test_fit_error_message(simulate, cluster, pending, expected):
    run = simulate(*cluster, pending, scenario(until=5))
    assert run.failed("p")[0] == (0.0, expected)


def test_no_nodes_message(simulate):
    """No nodes at all → UnschedulableAndUnresolvable "no nodes available to schedule pods", and no
    PostFilter (`schedulePod` in `pkg/scheduler/schedule_one.go`)."""
    run = simulate(pod("p", "1"), scenario(until=5))
    assert run.messages("p")[0] == "no nodes available to schedule pods"


# -- zero-request pods -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cluster", "bound"),
    [
        pytest.param([node("n1", cpu="1"), pod("hog", "1", node="n1")], True, id="fits-with-0-cpu-free"),
        pytest.param([node("n1", cpu="1", memory="1Gi"), pod("hog", "1", "1Gi", node="n1")], True,
                     id="fits-with-0-cpu-and-memory-free"),
        pytest.param([node("n1", pods="1"), pod("hog", node="n1")], False, id="rejected-at-pod-limit"),
    ],
)
def test_besteffort_pod_filtered_as_zero_request(simulate, cluster, bound):
    run = simulate(*cluster, pod("be"), scenario(until=5))
    assert bool(run.scheduled("be")) == bound
    if not bound:
        assert run.messages("be")[0].startswith("0/1 nodes are available: 1 Too many pods.")


# -- init containers and overhead --------------------------------------------------------------
@pytest.mark.parametrize(
    ("free_cpu", "fits"),
    [pytest.param("2", False, id="2-cpu-free-rejected"),
     pytest.param("2249m", False, id="2249m-free-rejected"),
     pytest.param("2250m", True, id="2250m-free-fits")],
)
def test_init_containers_and_overhead_count_in_request(simulate, free_cpu, fits):
    """The effective request is max(Σ containers 1+1, init 2) + overhead 250m = 2250m."""
    p = pod("p", containers=[make_container("a", "1"), make_container("b", "1")],
            initContainers=[make_container("init", "2")], overhead={"cpu": "250m"})
    run = simulate(node("n1", cpu=free_cpu), p, scenario(until=5))
    assert bool(run.scheduled("p")) == fits
    if not fits:
        assert run.messages("p")[0].startswith("0/1 nodes are available: 1 Insufficient cpu.")


@pytest.mark.parametrize(
    ("init_cpu", "free_cpu", "fits"),
    [pytest.param("3", "3", True, id="init-dominates-fits"),
     pytest.param("3", "2", False, id="init-dominates-rejected"),
     pytest.param("1", "2", True, id="containers-dominate")],
)
def test_effective_request_is_max_of_init_and_sum_of_containers(simulate, init_cpu, free_cpu, fits):
    p = pod("p", containers=[make_container("a", "1"), make_container("b", "1")],
            initContainers=[make_container("init", init_cpu)])
    run = simulate(node("n1", cpu=free_cpu), p, scenario(until=5))
    assert bool(run.scheduled("p")) == fits


# -- note truncation ---------------------------------------------------------------------------
def test_failed_scheduling_note_truncated_to_1024_but_condition_keeps_full_message(simulate):
    """The event note is at most 1024 chars, cut with a " ..." suffix (NoteLengthLimit in
    `pkg/apis/core/validation/events.go`); the PodScheduled condition has the full text."""
    nodes = [node(f"n{i:02d}", taints=[make_taint(f"key-number-{i:02d}", "value")]) for i in range(40)]
    run = simulate(*nodes, pod("p", "1"), scenario(until=5), deep=True)
    full = run.conditions("p", "PodScheduled")[0][1]["message"]
    assert len(full) > 1024
    assert full.startswith("0/40 nodes are available: 1 node(s) had untolerated taint {key-number-00: value}, ")
    assert full.endswith(f"preemption: 0/40 nodes are available: 40 {NOT_HELPFUL}..")
    note = run.messages("p")[0]
    assert len(note) == 1024
    assert note == full[:1020] + " ..."
