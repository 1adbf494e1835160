"""examples/autoscaling/bursty.yaml: preemption + kubelet eviction + autoscaling on a bursty workload,
and the charts of a result's ``cluster`` section."""

from __future__ import annotations

import json

import pytest

from kubesched.report.cluster_plots import cluster_charts, cumulative, node_count_series
from kubesched.testkit.runs import ScenarioRun, run_path

from .conftest import EXAMPLES


@pytest.fixture(scope="module")
def bursty() -> ScenarioRun:
    return run_path(EXAMPLES / "autoscaling" / "bursty.yaml")


def test_the_bursty_example_scales_up_and_back_down(bursty: ScenarioRun):
    ca = bursty.autoscaler
    counts = [n for _, n in ca["nodeCount"]]
    assert counts[0] == 2 and counts[-1] == 2          # initialSize = minSize = 2, back there at the end
    assert 4 <= max(counts) <= 8 and min(counts) == 2
    assert len(ca["scaleUps"]) >= 2 and len(ca["scaleDowns"]) >= 2   # one burst after the other
    # cheaper than a static cluster sized for the peak (documented numbers: 2.35 node-hours, 18 evictions,
    # 12 preemptions; pinned loosely so that scoring changes elsewhere do not break this test)
    assert 1.5 < ca["nodeHours"] < max(counts) * 40 / 60
    assert 0 < len(bursty.result["cluster"]["eviction"]["evictions"])
    assert bursty.result["summary"]["preemptions"] > 0
    assert bursty.result["summary"]["pending"] == 0


def test_expendable_and_nominated_pods_never_trigger_scale_up(bursty: ScenarioRun):
    triggered = {e["pod"] for e in bursty.ev("TriggeredScaleUp")}
    assert triggered and not any(p.startswith("default/filler-") for p in triggered)  # priority -20
    nominated_before_trigger = set()
    for e in bursty.events:
        if e["reason"] == "Nominated" and e.get("node"):
            nominated_before_trigger.add(e["pod"])
        elif e["reason"] == "TriggeredScaleUp":
            # a pod that is nominated (and not un-nominated since) never triggers
            assert e["pod"] not in nominated_before_trigger
        elif e["reason"] == "Nominated":
            nominated_before_trigger.discard(e["pod"])


def test_kubelet_evictions_hit_pods_over_their_requests_lowest_priority_first(bursty: ScenarioRun):
    for e in bursty.result["cluster"]["eviction"]["evictions"]:
        assert e["pod"].split("/")[1].startswith(("batch-", "filler-"))  # never the frontend (within request)
        assert e["message"].startswith("The node was low on resource: memory. ")


def test_the_example_is_deterministic(bursty: ScenarioRun):
    again = run_path(EXAMPLES / "autoscaling" / "bursty.yaml")
    assert json.dumps(again.result, sort_keys=True) == json.dumps(bursty.result, sort_keys=True)


def test_cluster_charts(bursty: ScenarioRun):
    charts = cluster_charts(bursty.result)
    assert [title for title, _ in charts] == [f"Nodes over time ({bursty.autoscaler['nodeHours']:g} node-hours)",
                                              "Evictions over time (cumulative)"]
    for _, svg in charts:
        assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert cluster_charts({"cluster": {}, "endTime": 5}) == []


def test_chart_series_helpers():
    assert cumulative([5.0, 5.0, 7.0], 10.0) == [(0.0, 0.0), (5.0, 2.0), (7.0, 3.0), (10.0, 3.0)]
    cluster = {"autoscaler": {"nodeCount": [[0.0, 1], [40.0, 2]],
                              "groups": {"a": {"nodeCount": [[0.0, 1]]}, "b": {"nodeCount": [[0.0, 0], [40.0, 1]]}}}}
    assert node_count_series(cluster, 100.0) == {
        "all nodes": [(0.0, 1.0), (40.0, 2.0), (100.0, 2.0)],
        "a": [(0.0, 1.0), (100.0, 1.0)],
        "b": [(0.0, 0.0), (40.0, 1.0), (100.0, 1.0)],
    }
