"""The compact topology form of a Scenario: ``spec.cluster.topology``.

.. code-block:: yaml

    spec:
      cluster:
        topology:
          exporter: {mode: Poll, interval: 10s}      # or {mode: Watch, delay: 0s}; podPlacement: true
          adoptNodeResourceTopologies: true           # simulate nodes described by NRT objects
          nodes:                                      # first matching entry wins
          - nodeSelector: {matchLabels: {pool: numa}} # and/or nodeNames: [a, b]; neither = every node
            topologyManagerPolicy: single-numa-node   # none | best-effort | restricted | single-numa-node
            topologyManagerScope: container           # container | pod
            cpuManagerPolicy: static                  # static | none
            memoryManagerPolicy: Static               # Static | None
            reservedSystemCPUs: "0"                   # a cpuset over the node's CPU ids
            zones:
            - {cpus: 16, memory: 64Gi, devices: {nvidia.com/gpu: 2}}
            - {cpus: 16, memory: 64Gi, reservedMemory: 1Gi, devices: {nvidia.com/gpu: 2}, distances: [20, 10]}

Kubelet defaults apply to what is left out (policy ``none``, scope ``container``), except the CPU and
memory managers, which default to the policies that make NUMA alignment happen (``static``,
``Static``). The Node objects themselves are declared as usual; their ``status.allocatable`` should
agree with the zones (sum of allocatable CPUs, memory, devices) — the scheduler reads the Node, the
kubelet the zones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.checks import (
    Errors,
    check_duration,
    check_label_selector,
    check_quantity,
    expect_bool,
    expect_dict,
    expect_enum,
    expect_int,
    expect_list,
    expect_str,
    idx_path,
    key_path,
)
from kubesched.api.cpuset import parse_cpuset
from kubesched.api.durations import parse_duration
from kubesched.api.quantity import resource_amount
from kubesched.api.selectors import LabelSelector

#: ``topologyManagerPolicy`` values
POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
#: ``topologyManagerScope`` values
SCOPES = ("container", "pod")
CPU_MANAGER_POLICIES = ("none", "static")
MEMORY_MANAGER_POLICIES = ("None", "Static")

#: how the topology exporter keeps NodeResourceTopology objects current
POLL = "Poll"
WATCH = "Watch"
MODES = (POLL, WATCH)
DEFAULT_POLL_INTERVAL = 60.0

TOP_FIELDS = {"exporter", "nodes", "adoptNodeResourceTopologies"}
EXPORTER_FIELDS = {"mode", "interval", "delay", "podPlacement"}
NODE_FIELDS = {
    "nodeNames", "nodeSelector", "topologyManagerPolicy", "topologyManagerScope", "cpuManagerPolicy",
    "memoryManagerPolicy", "reservedSystemCPUs", "zones",
}
ZONE_FIELDS = {"cpus", "memory", "reservedMemory", "devices", "distances"}


def _unknown(d: Mapping[str, Any], allowed: set[str], path: str, errs: Errors, where: str) -> None:
    for extra in sorted(set(map(str, d)) - allowed):
        errs.append((key_path(path, extra), f"unknown field in {where} (known: {', '.join(sorted(allowed))})"))


def _validate_exporter(cfg: Mapping[str, Any], path: str, errs: Errors) -> None:
    _unknown(cfg, EXPORTER_FIELDS, path, errs, "the topology exporter settings")
    expect_enum(cfg.get("mode"), MODES, key_path(path, "mode"), errs)
    interval = check_duration(cfg.get("interval"), key_path(path, "interval"), errs)
    if interval is not None and interval <= 0:
        errs.append((key_path(path, "interval"), "must be greater than 0"))
    check_duration(cfg.get("delay"), key_path(path, "delay"), errs)
    expect_bool(cfg.get("podPlacement"), key_path(path, "podPlacement"), errs)


def _validate_zone(zone: Any, path: str, n_zones: int, errs: Errors) -> int:
    """Checks one zone; returns its CPU count (0 if invalid)."""
    z = expect_dict(zone, path, errs, required=True)
    if z is None:
        return 0
    _unknown(z, ZONE_FIELDS, path, errs, "a topology zone")
    cpus = expect_int(z.get("cpus"), key_path(path, "cpus"), errs, required=True, minimum=0) or 0
    for name in ("memory", "reservedMemory"):
        if name in z:
            check_quantity(z[name], key_path(path, name), errs)
    devices = expect_dict(z.get("devices"), key_path(path, "devices"), errs)
    for resource, count in (devices or {}).items():
        dpath = key_path(key_path(path, "devices"), str(resource))
        if not isinstance(resource, str) or "/" not in resource or resource.startswith("hugepages-"):
            errs.append((dpath, "a device resource must be an extended resource name (domain/name)"))
        expect_int(count, dpath, errs, required=True, minimum=0)
    distances = expect_list(z.get("distances"), key_path(path, "distances"), errs)
    if distances is not None:
        if len(distances) != n_zones:
            errs.append((key_path(path, "distances"), f"must list one cost per zone ({n_zones}), got {len(distances)}"))
        for i, cost in enumerate(distances):
            expect_int(cost, idx_path(key_path(path, "distances"), i), errs, required=True, minimum=1, maximum=255)
    return cpus


def _validate_node(entry: Any, path: str, errs: Errors) -> None:
    d = expect_dict(entry, path, errs, required=True)
    if d is None:
        return
    _unknown(d, NODE_FIELDS, path, errs, "a node topology")
    for i, name in enumerate(expect_list(d.get("nodeNames"), key_path(path, "nodeNames"), errs) or []):
        expect_str(name, idx_path(key_path(path, "nodeNames"), i), errs, required=True, non_empty=True)
    check_label_selector(d.get("nodeSelector"), key_path(path, "nodeSelector"), errs)
    expect_enum(d.get("topologyManagerPolicy"), POLICIES, key_path(path, "topologyManagerPolicy"), errs)
    expect_enum(d.get("topologyManagerScope"), SCOPES, key_path(path, "topologyManagerScope"), errs)
    expect_enum(d.get("cpuManagerPolicy"), CPU_MANAGER_POLICIES, key_path(path, "cpuManagerPolicy"), errs)
    expect_enum(d.get("memoryManagerPolicy"), MEMORY_MANAGER_POLICIES, key_path(path, "memoryManagerPolicy"), errs)
    zpath = key_path(path, "zones")
    zones = expect_list(d.get("zones"), zpath, errs, required=True)
    if zones is not None and not zones:
        errs.append((zpath, "must declare at least one zone"))
    total_cpus = sum(_validate_zone(z, idx_path(zpath, i), len(zones or []), errs) for i, z in enumerate(zones or []))
    reserved = expect_str(d.get("reservedSystemCPUs"), key_path(path, "reservedSystemCPUs"), errs)
    if reserved is not None:
        try:
            ids = parse_cpuset(reserved)
        except ValueError as err:
            errs.append((key_path(path, "reservedSystemCPUs"), str(err)))
        else:
            if ids and ids[-1] >= total_cpus:
                errs.append((key_path(path, "reservedSystemCPUs"),
                             f"CPU {ids[-1]} does not exist: the zones declare CPUs 0-{max(total_cpus - 1, 0)}"))


def validate_config(section: dict[str, Any], path: str, errs: Errors) -> None:
    """Validate ``spec.cluster.topology`` (registered with the cluster validators)."""
    _unknown(section, TOP_FIELDS, path, errs, "spec.cluster.topology")
    exporter = expect_dict(section.get("exporter"), key_path(path, "exporter"), errs)
    if exporter is not None:
        _validate_exporter(exporter, key_path(path, "exporter"), errs)
    expect_bool(section.get("adoptNodeResourceTopologies"), key_path(path, "adoptNodeResourceTopologies"), errs)
    npath = key_path(path, "nodes")
    for i, entry in enumerate(expect_list(section.get("nodes"), npath, errs) or []):
        _validate_node(entry, idx_path(npath, i), errs)


# -- parsed form ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExporterSettings:
    mode: str = POLL
    interval: float = DEFAULT_POLL_INTERVAL
    delay: float = 0.0
    placement: bool = True


@dataclass(frozen=True, slots=True)
class ZoneInput:
    """One zone as the compact scenario form describes it (amounts already parsed)."""

    cpus: int
    memory: int = 0
    reserved_memory: int = 0
    devices: tuple[tuple[str, int], ...] = ()  # (resource, count)
    distances: tuple[int, ...] = ()  # cost to zone 0, zone 1, ...


@dataclass(frozen=True, slots=True)
class NodeEntry:
    """One ``nodes`` entry: which nodes it describes and their machine and kubelet settings."""

    zones: tuple[ZoneInput, ...]
    policy: str = "none"
    scope: str = "container"
    cpu_manager_policy: str = "static"
    memory_manager_policy: str = "Static"
    reserved_cpus: tuple[int, ...] = ()
    names: frozenset[str] | None = None
    selector: LabelSelector | None = None

    def matches(self, node: Mapping[str, Any]) -> bool:
        meta = node.get("metadata") or {}
        if self.names is not None and meta.get("name") not in self.names:
            return False
        return self.selector is None or self.selector.matches(meta.get("labels") or {})


@dataclass(frozen=True, slots=True)
class TopologyConfig:
    exporter: ExporterSettings = ExporterSettings()
    nodes: tuple[NodeEntry, ...] = ()
    adopt: bool = True


def _bytes(value: Any) -> int:
    return resource_amount("memory", value) if value is not None else 0


def parse_config(section: Mapping[str, Any]) -> TopologyConfig:
    """The parsed form of a section :func:`validate_config` accepted."""
    exp = section.get("exporter") or {}
    exporter = ExporterSettings(
        mode=exp.get("mode", POLL),
        interval=parse_duration(exp["interval"]) if "interval" in exp else DEFAULT_POLL_INTERVAL,
        delay=parse_duration(exp["delay"]) if "delay" in exp else 0.0,
        placement=bool(exp.get("podPlacement", True)),
    )
    entries: list[NodeEntry] = []
    for raw in section.get("nodes") or []:
        zones = tuple(
            ZoneInput(
                cpus=int(z.get("cpus", 0)),
                memory=_bytes(z.get("memory")),
                reserved_memory=_bytes(z.get("reservedMemory")),
                devices=tuple((str(r), int(n)) for r, n in sorted((z.get("devices") or {}).items())),
                distances=tuple(int(c) for c in z.get("distances") or ()),
            )
            for z in raw.get("zones") or []
        )
        entries.append(NodeEntry(
            zones,
            policy=raw.get("topologyManagerPolicy", "none"),
            scope=raw.get("topologyManagerScope", "container"),
            cpu_manager_policy=raw.get("cpuManagerPolicy", "static"),
            memory_manager_policy=raw.get("memoryManagerPolicy", "Static"),
            reserved_cpus=tuple(parse_cpuset(raw.get("reservedSystemCPUs") or "")),
            names=frozenset(raw["nodeNames"]) if raw.get("nodeNames") is not None else None,
            selector=LabelSelector.from_dict(raw["nodeSelector"]) if raw.get("nodeSelector") is not None else None,
        ))
    return TopologyConfig(exporter, tuple(entries), bool(section.get("adoptNodeResourceTopologies", True)))
