"""ResourceQuota controller: keeps ``status.used`` right after admission has charged it.

- a pod that finishes (Succeeded/Failed) gives back its compute usage and ``pods``; a deleted pod
  gives back everything, ``count/pods`` included (a terminating pod still holds its quota);
- a quota whose ``spec`` changes (or that was stored without a status) is recounted from the pods
  of its namespace (``status.hard`` = ``spec.hard``);
- a pod that reached the store without going through admission is charged when it appears.

Releases are written through the API server before the workload controllers see the same pod event
(this controller is registered first), so a replacement pod is admitted against the freed quota.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.cluster.embedded.apiserver import quota as quotas
from kubesched.k8s.objects import Obj, namespace_of

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster


class ResourceQuotaController:
    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        cluster.api.watch(self)

    def _quotas(self, ns: str) -> list[Obj]:
        return sorted(
            (q for q in self.api.iter("ResourceQuota") if namespace_of(q) == ns),
            key=lambda q: q["metadata"]["name"],
        )

    def _apply(self, pod: Obj, delta: dict[str, int], release: bool) -> None:
        if not any(delta.values()):
            return
        ns = namespace_of(pod)
        for quota in self._quotas(ns):
            if not quotas.quota_matches_pod(quota, pod):
                continue
            used = quotas.subtract_usage(quota, delta) if release else quotas.add_usage(quota, delta)
            if used is not None:
                self.api.update(quotas.with_used(quota, used))

    def _recount(self, quota: Obj) -> None:
        ns = namespace_of(quota)
        current = self.api.get("ResourceQuota", ns, quota["metadata"]["name"])
        if current is None:
            return
        pods = [p for p in self.api.iter("Pod") if namespace_of(p) == ns]
        status = {**(current.get("status") or {}), **quotas.compute_status(current, pods, self.cluster.now())}
        if status != current.get("status"):
            self.api.update({**current, "status": status})

    # -- events ----------------------------------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            meta = obj["metadata"]
            key = (namespace_of(obj), meta["name"])
            # a pod admission charged already is not charged again
            if not self.api.take_quota_charge(*key) and self._quotas(key[0]):
                self._apply(obj, quotas.pod_usage(obj, self.cluster.now()), release=False)
        elif kind == "ResourceQuota":
            status = obj.get("status") or {}
            if status.get("hard") != (obj.get("spec") or {}).get("hard") or "used" not in status:
                self._recount(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod":
            now = self.cluster.now()
            if quotas.counts_compute_usage(old, now) == quotas.counts_compute_usage(new, now):
                return  # usage only changes when a pod stops counting (requests are immutable)
            if not self._quotas(namespace_of(new)):
                return
            before, after = quotas.pod_usage(old, now), quotas.pod_usage(new, now)
            released = {k: v - after.get(k, 0) for k, v in before.items()}
            self._apply(new, released, release=True)
        elif kind == "ResourceQuota" and old.get("spec") != new.get("spec"):
            self._recount(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            meta = obj["metadata"]
            ns = namespace_of(obj)
            self.api.forget_quota_charge(ns, meta["name"])
            if self._quotas(ns):
                self._apply(obj, quotas.pod_usage(obj, self.cluster.now()), release=True)
