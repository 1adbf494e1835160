"""AffinityAwarePreemption weighs its options by the batched dry run where it answers for a node
(affinitybatch.py): the whole run must be the same as with every node of a pod with required
affinity dry-run on its own (the reference), on the brute-force test's generated clusters run
until the preemptor binds, and on a zoned cluster where pods elsewhere in the zone satisfy the
preemptors' affinity (the batched form's case)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings

from kubesched.scheduler.plugins.affinitypreemption import AffinityAwarePreemption
from kubesched.testkit.builders import (
    make_node,
    make_pdb,
    make_pod,
    make_priority_class,
    make_scheduler_config,
)
from kubesched.testkit.runs import explained_both_ways, write_scenario
from kubesched.testkit.scenarios import create_step, scenario_document

from .test_affinity_preemption_bruteforce import Cluster, clusters, documents

EXAMPLES = int(os.environ.get("KUBESCHED_AFFINITY_EXAMPLES", "200"))
ZONE = "topology.kubernetes.io/zone"
CONFIG = make_scheduler_config({"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
    "enabled": [{"name": "AffinityAwarePreemption"}], "disabled": [{"name": "DefaultPreemption"}]}}})


def both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    return explained_both_ways(path, monkeypatch, AffinityAwarePreemption, "batch_options")


@seed(20261130)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(c=clusters())
def test_same_run_as_every_node_on_its_own(tmp_path_factory: pytest.TempPathFactory,
                                           monkeypatch: pytest.MonkeyPatch, c: Cluster) -> None:
    *objects, scenario = documents(c)
    docs = [*objects, {**scenario, "spec": {**scenario["spec"], "until": "60s"}}]
    batched, reference = both_ways(write_scenario(tmp_path_factory.mktemp("c"), docs), monkeypatch)
    assert batched == reference


@pytest.mark.parametrize("budgets", [False, True])
def test_zoned_cluster_with_affinity_satisfied_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         budgets: bool) -> None:
    """30 nodes in 5 zones, full of low pods (cache or batch, a large one started first, some
    started at the same second); preemptors that need a cache pod in their zone, some of them also
    any low pod (two terms). Keeping a small cache pod often beats DefaultPreemption's reprieve,
    which keeps the large pod and evicts two small ones."""
    docs: list[Any] = [make_priority_class("low", 10), make_priority_class("mid", 50), make_priority_class("high", 1000)]
    for n in range(30):
        docs.append(make_node(f"n{n}", cpu="4", memory="32Gi", labels={ZONE: f"z{n % 5}"}))
        for k, cpu in enumerate((2, 1, 1)):
            app = "cache" if (n + k) % 3 == 0 else "batch"
            docs.append(make_pod(f"low-{n}-{k}", str(cpu), None, priority_class="mid" if n % 7 == k else "low",
                                 node=f"n{n}", labels={"app": app, "tier": "low"}, grace=5,
                                 start_time=f"2024-01-01T00:00:{k + (n % 2) * (k > 0):02d}Z"))
    if budgets:
        docs += [make_pdb("cache", {"matchLabels": {"app": "cache"}}, max_unavailable=2, disruptions_allowed=2),
                 make_pdb("batch", {"matchLabels": {"app": "batch"}}, max_unavailable=1, disruptions_allowed=1)]
    steps = []
    for i in range(14):
        terms = [{"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE}]
        if i % 2:
            terms.append({"labelSelector": {"matchLabels": {"tier": "low"}}, "topologyKey": ZONE})
        steps.append(create_step(1 + i // 3, make_pod(f"p-{i}", "2", None, priority_class="high",
                                                       affinity={"podAffinity": {
                                                           "requiredDuringSchedulingIgnoredDuringExecution": terms}})))
    docs.append(scenario_document(steps=steps, until="90s", name="zoned", config=CONFIG))
    batched, reference = both_ways(write_scenario(tmp_path, docs), monkeypatch)
    assert batched == reference
    if not budgets:  # some preemption kept a pod for affinity (under these budgets none does)
        assert '"keptForAffinity": {"pod"' in batched
