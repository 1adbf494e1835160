"""What kubesched's opt-in preemption plugins did, where a user looks: the simulation result
(``preemptionPolicies``, each decision's candidates), ``/metrics`` (``kubesched_*``), ``kubesched
explain`` and ``kubesched whatif --scheduler-config`` on the design's examples 5, 6 and 7."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubesched.api.loader import load_scenario, read_scheduler_configuration
from kubesched.cli.main import cli
from kubesched.serve.metrics import Exporter
from kubesched.sim import simulate as simulate_scenario
from kubesched.sim.outcome import SimulationOutcome

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption-design"
CROSS = str(EXAMPLES / "cross-node-preemption.yaml")
AFFINITY = str(EXAMPLES / "affinity-aware-preemption.yaml")
EXAMPLE_5 = str(EXAMPLES / "example-5-affinity.yaml")
EXAMPLE_6 = str(EXAMPLES / "example-6-cross-node-anti-affinity.yaml")
EXAMPLE_7 = str(EXAMPLES / "example-7-cross-node-spreading.yaml")
ZONE_A = {"topologyKey": "topology.kubernetes.io/zone", "value": "zone-a"}


def outcome(example: str, config: str | None) -> SimulationOutcome:
    loaded = load_scenario(example)
    if config is not None:
        loaded.scheduler_configuration, loaded.scheduler_configuration_source = read_scheduler_configuration(config)
    return simulate_scenario(loaded, explain=True)


def chosen_candidate(result: dict[str, Any], pod: str = "default/p") -> dict[str, Any]:
    [decision] = [d for d in result["preemptionDecisions"] if d["pod"] == pod and d["outcome"] == "preempted"]
    return next(c for c in decision["candidates"] if c["node"] == decision["chosen"])


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result


# -- the simulation result ---------------------------------------------------------------------------
def test_cross_node_counts_and_victims_elsewhere_in_the_result():
    """Example 6: db (node-2) is the victim of P nominated to node-1, named by P's zone anti-affinity."""
    result = outcome(EXAMPLE_6, CROSS).result
    assert result["preemptionPolicies"] == {"CrossNodePreemption": {
        "crossNodeAttempts": 1, "crossNodePreemptions": 1, "victimsElsewhere": 1}}
    chosen = chosen_candidate(result)
    assert chosen["node"] == "node-1"
    assert chosen["victims"] == [{"pod": "default/db", "priority": 100, "node": "node-2"}]
    assert chosen["victimsElsewhere"] == [{"pod": "default/db", "priority": 100, "node": "node-2", "namedBy": [
        {"plugin": "InterPodAffinity", **ZONE_A, "constraint": "the pod's required anti-affinity"}]}]


def test_cross_node_spreading_victims_are_named_by_the_spread_constraint():
    result = outcome(EXAMPLE_7, CROSS).result
    assert result["preemptionPolicies"]["CrossNodePreemption"] == {
        "crossNodeAttempts": 1, "crossNodePreemptions": 1, "victimsElsewhere": 2}
    chosen = chosen_candidate(result)
    assert [(v["pod"], v["node"]) for v in chosen["victimsElsewhere"]] == [("default/web-b", "node-2"),
                                                                         ("default/web-c", "node-4")]
    for victim in chosen["victimsElsewhere"]:
        assert victim["namedBy"] == [{"plugin": "PodTopologySpread", **ZONE_A,
                                      "constraint": "the pod's hard topology spread constraint"}]


def test_affinity_kept_pod_in_the_result():
    """Example 5: cache (P's affinity) is kept on node-1, batch is the victim."""
    result = outcome(EXAMPLE_5, AFFINITY).result
    assert result["preemptionPolicies"] == {"AffinityAwarePreemption": {"affinityAttempts": 1, "affinityKept": 1}}
    chosen = chosen_candidate(result)
    assert [v["pod"] for v in chosen["victims"]] == ["default/batch"]
    assert chosen["keptForAffinity"] == {"pod": "default/cache", "priority": 100}
    assert chosen["affinityOptions"] == ["default/cache"]


def test_no_policy_section_with_the_default_profile():
    """DefaultPreemption's runs keep their result as it was: no section, no notes on candidates."""
    result = outcome(EXAMPLE_6, None).result
    assert "preemptionPolicies" not in result
    assert all(set(c) == {"node", "pdbViolations", "victims", "pdbViolatingVictims"}
               for d in result["preemptionDecisions"] for c in d["candidates"])


