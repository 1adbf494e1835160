"""PodDisruptionBudget status controller (``pkg/controller/disruption``).

For each PDB, over the pods of its namespace its selector matches (``{}`` matches all, no selector
none):

- ``currentHealthy``: pods that are not terminating, are not listed in ``status.disruptedPods``
  (entries expire 2 minutes after the eviction that wrote them) and have ``Ready=True``;
- ``minAvailable`` integer: ``desiredHealthy`` = the value, ``expectedPods`` = number of pods;
- ``minAvailable`` percentage / ``maxUnavailable``: ``expectedPods`` = the sum of the scales
  (``spec.replicas``) of the pods' controllers — a Deployment for pods of its ReplicaSets, a
  ReplicaSet, StatefulSet or ReplicationController; pods without a controller count for nothing
  (upstream only warns about them), so a PDB with a percentage over bare pods expects 0 pods.
  ``desiredHealthy`` = ceil(percentage × expected) for minAvailable, expected − ceil(maxUnavailable)
  (at least 0) otherwise. A pod controlled by a kind without a scale (DaemonSet, Job) makes the sync
  fail: ``disruptionsAllowed`` is set to 0 with condition ``DisruptionAllowed=False/SyncFailed``;
- ``disruptionsAllowed`` = max(0, currentHealthy − desiredHealthy), and 0 when expectedPods ≤ 0.

**Pinned budgets.** A PDB *created* with ``status.disruptionsAllowed`` already set (a scenario
pinning the value, see docs/scenarios.md) keeps that value for its whole life; the other status fields
are still maintained. The status is written only when a value changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.selectors import LabelSelector
from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.cluster.embedded.controllers.util import controller_ref, is_deleting, is_ready, replicas_of
from kubesched.k8s.objects import Obj, key_of, namespace_of, split_key
from kubesched.k8s.timefmt import parse_rfc3339, rfc3339

DELETION_TIMEOUT = 120.0
_SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")


class SyncError(Exception):
    pass


def scaled_value(value: Any, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent`` rounding up."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].lstrip("-").isdigit():
        raise SyncError("invalid value for IntOrString: invalid type: string is not a percentage")
    return math.ceil(int(text[:-1]) * total / 100)


def _labels(pod: Obj) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


_Ref = tuple[str, str, str]  # controller (kind, name, uid)


@dataclass
class _Member:
    healthy: bool  # Ready and not terminating
    ref: _Ref | None


@dataclass
class _Budget:
    """What the controller knows of a PDB's pods, from watch events, with running counts."""

    selector: LabelSelector
    members: dict[str, _Member] = field(default_factory=dict)
    healthy: int = 0
    by_ref: dict[_Ref, set[str]] = field(default_factory=dict)

    def put(self, name: str, member: _Member | None) -> None:
        old = self.members.pop(name, None)
        if old is not None:
            self.healthy -= old.healthy
            if old.ref is not None:
                names = self.by_ref[old.ref]
                names.discard(name)
                if not names:
                    del self.by_ref[old.ref]
        if member is not None:
            self.members[name] = member
            self.healthy += member.healthy
            if member.ref is not None:
                self.by_ref.setdefault(member.ref, set()).add(name)


def _member(pod: Obj) -> _Member:
    ref = controller_ref(pod)
    key = (str(ref.get("kind")), str(ref.get("name")), str(ref.get("uid"))) if ref is not None else None
    return _Member(is_ready(pod) and not is_deleting(pod), key)


