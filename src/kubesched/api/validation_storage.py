"""Validation of the storage kinds (PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
CSIDriver, CSIStorageCapacity) and of a pod's ``volumes``, with the API server's rules for the
fields the scheduler and the volume controllers read."""

from __future__ import annotations

from typing import Any

from kubesched.api.checks import (
    Errors,
    check_dns_label,
    check_dns_subdomain,
    check_label_selector,
    check_quantity,
    check_resource_list,
    expect_bool,
    expect_dict,
    expect_enum,
    expect_int,
    expect_list,
    expect_str,
    idx_path,
    key_path,
)
from kubesched.api.validation_pod import check_node_selector

ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Retain", "Delete", "Recycle")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
PVC_PHASES = ("Pending", "Bound", "Lost")
#: the volume sources a PersistentVolume may name (exactly one)
PV_SOURCES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume",
    "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs",
    "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume",
)


def _check_access_modes(value: Any, path: str, errs: Errors, *, required: bool) -> list[str]:
    modes = expect_list(value, path, errs) or []
    if required and not modes:
        errs.append((path, "at least 1 access mode is required"))
    for i, mode in enumerate(modes):
        expect_enum(mode, ACCESS_MODES, idx_path(path, i), errs)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append((path, "may not use ReadWriteOncePod with other access modes"))
    return [m for m in modes if isinstance(m, str)]


def _check_storage_size(resources: Any, path: str, errs: Errors, *, required: bool) -> None:
    checked = check_resource_list(resources, path, errs)
    if checked is None:
        if required:
            errs.append((key_path(path, "storage"), "required value"))
        return
    if "storage" not in checked:
        if required:
            errs.append((key_path(path, "storage"), "required value"))
        return
    check_quantity(checked["storage"], key_path(path, "storage"), errs)


def validate_persistent_volume(obj: dict[str, Any], path: str, errs: Errors) -> None:
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is None:
        return
    _check_storage_size(spec.get("capacity"), key_path(spath, "capacity"), errs, required=True)
    _check_access_modes(spec.get("accessModes"), key_path(spath, "accessModes"), errs, required=True)
    expect_enum(spec.get("volumeMode"), VOLUME_MODES, key_path(spath, "volumeMode"), errs)
    expect_enum(spec.get("persistentVolumeReclaimPolicy"), RECLAIM_POLICIES,
                key_path(spath, "persistentVolumeReclaimPolicy"), errs)
    sc = expect_str(spec.get("storageClassName"), key_path(spath, "storageClassName"), errs)
    if sc:
        check_dns_subdomain(sc, key_path(spath, "storageClassName"), errs)
    sources = [s for s in PV_SOURCES if spec.get(s) is not None]
    if not sources:
        errs.append((spath, "must specify a volume type"))
    elif len(sources) > 1:
        errs.append((key_path(spath, sources[1]), "may not specify more than 1 volume type"))
    csi = expect_dict(spec.get("csi"), key_path(spath, "csi"), errs)
    if csi is not None:
        expect_str(csi.get("driver"), key_path(key_path(spath, "csi"), "driver"), errs, required=True, non_empty=True)
        expect_str(csi.get("volumeHandle"), key_path(key_path(spath, "csi"), "volumeHandle"), errs,
                   required=True, non_empty=True)
    na_path = key_path(spath, "nodeAffinity")
    affinity = expect_dict(spec.get("nodeAffinity"), na_path, errs)
    if affinity is not None:
        if affinity.get("required") is None:
            errs.append((key_path(na_path, "required"), "must specify required node constraints"))
        else:
            check_node_selector(affinity.get("required"), key_path(na_path, "required"), errs)
    if spec.get("local") is not None and affinity is None:
        errs.append((na_path, "Local volume requires node affinity"))
    ref_path = key_path(spath, "claimRef")
    ref = expect_dict(spec.get("claimRef"), ref_path, errs)
    if ref is not None:
        expect_str(ref.get("name"), key_path(ref_path, "name"), errs, required=True, non_empty=True)
        expect_str(ref.get("namespace"), key_path(ref_path, "namespace"), errs, required=True, non_empty=True)
        expect_str(ref.get("uid"), key_path(ref_path, "uid"), errs)
    status = expect_dict(obj.get("status"), key_path(path, "status"), errs)
    if status is not None:
        expect_enum(status.get("phase"), PV_PHASES, key_path(key_path(path, "status"), "phase"), errs)


