"""Opt-in preemption policies beyond upstream: PreemptionToleration and StrictPDBPreemption."""

from __future__ import annotations

from kubesched.testkit.builders import make_pdb, make_priority_class, make_scheduler_config
from kubesched.testkit.scenarios import create_step

from .conftest import node, pod, scenario

PT = "preemption-toleration.scheduling.sigs.k8s.io/"


def protected_class(name: str, value: int, minimum: int, seconds: int) -> dict:
    pc = make_priority_class(name, value)
    pc["metadata"]["annotations"] = {f"{PT}minimum-preemptable-priority": str(minimum),
                                     f"{PT}toleration-seconds": str(seconds)}
    return pc


def profile(post_filter: str) -> dict:
    return make_scheduler_config({
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": post_filter}],
                                   "disabled": [{"name": "DefaultPreemption"}]}},
    })


def classes() -> list[dict]:
    return [protected_class("guarded", 100, minimum=5000, seconds=-1),
            protected_class("guarded-10m", 100, minimum=5000, seconds=600),
            make_priority_class("mid", 1000), make_priority_class("top", 6000)]


def test_toleration_protects_victim_from_preemptor_below_minimum(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", priority_class="guarded", node="n1"),
                   scenario([create_step(1, pod("p", "2", priority_class="mid"))], config=profile("PreemptionToleration")))
    assert run.victims() == set()
    assert run.phase("p") == "Pending"
    assert run.failed("p")[0][1] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.."
    )


def test_toleration_lets_preemptor_at_or_above_minimum_through(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", priority_class="guarded", node="n1"),
                   scenario([create_step(1, pod("p", "2", priority_class="top"))], config=profile("PreemptionToleration")))
    assert run.victims() == {"v"}
    assert run.node_of("p") == "n1"


def test_toleration_expires_after_toleration_seconds(simulate):
    # v is scheduled at t=0 with a 600 s toleration: "early" (60 s) cannot preempt it until the
    # toleration has expired; its retries after 600 s can
    run = simulate(*classes(), node("n1"), pod("v", "3", priority_class="guarded-10m", node="n1"),
                   scenario([create_step(60, pod("early", "2", priority_class="mid"))],
                            config=profile("PreemptionToleration"), until=1000))
    preempted = run.preempted()
    assert preempted and all(t > 600 for t, _, _ in preempted)
    assert preempted[0][1:] == ("v", "early")
    assert [t for t, _ in run.failed("early")][0] == 60
    assert run.phase("v") == "Deleted" and run.node_of("early") == "n1"


def test_pods_without_priority_class_are_never_exempt(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", node="n1"),
                   scenario([create_step(1, pod("p", "2", priority_class="mid"))], config=profile("PreemptionToleration")))
    assert run.victims() == {"v"}


def test_default_profile_ignores_toleration_annotations(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", priority_class="guarded", node="n1"),
                   scenario([create_step(1, pod("p", "2", priority_class="mid"))]))
    assert run.victims() == {"v"}


def test_strict_pdb_mode_leaves_preemptor_pending_instead_of_violating(simulate):
    docs = [make_priority_class("low", 100), make_priority_class("high", 1000), node("n1"),
            pod("v", "3", priority_class="low", node="n1", labels={"app": "db"}),
            make_pdb("db", {"matchLabels": {"app": "db"}}, min_available=1, disruptions_allowed=0)]
    best_effort = simulate(*docs, scenario([create_step(1, pod("p", "2", priority_class="high"))]))
    assert best_effort.victims() == {"v"}  # upstream: PDBs are best effort
    strict = simulate(*docs, scenario([create_step(1, pod("p", "2", priority_class="high"))], config=profile("StrictPDBPreemption")))
    assert strict.victims() == set()
    assert strict.phase("p") == "Pending"
    assert strict.failed("p")[0][1].endswith(
        "preemption: 0/1 nodes are available: 1 preemption would violate a PodDisruptionBudget.."
    )


def test_strict_pdb_mode_prefers_a_node_without_violation(simulate):
    docs = [make_priority_class("low", 100), make_priority_class("high", 1000), node("n1"), node("n2"),
            pod("v1", "3", priority_class="low", node="n1", labels={"app": "db"}),
            pod("v2", "3", priority_class="low", node="n2"),
            make_pdb("db", {"matchLabels": {"app": "db"}}, min_available=1, disruptions_allowed=0)]
    run = simulate(*docs, scenario([create_step(1, pod("p", "2", priority_class="high"))], config=profile("StrictPDBPreemption")))
    assert run.victims() == {"v2"}
    assert run.node_of("p") == "n2"
