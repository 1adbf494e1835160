"""AffinityAwarePreemption (opt-in): a preemptor with required pod affinity to lower-priority pods
keeps one of them instead of giving the node up (the Pod Preemption design's open problem)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kubesched.api.loader import load_scenario, read_scheduler_configuration
from kubesched.scheduler.plugins.registry import DEFAULT_MULTIPOINT
from kubesched.sim import simulate as simulate_scenario
from kubesched.testkit.builders import make_pdb, make_priority_class, make_scheduler_config
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import create_step

from .conftest import node, pod, scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption-design"
HOSTNAME = "kubernetes.io/hostname"


def aware() -> dict:
    return make_scheduler_config({
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "AffinityAwarePreemption"}],
                                   "disabled": [{"name": "DefaultPreemption"}]}},
    })


def affinity(labels: dict[str, str], key: str = HOSTNAME) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": key}]}}


def classes() -> list[dict]:
    return [make_priority_class("low", 100), make_priority_class("mid", 500), make_priority_class("high", 1000)]


def example_5(config: str | None) -> ScenarioRun:
    loaded = load_scenario(EXAMPLES / "example-5-affinity.yaml")
    if config is not None:
        loaded.scheduler_configuration, loaded.scheduler_configuration_source = read_scheduler_configuration(
            str(EXAMPLES / config))
    return ScenarioRun(simulate_scenario(loaded, explain=True))


def test_design_example_default_preemption_leaves_p_pending():
    """Upstream's way: every lower-priority pod of node-1 removed, P's affinity to "cache" broken,
    node-1 no candidate; node-2 has nothing P may preempt."""
    run = example_5(None)
    assert run.victims() == set()
    assert run.phase("p") == "Pending" and run.nominations("p") == []
    assert run.failed("p")[0] == (1.0, "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                                       "available: 1 No preemption victims found for incoming pod, 1 node(s) didn't "
                                       "match pod affinity rules..")
    assert run.phase("cache") == "Running" and run.phase("batch") == "Running"


def test_design_example_affinity_aware_preemption_keeps_the_affinity_pod():
    """With AffinityAwarePreemption "cache" is kept, "batch" alone is preempted, P is nominated to
    node-1 and binds next to "cache" once "batch" (grace 30 s) is gone."""
    run = example_5("affinity-aware-preemption.yaml")
    assert run.preempted() == [(1.0, "batch", "p")]
    [decision] = [d for d in run.decisions("p") if d["outcome"] == "preempted"]
    assert decision["chosen"] == "node-1"
    assert [[v["pod"] for v in c["victims"]] for c in decision["candidates"]] == [["default/batch"]]
    assert run.scheduled("p") == [(31.0, "node-1")]
    assert run.phase("cache") == "Running" and run.node_of("cache") == "node-1"
    assert run.result["summary"] == {"scheduled": 1, "pending": 0, "preemptions": 1, "victims": 1}


def test_default_profile_is_kube_schedulers():
    """Nothing changes unless the plugin is configured: the default profile preempts with
    DefaultPreemption alone."""
    names = [name for name, _ in DEFAULT_MULTIPOINT]
    assert "AffinityAwarePreemption" not in names and "DefaultPreemption" in names


def test_keeps_the_more_important_of_two_affinity_pods(simulate):
    """cache-a (100) and cache-b (500) both match and only one fits beside P; keeping cache-b costs
    victims of priority 100 only, keeping cache-a would evict cache-b (500): the lowest most-important victim wins."""
    docs = [*classes(), node("n1", cpu="10"),
            pod("cache-a", "2", priority_class="low", node="n1", labels={"app": "cache"}),
            pod("cache-b", "2", priority_class="mid", node="n1", labels={"app": "cache"}),
            pod("batch", "6", priority_class="low", node="n1", labels={"app": "batch"})]
    p = pod("p", "7", priority_class="high", affinity=affinity({"app": "cache"}))
    run = simulate(*docs, scenario([create_step(1, p)], config=aware()))
    assert run.victims() == {"cache-a", "batch"}
    assert run.node_of("p") == "n1" and run.phase("cache-b") == "Running"


def test_prefers_keeping_the_pod_a_budget_protects(simulate):
    """Two equal cache pods, one covered by a PodDisruptionBudget allowing no disruption: keeping
    that one costs no violation."""
    docs = [*classes(), node("n1", cpu="10"),
            pod("cache-a", "2", priority_class="low", node="n1", labels={"app": "cache"},
                start_time="2024-01-01T00:00:00Z"),
            pod("cache-b", "2", priority_class="low", node="n1", labels={"app": "cache", "guard": "yes"},
                start_time="2024-01-01T00:00:05Z"),
            pod("batch", "6", priority_class="low", node="n1", labels={"app": "batch"}),
            make_pdb("guard", {"matchLabels": {"guard": "yes"}}, min_available=1)]
    p = pod("p", "8", priority_class="high", affinity=affinity({"app": "cache"}))
    run = simulate(*docs, scenario([create_step(1, p)], config=aware()))
    assert run.victims() == {"cache-a", "batch"}
    [decision] = [d for d in run.decisions("p") if d["outcome"] == "preempted"]
    assert decision["candidates"][0]["pdbViolations"] == 0


def test_affinity_satisfied_elsewhere_in_the_zone_needs_nothing_kept(simulate):
    """With a zone term and a matching pod on another node of the zone, nothing needs keeping:
    the victims are DefaultPreemption's (the cache pod on n1 goes too)."""
    zone = "topology.kubernetes.io/zone"
    docs = [*classes(), node("n1", cpu="4", labels={zone: "z1"}), node("n2", cpu="4", labels={zone: "z1"}),
            pod("cache-1", "2", priority_class="low", node="n1", labels={"app": "cache"}),
            pod("batch", "2", priority_class="low", node="n1", labels={"app": "batch"}),
            pod("cache-2", "4", priority_class="high", node="n2", labels={"app": "cache"})]
    p = pod("p", "4", priority_class="high", affinity=affinity({"app": "cache"}, zone))
    default = simulate(*docs, scenario([create_step(1, p)]))
    run = simulate(*docs, scenario([create_step(1, p)], config=aware()))
    assert default.victims() == run.victims() == {"cache-1", "batch"}
    assert run.node_of("p") == "n1"


