"""The scheduling queue (upstream ``internal/queue/scheduling_queue.go``, v1.28, queueing hints off).

Three places a pending pod can be: ``activeQ`` (a heap ordered by the profile's QueueSort), ``backoffQ``
(a heap ordered by backoff expiry) and the ``unschedulable`` pool (pods waiting for a cluster event or
the 5-minute timeout; gated pods live here too). The :class:`Nominator` remembers nominated pods per
node. Periodic flushes are driven by the owner (``flush_backoff_completed`` every second,
``flush_unschedulable_leftover`` every 30 s).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubesched.k8s.journal import Journal
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    ClusterEvent,
    Status,
)
from kubesched.scheduler.framework.types import PodInfo

INITIAL_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 10.0
MAX_IN_UNSCHEDULABLE_SECONDS = 300.0

# Event labels (upstream internal/queue/events.go)
ASSIGNED_POD_ADD = ClusterEvent("Pod", ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent("Pod", UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent("Pod", 2, "AssignedPodDelete")
NODE_ADD = ClusterEvent("Node", ADD, "NodeAdd")
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", 63, "UnschedulableTimeout")


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pod: PodInfo
    timestamp: float
    seq: int
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    gated: bool = False

    @property
    def uid(self) -> str:
        return self.pod.uid


class Nominator:
    """Pods nominated to nodes: ``node -> [PodInfo]`` and ``uid -> node``, with a journal of the
    changes (``(+1 or -1, node, pod)``) for readers that keep sums up to date."""

    #: how many changes the journal keeps; a reader further behind starts again from :meth:`nominated`
    JOURNAL_LENGTH = 8192

    def __init__(self, pod_exists_unassigned: Callable[[PodInfo], bool], journal_length: int = JOURNAL_LENGTH) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        self._exists_unassigned = pod_exists_unassigned
        self._priorities: Counter[int] = Counter()  # of the nominated pods
        self._journal: Journal[tuple[int, str, PodInfo]] = Journal(journal_length)

    def changes(self, since: int | None) -> tuple[int, Sequence[tuple[int, str, PodInfo]] | None]:
        """A mark to pass next time and the changes after ``since`` (a mark this method gave) in
        order: ``(+1, node, pod)`` nominated, ``(-1, node, pod)`` no longer; None for the changes
        when they cannot be told (no mark, or the journal forgot since): start again from
        :meth:`nominated`."""
        return self._journal.since(since)

    def nominated(self) -> Iterable[tuple[str, PodInfo]]:
        """Every (node, pod) nomination now."""
        return ((node, pod) for node, pods in self._by_node.items() for pod in pods)

    def add(self, pod: PodInfo, override: str | None = None) -> None:
        """``override=None`` is upstream's Noop mode (use status.nominatedNodeName)."""
        self.delete(pod)
        node = pod.nominated_node_name if override is None else override
        if not node or not self._exists_unassigned(pod):
            return
        self._node_of[pod.uid] = node
        pods = self._by_node.setdefault(node, [])
        if all(p.uid != pod.uid for p in pods):
            pods.append(pod)
            self._priorities[pod.priority] += 1
            self._journal.note((1, node, pod))

    def delete(self, pod: PodInfo) -> None:
        node = self._node_of.pop(pod.uid, None)
        if node is None:
            return
        before = self._by_node.get(node, [])
        pods = [p for p in before if p.uid != pod.uid]
        gone = next((p for p in before if p.uid == pod.uid), None)  # at most one: add() keeps uids unique
        if gone is not None:
            self._priorities[gone.priority] -= 1
            if not self._priorities[gone.priority]:
                del self._priorities[gone.priority]
            self._journal.note((-1, node, gone))
        if pods:
            self._by_node[node] = pods
        else:
            self._by_node.pop(node, None)

    def update(self, old: PodInfo, new: PodInfo) -> None:
        override: str | None = None
        if not old.nominated_node_name and not new.nominated_node_name:
            kept = self._node_of.get(old.uid)
            if kept is not None:
                override = kept
        self.delete(old)
        self.add(new, override)

    def pods_for_node(self, node: str) -> list[PodInfo]:
        return list(self._by_node.get(node, ()))

    def nominated_to_add(self, pod: PodInfo) -> Mapping[str, Sequence[PodInfo]]:
        """The nominated pods ``pod``'s filters count on each node (priority >= its own, itself
        left out); a node may map to an empty list. Without lower-priority nominations this is the
        nominator's own map (read only), with at most the pod's own node copied."""
        if self._priorities and min(self._priorities) >= pod.priority:
            own = self._node_of.get(pod.uid)
            if own is None:
                return self._by_node
            out: dict[str, Sequence[PodInfo]] = dict(self._by_node)
            out[own] = [p for p in self._by_node.get(own, ()) if p.uid != pod.uid]
            return out
        priority, uid = pod.priority, pod.uid
        return {node: [p for p in pods if p.priority >= priority and p.uid != uid]
                for node, pods in self._by_node.items()}

    def nominated_node(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def has_any(self) -> bool:
        return bool(self._by_node)

    def nodes(self) -> Iterable[str]:
        return self._by_node.keys()


class SchedulingQueue:
    def __init__(
        self,
        clock: Callable[[], float],
        queue_sort_key: Callable[[QueuedPodInfo], tuple[object, ...]],
        pre_enqueue: Callable[[PodInfo], Status | None],
        plugin_events: Callable[[str], dict[str, list[ClusterEvent]]],
        nominator: Nominator,
        initial_backoff: float = INITIAL_BACKOFF_SECONDS,
        max_backoff: float = MAX_BACKOFF_SECONDS,
        max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE_SECONDS,
    ) -> None:
        self._now = clock
        self._sort_key = queue_sort_key
        self._pre_enqueue = pre_enqueue
        self._plugin_events = plugin_events  # schedulerName -> {plugin: [events]}
        self.nominator = nominator
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._seq = itertools.count()
        # heap entries carry a token; an entry is live only while its token is the pod's current one
        self._tokens = itertools.count()
        self._active: list[tuple[tuple[object, ...], int, int, QueuedPodInfo]] = []
        self._active_set: dict[str, QueuedPodInfo] = {}
        self._active_token: dict[str, int] = {}
        self._backoff: list[tuple[float, int, int, QueuedPodInfo]] = []
        self._backoff_set: dict[str, QueuedPodInfo] = {}
        self._backoff_token: dict[str, int] = {}
        self.unschedulable: dict[str, QueuedPodInfo] = {}
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self.on_change: Callable[[], None] = lambda: None
        #: ``scheduler_queue_incoming_pods_total``: pods entering each queue, by event
        self.incoming: Counter[tuple[str, str]] = Counter()

    # -- inspection ------------------------------------------------------------------------
    def pending_counts(self) -> dict[str, int]:
        gated = sum(1 for q in self.unschedulable.values() if q.gated)
        return {
            "active": len(self._active_set),
            "backoff": len(self._backoff_set),
            "unschedulable": len(self.unschedulable) - gated,
            "gated": gated,
        }

    def has_active(self) -> bool:
        return bool(self._active_set)

    def has_backoff(self) -> bool:
        return bool(self._backoff_set)

    def next_backoff_expiry(self) -> float | None:
        self._clean_backoff_top()
        if not self._backoff:
            return None
        return self._backoff[0][0]

    def oldest_unschedulable_timestamp(self) -> float | None:
        if not self.unschedulable:
            return None
        return min(q.timestamp for q in self.unschedulable.values())

    def contains(self, uid: str) -> bool:
        return uid in self._active_set or uid in self._backoff_set or uid in self.unschedulable

    def queued(self, uid: str) -> QueuedPodInfo | None:
        return self._active_set.get(uid) or self._backoff_set.get(uid) or self.unschedulable.get(uid)

    # -- backoff ---------------------------------------------------------------------------
    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        duration = self.initial_backoff
        for _ in range(1, qpi.attempts):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return duration

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.backoff_duration(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        if qpi.gated:
            return False
        return self.backoff_expiry(qpi) > self._now()

    # -- heaps -----------------------------------------------------------------------------
    def _push_active(self, qpi: QueuedPodInfo) -> None:
        token = next(self._tokens)
        self._active_set[qpi.uid] = qpi
        self._active_token[qpi.uid] = token
        heapq.heappush(self._active, (self._sort_key(qpi), qpi.seq, token, qpi))

    def _push_backoff(self, qpi: QueuedPodInfo) -> None:
        token = next(self._tokens)
        self._backoff_set[qpi.uid] = qpi
        self._backoff_token[qpi.uid] = token
        heapq.heappush(self._backoff, (self.backoff_expiry(qpi), qpi.seq, token, qpi))

    def _clean_backoff_top(self) -> None:
        while self._backoff:
            _, _, token, qpi = self._backoff[0]
            if qpi.uid in self._backoff_set and self._backoff_token.get(qpi.uid) == token:
                return
            heapq.heappop(self._backoff)

    def _add_to_active(self, qpi: QueuedPodInfo, event: str) -> bool:
        """Run PreEnqueue; a failing pod is kept in the unschedulable pool, gated."""
        status = self._pre_enqueue(qpi.pod)
        if status is not None and not status.is_success():
            qpi.gated = True
            qpi.unschedulable_plugins = {status.plugin} if status.plugin else set()
            self.unschedulable[qpi.uid] = qpi
            return False
        qpi.gated = False
        self.unschedulable.pop(qpi.uid, None)
        self._push_active(qpi)
        self.incoming["active", event] += 1
        self.on_change()
        return True

    # -- upstream queue operations ---------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        now = self._now()
        qpi = QueuedPodInfo(pod=pod, timestamp=now, seq=next(self._seq))
        self._remove_everywhere(pod.uid)
        if not self._add_to_active(qpi, "PodAdd"):
            return
        self.nominator.add(pod)

    def pop(self) -> QueuedPodInfo | None:
        while self._active:
            _, _, token, qpi = heapq.heappop(self._active)
            if qpi.uid in self._active_set and self._active_token.get(qpi.uid) == token:
                del self._active_set[qpi.uid]
                qpi.attempts += 1
                if qpi.initial_attempt_timestamp is None:
                    qpi.initial_attempt_timestamp = self._now()
                self.scheduling_cycle += 1
                qpi.unschedulable_plugins = set()
                return qpi
        return None

    def update(self, old: PodInfo, new: PodInfo, spec_changed: bool) -> None:
        uid = new.uid
        for bucket in (self._active_set, self._backoff_set):
            qpi = bucket.get(uid)
            if qpi is not None:
                qpi.pod = new
                self.nominator.update(old, new)
                if bucket is self._active_set:
                    self._push_active(qpi)  # re-key: the update may change the sort key
                return
        qpi = self.unschedulable.get(uid)
        if qpi is not None:
            qpi.pod = new
            self.nominator.update(old, new)
            if spec_changed:
                if self.is_backing_off(qpi):
                    del self.unschedulable[uid]
                    self._push_backoff(qpi)
                    self.incoming["backoff", "PodUpdate"] += 1
                else:
                    self._add_to_active(qpi, "PodUpdate")
            return
        qpi = QueuedPodInfo(pod=new, timestamp=self._now(), seq=next(self._seq))
        if self._add_to_active(qpi, "PodUpdate"):
            self.nominator.add(new)

    def delete(self, pod: PodInfo) -> None:
        self.nominator.delete(pod)
        self._remove_everywhere(pod.uid)

    def _remove_everywhere(self, uid: str) -> None:
        self._active_set.pop(uid, None)
        self._backoff_set.pop(uid, None)
        self.unschedulable.pop(uid, None)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, pod_scheduling_cycle: int) -> bool:
        """Upstream ``addUnschedulableWithoutQueueingHint`` (v1.28, hints off): backoffQ if a move
        request arrived during the pod's cycle, else the unschedulable pool. A pod without
        unschedulable plugins (it failed with an error) is *not* sent to backoffQ for that alone:
        that rule came with v1.29's PendingPlugins; in v1.28 such a pod waits for any event."""
        if self.contains(qpi.uid):
            return False
        qpi.timestamp = self._now()
        if self.move_request_cycle >= pod_scheduling_cycle:
            self._push_backoff(qpi)
            self.incoming["backoff", "ScheduleAttemptFailure"] += 1
        else:
            self.unschedulable[qpi.uid] = qpi
            self.incoming["unschedulable", "ScheduleAttemptFailure"] += 1
        self.nominator.add(qpi.pod)
        return True

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Upstream ``Activate``: move pods from the unschedulable pool or backoffQ to activeQ (if
        PreEnqueue lets them) and re-register their nomination."""
        for pod in pods:
            qpi = self.unschedulable.pop(pod.uid, None) or self._backoff_set.pop(pod.uid, None)
            if qpi is not None and self._add_to_active(qpi, "ForceActivate"):
                self.nominator.add(qpi.pod)

    # -- periodic flushes ------------------------------------------------------------------
    def flush_backoff_completed(self) -> None:
        now = self._now()
        while True:
            self._clean_backoff_top()
            if not self._backoff:
                return
            expiry, _, _, qpi = self._backoff[0]
            if expiry > now:
                return
            heapq.heappop(self._backoff)
            del self._backoff_set[qpi.uid]
            self._add_to_active(qpi, "BackoffComplete")

    def flush_unschedulable_leftover(self) -> None:
        now = self._now()
        to_move = [q for q in self.unschedulable.values() if now - q.timestamp > self.max_in_unschedulable]
        if to_move:
            self.move_pods(to_move, UNSCHEDULABLE_TIMEOUT)

    # -- event-driven moves ----------------------------------------------------------------
    def move_all(self, event: ClusterEvent, pre_check: Callable[[PodInfo], bool] | None = None) -> None:
        pods = [q for q in self.unschedulable.values() if pre_check is None or pre_check(q.pod)]
        self.move_pods(pods, event)

    def move_pods(self, pods: list[QueuedPodInfo], event: ClusterEvent) -> None:
        for qpi in sorted(pods, key=lambda q: q.seq):
            if not self._worth_requeuing(qpi, event):
                continue
            if self.is_backing_off(qpi):
                self.unschedulable.pop(qpi.uid, None)
                self._push_backoff(qpi)
                self.incoming["backoff", event.label] += 1
            else:
                self._add_to_active(qpi, event.label)
        self.move_request_cycle = self.scheduling_cycle

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        if not qpi.unschedulable_plugins or (event.resource == "*" and event.action == 63):
            return True
        registered = self._plugin_events(qpi.pod.scheduler_name)
        for plugin in qpi.unschedulable_plugins:
            for evt in registered.get(plugin, ()):
                if evt.matches(event):
                    return True
        return False

    def unschedulable_pods(self) -> list[QueuedPodInfo]:
        return list(self.unschedulable.values())
