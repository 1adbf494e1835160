"""Client-side flow control: a token bucket (client-go's QPS/burst) and jittered exponential backoff."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved up; :meth:`acquire` blocks until the caller
    may send. A waiter reserves its token before sleeping, so waiters are served in arrival order.
    ``qps <= 0`` disables limiting."""

    def __init__(self, qps: float, burst: int, *, monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._tokens = float(self.burst)
        self._last = monotonic()
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take one token; return how long the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the time waited."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


class Backoff:
    """Exponential backoff with full jitter on top: ``initial * 2^n`` capped at ``cap``, times a
    random factor in ``[1, 1 + jitter)`` (client-go's wait.Backoff with Jitter)."""

    def __init__(self, initial: float, cap: float, *, jitter: float = 1.0, rng: random.Random | None = None) -> None:
        self.initial = initial
        self.cap = cap
        self.jitter = jitter
        self._rng = rng  # seeded from the OS only when a retry needs it (most calls never do)
        self._step = 0

    def next(self) -> float:
        base = min(self.cap, self.initial * (2 ** self._step))
        self._step = min(self._step + 1, 32)
        if self._rng is None:
            self._rng = random.Random()
        return base * (1.0 + self.jitter * self._rng.random())

    def reset(self) -> None:
        self._step = 0
