"""Validation of a Scenario's ``spec.cluster``: settings of the embedded cluster's subsystems.

Each key has one validator in :mod:`kubesched.api.cluster_settings`; an unknown key is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from kubesched.api.checks import Errors, expect_dict, key_path
from kubesched.api.cluster_settings import admission, autoscaler, eviction, storage, topology

ClusterValidator = Callable[[dict[str, Any], str, Errors], None]

CLUSTER_VALIDATORS: Mapping[str, ClusterValidator] = MappingProxyType({
    "admission": admission.validate_config,
    "eviction": eviction.validate_config,
    "autoscaler": autoscaler.validate_config,
    "topology": topology.validate_config,
    "storage": storage.validate_config,
})


def validate_cluster_config(cfg: Any, path: str, errs: Errors) -> None:
    cluster = expect_dict(cfg, path, errs)
    if cluster is None:
        return
    for key, value in cluster.items():
        validator = CLUSTER_VALIDATORS.get(str(key))
        sub = key_path(path, str(key))
        if validator is None:
            errs.append((sub, f"unknown cluster setting (known: {', '.join(sorted(CLUSTER_VALIDATORS))})"))
            continue
        section = expect_dict(value, sub, errs)
        if section is not None:
            validator(section, sub, errs)
