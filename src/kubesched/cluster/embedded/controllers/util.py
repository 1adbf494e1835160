"""Small helpers shared by the controllers: owner references, pod predicates and pods from
templates (object keys and phases are in :mod:`kubesched.k8s.objects`)."""

from __future__ import annotations

from typing import Any

from kubesched.cluster.embedded.kubelet.eviction_rank import MIRROR_POD_ANNOTATION
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import Obj, is_terminal, namespace_of
from kubesched.k8s.timefmt import parse_rfc3339

#: the alphabet of generated name suffixes (no vowels, no look-alikes)
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATE_NAME_BASE = 58  # 63 minus the 5 random characters

PodKey = tuple[str, str]


def controller_ref(obj: Obj) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def controller_kind(pod: Obj) -> str | None:
    """The kind of the pod's controller (None: it has none)."""
    ref = controller_ref(pod)
    return None if ref is None else str(ref.get("kind") or "")


def is_daemonset_pod(pod: Obj) -> bool:
    return controller_kind(pod) == "DaemonSet"


def is_mirror_pod(pod: Obj) -> bool:
    """A static pod's mirror (the kubelet's ``kubernetes.io/config.mirror`` annotation)."""
    return MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def owner_reference(owner: Obj) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """Neither terminal nor being deleted (upstream ``FilterActivePods``)."""
    return not is_terminal(pod) and not is_deleting(pod)


def ready_condition(pod: Obj) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return dict(cond)
    return None


def is_ready(pod: Obj) -> bool:
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def creation_time(obj: Obj) -> float:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(ts) if ts else 0.0


def replicas_of(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def pod_from_template(
    owner: Obj, name: str, *, generate_name: str | None = None, labels: dict[str, str] | None = None
) -> Obj:
    """A pod for ``owner``'s ``spec.template``: template labels/annotations (plus ``labels``), the
    owner as controller, the owner's namespace."""
    template = (owner.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace_of(owner),
        "labels": {**(tmeta.get("labels") or {}), **(labels or {})},
        "ownerReferences": [owner_reference(owner)],
    }
    if generate_name:
        meta["generateName"] = generate_name
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": deep_copy(template.get("spec") or {}),
    }
