"""``events.k8s.io/v1`` Events, sent in the background like upstream's event broadcaster.

Recording never blocks a scheduling cycle: events go into a bounded queue that one sender thread
drains through its own transport (its own QPS budget, as kube-scheduler's separate event client).
A repeat of an identical event (same object, reason, note, type, action, controller) within six
minutes becomes a ``series`` on the first Event — count and lastObservedTime, patched at most every
30 seconds — instead of a new object, as the events/v1 broadcaster does.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kubesched.cluster.kube.resources import EVENT
from kubesched.cluster.kube.transport import MERGE_PATCH, Transport
from kubesched.k8s.objects import DEFAULT_NAMESPACE, ApiError, Obj
from kubesched.k8s.timefmt import EPOCH

log = logging.getLogger("kubesched.kube.events")

MAX_NOTE_LENGTH = 1024
SERIES_WINDOW = 360.0  # upstream finishTime: 6 minutes
SERIES_PATCH_INTERVAL = 30.0
MAX_SERIES = 4096


def micro_time(seconds: float) -> str:
    """A ``metav1.MicroTime``: RFC 3339 with exactly six fractional digits, UTC."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref: dict[str, Any] = {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", "Pod"),
                           "name": meta.get("name")}
    for field, value in (("namespace", meta.get("namespace")), ("uid", meta.get("uid")),
                         ("resourceVersion", meta.get("resourceVersion"))):
        if value:
            ref[field] = value
    return ref


@dataclass(slots=True)
class _Series:
    namespace: str
    name: str
    count: int
    last_observed: float
    last_patched: float


@dataclass(frozen=True, slots=True)
class _Pending:
    obj: Obj
    type: str
    reason: str
    action: str
    note: str
    related: Obj | None
    controller: str
    time: float


class EventRecorder:
    def __init__(self, transport: Transport, clock: Callable[[], float], hostname: str,
                 *, max_queue: int = 10000, nanos: Callable[[], int] | None = None) -> None:
        self.transport = transport
        self.clock = clock
        self.hostname = hostname
        self._queue: queue.Queue[_Pending | None] = queue.Queue(max_queue)
        self._series: OrderedDict[tuple[Any, ...], _Series] = OrderedDict()
        self._nanos = nanos or (lambda: int((clock() + EPOCH.timestamp()) * 1e9))
        self._last_nanos = 0
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.failed = 0

    # -- producer side (scheduling thread) ----------------------------------------------------
    def record(self, obj: Obj, *, type: str, reason: str, action: str, note: str,
               related: Obj | None, controller: str) -> None:
        item = _Pending(obj, type, reason, action, note[:MAX_NOTE_LENGTH], related, controller, self.clock())
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    # -- sender thread ----------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-sender", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued (for at most ``timeout`` seconds), then stop the sender."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        self._thread = None

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event has been handled (for tests and shutdown)."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._send(item)
            except ApiError as err:
                self.failed += 1
                log.warning("event not recorded", extra={"reason": err.reason, "error": err.message})
            except Exception:  # noqa: BLE001 - the sender must survive anything
                self.failed += 1
                log.exception("event sender failed")
            finally:
                self._queue.task_done()

    def _send(self, item: _Pending) -> None:
        regarding = object_reference(item.obj)
        related = object_reference(item.related) if item.related is not None else None
        identity = tuple(sorted((k, v) for k, v in regarding.items() if k != "resourceVersion"))
        key = (item.controller, item.type, item.reason, item.action, item.note, identity,
               tuple(sorted(related.items())) if related else None)
        series = self._series.get(key)
        if series is not None and item.time - series.last_observed <= SERIES_WINDOW:
            series.count += 1
            series.last_observed = item.time
            self._series.move_to_end(key)
            if series.count == 2 or item.time - series.last_patched >= SERIES_PATCH_INTERVAL:
                series.last_patched = item.time
                body = {"series": {"count": series.count, "lastObservedTime": micro_time(item.time)}}
                try:
                    self.transport.call("PATCH", EVENT.object_path(series.namespace, series.name),
                                        body=body, content_type=MERGE_PATCH, decode=False)
                    return
                except ApiError as err:
                    if err.code != 404:
                        raise
                    del self._series[key]
                    # the Event expired: create a fresh one below
            else:
                return
        namespace = regarding.get("namespace") or DEFAULT_NAMESPACE
        name = f"{regarding['name']}.{self._unique_nanos():x}"
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(item.time),
            "reportingController": item.controller,
            "reportingInstance": f"{item.controller}-{self.hostname}",
            "action": item.action,
            "reason": item.reason,
            "type": item.type,
            "note": item.note,
            "regarding": regarding,
        }
        if related is not None:
            event["related"] = related
        self.transport.call("POST", EVENT.collection_path(namespace), body=event, decode=False)
        self._series[key] = _Series(namespace, name, 1, item.time, item.time)
        while len(self._series) > MAX_SERIES:
            self._series.popitem(last=False)

    def _unique_nanos(self) -> int:
        nanos = max(self._nanos(), self._last_nanos + 1)
        self._last_nanos = nanos
        return nanos
