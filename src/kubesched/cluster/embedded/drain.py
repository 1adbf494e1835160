"""``kubectl drain NODE`` in the embedded cluster (upstream ``k8s.io/kubectl/pkg/drain``, v1.28).

A drain cordons the node, then sorts its pods with kubectl's filters:

- mirror pods (static pods) are skipped;
- DaemonSet-managed pods: refused unless ``ignore_daemonsets`` (then skipped: their controller
  would put them back at once);
- pods with ``emptyDir`` volumes: refused unless ``delete_emptydir_data``;
- pods that declare no controller: refused unless ``force`` (then deleted, never to come back);
- finished pods are deleted whatever their kind.

Any refusal aborts the drain before anything is evicted (the node stays cordoned), with kubectl's
messages ("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ns/name").
Otherwise every pod is evicted through the eviction API (``force`` does not bypass a
PodDisruptionBudget); an eviction refused with 429 is retried every 5 s, as kubectl does, until it
succeeds or the drain's ``timeout`` (none by default) runs out. The pod then terminates gracefully
(``grace_period`` overrides its own) and the drain is done when the last one is gone. Retries do not
keep a simulation going on their own: a budget that can never allow leaves the drain blocked when
the run ends.

:meth:`Drain.report` tells what happened to each pod: evicted (when, after how long blocked by
which PDB), skipped, refused, still blocked at the end (``blockedAtEnd``) or the timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.durations import parse_duration
from kubesched.cluster.embedded.apiserver.eviction import covering_budgets
from kubesched.cluster.embedded.controllers.util import controller_ref, is_daemonset_pod, is_mirror_pod
from kubesched.k8s.objects import ApiError, Obj, is_terminal, key_of

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

RETRY_AFTER = 5.0  # kubectl's wait between evictions refused with 429


@dataclass(frozen=True)
class DrainOptions:
    """kubectl drain's flags: ``--force``, ``--ignore-daemonsets``, ``--delete-emptydir-data``,
    ``--grace-period`` (None: the pod's own) and ``--timeout`` (None: wait for ever)."""

    force: bool = False
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    grace_period: int | None = None
    timeout: float | None = None


@dataclass
class _PodDrain:
    key: str
    uid: str
    blocked_by: str | None = None  # the PDB that refused the last attempt
    first_refused: float | None = None
    evicted: float | None = None


@dataclass
class Drain:
    cluster: EmbeddedCluster
    node: str
    options: DrainOptions = field(default_factory=DrainOptions)
    started: float = 0.0
    pods: dict[str, _PodDrain] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    outcome: str = "running"
    finished: float | None = None

    # -- start -------------------------------------------------------------------------------------
    def start(self) -> None:
        cluster = self.cluster
        self.started = cluster.now()
        cluster.api.watch(self)
        node = cluster.api.get("Node", None, self.node)
        if node is None:
            self._finish(f'nodes "{self.node}" not found', failed=True)
            return
        if not (node.get("spec") or {}).get("unschedulable"):
            cluster.api.update({**node, "spec": {**(node.get("spec") or {}), "unschedulable": True}})
        cluster.log.record("Cordoned", f"Node/{self.node}", node=self.node, message="drain: node cordoned")
        to_evict: list[Obj] = []
        problems: dict[str, list[str]] = {}
        for pod in sorted((p for p in cluster.api.iter("Pod") if (p.get("spec") or {}).get("nodeName") == self.node),
                          key=key_of):
            verdict = self._filter(pod)
            if verdict is None:
                to_evict.append(pod)
            elif verdict.startswith("cannot"):
                problems.setdefault(verdict, []).append(key_of(pod))
            else:
                self.skipped.append({"pod": key_of(pod), "why": verdict})
        if problems:
            self.refused = [f"{what}: {', '.join(keys)}" for what, keys in problems.items()]
            self._finish("cannot drain: " + "; ".join(self.refused), failed=True)
            return
        for pod in to_evict:
            state = _PodDrain(key_of(pod), pod["metadata"]["uid"])
            self.pods[state.key] = state
            self._evict(state)
        if self.options.timeout is not None:
            cluster.loop.call_later(self.options.timeout, self._time_out)
        self._check_done()

    def _filter(self, pod: Obj) -> str | None:
        """None: evict it; ``cannot ...``: kubectl refuses the drain; anything else: skipped, why."""
        if is_mirror_pod(pod):
            return "mirror pod"
        if is_terminal(pod):
            return None
        opts = self.options
        if is_daemonset_pod(pod):
            if opts.ignore_daemonsets:
                return "DaemonSet-managed"
            return "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
        if any("emptyDir" in v for v in (pod.get("spec") or {}).get("volumes") or []) and not opts.delete_emptydir_data:
            return "cannot delete Pods with local storage (use --delete-emptydir-data to override)"
        if controller_ref(pod) is None and not opts.force:
            return "cannot delete Pods that declare no controller (use --force to override)"
        return None

    # -- evictions ---------------------------------------------------------------------------------
    def _current(self, state: _PodDrain) -> Obj | None:
        ns, _, name = state.key.partition("/")
        pod = self.cluster.api.get("Pod", ns, name)
        return pod if pod is not None and pod["metadata"].get("uid") == state.uid else None

    def _evict(self, state: _PodDrain) -> None:
        if self.outcome != "running":
            return
        pod = self._current(state)
        if pod is None:
            self._check_done()
            return
        now = self.cluster.now()
        ns, _, name = state.key.partition("/")
        try:
            self.cluster.evict(ns, name, self.options.grace_period)
        except ApiError as err:
            if err.code != 429:
                state.blocked_by = f"error {err.code}: {err.message}"
            else:
                budgets = covering_budgets(self.cluster.api, pod)
                state.blocked_by = key_of(budgets[0]) if budgets else "(no budget)"
            if state.first_refused is None:
                state.first_refused = now
            # a background timer: a budget that never allows leaves the drain blocked, not the run endless
            self.cluster.loop.call_later(RETRY_AFTER, lambda: self._evict(state), background=True)
            return
        state.evicted = now
        self.cluster.log.record("Evicting", state.key, node=self.node,
                                message="drain: evicted" + (f" after {now - state.first_refused:g}s blocked by "
                                                            f"PodDisruptionBudget {state.blocked_by}"
                                                            if state.first_refused is not None else ""))
        self._check_done()

    # -- watch: the drain is over when its last pod is gone ----------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        pass

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        pass

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod" and key_of(obj) in self.pods:
            self._check_done()

    def _check_done(self) -> None:
        if self.outcome == "running" and all(self._current(s) is None for s in self.pods.values()):
            self._finish("drained")

    def _time_out(self) -> None:
        if self.outcome == "running":
            left = [s.key for s in self.pods.values() if self._current(s) is not None]
            self._finish(f"drain did not complete within {self.options.timeout:g}s: {', '.join(left)}", failed=True)

    def _finish(self, message: str, failed: bool = False) -> None:
        self.outcome = "failed" if failed else "drained"
        self.finished = self.cluster.now()
        self.cluster.log.record("DrainFailed" if failed else "Drained", f"Node/{self.node}", node=self.node,
                                message=message)

    # -- report ------------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        pods = []
        for state in self.pods.values():
            entry: dict[str, Any] = {"pod": state.key, "evicted": state.evicted}
            if state.first_refused is not None:
                # blocked until evicted, or until the drain gave up (timeout), or still at the run's end
                until = state.evicted if state.evicted is not None else (
                    self.finished if self.finished is not None else self.cluster.now())
                entry["blockedBy"] = state.blocked_by
                entry["blockedFor"] = round(until - state.first_refused, 6)
                if state.evicted is None and self.outcome == "running":
                    entry["blockedAtEnd"] = True  # blockedFor is then only as long as the run
            pods.append(entry)
        return {"node": self.node, "started": self.started, "outcome": self.outcome, "finished": self.finished,
                "options": {"force": self.options.force, "ignoreDaemonSets": self.options.ignore_daemonsets,
                            "deleteEmptyDirData": self.options.delete_emptydir_data,
                            "gracePeriod": self.options.grace_period, "timeout": self.options.timeout},
                "pods": pods, "skipped": list(self.skipped), "refused": list(self.refused)}


def start_drain(cluster: EmbeddedCluster, node: str, flags: dict[str, Any]) -> Drain:
    """Start draining ``node`` now with a drain step's flags (see :data:`DRAIN_FIELDS
    <kubesched.api.validation.DRAIN_FIELDS>`); the drain goes on by itself."""
    timeout = flags.get("timeout")
    options = DrainOptions(
        force=bool(flags.get("force")), ignore_daemonsets=bool(flags.get("ignoreDaemonSets")),
        delete_emptydir_data=bool(flags.get("deleteEmptyDirData")), grace_period=flags.get("gracePeriodSeconds"),
        timeout=None if timeout is None else parse_duration(timeout))
    drain = Drain(cluster, node, options)
    drain.start()
    return drain
