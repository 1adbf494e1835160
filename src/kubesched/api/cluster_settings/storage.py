"""``spec.cluster.storage``: how the embedded cluster's volume provisioners behave.

The PersistentVolume controller always runs; provisioning is done by a simulated external
provisioner per StorageClass ``provisioner`` name. Without settings every provisioner creates a
volume at once, reachable from everywhere (no node affinity) unless the selected node's CSINode
names topology keys for the driver. Per provisioner (``provisioners: {<name>: {...}}``, ``"*"`` for
any other):

- ``delay`` (duration, default 0s): from the request to the volume;
- ``failureRate`` (0..1, default 0): the share of attempts that fail (drawn from the scenario's seed);
  a failed delayed-binding claim loses its selected node, so the scheduler tries again, and an
  immediate one is retried after ``delay`` again;
- ``topologyKeys`` (list of node label keys): the new volume is pinned to the chosen node's values of
  these keys (e.g. ``topology.kubernetes.io/zone`` for zonal disks, ``kubernetes.io/hostname`` for
  local ones) — the CSINode's ``topologyKeys`` for the driver win when the node has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.checks import Errors, check_duration, expect_dict, expect_list, expect_str, key_path
from kubesched.api.durations import parse_duration

ANY_PROVISIONER = "*"


@dataclass(frozen=True)
class ProvisionerSettings:
    delay: float = 0.0
    failure_rate: float = 0.0
    topology_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class StorageSettings:
    provisioners: dict[str, ProvisionerSettings] = field(default_factory=dict)

    def for_provisioner(self, name: str) -> ProvisionerSettings:
        return self.provisioners.get(name) or self.provisioners.get(ANY_PROVISIONER) or ProvisionerSettings()


_PROVISIONER_FIELDS = {"delay", "failureRate", "topologyKeys"}


def validate_config(cfg: dict[str, Any], path: str, errs: Errors) -> None:
    for extra in sorted(set(cfg) - {"provisioners"}):
        errs.append((key_path(path, extra), "unknown field in spec.cluster.storage"))
    ppath = key_path(path, "provisioners")
    for name, entry in (expect_dict(cfg.get("provisioners"), ppath, errs) or {}).items():
        epath = key_path(ppath, str(name))
        item = expect_dict(entry, epath, errs)
        if item is None:
            continue
        for extra in sorted(set(item) - _PROVISIONER_FIELDS):
            errs.append((key_path(epath, extra), "unknown field of a provisioner (known: delay, failureRate, "
                         "topologyKeys)"))
        check_duration(item.get("delay"), key_path(epath, "delay"), errs)
        rate = item.get("failureRate")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1):
            errs.append((key_path(epath, "failureRate"), "must be a number between 0 and 1"))
        kpath = key_path(epath, "topologyKeys")
        for i, key in enumerate(expect_list(item.get("topologyKeys"), kpath, errs) or []):
            expect_str(key, f"{kpath}[{i}]", errs, required=True, non_empty=True)


def parse_config(cfg: dict[str, Any] | None) -> StorageSettings:
    provisioners = {}
    for name, item in ((cfg or {}).get("provisioners") or {}).items():
        delay = item.get("delay")
        provisioners[str(name)] = ProvisionerSettings(
            delay=float(parse_duration(delay)) if delay is not None else 0.0,
            failure_rate=float(item.get("failureRate") or 0.0),
            topology_keys=tuple(item.get("topologyKeys") or ()),
        )
    return StorageSettings(provisioners)
