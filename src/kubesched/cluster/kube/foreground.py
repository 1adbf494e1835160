"""Which API calls go first: the scheduling thread's, over background writes.

A preemption cycle of kube-scheduler 1.28 (``prepareCandidate``) waits for its victims' API calls —
the DisruptionTarget patch, then the deletion — before the next pod is tried, so the API server's
answer time for those calls is the scheduler's throughput. Events are written in the background
(upstream's event broadcaster is best-effort too: it drops events when its queue is full), and an
event sent while the victims' calls are under way only competes with them for the API server and
etcd. So the event sender holds each event while the scheduling thread waits on its own calls, and
sends it as soon as they are answered — in the same order, at most :data:`MAX_HOLD` seconds later,
so that a scheduler that never stops preempting still records its events.

Nothing a scheduling decision reads depends on an event, so holding one changes when it is written,
never what the scheduler does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: the longest an event is held back for the scheduling thread's calls
MAX_HOLD = 0.25


class Foreground:
    """Counts the scheduling thread's API calls under way; background senders wait for none."""

    def __init__(self, max_hold: float = MAX_HOLD) -> None:
        self.max_hold = max_hold
        self._cond = threading.Condition(threading.Lock())
        self._busy = 0
        #: background writes holding now; how many were held, and for how long in all (seconds)
        self.holding = 0
        self.holds = 0
        self.held_seconds = 0.0

    @contextmanager
    def calls(self) -> Iterator[None]:
        """The scheduling thread waits on API calls for as long as this block runs."""
        with self._cond:
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                if not self._busy:
                    self._cond.notify_all()

    @property
    def busy(self) -> bool:
        return self._busy > 0

    def wait_idle(self) -> bool:
        """Wait (up to :attr:`max_hold` seconds) until the scheduling thread waits on no API call;
        whether it does not."""
        with self._cond:
            if not self._busy:
                return True
            started = time.monotonic()
            self.holding += 1
            try:
                idle = self._cond.wait_for(lambda: not self._busy, self.max_hold)
            finally:
                self.holding -= 1
            self.holds += 1
            self.held_seconds += time.monotonic() - started
            return idle
