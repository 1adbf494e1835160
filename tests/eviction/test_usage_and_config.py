"""The ``kubesched.io/usage`` grammar and the ``spec.cluster.eviction`` validation."""

from __future__ import annotations

import pytest

from kubesched.api.cluster_settings.eviction import parse_config, validate_config
from kubesched.api.errors import KubeschedError
from kubesched.api.usage import UsageSyntaxError, check_usage_annotation, parse_usage
from kubesched.cluster.embedded.kubelet.usage import value_at
from kubesched.testkit.scenarios import scenario_document as scenario

from .conftest import node

GI = 1024**3
MI = 1024**2


def test_constant_usage():
    assert parse_usage("memory=1Gi,cpu=500m") == {"memory": [(0.0, GI)], "cpu": [(0.0, 500)]}


def test_profile_and_constant_mixed():
    profile = parse_usage("memory=512Mi@0s, 2Gi@30s, 1Gi@2m, cpu=250m")
    assert profile == {"memory": [(0.0, 512 * MI), (30.0, 2 * GI), (120.0, GI)], "cpu": [(0.0, 250)]}
    points = profile["memory"]
    assert [value_at(points, t) for t in (0, 29.9, 30, 119, 120, 1e6)] == [512 * MI, 512 * MI, 2 * GI, 2 * GI, GI, GI]


def test_nothing_before_the_first_point():
    assert value_at(parse_usage("memory=1Gi@10s")["memory"], 5) == 0


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("memory=1Gi,,cpu=1", "empty item"),
    ("gpu=1", "unknown resource"),
    ("1Gi@0s", "must start with a resource name"),
    ("memory=1Gi,2Gi", "needs a time"),
    ("memory=lots", "invalid quantity"),
    ("memory=1Gi@10s,2Gi@5s", "must increase"),
    ("memory=1Gi@soon", "invalid duration"),
    ("memory=1Gi,memory=2Gi", "given twice"),
    ("memory=-1Gi", "negative"),
])
def test_bad_usage_is_explained(text, fragment):
    with pytest.raises(UsageSyntaxError, match=fragment):
        parse_usage(text)
    errs: list[tuple[str, str]] = []
    check_usage_annotation(text, "metadata.annotations[kubesched.io/usage]", errs)
    assert len(errs) == 1 and errs[0][0] == "metadata.annotations[kubesched.io/usage]"


def errors(cfg: dict) -> list[tuple[str, str]]:
    errs: list[tuple[str, str]] = []
    validate_config(cfg, "spec.cluster.eviction", errs)
    return errs


def test_valid_config_has_no_errors_and_parses():
    cfg = {"monitoringPeriod": "5s", "evictionHard": {"memory.available": "200Mi", "nodefs.available": "5%"},
           "evictionSoft": {"memory.available": "1Gi"}, "evictionSoftGracePeriod": {"memory.available": "1m"},
           "evictionMaxPodGracePeriod": 30, "evictionPressureTransitionPeriod": "1m",
           "nodeStatusUpdateFrequency": "0s", "taintNodesByCondition": False, "defaultUsage": "zero",
           "nodes": [{"names": ["a"], "evictionHard": {"memory.available": "1Gi"}}],
           "avoidPingPong": {"window": "30s", "duration": "10m", "mode": "Required"}}
    assert errors(cfg) == []
    parsed = parse_config(cfg)
    assert parsed.monitoring_period == 5 and parsed.pressure_transition_period == 60
    assert parsed.ping_pong is not None and parsed.ping_pong.mode == "Required"
    assert [(t.signal.name, t.hard) for t in parsed.defaults.thresholds] == [
        ("memory.available", True), ("nodefs.available", True), ("memory.available", False)]
    hard = parsed.for_node(node("a")).hard("memory.available")
    assert hard is not None and hard.quantity == GI
    default = parse_config({}).defaults
    assert [(t.signal.name, t.quantity, t.percentage) for t in default.thresholds] == [
        ("memory.available", 100 * MI, None), ("nodefs.available", None, 0.1)]


def test_config_errors_name_the_field():
    errs = errors({"evictionHard": {"memory.available": "lots", "pid.available": "5"},
                   "evictionSoft": {"memory.available": "1Gi"}, "monitoringPeriod": "0s",
                   "defaultUsage": "limits", "nodes": [{"evictionHard": {}}], "avoidPingPong": {"mode": "Maybe"},
                   "bogus": 1})
    paths = [p for p, _ in errs]
    assert paths == [
        "spec.cluster.eviction.bogus",
        "spec.cluster.eviction.monitoringPeriod",
        "spec.cluster.eviction.defaultUsage",
        "spec.cluster.eviction.evictionHard[memory.available]",
        "spec.cluster.eviction.evictionHard[pid.available]",
        "spec.cluster.eviction.evictionSoftGracePeriod[memory.available]",
        "spec.cluster.eviction.nodes[0]",
        "spec.cluster.eviction.avoidPingPong.mode",
    ]


def test_a_bad_section_refuses_the_scenario(simulate):
    with pytest.raises(KubeschedError, match="spec.cluster.eviction.evictionHard"):
        simulate(node("n1"), scenario({"eviction": {"evictionHard": {"memory.available": "x"}}}))
