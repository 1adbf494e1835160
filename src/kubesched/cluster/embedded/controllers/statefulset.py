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
"""

from __future__ import annotations

from kubesched.cluster.embedded.controllers.base import (
    Controller,
    controller_ref,
    is_deleting,
    is_ready,
    is_running_and_ready,
    is_terminal,
    pod_from_template,
    replicas_of,
    split_key,
)
from kubesched.cluster.embedded.controllers.replicaset import template_hash
from kubesched.cluster.protocol import Obj

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


def _ordinal(sts_name: str, pod: Obj) -> int | None:
    name = pod["metadata"]["name"]
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
        return pod

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

        healthy = True
        for ordinal in want:
            pod = self.store.get("Pod", ns, f"{name}-{ordinal}")
            if pod is not None and (controller_ref(pod) or {}).get("uid") != uid:
                healthy = False  # the name is taken by someone else's pod
                if parallel:
                    continue
                break
            if pod is not None and is_terminal(pod) and not is_deleting(pod):
                self.delete_pod(pod)
                pod = self.store.get("Pod", ns, f"{name}-{ordinal}")
            if pod is None:
                healthy = False
                if self.create_pod(key, self._new_pod(sts, ordinal)) is None or not parallel:
                    break
                continue
            if is_deleting(pod) or not is_running_and_ready(pod):
                healthy = False
                if not parallel:
                    break

        condemned: list[tuple[int, Obj]] = []
        for pod in self.index.pods(uid):
            found = _ordinal(name, pod)
            if found is not None and found not in want:
                condemned.append((found, pod))
        condemned.sort(key=lambda item: -item[0])
        if parallel:
            for _, pod in condemned:
                if not is_deleting(pod):
                    self.delete_pod(pod)
        elif condemned and healthy and not any(is_deleting(p) for _, p in condemned):
            self.delete_pod(condemned[0][1])
        self._update_status(sts)

    def _update_status(self, sts: Obj) -> None:
        current = self.store.get("StatefulSet", sts["metadata"].get("namespace"), sts["metadata"]["name"])
        if current is None:
            return
        pods = [p for p in self.index.pods(sts["metadata"]["uid"]) if not is_terminal(p)]
        ready = sum(1 for p in pods if is_ready(p) and not is_deleting(p))
        self.update_status(
            current,
            {
                "replicas": len(pods),
                "readyReplicas": ready,
                "currentReplicas": len(pods),
                "updatedReplicas": len(pods),
                "availableReplicas": ready,
            },
        )
