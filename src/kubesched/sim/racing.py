"""Schedulers that race: several schedulers, each with its own configuration, queue, cache and
timing, against the one embedded cluster (a Scenario's ``spec.schedulers``; docs/racing-schedulers.md).

Each scheduler talks to the cluster through an :class:`InformerView`, the cluster port as that
scheduler sees it: its writes go through at once, but the cluster's changes reach its cache and
queue ``informerDelay`` seconds late, as a watch that lags. A scheduler therefore only learns of
another's bindings (and of the pods its own preemptions freed) late, which is what lets two of them
place pods into the same space: the kubelet's admission then refuses the second pod
(:mod:`kubesched.cluster.embedded.kubelet.predicate`). ``bindDelay`` puts time between a
scheduling cycle and its binding's API write (:class:`DelayedBinding`).

:class:`RaceTracker` watches who placed each pod and who preempted whom, for the result's
``racing`` section (:meth:`Race.report`).
"""

from __future__ import annotations

import builtins
import functools
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.api.racing import SchedulerSpec, profile_names
from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.kubelet.nodeagent import REJECTED_PREFIX
from kubesched.des.clock import EventLoop, Timer
from kubesched.k8s.objects import Obj
from kubesched.scheduler.binding import BindingDone, BindingMode, BindingWork
from kubesched.scheduler.config import ConfigError
from kubesched.scheduler.framework.candidates import PreemptionRecord
from kubesched.scheduler.loop import SchedulerLoop
from kubesched.scheduler.ports import ClusterEventHandler, T
from kubesched.scheduler.records import Recorder
from kubesched.scheduler.scheduler import Scheduler


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


class RaceTracker:
    """Who placed each pod (the scheduler whose binding wrote its node), whom each scheduler's
    preemptions evicted, and the pods the kubelet's admission refused. Watches the cluster at once
    (no delay): it is the run's record, not a scheduler."""

    def __init__(self) -> None:
        #: pod uid -> the scheduler that bound it
        self.placed_by: dict[str, str] = {}
        #: (preempting scheduler, the victim's placing scheduler or "") -> victims
        self.victims: Counter[tuple[str, str]] = Counter()
        #: (placing scheduler or "", reason) -> pods the kubelet's admission refused
        self.rejected: Counter[tuple[str, str]] = Counter()
        #: scheduler -> pods it bound
        self.bound: Counter[str] = Counter()

    def placed(self, scheduler: str, pod: Obj) -> None:
        self.placed_by[_uid(pod)] = scheduler
        self.bound[scheduler] += 1

    def preempted(self, scheduler: str, victim: Obj) -> None:
        self.victims[(scheduler, self.placed_by.get(_uid(victim), ""))] += 1

    # -- watch: the kubelet's refusals -----------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        pass

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind != "Pod":
            return
        status = new.get("status") or {}
        if status.get("phase") != "Failed" or (old.get("status") or {}).get("phase") == "Failed":
            return
        if str(status.get("message") or "").startswith(REJECTED_PREFIX):
            self.rejected[(self.placed_by.get(_uid(new), ""), str(status.get("reason") or ""))] += 1

    def on_delete(self, kind: str, obj: Obj) -> None:
        pass


class _LaggingHandler:
    """A watch handler's events handed on ``delay`` seconds late, in order."""

    def __init__(self, handler: ClusterEventHandler, loop: EventLoop, delay: float) -> None:
        self._handler = handler
        self._loop = loop
        self._delay = delay
        self._pending: deque[tuple[Timer, Callable[[], None]]] = deque()

    def _later(self, deliver: Callable[[], None]) -> None:
        timer = self._loop.call_later(self._delay, self._next)
        self._pending.append((timer, deliver))

    def _next(self) -> None:
        _, deliver = self._pending.popleft()
        deliver()

    def catch_up(self) -> None:
        """Deliver at once every event still on its way (at the end of a run)."""
        while self._pending:
            timer, deliver = self._pending.popleft()
            self._loop.cancel(timer)
            deliver()

    def on_add(self, kind: str, obj: Obj) -> None:
        self._later(functools.partial(self._handler.on_add, kind, obj))

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        self._later(functools.partial(self._handler.on_update, kind, old, new))

    def on_delete(self, kind: str, obj: Obj) -> None:
        self._later(functools.partial(self._handler.on_delete, kind, obj))


