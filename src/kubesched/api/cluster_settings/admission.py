"""``spec.cluster.admission``: settings of the embedded API server's admission plugins.

``limitedResources`` are the ResourceQuota admission plugin's ``ResourceQuotaConfiguration``
entries (``resource``, ``matchContains``, ``matchScopes``).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.checks import Errors, expect_dict, expect_list, expect_str, key_path


def validate_config(cfg: dict[str, Any], path: str, errs: Errors) -> None:
    """Validate ``spec.cluster.admission`` (appends ``(field path, message)`` to ``errs``)."""
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
