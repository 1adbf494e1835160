"""The scheduling thread of ``kubesched run``: applies informer changes to the Scheduler, runs its
cycles while this replica leads, and drives the queue's periodic flushes in real time.

One thread owns the Scheduler (its handlers are not thread-safe). Between two cycles it applies the
changes the informers queued, so a cycle always sees a consistent scheduler cache. Stopping
(SIGTERM) is only noticed between cycles: the cycle in flight, binding included, always finishes.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kubesched.cluster.kube.cluster import KubeCluster
from kubesched.cluster.kube.leaderelection import LeaderElector
from kubesched.scheduler.scheduler import Scheduler
from kubesched.serve.metrics import Exporter

log = logging.getLogger("kubesched.kube.runner")

STOPPED = "stopped"
LOST_LEASE = "lost-lease"
SYNC_FAILED = "sync-failed"
KEEP_PREEMPTION_RECORDS = 256


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    backoff_flush_period: float = 1.0  # upstream flushBackoffQCompleted: every second
    unschedulable_flush_period: float = 30.0  # upstream flushUnschedulablePodsLeftover: every 30 s
    idle_wait: float = 0.2
    metrics_period: float = 0.5
    sync_timeout: float | None = None


class SchedulerRunner:
    def __init__(self, cluster: KubeCluster, scheduler: Scheduler, elector: LeaderElector | None = None,
                 options: RunnerOptions | None = None, exporter: Exporter | None = None) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.elector = elector
        self.options = options or RunnerOptions()
        self.exporter = exporter or Exporter(list(scheduler.frameworks))
        self.stop_event = threading.Event()
        self.started = threading.Event()
        self.exit_reason: str | None = None
        self.cycles = 0
        self.heartbeat = time.monotonic()
        self._was_leading = False

    # -- state for probes --------------------------------------------------------------------
    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def ready(self) -> bool:
        if not (self.started.is_set() and self.cluster.has_synced()):
            return False
        return self.elector is None or self.elector.state_known.is_set()

    def healthy(self, stale_after: float = 60.0) -> bool:
        return self.exit_reason is None and time.monotonic() - self.heartbeat < stale_after

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
            self.started.set()
            log.info("scheduler started", extra={"profiles": list(self.scheduler.frameworks),
                                                 "nodes": len(cluster.list("Node"))})
            self.exit_reason = self._loop()
            return self.exit_reason
        finally:
            if elector is not None:
                elector.stop(release=True)
            cluster.stop()
            log.info("scheduler stopped", extra={"reason": self.exit_reason, "cycles": self.cycles})

    def _wait_for_sync(self) -> bool:
        deadline = None if self.options.sync_timeout is None else time.monotonic() + self.options.sync_timeout
        while not self.stop_event.is_set():
            if self.cluster.wait_for_sync(0.1):
                return True
            if deadline is not None and time.monotonic() > deadline:
                log.error("informers did not sync in time")
                return False
        return False

    def _loop(self) -> str:
        opts = self.options
        now = time.monotonic()
        next_backoff = now + opts.backoff_flush_period
        next_unschedulable = now + opts.unschedulable_flush_period
        next_metrics = now
        queue = self.scheduler.queue
        while not self.stop_event.is_set():
            self.heartbeat = now = time.monotonic()
            if self.elector is not None and self.elector.lost.is_set():
                return LOST_LEASE
            self.cluster.dispatch()
            if now >= next_backoff:
                queue.flush_backoff_completed()
                next_backoff = now + opts.backoff_flush_period
            if now >= next_unschedulable:
                queue.flush_unschedulable_leftover()
                next_unschedulable = now + opts.unschedulable_flush_period
            self._note_leadership()
            while queue.has_active() and self.leading() and not self.stop_event.is_set():
                self._schedule_one()
                self.cluster.dispatch()
                if time.monotonic() >= next_backoff:
                    break  # let the flushes run on time under a constant stream of pods
            if time.monotonic() >= next_metrics:
                self._update_metrics()
                next_metrics = time.monotonic() + opts.metrics_period
            wait = min(opts.idle_wait, max(0.0, next_backoff - time.monotonic()))
            if not queue.has_active() or not self.leading():
                self.cluster.dispatch(timeout=wait)
        self._update_metrics()
        return STOPPED

    def _schedule_one(self) -> None:
        from kubesched.scheduler.cycle import schedule_one

        try:
            if schedule_one(self.scheduler):
                self.cycles += 1
        except Exception:  # noqa: BLE001 - one pod's failing cycle must not stop the scheduler
            self.scheduler.metrics.schedule_attempts["error", ""] += 1
            log.exception("scheduling cycle failed")
        # the simulator keeps every preemption decision for its report; a server keeps the latest
        if len(self.scheduler.preemptions) > 2 * KEEP_PREEMPTION_RECORDS:
            del self.scheduler.preemptions[:-KEEP_PREEMPTION_RECORDS]

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