class InformerView:
    """The cluster port as one racing scheduler sees it: reads and writes go to the cluster, watch
    events arrive ``informer_delay`` seconds late, and the events it records name it."""

    def __init__(self, cluster: EmbeddedCluster, name: str, informer_delay: float, tracker: RaceTracker) -> None:
        self._cluster = cluster
        self.name = name
        self._delay = informer_delay
        self._tracker = tracker
        self._lagging: list[_LaggingHandler] = []

    def now(self) -> float:
        return self._cluster.now()

    def watch(self, handler: ClusterEventHandler) -> None:
        if self._delay <= 0:
            self._cluster.watch(handler)
            return
        lagging = _LaggingHandler(handler, self._cluster.loop, self._delay)
        self._lagging.append(lagging)
        self._cluster.watch(lagging)

    def catch_up(self) -> None:
        for lagging in self._lagging:
            lagging.catch_up()

    def list(self, kind: str) -> builtins.list[Obj]:
        return self._cluster.list(kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._cluster.get(kind, namespace, name)

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        return self._cluster.changes(kind, since)

    def bind(self, pod: Obj, node_name: str) -> None:
        self._cluster.bind(pod, node_name)
        self._tracker.placed(self.name, pod)

    def update(self, obj: Obj) -> Obj:
        return self._cluster.update(obj)

    def patch_pod_status(self, pod: Obj, status_patch: Obj, *, wait: bool = True) -> None:
        self._cluster.patch_pod_status(pod, status_patch, wait=wait)

    def delete_pod(self, pod: Obj) -> None:
        self._cluster.delete_pod(pod)

    def call_all(self, calls: Sequence[Callable[[], T]]) -> builtins.list[T]:
        return self._cluster.call_all(calls)

    def record_event(self, obj: Obj, *, type: str, reason: str, action: str, note: str,
                     related: Obj | None = None, node: str | None = None) -> None:
        self._cluster.record_event(obj, type=type, reason=reason, action=action, note=note, related=related,
                                   node=node, reporter=self.name)
        if reason == "Preempted":
            self._tracker.preempted(self.name, obj)


class DelayedBinding:
    """Binding cycles that start ``delay`` seconds after their scheduling cycle (the binding's API
    call under way), then run as :class:`~kubesched.scheduler.binding.InlineBinding` runs them."""

    def __init__(self, loop: EventLoop, delay: float, inline: BindingMode) -> None:
        self._loop = loop
        self._delay = delay
        self._inline = inline
        self.in_flight = 0

    def submit(self, work: BindingWork, then: BindingDone) -> None:
        self.in_flight += 1

        def start() -> None:
            self.in_flight -= 1
            self._inline.submit(work, then)

        self._loop.call_later(self._delay, start)

    def finish(self) -> int:
        return 0

    def shutdown(self) -> None:
        pass


class _SharedRecorder(Recorder):
    """One scheduler's recorder: its records go to the run's shared lists (in the order the
    schedulers made them), and it keeps its own preemption decisions for its row of the report."""

    def __init__(self, shared: Recorder) -> None:
        super().__init__(keep_attempts=shared.keep_attempts)
        self.keep_rejected = shared.keep_rejected
        self.attempts = shared.attempts
        self.preemptions = shared.preemptions
        self.own: list[PreemptionRecord] = []

    def preemption(self, record: PreemptionRecord) -> None:
        super().preemption(record)
        self.own.append(record)


class RacingLoop:
    """The schedulers' loops at each simulated instant: every due timer, then each scheduler's
    cycles in the order the scenario lists them, until neither is left; then each arms its flushes."""

    def __init__(self, loops: builtins.list[SchedulerLoop], timers: EventLoop) -> None:
        self.loops = loops
        self.timers = timers

    def run_instant(self, after_cycle: Callable[[], None]) -> int:
        cycles = 0
        while True:
            ran = self.timers.run_due()
            n = sum(loop.run_cycles(after_cycle=after_cycle) for loop in self.loops)
            cycles += n
            if not ran and not n:
                break
        for loop in self.loops:
            loop.arm_flushes()
        return cycles


class Race:
    """The racing schedulers of a simulation, built from the scenario's ``spec.schedulers``."""

    def __init__(self, cluster: EmbeddedCluster, specs: Sequence[SchedulerSpec], seed: np.random.SeedSequence, *,
                 record_attempts: bool, feature_gates: Mapping[str, bool] | None) -> None:
        self.specs = list(specs)
        self.loop = cluster.loop
        self.tracker = RaceTracker()
        cluster.watch(self.tracker)
        shared = Recorder(keep_attempts=record_attempts)
        self.views: builtins.list[InformerView] = []
        self.schedulers: builtins.list[Scheduler] = []
        for spec, scheduler_seed in zip(self.specs, seed.spawn(len(self.specs)), strict=True):
            view = InformerView(cluster, spec.name, spec.informer_delay, self.tracker)
            try:
                scheduler = Scheduler(view, spec.configuration, np.random.default_rng(scheduler_seed), cluster.now,
                                      record_attempts=record_attempts,
                                      config_dir=Path(spec.config_dir) if spec.config_dir else None,
                                      bind_for_extenders=True, feature_gates=feature_gates)
            except ConfigError as err:
                raise spec.source.error(err.message, err.path) from err
            scheduler.records = _SharedRecorder(shared)
            if spec.bind_delay > 0:
                scheduler.binding = DelayedBinding(self.loop, spec.bind_delay, scheduler.binding)
            self.views.append(view)
            self.schedulers.append(scheduler)

    def scheduler_loop(self) -> RacingLoop:
        return RacingLoop([SchedulerLoop(s, self.loop) for s in self.schedulers], self.loop)

    def catch_up(self) -> None:
        """At the end of the run: every scheduler's informers deliver what is still on its way, so
        that each cache holds the cluster as it ended."""
        for view in self.views:
            view.catch_up()

    def report(self) -> dict[str, Any]:
        """The result's ``racing`` section (docs/racing-schedulers.md)."""
        tracker = self.tracker
        rows = []
        for spec, scheduler in zip(self.specs, self.schedulers, strict=True):
            own = scheduler.records.own if isinstance(scheduler.records, _SharedRecorder) else []
            rows.append({
                "name": spec.name,
                "schedulerNames": profile_names(spec.configuration),
                "informerDelay": spec.informer_delay,
                "bindDelay": spec.bind_delay,
                "scheduled": tracker.bound[spec.name],
                "preemptions": sum(1 for r in own if r.outcome == "preempted"),
                "victims": sum(n for (by, _), n in tracker.victims.items() if by == spec.name),
                "rejectedByKubelet": sum(n for (placer, _), n in tracker.rejected.items() if placer == spec.name),
            })
        names = [spec.name for spec in self.specs]
        cross = [{"preemptor": by, "victimPlacedBy": placer, "victims": n}
                 for (by, placer), n in sorted(tracker.victims.items()) if placer and placer != by]
        ping_pong = [{"schedulers": [a, b], "rounds": min(tracker.victims[(a, b)], tracker.victims[(b, a)])}
                     for i, a in enumerate(sorted(names)) for b in sorted(names)[i + 1:]]
        rejections = [{"placedBy": placer or None, "reason": reason, "pods": n}
                      for (placer, reason), n in sorted(tracker.rejected.items())]
        return {"schedulers": rows, "crossPreemptions": cross, "pingPong": ping_pong, "admissionRejections": rejections}
