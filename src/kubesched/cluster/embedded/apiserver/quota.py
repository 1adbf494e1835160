"""ResourceQuota arithmetic for pods (``pkg/quota/v1/evaluator/core/pods.go``).

The behaviour follows the API server's quota admission and the pod quota evaluator:

- a quota applies to a pod iff its ``status.hard`` (``spec.hard`` until the status exists) names at
  least one resource the pod evaluator tracks, and **all** its scopes and ``scopeSelector``
  expressions match the pod;
- a pod's usage is ``count/pods`` = 1 always, plus (unless the pod is terminal or past its deletion
  grace) ``pods`` = 1 and its compute requests/limits under the quota names (``cpu`` and
  ``requests.cpu`` from the requests, ``limits.cpu`` from the limits, the same for memory and
  ephemeral-storage, ``hugepages-*`` / ``requests.hugepages-*``, ``requests.<extended>``);
- a quota tracking cpu/memory (requests or limits) requires every container to state them
  ("must specify ...");
- over quota: ``exceeded quota: <name>, requested: r=q,..., used: ..., limited: ...``;
- the apiserver's ``limitedResources`` configuration: consuming a resource whose name contains a
  ``matchContains`` string, or matching a ``matchScopes`` expression, needs a covering quota.

Amounts are the integers of :func:`kubesched.api.quantity.resource_amount` (cpu names in milli).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubesched.api.quantity import format_quantity, resource_amount
from kubesched.api.resources import pod_requests
from kubesched.k8s.objects import Obj, is_terminal
from kubesched.k8s.timefmt import parse_rfc3339

Amounts = dict[str, int]

POD_RESOURCES = frozenset(
    {
        "count/pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
    }
)
_POD_RESOURCE_PREFIXES = ("hugepages-", "requests.hugepages-")
# a quota tracking one of these makes every container state it (an upstream backward-compat rule)
_VALIDATION_SET = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_QOS_RESOURCES = ("cpu", "memory")


class QuotaError(Exception):
    """A quota refusal. ``forbidden``: the API server wraps it as ``pods "x" is forbidden: ...``
    (403); otherwise it is returned bare with code 500 (upstream's "insufficient quota to match
    these scopes" is a plain error, not a Forbidden)."""

    def __init__(self, message: str, *, forbidden: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.forbidden = forbidden


# -- resource names -----------------------------------------------------------------------------
def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """An extended resource a pod may request (``example.com/gpu``)."""
    return not _is_native(name) and not name.startswith("requests.")


def matching_resources(names: Iterable[str]) -> list[str]:
    """The quota resource names the pod evaluator tracks."""
    out = []
    for name in names:
        if name in POD_RESOURCES or name.startswith(_POD_RESOURCE_PREFIXES):
            out.append(name)
        elif not _is_native(name) and name.startswith("requests."):
            out.append(name)
    return out


# -- pod facts ----------------------------------------------------------------------------------
def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def _containers(pod: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    return [c for c in _spec(pod).get(field) or [] if isinstance(c, Mapping)]


def _resources(container: Mapping[str, Any], which: str) -> Amounts:
    raw = (container.get("resources") or {}).get(which) or {}
    return {name: resource_amount(name, q) for name, q in raw.items()}


def pod_limits(pod: Mapping[str, Any]) -> Amounts:
    """Effective pod limits (containers, init containers and sidecars combined like requests);
    the overhead is added only to resources that have a limit."""
    spec = dict(_spec(pod))
    overhead = spec.pop("overhead", None) or {}
    for field in ("containers", "initContainers"):
        spec[field] = [
            {**c, "resources": {"requests": (c.get("resources") or {}).get("limits") or {}}}
            for c in _containers(pod, field)
        ]
    limits = pod_requests({"spec": spec})
    for name, q in overhead.items():
        if name in limits:
            limits[name] += resource_amount(name, q)
    return limits


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort (only cpu and memory count)."""
    requests: Amounts = {}
    limits: Amounts = {}
    guaranteed = True
    for c in _containers(pod, "containers") + _containers(pod, "initContainers"):
        for name, value in _resources(c, "requests").items():
            if name in _QOS_RESOURCES and value > 0:
                requests[name] = requests.get(name, 0) + value
        found = set()
        for name, value in _resources(c, "limits").items():
            if name in _QOS_RESOURCES and value > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + value
        if not found.issuperset(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == v for n, v in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _is_terminating(pod: Mapping[str, Any]) -> bool:
    deadline = _spec(pod).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and deadline >= 0


def _term_is_cross_namespace(term: Any) -> bool:
    return isinstance(term, Mapping) and (bool(term.get("namespaces")) or term.get("namespaceSelector") is not None)


def _uses_cross_namespace_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = _spec(pod).get("affinity") or {}
    for field in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(field) or {}
        for term in section.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if _term_is_cross_namespace(term):
                return True
        for weighted in section.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            if isinstance(weighted, Mapping) and _term_is_cross_namespace(weighted.get("podAffinityTerm")):
                return True
    return False


def _compute_usage(requests: Mapping[str, int], limits: Mapping[str, int]) -> Amounts:
    result: Amounts = {"pods": 1}
    for base in ("cpu", "memory", "ephemeral-storage"):
        if base in requests:
            result[base] = requests[base]
            result[f"requests.{base}"] = requests[base]
        if base in limits:
            result[f"limits.{base}"] = limits[base]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            result[name] = value
            result[f"requests.{name}"] = value
        if _is_extended(name):
            result[f"requests.{name}"] = value
    return result


def counts_compute_usage(pod: Mapping[str, Any], now: float) -> bool:
    """Whether compute resources (and ``pods``) are charged: not terminal and not past the deletion
    grace period (``count/pods`` is charged regardless)."""
    if is_terminal(pod):
        return False
    meta = pod.get("metadata") or {}
    deletion = meta.get("deletionTimestamp")
    grace = meta.get("deletionGracePeriodSeconds")
    if deletion and grace is not None and now > parse_rfc3339(deletion) + float(grace):
        return False
    return True


def pod_usage(pod: Mapping[str, Any], now: float) -> Amounts:
    usage: Amounts = {"count/pods": 1}
    if counts_compute_usage(pod, now):
        usage.update(_compute_usage(pod_requests(pod), pod_limits(pod)))
    return usage


# -- scopes -------------------------------------------------------------------------------------
def scope_selectors(quota: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``spec.scopes`` (as Exists expressions) followed by ``spec.scopeSelector.matchExpressions``."""
    spec = quota.get("spec") or {}
    out: list[dict[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out.extend(dict(e) for e in (spec.get("scopeSelector") or {}).get("matchExpressions") or [])
    return out


def pod_matches_scope(selector: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    scope = selector.get("scopeName")
    if scope == "Terminating":
        return _is_terminating(pod)
    if scope == "NotTerminating":
        return not _is_terminating(pod)
    if scope == "BestEffort":
        return pod_qos_class(pod) == "BestEffort"
    if scope == "NotBestEffort":
        return pod_qos_class(pod) != "BestEffort"
    if scope == "CrossNamespacePodAffinity":
        return _uses_cross_namespace_affinity(pod)
    if scope == "PriorityClass":
        name = _spec(pod).get("priorityClassName") or ""
        op = selector.get("operator")
        values = selector.get("values") or []
        if op == "Exists":
            return bool(name)
        if op == "DoesNotExist":
            return not name
        if op == "In":
            return bool(name) and name in values
        if op == "NotIn":
            return not name or name not in values
    return False


def format_scope(selector: Mapping[str, Any]) -> str:
    """Go's ``%v`` of a ScopedResourceSelectorRequirement: ``{PriorityClass In [a b]}``."""
    values = " ".join(selector.get("values") or [])
    return f"{{{selector.get('scopeName', '')} {selector.get('operator', '')} [{values}]}}"


# -- quota objects ------------------------------------------------------------------------------
def _amounts(raw: Mapping[str, Any] | None) -> Amounts:
    return {name: resource_amount(name, q) for name, q in (raw or {}).items()}


def quota_hard(quota: Mapping[str, Any]) -> Amounts:
    status_hard = (quota.get("status") or {}).get("hard")
    return _amounts(status_hard if status_hard is not None else (quota.get("spec") or {}).get("hard"))


def quota_used(quota: Mapping[str, Any]) -> Amounts:
    return _amounts((quota.get("status") or {}).get("used"))


def format_amounts(amounts: Mapping[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amounts[name]) for name in sorted(amounts)}


def pretty(amounts: Mapping[str, int]) -> str:
    """``name=quantity`` sorted by name, joined with ``,`` (upstream ``prettyPrint``)."""
    return ",".join(f"{name}={format_quantity(name, amounts[name])}" for name in sorted(amounts))


def quota_matches_pod(quota: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    if not matching_resources(quota_hard(quota)):
        return False
    return all(pod_matches_scope(s, pod) for s in scope_selectors(quota))


def _constraints(required: Iterable[str], pod: Mapping[str, Any]) -> str | None:
    required_set = set(required) & _VALIDATION_SET
    if not required_set:
        return None
    missing: dict[str, set[str]] = {}
    for c in _containers(pod, "containers") + _containers(pod, "initContainers"):
        have = _compute_usage(_resources(c, "requests"), _resources(c, "limits"))
        for res in required_set - have.keys():
            missing.setdefault(res, set()).add(str(c.get("name") or ""))
    if not missing:
        return None
    parts = [f"{res} for: {','.join(sorted(missing[res]))}" for res in sorted(missing)]
    return "must specify " + "; ".join(parts)


def _limited_scopes(pod: Mapping[str, Any], limited: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s for entry in limited for s in entry.get("matchScopes") or [] if pod_matches_scope(s, pod)]


def _limited_resource_names(usage: Mapping[str, int], limited: Sequence[Mapping[str, Any]]) -> set[str]:
    names: set[str] = set()
    for entry in limited:
        if entry.get("resource") != "pods" or (entry.get("apiGroup") or "") != "":
            continue
        for name, value in usage.items():
            if value > 0 and any(part in name for part in entry.get("matchContains") or []):
                names.add(name)
    return names


def check_pod(
    pod: Mapping[str, Any], quotas: Sequence[Obj], limited: Sequence[Mapping[str, Any]], now: float
) -> list[tuple[Obj, Amounts]]:
    """Check a pod being created against the namespace's quotas (sorted by name) and the
    ``limitedResources`` configuration. Returns ``(quota, new used amounts)`` for every quota whose
    usage the pod changes; raises :class:`QuotaError` if the pod must be refused."""
    usage = pod_usage(pod, now)
    limited_scopes = _limited_scopes(pod, limited)
    limited_names = _limited_resource_names(usage, limited)
    matched_scope_names: set[str] = set()
    covered: set[str] = set()
    interesting: list[Obj] = []
    for quota in quotas:
        selectors = scope_selectors(quota)
        matched_scope_names.update(str(s.get("scopeName")) for s in selectors if pod_matches_scope(s, pod))
        if not quota_matches_pod(quota, pod):
            continue
        restricted = matching_resources(quota_hard(quota))
        problem = _constraints(restricted, pod)
        if problem is not None:
            raise QuotaError(f"failed quota: {quota['metadata']['name']}: {problem}")
        interesting.append(quota)
        covered.update(restricted)
    uncovered_names = limited_names - covered
    if uncovered_names:
        raise QuotaError(f"insufficient quota to consume: {','.join(sorted(uncovered_names))}")
    uncovered_scopes = [s for s in limited_scopes if s.get("scopeName") not in matched_scope_names]
    if uncovered_scopes:
        text = " ".join(format_scope(s) for s in uncovered_scopes)
        raise QuotaError(f"insufficient quota to match these scopes: [{text}]", forbidden=False)
    changes: list[tuple[Obj, Amounts]] = []
    for quota in interesting:
        hard = quota_hard(quota)
        used = quota_used(quota)
        requested = {k: v for k, v in usage.items() if k in hard}
        new_used = dict(used)
        for k, v in requested.items():
            new_used[k] = new_used.get(k, 0) + v
        exceeded = sorted(k for k in requested if new_used[k] > hard[k])
        if exceeded:
            raise QuotaError(
                f"exceeded quota: {quota['metadata']['name']}, "
                f"requested: {pretty({k: requested[k] for k in exceeded})}, "
                f"used: {pretty({k: used[k] for k in exceeded if k in used})}, "
                f"limited: {pretty({k: hard[k] for k in exceeded})}"
            )
        if new_used != used:
            changes.append((quota, new_used))
    return changes


def compute_status(quota: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], now: float) -> Obj:
    """A full recount: ``{hard: spec.hard, used: ...}`` over ``pods`` (the namespace's pods).
    Resources no evaluator here tracks are reported as used 0."""
    raw_hard = dict((quota.get("spec") or {}).get("hard") or {})
    probe = {**quota, "status": {"hard": raw_hard}}
    hard = _amounts(raw_hard)
    used: Amounts = dict.fromkeys(hard, 0)
    tracked = set(matching_resources(hard))
    if tracked:
        for pod in pods:
            if not quota_matches_pod(probe, pod):
                continue
            for k, v in pod_usage(pod, now).items():
                if k in tracked:
                    used[k] += v
    return {"hard": raw_hard, "used": format_amounts(used)}


def subtract_usage(quota: Mapping[str, Any], released: Mapping[str, int]) -> Amounts | None:
    """New used amounts after ``released`` is given back (clamped at 0), or None if unchanged."""
    hard = quota_hard(quota)
    used = quota_used(quota)
    new_used = dict(used)
    for k, v in released.items():
        if k in hard and v:
            new_used[k] = max(0, new_used.get(k, 0) - v)
    return None if new_used == used else new_used


def add_usage(quota: Mapping[str, Any], usage: Mapping[str, int]) -> Amounts | None:
    hard = quota_hard(quota)
    used = quota_used(quota)
    new_used = dict(used)
    for k, v in usage.items():
        if k in hard and v:
            new_used[k] = new_used.get(k, 0) + v
    return None if new_used == used else new_used


def with_used(quota: Obj, used: Mapping[str, int]) -> Obj:
    status = dict(quota.get("status") or {})
    status["used"] = format_amounts(used)
    return {**quota, "status": status}
