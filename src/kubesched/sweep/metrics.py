"""What a sweep measures of each variant's SimulationResult, and how it sums up a configuration's
variants over their seeds (a mean and a 95 % interval).

Per variant, from the result (and its preemption decisions):

* ``pending``, ``scheduled``, ``preemptions``, ``victims``: the result's summary;
* ``schedulingLatencyP50/P95/P99``: seconds from a pod's creation to its first binding, over the
  pods created and scheduled during the run (restored pods that were already placed are not
  counted), and the same per PriorityClass and per namespace (``byClass``, ``byNamespace``);
* ``preemptionsByClass``: preemptions per PriorityClass of the preemptor, ``victimsByClass``:
  preempted pods per PriorityClass of the victim (``""``: no class);
* ``pdbViolations``: victims whose preemption broke a PodDisruptionBudget (as the decisions say; a pod
  chosen again while terminating counts once, as in ``victims``);
* ``evictions``: pods evicted by the node agent (``Evicted`` events) or a drain (``Evicting``);
* ``nodeHours``: when the autoscaler ran, the node-hours it reports;
* ``cpuAllocation``, ``memoryAllocation``, ``podsAllocation``: requested over allocatable (pods
  over pod slots), summed over the nodes at the end of the run; ``allocationByResource``: the same
  for each extended resource the nodes have (``nvidia.com/gpu`` and the like), over the nodes
  that have it (empty when none has any).

Only where the cluster has what they count (:data:`OPTIONAL`):

* ``incompleteGangs``, ``incompleteGangPods``: with PodGroups, the groups that never had
  ``minMember`` pods scheduled at once (the result's ``podGroups``, ``mostScheduled`` below
  ``minMember``) and their pods at the end of the run;
* ``volumePending``: with PersistentVolumeClaims, the pods pending at the end whose last
  FailedScheduling message names a volume plugin's reason (VolumeBinding, VolumeRestrictions,
  VolumeZone, NodeVolumeLimits) or a claim, volume or class the pod cannot have: the message
  kube-scheduler writes on the pod, upstream's FitError (``framework/types.go``);
* ``agreementBound``, ``agreementNode``, ``agreementPool``: with a history base (a replay), the
  agreement with the recording (:mod:`.history_runs`; ``nodeHours`` is then the window's);
* ``gpuArrived``, ``gpuAllocationPeak``, ``gpuAllocationAtCapacity`` (and the curve,
  ``gpuAllocationCurve``): with a history base whose nodes have GPUs, the GPU allocation against
  the arrived GPU workload (:mod:`.gpu_curve`).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from kubesched.scheduler.plugins import nodevolumelimits, volumerestrictions, volumezone
from kubesched.scheduler.plugins.volumebinding import plugin as volumebinding
from kubesched.sim.result import requested_share
from kubesched.sweep.gpu_curve import GPU_METRICS

#: the scalar metrics, in the order tables show them
SCALARS = ("pending", "scheduled", "preemptions", "victims", "pdbViolations", "evictions",
           "schedulingLatencyP50", "schedulingLatencyP95", "schedulingLatencyP99", "nodeHours",
           "cpuAllocation", "memoryAllocation", "podsAllocation")
#: the scalar metrics of a variant whose cluster has gangs (the first two) or claims (the last)
GANG_METRICS = ("incompleteGangs", "incompleteGangPods")
VOLUME_METRICS = ("volumePending",)
#: the metrics of a replay (a history base), and of one whose nodes have GPUs
AGREEMENT_METRICS = ("agreementBound", "agreementNode", "agreementPool")
OPTIONAL = (*GANG_METRICS, *VOLUME_METRICS, *AGREEMENT_METRICS, *GPU_METRICS)
#: the metrics per PriorityClass and per namespace (``byClass``, ``byNamespace``)
LATENCIES = ("schedulingLatencyP50", "schedulingLatencyP95", "schedulingLatencyP99")
#: the counts per PriorityClass
COUNTS_BY_CLASS = ("preemptionsByClass", "victimsByClass")
#: the allocation of each extended resource, by resource name
BY_RESOURCE = "allocationByResource"

#: the events of an eviction: the node agent's (pressure) and a drain's (the eviction API)
EVICTION_REASONS = ("Evicted", "Evicting")
#: the volume plugins' reasons, as a FailedScheduling message counts them per node (or gives one,
#: for VolumeBinding's PreFilter)
VOLUME_REASONS = (volumebinding.ERR_BIND_CONFLICT, volumebinding.ERR_NODE_CONFLICT, volumebinding.ERR_NOT_ENOUGH_SPACE,
                  volumebinding.ERR_PV_NOT_EXIST, volumebinding.ERR_UNBOUND_IMMEDIATE, volumezone.ERR_CONFLICT,
                  volumerestrictions.ERR_DISK_CONFLICT, volumerestrictions.ERR_RWOP_CONFLICT,
                  nodevolumelimits.ERR_MAX_VOLUME_COUNT)
#: and the volume plugins' PreFilter, Reserve and PreBind errors: a claim, volume or class missing,
#: being deleted or lost, an ephemeral claim not there yet, the volumes' binding failed
_VOLUME_ERRORS = re.compile(r'persistentvolumeclaim "|persistentvolume "|storageclass\.storage\.k8s\.io "|'
                            r'ephemeral volume controller|binding volumes: |error getting PVC "|'
                            r'plugin "(?:VolumeBinding|VolumeRestrictions|VolumeZone|NodeVolumeLimits)"')
#: where the filters' part of a FitError ends and the PostFilter's (preemption's) begins
_POST_FILTER = " preemption: "
#: Student's t at 97.5 % for 1..30 degrees of freedom (the two-sided 95 % interval); 1.96 beyond
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) of ``values``, linearly interpolated (numpy's default);
    None for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _latencies(result: dict[str, Any]) -> dict[str, float]:
    created: dict[str, float] = {}
    scheduled: dict[str, float] = {}
    for event in result["events"]:
        reason, pod = event["reason"], event.get("pod")
        if reason == "Created":
            created.setdefault(pod, event["time"])
        elif reason == "Scheduled" and pod in created:
            scheduled.setdefault(pod, event["time"] - created[pod])
    return scheduled


def names_volume(message: str) -> bool:
    """Whether a FailedScheduling message says a volume plugin rejected the pod (on some node, or
    before any node was looked at); preemption's part of it is left out."""
    filters = message.split(_POST_FILTER, 1)[0]
    return any(reason in filters for reason in VOLUME_REASONS) or _VOLUME_ERRORS.search(filters) is not None


