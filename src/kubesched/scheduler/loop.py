"""The scheduler loop: scheduling cycles plus the scheduling queue's periodic flushes, for any clock.

Next to its scheduling loop, kube-scheduler's queue runs two housekeeping tasks
(``pkg/scheduler/internal/queue/scheduling_queue.go``, ``Run``):

* ``flushBackoffQCompleted`` every second: pods whose backoff has completed go from backoffQ to
  activeQ;
* ``flushUnschedulablePodsLeftover`` every 30 seconds: pods that have waited in the unschedulable
  pool longer than ``podMaxInUnschedulablePodsDuration`` (5 minutes) are moved out of it.

:class:`SchedulerLoop` is written once against :class:`Timers`, a port with three operations (the
time, a one-shot callback at a given time, and running the callbacks that are due), and is used
by both worlds:

* the simulator passes its discrete-event loop (``des.clock.EventLoop`` has exactly this shape) and
  drives the loop one instant at a time with :meth:`SchedulerLoop.run_instant`;
* ``kubesched run`` passes timers on the monotonic clock that its scheduling thread runs between
  cycles, and calls :meth:`SchedulerLoop.run_cycles` with its own conditions (leadership, stop).

The two flush policies (:class:`FlushPolicy`):

``PERIODIC`` (real time)
    Each flush runs every period, re-armed one period after it ran, from :meth:`SchedulerLoop.start`
    on — as upstream's ``wait.Until``.
``ON_DEMAND`` (simulated time)
    The flushes tick on a grid of multiples of their period counted from time 0, but a flush is only
    armed for the first tick at which it will find something to do: the next backoff expiry, or the
    moment the oldest unschedulable pod passes the 5-minute limit. The ticks skipped in between would
    have been no-ops, and a discrete-event clock has no reason to visit them. The flush timers are
    background timers: they never keep a simulation going on their own.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.scheduler.cycle import schedule_one
from kubesched.scheduler.ports import Timers
from kubesched.scheduler.scheduler import Scheduler

BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0


class FlushPolicy(enum.Enum):
    PERIODIC = "periodic"
    ON_DEMAND = "on-demand"


@dataclass(frozen=True, slots=True)
class FlushPeriods:
    backoff: float = BACKOFF_FLUSH_PERIOD
    unschedulable: float = UNSCHEDULABLE_FLUSH_PERIOD


def _always() -> bool:
    return True


def _nothing() -> None:
    return None


class SchedulerLoop:
    """Runs a :class:`Scheduler`'s cycles and its queue's periodic flushes on ``timers``.

    ``on_cycle_error``: when given, an exception raised by one cycle is handed to it and the loop
    goes on with the next pod (a long-running scheduler must survive one bad pod); without it the
    exception propagates (the simulator wants to fail loudly).
    """

    def __init__(self, scheduler: Scheduler, timers: Timers, *, policy: FlushPolicy = FlushPolicy.ON_DEMAND,
                 periods: FlushPeriods | None = None,
                 on_cycle_error: Callable[[Exception], None] | None = None) -> None:
        self.scheduler = scheduler
        self.timers = timers
        scheduler.timers = timers  # binding cycles that wait (a PreBind's PendingBind) resume on them
        self.policy = policy
        self.periods = periods or FlushPeriods()
        self.on_cycle_error = on_cycle_error
        # on demand: the earliest tick a flush is armed for (later timers armed before may still fire)
        self._backoff_at: float | None = None
        self._unschedulable_at: float | None = None

    # -- cycles -----------------------------------------------------------------------------
    def run_cycles(self, may_continue: Callable[[], bool] = _always,
                   after_cycle: Callable[[], None] = _nothing) -> int:
        """Run scheduling cycles while activeQ has pods and ``may_continue()`` allows it, calling
        ``after_cycle()`` after each; return how many cycles ran."""
        queue = self.scheduler.queue
        cycles = 0
        while queue.has_active() and may_continue():
            if self._schedule_one():
                cycles += 1
            after_cycle()
        return cycles

    def _schedule_one(self) -> bool:
        if self.on_cycle_error is None:
            return schedule_one(self.scheduler)
        try:
            return schedule_one(self.scheduler)
        except Exception as err:  # noqa: BLE001 - handed to the owner, who decided to go on
            self.on_cycle_error(err)
            return False

    def run_instant(self, after_cycle: Callable[[], None] = _nothing) -> int:
        """Discrete-event time: run every callback due now and every cycle they make possible,
        until neither is left; then arm the flushes (on demand). Return how many cycles ran.
        ``after_cycle()`` is called after each cycle (progress reports of long instants)."""
        cycles = 0
        while True:
            ran = self.timers.run_due()
            n = self.run_cycles(after_cycle=after_cycle)
            cycles += n
            if not ran and not n:
                break
        if self.policy is FlushPolicy.ON_DEMAND:
            self.arm_flushes()
        return cycles

    # -- flushes ----------------------------------------------------------------------------
    def start(self) -> None:
        """Periodic policy: the first flushes run one period from now."""
        if self.policy is FlushPolicy.PERIODIC:
            now = self.timers.now()
            self.timers.call_at(now + self.periods.backoff, self._periodic_backoff_flush, background=True)
            self.timers.call_at(now + self.periods.unschedulable, self._periodic_unschedulable_flush,
                                background=True)

    def _periodic_backoff_flush(self) -> None:
        self.scheduler.queue.flush_backoff_completed()
        self.timers.call_at(self.timers.now() + self.periods.backoff, self._periodic_backoff_flush, background=True)

    def _periodic_unschedulable_flush(self) -> None:
        self.scheduler.queue.flush_unschedulable_leftover()
        self.timers.call_at(self.timers.now() + self.periods.unschedulable, self._periodic_unschedulable_flush,
                            background=True)

    def arm_flushes(self) -> None:
        """On-demand policy: arm each flush for the first tick of its grid at which it has work,
        unless one is already armed at or before that tick."""
        queue = self.scheduler.queue
        now = self.timers.now()
        expiry = queue.next_backoff_expiry()
        if expiry is not None:
            period = self.periods.backoff
            tick = max(math.ceil(max(expiry, now) / period) * period, now)
            if self._backoff_at is None or tick < self._backoff_at:
                self._backoff_at = tick
                self.timers.call_at(tick, self._on_demand_backoff_flush, background=True)
        oldest = queue.oldest_unschedulable_timestamp()
        if oldest is not None:
            # the leftover flush moves pods that waited strictly longer than the limit: the first
            # tick after the deadline
            period = self.periods.unschedulable
            deadline = oldest + queue.max_in_unschedulable
            tick = max((math.floor(deadline / period) + 1) * period, now)
            if self._unschedulable_at is None or tick < self._unschedulable_at:
                self._unschedulable_at = tick
                self.timers.call_at(tick, self._on_demand_unschedulable_flush, background=True)

    def _on_demand_backoff_flush(self) -> None:
        if self._backoff_at is not None and self._backoff_at <= self.timers.now():
            self._backoff_at = None
        self.scheduler.queue.flush_backoff_completed()

    def _on_demand_unschedulable_flush(self) -> None:
        if self._unschedulable_at is not None and self._unschedulable_at <= self.timers.now():
            self._unschedulable_at = None
        self.scheduler.queue.flush_unschedulable_leftover()
