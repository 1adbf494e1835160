"""Validation of a Scenario's ``spec.cluster``: settings of the embedded cluster's subsystems.

Each subsystem owns one key and one validator here (``admission``, and the ones registered by the
eviction, autoscaler and topology subsystems); an unknown key is an error.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from kubesched.api._checks import Errors, expect_dict, expect_list, expect_str, key_path

ClusterValidator = Callable[[dict[str, Any], str, Errors], None]


def _validate_admission(cfg: dict[str, Any], path: str, errs: Errors) -> None:
    """``admission.limitedResources``: the API server's ResourceQuotaConfiguration entries."""
    for extra in sorted(set(cfg) - {"limitedResources"}):
        errs.append((key_path(path, extra), "unknown field in spec.cluster.admission"))
    lpath = key_path(path, "limitedResources")
    for i, entry in enumerate(expect_list(cfg.get("limitedResources"), lpath, errs) or []):
        epath = f"{lpath}[{i}]"
        item = expect_dict(entry, epath, errs)
        if item is None:
            continue
        expect_str(item.get("resource"), key_path(epath, "resource"), errs, required=True)
        for j, text in enumerate(expect_list(item.get("matchContains"), key_path(epath, "matchContains"), errs) or []):
            expect_str(text, f"{key_path(epath, 'matchContains')}[{j}]", errs)
        mpath = key_path(epath, "matchScopes")
        for j, scope in enumerate(expect_list(item.get("matchScopes"), mpath, errs) or []):
            spath = f"{mpath}[{j}]"
            sc = expect_dict(scope, spath, errs)
            if sc is not None:
                expect_str(sc.get("scopeName"), key_path(spath, "scopeName"), errs, required=True)
                expect_str(sc.get("operator"), key_path(spath, "operator"), errs, required=True)


CLUSTER_VALIDATORS: dict[str, ClusterValidator] = {"admission": _validate_admission}

#: validators living with their subsystem, imported when their key is used: key -> (module, function)
LAZY_VALIDATORS: dict[str, tuple[str, str]] = {
    "eviction": ("kubesched.cluster.embedded.kubelet.eviction", "validate_config"),
    "autoscaler": ("kubesched.cluster.embedded.autoscaler.autoscaler", "validate_config"),
    "topology": ("kubesched.cluster.embedded.kubelet.topology_config", "validate_config"),
}


def register(key: str, validator: ClusterValidator) -> None:
    CLUSTER_VALIDATORS[key] = validator


def validate_cluster_config(cfg: Any, path: str, errs: Errors) -> None:
    cluster = expect_dict(cfg, path, errs)
    if cluster is None:
        return
    for key, value in cluster.items():
        validator = CLUSTER_VALIDATORS.get(str(key))
        if validator is None and str(key) in LAZY_VALIDATORS:
            module, name = LAZY_VALIDATORS[str(key)]
            validator = getattr(importlib.import_module(module), name)
        sub = key_path(path, str(key))
        if validator is None:
            known = sorted(set(CLUSTER_VALIDATORS) | set(LAZY_VALIDATORS))
            errs.append((sub, f"unknown cluster setting (known: {', '.join(known)})"))
            continue
        section = expect_dict(value, sub, errs)
        if section is not None:
            validator(section, sub, errs)