def _last_failures(result: dict[str, Any]) -> dict[str, str]:
    """Each pod's last FailedScheduling message."""
    last: dict[str, str] = {}
    for event in result["events"]:
        if event["reason"] == "FailedScheduling":
            last[event["pod"]] = event.get("message") or ""
    return last


def volume_pending(result: dict[str, Any]) -> int:
    """The pods pending (not bound) at the end whose last FailedScheduling message names a volume."""
    last = _last_failures(result)
    return sum(1 for key, pod in result["pods"].items()
               if pod["phase"] == "Pending" and not pod["node"] and names_volume(last.get(key, "")))


#: how many of the pods pending at the end a variant's record names
PENDING_NAMED = 3


def pending_pods(result: dict[str, Any]) -> list[dict[str, str]]:
    """The first pods (by namespace/name) pending, not bound, at the end of the run, each with its
    last FailedScheduling message (``""``: none yet): what keeps a plan's goal on ``pending`` from
    holding, in kube-scheduler's own words."""
    last = _last_failures(result)
    keys = sorted(key for key, pod in result["pods"].items() if pod["phase"] == "Pending" and not pod["node"])
    return [{"pod": key, "message": last.get(key, "")} for key in keys[:PENDING_NAMED]]


def gang_metrics(result: dict[str, Any]) -> dict[str, int]:
    """The PodGroups that never had ``minMember`` pods scheduled at once, and their pods."""
    incomplete = [g for g in result["podGroups"].values() if g["mostScheduled"] < g["minMember"]]
    return {"incompleteGangs": len(incomplete), "incompleteGangPods": sum(len(g["pods"]) for g in incomplete)}


def _latency_metrics(latencies: list[float]) -> dict[str, float | None]:
    return {f"schedulingLatencyP{q}": percentile(latencies, q) for q in (50, 95, 99)}


