"""CrossNodePreemption dry-runs the nodes whose dry run names no pod on another node by
DefaultPreemption's batched form (crossnodesurvey.py): the whole run must be the same as with every
node dry-run on its own (the reference), on the brute-force test's generated clusters (zones of
several nodes, anti-affinity per zone and hostname both ways, spreading over zones, budgets) run
until the preemptor binds, and on a larger cluster where only some zones cross."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings

from kubesched.scheduler.plugins.crossnodepreemption import CrossNodePreemption
from kubesched.testkit.builders import make_node, make_pod, make_priority_class, make_scheduler_config
from kubesched.testkit.runs import explained_both_ways, write_scenario
from kubesched.testkit.scenarios import create_step, scenario_document

from .test_cross_node_preemption_bruteforce import Cluster, clusters, documents

EXAMPLES = int(os.environ.get("KUBESCHED_CROSS_NODE_EXAMPLES", "150"))
ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
CONFIG = make_scheduler_config({"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
    "enabled": [{"name": "CrossNodePreemption"}], "disabled": [{"name": "DefaultPreemption"}]}}})


def both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    return explained_both_ways(path, monkeypatch, CrossNodePreemption, "batch_where_nothing_crosses")


def until_bound(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The brute-force scenario, run for a minute (P binds once its victims are gone)."""
    *objects, scenario = docs
    return [*objects, {**scenario, "spec": {**scenario["spec"], "until": "60s"}}]


@seed(20261130)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(c=clusters())
def test_same_run_as_every_node_on_its_own(tmp_path_factory: pytest.TempPathFactory,
                                           monkeypatch: pytest.MonkeyPatch, c: Cluster) -> None:
    path = write_scenario(tmp_path_factory.mktemp("c"), until_bound(documents(c)))
    batched, reference = both_ways(path, monkeypatch)
    assert batched == reference


def test_larger_cluster_with_some_zones_crossing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """40 nodes in 8 zones; low pods of app=db only in zones 0 and 1 (where the preemptors' zone
    anti-affinity crosses nodes), app=batch everywhere; 12 preemptors with zone anti-affinity to db
    and hostname anti-affinity among themselves, then 6 spreading over zones."""
    docs: list[Any] = [make_priority_class("low", 10), make_priority_class("high", 1000)]
    for n in range(40):
        docs.append(make_node(f"n{n}", cpu="4", memory="32Gi", labels={ZONE: f"z{n % 8}"}))
        app = "db" if n % 8 in (0, 1) and n % 3 == 0 else "batch"
        docs += [make_pod(f"low-{n}-{k}", "1", None, priority_class="low", node=f"n{n}", labels={"app": app},
                          grace=5, start_time=f"2024-01-01T00:00:{k:02d}Z") for k in range(4)]
    steps = []
    for i in range(12):
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE},
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}]}}
        steps.append(create_step(1 + i, make_pod(f"web-{i}", "2", None, priority_class="high",
                                                 labels={"app": "web"}, affinity=anti)))
    for i in range(6):
        spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "batch"}}}]
        steps.append(create_step(20 + i, make_pod(f"spread-{i}", "3", None, priority_class="high",
                                                  labels={"app": "api"}, topologySpreadConstraints=spread)))
    docs.append(scenario_document(steps=steps, until="120s", name="larger", config=CONFIG))
    path = write_scenario(tmp_path, docs)
    batched, reference = both_ways(path, monkeypatch)
    assert batched == reference
    assert '"victimsElsewhere"' in batched  # some preemptions did cross nodes
