"""Drives a Scheduler from an EventLoop: runs cycles at each instant and arms the queue's periodic
flushes (backoffQ every 1 s, unschedulable leftovers every 30 s) as background timers, only when
there is something for them to do."""

from __future__ import annotations

import math

from kubesched.des.clock import EventLoop
from kubesched.scheduler.scheduler import Scheduler

BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0


class SchedulerDriver:
    def __init__(self, loop: EventLoop, scheduler: Scheduler) -> None:
        self.loop = loop
        self.scheduler = scheduler
        self._backoff_at: float | None = None
        self._unschedulable_at: float | None = None

    def run_instant(self) -> int:
        """Run every timer due now and every scheduling cycle they make possible; return #cycles."""
        cycles = 0
        while True:
            ran = self.loop.run_due()
            n = self.scheduler.schedule_pending()
            cycles += n
            if not ran and not n:
                break
        self.arm_flush_timers()
        return cycles

    def arm_flush_timers(self) -> None:
        queue = self.scheduler.queue
        now = self.loop.now()
        expiry = queue.next_backoff_expiry()
        if expiry is not None:
            tick = max(math.ceil(max(expiry, now) / BACKOFF_FLUSH_PERIOD) * BACKOFF_FLUSH_PERIOD, now)
            if self._backoff_at is None or tick < self._backoff_at:
                self._backoff_at = tick
                self.loop.call_at(tick, self._flush_backoff, background=True)
        oldest = queue.oldest_unschedulable_timestamp()
        if oldest is not None:
            due = oldest + queue.max_in_unschedulable
            tick = max((math.floor(due / UNSCHEDULABLE_FLUSH_PERIOD) + 1) * UNSCHEDULABLE_FLUSH_PERIOD, now)
            if self._unschedulable_at is None or tick < self._unschedulable_at:
                self._unschedulable_at = tick
                self.loop.call_at(tick, self._flush_unschedulable, background=True)

    def _flush_backoff(self) -> None:
        if self._backoff_at is not None and self._backoff_at <= self.loop.now():
            self._backoff_at = None
        self.scheduler.queue.flush_backoff_completed()

    def _flush_unschedulable(self) -> None:
        if self._unschedulable_at is not None and self._unschedulable_at <= self.loop.now():
            self._unschedulable_at = None
        self.scheduler.queue.flush_unschedulable_leftover()
