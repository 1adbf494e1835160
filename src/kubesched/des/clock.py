"""The one source of "now" (time is injected everywhere) and the discrete-event loop built on it.

A simulation never sleeps: :class:`EventLoop` jumps from one scheduled callback to the next.
Callbacks due at the same instant run in the order they were scheduled (FIFO), which keeps runs
deterministic.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


@dataclass(order=True, slots=True)
class Timer:
    when: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    background: bool = field(compare=False, default=False)
    cancelled: bool = field(compare=False, default=False)



class EventLoop:
    """Simulated clock plus a heap of timers.

    ``background`` timers (periodic housekeeping such as queue flushes) do not keep a run alive on
    their own: :meth:`run` stops once only background timers are left and ``idle()`` says so.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._heap: list[Timer] = []
        self._seq = itertools.count()
        self._foreground = 0
        self.last_foreground = start

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None], *, background: bool = False) -> Timer:
        timer = Timer(max(when, self._now), next(self._seq), callback, background)
        heapq.heappush(self._heap, timer)
        if not background:
            self._foreground += 1
        return timer

    def call_later(self, delay: float, callback: Callable[[], None], *, background: bool = False) -> Timer:
        return self.call_at(self._now + delay, callback, background=background)

    def cancel(self, timer: Timer) -> None:
        if not timer.cancelled:
            timer.cancelled = True
            if not timer.background:
                self._foreground -= 1

    def has_foreground(self) -> bool:
        return self._foreground > 0

    def next_time(self) -> float | None:
        while self._heap and self._heap[0].cancelled:
            self._pop()
        return self._heap[0].when if self._heap else None

    def _pop(self) -> Timer:
        timer = heapq.heappop(self._heap)
        if not timer.background and not timer.cancelled:
            self._foreground -= 1
        return timer

    def run_due(self) -> bool:
        """Run every timer due at the current instant; return whether any ran."""
        ran = False
        while self._heap and self._heap[0].when <= self._now:
            timer = self._pop()
            if not timer.cancelled:
                if not timer.background:
                    self.last_foreground = self._now
                timer.callback()
                ran = True
        return ran

    def advance(self, until: float | None = None) -> bool:
        """Move the clock to the next timer (not past ``until``); return False if there is none."""
        nxt = self.next_time()
        if nxt is None or (until is not None and nxt > until):
            if until is not None:
                self._now = max(self._now, until)
            return False
        self._now = max(self._now, nxt)
        return True