class DisruptionController(Controller):
    kind = "PodDisruptionBudget"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pinned: dict[str, int] = {}
        self._budgets: dict[str, _Budget] = {}
        #: budgets by namespace and one of the labels their selector requires; the others by namespace
        self._by_label: dict[str, dict[tuple[str, str], set[str]]] = {}
        self._by_any_labels: dict[str, set[str]] = {}
        #: the budgets each pod (namespace, name) is a member of
        self._member_of: dict[tuple[str, str], set[str]] = {}
        self._recheck: dict[str, float] = {}

    # -- membership ----------------------------------------------------------------------------
    @staticmethod
    def _selector(pdb: Obj) -> LabelSelector:
        try:
            return LabelSelector.from_dict((pdb.get("spec") or {}).get("selector"))
        except ValueError:
            return LabelSelector(is_nil=True)

    def _pdb_keys(self, ns: str) -> list[str]:
        return sorted(k for k in self._budgets if split_key(k)[0] == ns)

    def _index(self, key: str, selector: LabelSelector, present: bool) -> None:
        """Add (remove) a budget to (from) the label index: a budget whose selector requires labels
        is found through one of them (a pod without that label cannot match it), the others
        (expressions only, or everything) are looked at for every pod."""
        ns = split_key(key)[0]
        if selector.is_nil:
            return  # matches no pod
        if selector.match_labels:
            group = self._by_label.setdefault(ns, {}).setdefault(selector.match_labels[0], set())
        else:
            group = self._by_any_labels.setdefault(ns, set())
        if present:
            group.add(key)
        else:
            group.discard(key)

    def _put(self, key: str, budget: _Budget, pod_key: tuple[str, str], member: _Member | None) -> None:
        """Set a pod's membership of a budget, keeping the pod's list of budgets in step."""
        budget.put(pod_key[1], member)
        budgets = self._member_of.setdefault(pod_key, set())
        if member is not None:
            budgets.add(key)
        else:
            budgets.discard(key)
            if not budgets:
                del self._member_of[pod_key]

    def _forget_budget(self, key: str, budget: _Budget) -> None:
        ns = split_key(key)[0]
        for name in list(budget.members):
            self._put(key, budget, (ns, name), None)
        self._index(key, budget.selector, present=False)

    def _rebuild(self, pdb: Obj) -> None:
        key = key_of(pdb)
        ns = split_key(key)[0]
        old = self._budgets.get(key)
        if old is not None:
            self._forget_budget(key, old)
        budget = _Budget(self._selector(pdb))
        for p in self.api.iter("Pod"):
            if namespace_of(p) == ns and budget.selector.matches(_labels(p)):
                self._put(key, budget, (ns, p["metadata"]["name"]), _member(p))
        self._index(key, budget.selector, present=True)
        self._budgets[key] = budget

    # -- events ----------------------------------------------------------------------------------
    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == self.kind:
            if old is None and "disruptionsAllowed" in (new.get("status") or {}):
                self._pinned[new["metadata"]["uid"]] = int(new["status"]["disruptionsAllowed"])
            if old is None or old.get("spec") != new.get("spec"):
                self._rebuild(new)
            # any change, status included (an eviction adding to disruptedPods); our own writes
            # lead to one more sync that finds nothing to change
            self.enqueue(key_of(new))
        elif kind == "Pod":
            if old is not None and not self._pod_changed_for_pdb(old, new):
                return
            self._pod_event(new, gone=False)
        elif kind in _SCALED_KINDS and old is not None and replicas_of(old) != replicas_of(new):
            self.enqueue_all(self._pdb_keys(namespace_of(new)))

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == self.kind:
            self._pinned.pop(obj["metadata"]["uid"], None)
            budget = self._budgets.pop(key_of(obj), None)
            if budget is not None:
                self._forget_budget(key_of(obj), budget)
        elif kind == "Pod":
            self._pod_event(obj, gone=True)

    @staticmethod
    def _pod_changed_for_pdb(old: Obj, new: Obj) -> bool:
        return (
            _labels(old) != _labels(new)
            or is_ready(old) != is_ready(new)
            or is_deleting(old) != is_deleting(new)
            or controller_ref(old) != controller_ref(new)
        )

    def _pod_event(self, pod: Obj, gone: bool) -> None:
        """A pod came, changed or went: the budgets it was a member of and those that may select it
        now (found through the label index) are brought up to date and synced, in key order."""
        ns = namespace_of(pod)
        name = pod["metadata"]["name"]
        pod_key = (ns, name)
        candidates = set(self._member_of.get(pod_key, ()))
        labels = _labels(pod)
        if not gone:
            by_label = self._by_label.get(ns)
            if by_label:
                for pair in labels.items():
                    candidates.update(by_label.get(pair, ()))
            candidates.update(self._by_any_labels.get(ns, ()))
        for key in sorted(candidates):
            budget = self._budgets[key]
            was = name in budget.members
            now_in = not gone and budget.selector.matches(labels)
            self._put(key, budget, pod_key, _member(pod) if now_in else None)
            if was or now_in:
                self.enqueue(key)

    # -- reconcile -------------------------------------------------------------------------------
    def _scale(self, ref: _Ref, ns: str) -> int | None:
        kind, name, uid = ref
        if kind == "ReplicaSet":
            rs = self.api.get("ReplicaSet", ns, name)
            if rs is None or rs["metadata"].get("uid") != uid:
                return None
            owner = controller_ref(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                deployment = self.api.get("Deployment", ns, owner["name"])
                if deployment is None or deployment["metadata"].get("uid") != owner.get("uid"):
                    return None
                return replicas_of(deployment)
            return replicas_of(rs)
        if kind in ("StatefulSet", "ReplicationController"):
            obj = self.api.get(kind, ns, name)
            if obj is None or obj["metadata"].get("uid") != uid:
                return None
            return replicas_of(obj)
        return None

    def _expected_scale(self, budget: _Budget, ns: str) -> int:
        total = 0
        for ref in sorted(budget.by_ref):
            scale = self._scale(ref, ns)
            if scale is None:
                raise SyncError(f'found no controllers for pod "{min(budget.by_ref[ref])}"')
            total += scale
        return total

    def _expected_and_desired(self, spec: dict[str, Any], budget: _Budget, ns: str) -> tuple[int, int]:
        if spec.get("maxUnavailable") is not None:
            expected = self._expected_scale(budget, ns)
            return expected, max(0, expected - scaled_value(spec["maxUnavailable"], expected))
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(budget.members), min_available
        if min_available is not None:
            expected = self._expected_scale(budget, ns)
            return expected, scaled_value(min_available, expected)
        return 0, 0

    def sync(self, key: str) -> None:
        pdb = self.get(key)
        if pdb is None:
            return
        ns, _ = split_key(key)
        budget = self._budgets.get(key)
        if budget is None:
            self._rebuild(pdb)
            budget = self._budgets[key]
        status = dict(pdb.get("status") or {})
        pinned = self._pinned.get(pdb["metadata"]["uid"])
        now = self.cluster.now()
        try:
            expected, desired = self._expected_and_desired(pdb.get("spec") or {}, budget, ns)
        except SyncError as err:
            status["disruptionsAllowed"] = 0 if pinned is None else pinned
            status["conditions"] = [self._condition(status, False, "SyncFailed", str(err), now)]
            self._write(pdb, status)
            return
        healthy = budget.healthy
        disrupted: dict[str, str] = {}
        if status.get("disruptedPods"):
            disrupted = self._disrupted(key, status["disruptedPods"], budget, now)
            healthy -= sum(1 for name in disrupted if budget.members[name].healthy)
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        if pinned is not None:
            allowed = pinned
        status.update(
            {
                "currentHealthy": healthy,
                "desiredHealthy": desired,
                "expectedPods": expected,
                "disruptionsAllowed": allowed,
            }
        )
        if disrupted:
            status["disruptedPods"] = disrupted
        else:
            status.pop("disruptedPods", None)
        reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
        status["conditions"] = [self._condition(status, allowed > 0, reason, "", now)]
        self._write(pdb, status)

    def _disrupted(self, key: str, listed: dict[str, str], budget: _Budget, now: float) -> dict[str, str]:
        """The ``disruptedPods`` entries still pending: pods still selected, not terminating, whose
        eviction is less than 2 minutes old; a resync is scheduled when the next one expires."""
        result: dict[str, str] = {}
        earliest: float | None = None
        for name in sorted(listed):
            ns = split_key(key)[0]
            pod = self.api.get("Pod", ns, name)
            if name not in budget.members or pod is None or is_deleting(pod):
                continue
            expires = parse_rfc3339(listed[name]) + DELETION_TIMEOUT
            if expires > now:
                result[name] = listed[name]
                earliest = expires if earliest is None else min(earliest, expires)
        if earliest is not None and self._recheck.get(key) != earliest:
            self._recheck[key] = earliest
            self.cluster.loop.call_at(earliest, lambda: self.enqueue(key))
        return result

    @staticmethod
    def _condition(status: dict[str, Any], ok: bool, reason: str, message: str, now: float) -> dict[str, Any]:
        value = "True" if ok else "False"
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
        since = old["lastTransitionTime"] if old and old.get("status") == value and old.get("lastTransitionTime") else rfc3339(now)
        return {
            "type": "DisruptionAllowed",
            "status": value,
            "reason": reason,
            "message": message,
            "lastTransitionTime": since,
        }

    def _write(self, pdb: Obj, status: dict[str, Any]) -> None:
        if status != (pdb.get("status") or {}):
            self.api.update({**pdb, "status": status})
