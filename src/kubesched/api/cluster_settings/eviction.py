"""``spec.cluster.eviction``: the simulated kubelets' node-pressure eviction settings.

Field names are the kubelet's (``KubeletConfiguration``); defaults are upstream's
(``pkg/kubelet/apis/config/v1beta1/defaults.go``)::

    eviction:
      monitoringPeriod: 10s                       # the eviction loop's sleep after a synchronize that evicted nothing
      evictionHard: {memory.available: 100Mi}     # default; nodefs.available: 10% is also default
      evictionSoft: {memory.available: 300Mi}     # optional, with a grace period per signal
      evictionSoftGracePeriod: {memory.available: 30s}
      evictionMaxPodGracePeriod: 0                # grace of pods evicted for a soft threshold
      evictionPressureTransitionPeriod: 5m        # how long a pressure condition outlives the pressure
      nodeStatusUpdateFrequency: 10s              # conditions reach the Node object with the next status update
      taintNodesByCondition: true                 # node.kubernetes.io/memory-pressure:NoSchedule while MemoryPressure
      defaultUsage: requests                      # usage of pods without kubesched.io/usage: requests | zero
      nodes:                                      # per-node overrides (first matching entry wins)
      - names: [node-1]                           # and/or nodeSelector: {matchLabels: {...}}
        evictionHard: {memory.available: 200Mi}
      avoidPingPong:                              # opt-in (design doc, end of the eviction section)
        window: 1m                                # an eviction this soon after the pod started counts
        duration: 5m                              # the controller's next pods avoid that node this long
        mode: Preferred                           # Preferred (node affinity preference) or Required

Signals: ``memory.available`` (resource ``memory``, condition MemoryPressure) and ``nodefs.available``
(resource ``ephemeral-storage``, condition DiskPressure). A threshold is a quantity or a percentage of
the node's capacity. A map given for ``evictionHard``/``evictionSoft`` replaces the default map (list
a default signal again to keep it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kubesched.api.checks import (
    Errors,
    check_duration,
    check_label_selector,
    expect_bool,
    expect_dict,
    expect_enum,
    expect_int,
    expect_list,
    expect_str,
    key_path,
)
from kubesched.api.durations import parse_duration
from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import parse_quantity, resource_amount
from kubesched.api.selectors import LabelSelector
from kubesched.api.usage import DEFAULT_USAGE_MODES
from kubesched.k8s.objects import Obj


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    resource: str
    condition: str
    taint_key: str


SIGNALS: Mapping[str, Signal] = MappingProxyType({
    "memory.available": Signal("memory.available", "memory", "MemoryPressure", "node.kubernetes.io/memory-pressure"),
    "nodefs.available": Signal("nodefs.available", "ephemeral-storage", "DiskPressure",
                               "node.kubernetes.io/disk-pressure"),
})
DEFAULT_EVICTION_HARD: Mapping[str, str] = MappingProxyType({"memory.available": "100Mi", "nodefs.available": "10%"})
PING_PONG_MODES = ("Preferred", "Required")

_TOP_FIELDS = frozenset({
    "monitoringPeriod", "evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
    "evictionPressureTransitionPeriod", "nodeStatusUpdateFrequency", "taintNodesByCondition", "defaultUsage",
    "nodes", "avoidPingPong", "evictionMinimumReclaim",
})
_NODE_FIELDS = frozenset({"names", "nodeSelector", "evictionHard", "evictionSoft", "evictionSoftGracePeriod",
                          "evictionMaxPodGracePeriod", "evictionMinimumReclaim"})


@dataclass(frozen=True, slots=True)
class Amount:
    """A threshold amount: ``quantity`` (absolute) or ``percentage`` (of capacity, 0..1)."""

    quantity: int | None
    percentage: float | None

    def of(self, capacity: int) -> int:
        if self.quantity is not None:
            return self.quantity
        return int(capacity * (self.percentage or 0.0))


NO_RECLAIM = Amount(0, None)


@dataclass(frozen=True, slots=True)
class Threshold:
    """``signal < value``: ``quantity`` (absolute) or ``percentage`` (of capacity, 0..1). Once met, it
    stays met until ``value + min_reclaim`` is available again (``evictionMinimumReclaim``)."""

    signal: Signal
    quantity: int | None
    percentage: float | None
    grace_period: float = 0.0
    hard: bool = True
    min_reclaim: Amount = NO_RECLAIM

    def value(self, capacity: int) -> int:
        return Amount(self.quantity, self.percentage).of(capacity)

    def resolved_at(self, capacity: int) -> int:
        """What must be available for a met threshold to be resolved."""
        return self.value(capacity) + self.min_reclaim.of(capacity)

    def text(self, capacity: int) -> str:
        from kubesched.api.quantity import format_quantity

        return format_quantity(self.signal.resource, self.value(capacity))


@dataclass(frozen=True, slots=True)
class NodeSettings:
    thresholds: tuple[Threshold, ...]
    max_pod_grace_period: int = 0

    def hard(self, signal: str) -> Threshold | None:
        return next((t for t in self.thresholds if t.hard and t.signal.name == signal), None)


@dataclass(frozen=True, slots=True)
class PingPongSettings:
    window: float = 60.0
    duration: float = 300.0
    mode: str = "Preferred"


@dataclass(frozen=True, slots=True)
class NodeOverride:
    names: frozenset[str] | None
    selector: LabelSelector | None
    settings: NodeSettings

    def matches(self, node: Obj) -> bool:
        meta = node.get("metadata") or {}
        if self.names is not None and meta.get("name") not in self.names:
            return False
        return self.selector is None or self.selector.matches(meta.get("labels") or {})


@dataclass(frozen=True)
class EvictionConfig:
    defaults: NodeSettings
    monitoring_period: float = 10.0
    pressure_transition_period: float = 300.0
    node_status_update_frequency: float = 10.0
    taint_nodes_by_condition: bool = True
    default_usage: str = "requests"
    overrides: tuple[NodeOverride, ...] = ()
    ping_pong: PingPongSettings | None = None

    def for_node(self, node: Obj) -> NodeSettings:
        for override in self.overrides:
            if override.matches(node):
                return override.settings
        return self.defaults


# -- validation -------------------------------------------------------------------------------
def _check_threshold_map(value: Any, path: str, errs: Errors) -> None:
    mapping = expect_dict(value, path, errs)
    for signal, text in (mapping or {}).items():
        p = key_path(path, signal)
        if signal not in SIGNALS:
            errs.append((p, f"unsupported eviction signal (supported: {', '.join(SIGNALS)})"))
            continue
        if isinstance(text, str) and text.endswith("%"):
            try:
                pct = float(text[:-1])
            except ValueError:
                pct = -1.0
            if not 0 <= pct <= 100:
                errs.append((p, f'invalid percentage "{text}": must be between 0% and 100%'))
            continue
        try:
            amount = parse_quantity(text)
        except (InvalidQuantity, TypeError, ValueError):
            errs.append((p, f'invalid threshold "{text}": a quantity (100Mi) or a percentage (10%)'))
            continue
        if amount < 0:
            errs.append((p, f'invalid threshold "{text}": must not be negative'))


def _check_grace_map(value: Any, path: str, errs: Errors) -> None:
    mapping = expect_dict(value, path, errs)
    for signal, text in (mapping or {}).items():
        p = key_path(path, signal)
        if signal not in SIGNALS:
            errs.append((p, f"unsupported eviction signal (supported: {', '.join(SIGNALS)})"))
        else:
            check_duration(text, p, errs, required=True)


def _check_node_fields(cfg: dict[str, Any], path: str, errs: Errors) -> None:
    _check_threshold_map(cfg.get("evictionHard"), key_path(path, "evictionHard"), errs)
    _check_threshold_map(cfg.get("evictionSoft"), key_path(path, "evictionSoft"), errs)
    _check_grace_map(cfg.get("evictionSoftGracePeriod"), key_path(path, "evictionSoftGracePeriod"), errs)
    _check_threshold_map(cfg.get("evictionMinimumReclaim"), key_path(path, "evictionMinimumReclaim"), errs)
    expect_int(cfg.get("evictionMaxPodGracePeriod"), key_path(path, "evictionMaxPodGracePeriod"), errs, minimum=0)
    soft = cfg.get("evictionSoft") or {}
    grace = cfg.get("evictionSoftGracePeriod") or {}
    if isinstance(soft, dict) and isinstance(grace, dict):
        for signal in soft:
            if signal in SIGNALS and signal not in grace:
                errs.append((key_path(key_path(path, "evictionSoftGracePeriod"), signal),
                             "a soft eviction threshold needs a grace period"))


def validate_config(cfg: dict[str, Any], path: str, errs: Errors) -> None:
    """Validate ``spec.cluster.eviction`` (appends ``(field path, message)`` to ``errs``)."""
    for extra in sorted(set(cfg) - _TOP_FIELDS, key=str):
        errs.append((key_path(path, str(extra)), "unknown field in spec.cluster.eviction"))
    for name in ("monitoringPeriod", "evictionPressureTransitionPeriod", "nodeStatusUpdateFrequency"):
        seconds = check_duration(cfg.get(name), key_path(path, name), errs)
        if name == "monitoringPeriod" and seconds is not None and seconds <= 0:
            errs.append((key_path(path, name), "must be greater than 0"))
    expect_bool(cfg.get("taintNodesByCondition"), key_path(path, "taintNodesByCondition"), errs)
    expect_enum(cfg.get("defaultUsage"), DEFAULT_USAGE_MODES, key_path(path, "defaultUsage"), errs)
    _check_node_fields(cfg, path, errs)
    npath = key_path(path, "nodes")
    for i, entry in enumerate(expect_list(cfg.get("nodes"), npath, errs) or []):
        epath = f"{npath}[{i}]"
        item = expect_dict(entry, epath, errs)
        if item is None:
            continue
        for extra in sorted(set(item) - _NODE_FIELDS, key=str):
            errs.append((key_path(epath, str(extra)), "unknown field in a node entry"))
        if "names" not in item and "nodeSelector" not in item:
            errs.append((epath, "needs names or nodeSelector"))
        for j, name in enumerate(expect_list(item.get("names"), key_path(epath, "names"), errs) or []):
            expect_str(name, f"{key_path(epath, 'names')}[{j}]", errs, required=True)
        check_label_selector(item.get("nodeSelector"), key_path(epath, "nodeSelector"), errs)
        _check_node_fields(item, epath, errs)
    ppath = key_path(path, "avoidPingPong")
    pp = expect_dict(cfg.get("avoidPingPong"), ppath, errs)
    if pp is not None:
        for extra in sorted(set(pp) - {"window", "duration", "mode"}, key=str):
            errs.append((key_path(ppath, str(extra)), "unknown field in avoidPingPong"))
        check_duration(pp.get("window"), key_path(ppath, "window"), errs)
        check_duration(pp.get("duration"), key_path(ppath, "duration"), errs)
        expect_enum(pp.get("mode"), PING_PONG_MODES, key_path(ppath, "mode"), errs)


# -- parsing (after validation) ------------------------------------------------------------------
def _amount(signal: Signal, text: Any) -> Amount:
    if isinstance(text, str) and text.endswith("%"):
        return Amount(None, float(text[:-1]) / 100)
    return Amount(resource_amount(signal.resource, text), None)


def _thresholds(hard: dict[str, Any], soft: dict[str, Any], grace: dict[str, Any],
                reclaim: dict[str, Any]) -> tuple[Threshold, ...]:
    out: list[Threshold] = []
    for is_hard, mapping in ((True, hard), (False, soft)):
        for name, text in mapping.items():
            signal = SIGNALS[name]
            amount = _amount(signal, text)
            period = 0.0 if is_hard else parse_duration(grace[name])
            minimum = _amount(signal, reclaim[name]) if name in reclaim else NO_RECLAIM
            out.append(Threshold(signal, amount.quantity, amount.percentage, period, is_hard, minimum))
    return tuple(out)


def _node_settings(cfg: dict[str, Any], base: dict[str, Any]) -> NodeSettings:
    merged = {**base, **{k: v for k, v in cfg.items() if v is not None}}
    hard = merged.get("evictionHard")
    return NodeSettings(
        _thresholds(dict(DEFAULT_EVICTION_HARD if hard is None else hard), dict(merged.get("evictionSoft") or {}),
                    dict(merged.get("evictionSoftGracePeriod") or {}), dict(merged.get("evictionMinimumReclaim") or {})),
        int(merged.get("evictionMaxPodGracePeriod") or 0),
    )


def parse_config(cfg: dict[str, Any]) -> EvictionConfig:
    """The validated section as an :class:`EvictionConfig`."""
    node_keys = ("evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
                 "evictionMinimumReclaim")
    base = {k: cfg[k] for k in node_keys if cfg.get(k) is not None}
    overrides = []
    for entry in cfg.get("nodes") or []:
        names = frozenset(entry["names"]) if entry.get("names") is not None else None
        selector = LabelSelector.from_dict(entry["nodeSelector"]) if entry.get("nodeSelector") is not None else None
        overrides.append(NodeOverride(names, selector, _node_settings(entry, base)))
    pp = cfg.get("avoidPingPong")
    ping_pong = None
    if pp is not None:
        ping_pong = PingPongSettings(
            parse_duration(pp.get("window", "1m")), parse_duration(pp.get("duration", "5m")),
            pp.get("mode") or "Preferred")

    def seconds(name: str, default: float) -> float:
        value = cfg.get(name)
        return default if value is None else parse_duration(value)

    return EvictionConfig(
        defaults=_node_settings({}, base),
        monitoring_period=seconds("monitoringPeriod", 10.0),
        pressure_transition_period=seconds("evictionPressureTransitionPeriod", 300.0),
        node_status_update_frequency=seconds("nodeStatusUpdateFrequency", 10.0),
        taint_nodes_by_condition=cfg.get("taintNodesByCondition", True) is not False,
        default_usage=cfg.get("defaultUsage") or "requests",
        overrides=tuple(overrides),
        ping_pong=ping_pong,
    )
