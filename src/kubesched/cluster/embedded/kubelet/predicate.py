"""The kubelet's own admission check (upstream ``pkg/kubelet/lifecycle/predicate.go``,
``PredicateAdmitHandler`` with ``GeneralPredicates``): before a pod bound to the node starts, the
kubelet checks that it fits what the node allocates next to the pods already admitted there, that its
node selector and required node affinity match the node, and that its host ports are free.

The scheduler only binds pods that fit, so this refuses pods that never went through it: pods
written with ``spec.nodeName`` (a scenario pinning placement, a dump's pending pod) that overcommit
their node. A refused pod fails with upstream's reason and message (``OutOfcpu``: "Node didn't have
enough resource: cpu, requested: 16000, used: 1000, capacity: 4000"), as the kubelet's ``rejectPod``
records it (see :meth:`NodeAgent._reject
<kubesched.cluster.embedded.kubelet.nodeagent.NodeAgent._reject>`).

Pods that were already running when the simulation began (restored from a snapshot) are not asked:
their kubelet admitted them long ago. Upstream's critical-pod path (making room by evicting others
for a system-critical pod) is not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.resources import node_allocatable, pod_host_ports, pod_requests, wrap_int64
from kubesched.api.selectors import pod_matches_node_selector_and_affinity
from kubesched.cluster.embedded.kubelet.lifecycle import ADMIT, PodAdmitResult
from kubesched.k8s.objects import Obj, is_terminal
from kubesched.scheduler.plugins.fit import fits

if TYPE_CHECKING:
    from kubesched.cluster.embedded.apiserver.server import ApiServer


class PredicateAdmitHandler:
    """Keeps, per node, the pods its kubelet runs (from watch events), so that a check costs the
    node's pods, not the cluster's."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self._running: dict[str, dict[str, Obj]] = {}  # node -> uid -> pod
        api.watch(self)

    # -- watch: the running pods of each node ------------------------------------------------
    def _note(self, pod: Obj, gone: bool = False) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        uid = pod["metadata"].get("uid", "")
        running = not gone and (pod.get("status") or {}).get("phase") == "Running" and not is_terminal(pod)
        if running:
            self._running.setdefault(node, {})[uid] = pod
        else:
            self._running.get(node, {}).pop(uid, None)

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._note(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod":
            self._note(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._note(obj, gone=True)

    def _admitted(self, node_name: str, pod: Obj) -> list[Obj]:
        """The node's other pods that its kubelet runs (bound, started, not finished)."""
        uid = pod["metadata"].get("uid")
        return [p for u, p in sorted(self._running.get(node_name, {}).items()) if u != uid]

    def admit(self, pod: Obj, node: Obj) -> PodAdmitResult:
        if "status" not in node:  # no Node object: nothing to check against
            return ADMIT
        node_name = node["metadata"]["name"]
        others = self._admitted(node_name, pod)
        allocatable = node_allocatable(node)
        used: dict[str, int] = {}
        for other in others:
            for name, amount in pod_requests(other).items():
                used[name] = wrap_int64(used.get(name, 0) + amount)
        requests = pod_requests(pod)
        checked = [(name, amount) for name, amount in requests.items() if amount > 0 and name != "pods"]
        short = fits(checked, allocatable=allocatable, requested=used, pods=len(others),
                     allowed_pods=allocatable.get("pods"))
        if short:
            first = short[0]
            return PodAdmitResult.refuse(
                f"OutOf{first.resource_name}",
                f"Node didn't have enough resource: {first.resource_name}, requested: {first.requested}, "
                f"used: {first.used}, capacity: {first.capacity}")
        if not pod_matches_node_selector_and_affinity(pod, node):
            return PodAdmitResult.refuse("NodeAffinity", "Predicate NodeAffinity failed")
        taken = {(ip, proto, port) for other in others for ip, proto, port in pod_host_ports(other)}
        for ip, proto, port in pod_host_ports(pod):
            if any(p == port and q == proto and (ip == "0.0.0.0" or i in ("0.0.0.0", ip)) for i, q, p in taken):
                return PodAdmitResult.refuse("NodePorts", "Predicate NodePorts failed")
        return ADMIT
