"""What the API server does to a new storage object: the defaults of the ``v1`` and
``storage.k8s.io/v1`` types, and the DefaultStorageClass admission plugin
(``plugin/pkg/admission/storage/storageclass/setdefault``) for claims.

- **PersistentVolume**: ``persistentVolumeReclaimPolicy`` Retain, ``volumeMode`` Filesystem,
  ``status.phase`` Pending (the PV controller makes it Available).
- **PersistentVolumeClaim**: ``volumeMode`` Filesystem, ``status.phase`` Pending; a claim that names
  no class at all (no ``storageClassName``, not even ``""``, and no beta annotation) gets the
  default StorageClass — the one annotated ``storageclass.kubernetes.io/is-default-class: "true"``,
  the newest if several (the smaller name on a tie).
- **StorageClass**: ``reclaimPolicy`` Delete, ``volumeBindingMode`` Immediate.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.volumes.claims import ANN_BETA_STORAGE_CLASS
from kubesched.k8s.objects import Obj

IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"


def default_class(classes: Iterable[Obj]) -> Obj | None:
    """The default StorageClass: the newest annotated one, the smaller name on a tie."""
    marked = [sc for sc in classes
              if ((sc.get("metadata") or {}).get("annotations") or {}).get(IS_DEFAULT_CLASS) == "true"
              or ((sc.get("metadata") or {}).get("annotations") or {}).get(BETA_IS_DEFAULT_CLASS) == "true"]
    if not marked:
        return None
    marked.sort(key=lambda sc: sc["metadata"]["name"])
    marked.sort(key=lambda sc: sc["metadata"].get("creationTimestamp") or "", reverse=True)
    return marked[0]


def default_storage_object(obj: Obj, classes: Iterable[Obj]) -> None:
    """Apply the defaults above to ``obj`` (a copy being created) in place."""
    kind = obj.get("kind")
    if kind == "PersistentVolume":
        spec = obj.setdefault("spec", {})
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif kind == "PersistentVolumeClaim":
        spec = obj.setdefault("spec", {})
        spec.setdefault("volumeMode", "Filesystem")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if "storageClassName" not in spec and ANN_BETA_STORAGE_CLASS not in annotations:
            chosen = default_class(classes)
            if chosen is not None:
                spec["storageClassName"] = chosen["metadata"]["name"]
    elif kind == "StorageClass":
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
