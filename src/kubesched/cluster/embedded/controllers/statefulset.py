"""StatefulSet controller.

Pods are ``<name>-<ordinal>`` for ordinals ``spec.ordinals.start`` (default 0) up to
``start + replicas - 1``, with the template labels plus ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``; ``spec.hostname`` is the pod
name and ``spec.subdomain`` the ``serviceName``.

- ``OrderedReady`` (default): pods are created one at a time in ordinal order, the next only once
  every lower ordinal is Running and Ready and none is terminating; scale-down removes the highest
  ordinal first, one at a time, waiting for it to be gone, and only while all the others are healthy.
- ``Parallel``: all missing pods are created and all surplus pods deleted at once.

A pod that finished (Succeeded or Failed) is deleted and recreated; a deleted pod is recreated with
the same name once the old object is gone.

``volumeClaimTemplates``: before a pod is created, each template's claim
``<template>-<statefulset>-<ordinal>`` is created unless it exists (labels: the template's plus the
selector's ``matchLabels``), and the pod gets a volume of the template's name using it. Claims are
kept when pods go (the default ``persistentVolumeClaimRetentionPolicy``: Retain).
"""

from __future__ import annotations

from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.cluster.embedded.controllers.index import PodEntry
from kubesched.cluster.embedded.controllers.replicaset import template_hash
from kubesched.cluster.embedded.controllers.util import (
    controller_ref,
    is_deleting,
    pod_from_template,
    replicas_of,
)
from kubesched.k8s.objects import Obj, is_terminal, split_key

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


def _ordinal(sts_name: str, name: str) -> int | None:
    prefix = f"{sts_name}-"
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    return int(name[len(prefix) :])


class StatefulSetController(Controller):
    kind = "StatefulSet"

    def _new_pod(self, sts: Obj, ordinal: int) -> Obj:
        name = f"{sts['metadata']['name']}-{ordinal}"
        revision = f"{sts['metadata']['name']}-{template_hash((sts.get('spec') or {}).get('template') or {})}"
        pod = pod_from_template(
            sts,
            name,
            labels={POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision},
        )
        pod["spec"]["hostname"] = name
        service = (sts.get("spec") or {}).get("serviceName")
        if service:
            pod["spec"]["subdomain"] = service
        templates = (sts.get("spec") or {}).get("volumeClaimTemplates") or []
        if templates:
            claims = {t["metadata"]["name"]: f"{t['metadata']['name']}-{name}" for t in templates}
            volumes = [v for v in pod["spec"].get("volumes") or () if v.get("name") not in claims]
            volumes.extend({"name": t, "persistentVolumeClaim": {"claimName": c}} for t, c in claims.items())
            pod["spec"]["volumes"] = volumes
        return pod

    def _ensure_claims(self, sts: Obj, ordinal: int) -> None:
        """The claims of the pod's volumeClaimTemplates, created when missing."""
        meta = sts["metadata"]
        spec = sts.get("spec") or {}
        ns = meta.get("namespace")
        selector_labels = dict((spec.get("selector") or {}).get("matchLabels") or {})
        for template in spec.get("volumeClaimTemplates") or ():
            tmeta = template.get("metadata") or {}
            name = f"{tmeta['name']}-{meta['name']}-{ordinal}"
            if self.api.get("PersistentVolumeClaim", ns, name) is not None:
                continue
            claim = {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": ns,
                             "labels": {**(tmeta.get("labels") or {}), **selector_labels},
                             **({"annotations": dict(tmeta["annotations"])} if tmeta.get("annotations") else {})},
                "spec": dict(template.get("spec") or {}),
            }
            self.cluster.create(claim)

    def sync(self, key: str) -> None:
        sts = self.get(key)
        if sts is None:
            return
        ns, name = split_key(key)
        uid = sts["metadata"]["uid"]
        spec = sts.get("spec") or {}
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        want = range(start, start + replicas_of(sts))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        owned: dict[int, tuple[str, PodEntry]] = {}
        for (_, pod_name), entry in self.index.owned(uid).keys.items():
            ordinal = _ordinal(name, pod_name)
            if ordinal is not None:
                owned[ordinal] = (pod_name, entry)

        healthy = True
        for ordinal in want:
            item = owned.get(ordinal)
            if item is None or (item[1].terminal and not item[1].deleting):
                pod = self.api.get("Pod", ns, f"{name}-{ordinal}")
                if pod is not None and (controller_ref(pod) or {}).get("uid") != uid:
                    healthy = False  # the name is taken by someone else's pod
                    if parallel:
                        continue
                    break
                if pod is not None and is_terminal(pod) and not is_deleting(pod):
                    self.delete_pod(pod)  # finished: removed at once, then recreated
                    pod = self.api.get("Pod", ns, f"{name}-{ordinal}")
                if pod is None:
                    healthy = False
                    self._ensure_claims(sts, ordinal)
                    if self.create_pod(key, self._new_pod(sts, ordinal)) is None or not parallel:
                        break
                    continue
                self.index.note(pod)
                item = (pod["metadata"]["name"], self.index.owned(uid).keys[(ns, pod["metadata"]["name"])])
            entry = item[1]
            if entry.deleting or not entry.ready:
                healthy = False
                if not parallel:
                    break

        condemned = sorted(((o, item) for o, item in owned.items() if o not in want), key=lambda x: -x[0])
        doomed = []
        if parallel:
            doomed = [pod_name for _, (pod_name, entry) in condemned if not entry.deleting]
        elif condemned and healthy and not any(entry.deleting for _, (_, entry) in condemned):
            doomed = [condemned[0][1][0]]
        for pod_name in doomed:
            pod = self.api.get("Pod", ns, pod_name)
            if pod is not None:
                self.delete_pod(pod)
        self._update_status(sts)

    def _update_status(self, sts: Obj) -> None:
        current = self.api.get("StatefulSet", sts["metadata"].get("namespace"), sts["metadata"]["name"])
        if current is None:
            return
        entries = [e for e in self.index.owned(sts["metadata"]["uid"]).keys.values() if not e.terminal]
        ready = sum(1 for e in entries if e.ready and not e.deleting)
        self.update_status(
            current,
            {
                "replicas": len(entries),
                "readyReplicas": ready,
                "currentReplicas": len(entries),
                "updatedReplicas": len(entries),
                "availableReplicas": ready,
            },
        )
