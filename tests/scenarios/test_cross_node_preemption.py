"""CrossNodePreemption (opt-in): victims may include pods on other nodes of the chosen node's
topology domains, when pods elsewhere keep P out (the Pod Preemption design's open problem
"cross-node preemption")."""

from __future__ import annotations

import json
from pathlib import Path

from kubesched.api.loader import load_scenario, read_scheduler_configuration
from kubesched.scheduler.plugins.registry import DEFAULT_MULTIPOINT
from kubesched.sim import simulate as simulate_scenario
from kubesched.testkit.builders import make_pdb, make_priority_class, make_scheduler_config
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import create_step

from .conftest import node, pod, scenario, std_classes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption-design"
CONFIG = "cross-node-preemption.yaml"


def run(example: str, config: str | None) -> ScenarioRun:
    loaded = load_scenario(EXAMPLES / example)
    if config is not None:
        loaded.scheduler_configuration, loaded.scheduler_configuration_source = read_scheduler_configuration(
            str(EXAMPLES / config))
    return ScenarioRun(simulate_scenario(loaded, explain=True))


def test_anti_affinity_in_the_zone_default_preemption_leaves_p_pending():
    """Upstream's way: node-1's dry run removes batch only, db (node-2, same zone) still repels P;
    node-2 has no room for P even without db; node-3 holds nothing P may preempt."""
    r = run("example-6-cross-node-anti-affinity.yaml", None)
    assert r.victims() == set()
    assert r.phase("p") == "Pending" and r.nominations("p") == []
    assert r.failed("p")[0] == (1.0, "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, "
                                     "2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Insufficient cpu, "
                                     "1 No preemption victims found for incoming pod, 1 node(s) didn't match pod "
                                     "anti-affinity rules..")


def test_anti_affinity_in_the_zone_cross_node_preemption_preempts_the_pod_elsewhere():
    """db on node-2 is the only victim (batch on node-1 is spared: P fits beside it), P is nominated
    to node-1, does not preempt again while db terminates, and binds once db is gone."""
    r = run("example-6-cross-node-anti-affinity.yaml", CONFIG)
    assert r.preempted() == [(1.0, "db", "p")]
    [decision] = [d for d in r.decisions("p") if d["outcome"] == "preempted"]
    assert decision["chosen"] == "node-1"
    assert [[v["pod"] for v in c["victims"]] for c in decision["candidates"]] == [["default/db"]]
    assert r.nominations("p")[0] == (1.0, "node-1")
    assert (2.0, "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 Insufficient cpu. "
                 "preemption: not eligible due to a terminating pod in the nominated node's topology domain..") \
        in r.failed("p")
    assert r.scheduled("p") == [(31.0, "node-1")]
    assert r.phase("batch") == "Running" and r.node_of("batch") == "node-1"
    assert r.result["summary"] == {"scheduled": 1, "pending": 0, "preemptions": 1, "victims": 1}


def test_spreading_over_zones_default_preemption_leaves_p_pending():
    r = run("example-7-cross-node-spreading.yaml", None)
    assert r.victims() == set()
    assert r.phase("p") == "Pending" and r.nominations("p") == []
    assert "1 node(s) didn't match pod topology spread constraints" in r.failed("p")[0][1]


def test_spreading_over_zones_cross_node_preemption_preempts_the_pods_that_make_the_skew():
    """zone-a must keep at most one web pod: web-a (100, on node-1) is kept, web-b and web-c (50, on
    node-2 and node-4) are preempted; P binds on node-1 as soon as they terminate (PodTopologySpread
    does not count terminating pods)."""
    r = run("example-7-cross-node-spreading.yaml", CONFIG)
    assert sorted(r.preempted()) == [(1.0, "web-b", "p"), (1.0, "web-c", "p")]
    [decision] = [d for d in r.decisions("p") if d["outcome"] == "preempted"]
    assert decision["chosen"] == "node-1"
    assert [[v["pod"] for v in c["victims"]] for c in decision["candidates"]] == [
        ["default/web-b", "default/web-c"]]
    assert r.scheduled("p") == [(2.0, "node-1")]
    assert r.phase("web-a") == "Running"


def test_without_pods_elsewhere_in_the_way_it_decides_as_default_preemption():
    """The design's first example (resources only): the same run, event for event."""
    default, cross = run("example-1.yaml", None), run("example-1.yaml", CONFIG)
    assert json.dumps(cross.result["events"]) == json.dumps(default.result["events"])
    assert cross.result["summary"] == default.result["summary"]


def test_default_profile_is_kube_schedulers():
    names = [name for name, _ in DEFAULT_MULTIPOINT]
    assert "CrossNodePreemption" not in names and "DefaultPreemption" in names


def test_pdb_violations_are_those_of_the_victim_set(tmp_path: Path):
    """a (100, 1 cpu) and b (50, 3 cpu) share a budget allowing one eviction; P needs 3 cpu. The
    reprieve's split labels b violating (a spends the allowance first), yet evicting b alone
    violates nothing: CrossNodePreemption counts the victim set's own violations (0), where
    DefaultPreemption reports upstream's count (1)."""
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "none"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}
    docs = [*std_classes(), make_priority_class("lowest", 50),
            node("n1", labels={"topology.kubernetes.io/zone": "z"}),
            pod("a", "1", priority_class="low", node="n1", labels={"app": "x"}, start_time="2024-01-01T00:00:00Z"),
            pod("b", "3", priority_class="lowest", node="n1", labels={"app": "x"}, start_time="2024-01-01T00:00:01Z"),
            make_pdb("pdb-x", {"matchLabels": {"app": "x"}}, min_available=1)]

    def decided(policy: str) -> dict:
        config = make_scheduler_config({"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
            "enabled": [{"name": policy}], "disabled": [{"name": "DefaultPreemption"}]}}})
        preemptor = pod("p", "3", priority_class="high", affinity=anti)
        (tmp_path / policy).mkdir()
        r = run_docs(tmp_path / policy, [*docs, scenario([create_step(1, preemptor)], until="1s", config=config)],
                     explain=True)
        [decision] = [d for d in r.decisions("p") if d["outcome"] == "preempted"]
        return decision["candidates"][0]

    cross, default = decided("CrossNodePreemption"), decided("DefaultPreemption")
    assert [v["pod"] for v in cross["victims"]] == [v["pod"] for v in default["victims"]] == ["default/b"]
    assert (cross["pdbViolations"], default["pdbViolations"]) == (0, 1)
