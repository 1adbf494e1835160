"""GPU allocation against the arrived GPU workload: the axis on which GPU-sharing schedulers are
compared on Alibaba's openb trace ("fragmentation" studies). At each moment of a run:

* the **arrived workload**: the GPUs requested by every pod created so far (whether it was bound,
  finished or deleted since), as a fraction of the cluster's GPU capacity (the nodes at the start);
* the **allocated fraction**: the GPUs requested by the pods bound and still running then (from a
  pod's ``Scheduled`` event to its ``Completed``, ``Deleted`` or ``Evicted`` one), over the same
  capacity.

The GPU is counted in ``kubesched.io/gpu-milli`` (thousandths, a GPU-sharing pod's share included)
where the nodes have it, as the openb reader gives them, else in ``nvidia.com/gpu``. The curve is
sampled where the arrived workload first reaches each multiple of :data:`STEP` (after every event of
that moment); its point at 1.0 (the whole capacity arrived) and its highest allocation are the
scalar metrics. A run whose nodes have no GPU has none of these metrics.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.loader import Scenario
from kubesched.api.quantity import parse_quantity

GPU_RESOURCES = ("kubesched.io/gpu-milli", "nvidia.com/gpu")
#: the arrived fractions at which the curve is sampled
STEP = 0.05
#: the pod events that end what a bound pod holds
ENDS = ("Completed", "Deleted", "Evicted")
GPU_METRICS = ("gpuAllocationAtCapacity", "gpuAllocationPeak", "gpuArrived")
CURVE = "gpuAllocationCurve"


def _request(pod: dict[str, Any], resource: str) -> float:
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        value = ((container.get("resources") or {}).get("requests") or {}).get(resource)
        if value is not None:
            total += float(parse_quantity(str(value)))
    return total


def _capacity(scenario: Scenario) -> tuple[str, float] | None:
    nodes = [o for o in scenario.objects if o.get("kind") == "Node"]
    for resource in GPU_RESOURCES:
        values = [((n.get("status") or {}).get("allocatable") or {}).get(resource) for n in nodes]
        total = sum(float(parse_quantity(str(v))) for v in values if v is not None)
        if total > 0:
            return resource, total
    return None


def gpu_metrics(scenario: Scenario, result: dict[str, Any]) -> dict[str, Any]:
    """``gpuArrived`` (the arrived workload at the end), ``gpuAllocationPeak``,
    ``gpuAllocationAtCapacity`` (None where the arrived workload never reaches the capacity) and the
    curve (``gpuAllocationCurve``: ``arrived`` and ``allocated`` fractions, rounded to 4 places);
    nothing where the nodes have no GPU."""
    found = _capacity(scenario)
    if found is None:
        return {}
    resource, capacity = found
    requests: dict[str, float] = {}
    for obj in [*scenario.objects, *(s.obj for s in scenario.steps if s.obj is not None and s.kind == "Pod")]:
        if obj.get("kind") == "Pod":
            meta = obj["metadata"]
            requests[f"{meta.get('namespace') or 'default'}/{meta['name']}"] = _request(obj, resource)
    arrived = allocated = peak = 0.0
    holding: dict[str, float] = {}
    xs: list[float] = []
    ys: list[float] = []
    events = result["events"]
    for i, event in enumerate(events):
        pod, reason = event.get("pod") or "", event["reason"]
        if reason == "Created":
            arrived += requests.get(pod, 0.0)
        elif reason == "Scheduled" and pod not in holding:
            holding[pod] = requests.get(pod, 0.0)
            allocated += holding[pod]
        elif reason in ENDS and pod in holding:
            allocated -= holding.pop(pod)
        if i + 1 < len(events) and events[i + 1]["time"] == event["time"]:
            continue  # the moment's other events first
        peak = max(peak, allocated)
        while arrived / capacity >= (len(xs) + 1) * STEP - 1e-9:
            xs.append(round((len(xs) + 1) * STEP, 4))
            ys.append(round(allocated / capacity, 4))
    at_capacity = next((y for x, y in zip(xs, ys, strict=True) if x >= 1.0 - 1e-9), None)
    return {"gpuArrived": round(arrived / capacity, 4), "gpuAllocationPeak": round(peak / capacity, 4),
            "gpuAllocationAtCapacity": at_capacity, CURVE: {"arrived": xs, "allocated": ys}}
