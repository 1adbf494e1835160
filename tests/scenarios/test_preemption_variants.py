"""Opt-in preemption policies beyond upstream: PreemptionToleration and StrictPDBPreemption."""

from __future__ import annotations

from .conftest import create, node, pclass, pdb, pod, scenario

PT = "preemption-toleration.scheduling.sigs.k8s.io/"


def protected_class(name: str, value: int, minimum: int, seconds: int) -> dict:
    pc = pclass(name, value)
    pc["metadata"]["annotations"] = {f"{PT}minimum-preemptable-priority": str(minimum),
                                     f"{PT}toleration-seconds": str(seconds)}
    return pc


def profile(post_filter: str) -> dict:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": post_filter}],
                                       "disabled": [{"name": "DefaultPreemption"}]}},
        }],
    }


def classes() -> list[dict]:
    return [protected_class("guarded", 100, minimum=5000, seconds=-1),
            protected_class("guarded-10m", 100, minimum=5000, seconds=600),
            pclass("mid", 1000), pclass("top", 6000)]


def test_toleration_protects_victim_from_preemptor_below_minimum(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", cls="guarded", on="n1"),
                   scenario([create(1, pod("p", "2", cls="mid"))], config=profile("PreemptionToleration")))
    assert run.victims() == set()
    assert run.phase("p") == "Pending"
    assert run.failed("p")[0][1] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.."
    )


def test_toleration_lets_preemptor_at_or_above_minimum_through(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", cls="guarded", on="n1"),
                   scenario([create(1, pod("p", "2", cls="top"))], config=profile("PreemptionToleration")))
    assert run.victims() == {"v"}
    assert run.node_of("p") == "n1"


def test_toleration_expires_after_toleration_seconds(simulate):
    # v is scheduled at t=0 with a 600 s toleration: "early" (60 s) cannot preempt it until the
    # toleration has expired; its retries after 600 s can
    run = simulate(*classes(), node("n1"), pod("v", "3", cls="guarded-10m", on="n1"),
                   scenario([create(60, pod("early", "2", cls="mid"))],
                            config=profile("PreemptionToleration"), until=1000))
    preempted = run.preempted()
    assert preempted and all(t > 600 for t, _, _ in preempted)
    assert preempted[0][1:] == ("v", "early")
    assert [t for t, _ in run.failed("early")][0] == 60
    assert run.phase("v") == "Deleted" and run.node_of("early") == "n1"


def test_pods_without_priority_class_are_never_exempt(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", on="n1"),
                   scenario([create(1, pod("p", "2", cls="mid"))], config=profile("PreemptionToleration")))
    assert run.victims() == {"v"}


def test_default_profile_ignores_toleration_annotations(simulate):
    run = simulate(*classes(), node("n1"), pod("v", "3", cls="guarded", on="n1"),
                   scenario([create(1, pod("p", "2", cls="mid"))]))
    assert run.victims() == {"v"}


def test_strict_pdb_mode_leaves_preemptor_pending_instead_of_violating(simulate):
    docs = [pclass("low", 100), pclass("high", 1000), node("n1"),
            pod("v", "3", cls="low", on="n1", labels={"app": "db"}),
            pdb("db", {"matchLabels": {"app": "db"}}, 0)]
    best_effort = simulate(*docs, scenario([create(1, pod("p", "2", cls="high"))]))
    assert best_effort.victims() == {"v"}  # upstream: PDBs are best effort
    strict = simulate(*docs, scenario([create(1, pod("p", "2", cls="high"))], config=profile("StrictPDBPreemption")))
    assert strict.victims() == set()
    assert strict.phase("p") == "Pending"
    assert strict.failed("p")[0][1].endswith(
        "preemption: 0/1 nodes are available: 1 preemption would violate a PodDisruptionBudget.."
    )


def test_strict_pdb_mode_prefers_a_node_without_violation(simulate):
    docs = [pclass("low", 100), pclass("high", 1000), node("n1"), node("n2"),
            pod("v1", "3", cls="low", on="n1", labels={"app": "db"}),
            pod("v2", "3", cls="low", on="n2"),
            pdb("db", {"matchLabels": {"app": "db"}}, 0)]
    run = simulate(*docs, scenario([create(1, pod("p", "2", cls="high"))], config=profile("StrictPDBPreemption")))
    assert run.victims() == {"v2"}
    assert run.node_of("p") == "n2"
