"""``spec.cluster.autoscaler``: the simulated cluster autoscaler's settings.

Names follow the real cluster-autoscaler's flags (camelCased); defaults are its defaults::

    autoscaler:
      scanInterval: 10s
      expendablePodsPriorityCutoff: -10     # pods below it never cause a scale-up (and never block a scale-down)
      newPodScaleUpDelay: 0s                # ignore unschedulable pods younger than this
      expander: random                      # random | most-pods | least-waste | priority
      maxNodesTotal: 0                      # 0 = no limit
      scaleDownEnabled: true
      scaleDownDelayAfterAdd: 10m
      scaleDownUnneededTime: 10m
      scaleDownUtilizationThreshold: 0.5    # max(cpu, memory) requested / allocatable
      maxGracefulTerminationSec: 600
      maxEmptyBulkDelete: 10                # empty nodes removed at once
      maxDrainParallelism: 1                # non-empty nodes drained at once, in the same loop (parallel drain)
      unremovableNodeRecheckTimeout: 5m     # a node that failed the removal simulation is not re-checked sooner
      skipNodesWithSystemPods: true
      ignoreDaemonSetsUtilization: false
      nodeGroups:
      - name: pool-a                        # its nodes: pool-a-1, pool-a-2, ... labelled kubesched.io/node-group: pool-a
        minSize: 1
        maxSize: 10
        initialSize: 1                      # nodes that exist (Ready) from time 0
        scaleUpDelay: 30s                   # scale-up decision -> Node registered (cloud provisioning)
        nodeStartupTime: 60s                # registered (NotReady, tainted not-ready) -> Ready
        priority: 0                         # for the priority expander
        template:                           # a Node manifest without a name
          metadata: {labels: {pool: a}}
          spec: {taints: []}
          status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}

A Node of the scenario joins a group when it carries the label ``kubesched.io/node-group: <name>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.checks import (
    Errors,
    check_dns_label,
    check_duration,
    check_resource_list,
    check_string_map,
    expect_bool,
    expect_dict,
    expect_enum,
    expect_int,
    expect_list,
    expect_str,
    key_path,
)
from kubesched.api.durations import parse_duration
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import Obj

NODE_GROUP_LABEL = "kubesched.io/node-group"
EXPANDERS = ("random", "most-pods", "least-waste", "priority")

_TOP_FIELDS = frozenset({
    "scanInterval", "expendablePodsPriorityCutoff", "newPodScaleUpDelay", "expander", "maxNodesTotal",
    "scaleDownEnabled", "scaleDownDelayAfterAdd", "scaleDownUnneededTime", "scaleDownUtilizationThreshold",
    "maxGracefulTerminationSec", "maxEmptyBulkDelete", "skipNodesWithSystemPods", "ignoreDaemonSetsUtilization",
    "nodeGroups", "maxDrainParallelism", "unremovableNodeRecheckTimeout",
})
_GROUP_FIELDS = frozenset({"name", "minSize", "maxSize", "initialSize", "scaleUpDelay", "nodeStartupTime",
                           "priority", "template"})


@dataclass(frozen=True)
class NodeGroup:
    name: str
    min_size: int
    max_size: int
    initial_size: int
    scale_up_delay: float
    node_startup_time: float
    priority: int
    template: Obj

    def node_object(self, name: str) -> Obj:
        """A Node for this group named ``name`` (not yet ready-tainted)."""
        template = deep_copy(self.template)
        meta = dict(template.get("metadata") or {})
        meta["name"] = name
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/hostname": name, NODE_GROUP_LABEL: self.name}
        status = dict(template.get("status") or {})
        if not status.get("allocatable") and status.get("capacity"):
            status["allocatable"] = dict(status["capacity"])
        node: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status}
        if template.get("spec"):
            node["spec"] = dict(template["spec"])
        return node


@dataclass(frozen=True)
class AutoscalerConfig:
    groups: tuple[NodeGroup, ...]
    scan_interval: float = 10.0
    expendable_cutoff: int = -10
    new_pod_scale_up_delay: float = 0.0
    expander: str = "random"
    max_nodes_total: int = 0
    scale_down_enabled: bool = True
    scale_down_delay_after_add: float = 600.0
    scale_down_unneeded_time: float = 600.0
    scale_down_utilization_threshold: float = 0.5
    max_graceful_termination: int = 600
    max_empty_bulk_delete: int = 10
    max_drain_parallelism: int = 1
    unremovable_recheck_timeout: float = 300.0
    skip_nodes_with_system_pods: bool = True
    ignore_daemonsets_utilization: bool = False

    def group(self, name: str | None) -> NodeGroup | None:
        return next((g for g in self.groups if g.name == name), None)


# -- validation -------------------------------------------------------------------------------
def _validate_group(item: dict[str, Any], path: str, errs: Errors, seen: set[str]) -> None:
    for extra in sorted(set(item) - _GROUP_FIELDS, key=str):
        errs.append((key_path(path, str(extra)), "unknown field in a node group"))
    name = expect_str(item.get("name"), key_path(path, "name"), errs, required=True, non_empty=True)
    if name is not None:
        check_dns_label(name, key_path(path, "name"), errs)
        if name in seen:
            errs.append((key_path(path, "name"), f'duplicate node group "{name}"'))
        seen.add(name)
    lo = expect_int(item.get("minSize"), key_path(path, "minSize"), errs, minimum=0)
    hi = expect_int(item.get("maxSize"), key_path(path, "maxSize"), errs, required=True, minimum=0)
    init = expect_int(item.get("initialSize"), key_path(path, "initialSize"), errs, minimum=0)
    if lo is not None and hi is not None and lo > hi:
        errs.append((key_path(path, "minSize"), f"must not be greater than maxSize ({hi})"))
    if init is not None and hi is not None and init > hi:
        errs.append((key_path(path, "initialSize"), f"must not be greater than maxSize ({hi})"))
    check_duration(item.get("scaleUpDelay"), key_path(path, "scaleUpDelay"), errs)
    check_duration(item.get("nodeStartupTime"), key_path(path, "nodeStartupTime"), errs)
    expect_int(item.get("priority"), key_path(path, "priority"), errs)
    tpath = key_path(path, "template")
    template = expect_dict(item.get("template"), tpath, errs, required=True)
    if template is None:
        return
    for extra in sorted(set(template) - {"apiVersion", "kind", "metadata", "spec", "status"}, key=str):
        errs.append((key_path(tpath, str(extra)), "unknown field in a node template"))
    meta = expect_dict(template.get("metadata"), key_path(tpath, "metadata"), errs) or {}
    if "name" in meta:
        errs.append((key_path(key_path(tpath, "metadata"), "name"), "a template has no name (nodes are named <group>-<n>)"))
    check_string_map(meta.get("labels"), key_path(key_path(tpath, "metadata"), "labels"), errs, labels=True)
    check_string_map(meta.get("annotations"), key_path(key_path(tpath, "metadata"), "annotations"), errs, labels=False)
    spec = expect_dict(template.get("spec"), key_path(tpath, "spec"), errs) or {}
    expect_list(spec.get("taints"), key_path(key_path(tpath, "spec"), "taints"), errs)
    spath = key_path(tpath, "status")
    status = expect_dict(template.get("status"), spath, errs, required=True) or {}
    if status.get("allocatable") is None and status.get("capacity") is None:
        errs.append((spath, "needs allocatable or capacity"))
    for key in ("allocatable", "capacity"):
        if status.get(key) is not None:
            check_resource_list(status[key], key_path(spath, key), errs)


def validate_config(cfg: dict[str, Any], path: str, errs: Errors) -> None:
    """Validate ``spec.cluster.autoscaler`` (appends ``(field path, message)`` to ``errs``)."""
    for extra in sorted(set(cfg) - _TOP_FIELDS, key=str):
        errs.append((key_path(path, str(extra)), "unknown field in spec.cluster.autoscaler"))
    for name in ("scanInterval", "newPodScaleUpDelay", "scaleDownDelayAfterAdd", "scaleDownUnneededTime",
                 "unremovableNodeRecheckTimeout"):
        seconds = check_duration(cfg.get(name), key_path(path, name), errs)
        if name == "scanInterval" and seconds is not None and seconds <= 0:
            errs.append((key_path(path, name), "must be greater than 0"))
    expect_int(cfg.get("expendablePodsPriorityCutoff"), key_path(path, "expendablePodsPriorityCutoff"), errs)
    expect_enum(cfg.get("expander"), EXPANDERS, key_path(path, "expander"), errs)
    for name in ("maxNodesTotal", "maxGracefulTerminationSec", "maxEmptyBulkDelete"):
        expect_int(cfg.get(name), key_path(path, name), errs, minimum=0)
    expect_int(cfg.get("maxDrainParallelism"), key_path(path, "maxDrainParallelism"), errs, minimum=1)
    for name in ("scaleDownEnabled", "skipNodesWithSystemPods", "ignoreDaemonSetsUtilization"):
        expect_bool(cfg.get(name), key_path(path, name), errs)
    threshold = cfg.get("scaleDownUtilizationThreshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                  or not 0 <= threshold <= 1):
        errs.append((key_path(path, "scaleDownUtilizationThreshold"), "must be a number between 0 and 1"))
    gpath = key_path(path, "nodeGroups")
    groups = expect_list(cfg.get("nodeGroups"), gpath, errs, required=True)
    if groups is not None and not groups:
        errs.append((gpath, "needs at least one node group"))
    seen: set[str] = set()
    for i, entry in enumerate(groups or []):
        item = expect_dict(entry, f"{gpath}[{i}]", errs)
        if item is not None:
            _validate_group(item, f"{gpath}[{i}]", errs, seen)


# -- parsing (after validation) ------------------------------------------------------------------
def parse_config(cfg: dict[str, Any]) -> AutoscalerConfig:
    def seconds(value: Any, default: float) -> float:
        return default if value is None else parse_duration(value)

    groups = tuple(
        NodeGroup(
            name=g["name"], min_size=int(g.get("minSize") or 0), max_size=int(g["maxSize"]),
            initial_size=int(g.get("initialSize") or 0), scale_up_delay=seconds(g.get("scaleUpDelay"), 0.0),
            node_startup_time=seconds(g.get("nodeStartupTime"), 0.0), priority=int(g.get("priority") or 0),
            template=deep_copy(g["template"]),
        )
        for g in cfg.get("nodeGroups") or []
    )
    cutoff = cfg.get("expendablePodsPriorityCutoff")
    threshold = cfg.get("scaleDownUtilizationThreshold")
    return AutoscalerConfig(
        groups=groups,
        scan_interval=seconds(cfg.get("scanInterval"), 10.0),
        expendable_cutoff=-10 if cutoff is None else int(cutoff),
        new_pod_scale_up_delay=seconds(cfg.get("newPodScaleUpDelay"), 0.0),
        expander=cfg.get("expander") or "random",
        max_nodes_total=int(cfg.get("maxNodesTotal") or 0),
        scale_down_enabled=cfg.get("scaleDownEnabled", True) is not False,
        scale_down_delay_after_add=seconds(cfg.get("scaleDownDelayAfterAdd"), 600.0),
        scale_down_unneeded_time=seconds(cfg.get("scaleDownUnneededTime"), 600.0),
        scale_down_utilization_threshold=0.5 if threshold is None else float(threshold),
        max_graceful_termination=int(cfg.get("maxGracefulTerminationSec", 600)),
        max_empty_bulk_delete=int(cfg.get("maxEmptyBulkDelete", 10)),
        max_drain_parallelism=int(cfg.get("maxDrainParallelism", 1)),
        unremovable_recheck_timeout=seconds(cfg.get("unremovableNodeRecheckTimeout"), 300.0),
        skip_nodes_with_system_pods=cfg.get("skipNodesWithSystemPods", True) is not False,
        ignore_daemonsets_utilization=cfg.get("ignoreDaemonSetsUtilization", False) is True,
    )
