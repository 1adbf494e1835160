"""Why a pod's volumes keep it off a node, in words that name the claim, the volume, the class and
the label in the way ("claim data-db-0 is bound to pv-17, usable only where
topology.kubernetes.io/zone In [us-east-1a]; node has topology.kubernetes.io/zone=us-east-1b").

Like :mod:`kubesched.analysis.hints`, these only explain: the verdicts are the volume plugins'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kubesched.api.volumes.claims import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    access_modes_fit,
    claim_class,
    class_binding_mode,
    find_matching_volume,
    is_claim_fully_bound,
    pod_claims,
    storage_request,
    volume_capacity,
    volume_class,
)
from kubesched.api.volumes.topology import (
    ZONE_LABELS,
    csi_attach_limit_key,
    label_zones,
    topology_terms_match,
    volume_node_affinity_matches,
)
from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.types import NodeInfo, PodInfo

#: ``(kind, namespace, name) -> object``: the cluster's current objects
Lookup = Callable[[str, str, str], Obj | None]


def _claims(pod: PodInfo, lookup: Lookup) -> list[tuple[str, Obj | None]]:
    return [(name, lookup("PersistentVolumeClaim", pod.namespace, name)) for name, _ in pod_claims(pod.obj)]


def _affinity_text(volume: Obj) -> str:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    terms = []
    for term in required.get("nodeSelectorTerms") or ():
        exprs = [f"{e.get('key')} {e.get('operator')}" + (f" [{', '.join(e.get('values') or [])}]"
                                                         if e.get("values") else "")
                 for e in term.get("matchExpressions") or ()]
        terms.append(" and ".join(exprs) or "(empty term)")
    return " or ".join(terms) or "no node"


def _node_values(volume: Obj, labels: Mapping[str, str]) -> str:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    keys = sorted({e.get("key") for t in required.get("nodeSelectorTerms") or () for e in t.get("matchExpressions") or ()
                   if e.get("key")})
    shown = [f"{k}={labels[k]}" if k in labels else f"no label {k}" for k in keys]
    return ", ".join(shown) or "no matching labels"


def claim_hints(pod: PodInfo, lookup: Lookup) -> list[str]:
    """Why the pod's claims stop it before any node is looked at (missing, unbound Immediate, lost)."""
    hints = []
    for name, claim in _claims(pod, lookup):
        if claim is None:
            hints.append(f"claim {name} does not exist in namespace {pod.namespace}")
            continue
        if (claim.get("status") or {}).get("phase") == "Lost":
            hints.append(f"claim {name} lost its volume {(claim.get('spec') or {}).get('volumeName')}")
            continue
        if is_claim_fully_bound(claim):
            continue
        cls_name = claim_class(claim)
        storage_class = lookup("StorageClass", "", cls_name) if cls_name else None
        if class_binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER:
            continue
        wanted = f"{_size(claim)} {', '.join((claim.get('spec') or {}).get('accessModes') or [])}"
        if not cls_name:
            hints.append(f"claim {name} names no storage class and no volume matches it ({wanted}): create a "
                         "matching volume or give it a class")
        elif storage_class is None:
            hints.append(f"claim {name} names storage class {cls_name}, which does not exist")
        elif (storage_class.get("provisioner") or NOT_SUPPORTED_PROVISIONER) == NOT_SUPPORTED_PROVISIONER:
            hints.append(f"claim {name} (class {cls_name}, Immediate binding) is not bound: no Available volume "
                         f"of the class matches ({wanted}) and the class has no provisioner")
        else:
            hints.append(f"claim {name} (class {cls_name}) is waiting for its volume from "
                         f"{storage_class.get('provisioner')}")
    return hints


