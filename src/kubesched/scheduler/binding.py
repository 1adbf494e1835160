"""How binding cycles run: the binding mode a scheduler is given.

Upstream's scheduleOne ends its scheduling cycle by starting the binding cycle (PreBind, Bind) in a
goroutine of its own (pkg/scheduler/schedule_one.go). kubesched has two modes, chosen by who runs
the scheduler, behind one interface (:class:`BindingMode`): ``submit(work, then)`` runs ``work`` (a
framework's PreBind and Bind) and hands its outcome to ``then`` on the scheduling thread.

- :class:`InlineBinding` (a simulation): the binding cycle runs at once, inside the scheduling
  cycle; a PreBind plugin that waits (:class:`PendingBind`) resumes on the scheduler's timers —
  simulated time — or, with no timers, blocks on the wall clock.
- :class:`BackgroundBinder` (``kubesched run``): on worker threads, while the scheduling thread
  goes on with the next pod.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from queue import Empty, SimpleQueue
from typing import Protocol

from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.waiting import BindWait
from kubesched.scheduler.ports import Timers

log = logging.getLogger("kubesched.scheduler.binding")

#: a binding cycle: PreBind and Bind, which may pause on a waiting PreBind plugin
BindingWork = Callable[[], Status | BindWait | None]
#: what runs on the scheduling thread once a binding cycle is over (None: bound)
BindingDone = Callable[[Status | None], None]


class BindingMode(Protocol):
    #: binding cycles submitted and not yet handed back to the scheduling thread
    in_flight: int

    def submit(self, work: BindingWork, then: BindingDone) -> None:
        """Run the binding cycle ``work``; hand its outcome to ``then`` on the scheduling thread."""

    def finish(self) -> int:
        """On the scheduling thread: hand back the binding cycles that are over; how many."""

    def shutdown(self) -> None:
        """Stop: the binding cycles under way end (and are handed back) first."""


class InlineBinding:
    """Binding cycles inside the scheduling cycle (a simulation). ``timers()`` gives the clock a
    waiting cycle resumes on (the scheduler's, set once its loop starts); None: it blocks."""

    in_flight = 0

    def __init__(self, timers: Callable[[], Timers | None]) -> None:
        self._timers = timers

    def submit(self, work: BindingWork, then: BindingDone) -> None:
        outcome = work()
        if isinstance(outcome, BindWait):
            timers = self._timers()
            if timers is not None:
                _wait_on_timers(timers, outcome, then)
                return
            outcome = wait_blocking(outcome)
        then(outcome)

    def finish(self) -> int:
        return 0

    def shutdown(self) -> None:
        pass


def wait_blocking(outcome: Status | BindWait | None, sleep: Callable[[float], None] = time.sleep,
                  clock: Callable[[], float] = time.monotonic) -> Status | None:
    """Run a binding cycle's waits on the wall clock (a binding thread may block)."""
    while isinstance(outcome, BindWait):
        pending = outcome.pending
        deadline = clock() + pending.timeout
        result: Status | None = Status.error(pending.timeout_message)
        while clock() < deadline:
            sleep(pending.interval)
            done, status = pending.poll()
            if done:
                result = status
                break
        outcome = outcome.resume(result)
    return outcome


def _wait_on_timers(timers: Timers, outcome: BindWait, then: Callable[[Status | None], None]) -> None:
    """Run a binding cycle's waits on the scheduler's timers (simulated time): poll every interval
    until the wait answers or times out, then go on with the rest of the cycle."""
    pending = outcome.pending
    deadline = timers.now() + pending.timeout

    def tick() -> None:
        done, status = pending.poll()
        if not done and timers.now() + 1e-9 < deadline:
            timers.call_at(timers.now() + pending.interval, tick)
            return
        nxt = outcome.resume(status if done else Status.error(pending.timeout_message))
        if isinstance(nxt, BindWait):
            _wait_on_timers(timers, nxt, then)
        else:
            then(nxt)

    timers.call_at(timers.now() + pending.interval, tick)


class BackgroundBinder:
    """Binding cycles on worker threads, as upstream runs each in a goroutine: the scheduling
    thread goes on with the next pod while the API call is under way. A binding's outcome is
    handed back to the scheduling thread, which calls :meth:`finish` between cycles and runs the
    success or failure path there (the cache and the queue are the scheduling thread's alone).

    A binding cycle that waits (a PreBind plugin's :class:`PendingBind`, such as VolumeBinding
    waiting for the PersistentVolume controller) holds no worker while it waits: one waiter thread
    polls every waiting cycle at its interval and hands it back to a worker when it answers or
    times out, so that as many pods may wait at once as upstream's goroutines allow, not one per
    worker."""

    def __init__(self, workers: int = 16, clock: Callable[[], float] = time.monotonic) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="binding")
        self._done: SimpleQueue[tuple[BindingDone, Status | None]] = SimpleQueue()
        self.in_flight = 0
        self._clock = clock
        self._waits: list[tuple[float, int, BindWait, float, BindingDone]] = []
        self._waits_changed = threading.Condition()
        self._waiter: threading.Thread | None = None
        self._stopping = False
        self._sequence = itertools.count()

    def submit(self, work: BindingWork, then: BindingDone) -> None:
        self.in_flight += 1
        self._pool.submit(self._run, work, then)

    def _run(self, work: BindingWork, then: BindingDone) -> None:
        try:
            outcome = work()
        except Exception as err:  # noqa: BLE001 - reported as the binding's error, never lost
            log.exception("binding failed")
            outcome = Status.error(f"{type(err).__name__}: {err}")
        if isinstance(outcome, BindWait):
            self._wait(outcome, self._clock() + outcome.pending.timeout, then)
            return
        self._done.put((then, outcome))

    def _wait(self, outcome: BindWait, deadline: float, then: BindingDone) -> None:
        with self._waits_changed:
            if self._waiter is None:
                self._waiter = threading.Thread(target=self._poll_waits, name="binding-waits", daemon=True)
                self._waiter.start()
            due = self._clock() + outcome.pending.interval
            heapq.heappush(self._waits, (due, next(self._sequence), outcome, deadline, then))
            self._waits_changed.notify()

    def _poll_waits(self) -> None:
        """The waiter thread: poll each waiting binding cycle when its interval is up (upstream's
        ``wait.Poll``); resume it on a worker once it answers or its time is up."""
        while True:
            with self._waits_changed:
                while not self._stopping and (not self._waits or self._waits[0][0] > self._clock()):
                    self._waits_changed.wait(None if not self._waits else self._waits[0][0] - self._clock())
                if self._stopping:
                    return
                _, _, outcome, deadline, then = heapq.heappop(self._waits)
            pending = outcome.pending
            try:
                done, status = pending.poll()
            except Exception as err:  # noqa: BLE001 - reported as the binding's error, never lost
                log.exception("binding wait failed")
                done, status = True, Status.error(f"{type(err).__name__}: {err}")
            if not done and self._clock() < deadline:
                self._wait(outcome, deadline, then)  # polled again an interval from now
                continue
            result = status if done else Status.error(pending.timeout_message)
            try:
                self._pool.submit(self._run, functools.partial(outcome.resume, result), then)
            except RuntimeError:  # the pool stopped under us: the scheduler is stopping
                return

    def finish(self) -> int:
        """Complete the bindings that have answered; how many."""
        count = 0
        while True:
            try:
                then, status = self._done.get_nowait()
            except Empty:
                return count
            self.in_flight -= 1
            then(status)
            count += 1

    def shutdown(self) -> None:
        """Wait for the bindings under way, then complete them. Bindings still waiting (for the
        PersistentVolume controller) are left, as a stopping kube-scheduler leaves them: their pods
        are not bound, so the next scheduler places them again."""
        with self._waits_changed:
            self._stopping = True
            if self._waits:
                log.warning("binding cycles still waiting when stopping", extra={"count": len(self._waits)})
            self._waits_changed.notify()
        self._pool.shutdown(wait=True)
        self.finish()
