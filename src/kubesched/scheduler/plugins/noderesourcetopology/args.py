"""NodeResourceTopologyMatch's args (upstream names and defaults, plus kubesched's
``cacheResyncMode``), validated and defaulted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.topology.nrtcache import RESYNC_ALL, RESYNC_AUTODETECT, RESYNC_EXCLUSIVE

LEAST_NUMA_NODES = "LeastNUMANodes"
STRATEGY_TYPES = ("LeastAllocated", "MostAllocated", "BalancedAllocation", LEAST_NUMA_NODES)
ARGS = {
    "scoringStrategy", "cacheResyncPeriodSeconds", "cacheResyncMode", "discardReservedNodes", "cache", "preemptionMode",
}
RESYNC_MODES = ("Periodic", "OnUpdate")
CACHE_ENUMS = {
    "foreignPodsDetect": ("All", "None", "OnlyExclusiveResources"),  # the first is the default
    "resyncMethod": (RESYNC_AUTODETECT, RESYNC_ALL, RESYNC_EXCLUSIVE),
    "informerMode": ("Shared", "Dedicated"),
    "resyncScope": ("All", "OnlyResources"),
}


@dataclass(frozen=True, slots=True)
class Args:
    """The args as the plugin reads them."""

    strategy: str  # scoringStrategy.type
    weights: dict[str, int]  # scoringStrategy.resources, by name
    resync_period: int  # cacheResyncPeriodSeconds
    discard_reserved: bool  # discardReservedNodes
    cache: dict[str, str]  # each field of ``cache``, defaulted
    preemption: str  # preemptionMode
    on_update: bool  # cacheResyncMode is OnUpdate


def parse_args(args: Mapping[str, Any]) -> Args:
    """The args read and defaulted; ValueError for the first field found invalid."""
    unknown = sorted(set(args) - ARGS)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(ARGS))})")
    strategy = args.get("scoringStrategy") or {}
    if not isinstance(strategy, dict):
        raise ValueError("scoringStrategy: must be an object {type, resources}")
    strategy_type = _enum(strategy.get("type"), STRATEGY_TYPES, "scoringStrategy.type", "LeastAllocated")
    weights = _weights(strategy.get("resources"))
    period = args.get("cacheResyncPeriodSeconds", 0)
    if not isinstance(period, int) or isinstance(period, bool) or period < 0:
        raise ValueError(f"cacheResyncPeriodSeconds: must be a non-negative integer, got {period!r}")
    discard = args.get("discardReservedNodes", False)
    if not isinstance(discard, bool):
        raise ValueError("discardReservedNodes: must be a boolean")
    cache_args = args.get("cache") or {}
    if not isinstance(cache_args, dict) or set(cache_args) - set(CACHE_ENUMS):
        raise ValueError(f"cache: must be an object with fields {', '.join(CACHE_ENUMS)}")
    cache_opts = {k: _enum(cache_args.get(k), v, f"cache.{k}", v[0]) for k, v in CACHE_ENUMS.items()}
    preemption = _enum(args.get("preemptionMode"), ("Disabled", "Enabled"), "preemptionMode", "Disabled")
    on_update = _enum(args.get("cacheResyncMode"), RESYNC_MODES, "cacheResyncMode", "Periodic") == "OnUpdate"
    return Args(strategy_type, weights, period, discard, cache_opts, preemption, on_update)


def _enum(value: Any, allowed: Sequence[str], what: str, default: str) -> str:
    if value is None:
        return default
    if value not in allowed:
        raise ValueError(f"{what}: unsupported value {value!r} (allowed: {', '.join(allowed)})")
    return str(value)


def _weights(raw: Any) -> dict[str, int]:
    if raw is None:
        return {"cpu": 1, "memory": 1}
    if not isinstance(raw, list):
        raise ValueError("scoringStrategy.resources: must be a list of {name, weight}")
    out: dict[str, int] = {}
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ValueError(f"scoringStrategy.resources[{i}].name is required")
        weight = spec.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
            raise ValueError(f"scoringStrategy.resources[{i}].weight: must be an integer in 0..100, got {weight!r}")
        out[spec["name"]] = weight or 1
    return out or {"cpu": 1, "memory": 1}
