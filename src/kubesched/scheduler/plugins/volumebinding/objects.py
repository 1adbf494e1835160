"""What VolumeBinding reads of any object's metadata: the metadata itself, a claim's key and the
resourceVersion as a number."""

from __future__ import annotations

from typing import Any

from kubesched.k8s.objects import Obj


def metadata(obj: Obj) -> dict[str, Any]:
    """The object's metadata (empty when it has none)."""
    return obj.get("metadata") or {}


def claim_key(claim: Obj) -> str:
    """``namespace/name``, as upstream's messages name a claim."""
    return f"{metadata(claim).get('namespace') or 'default'}/{metadata(claim)['name']}"


def resource_version(obj: Obj | None) -> int:
    """The object's resourceVersion as a number (0 for none, or one that is not a number)."""
    try:
        return int(metadata(obj or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
