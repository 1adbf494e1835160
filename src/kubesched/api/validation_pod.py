"""Validation of pod specs, pod templates and the scheduling fields inside them."""

from __future__ import annotations

import re
from typing import Any

from kubesched.api.checks import (
    INT32_MAX,
    INT32_MIN,
    LABEL_SELECTOR_OPERATOR_ORDER,
    Errors,
    check_dns_label,
    check_dns_subdomain,
    check_duration,
    check_label_selector,
    check_label_value,
    check_qualified_name,
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
    value_key,
)
from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import parse_quantity
from kubesched.api.usage import USAGE_ANNOTATION, check_usage_annotation

RUN_FOR_ANNOTATION = "kubesched.io/run-for"
EXIT_AFTER_ANNOTATION = "kubesched.io/exit-after"
DURATION_ANNOTATIONS = (RUN_FOR_ANNOTATION, EXIT_AFTER_ANNOTATION)
BARRIER_ANNOTATION = "kubesched.io/barrier"

TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute", "")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NODE_SELECTOR_OPERATOR_ORDER = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
_INT_RE = re.compile(r"[+-]?[0-9]+")


def check_pod_metadata_fields(meta: dict[str, Any], path: str, errs: Errors) -> None:
    """labels, annotations and kubesched's duration annotations of a pod or pod template."""
    check_string_map(meta.get("labels"), key_path(path, "labels"), errs, labels=True)
    annotations = check_string_map(meta.get("annotations"), key_path(path, "annotations"), errs, labels=False)
    for name in DURATION_ANNOTATIONS:
        if annotations is not None and isinstance(annotations.get(name), str):
            check_duration(annotations[name], key_path(key_path(path, "annotations"), name), errs)
    barrier = (annotations or {}).get(BARRIER_ANNOTATION)
    if barrier is not None and not (isinstance(barrier, str) and barrier.isdigit() and int(barrier) > 0):
        errs.append((key_path(key_path(path, "annotations"), BARRIER_ANNOTATION),
                     f"must be a positive number of pods, got {barrier!r}"))
    if annotations is not None and USAGE_ANNOTATION in annotations:
        check_usage_annotation(annotations[USAGE_ANNOTATION], key_path(key_path(path, "annotations"), USAGE_ANNOTATION), errs)


def check_node_selector_term(term: Any, path: str, errs: Errors) -> None:
    d = expect_dict(term, path, errs)
    if d is None:
        return
    exprs_path = key_path(path, "matchExpressions")
    for i, expr in enumerate(expect_list(d.get("matchExpressions"), exprs_path, errs) or []):
        p = idx_path(exprs_path, i)
        check_selector_requirement(expr, p, errs, operators=NODE_SELECTOR_OPERATOR_ORDER)
        if isinstance(expr, dict) and expr.get("operator") in ("Gt", "Lt"):
            values = expr.get("values")
            if not isinstance(values, list) or len(values) != 1:
                errs.append((key_path(p, "values"), f"must have exactly one value for operator {expr['operator']}"))
            elif not (isinstance(values[0], str) and _INT_RE.fullmatch(values[0])):
                errs.append((idx_path(key_path(p, "values"), 0), f'invalid value "{values[0]}": must be an integer'))
    fields_path = key_path(path, "matchFields")
    for i, expr in enumerate(expect_list(d.get("matchFields"), fields_path, errs) or []):
        p = idx_path(fields_path, i)
        fd = expect_dict(expr, p, errs)
        if fd is None:
            continue
        if fd.get("key") != "metadata.name":
            errs.append((key_path(p, "key"), f'unsupported field selector key {fd.get("key")!r}: only "metadata.name"'))
        expect_enum(fd.get("operator"), ("In", "NotIn"), key_path(p, "operator"), errs, required=True)
        values = expect_list(fd.get("values"), key_path(p, "values"), errs)
        if values is None or len(values) != 1 or not isinstance(values[0], str):
            errs.append((key_path(p, "values"), "must have exactly one string value"))


def check_node_selector(value: Any, path: str, errs: Errors) -> None:
    d = expect_dict(value, path, errs)
    if d is None:
        return
    terms_path = key_path(path, "nodeSelectorTerms")
    terms = expect_list(d.get("nodeSelectorTerms"), terms_path, errs, required=True)
    if terms is not None and not terms:
        errs.append((terms_path, "must have at least one node selector term"))
    for i, term in enumerate(terms or []):
        check_node_selector_term(term, idx_path(terms_path, i), errs)


def _check_weight(d: dict[str, Any], path: str, errs: Errors) -> None:
    expect_int(d.get("weight"), key_path(path, "weight"), errs, required=True, minimum=1, maximum=100)


