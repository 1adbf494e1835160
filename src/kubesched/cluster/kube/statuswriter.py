"""Pod status patches that the scheduling thread does not wait for.

When a pod cannot be placed, kube-scheduler (``handleSchedulingFailure`` in
pkg/scheduler/schedule_one.go) first updates its own state — the pod goes back to the queue, its
nomination into the nominator — and then patches the pod's status (the ``PodScheduled=False``
condition and, after a preemption, ``nominatedNodeName``) through the API. Nothing the scheduler
decides later reads that answer: a failed patch is only logged. So here the patch is sent by a
writer thread while the scheduling thread goes on with the next pod, which takes one API round trip
off every failed cycle (a preemptor's among them).

Patches of one pod are sent in the order they were made: each pod has one lane (a thread), chosen
by its namespace and name. A pod's binding waits for its patches still under way
(:meth:`StatusWriter.wait_for`), so that an old ``PodScheduled=False`` never lands after the binding
set it true — in kube-scheduler the patch has always been answered before the pod is tried again. A
patch that fails is logged, as upstream logs it, and counted; :meth:`StatusWriter.close` sends what
is queued before the process stops.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable
from queue import SimpleQueue

from kubesched.k8s.objects import ApiError

log = logging.getLogger("kubesched.kube.status")

#: lanes (threads) sending status patches; a pod always uses the same one
LANES = 4


class StatusWriter:
    def __init__(self, lanes: int = LANES) -> None:
        self._queues: list[SimpleQueue[tuple[str, Callable[[], None]] | None]] = [SimpleQueue() for _ in range(lanes)]
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        #: writes submitted and not yet sent (or failed), by key
        self._pending_by_key: dict[str, int] = {}
        self._idle = threading.Condition(self._lock)
        #: patches the API server refused or that could not be sent
        self.failed = 0

    def submit(self, key: str, write: Callable[[], None]) -> None:
        """Run ``write`` on ``key``'s lane, after the writes submitted for ``key`` before it."""
        with self._lock:
            if not self._threads:
                self._threads = [threading.Thread(target=self._run, args=(q,), name=f"status-writer-{i}", daemon=True)
                                 for i, q in enumerate(self._queues)]
                for thread in self._threads:
                    thread.start()
            self._pending_by_key[key] = self._pending_by_key.get(key, 0) + 1
        self._queues[zlib.crc32(key.encode()) % len(self._queues)].put((key, write))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every submitted write has been sent (or has failed); whether they all were."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending_by_key, timeout)

    def wait_for(self, key: str, timeout: float) -> bool:
        """Wait until ``key``'s submitted writes have been sent (or have failed); whether they were."""
        with self._idle:
            return self._idle.wait_for(lambda: key not in self._pending_by_key, timeout)

    def close(self, timeout: float) -> None:
        """Send what is queued (for up to ``timeout`` seconds), then stop the lanes."""
        if not self.wait_idle(timeout):
            log.warning("status patches not sent before stopping", extra={"count": sum(self._pending_by_key.values())})
        for q in self._queues:
            q.put(None)
        for thread in self._threads:
            thread.join(1.0)

    def _run(self, q: SimpleQueue[tuple[str, Callable[[], None]] | None]) -> None:
        while (item := q.get()) is not None:
            key, write = item
            try:
                write()
            except ApiError as err:
                self.failed += 1
                log.warning("error updating pod status", extra={"pod": key, "error": err.message})
            except Exception:  # noqa: BLE001 - a writer thread must outlive any one write
                self.failed += 1
                log.exception("error updating pod status", extra={"pod": key})
            with self._idle:
                left = self._pending_by_key[key] - 1
                if left:
                    self._pending_by_key[key] = left
                else:
                    del self._pending_by_key[key]
                self._idle.notify_all()
