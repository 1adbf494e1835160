"""The ``volume`` workload of ``kube_real.py``: local PersistentVolumes bound on first consumer,
against a real API server with the PersistentVolume controller running, and the outcome a scheduler
leaves behind (placements, claim bindings, its events), written so two schedulers' runs compare.

Every node ``bench-node-I`` has two local volumes, ``pv-I-a`` (10Gi) and ``pv-I-b`` (20Gi), of the
StorageClass ``kube-real-bench-local`` (``kubernetes.io/no-provisioner``, ``WaitForFirstConsumer``),
each labelled with its node. The claims select their node's volumes by that label, so every pod
has exactly one node it can go to and the outcome does not depend on a scheduler's tie-breaking:
what is compared is how each scheduler reads volumes, not a random choice. By ``I % 10``:

- 0-5: a pod with one 5Gi claim: bound to the smaller volume that fits, ``pv-I-a``;
- 6: two pods, of 5Gi and 15Gi claims: the 15Gi claim can only take ``pv-I-b``, the 5Gi one the
  smallest left, whichever pod goes first;
- 7: one pod with both claims (5Gi and 15Gi);
- 8: a pod whose 30Gi claim no volume holds: unschedulable, "didn't find available persistent
  volumes to bind" on every node;
- 9: a claim bound ahead of time to ``pv-I-a`` (``spec.volumeName``; the PersistentVolume
  controller completes the binding), whose pod the volume's node affinity pins; and, for every
  tenth of these nodes, a pod whose claim does not exist and one whose claim is of an ``Immediate``
  class that no volume satisfies: both unschedulable with upstream's messages.

The scheduler binds each claim in PreBind (the volume's ``claimRef``) and waits for the
PersistentVolume controller (kube-controller-manager's ``persistentvolume-binder``) to finish the
binding, so the controller must run beside the API server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubesched.testkit.builders import make_pv, make_pvc, make_storage_class, with_claims

NAMESPACE = "kube-real-bench"
LOCAL_CLASS = "kube-real-bench-local"
IMMEDIATE_CLASS = "kube-real-bench-immediate"
VOLUME_LABEL = "kube-real-bench/node"
SCHEDULER_EVENTS = ("Scheduled", "FailedScheduling")

Obj = dict[str, Any]


def storage_classes() -> list[Obj]:
    return [make_storage_class(LOCAL_CLASS, "kubernetes.io/no-provisioner"),
            make_storage_class(IMMEDIATE_CLASS, "kubernetes.io/no-provisioner", wait=False)]


def volume_objects(node_names: list[str], pod: Callable[[str], Obj], pod_nodes: int = 0,
                   ) -> tuple[list[Obj], list[Obj], list[Obj], set[str]]:
    """The volumes of ``node_names``, the claims and pods for the first ``pod_nodes`` nodes (0: all;
    ``pod(name)`` makes a bare pod), and the names of the pods expected to bind."""
    volumes: list[Obj] = []
    claims: list[Obj] = []
    pods: list[Obj] = []
    bindable: set[str] = set()

    def claim(name: str, size: str, node: str, **kw: Any) -> str:
        claims.append(make_pvc(name, size, storage_class=kw.pop("storage_class", LOCAL_CLASS), namespace=NAMESPACE,
                               **kw, **({} if "volume" in kw else {"selector": {"matchLabels": {VOLUME_LABEL: node}}})))
        return name

    def add_pod(name: str, *claim_names: str, binds: bool = True) -> None:
        pods.append(with_claims(pod(name), *claim_names))
        if binds:
            bindable.add(name)

    for i, node in enumerate(node_names):
        for suffix, size in (("a", "10Gi"), ("b", "20Gi")):
            volumes.append(make_pv(f"pv-{i}-{suffix}", size, storage_class=LOCAL_CLASS, node=node,
                                   labels={VOLUME_LABEL: node}, persistentVolumeReclaimPolicy="Retain"))
        if pod_nodes and i >= pod_nodes:
            continue
        shape = i % 10
        if shape <= 5:
            add_pod(f"vol-{i}", claim(f"claim-{i}", "5Gi", node))
        elif shape == 6:
            add_pod(f"vol-{i}-small", claim(f"claim-{i}-small", "5Gi", node))
            add_pod(f"vol-{i}-large", claim(f"claim-{i}-large", "15Gi", node))
        elif shape == 7:
            add_pod(f"vol-{i}", claim(f"claim-{i}-small", "5Gi", node), claim(f"claim-{i}-large", "15Gi", node))
        elif shape == 8:
            add_pod(f"vol-{i}-too-big", claim(f"claim-{i}", "30Gi", node), binds=False)
        else:
            add_pod(f"vol-{i}-prebound", claim(f"claim-{i}", "5Gi", node, volume=f"pv-{i}-a"))
            if i % 100 == 9:
                add_pod(f"vol-{i}-no-claim", f"claim-{i}-missing", binds=False)
                add_pod(f"vol-{i}-immediate", claim(f"claim-{i}-immediate", "50Gi", node,
                                                    storage_class=IMMEDIATE_CLASS), binds=False)
    return volumes, claims, pods, bindable


def outcome(list_all: Callable[[str], list[Obj]]) -> Obj:
    """What a scheduler left: each pod's node, each claim's volume and phase, and each pod's distinct
    scheduler events (reason and message, the node names of a Scheduled message included)."""
    pods = list_all(f"/api/v1/namespaces/{NAMESPACE}/pods")
    claims = list_all(f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims")
    events: dict[str, set[tuple[str, str]]] = {}
    for event in list_all(f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events"):
        regarding = event.get("regarding") or {}
        if regarding.get("kind") == "Pod" and event.get("reason") in SCHEDULER_EVENTS:
            events.setdefault(regarding["name"], set()).add((event["reason"], event.get("note") or ""))
    return {
        "pods": {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in pods},
        "claims": {c["metadata"]["name"]: [c["spec"].get("volumeName") or "", (c.get("status") or {}).get("phase", "")]
                   for c in claims},
        "events": {name: sorted(map(list, pairs)) for name, pairs in sorted(events.items())},
    }


def differences(a: Obj, b: Obj, names: tuple[str, str] = ("A", "B")) -> list[str]:
    """Where two outcomes differ, one line each (empty: identical)."""
    lines = []
    for section in ("pods", "claims", "events"):
        left, right = a.get(section) or {}, b.get(section) or {}
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                lines.append(f"{section} {key}: {names[0]} {json.dumps(left.get(key))} | "
                             f"{names[1]} {json.dumps(right.get(key))}")
    return lines