def _check_pod_affinity_term(term: Any, path: str, errs: Errors) -> None:
    d = expect_dict(term, path, errs, required=True)
    if d is None:
        return
    check_label_selector(d.get("labelSelector"), key_path(path, "labelSelector"), errs)
    check_label_selector(d.get("namespaceSelector"), key_path(path, "namespaceSelector"), errs)
    ns_path = key_path(path, "namespaces")
    for i, ns in enumerate(expect_list(d.get("namespaces"), ns_path, errs) or []):
        if expect_str(ns, idx_path(ns_path, i), errs, required=True) is not None:
            check_dns_label(ns, idx_path(ns_path, i), errs)
    key = expect_str(d.get("topologyKey"), key_path(path, "topologyKey"), errs, required=True, non_empty=True)
    if key:
        check_qualified_name(key, key_path(path, "topologyKey"), errs)
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        for i, k in enumerate(expect_list(d.get(field), key_path(path, field), errs) or []):
            expect_str(k, idx_path(key_path(path, field), i), errs, required=True)


@passed_once
def check_affinity(value: Any, path: str, errs: Errors) -> None:
    aff = expect_dict(value, path, errs)
    if aff is None:
        return
    na_path = key_path(path, "nodeAffinity")
    na = expect_dict(aff.get("nodeAffinity"), na_path, errs)
    if na is not None:
        req = "requiredDuringSchedulingIgnoredDuringExecution"
        if na.get(req) is not None:
            check_node_selector(na.get(req), key_path(na_path, req), errs)
        pref_path = key_path(na_path, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, pref in enumerate(expect_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path, errs) or []):
            p = idx_path(pref_path, i)
            pd = expect_dict(pref, p, errs)
            if pd is not None:
                _check_weight(pd, p, errs)
                if expect_dict(pd.get("preference"), key_path(p, "preference"), errs, required=True) is not None:
                    check_node_selector_term(pd["preference"], key_path(p, "preference"), errs)
    for kind in ("podAffinity", "podAntiAffinity"):
        kp = key_path(path, kind)
        pa = expect_dict(aff.get(kind), kp, errs)
        if pa is None:
            continue
        req_path = key_path(kp, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(expect_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path, errs) or []):
            _check_pod_affinity_term(term, idx_path(req_path, i), errs)
        pref_path = key_path(kp, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, pref in enumerate(expect_list(pa.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path, errs) or []):
            p = idx_path(pref_path, i)
            pd = expect_dict(pref, p, errs)
            if pd is not None:
                _check_weight(pd, p, errs)
                _check_pod_affinity_term(pd.get("podAffinityTerm"), key_path(p, "podAffinityTerm"), errs)


@passed_once
def check_tolerations(value: Any, path: str, errs: Errors) -> None:
    for i, tol in enumerate(expect_list(value, path, errs) or []):
        p = idx_path(path, i)
        t = expect_dict(tol, p, errs)
        if t is None:
            continue
        key = expect_str(t.get("key"), key_path(p, "key"), errs) or ""
        if key:
            check_qualified_name(key, key_path(p, "key"), errs)
        op = expect_enum(t.get("operator"), ("Exists", "Equal", ""), key_path(p, "operator"), errs) or "Equal"
        value_ = expect_str(t.get("value"), key_path(p, "value"), errs) or ""
        if not key and op != "Exists":
            errs.append((key_path(p, "operator"), "must be Exists when `key` is empty, which means \"match all values and all keys\""))
        if op == "Exists" and value_:
            errs.append((key_path(p, "value"), "must be empty when `operator` is 'Exists'"))
        if op == "Equal" and value_:
            check_label_value(value_, key_path(p, "value"), errs)
        effect = expect_enum(t.get("effect"), TOLERATION_EFFECTS, key_path(p, "effect"), errs)
        if expect_int(t.get("tolerationSeconds"), key_path(p, "tolerationSeconds"), errs) is not None and effect != "NoExecute":
            errs.append((key_path(p, "effect"), "must be 'NoExecute' when `tolerationSeconds` is set"))


def check_taints(value: Any, path: str, errs: Errors) -> None:
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(expect_list(value, path, errs) or []):
        p = idx_path(path, i)
        t = expect_dict(taint, p, errs)
        if t is None:
            continue
        key = expect_str(t.get("key"), key_path(p, "key"), errs, required=True, non_empty=True)
        if key:
            check_qualified_name(key, key_path(p, "key"), errs)
        val = expect_str(t.get("value"), key_path(p, "value"), errs)
        if val:
            check_label_value(val, key_path(p, "value"), errs)
        effect = expect_enum(t.get("effect"), TAINT_EFFECTS, key_path(p, "effect"), errs, required=True)
        expect_str(t.get("timeAdded"), key_path(p, "timeAdded"), errs)
        if key and effect:
            if (key, effect) in seen:
                errs.append((p, f"taints must be unique by key and effect pair: {key}:{effect} is duplicated"))
            seen.add((key, effect))


#: containers whose fields (name, image, resources, ports, restartPolicy) passed, as in _check_container
_PASSED_CONTAINERS: set[bytes | str] = set()


def _check_container(c: Any, path: str, errs: Errors, names: set[str], *, init: bool) -> None:
    d = expect_dict(c, path, errs)
    if d is None:
        return
    # the fields checked below, apart from the duplicate name (which depends on the other containers)
    key = value_key((init, d.get("name"), d.get("image"), d.get("resources"), d.get("ports"), d.get("restartPolicy")))
    if key in _PASSED_CONTAINERS:
        name = d["name"]
        if name in names:
            errs.append((key_path(path, "name"), f'duplicate container name "{name}"'))
        names.add(name)
        return
    raw_name = d.get("name")
    duplicate = isinstance(raw_name, str) and raw_name != "" and raw_name in names
    before = len(errs)
    _check_container_fields(d, path, errs, names, init=init)
    if len(errs) - before == int(duplicate) and len(_PASSED_CONTAINERS) < 1 << 16:
        _PASSED_CONTAINERS.add(key)


def _check_container_fields(d: dict[str, Any], path: str, errs: Errors, names: set[str], *, init: bool) -> None:
    name = expect_str(d.get("name"), key_path(path, "name"), errs, required=True, non_empty=True)
    if name:
        check_dns_label(name, key_path(path, "name"), errs)
        if name in names:
            errs.append((key_path(path, "name"), f'duplicate container name "{name}"'))
        names.add(name)
    expect_str(d.get("image"), key_path(path, "image"), errs, required=True, non_empty=True)
    res_path = key_path(path, "resources")
    res = expect_dict(d.get("resources"), res_path, errs)
    if res is not None:
        requests = check_resource_list(res.get("requests"), key_path(res_path, "requests"), errs) or {}
        limits = check_resource_list(res.get("limits"), key_path(res_path, "limits"), errs) or {}
        for rname, req in requests.items():
            if rname in limits:
                try:
                    if parse_quantity(req) > parse_quantity(limits[rname]):
                        errs.append((key_path(key_path(res_path, "requests"), rname),
                                     f"must be less than or equal to {rname} limit of {limits[rname]}"))
                except InvalidQuantity:
                    pass  # already reported
    ports_path = key_path(path, "ports")
    for i, port in enumerate(expect_list(d.get("ports"), ports_path, errs) or []):
        p = idx_path(ports_path, i)
        pd = expect_dict(port, p, errs)
        if pd is None:
            continue
        expect_int(pd.get("containerPort"), key_path(p, "containerPort"), errs, required=True, minimum=1, maximum=65535)
        expect_int(pd.get("hostPort"), key_path(p, "hostPort"), errs, minimum=0, maximum=65535)
        expect_enum(pd.get("protocol"), PROTOCOLS, key_path(p, "protocol"), errs)
        expect_str(pd.get("hostIP"), key_path(p, "hostIP"), errs)
        expect_str(pd.get("name"), key_path(p, "name"), errs)
    if d.get("restartPolicy") is not None:
        if init:
            expect_enum(d.get("restartPolicy"), ("Always",), key_path(path, "restartPolicy"), errs)
        else:
            errs.append((key_path(path, "restartPolicy"), "may not be set for non-init containers"))


@passed_once
def _check_spread_constraints(value: Any, path: str, errs: Errors) -> None:
    for i, c in enumerate(expect_list(value, path, errs) or []):
        p = idx_path(path, i)
        d = expect_dict(c, p, errs)
        if d is None:
            continue
        expect_int(d.get("maxSkew"), key_path(p, "maxSkew"), errs, required=True, minimum=1)
        expect_str(d.get("topologyKey"), key_path(p, "topologyKey"), errs, required=True, non_empty=True)
        when = expect_enum(d.get("whenUnsatisfiable"), ("DoNotSchedule", "ScheduleAnyway"),
                           key_path(p, "whenUnsatisfiable"), errs, required=True)
        check_label_selector(d.get("labelSelector"), key_path(p, "labelSelector"), errs)
        if expect_int(d.get("minDomains"), key_path(p, "minDomains"), errs, minimum=1) is not None and when != "DoNotSchedule":
            errs.append((key_path(p, "minDomains"), "can only use minDomains if whenUnsatisfiable=DoNotSchedule"))
        for j, k in enumerate(expect_list(d.get("matchLabelKeys"), key_path(p, "matchLabelKeys"), errs) or []):
            expect_str(k, idx_path(key_path(p, "matchLabelKeys"), j), errs, required=True)
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            expect_enum(d.get(policy), ("Honor", "Ignore"), key_path(p, policy), errs)


def validate_pod_spec(value: Any, path: str, errs: Errors) -> None:
    """A ``PodSpec`` at ``path`` (e.g. ``spec`` or ``spec.template.spec``)."""
    spec = expect_dict(value, path, errs, required=True)
    if spec is None:
        return
    names: set[str] = set()
    containers_path = key_path(path, "containers")
    containers = expect_list(spec.get("containers"), containers_path, errs, required=True)
    if containers is not None and not containers:
        errs.append((containers_path, "must have at least one container"))
    for i, c in enumerate(containers or []):
        _check_container(c, idx_path(containers_path, i), errs, names, init=False)
    init_path = key_path(path, "initContainers")
    for i, c in enumerate(expect_list(spec.get("initContainers"), init_path, errs) or []):
        _check_container(c, idx_path(init_path, i), errs, names, init=True)
    check_resource_list(spec.get("overhead"), key_path(path, "overhead"), errs)
    check_string_map(spec.get("nodeSelector"), key_path(path, "nodeSelector"), errs, labels=True)
    node_name = expect_str(spec.get("nodeName"), key_path(path, "nodeName"), errs)
    if node_name:
        check_dns_subdomain(node_name, key_path(path, "nodeName"), errs)
    check_affinity(spec.get("affinity"), key_path(path, "affinity"), errs)
    check_tolerations(spec.get("tolerations"), key_path(path, "tolerations"), errs)
    expect_int(spec.get("priority"), key_path(path, "priority"), errs, minimum=INT32_MIN, maximum=INT32_MAX)
    expect_str(spec.get("priorityClassName"), key_path(path, "priorityClassName"), errs)
    expect_enum(spec.get("preemptionPolicy"), PREEMPTION_POLICIES, key_path(path, "preemptionPolicy"), errs)
    expect_str(spec.get("schedulerName"), key_path(path, "schedulerName"), errs, non_empty=True)
    expect_enum(spec.get("restartPolicy"), RESTART_POLICIES, key_path(path, "restartPolicy"), errs)
    expect_int(spec.get("terminationGracePeriodSeconds"), key_path(path, "terminationGracePeriodSeconds"), errs, minimum=0)
    expect_bool(spec.get("hostNetwork"), key_path(path, "hostNetwork"), errs)
    gates_path = key_path(path, "schedulingGates")
    gate_names: set[str] = set()
    for i, gate in enumerate(expect_list(spec.get("schedulingGates"), gates_path, errs) or []):
        g = expect_dict(gate, idx_path(gates_path, i), errs)
        if g is None:
            continue
        gname = expect_str(g.get("name"), key_path(idx_path(gates_path, i), "name"), errs, required=True, non_empty=True)
        if gname:
            check_qualified_name(gname, key_path(idx_path(gates_path, i), "name"), errs)
            if gname in gate_names:
                errs.append((key_path(idx_path(gates_path, i), "name"), f'duplicate scheduling gate "{gname}"'))
            gate_names.add(gname)
    _check_spread_constraints(spec.get("topologySpreadConstraints"), key_path(path, "topologySpreadConstraints"), errs)


def validate_pod_template(value: Any, path: str, errs: Errors) -> dict[str, str]:
    """A ``PodTemplateSpec`` at ``path``; returns its labels (empty if none or invalid)."""
    tmpl = expect_dict(value, path, errs, required=True)
    if tmpl is None:
        return {}
    meta = expect_dict(tmpl.get("metadata"), key_path(path, "metadata"), errs)
    labels: dict[str, str] = {}
    if meta is not None:
        check_pod_metadata_fields(meta, key_path(path, "metadata"), errs)
        raw = meta.get("labels")
        if isinstance(raw, dict):
            labels = {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}
    validate_pod_spec(tmpl.get("spec"), key_path(path, "spec"), errs)
    return labels


__all__ = [
    "DURATION_ANNOTATIONS",
    "EXIT_AFTER_ANNOTATION",
    "LABEL_SELECTOR_OPERATOR_ORDER",
    "RUN_FOR_ANNOTATION",
    "check_affinity",
    "check_node_selector",
    "check_node_selector_term",
    "check_pod_metadata_fields",
    "check_taints",
    "check_tolerations",
    "validate_pod_spec",
    "validate_pod_template",
]
