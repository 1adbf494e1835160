"""``spec.cluster.autoscaler`` validation and defaults."""

from __future__ import annotations

from kubesched.api.cluster_settings.autoscaler import parse_config, validate_config


def errors(cfg: dict) -> list[tuple[str, str]]:
    errs: list[tuple[str, str]] = []
    validate_config(cfg, "spec.cluster.autoscaler", errs)
    return errs


GROUP = {"name": "pool", "maxSize": 3, "template": {"status": {"allocatable": {"cpu": "4"}}}}


def test_defaults_are_the_real_autoscalers():
    cfg = parse_config({"nodeGroups": [GROUP]})
    assert (cfg.scan_interval, cfg.expendable_cutoff, cfg.scale_down_unneeded_time,
            cfg.scale_down_utilization_threshold, cfg.scale_down_delay_after_add, cfg.expander,
            cfg.max_graceful_termination) == (10.0, -10, 600.0, 0.5, 600.0, "random", 600)
    [group] = cfg.groups
    node = group.node_object("pool-1")
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "pool-1", "kubesched.io/node-group": "pool"}


def test_valid_config():
    assert errors({"scanInterval": "5s", "expendablePodsPriorityCutoff": 0, "expander": "least-waste",
                   "scaleDownUtilizationThreshold": 0.7, "nodeGroups": [GROUP]}) == []


def test_errors_name_the_field():
    errs = errors({"expander": "cheapest", "scaleDownUtilizationThreshold": 2, "bogus": 1,
                   "nodeGroups": [{"name": "Pool", "minSize": 4, "maxSize": 3, "template": {"status": {}}},
                                  {**GROUP, "template": {**GROUP["template"], "metadata": {"name": "x"}}},
                                  GROUP]})
    assert [p for p, _ in errs] == [
        "spec.cluster.autoscaler.bogus",
        "spec.cluster.autoscaler.expander",
        "spec.cluster.autoscaler.scaleDownUtilizationThreshold",
        "spec.cluster.autoscaler.nodeGroups[0].name",
        "spec.cluster.autoscaler.nodeGroups[0].minSize",
        "spec.cluster.autoscaler.nodeGroups[0].template.status",
        "spec.cluster.autoscaler.nodeGroups[1].template.metadata.name",
        "spec.cluster.autoscaler.nodeGroups[2].name",
    ]
    assert errors({}) == [("spec.cluster.autoscaler.nodeGroups", "required value")]
