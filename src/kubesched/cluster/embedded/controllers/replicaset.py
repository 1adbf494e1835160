"""Deployment and ReplicaSet controllers.

ReplicaSet: keeps ``spec.replicas`` *active* pods (not terminal, not being deleted). A pod that is
deleted or finishes is replaced at once (a terminating pod no longer counts, as upstream); a
finished pod is left in place. Pods are named ``<rs>-<5 random characters>`` (cluster rng), carry
the template labels and the ReplicaSet as controller. Scale-down deletes, in this order of
preference: unscheduled before scheduled, Pending before Running, not ready before ready, pods
on nodes holding more of this ReplicaSet's pods first, ready for less time first, newer first.

Deployment: one ReplicaSet ``<deployment>-<hash>`` per pod template (``pod-template-hash`` label
added to its selector, labels and template), scaled to ``spec.replicas``; an owned ReplicaSet whose
template equals the Deployment's (the hash label aside) is the current one, whatever its name; ReplicaSets of older
templates are scaled to 0 at once (no surge / unavailability pacing of RollingUpdate).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.cluster.embedded.controllers.util import (
    NAME_ALPHABET,
    controller_ref,
    creation_time,
    is_active,
    is_ready,
    owner_reference,
    pod_from_template,
    ready_condition,
    replicas_of,
)
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import (
    ApiError,
    Obj,
    key_of,
    namespace_of,
    object_key,
    split_key,
)
from kubesched.k8s.timefmt import parse_rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster
    from kubesched.cluster.embedded.controllers.index import PodIndex

POD_TEMPLATE_HASH = "pod-template-hash"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _ready_since(pod: Obj) -> float:
    cond = ready_condition(pod)
    ts = (cond or {}).get("lastTransitionTime")
    return parse_rfc3339(ts) if ts else 0.0


def deletion_order(pods: list[Obj]) -> list[Obj]:
    """Active pods, the ones to delete first at the front (upstream ``ActivePodsWithRanks``)."""
    per_node: dict[str, int] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node:
            per_node[node] = per_node.get(node, 0) + 1

    def rank(p: Obj) -> tuple[Any, ...]:
        node = (p.get("spec") or {}).get("nodeName")
        ready = is_ready(p)
        return (
            1 if node else 0,
            _PHASE_RANK.get((p.get("status") or {}).get("phase") or "Pending", 0),
            1 if ready else 0,
            -per_node.get(node or "", 0),
            -_ready_since(p) if ready else 0.0,
            -creation_time(p),
            [-ord(c) for c in p["metadata"].get("uid", "")],
        )

    return sorted(pods, key=rank)


def template_hash(template: Any, collision_count: int = 0) -> str:
    """FNV-1a (32 bit) of the template, its decimal digits mapped onto the safe name alphabet."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(NAME_ALPHABET[ord(c) % len(NAME_ALPHABET)] for c in str(h))


def _without_hash(template: Any) -> Any:
    template = template if isinstance(template, dict) else {}
    meta = template.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    return {**template, "metadata": {**meta, "labels": labels}}


def _newest_matching(replica_sets: list[Obj], template: Obj) -> Obj | None:
    """Upstream ``FindNewReplicaSet``: the oldest owned ReplicaSet whose pod template equals the
    Deployment's, the ``pod-template-hash`` label aside (how a Deployment finds the ReplicaSet it
    made, whatever hash function made its name: a snapshot's ReplicaSets are adopted as they are)."""
    wanted = _without_hash(template)
    matching = [rs for rs in replica_sets if _without_hash((rs.get("spec") or {}).get("template")) == wanted]
    matching.sort(key=lambda rs: (creation_time(rs), rs["metadata"]["name"]))
    return matching[0] if matching else None


class ReplicaSetController(Controller):
    kind = "ReplicaSet"

    def sync(self, key: str) -> None:
        rs = self.get(key)
        if rs is None:
            return
        ns = namespace_of(rs)
        uid = rs["metadata"]["uid"]
        diff = replicas_of(rs) - self.index.owned(uid).active
        if diff > 0 and not self.is_blocked(key):
            for _ in range(diff):
                name, generate_name = self.random_name(ns, rs["metadata"]["name"])
                if self.create_pod(key, pod_from_template(rs, name, generate_name=generate_name)) is None:
                    break
        elif diff < 0:
            active = [p for p in self.index.pods(uid) if is_active(p)]
            for pod in deletion_order(active)[:-diff]:
                self.delete_pod(pod)
        owned = self.index.owned(uid)
        current = self.get(key)
        if current is not None:
            self.update_status(
                current,
                {
                    "replicas": owned.active,
                    "fullyLabeledReplicas": owned.active,
                    "readyReplicas": owned.ready,
                    "availableReplicas": owned.ready,
                },
            )