def _size(claim: Obj) -> str:
    return str((((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage", "0"))


def volume_binding_hints(pod: PodInfo, node: NodeInfo, lookup: Lookup, volumes: list[Obj]) -> list[str]:
    """Which claim the node cannot serve: a bound volume pinned elsewhere, no free volume that fits
    here, a class whose topology excludes the node, a claim already promised to another node."""
    hints = []
    labels = node.labels
    for name, claim in _claims(pod, lookup):
        if claim is None:
            continue
        spec = claim.get("spec") or {}
        if is_claim_fully_bound(claim):
            volume = lookup("PersistentVolume", "", spec.get("volumeName") or "")
            if volume is None:
                hints.append(f"claim {name} is bound to volume {spec.get('volumeName')}, which does not exist")
            elif not volume_node_affinity_matches(volume, labels):
                hints.append(f"claim {name} is bound to {spec.get('volumeName')}, usable only where "
                             f"{_affinity_text(volume)}; node has {_node_values(volume, labels)}")
            continue
        selected = ((claim.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected is not None and selected != node.name:
            hints.append(f"claim {name} is already being provisioned for node {selected}")
            continue
        cls_name = claim_class(claim)
        candidates = [v for v in volumes if volume_class(v) == cls_name]
        if find_matching_volume(claim, candidates, labels, {}, True) is not None:
            continue
        storage_class = lookup("StorageClass", "", cls_name) if cls_name else None
        provisioner = (storage_class or {}).get("provisioner") or ""
        if storage_class is not None and provisioner and provisioner != NOT_SUPPORTED_PROVISIONER:
            if not topology_terms_match(storage_class.get("allowedTopologies"), labels):
                hints.append(f"claim {name}: class {cls_name} provisions only where "
                             f"{_allowed_text(storage_class)}; node does not match")
            continue
        hints.append(f"claim {name} ({_size(claim)}, class {cls_name or 'none'}): {_why_no_volume(claim, candidates, labels)}")
    return hints


def _allowed_text(storage_class: Obj) -> str:
    parts = []
    for term in storage_class.get("allowedTopologies") or ():
        parts.append(" and ".join(f"{e.get('key')} In [{', '.join(e.get('values') or [])}]"
                                  for e in term.get("matchLabelExpressions") or ()))
    return " or ".join(parts)


def _why_no_volume(claim: Obj, candidates: list[Obj], labels: Mapping[str, str]) -> str:
    free = [v for v in candidates if (v.get("status") or {}).get("phase") == "Available"
            and not (v.get("spec") or {}).get("claimRef")]
    if not free:
        return "no Available volume of the class is left"
    big = [v for v in free if volume_capacity(v) >= storage_request(claim)]
    if not big:
        return f"no Available volume of the class is big enough ({len(free)} smaller ones left)"
    here = [v for v in big if volume_node_affinity_matches(v, labels)]
    if not here:
        return ("the Available volumes big enough are usable elsewhere only: "
                + "; ".join(f"{(v.get('metadata') or {}).get('name')} where {_affinity_text(v)}" for v in big[:3]))
    if not any(access_modes_fit(claim, v) for v in here):
        return "the volumes usable here do not offer the claim's access modes"
    return "the volumes usable here do not match the claim's selector or volume mode"


def volume_zone_hints(pod: PodInfo, node: NodeInfo, lookup: Lookup) -> list[str]:
    hints = []
    for name, claim in _claims(pod, lookup):
        volume_name = ((claim or {}).get("spec") or {}).get("volumeName")
        volume = lookup("PersistentVolume", "", volume_name) if volume_name else None
        if volume is None:
            continue
        vlabels = (volume.get("metadata") or {}).get("labels") or {}
        for key in ZONE_LABELS:
            if key in vlabels:
                zones = label_zones(str(vlabels[key])) or set()
                have = node.labels.get(key)
                if have not in zones:
                    hints.append(f"claim {name}: volume {volume_name} is in {key}={vlabels[key]}; node has "
                                 + (f"{key}={have}" if have is not None else f"no label {key}"))
    return hints


def volume_restriction_hints(pod: PodInfo, node: NodeInfo, nodes: list[NodeInfo], lookup: Lookup) -> list[str]:
    hints = []
    for name, claim in _claims(pod, lookup):
        if claim is None or "ReadWriteOncePod" not in ((claim.get("spec") or {}).get("accessModes") or ()):
            continue
        key = f"{pod.namespace}/{name}"
        users = [(other.key, info.name) for info in nodes for other in info.pods if key in other.pvc_refs
                 and other.uid != pod.uid]
        for user, where in users:
            hints.append(f"claim {name} is ReadWriteOncePod and used by pod {user} on {where}")
    if not hints:
        hints.append("a disk the pod mounts (GCE PD, EBS, iSCSI or RBD) is already mounted by a pod on this node")
    return hints


def volume_limit_hints(pod: PodInfo, node: NodeInfo, lookup: Lookup) -> list[str]:
    csi_node = lookup("CSINode", "", node.name)
    hints = []
    for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is None:
            continue
        key = csi_attach_limit_key(str(driver.get("name")))
        attached = _attached(node, lookup, str(driver.get("name")))
        hints.append(f"node may attach {count} volume(s) of {driver.get('name')} ({key}); "
                     f"{attached} attached for its pods")
    return hints


def _attached(node: NodeInfo, lookup: Lookup, driver: str) -> int:
    handles = set()
    for other in node.pods:
        for ref in other.pvc_refs:
            ns, _, name = ref.partition("/")
            claim = lookup("PersistentVolumeClaim", ns, name)
            volume_name = ((claim or {}).get("spec") or {}).get("volumeName")
            volume = lookup("PersistentVolume", "", volume_name) if volume_name else None
            csi = ((volume or {}).get("spec") or {}).get("csi") or {}
            if csi.get("driver") == driver:
                handles.add(csi.get("volumeHandle"))
    return len(handles)
