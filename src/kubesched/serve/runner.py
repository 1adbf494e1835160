"""The scheduling thread of ``kubesched run``: applies informer changes to the Scheduler, runs its
cycles while this replica leads, and runs the queue's periodic flushes in real time — cycles and
flushes through the same :class:`~kubesched.scheduler.loop.SchedulerLoop` as the simulator, on
:class:`~kubesched.serve.timers.RealTimers`.

One thread owns the Scheduler (its handlers are not thread-safe). Between two cycles it applies the
changes the informers queued, so a cycle always sees a consistent scheduler cache. Stopping
(SIGTERM) is only noticed between cycles: the cycle in flight, binding included, always finishes.
The metrics a scrape serves are built on this thread too, between two cycles, when a scrape asks
for them (:class:`~kubesched.serve.metrics.Exporter`): a scheduler nobody scrapes spends no time
on them.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kubesched.cluster.kube.cluster import KubeCluster
from kubesched.cluster.kube.leaderelection import LeaderElector
from kubesched.des.heap import long_lived_heap
from kubesched.scheduler.binding import BackgroundBinder
from kubesched.scheduler.loop import (
    BACKOFF_FLUSH_PERIOD,
    UNSCHEDULABLE_FLUSH_PERIOD,
    FlushPeriods,
    FlushPolicy,
    SchedulerLoop,
)
from kubesched.scheduler.scheduler import Scheduler
from kubesched.serve.metrics import Exporter
from kubesched.serve.timers import RealTimers

log = logging.getLogger("kubesched.kube.runner")

STOPPED = "stopped"
LOST_LEASE = "lost-lease"
SYNC_FAILED = "sync-failed"
KEEP_PREEMPTION_RECORDS = 256


#: how often a scheduler still waiting for its informers says so
SYNC_NOTE_PERIOD = 10.0
#: how long an idle loop waits for events while bindings are under way (their answers are polled)
BINDING_POLL = 0.005


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    backoff_flush_period: float = BACKOFF_FLUSH_PERIOD  # upstream flushBackoffQCompleted: every second
    unschedulable_flush_period: float = UNSCHEDULABLE_FLUSH_PERIOD  # flushUnschedulablePodsLeftover: 30 s
    idle_wait: float = 0.2
    #: the oldest metrics a scrape is served; fresher ones are built when a scrape asks for them
    metrics_period: float = 0.5
    sync_timeout: float | None = None


class SchedulerRunner:
    def __init__(self, cluster: KubeCluster, scheduler: Scheduler, elector: LeaderElector | None = None,
                 options: RunnerOptions | None = None, exporter: Exporter | None = None) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.elector = elector
        self.options = options or RunnerOptions()
        self.exporter = exporter or Exporter(list(scheduler.frameworks), max_age=self.options.metrics_period)
        scheduler.enable_timing()
        self.stop_event = threading.Event()
        self.started = threading.Event()
        self.exit_reason: str | None = None
        self.cycles = 0
        self.heartbeat = time.monotonic()
        # the simulator keeps every preemption decision for its report; a server keeps the latest
        scheduler.records.limit = KEEP_PREEMPTION_RECORDS
        if not isinstance(scheduler.binding, BackgroundBinder):  # off the scheduling thread, as upstream's goroutines
            scheduler.binding = BackgroundBinder()
        self._was_leading = False
        self.timers = RealTimers()
        self.scheduler_loop = SchedulerLoop(
            scheduler, self.timers, policy=FlushPolicy.PERIODIC, on_cycle_error=self._cycle_failed,
            periods=FlushPeriods(self.options.backoff_flush_period, self.options.unschedulable_flush_period))

    # -- state for probes --------------------------------------------------------------------
    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def ready(self) -> bool:
        if not (self.started.is_set() and self.cluster.has_synced()):
            return False
        return self.elector is None or self.elector.state_known.is_set()

    def healthy(self, stale_after: float = 60.0) -> bool:
        """Alive unless stopping or stuck: the loop made progress lately, or it is waiting on an API
        call (a slow API server is not a reason to restart the scheduler); informers that never
        synced (a rejected token, say) make it unready, not unhealthy."""
        if self.exit_reason is not None:
            return False
        return time.monotonic() - self.heartbeat < stale_after or self.cluster.transport.in_flight > 0

    def request_stop(self) -> None:
        self.stop_event.set()

    # -- running -----------------------------------------------------------------------------
    def run(self) -> str:
        """Run until stopped or until the lease is lost; return why (``stopped``/``lost-lease``)."""
        cluster, elector = self.cluster, self.elector
        try:
            cluster.start()
            if elector is not None:
                cluster.set_write_guard(elector.guard)
                elector.start()
            if not self._wait_for_sync():
                self.exit_reason = SYNC_FAILED if not self.stop_event.is_set() else STOPPED
                return self.exit_reason
            with cluster.lock:  # the initial list and the watch registration see one state
                self.scheduler.start()
            self._update_metrics()  # what a scrape serves until it asks for fresher
            self.exporter.set_live(True)
            self.started.set()
            log.info("scheduler started", extra={"profiles": list(self.scheduler.frameworks),
                                                 "nodes": len(cluster.list("Node"))})
            with long_lived_heap():  # the informers' first lists live as long as the run
                self.exit_reason = self._loop()
            return self.exit_reason
        finally:
            self.scheduler.binding.shutdown()  # the bindings under way end (and are reported) first
            self.scheduler.close()
            if elector is not None:
                elector.stop(release=True)
            cluster.stop()
            log.info("scheduler stopped", extra={"reason": self.exit_reason, "cycles": self.cycles})

    def _wait_for_sync(self) -> bool:
        deadline = None if self.options.sync_timeout is None else time.monotonic() + self.options.sync_timeout
        next_note = time.monotonic() + SYNC_NOTE_PERIOD
        while not self.stop_event.is_set():
            self.heartbeat = time.monotonic()  # waiting for the API server is not being stuck
            if self.cluster.wait_for_sync(0.1):
                return True
            if time.monotonic() >= next_note:
                log.warning("not ready: the informers have not synced yet (is the API server reachable, "
                            "and may these credentials list and watch?)")
                next_note = time.monotonic() + SYNC_NOTE_PERIOD
            if deadline is not None and time.monotonic() > deadline:
                log.error("informers did not sync in time")
                return False
        return False

    def _loop(self) -> str:
        self.scheduler_loop.start()
        try:
            return self._run_loop()
        finally:
            self._update_metrics()
            self.exporter.set_live(False)

    def _run_loop(self) -> str:
        opts = self.options
        timers, queue = self.timers, self.scheduler.queue
        while not self.stop_event.is_set():
            self.heartbeat = time.monotonic()
            if self.elector is not None and self.elector.lost.is_set():
                return LOST_LEASE
            self.cluster.dispatch()
            self._finish_bindings()
            timers.run_due()  # the queue's flushes
            self._note_leadership()
            self.cycles += self.scheduler_loop.run_cycles(self._may_schedule, self._after_cycle)
            if self.exporter.wanted:  # a scrape waits for fresh metrics
                self._update_metrics()
            if not queue.has_active() or not self.leading():
                until_flush = timers.seconds_until_next()
                wait = opts.idle_wait if until_flush is None else min(opts.idle_wait, until_flush)
                if self.scheduler.binding.in_flight:
                    wait = min(wait, BINDING_POLL)  # bindings under way answer soon
                self.cluster.dispatch(timeout=wait)
        return STOPPED

    def _may_schedule(self) -> bool:
        # a due flush comes first, so that it runs on time under a constant stream of pods
        return self.leading() and not self.stop_event.is_set() and not self.timers.due()

    def _finish_bindings(self) -> None:
        self.scheduler.binding.finish()

    def _after_cycle(self) -> None:
        self.heartbeat = time.monotonic()
        self._finish_bindings()
        self.cluster.dispatch()
        if self.exporter.wanted:  # between two cycles, so that a long run of pods does not keep it waiting
            self._update_metrics()

    def _cycle_failed(self, err: Exception) -> None:
        """One pod's failing cycle must not stop the scheduler: count it and go on."""
        self.scheduler.metrics.schedule_attempts["error", ""] += 1
        log.error("scheduling cycle failed", exc_info=err)

    def _note_leadership(self) -> None:
        leading = self.leading()
        if leading != self._was_leading:
            self._was_leading = leading
            log.info("leadership changed", extra={"leading": leading})

    def _update_metrics(self) -> None:
        lease = ""
        if self.elector is not None:
            lease = self.elector.config.lease_name
        self.exporter.update(self.scheduler, self.cluster, self.elector, lease)
