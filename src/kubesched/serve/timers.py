"""Timers on the monotonic clock for the scheduling thread of ``kubesched run``.

This is the real-time side of the scheduler loop's :class:`~kubesched.scheduler.loop.Timers` port.
Nothing here runs on a thread of its own: the Scheduler is not thread-safe, so :meth:`call_at` only
records the callback, and the scheduling thread runs the due ones between cycles
(:meth:`RealTimers.run_due`) and sleeps — waiting for informer events — at most until the next one
(:meth:`RealTimers.seconds_until_next`).
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable


class RealTimers:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cancelled: set[int] = set()

    def now(self) -> float:
        return self._clock()

    def call_at(self, when: float, callback: Callable[[], None], *, background: bool = False) -> object:
        """Queue ``callback`` for ``when`` (``background`` means nothing in real time: the process
        runs until it is stopped)."""
        entry = (when, next(self._seq), callback)
        heapq.heappush(self._heap, entry)
        return entry

    def due(self) -> bool:
        return bool(self._heap) and self._heap[0][0] <= self._clock()

    def run_due(self) -> bool:
        """Run every callback whose time has come, in time order; return whether any ran."""
        ran = False
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            _, seq, callback = heapq.heappop(self._heap)
            if seq in self._cancelled:
                self._cancelled.discard(seq)
                continue
            callback()
            ran = True
        return ran

    def cancel(self, timer: object) -> None:
        if isinstance(timer, tuple) and any(entry is timer for entry in self._heap):
            self._cancelled.add(timer[1])

    def seconds_until_next(self) -> float | None:
        if not self._heap:
            return None
        return max(0.0, self._heap[0][0] - self._clock())