class DeploymentController(Controller):
    kind = "Deployment"

    def __init__(self, cluster: EmbeddedCluster, index: PodIndex) -> None:
        #: ReplicaSet keys by the uid of the Deployment that controls them
        self._owned: dict[str, dict[str, None]] = {}
        super().__init__(cluster, index)
        for rs in cluster.api.list("ReplicaSet"):
            self._note_replica_set(rs)

    def _note_replica_set(self, rs: Obj) -> None:
        ref = controller_ref(rs)
        if ref is not None and ref.get("kind") == "Deployment" and ref.get("uid"):
            self._owned.setdefault(str(ref["uid"]), {})[key_of(rs)] = None

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == "ReplicaSet":
            self._note_replica_set(new)
            ref = controller_ref(new)
            if ref is not None and ref.get("kind") == "Deployment":
                self.enqueue(object_key("Deployment", namespace_of(new), ref["name"]))
            return
        if kind == "Deployment" and old is not None and old.get("spec") == new.get("spec"):
            return
        if kind == "Deployment":
            self.enqueue(key_of(new))

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == "ReplicaSet":
            ref = controller_ref(obj)
            if ref is not None:
                self._owned.get(str(ref.get("uid")), {}).pop(key_of(obj), None)
            return
        if kind != "Deployment":
            return
        for rs in self._replica_sets(obj):
            try:
                self.cluster.delete("ReplicaSet", rs["metadata"].get("namespace"), rs["metadata"]["name"])
            except ApiError:
                pass  # already gone

    def _replica_sets(self, deployment: Obj) -> list[Obj]:
        """The ReplicaSets ``deployment`` controls, by name."""
        ns = namespace_of(deployment)
        uid = deployment["metadata"]["uid"]
        found = []
        for key in self._owned.get(uid, {}):
            rs_ns, name = split_key(key)
            rs = self.api.get("ReplicaSet", rs_ns, name)
            if rs is not None and rs_ns == ns and (controller_ref(rs) or {}).get("uid") == uid:
                found.append(rs)
        return sorted(found, key=lambda rs: rs["metadata"]["name"])

    def sync(self, key: str) -> None:
        deployment = self.get(key)
        if deployment is None:
            return
        ns, name = split_key(key)
        spec = deployment.get("spec") or {}
        owned = self._replica_sets(deployment)
        collisions = int((deployment.get("status") or {}).get("collisionCount") or 0)
        current = _newest_matching(owned, spec.get("template") or {})
        want = replicas_of(deployment)
        if current is None:
            while True:  # a ReplicaSet of the hash name that another owner has: a hash collision
                h = template_hash(spec.get("template") or {}, collisions)
                clash = self.api.get("ReplicaSet", ns, f"{name}-{h}")
                if clash is None or (controller_ref(clash) or {}).get("uid") == deployment["metadata"]["uid"]:
                    break
                collisions += 1
            current = clash or self.cluster.create(self._new_replica_set(deployment, h))
            if current is not None:
                self._note_replica_set(current)  # its watch event may come after this sync
        if current is not None and replicas_of(current) != want:
            current = self.api.update({**current, "spec": {**current["spec"], "replicas": want}})
        for rs in owned:
            if current is not None and rs["metadata"]["uid"] == current["metadata"]["uid"]:
                continue
            if replicas_of(rs) != 0:
                self.api.update({**rs, "spec": {**rs["spec"], "replicas": 0}})
        self._update_status(key, current, collisions)

    def _new_replica_set(self, deployment: Obj, h: str) -> Obj:
        spec = deployment.get("spec") or {}
        template = deep_copy(spec.get("template") or {})
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), POD_TEMPLATE_HASH: h}
        selector = deep_copy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: h}
        meta = deployment["metadata"]
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{h}",
                "namespace": namespace_of(deployment),
                "labels": dict(tmeta["labels"]),
                "ownerReferences": [owner_reference(deployment)],
            },
            "spec": {"replicas": replicas_of(deployment), "selector": selector, "template": template},
        }

    def _update_status(self, key: str, current: Obj | None, collisions: int) -> None:
        deployment = self.get(key)
        if deployment is None:
            return
        owned = self._replica_sets(deployment)
        total = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0}
        for rs in owned:
            status = rs.get("status") or {}
            for field in total:
                total[field] += int(status.get(field) or 0)
        updated = 0
        if current is not None:
            fresh = self.api.get("ReplicaSet", current["metadata"].get("namespace"), current["metadata"]["name"])
            updated = int(((fresh or {}).get("status") or {}).get("replicas") or 0)
        fields: dict[str, Any] = {**total, "updatedReplicas": updated}
        fields["unavailableReplicas"] = max(0, replicas_of(deployment) - total["availableReplicas"])
        if collisions:
            fields["collisionCount"] = collisions
        self.update_status(deployment, fields)
