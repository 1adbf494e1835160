"""The queue between the informer threads and the scheduling thread.

Changes are applied in arrival order, except that the scheduling thread may pull out one object's
changes early (in their own order) to apply the result of its own write before the write returns,
as the embedded cluster's store does (see ``KubeCluster._apply_own_write``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from kubesched.cluster.kube.cache import Change


def change_key(change: Change) -> tuple[str, str | None, str]:
    obj = change[3]
    meta = obj.get("metadata") or {}
    return change[1], meta.get("namespace"), str(meta.get("name"))


class ChangeQueue:
    def __init__(self) -> None:
        self._items: deque[Change] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._version = 0

    def put(self, change: Change) -> None:
        with self._cond:
            self._items.append(change)
            self._version += 1
            self._cond.notify_all()

    def __len__(self) -> int:
        return len(self._items)

    def take_all(self, timeout: float = 0.0) -> list[Change]:
        """Everything queued, waiting up to ``timeout`` seconds for the first change."""
        with self._cond:
            if not self._items and timeout > 0:
                self._cond.wait(timeout)
            items = list(self._items)
            self._items.clear()
            return items

    def take_for(self, key: tuple[str, str | None, str]) -> list[Change]:
        """Remove and return the queued changes of one object, oldest first."""
        with self._cond:
            mine = [c for c in self._items if change_key(c) == key]
            if mine:
                self._items = deque(c for c in self._items if change_key(c) != key)
            return mine

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``done()`` (evaluated without the queue's lock) holds, re-checking after every
        change; give up after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                seen = self._version
            if done():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._cond:
                if self._version == seen:
                    self._cond.wait(remaining)