def test_a_cross_node_run_without_pods_elsewhere_counts_no_cross_node_preemption():
    """Example 5 (P has no anti-affinity or spreading) with CrossNodePreemption: the plugin is
    reported, with nothing done across nodes."""
    result = outcome(EXAMPLE_5, CROSS).result
    assert result["preemptionPolicies"] == {"CrossNodePreemption": {
        "crossNodeAttempts": 0, "crossNodePreemptions": 0, "victimsElsewhere": 0}}


# -- /metrics -----------------------------------------------------------------------------------------
def exposition(run: SimulationOutcome) -> dict[str, float]:
    exporter = Exporter(["default-scheduler"])
    exporter.update(run.scheduler)
    samples: dict[str, float] = {}
    for line in exporter.text.splitlines():
        if line.startswith("kubesched_") and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_metrics_of_cross_node_preemption():
    samples = exposition(outcome(EXAMPLE_6, CROSS))
    assert samples == {"kubesched_cross_node_preemption_cross_node_attempts_total": 1.0,
                       "kubesched_cross_node_preemption_cross_node_preemptions_total": 1.0,
                       "kubesched_cross_node_preemption_victims_elsewhere_total": 1.0}


def test_metrics_of_affinity_aware_preemption_and_none_by_default():
    assert exposition(outcome(EXAMPLE_5, AFFINITY)) == {
        "kubesched_affinity_aware_preemption_affinity_attempts_total": 1.0,
        "kubesched_affinity_aware_preemption_affinity_kept_total": 1.0}
    assert exposition(outcome(EXAMPLE_5, None)) == {}


def test_metrics_help_says_they_are_kubesched_s_own():
    exporter = Exporter(["default-scheduler"])
    exporter.update(outcome(EXAMPLE_6, CROSS).scheduler)
    assert ("# HELP kubesched_cross_node_preemption_victims_elsewhere_total CrossNodePreemption (kubesched's own): "
            "Victims preempted on other nodes than the one the preemptor was nominated to.") in exporter.text


# -- explain ------------------------------------------------------------------------------------------
def test_explain_bound_pod_names_the_victim_s_own_node_and_why():
    out = invoke("explain", "p", EXAMPLE_6, "--scheduler-config", CROSS).output
    assert "preempted default/db (priority 100, on node-2) for node-1 at t=1s" in out
    assert ("cross-node victim default/db on node-2: counted in node-1's domain (InterPodAffinity: the pod's "
            "required anti-affinity, topology.kubernetes.io/zone=zone-a shared with node-1)") in out


def test_explain_while_the_victim_elsewhere_terminates_says_preemption_is_under_way():
    """At 5 s db (node-2) is still terminating: P does not preempt again, and explain says why
    rather than "preemption would not help"."""
    out = invoke("explain", "p", EXAMPLE_6, "--scheduler-config", CROSS, "--at", "5s").output
    assert "preemption would not help" not in out
    assert ("preemption under way: it preempted default/db (priority 100, on node-2) for node-1 at t=1s and is "
            "nominated there; it waits for the victim to terminate") in out
    data = json.loads(invoke("explain", "p", EXAMPLE_6, "--scheduler-config", CROSS, "--at", "5s",
                             "-o", "json").output)
    assert data["terminatingOnNominatedNode"] == [
        {"pod": "default/db", "priority": 100, "node": "node-2", "preemptor": "default/p"}]


def test_explain_spreading_victims_on_two_other_nodes():
    out = invoke("explain", "p", EXAMPLE_7, "--scheduler-config", CROSS).output
    assert ("preempted default/web-b (priority 50, on node-2), default/web-c (priority 50, on node-4) for node-1 "
            "at t=1s") in out
    assert "cross-node victim default/web-c on node-4: counted in node-1's domain (PodTopologySpread" in out


def test_simulate_explain_names_the_victims_nodes():
    out = invoke("simulate", EXAMPLE_7, "--scheduler-config", CROSS, "--explain", "p").output
    assert "* node-1: victims default/web-b(50, on node-2), default/web-c(50, on node-4); PDB violations 0" in out


def test_explain_affinity_kept_pod():
    out = invoke("explain", "p", EXAMPLE_5, "--scheduler-config", AFFINITY).output
    assert "preempted default/batch (priority 100) on node-1 at t=1s" in out
    assert ("kept default/cache (priority 100) on node-1 for the pod's required pod affinity (DefaultPreemption's "
            "dry run would remove it)") in out
    data = json.loads(invoke("explain", "p", EXAMPLE_5, "--scheduler-config", AFFINITY, "-o", "json").output)
    [preemption] = data["history"]["preemptions"]
    assert preemption["keptForAffinity"] == {"pod": "default/cache", "priority": 100}