def validate_claim_spec(spec: Any, spath: str, errs: Errors) -> None:
    """A ``PersistentVolumeClaimSpec`` (of a claim, a StatefulSet's volumeClaimTemplates or an
    ephemeral volume's template)."""
    d = expect_dict(spec, spath, errs, required=True)
    if d is None:
        return
    _check_access_modes(d.get("accessModes"), key_path(spath, "accessModes"), errs, required=True)
    rpath = key_path(spath, "resources")
    resources = expect_dict(d.get("resources"), rpath, errs)
    _check_storage_size((resources or {}).get("requests"), key_path(rpath, "requests"), errs, required=True)
    check_label_selector(d.get("selector"), key_path(spath, "selector"), errs)
    expect_enum(d.get("volumeMode"), VOLUME_MODES, key_path(spath, "volumeMode"), errs)
    sc = expect_str(d.get("storageClassName"), key_path(spath, "storageClassName"), errs)
    if sc:
        check_dns_subdomain(sc, key_path(spath, "storageClassName"), errs)
    expect_str(d.get("volumeName"), key_path(spath, "volumeName"), errs)


def validate_persistent_volume_claim(obj: dict[str, Any], path: str, errs: Errors) -> None:
    validate_claim_spec(obj.get("spec"), key_path(path, "spec"), errs)
    status = expect_dict(obj.get("status"), key_path(path, "status"), errs)
    if status is not None:
        expect_enum(status.get("phase"), PVC_PHASES, key_path(key_path(path, "status"), "phase"), errs)


def validate_storage_class(obj: dict[str, Any], path: str, errs: Errors) -> None:
    provisioner = expect_str(obj.get("provisioner"), key_path(path, "provisioner"), errs, required=True, non_empty=True)
    if provisioner is not None and len(provisioner) > 63:
        errs.append((key_path(path, "provisioner"), "must be no more than 63 characters"))
    expect_enum(obj.get("volumeBindingMode"), BINDING_MODES, key_path(path, "volumeBindingMode"), errs)
    expect_enum(obj.get("reclaimPolicy"), ("Retain", "Delete"), key_path(path, "reclaimPolicy"), errs)
    expect_bool(obj.get("allowVolumeExpansion"), key_path(path, "allowVolumeExpansion"), errs)
    tpath = key_path(path, "allowedTopologies")
    for i, term in enumerate(expect_list(obj.get("allowedTopologies"), tpath, errs) or []):
        tp = idx_path(tpath, i)
        d = expect_dict(term, tp, errs)
        if d is None:
            continue
        epath = key_path(tp, "matchLabelExpressions")
        exprs = expect_list(d.get("matchLabelExpressions"), epath, errs) or []
        if not exprs:
            errs.append((epath, "must have at least one label selector term"))
        for j, expr in enumerate(exprs):
            ep = idx_path(epath, j)
            e = expect_dict(expr, ep, errs)
            if e is None:
                continue
            expect_str(e.get("key"), key_path(ep, "key"), errs, required=True, non_empty=True)
            values = expect_list(e.get("values"), key_path(ep, "values"), errs) or []
            if not values:
                errs.append((key_path(ep, "values"), "must specify as least one value"))
            for k, v in enumerate(values):
                expect_str(v, idx_path(key_path(ep, "values"), k), errs, required=True)


