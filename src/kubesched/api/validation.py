"""Structural validation of the objects a scenario or manifest may contain.

:func:`validate_object` returns ``(field path, message)`` pairs; an empty list means valid.  Only
what would make the API server refuse the object as malformed (422) is checked here — admission
decisions (unknown PriorityClass, quota, reserved class names…) are the simulator's business.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from kubesched.api.checks import (
    INT32_MAX,
    INT32_MIN,
    LABEL_SELECTOR_OPERATOR_ORDER,
    Errors,
    check_dns_label,
    check_dns_subdomain,
    check_duration,
    check_int_or_percent,
    check_label_selector,
    check_resource_list,
    check_selector_requirement,
    check_string_map,
    expect_bool,
    expect_dict,
    expect_enum,
    expect_int,
    expect_list,
    expect_str,
    idx_path,
    key_path,
    passed_once,
    type_name,
)
from kubesched.api.known_fields import unknown_configuration_fields
from kubesched.api.racing import check_schedulers
from kubesched.api.selectors import LabelSelector
from kubesched.api.validation_cluster import validate_cluster_config
from kubesched.api.validation_pod import (
    check_pod_metadata_fields,
    check_taints,
    check_tolerations,
    validate_pod_spec,
    validate_pod_template,
)
from kubesched.api.validation_storage import (
    check_claim_templates,
    check_pod_volumes,
    validate_csi_driver,
    validate_csi_node,
    validate_csi_storage_capacity,
    validate_persistent_volume,
    validate_persistent_volume_claim,
    validate_storage_class,
)
from kubesched.k8s.kinds import MANIFEST_KINDS
from kubesched.k8s.objects import DEFAULT_NAMESPACE

SCENARIO_KIND = "Scenario"
SCHEDULER_CONFIGURATION_KIND = "KubeSchedulerConfiguration"
QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                "CrossNamespacePodAffinity")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"})
_SCENARIO_SPEC_FIELDS = frozenset({"seed", "until", "schedulerConfiguration", "schedulers", "steps", "cluster"})
_SCENARIO_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec"})
_STEP_ACTIONS = ("create", "delete", "patch", "drain")
#: a drain step's fields (kubectl drain's flags, camelCased)
DRAIN_FIELDS = ("node", "force", "ignoreDaemonSets", "deleteEmptyDirData", "gracePeriodSeconds", "timeout")


def object_ref(obj: Any) -> str:
    """``"Pod default/web"``, ``"Node n1"``: kind plus (namespace/)name, for messages."""
    if not isinstance(obj, dict):
        return ""
    kind = _as_str(obj.get("kind")) or "object"
    meta = _as_dict(obj.get("metadata"))
    name = _as_str(meta.get("name"))
    if not name:
        return kind
    known = MANIFEST_KINDS.get(kind)
    if known is not None and not known.namespaced:
        return f"{kind} {name}"
    ns = _as_str(meta.get("namespace")) or DEFAULT_NAMESPACE
    return f"{kind} {ns}/{name}"


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def validate_object(obj: Any, path: str = "") -> list[tuple[str, str]]:
    """Validate one object; ``path`` prefixes every reported field path (used for objects nested in
    a Scenario step)."""
    errs: Errors = []
    if not isinstance(obj, dict):
        errs.append((path, f"an object must be a mapping, got {type_name(obj)}"))
        return errs
    kind = expect_str(obj.get("kind"), key_path(path, "kind"), errs, required=True, non_empty=True)
    api_version = expect_str(obj.get("apiVersion"), key_path(path, "apiVersion"), errs, required=True, non_empty=True)
    if kind is None:
        return errs
    if kind == SCHEDULER_CONFIGURATION_KIND:
        check_scheduler_configuration(obj, path, errs)
        return errs
    known = MANIFEST_KINDS.get(kind)
    if known is None:
        errs.append((key_path(path, "kind"),
                     f'unsupported kind "{kind}": supported kinds are {", ".join(MANIFEST_KINDS)}'))
        return errs
    if api_version is not None and api_version != known.api_version:
        errs.append((key_path(path, "apiVersion"),
                     f'kind {kind} is served by apiVersion "{known.api_version}", not "{api_version}"'))
    _check_metadata(obj, kind, known.namespaced, path, errs)
    _VALIDATORS[kind](obj, path, errs)
    return errs


def _check_metadata(obj: dict[str, Any], kind: str, namespaced: bool, path: str, errs: Errors) -> None:
    mpath = key_path(path, "metadata")
    meta = expect_dict(obj.get("metadata"), mpath, errs, required=kind != SCENARIO_KIND)
    if meta is None:
        return
    npath = key_path(mpath, "name")
    name = expect_str(meta.get("name"), npath, errs)
    if name is None and meta.get("name") is None and kind != SCENARIO_KIND:
        hint = " (generateName is not supported: give every object a name)" if meta.get("generateName") else ""
        errs.append((npath, "required value" + hint))
    elif name is not None:
        if kind == "Namespace":
            check_dns_label(name, npath, errs)
        elif kind != SCENARIO_KIND:
            check_dns_subdomain(name, npath, errs)
    ns = expect_str(meta.get("namespace"), key_path(mpath, "namespace"), errs)
    if ns:
        if namespaced:
            check_dns_label(ns, key_path(mpath, "namespace"), errs)
        elif kind != SCENARIO_KIND:
            errs.append((key_path(mpath, "namespace"), f"must not be set: {kind} is not namespaced"))
    if kind == "Pod":
        check_pod_metadata_fields(meta, mpath, errs)
    else:
        check_string_map(meta.get("labels"), key_path(mpath, "labels"), errs, labels=True)
        check_string_map(meta.get("annotations"), key_path(mpath, "annotations"), errs, labels=False)


def _validate_node(obj: dict[str, Any], path: str, errs: Errors) -> None:
    spec = expect_dict(obj.get("spec"), key_path(path, "spec"), errs)
    if spec is not None:
        expect_bool(spec.get("unschedulable"), key_path(key_path(path, "spec"), "unschedulable"), errs)
        check_taints(spec.get("taints"), key_path(key_path(path, "spec"), "taints"), errs)
    spath = key_path(path, "status")
    status = expect_dict(obj.get("status"), spath, errs)
    allocatable = capacity = None
    if status is not None:
        allocatable = check_resource_list(status.get("allocatable"), key_path(spath, "allocatable"), errs)
        capacity = check_resource_list(status.get("capacity"), key_path(spath, "capacity"), errs)
        ipath = key_path(spath, "images")
        for i, image in enumerate(expect_list(status.get("images"), ipath, errs) or []):
            img = expect_dict(image, idx_path(ipath, i), errs)
            if img is not None:
                names = expect_list(img.get("names"), key_path(idx_path(ipath, i), "names"), errs) or []
                for j, n in enumerate(names):
                    expect_str(n, idx_path(key_path(idx_path(ipath, i), "names"), j), errs, required=True)
                expect_int(img.get("sizeBytes"), key_path(idx_path(ipath, i), "sizeBytes"), errs, minimum=0)
        _check_conditions(status.get("conditions"), key_path(spath, "conditions"), errs)
    if not allocatable and not capacity and (status is not None or obj.get("status") is None):
        errs.append((spath, "a Node needs status.allocatable or status.capacity"))


@passed_once  # a dump's pods repeat the same few hundred lists of conditions (their times alike)
def _check_conditions(value: Any, path: str, errs: Errors) -> None:
    for i, cond in enumerate(expect_list(value, path, errs) or []):
        c = expect_dict(cond, idx_path(path, i), errs)
        if c is not None:
            expect_str(c.get("type"), key_path(idx_path(path, i), "type"), errs, required=True, non_empty=True)
            expect_str(c.get("status"), key_path(idx_path(path, i), "status"), errs, required=True)


def _validate_pod(obj: dict[str, Any], path: str, errs: Errors) -> None:
    validate_pod_spec(obj.get("spec"), key_path(path, "spec"), errs)
    check_pod_volumes(_as_dict(obj.get("spec")).get("volumes"), key_path(key_path(path, "spec"), "volumes"), errs)
    spath = key_path(path, "status")
    status = expect_dict(obj.get("status"), spath, errs)
    if status is not None:
        expect_enum(status.get("phase"), POD_PHASES, key_path(spath, "phase"), errs)
        expect_str(status.get("startTime"), key_path(spath, "startTime"), errs)
        expect_str(status.get("nominatedNodeName"), key_path(spath, "nominatedNodeName"), errs)
        _check_conditions(status.get("conditions"), key_path(spath, "conditions"), errs)


def _validate_namespace(obj: dict[str, Any], path: str, errs: Errors) -> None:
    expect_dict(obj.get("spec"), key_path(path, "spec"), errs)


def _validate_resource_quota(obj: dict[str, Any], path: str, errs: Errors) -> None:
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is None:
        return
    check_resource_list(spec.get("hard"), key_path(spath, "hard"), errs)
    scopes_path = key_path(spath, "scopes")
    for i, scope in enumerate(expect_list(spec.get("scopes"), scopes_path, errs) or []):
        expect_enum(scope, QUOTA_SCOPES, idx_path(scopes_path, i), errs, required=True)
    sel_path = key_path(spath, "scopeSelector")
    sel = expect_dict(spec.get("scopeSelector"), sel_path, errs)
    if sel is not None:
        exprs_path = key_path(sel_path, "matchExpressions")
        for i, expr in enumerate(expect_list(sel.get("matchExpressions"), exprs_path, errs) or []):
            p = idx_path(exprs_path, i)
            check_selector_requirement(expr, p, errs, operators=LABEL_SELECTOR_OPERATOR_ORDER, key_field="scopeName")
            if isinstance(expr, dict) and isinstance(expr.get("scopeName"), str):
                expect_enum(expr["scopeName"], QUOTA_SCOPES, key_path(p, "scopeName"), errs)


def _validate_priority_class(obj: dict[str, Any], path: str, errs: Errors) -> None:
    expect_int(obj.get("value"), key_path(path, "value"), errs, required=True, minimum=INT32_MIN, maximum=INT32_MAX)
    expect_bool(obj.get("globalDefault"), key_path(path, "globalDefault"), errs)
    expect_str(obj.get("description"), key_path(path, "description"), errs)
    expect_enum(obj.get("preemptionPolicy"), ("PreemptLowerPriority", "Never"), key_path(path, "preemptionPolicy"), errs)


def _validate_pdb(obj: dict[str, Any], path: str, errs: Errors) -> None:
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is not None:
        check_label_selector(spec.get("selector"), key_path(spath, "selector"), errs)
        present = [f for f in ("minAvailable", "maxUnavailable") if spec.get(f) is not None]
        if len(present) != 1:
            errs.append((spath, "exactly one of minAvailable and maxUnavailable must be set"))
        for f in present:
            check_int_or_percent(spec[f], key_path(spath, f), errs)
        expect_enum(spec.get("unhealthyPodEvictionPolicy"), ("IfHealthyBudget", "AlwaysAllow"),
                    key_path(spath, "unhealthyPodEvictionPolicy"), errs)
    stpath = key_path(path, "status")
    status = expect_dict(obj.get("status"), stpath, errs)
    if status is not None:
        for f in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            expect_int(status.get(f), key_path(stpath, f), errs, minimum=0)
        check_string_map(status.get("disruptedPods"), key_path(stpath, "disruptedPods"), errs, labels=False)


def _validate_workload(obj: dict[str, Any], path: str, errs: Errors) -> None:
    kind = obj["kind"]
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is None:
        return
    if kind != "DaemonSet":
        field = "parallelism" if kind == "Job" else "replicas"
        expect_int(spec.get(field), key_path(spath, field), errs, minimum=0)
    sel_path = key_path(spath, "selector")
    selector = check_label_selector(spec.get("selector"), sel_path, errs, required=kind != "Job")
    if selector is not None and kind != "Job" and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append((sel_path, "empty selector is invalid for " + kind))
    tpath = key_path(spath, "template")
    labels = validate_pod_template(spec.get("template"), tpath, errs)
    pod_spec = _as_dict(_as_dict(spec.get("template")).get("spec"))
    check_pod_volumes(pod_spec.get("volumes"), key_path(key_path(tpath, "spec"), "volumes"), errs)
    restart_path = key_path(key_path(tpath, "spec"), "restartPolicy")
    if kind == "Job":
        if pod_spec.get("restartPolicy") not in ("OnFailure", "Never"):
            errs.append((restart_path, "required value: a Job's pods must use restartPolicy OnFailure or Never"))
        for f in ("completions", "backoffLimit", "ttlSecondsAfterFinished"):
            expect_int(spec.get(f), key_path(spath, f), errs, minimum=0)
        expect_int(spec.get("activeDeadlineSeconds"), key_path(spath, "activeDeadlineSeconds"), errs, minimum=1)
        expect_enum(spec.get("completionMode"), ("NonIndexed", "Indexed"), key_path(spath, "completionMode"), errs)
        expect_bool(spec.get("suspend"), key_path(spath, "suspend"), errs)
    elif pod_spec.get("restartPolicy") not in (None, "Always"):
        errs.append((restart_path, f'unsupported value "{pod_spec.get("restartPolicy")}": {kind} pods must use Always'))
    if kind == "StatefulSet":
        expect_str(spec.get("serviceName"), key_path(spath, "serviceName"), errs)
        expect_enum(spec.get("podManagementPolicy"), ("OrderedReady", "Parallel"),
                    key_path(spath, "podManagementPolicy"), errs)
        check_claim_templates(spec.get("volumeClaimTemplates"), key_path(spath, "volumeClaimTemplates"), errs)
    if selector is not None and isinstance(spec.get("template"), dict):
        try:
            parsed = LabelSelector.from_dict(selector)
        except ValueError:
            return  # reported above
        if not parsed.is_empty and not parsed.matches(labels):
            errs.append((key_path(key_path(tpath, "metadata"), "labels"), "`selector` does not match template `labels`"))


def _validate_nrt(obj: dict[str, Any], path: str, errs: Errors) -> None:
    # lenient: only what is present is checked, and only for shape and quantities
    for i, pol in enumerate(expect_list(obj.get("topologyPolicies"), key_path(path, "topologyPolicies"), errs) or []):
        expect_str(pol, idx_path(key_path(path, "topologyPolicies"), i), errs, required=True)
    zpath = key_path(path, "zones")
    for i, zone in enumerate(expect_list(obj.get("zones"), zpath, errs) or []):
        zp = idx_path(zpath, i)
        z = expect_dict(zone, zp, errs)
        if z is None:
            continue
        expect_str(z.get("name"), key_path(zp, "name"), errs, required=True, non_empty=True)
        expect_str(z.get("type"), key_path(zp, "type"), errs)
        rpath = key_path(zp, "resources")
        for j, res in enumerate(expect_list(z.get("resources"), rpath, errs) or []):
            rp = idx_path(rpath, j)
            r = expect_dict(res, rp, errs)
            if r is None:
                continue
            expect_str(r.get("name"), key_path(rp, "name"), errs, required=True, non_empty=True)
            amounts = {f: r[f] for f in ("capacity", "allocatable", "available") if f in r}
            check_resource_list(amounts, rp, errs)
        cpath = key_path(zp, "costs")
        for j, cost in enumerate(expect_list(z.get("costs"), cpath, errs) or []):
            c = expect_dict(cost, idx_path(cpath, j), errs)
            if c is not None:
                expect_str(c.get("name"), key_path(idx_path(cpath, j), "name"), errs, required=True)
                expect_int(c.get("value"), key_path(idx_path(cpath, j), "value"), errs, required=True)


def _check_step_target(step: dict[str, Any], action: str, path: str, errs: Errors) -> dict[str, Any] | None:
    target = expect_dict(step.get(action), path, errs)
    if target is None:
        return None
    kind = expect_str(target.get("kind"), key_path(path, "kind"), errs, required=True, non_empty=True)
    if kind is not None and (kind not in MANIFEST_KINDS or kind == SCENARIO_KIND):
        errs.append((key_path(path, "kind"), f'unsupported kind "{kind}"'))
    expect_str(target.get("name"), key_path(path, "name"), errs, required=True, non_empty=True)
    ns = expect_str(target.get("namespace"), key_path(path, "namespace"), errs)
    if ns:
        check_dns_label(ns, key_path(path, "namespace"), errs)
    return target


def _validate_step(step: Any, path: str, errs: Errors) -> None:
    s = expect_dict(step, path, errs)
    if s is None:
        return
    check_duration(s.get("at"), key_path(path, "at"), errs, required=True)
    actions = [a for a in _STEP_ACTIONS if a in s]
    if len(actions) != 1:
        errs.append((path, "a step needs exactly one of create, delete, patch, drain"
                     + (f" (got {', '.join(actions)})" if actions else "")))
    for extra in sorted(set(s) - {"at", *_STEP_ACTIONS}, key=str):
        errs.append((key_path(path, str(extra)), "unknown field in a step"))
    if "create" in s:
        cpath = key_path(path, "create")
        created = s["create"]
        if isinstance(created, dict) and created.get("kind") in (SCENARIO_KIND, "List", SCHEDULER_CONFIGURATION_KIND):
            errs.append((key_path(cpath, "kind"), f"a step cannot create a {created.get('kind')}"))
        else:
            errs.extend(validate_object(created, cpath))
    if "delete" in s:
        dpath = key_path(path, "delete")
        target = _check_step_target(s, "delete", dpath, errs)
        if target is not None:
            expect_int(target.get("gracePeriodSeconds"), key_path(dpath, "gracePeriodSeconds"), errs, minimum=0)
    if "drain" in s:
        _validate_drain(s["drain"], key_path(path, "drain"), errs)
    if "patch" in s:
        ppath = key_path(path, "patch")
        target = _check_step_target(s, "patch", ppath, errs)
        if target is not None:
            expect_dict(target.get("merge"), key_path(ppath, "merge"), errs, required=True)


def _validate_drain(value: Any, path: str, errs: Errors) -> None:
    drain = expect_dict(value, path, errs)
    if drain is None:
        return
    for extra in sorted(set(drain) - set(DRAIN_FIELDS), key=str):
        errs.append((key_path(path, str(extra)), f"unknown field in a drain (known: {', '.join(DRAIN_FIELDS)})"))
    expect_str(drain.get("node"), key_path(path, "node"), errs, required=True, non_empty=True)
    for flag in ("force", "ignoreDaemonSets", "deleteEmptyDirData"):
        expect_bool(drain.get(flag), key_path(path, flag), errs)
    expect_int(drain.get("gracePeriodSeconds"), key_path(path, "gracePeriodSeconds"), errs, minimum=0)
    check_duration(drain.get("timeout"), key_path(path, "timeout"), errs)


def _validate_scenario(obj: dict[str, Any], path: str, errs: Errors) -> None:
    for extra in sorted(set(obj) - _SCENARIO_FIELDS, key=str):
        errs.append((key_path(path, str(extra)), "unknown field in a Scenario"))
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs)
    if spec is None:
        return
    for extra in sorted(set(spec) - _SCENARIO_SPEC_FIELDS, key=str):
        errs.append((key_path(spath, str(extra)), "unknown field in a Scenario spec"))
    expect_int(spec.get("seed"), key_path(spath, "seed"), errs, minimum=0)
    check_duration(spec.get("until"), key_path(spath, "until"), errs)
    cpath = key_path(spath, "schedulerConfiguration")
    config = expect_dict(spec.get("schedulerConfiguration"), cpath, errs)
    if config is not None:
        check_scheduler_configuration(config, cpath, errs)
    if spec.get("schedulers") is not None:
        check_schedulers(spec["schedulers"], key_path(spath, "schedulers"), errs, check_scheduler_configuration)
        if config is not None:
            errs.append((key_path(spath, "schedulers"), "spec.schedulers configures each scheduler; "
                         "spec.schedulerConfiguration cannot be given too (put it in a scheduler's configuration)"))
    if spec.get("cluster") is not None:
        validate_cluster_config(spec["cluster"], key_path(spath, "cluster"), errs)
    steps_path = key_path(spath, "steps")
    for i, step in enumerate(expect_list(spec.get("steps"), steps_path, errs) or []):
        _validate_step(step, idx_path(steps_path, i), errs)


def check_scheduler_configuration(config: dict[str, Any], path: str, errs: Errors) -> None:
    """The shape of a KubeSchedulerConfiguration (a Scenario's ``spec.schedulerConfiguration`` or a
    document of its own): its kind, and no unknown field (kube-scheduler decodes it strictly). The
    scheduler checks the values when it is built from it."""
    if config.get("kind") != SCHEDULER_CONFIGURATION_KIND:
        errs.append((key_path(path, "kind"), f'must be "{SCHEDULER_CONFIGURATION_KIND}"'))
    expect_str(config.get("apiVersion"), key_path(path, "apiVersion"), errs)
    for field in unknown_configuration_fields(config):
        errs.append((f"{path}.{field}" if path else field, "unknown field"))


def _validate_service(obj: dict[str, Any], path: str, errs: Errors) -> None:
    """Services and ReplicationControllers matter to the scheduler only through their selector
    (PodTopologySpread's system default constraints)."""
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs)
    if spec is None:
        return
    selector = expect_dict(spec.get("selector"), key_path(spath, "selector"), errs)
    for key, value in (selector or {}).items():
        expect_str(value, key_path(key_path(spath, "selector"), str(key)), errs)


