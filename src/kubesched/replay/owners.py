"""Workloads in a replay: the controllers the history records (Deployments, ReplicaSets,
StatefulSets, Jobs) are replayed, and the replay's own controllers make their pods.

The rule (docs/replay.md, "Controllers"): a pod whose controlling owner the replay has is **the
controller's business**. The recorded creation of such a pod is not a step: it is the reference for
the pod the replay's controller makes in its place, paired by the pod's identity
(:mod:`kubesched.sim.identity`: the owner and the creation order among the pods it made, or the
name for a StatefulSet's pods). What drives the controller is what drove the recorded one: the
workload's creation, its spec changes (replica counts, a new template: a rollout) and its deletion.
Both creating pods would double the workload, and only the controller knows when the replay needs
a replacement (a pod preempted in the replay and not in the recording, or the other way round).

A ReplicaSet that a replayed Deployment controls is the Deployment controller's business in turn:
its recorded creation counts a revision of the Deployment (the identities' ``@revision``), and its
writes are not replayed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj

#: audit log resources of the workloads a replay plays, and their kinds
WORKLOADS = {"deployments": "Deployment", "replicasets": "ReplicaSet", "statefulsets": "StatefulSet",
             "jobs": "Job"}
#: users whose pod deletions are a controller's (a scale-down, the garbage collector, a Job's
#: cleanup): the replay's controllers make their own
CONTROLLER_USERS = ("system:serviceaccount:kube-system:", "system:kube-controller-manager")


def controller_ref(obj: Obj | None) -> dict[str, Any] | None:
    return next((r for r in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
                 if isinstance(r, dict) and r.get("controller")), None)


def is_controller_user(user: str) -> bool:
    return user.startswith(CONTROLLER_USERS)


@dataclass(frozen=True)
class IdentityStep:
    """A write to a pod the replay's controller made, told by its identity (its name is the
    controller's draw): ``delete``, ``evict`` (with ``grace``) or ``patch`` (``merge``)."""

    at: float
    action: str
    identity: str
    merge: Obj | None = None
    grace: int | None = None
    source: str = ""


class Owners:
    """The workloads the replay has (by ``(kind, namespace, name)``) and the identity each
    recorded pod of theirs has."""

    def __init__(self) -> None:
        self.replayed: set[tuple[str, str, str]] = set()
        #: a Deployment's ReplicaSet (namespace, name) -> the Deployment at its revision
        self._revision_of: dict[tuple[str, str], str] = {}
        self._revisions: Counter[tuple[str, str]] = Counter()
        self._made: Counter[str] = Counter()

    @staticmethod
    def _ns(obj: Obj) -> str:
        return (obj.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE

    def deployment_of(self, rs: Obj) -> str | None:
        """The replayed Deployment that controls ``rs`` (a ReplicaSet), if any."""
        ref = controller_ref(rs)
        if ref is None or ref.get("kind") != "Deployment":
            return None
        ns = self._ns(rs)
        return ref.get("name") if ("Deployment", ns, ref.get("name") or "") in self.replayed else None

    def add(self, obj: Obj) -> None:
        """A workload the replay has (created at the start or by a step); a ReplicaSet of a
        replayed Deployment counts the Deployment's next revision."""
        ns, name = self._ns(obj), obj["metadata"]["name"]
        if (obj["kind"], ns, name) in self.replayed:
            return
        self.replayed.add((obj["kind"], ns, name))
        deployment = self.deployment_of(obj) if obj["kind"] == "ReplicaSet" else None
        if deployment is not None:
            self._revisions[(ns, deployment)] += 1
            self._revision_of[(ns, name)] = f"{ns}/Deployment/{deployment}@{self._revisions[(ns, deployment)]}"

    def owner_of(self, pod: Obj) -> tuple[str, str, str] | None:
        """The replayed workload controlling ``pod`` (None: the pod is replayed as recorded)."""
        ref = controller_ref(pod)
        if ref is None:
            return None
        owner = (ref.get("kind") or "", self._ns(pod), ref.get("name") or "")
        return owner if owner in self.replayed else None

    def identity(self, pod: Obj, owner: tuple[str, str, str]) -> str:
        """The identity of a pod ``owner`` made in the window, in the history's creation order (a
        StatefulSet's pods, named by ordinal: their key)."""
        kind, ns, name = owner
        meta = pod.get("metadata") or {}
        if kind == "StatefulSet" or not meta.get("generateName"):
            return f"{ns}/{meta['name']}"
        controller = self._revision_of.get((ns, name)) or f"{ns}/{kind}/{name}"
        n = self._made[controller]
        self._made[controller] += 1
        return f"{controller}#{n}"


def restorable(obj: Obj, uids: dict[tuple[str, str, str], str], *, node: str | None = None) -> Obj:
    """A workload, or a pod of one, as it stands at the window's start, restored as existing (as a
    snapshot's objects are: the controllers adopt their pods, nothing is re-created): its uid and
    resourceVersion kept (made up when the history has none), its controlling owner's uid the one
    the replay gives the owner, managed fields and (for a pod) the scheduler's fields dropped, a
    pod bound to ``node`` running."""
    out = deep_copy(obj)
    meta = out.setdefault("metadata", {})
    meta.pop("managedFields", None)
    meta.setdefault("namespace", DEFAULT_NAMESPACE)
    key = (out["kind"], meta["namespace"], meta["name"])
    meta["uid"] = uids.setdefault(key, meta.get("uid") or f"replay-{'-'.join(key)}")
    meta.setdefault("resourceVersion", "1")
    ref = controller_ref(out)
    if ref is not None:
        owner = (ref.get("kind") or "", meta["namespace"], ref.get("name") or "")
        ref["uid"] = uids.setdefault(owner, ref.get("uid") or f"replay-{'-'.join(owner)}")
    if out["kind"] == "Pod":
        spec = out.setdefault("spec", {})
        spec["nodeName"] = node
        out["status"] = {"phase": "Running"}
    return out


def metadata_patch(old: Obj | None, new: Obj) -> Obj | None:
    """A merge patch making ``old``'s labels and annotations ``new``'s, key by key (keys only in
    ``old`` removed): only what changed, so that a controller's own labels on the replay's pod (its
    ``pod-template-hash``) stay. None: nothing changed."""
    patch: dict[str, Any] = {}
    for field in ("labels", "annotations"):
        before = ((old or {}).get("metadata") or {}).get(field) or {}
        after = (new.get("metadata") or {}).get(field) or {}
        diff = {k: v for k, v in after.items() if before.get(k) != v}
        diff.update({k: None for k in before if k not in after})
        if diff:
            patch[field] = diff
    return {"metadata": patch} if patch else None
