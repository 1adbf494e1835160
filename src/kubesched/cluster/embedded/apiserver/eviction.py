"""The ``pods/eviction`` subresource (upstream ``pkg/registry/core/pod/storage/eviction.go``, v1.28).

An eviction is a deletion that respects PodDisruptionBudgets:

- a pod that is finished, still Pending or already being deleted can go whatever its budgets say;
- a pod covered by more than one PDB cannot be evicted (500, upstream's text);
- a pod that is not Ready goes without spending the budget when its PDB's
  ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (``IfHealthyBudget``, the default) when the
  budget is met (``currentHealthy >= desiredHealthy``);
- otherwise the PDB must allow a disruption (``status.disruptionsAllowed > 0``), else 429 "Cannot
  evict pod as it would violate the pod's disruption budget."; when it does, the eviction spends it:
  ``disruptionsAllowed`` goes down by one and the pod is listed in ``status.disruptedPods`` (the
  disruption controller recounts from there);
- the pod gets the ``DisruptionTarget`` condition (reason ``EvictionByEvictionAPI``) and is deleted.

:func:`admit_eviction` makes the decision and the PDB and pod writes; the caller deletes the pod
(gracefully, through the simulated kubelet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.selectors import LabelSelector
from kubesched.k8s.objects import DISRUPTION_TARGET, ApiError, Obj, is_terminal
from kubesched.k8s.timefmt import rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.apiserver.server import ApiServer

VIOLATES_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."
MANY_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
EVICTION_REASON = "EvictionByEvictionAPI"


def covering_budgets(api: ApiServer, pod: Obj) -> list[Obj]:
    """The PDBs of the pod's namespace whose selector matches it (an empty selector matches every
    pod, a missing one none), by name."""
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    out = []
    for pdb in api.iter("PodDisruptionBudget"):
        if pdb["metadata"].get("namespace") != meta.get("namespace"):
            continue
        selector = (pdb.get("spec") or {}).get("selector")
        if selector is not None and LabelSelector.from_dict(selector).matches(labels):
            out.append(pdb)
    return sorted(out, key=lambda p: p["metadata"]["name"])


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def admit_eviction(api: ApiServer, namespace: str, name: str, now: float) -> Obj:
    """Decide the eviction of pod ``namespace/name``: raises :class:`ApiError` (404, 429, 500) when
    it is refused; otherwise spends the budget, marks the pod and returns it for deletion."""
    pod = api.get("Pod", namespace, name)
    if pod is None:
        raise ApiError(404, "NotFound", f'pods "{name}" not found')
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if is_terminal(pod) or phase == "Pending" or pod["metadata"].get("deletionTimestamp"):
        return pod  # upstream canIgnorePDB
    budgets = covering_budgets(api, pod)
    if len(budgets) > 1:
        raise ApiError(500, "InternalError", MANY_BUDGETS)
    if budgets:
        pdb = budgets[0]
        status = dict(pdb.get("status") or {})
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
        healthy_enough = int(status.get("currentHealthy") or 0) >= int(status.get("desiredHealthy") or 0)
        if _ready(pod) or not (policy == "AlwaysAllow" or healthy_enough):
            allowed = int(status.get("disruptionsAllowed") or 0)
            if allowed <= 0:
                raise ApiError(429, "TooManyRequests", VIOLATES_BUDGET)
            status["disruptionsAllowed"] = allowed - 1
            status["disruptedPods"] = {**(status.get("disruptedPods") or {}), name: rfc3339(now)}
            api.update({**pdb, "status": status})
    pod_status = dict(pod.get("status") or {})
    pod_status["conditions"] = [c for c in pod_status.get("conditions") or [] if c.get("type") != DISRUPTION_TARGET] + [
        {"type": DISRUPTION_TARGET, "status": "True", "reason": EVICTION_REASON,
         "message": "Eviction API: evicting", "lastTransitionTime": rfc3339(now)}]
    return api.update({**pod, "status": pod_status})
