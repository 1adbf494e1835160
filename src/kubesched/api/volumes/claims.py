"""Claims and the volumes that serve them: the annotations the PV controller and the scheduler
write, a claim's and a volume's class, size and binding state, the claims a pod uses (generic
ephemeral volumes included), and :func:`find_matching_volume`, the one search for the volume a
claim gets (upstream ``k8s.io/component-helpers/storage/volume/pv_helpers.go`` and
``storage/ephemeral``).

Everything here reads plain API objects and changes none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import parse_quantity
from kubesched.api.selectors import LabelSelector
from kubesched.api.volumes.topology import volume_node_affinity_matches
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj

#: on a claim: the binding is complete (set by the PV controller)
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: on a claim or a volume: the PV controller made the binding (not the user)
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: on a claim: the node the scheduler chose, for delayed binding and topology-aware provisioning
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: on a claim: the provisioner asked to create its volume
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
#: on a volume: the provisioner that created it
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
#: the beta annotation that, when present, wins over ``storageClassName``
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
#: a StorageClass provisioner that means "no dynamic provisioning" (local volumes)
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's ``metadata``, empty when it has none."""
    return obj.get("metadata") or {}


def claim_class(claim: Mapping[str, Any]) -> str:
    """The claim's storage class: the beta annotation first, then ``spec.storageClassName``; ''
    for none (``GetPersistentVolumeClaimClass``)."""
    ann = _annotations(claim)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def volume_class(volume: Mapping[str, Any]) -> str:
    ann = _annotations(volume)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str((volume.get("spec") or {}).get("storageClassName") or "")


def ephemeral_claim_name(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    """The claim a generic ephemeral volume gets: ``<pod name>-<volume name>``."""
    return f"{meta_of(pod).get('name', '')}-{volume.get('name', '')}"


def pod_claims(pod: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """``(claim name, is ephemeral)`` of each volume of the pod backed by a claim, in volume order."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping):
            yield str(pvc.get("claimName") or ""), False
        elif isinstance(volume.get("ephemeral"), Mapping):
            yield ephemeral_claim_name(pod, volume), True


def pod_pvc_refs(pod: Mapping[str, Any]) -> list[str]:
    """``namespace/claim`` of each ``persistentVolumeClaim`` volume (not ephemeral ones): what the
    scheduler's snapshot counts as claims in use (``PVCRefCounts``)."""
    ns = meta_of(pod).get("namespace") or DEFAULT_NAMESPACE
    return [f"{ns}/{name}" for name, ephemeral in pod_claims(pod) if not ephemeral]


def ephemeral_owner_error(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    """``ephemeral.VolumeIsForPod``: an ephemeral volume's claim must be controlled by the pod."""
    uid = meta_of(pod).get("uid")
    for ref in meta_of(claim).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid") == uid:
            return None
    return (f'PVC {meta_of(claim).get("namespace") or DEFAULT_NAMESPACE}/{meta_of(claim).get("name")} '
            f'was not created for pod {meta_of(pod).get("namespace") or DEFAULT_NAMESPACE}/'
            f'{meta_of(pod).get("name")} (pod is not owner)')


def storage_request(claim: Mapping[str, Any]) -> Fraction:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    value = requests.get("storage")
    return parse_quantity(value) if value is not None else Fraction(0)


def volume_capacity(volume: Mapping[str, Any]) -> Fraction:
    value = ((volume.get("spec") or {}).get("capacity") or {}).get("storage")
    return parse_quantity(value) if value is not None else Fraction(0)


def is_claim_fully_bound(claim: Mapping[str, Any]) -> bool:
    """Bound to a volume and the binding completed (``isPVCFullyBound``)."""
    return bool((claim.get("spec") or {}).get("volumeName")) and ANN_BIND_COMPLETED in _annotations(claim)


def is_volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    meta = meta_of(claim)
    if ref.get("name") != meta.get("name") or (ref.get("namespace") or "") != (meta.get("namespace") or DEFAULT_NAMESPACE):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def class_binding_mode(storage_class: Mapping[str, Any] | None) -> str | None:
    """``volumeBindingMode`` as the API server defaults it (Immediate)."""
    if storage_class is None:
        return None
    return str(storage_class.get("volumeBindingMode") or IMMEDIATE)



def volume_mode(spec: Mapping[str, Any]) -> str:
    """A claim's or a volume's ``volumeMode`` from its ``spec``, as the API server defaults it."""
    return str(spec.get("volumeMode") or "Filesystem")


def access_modes_fit(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """Every access mode the claim asks for is offered by the volume (``CheckAccessModes``)."""
    offered = set((volume.get("spec") or {}).get("accessModes") or ())
    return all(mode in offered for mode in (claim.get("spec") or {}).get("accessModes") or ())


def find_matching_volume(
    claim: Obj,
    volumes: Iterable[Obj],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, Any],
    delay_binding: bool,
) -> Obj | None:
    """``FindMatchingVolume``: the volume pre-bound to the claim if there is one (None when it does
    not suit ``node_labels``), else the smallest Available volume of the claim's class that is big
    enough, of the same volume mode, selected by the claim's selector, not being deleted, suiting
    the node (when one is given) and, with a node, offering the claim's access modes. Without a
    node, delayed-binding claims only take pre-bound volumes. ``volumes`` are taken in the order
    given (ties keep the first)."""
    spec = claim.get("spec") or {}
    wanted = storage_request(claim)
    wanted_class = claim_class(claim)
    selector = LabelSelector.from_dict(spec["selector"]) if spec.get("selector") is not None else None
    smallest: Obj | None = None
    smallest_size = Fraction(0)
    for volume in volumes:
        name = meta_of(volume).get("name")
        if name in excluded:
            continue
        vspec = volume.get("spec") or {}
        bound_here = is_volume_bound_to_claim(volume, claim)
        if vspec.get("claimRef") and not bound_here:
            continue
        size = volume_capacity(volume)
        if size < wanted:
            continue
        if volume_mode(spec) != volume_mode(vspec):
            continue
        if meta_of(volume).get("deletionTimestamp"):
            continue
        fits_node = node_labels is None or volume_node_affinity_matches(volume, node_labels)
        if bound_here:
            return volume if fits_node else None
        if node_labels is None and delay_binding:
            continue
        if (volume.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(meta_of(volume).get("labels") or {}):
            continue
        if volume_class(volume) != wanted_class:
            continue
        if not fits_node:
            continue
        if node_labels is not None and not access_modes_fit(claim, volume):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = volume, size
    return smallest

