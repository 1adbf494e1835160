"""Priority admission and quota scopes as the v1.28 API server applies them (upstream
`plugin/pkg/admission/priority/admission.go`, `pkg/apis/scheduling/validation/validation.go`,
`pkg/quota/v1/evaluator/core/pods.go`)."""

from __future__ import annotations

import pytest

from kubesched.testkit.builders import make_priority_class, make_quota
from kubesched.testkit.scenarios import create_step

from .conftest import node, pod, scenario


# -- priority admission: resolution -------------------------------------------------------------
@pytest.mark.parametrize(
    ("classes", "pod_cls", "priority", "class_name", "policy"),
    [
        pytest.param([], None, 0, None, "PreemptLowerPriority", id="no-classes-priority-0"),
        pytest.param([make_priority_class("def", 7, global_default=True)], None, 7, "def", "PreemptLowerPriority",
                     id="global-default-applied"),
        pytest.param([make_priority_class("def", 7, global_default=True), make_priority_class("hi", 1000)], "hi", 1000, "hi",
                     "PreemptLowerPriority", id="named-class-wins-over-default"),
        pytest.param([make_priority_class("nv", 300, policy="Never")], "nv", 300, "nv", "Never", id="class-policy-copied"),
        pytest.param([make_priority_class("def", 7, policy="Never", global_default=True)], None, 7, "def", "Never",
                     id="default-class-policy-copied"),
        pytest.param([make_priority_class("neg", -10)], "neg", -10, "neg", "PreemptLowerPriority", id="negative-value"),
        pytest.param([], "system-node-critical", 2_000_001_000, "system-node-critical", "PreemptLowerPriority",
                     id="system-node-critical-builtin"),
    ],
)
def test_pod_priority_from_priority_class(simulate, classes, pod_cls, priority, class_name, policy):
    run = simulate(*classes, node("n1"), pod("p", "1", priority_class=pod_cls), scenario(until=2), deep=True)
    assert run.result["rejected"] == []
    assert run.pod("p")["priority"] == priority
    spec = run.versions("p")[-1][1]["spec"]
    assert spec.get("priorityClassName") == class_name
    assert spec["priority"] == priority
    assert spec["preemptionPolicy"] == policy


# -- priority admission: rejections -------------------------------------------------------------
@pytest.mark.parametrize(
    ("docs", "kind", "name", "code", "fragment"),
    [
        pytest.param([pod("p", "1", priority_class="nope")], "Pod", "default/p", 403,
                     'pods "p" is forbidden: no PriorityClass with name nope was found', id="unknown-class"),
        pytest.param([make_priority_class("a", 1, global_default=True), make_priority_class("b", 2, global_default=True)],
                     "PriorityClass", "b", 403,
                     'priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already marked as '
                     "default. Only one default can exist", id="second-global-default"),
        pytest.param([make_priority_class("big", 1_000_000_001)], "PriorityClass", "big", 422,
                     "maximum allowed value of a user defined priority is 1000000000", id="value-above-1e9"),
        pytest.param([make_priority_class("system-foo", 10)], "PriorityClass", "system-foo", 422,
                     "priority class names with 'system-' prefix are reserved for system use only",
                     id="system-prefix-reserved"),
        pytest.param([make_priority_class("lo", 5), pod("p", "1", priority_class="lo", priority=6)], "Pod", "default/p", 403,
                     "must not be provided in pod spec", id="pod-sets-different-priority"),
    ],
)
def test_admission_rejections(simulate, docs, kind, name, code, fragment):
    run = simulate(node("n1"), *docs, scenario(until=1))
    (rej,) = run.result["rejected"]
    assert (rej["kind"], rej["name"], rej["code"]) == (kind, name, code)
    assert fragment in rej["message"]
    assert run.ev("Rejected")[0]["pod"] == (name if kind == "Pod" else f"{kind}/{name}")


def test_value_exactly_1e9_is_allowed(simulate):
    run = simulate(make_priority_class("max", 1_000_000_000), node("n1"), pod("p", "1", priority_class="max"), scenario(until=1))
    assert run.result["rejected"] == []
    assert run.pod("p")["priority"] == 1_000_000_000


def test_rejected_step_object_does_not_stop_the_run(simulate):
    run = simulate(node("n1"), scenario([create_step(1, pod("bad", "1", priority_class="nope")), create_step(2, pod("ok", "1"))]))
    assert [r["name"] for r in run.result["rejected"]] == ["default/bad"]
    assert run.result["rejected"][0]["time"] == 1.0
    assert run.scheduled("ok") == [(2.0, "n1")]
    assert "default/bad" not in run.result["pods"]


# -- quota scopes (scopeSelector on PriorityClass) ---------------------------------------------
@pytest.mark.parametrize(
    ("operator", "values", "pods", "rejected"),
    [
        pytest.param("In", ["high"], [("h1", "high"), ("l1", "low"), ("n1", None), ("h2", "high")], {"h2"},
                     id="In-counts-only-named-class"),
        pytest.param("NotIn", ["high"], [("n1", None), ("l1", "low"), ("h1", "high")], {"l1"},
                     id="NotIn-counts-classless-pods"),
        pytest.param("NotIn", ["high"], [("h1", "high"), ("h2", "high"), ("l1", "low"), ("l2", "low")], {"l2"},
                     id="NotIn-ignores-named-class"),
        pytest.param("DoesNotExist", None, [("l1", "low"), ("h1", "high"), ("n1", None), ("n2", None)], {"n2"},
                     id="DoesNotExist-counts-only-classless"),
        pytest.param("Exists", None, [("n1", None), ("n2", None), ("l1", "low"), ("h1", "high")], {"h1"},
                     id="Exists-counts-any-named-class"),
    ],
)
def test_quota_priority_class_scope_selector(simulate, operator, values, pods, rejected):
    expr = {"scopeName": "PriorityClass", "operator": operator}
    if values is not None:
        expr["values"] = values
    docs = [make_priority_class("low", 100), make_priority_class("high", 1000), node("n1", cpu="100"),
            make_quota("q", {"pods": "1"}, scopeSelector={"matchExpressions": [expr]}),
            *[pod(name, "100m", priority_class=cls) for name, cls in pods]]
    run = simulate(*docs, scenario(until=1))
    assert {r["name"].split("/")[1] for r in run.result["rejected"]} == rejected
    for r in run.result["rejected"]:
        assert r["code"] == 403
        assert "exceeded quota: q" in r["message"]
