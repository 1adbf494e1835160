"""A pod's identity: the name that pairs the same pod across two runs of a scenario (a what-if's
baseline and changed run, the ui's links to a pod after an edit, a replay against recorded bindings).

A controller names the pods it makes ``<base>-<5 random characters>`` from the cluster's seeded
random draws, so any change that draws one more or one less name before it (a pod added earlier, a
node cordoned, a replacement after a preemption) gives the same pod another name. The identity does
not depend on those draws:

- a pod of the input (a scenario's or a snapshot's pod, or one a scenario step creates) and a pod
  whose name its controller chose without drawing (a StatefulSet's ``<set>-<ordinal>``): its key,
  ``namespace/name``;
- a pod a controller made during the run with a generated name: ``namespace/<kind>/<name>#<n>``,
  the controller told by the pod's controlling ownerReference (``ReplicaSet``, ``Job``,
  ``DaemonSet``), ``n`` the pod's creation order among the pods that controller made in the run,
  from 0;
- for a ReplicaSet controlled by a Deployment, the controller is the Deployment at the ReplicaSet's
  revision: ``namespace/Deployment/<deployment>@<revision>#<n>``, the revision being the order in
  which the Deployment's ReplicaSets appeared in the run, from 1 (the input's first, in the order
  they are restored or created). Not the ReplicaSet's name: it carries the hash of the pod template,
  so a what-if that changes the Deployment's template (another PriorityClass, other requests) would
  pair none of its pods, where the revision pairs the Deployment's first pod with its first pod. A
  rollout during the run makes a new revision, whose pods have identities of their own.

No two pods of one run have the same identity, except a pod made again under its old name (a
StatefulSet's pod after a deletion), whose identity, as its key, is the latest one's. Kubernetes
names contain no ``/``, ``@`` or ``#``, so the forms cannot be mistaken for each other.

:class:`PodIdentities` works the identities out during a run (a watcher of the cluster attached
before any object is created); the SimulationResult carries each pod's as ``pods[key]["identity"]``,
and :func:`pod_by_identity` finds a pod of a result by it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.k8s.objects import Obj, key_of, namespace_of

#: the kind of a ReplicaSet's controller whose revisions stand for the ReplicaSet in an identity
_DEPLOYMENT = "Deployment"


def _controller_ref(obj: Obj) -> dict[str, Any] | None:
    return next((r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None)


class PodIdentities:
    """Every pod's identity, as the pods appear in a run (a watcher of the cluster, attached before
    any object is created). ``input_keys``: the keys of the pods of the input (the scenario's objects
    and the pods its steps create); the first pod of each such key is the input's."""

    def __init__(self, input_keys: Iterable[str]) -> None:
        self._input = set(input_keys)
        #: pod key -> the identity of the latest pod of that key
        self.of: dict[str, str] = {}
        self._pods: dict[str, str] = {}  # pod uid -> identity
        self._made: Counter[str] = Counter()  # controller -> pods it made
        self._replica_sets: dict[str, str] = {}  # a Deployment's ReplicaSet's uid -> the Deployment at its revision
        self._revisions: Counter[tuple[str, str]] = Counter()  # (namespace, Deployment) -> ReplicaSets seen

    def _note_replica_set(self, rs: Obj) -> None:
        meta = rs["metadata"]
        uid = meta.get("uid") or key_of(rs)
        ref = _controller_ref(rs)
        if uid in self._replica_sets or ref is None or ref.get("kind") != _DEPLOYMENT:
            return
        deployment = (namespace_of(rs), ref.get("name") or "")
        self._revisions[deployment] += 1
        self._replica_sets[uid] = f"{deployment[0]}/{_DEPLOYMENT}/{deployment[1]}@{self._revisions[deployment]}"

    def _controller(self, pod: Obj) -> str | None:
        """The controller of a pod made with a generated name, as an identity names it (None: the
        pod's name is its identity)."""
        meta = pod["metadata"]
        ref = _controller_ref(pod)
        if ref is None or not meta.get("generateName"):
            return None
        by_revision = self._replica_sets.get(ref.get("uid") or "") if ref.get("kind") == "ReplicaSet" else None
        return by_revision or f"{namespace_of(pod)}/{ref.get('kind') or ''}/{ref.get('name') or ''}"

    def _note_pod(self, pod: Obj) -> None:
        key = key_of(pod)
        uid = pod["metadata"].get("uid") or key
        identity = self._pods.get(uid)
        if identity is None:
            controller = None if key in self._input else self._controller(pod)
            self._input.discard(key)
            if controller is None:
                identity = key
            else:
                identity = f"{controller}#{self._made[controller]}"
                self._made[controller] += 1
            self._pods[uid] = identity
        self.of[key] = identity

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._note_pod(obj)
        elif kind == "ReplicaSet":
            self._note_replica_set(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "ReplicaSet":  # adopted by a Deployment after it was created
            self._note_replica_set(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        pass


def identities(result: Mapping[str, Any]) -> dict[str, str]:
    """pod key -> identity, for every pod of a SimulationResult (a pod of a result made before pods
    had identities: its key)."""
    return {key: pod.get("identity") or key for key, pod in result["pods"].items()}


def pod_by_identity(result: Mapping[str, Any], identity: str) -> str | None:
    """The key (``namespace/name``) of the pod of a SimulationResult whose identity is ``identity``
    (None: the run has no such pod)."""
    pods = result["pods"]
    if identity in pods and (pods[identity].get("identity") or identity) == identity:
        return identity  # a pod whose key is its identity (a lookup, whatever the result's size)
    return next((key for key, pod in pods.items() if pod.get("identity") == identity), None)


def named(entry: Mapping[str, Any], field: str = "pod", baseline_field: str = "baselinePod") -> str:
    """A pod as a what-if entry names it, for people: its name in the changed run, and the
    baseline's when that differs (``batch-abc (was batch-xyz)``)."""
    was = entry.get(baseline_field)
    return f"{entry[field]} (was {was})" if was and was != entry[field] else str(entry[field])