def test_no_option_fits_reports_default_preemptions_reason(simulate):
    """When keeping any affinity pod still leaves too little room, the node's status is the one
    DefaultPreemption gives (P's affinity broken without the lower-priority pods)."""
    docs = [*classes(), node("n1", cpu="4"),
            pod("cache", "2", priority_class="low", node="n1", labels={"app": "cache"}),
            pod("batch", "2", priority_class="low", node="n1")]
    p = pod("p", "3", priority_class="high", affinity=affinity({"app": "cache"}))
    run = simulate(*docs, scenario([create_step(1, p)], config=aware()))
    assert run.victims() == set() and run.phase("p") == "Pending"
    assert run.failed("p")[0][1].endswith("preemption: 0/1 nodes are available: 1 node(s) didn't match pod "
                                          "affinity rules..")


# -- pods without required pod affinity: exactly DefaultPreemption ---------------------------------------
running_st = st.tuples(st.sampled_from([0, 100, 500]), st.integers(1, 3), st.integers(0, 5), st.sampled_from("ab"))
pending_st = st.tuples(st.sampled_from([100, 500, 1000]), st.integers(1, 4), st.sampled_from("ab"), st.integers(0, 5),
                       st.booleans())


@seed(20240612)
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=st.integers(1, 6), running=st.lists(running_st, max_size=14),
       pending=st.lists(pending_st, min_size=1, max_size=5),
       budgets=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 2)), max_size=2, unique_by=lambda t: t[0]))
def test_same_decisions_as_default_preemption_without_required_affinity(
        tmp_path: Path, nodes: int, running: list, pending: list, budgets: list) -> None:
    """The whole run, every preemption decision included, is DefaultPreemption's for pods without
    required pod affinity (with affinity only to pods of higher priority, too)."""
    docs: list[dict] = [make_priority_class(f"p{v}", v) for v in (0, 100, 500, 1000)]
    docs += [node(f"n{i}", cpu="4") for i in range(nodes)]
    docs += [pod(f"r{k}", str(cpu), priority_class=f"p{prio}", node=f"n{n % nodes}", labels={"app": app},
                 start_time=f"2024-01-01T00:00:{k:02d}Z") for k, (prio, cpu, n, app) in enumerate(running)]
    docs += [make_pdb(f"pdb-{app}", {"matchLabels": {"app": app}}, min_available=m) for app, m in budgets]
    steps = [create_step(at, pod(f"q{k}", str(cpu), priority_class=f"p{prio}", labels={"app": app},
                                 **({"affinity": affinity({"app": "top"})} if with_affinity else {})))
             for k, (prio, cpu, app, at, with_affinity) in enumerate(pending)]
    steps.append(create_step(0, pod("top", "0", priority_class="p1000", labels={"app": "top"})))
    default = run_docs(tmp_path, [*docs, scenario(steps, until="60s")], explain=True)
    mine = run_docs(tmp_path, [*docs, scenario(steps, until="60s", config=aware())], explain=True)
    # the plugin reports itself, having kept nothing for affinity
    assert mine.result.pop("preemptionPolicies") == {"AffinityAwarePreemption": {"affinityAttempts": 0,
                                                                                  "affinityKept": 0}}
    assert json.dumps(mine.result) == json.dumps(default.result)


def test_the_documented_gap_greedy_reprieve(simulate):
    """docs/preemption.md's gap: after the kept pod is chosen the reprieve is DefaultPreemption's
    greedy one. P (3 cpu, affinity to cache) on a full node of 8: cache is kept, x (the most
    important) is reprieved first, so y and z go where x alone would do."""
    docs = [*classes(), node("n1", cpu="8"),
            pod("cache", "1", priority_class="low", node="n1", labels={"app": "cache"},
                start_time="2024-01-01T00:00:00Z"),
            pod("x", "3", priority_class="low", node="n1", start_time="2024-01-01T00:00:01Z"),
            pod("y", "2", priority_class="low", node="n1", start_time="2024-01-01T00:00:02Z"),
            pod("z", "2", priority_class="low", node="n1", start_time="2024-01-01T00:00:03Z")]
    p = pod("p", "3", priority_class="high", affinity=affinity({"app": "cache"}))
    run = simulate(*docs, scenario([create_step(1, p)], config=aware()))
    assert run.victims() == {"y", "z"}
    assert run.node_of("p") == "n1" and run.phase("cache") == "Running"