@pytest.mark.parametrize(("example", "config", "expected"), [
    (EXAMPLE_6, CROSS, "evicting default/db (priority 100, on node-2)"),
    (EXAMPLE_5, AFFINITY, "evicting default/batch (priority 100)"),
])
def test_explain_pending_pod_shows_what_the_plugin_would_do(tmp_path, example, config, expected):
    """P of a class with ``preemptionPolicy: Never`` stays pending; explain's dry run with the plugin
    says what it would take (the plugin's own decision, its notes included)."""
    never_class = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: never}\nvalue: 1000\n" \
                  "preemptionPolicy: Never\n---\n"
    text = never_class + Path(example).read_text().replace("      spec:\n        priorityClassName: prio-1000\n",
                                                           "      spec:\n        priorityClassName: never\n")
    assert text.count("priorityClassName: never") == 1
    never = tmp_path / "never.yaml"
    never.write_text(text)
    out = invoke("explain", "p", str(never), "--scheduler-config", config).output
    assert "preemption would help, but the pod's preemptionPolicy is Never: it would take node-1, " + expected in out
    if config == CROSS:
        assert "cross-node victim default/db on node-2: counted in node-1's domain (InterPodAffinity" in out
    else:
        assert "kept default/cache (priority 100) on node-1 for the pod's required pod affinity" in out
    data = json.loads(invoke("explain", "p", str(never), "--scheduler-config", config, "-o", "json").output)
    assert data["preemptionIfAllowed"]["outcome"] == "would preempt"


# -- whatif -------------------------------------------------------------------------------------------
def test_whatif_cross_node_preemption_shows_the_pods_bound_and_the_victims_elsewhere():
    out = invoke("whatif", EXAMPLE_6, "--scheduler-config", CROSS).output
    assert "Pending pods that would start: default/p on node-1" in out
    assert "Running pods that would stop: default/db (on node-2)" in out
    assert "victim's node" in out and "InterPodAffinity: the pod's required anti-affinity" in out
    assert ("CrossNodePreemption: attempts that searched pods on other nodes 0 → 1, preemptions with victims on "
            "other nodes 0 → 1, victims on other nodes 0 → 1") in out
    diff = json.loads(invoke("whatif", EXAMPLE_6, "--scheduler-config", CROSS, "-o", "json").output)
    [preempted] = diff["preempted"]
    assert (preempted["victim"], preempted["node"], preempted["victimNode"]) == ("default/db", "node-1", "node-2")
    assert preempted["namedBy"][0]["plugin"] == "InterPodAffinity"
    assert diff["preemptionPolicies"]["changed"]["CrossNodePreemption"]["victimsElsewhere"] == 1
    assert diff["preemptionPolicies"]["baseline"] == {}
    assert [s["pod"] for s in diff["started"]] == ["default/p"]


def test_whatif_affinity_aware_preemption():
    diff = json.loads(invoke("whatif", EXAMPLE_5, "--scheduler-config", AFFINITY, "-o", "json").output)
    assert [(p["victim"], p["victimNode"]) for p in diff["preempted"]] == [("default/batch", "node-1")]
    assert [s["pod"] for s in diff["started"]] == ["default/p"]
    assert diff["preemptionPolicies"]["changed"] == {"AffinityAwarePreemption": {"affinityAttempts": 1,
                                                                                 "affinityKept": 1}}


def test_whatif_disable_preemption_also_disables_the_opt_in_plugin():
    """--disable-preemption with a configuration enabling CrossNodePreemption: nobody preempts."""
    diff = json.loads(invoke("whatif", EXAMPLE_6, "--scheduler-config", CROSS, "--disable-preemption",
                             "-o", "json").output)
    assert diff["summary"]["changed"]["preemptions"] == 0
    assert diff["baselinePreemption"]["reason"].endswith("runs CrossNodePreemption")


def test_whatif_enable_preemption_keeps_the_opt_in_plugin():
    """--enable-preemption leaves CrossNodePreemption in place (DefaultPreemption is not added back)."""
    diff = json.loads(invoke("whatif", EXAMPLE_6, "--scheduler-config", CROSS, "--enable-preemption",
                             "-o", "json").output)
    assert [(p["victim"], p["victimNode"]) for p in diff["preempted"]] == [("default/db", "node-2")]