def validate_csi_node(obj: dict[str, Any], path: str, errs: Errors) -> None:
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is None:
        return
    dpath = key_path(spath, "drivers")
    seen: set[str] = set()
    for i, driver in enumerate(expect_list(spec.get("drivers"), dpath, errs, required=True) or []):
        dp = idx_path(dpath, i)
        d = expect_dict(driver, dp, errs)
        if d is None:
            continue
        name = expect_str(d.get("name"), key_path(dp, "name"), errs, required=True, non_empty=True)
        if name in seen:
            errs.append((key_path(dp, "name"), f'duplicate driver "{name}"'))
        if name:
            seen.add(name)
        expect_str(d.get("nodeID"), key_path(dp, "nodeID"), errs, required=True, non_empty=True)
        for j, key in enumerate(expect_list(d.get("topologyKeys"), key_path(dp, "topologyKeys"), errs) or []):
            expect_str(key, idx_path(key_path(dp, "topologyKeys"), j), errs, required=True, non_empty=True)
        alloc = expect_dict(d.get("allocatable"), key_path(dp, "allocatable"), errs)
        if alloc is not None:
            expect_int(alloc.get("count"), key_path(key_path(dp, "allocatable"), "count"), errs, minimum=0)


def validate_csi_driver(obj: dict[str, Any], path: str, errs: Errors) -> None:
    name = (obj.get("metadata") or {}).get("name")
    if isinstance(name, str) and name:
        check_dns_subdomain(name, key_path(key_path(path, "metadata"), "name"), errs)
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is None:
        return
    for flag in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"):
        expect_bool(spec.get(flag), key_path(spath, flag), errs)


def validate_csi_storage_capacity(obj: dict[str, Any], path: str, errs: Errors) -> None:
    sc = expect_str(obj.get("storageClassName"), key_path(path, "storageClassName"), errs, required=True, non_empty=True)
    if sc:
        check_dns_subdomain(sc, key_path(path, "storageClassName"), errs)
    check_label_selector(obj.get("nodeTopology"), key_path(path, "nodeTopology"), errs)
    for field in ("capacity", "maximumVolumeSize"):
        if obj.get(field) is not None:
            check_quantity(obj[field], key_path(path, field), errs)


def check_pod_volumes(value: Any, path: str, errs: Errors) -> None:
    """A pod's ``volumes``: unique DNS-label names; a claim volume names its claim; an ephemeral
    volume carries a claim template."""
    names: set[str] = set()
    for i, volume in enumerate(expect_list(value, path, errs) or []):
        vp = idx_path(path, i)
        v = expect_dict(volume, vp, errs)
        if v is None:
            continue
        name = expect_str(v.get("name"), key_path(vp, "name"), errs, required=True, non_empty=True)
        if name:
            check_dns_label(name, key_path(vp, "name"), errs)
            if name in names:
                errs.append((key_path(vp, "name"), f'duplicate volume name "{name}"'))
            names.add(name)
        cpath = key_path(vp, "persistentVolumeClaim")
        claim = expect_dict(v.get("persistentVolumeClaim"), cpath, errs)
        if claim is not None:
            expect_str(claim.get("claimName"), key_path(cpath, "claimName"), errs, required=True, non_empty=True)
            expect_bool(claim.get("readOnly"), key_path(cpath, "readOnly"), errs)
        epath = key_path(vp, "ephemeral")
        ephemeral = expect_dict(v.get("ephemeral"), epath, errs)
        if ephemeral is not None:
            tpath = key_path(epath, "volumeClaimTemplate")
            template = expect_dict(ephemeral.get("volumeClaimTemplate"), tpath, errs, required=True)
            if template is not None:
                validate_claim_spec(template.get("spec"), key_path(tpath, "spec"), errs)


def check_claim_templates(value: Any, path: str, errs: Errors) -> None:
    """A StatefulSet's ``volumeClaimTemplates``: named claims."""
    for i, template in enumerate(expect_list(value, path, errs) or []):
        tp = idx_path(path, i)
        t = expect_dict(template, tp, errs)
        if t is None:
            continue
        meta = expect_dict(t.get("metadata"), key_path(tp, "metadata"), errs, required=True) or {}
        name = expect_str(meta.get("name"), key_path(key_path(tp, "metadata"), "name"), errs, required=True,
                          non_empty=True)
        if name:
            check_dns_subdomain(name, key_path(key_path(tp, "metadata"), "name"), errs)
        validate_claim_spec(t.get("spec"), key_path(tp, "spec"), errs)
