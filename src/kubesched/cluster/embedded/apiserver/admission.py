"""What the API server does to an object between the request and etcd (``plugin/pkg/admission``).

For a **Pod** (in the API server's order):

1. defaulting: ``spec.schedulerName`` = ``default-scheduler``, ``terminationGracePeriodSeconds`` = 30,
   ``restartPolicy`` = ``Always``, container requests defaulted from limits, ``status.phase`` =
   ``Pending``, ``status.qosClass``; a pod with scheduling gates gets ``PodScheduled=False``
   reason ``SchedulingGated``. (A status given in the manifest is otherwise kept: the simulator lets
   scenarios pre-set e.g. ``nominatedNodeName``.)
2. Priority admission: priority and preemptionPolicy from the named class, or from the global default
   class (the lowest value wins if several), or 0 / ``PreemptLowerPriority``; unknown class, or a pod
   that sets a different ``spec.priority`` / ``spec.preemptionPolicy`` → 403.
3. DefaultTolerationSeconds: ``node.kubernetes.io/not-ready`` and ``unreachable`` NoExecute
   tolerations for 300 s unless the pod already tolerates them.
4. ResourceQuota (see :mod:`kubesched.cluster.embedded.apiserver.quota`); admitted usage is charged to the
   quotas' ``status.used`` right away (released later by the quota controller).

A **PriorityClass** is defaulted (``preemptionPolicy``), validated (422: ``system-`` names, value above
1,000,000,000) and checked for a second ``globalDefault`` (403). A **ResourceQuota** gets its initial
``status`` (``hard`` and ``used``) as the quota controller would compute it at once.

Texts are the API server's: ``pods "x" is forbidden: ...``,
``PriorityClass.scheduling.k8s.io "x" is invalid: ...``, ``priorityclasses.scheduling.k8s.io "x" is
forbidden: ...``. A mutating-phase refusal of a pod with ``metadata.generateName`` names the
``generateName`` (the real name is generated after mutating admission).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from kubesched.api.quantity import parse_quantity
from kubesched.api.resources import default_pod_requests_from_limits
from kubesched.cluster.embedded.apiserver import quota as quotas
from kubesched.cluster.embedded.apiserver.storage import default_storage_object
from kubesched.cluster.embedded.apiserver.store import ObjectStore
from kubesched.k8s.kinds import is_namespaced, resource_name
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import (
    DEFAULT_NAMESPACE,
    DEFAULT_SCHEDULER_NAME,
    ApiError,
    Obj,
    namespace_of,
)

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-cluster-critical": (
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
    "system-node-critical": (
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
}
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_TOLERATION_SECONDS = 300
SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def forbidden(kind: str, name: str, message: str) -> ApiError:
    return ApiError(403, "Forbidden", f'{resource_name(kind)} "{name}" is forbidden: {message}')


def invalid(kind_group: str, name: str, errors: list[str]) -> ApiError:
    """``field.ErrorList.ToAggregate()``: one error as is, several as ``[a, b]``."""
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return ApiError(422, "Invalid", f'{kind_group} "{name}" is invalid: {text}')


class _Reader(Protocol):
    def iter(self, kind: str) -> Iterator[Obj]: ...


class _Creator(Protocol):
    """Where the system classes are created: the API server facade (through admission) or a bare
    object store."""

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None: ...

    def create(self, obj: Obj) -> Obj: ...


def ensure_system_priority_classes(api: _Creator) -> None:
    """Create ``system-cluster-critical`` and ``system-node-critical`` if missing (the API server
    does this at start-up). Call once when the cluster starts."""
    for name, (value, description) in SYSTEM_PRIORITY_CLASSES.items():
        if api.get("PriorityClass", None, name) is None:
            api.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                    "globalDefault": False,
                    "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
                    "description": description,
                }
            )


def default_priority_class(store: _Reader) -> Obj | None:
    """The globalDefault PriorityClass; the one with the lowest value if several exist."""
    best: Obj | None = None
    for pc in store.iter("PriorityClass"):
        if pc.get("globalDefault") and (best is None or int(pc.get("value") or 0) < int(best.get("value") or 0)):
            best = pc
    return best


STORAGE_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "StorageClass"})


class Admission:
    """Admission for creates. ``limited_resources``: the apiserver's ResourceQuota admission
    configuration ``limitedResources`` (``[{resource, matchContains, matchScopes}]``)."""

    def __init__(self, store: ObjectStore, limited_resources: list[dict[str, Any]] | None = None) -> None:
        self.store = store
        self.limited_resources: list[dict[str, Any]] = [dict(e) for e in limited_resources or []]
        #: ``(namespace, name)`` of admitted pods (their usage is already charged to the quotas)
        #: whose ADDED event the quota controller has not seen yet
        self.charged: set[tuple[str, str]] = set()

    def admit_create(self, obj: Obj, now: float) -> Obj:
        obj = deep_copy(obj)
        kind = obj.get("kind")
        if kind == "Pod":
            return self._admit_pod(obj, now)
        if kind == "PriorityClass":
            self._admit_priority_class(obj)
        elif kind == "ResourceQuota":
            self._admit_resource_quota(obj, now)
        elif kind in STORAGE_KINDS:
            default_storage_object(obj, self.store.iter("StorageClass"))
        self._check_absent(obj)
        return obj

    # -- common --------------------------------------------------------------------------------
    def _check_absent(self, obj: Obj) -> None:
        """AlreadyExists, checked here (before quota is charged) with the API server's text."""
        kind = obj["kind"]
        meta = obj.get("metadata") or {}
        ns = (meta.get("namespace") or DEFAULT_NAMESPACE) if is_namespaced(kind) else None
        if self.store.get(kind, ns, meta["name"]) is not None:
            raise ApiError(409, "AlreadyExists", f'{resource_name(kind)} "{meta["name"]}" already exists')

    # -- PriorityClass ---------------------------------------------------------------------------
    def _admit_priority_class(self, pc: Obj) -> None:
        name = pc["metadata"]["name"]
        pc.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
        value = int(pc.get("value") or 0)
        errors: list[str] = []
        if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
            problem = _system_class_problem(name, value, bool(pc.get("globalDefault")))
            if problem:
                errors.append(
                    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
                    f"for system use only. error: {problem}"
                )
        elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
            errors.append(
                f"value: Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            )
        policy = pc.get("preemptionPolicy")
        if policy not in PREEMPTION_POLICIES:
            errors.append(
                f'preemptionPolicy: Unsupported value: "{policy}": supported values: '
                '"PreemptLowerPriority", "Never"'
            )
        if errors:
            raise invalid("PriorityClass.scheduling.k8s.io", name, errors)
        if pc.get("globalDefault"):
            current = default_priority_class(self.store)
            if current is not None:
                raise forbidden(
                    "PriorityClass",
                    name,
                    f"PriorityClass {current['metadata']['name']} is already marked as default. "
                    "Only one default can exist",
                )

    # -- ResourceQuota ----------------------------------------------------------------------------
    def _admit_resource_quota(self, rq: Obj, now: float) -> None:
        ns = namespace_of(rq)
        pods = [p for p in self.store.iter("Pod") if p["metadata"].get("namespace") == ns]
        rq["status"] = quotas.compute_status(rq, pods, now)

    # -- Pod ---------------------------------------------------------------------------------------
    def _admit_pod(self, pod: Obj, now: float) -> Obj:
        _default_pod(pod)
        self._admit_priority(pod)
        _add_default_tolerations(pod)
        self._admit_runtime_class(pod)
        self._check_absent(pod)
        self._admit_quota(pod, now)
        meta = pod["metadata"]
        self.charged.add((namespace_of(pod), meta["name"]))
        return pod

    def _admit_priority(self, pod: Obj) -> None:
        spec = pod["spec"]
        meta = pod["metadata"]
        display = meta.get("generateName") or meta["name"]
        class_name = spec.get("priorityClassName") or ""
        policy: str = PREEMPT_LOWER_PRIORITY
        if not class_name:
            pc = default_priority_class(self.store)
            priority = 0
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
                priority = int(pc.get("value") or 0)
                policy = pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
        else:
            pc = self.store.get("PriorityClass", None, class_name)
            if pc is None:
                raise forbidden("Pod", display, f"no PriorityClass with name {class_name} was found")
            priority = int(pc.get("value") or 0)
            policy = pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
        given = spec.get("priority")
        if given is not None and given != priority:
            raise forbidden(
                "Pod",
                display,
                f"the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {priority} from the given PriorityClass name",
            )
        spec["priority"] = priority
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise forbidden(
                "Pod",
                display,
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name",
            )
        spec["preemptionPolicy"] = policy

    def _admit_runtime_class(self, pod: Obj) -> None:
        """The RuntimeClass admission plugin (``plugin/pkg/admission/runtimeclass``): the class must
        exist; its ``overhead.podFixed`` becomes the pod's ``spec.overhead`` (a different one given by
        the pod is refused); its ``scheduling.nodeSelector`` is merged into the pod's (a conflicting
        value is refused) and its tolerations are added."""
        spec = pod["spec"]
        name = spec.get("runtimeClassName")
        if not name:
            return
        display = pod["metadata"].get("generateName") or pod["metadata"]["name"]
        rc = self.store.get("RuntimeClass", None, name)
        if rc is None:
            raise forbidden("Pod", display, f'pod rejected: RuntimeClass "{name}" not found')
        fixed = (rc.get("overhead") or {}).get("podFixed")
        if fixed:
            given = spec.get("overhead")
            if given and {k: parse_quantity(v) for k, v in given.items()} != {
                    k: parse_quantity(v) for k, v in fixed.items()}:
                raise forbidden("Pod", display, "pod rejected: Pod's Overhead doesn't match RuntimeClass's "
                                "defined Overhead")
            spec["overhead"] = dict(fixed)
        scheduling = rc.get("scheduling") or {}
        selector = dict(spec.get("nodeSelector") or {})
        for key, value in (scheduling.get("nodeSelector") or {}).items():
            if key in selector and selector[key] != value:
                raise forbidden("Pod", display, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                f"pod.spec.nodeSelector[{key}] = {selector[key]}")
            selector[key] = value
        if selector:
            spec["nodeSelector"] = selector
        tolerations = list(spec.get("tolerations") or [])
        for toleration in scheduling.get("tolerations") or []:
            if toleration not in tolerations:
                tolerations.append(dict(toleration))
        if tolerations:
            spec["tolerations"] = tolerations

    def restore_priority(self, pod: Obj) -> None:
        """A restored pod (already admitted in its cluster) keeps ``spec.priority``; one without it
        (e.g. given another class for a what-if) gets what priority admission would give, or 0 when
        its class is unknown."""
        spec = pod.setdefault("spec", {})
        if spec.get("priority") is not None:
            return
        spec.pop("preemptionPolicy", None)
        try:
            self._admit_priority(pod)
        except ApiError:
            spec["priority"] = 0
            spec.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)

    def _admit_quota(self, pod: Obj, now: float) -> None:
        meta = pod["metadata"]
        ns = namespace_of(pod)
        in_ns = sorted(
            (q for q in self.store.iter("ResourceQuota") if q["metadata"].get("namespace") == ns),
            key=lambda q: q["metadata"]["name"],
        )
        if not in_ns and not self.limited_resources:
            return
        try:
            changes = quotas.check_pod(pod, in_ns, self.limited_resources, now)
        except quotas.QuotaError as err:
            if err.forbidden:
                raise forbidden("Pod", meta["name"], err.message) from None
            raise ApiError(500, "Unknown", err.message) from None
        for quota, used in changes:
            self.store.update(quotas.with_used(quota, used))


def _system_class_problem(name: str, value: int, global_default: bool) -> str | None:
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def _default_pod(pod: Obj) -> None:
    spec = pod.setdefault("spec", {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    default_pod_requests_from_limits(pod)
    status = pod.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Pending"
    status["qosClass"] = quotas.pod_qos_class(pod)
    if spec.get("schedulingGates"):
        conditions = list(status.get("conditions") or [])
        if not any(c.get("type") == "PodScheduled" for c in conditions):
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": SCHEDULING_GATED_MESSAGE,
                }
            )
        status["conditions"] = conditions


def _tolerates_no_execute(tolerations: list[Mapping[str, Any]], key: str) -> bool:
    return any(
        (t.get("key") or "") in (key, "") and (t.get("effect") or "") in ("NoExecute", "")
        for t in tolerations
    )


def _add_default_tolerations(pod: Obj) -> None:
    spec = pod["spec"]
    tolerations = list(spec.get("tolerations") or [])
    added = False
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not _tolerates_no_execute(tolerations, key):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
            added = True
    if added:
        spec["tolerations"] = tolerations