def _validate_runtime_class(obj: dict[str, Any], path: str, errs: Errors) -> None:
    """node.k8s.io/v1: a handler, the pod overhead it adds and where its pods may run."""
    handler = expect_str(obj.get("handler"), key_path(path, "handler"), errs, required=True, non_empty=True)
    if handler is not None:
        check_dns_label(handler, key_path(path, "handler"), errs)
    overhead = expect_dict(obj.get("overhead"), key_path(path, "overhead"), errs)
    if overhead is not None:
        fixed = expect_dict(overhead.get("podFixed"), key_path(key_path(path, "overhead"), "podFixed"), errs)
        check_resource_list(fixed, key_path(key_path(path, "overhead"), "podFixed"), errs)
    spath = key_path(path, "scheduling")
    scheduling = expect_dict(obj.get("scheduling"), spath, errs)
    if scheduling is not None:
        selector = expect_dict(scheduling.get("nodeSelector"), key_path(spath, "nodeSelector"), errs)
        for key, value in (selector or {}).items():
            expect_str(value, key_path(key_path(spath, "nodeSelector"), str(key)), errs)
        check_tolerations(scheduling.get("tolerations"), key_path(spath, "tolerations"), errs)


def _validate_pod_group(obj: dict[str, Any], path: str, errs: Errors) -> None:
    """scheduling.x-k8s.io/v1alpha1 (scheduler-plugins' Coscheduling): a gang of at least
    ``minMember`` pods, optionally with the resources it needs in all and its own Permit timeout."""
    spath = key_path(path, "spec")
    spec = expect_dict(obj.get("spec"), spath, errs, required=True)
    if spec is None:
        return
    expect_int(spec.get("minMember"), key_path(spath, "minMember"), errs, minimum=0, maximum=INT32_MAX)
    check_resource_list(spec.get("minResources"), key_path(spath, "minResources"), errs)
    expect_int(spec.get("scheduleTimeoutSeconds"), key_path(spath, "scheduleTimeoutSeconds"), errs, minimum=0,
               maximum=INT32_MAX)


_VALIDATORS = MappingProxyType(
    {
        "RuntimeClass": _validate_runtime_class,
        "PersistentVolume": validate_persistent_volume,
        "PersistentVolumeClaim": validate_persistent_volume_claim,
        "StorageClass": validate_storage_class,
        "CSINode": validate_csi_node,
        "CSIDriver": validate_csi_driver,
        "CSIStorageCapacity": validate_csi_storage_capacity,
        "PodGroup": _validate_pod_group,
        "Service": _validate_service,
        "ReplicationController": _validate_service,
        "Node": _validate_node,
        "Pod": _validate_pod,
        "Namespace": _validate_namespace,
        "ResourceQuota": _validate_resource_quota,
        "PriorityClass": _validate_priority_class,
        "PodDisruptionBudget": _validate_pdb,
        "Deployment": _validate_workload,
        "ReplicaSet": _validate_workload,
        "StatefulSet": _validate_workload,
        "DaemonSet": _validate_workload,
        "Job": _validate_workload,
        "NodeResourceTopology": _validate_nrt,
        "Scenario": _validate_scenario,
    }
)