def extended_allocation(extended: dict[str, dict[str, tuple[int, int]]]) -> dict[str, float]:
    """Requested over allocatable of each extended resource, summed over the nodes that have it
    (``extended``: node -> resource -> (requested, allocatable), as a SimulationOutcome gives it)."""
    sums: dict[str, list[int]] = {}
    for resources in extended.values():
        for name, (requested, allocatable) in resources.items():
            total = sums.setdefault(name, [0, 0])
            total[0] += requested
            total[1] += allocatable
    return {name: requested / allocatable for name, (requested, allocatable) in sorted(sums.items()) if allocatable}


def variant_metrics(result: dict[str, Any], claims: bool = False,
                    extended: dict[str, dict[str, tuple[int, int]]] | None = None) -> dict[str, Any]:
    """The metrics of one variant's SimulationResult (with its ``preemptionDecisions``): the gang
    metrics when it has ``podGroups``, ``volumePending`` when ``claims`` (the cluster has
    PersistentVolumeClaims), the extended resources' allocation from ``extended`` (node ->
    resource -> (requested, allocatable))."""
    summary = result["summary"]
    pods = result["pods"]
    latencies = _latencies(result)
    by_class: dict[str, list[float]] = defaultdict(list)
    by_namespace: dict[str, list[float]] = defaultdict(list)
    for pod, seconds in latencies.items():
        by_class[(pods.get(pod) or {}).get("priorityClassName") or ""].append(seconds)
        by_namespace[pod.split("/", 1)[0]].append(seconds)
    preemptions_by_class: dict[str, int] = defaultdict(int)
    # a victim still terminating can be chosen again by a later preemptor (as upstream's
    # selectVictimsOnNode does): each pod counts once, as in the summary's victims
    victims: set[str] = set()
    pdb_violating: set[str] = set()
    for decision in result.get("preemptionDecisions", []):
        if decision["outcome"] != "preempted":
            continue
        preemptions_by_class[(pods.get(decision["pod"]) or {}).get("priorityClassName") or ""] += 1
        chosen = next(c for c in decision["candidates"] if c["node"] == decision["chosen"])
        pdb_violating.update(chosen.get("pdbViolatingVictims") or [])
        victims.update(v["pod"] for v in chosen["victims"])
    victims_by_class: dict[str, int] = defaultdict(int)
    for victim in victims:
        victims_by_class[(pods.get(victim) or {}).get("priorityClassName") or ""] += 1
    allocation = {f"{resource}Allocation": requested_share(result["nodes"], resource) for resource in ("cpu", "memory")}
    slots = sum(n["allocatablePods"] for n in result["nodes"])
    allocation["podsAllocation"] = sum(n["pods"] for n in result["nodes"]) / slots if slots else None
    autoscaler = (result.get("cluster") or {}).get("autoscaler")
    return {
        "pending": summary["pending"], "scheduled": summary["scheduled"],
        "preemptions": summary["preemptions"], "victims": summary["victims"],
        "pdbViolations": len(pdb_violating),
        "evictions": sum(1 for e in result["events"] if e["reason"] in EVICTION_REASONS),
        **_latency_metrics(list(latencies.values())),
        "nodeHours": autoscaler.get("nodeHours", 0) if autoscaler else None,
        **allocation,
        **(gang_metrics(result) if "podGroups" in result else {}),
        **({"volumePending": volume_pending(result)} if claims else {}),
        BY_RESOURCE: extended_allocation(extended or {}),
        "preemptionsByClass": dict(sorted(preemptions_by_class.items())),
        "victimsByClass": dict(sorted(victims_by_class.items())),
        "byClass": {k: _latency_metrics(v) for k, v in sorted(by_class.items())},
        "byNamespace": {k: _latency_metrics(v) for k, v in sorted(by_namespace.items())},
    }


def summarise(values: list[float | None]) -> dict[str, Any]:
    """Mean, 95 % interval half-width (Student's t), min, max and count of the values given
    (None: the metric does not apply to that run, e.g. no pod was scheduled)."""
    given = [v for v in values if v is not None]
    n = len(given)
    if not n:
        return {"mean": None, "ci95": None, "min": None, "max": None, "n": 0}
    if min(given) == max(given):  # the same in every run: that value, exactly, and no interval
        mean, half = float(given[0]), (0.0 if n > 1 else None)
    else:
        mean = math.fsum(given) / n
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in given) / (n - 1))
        half = (_T975[n - 2] if n - 1 <= len(_T975) else 1.96) * sd / math.sqrt(n)
    return {"mean": mean, "ci95": half, "min": min(given), "max": max(given), "n": n}
