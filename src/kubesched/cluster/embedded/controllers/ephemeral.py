"""The ephemeral volume controller (upstream ``pkg/controller/volume/ephemeral``): a pod's generic
ephemeral volume (``volumes[].ephemeral.volumeClaimTemplate``) gets the claim ``<pod>-<volume>``,
controlled by the pod, made from the template; the garbage collector deletes it with the pod. A claim
of that name that the pod does not own is left alone (the scheduler then reports it)."""

from __future__ import annotations

from typing import Any

from kubesched.api.volumes.claims import ephemeral_claim_name
from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.k8s.objects import ApiError, Obj, key_of, namespace_of


def _owned_by(claim: Obj, pod: Obj) -> bool:
    uid = (pod.get("metadata") or {}).get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in (claim.get("metadata") or {}).get("ownerReferences") or ())


class EphemeralVolumeController(Controller):
    kind = "Pod"

    def start(self) -> None:
        for pod in sorted(self.api.list("Pod"), key=key_of):
            self._ensure_claims(pod)

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == "Pod" and old is None:
            self._ensure_claims(new)

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind != "Pod":
            return
        ns = namespace_of(obj)
        for volume in (obj.get("spec") or {}).get("volumes") or ():
            if volume.get("ephemeral") is None:
                continue
            claim = self.api.get("PersistentVolumeClaim", ns, ephemeral_claim_name(obj, volume))
            if claim is not None and _owned_by(claim, obj):
                try:
                    self.api.delete("PersistentVolumeClaim", ns, claim["metadata"]["name"])
                except ApiError:
                    pass

    def sync(self, key: str) -> None:  # everything happens in the event handlers
        return

    def _ensure_claims(self, pod: Obj) -> None:
        ns = namespace_of(pod)
        meta = pod.get("metadata") or {}
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            ephemeral = volume.get("ephemeral")
            if ephemeral is None:
                continue
            name = ephemeral_claim_name(pod, volume)
            if self.api.get("PersistentVolumeClaim", ns, name) is not None:
                continue
            template: dict[str, Any] = ephemeral.get("volumeClaimTemplate") or {}
            tmeta = template.get("metadata") or {}
            claim = {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": name, "namespace": ns,
                    "labels": dict(tmeta.get("labels") or {}),
                    "annotations": dict(tmeta.get("annotations") or {}),
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"),
                                         "uid": meta.get("uid"), "controller": True, "blockOwnerDeletion": True}],
                },
                "spec": dict(template.get("spec") or {}),
            }
            self.cluster.create(claim)
