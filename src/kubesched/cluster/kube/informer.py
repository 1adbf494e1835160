"""List + watch for one kind (upstream's reflector), feeding the shared :class:`InformerCache`.

- The list is paginated (``limit``/``continue``); its resourceVersion starts the watch.
- The watch asks for bookmarks and remembers the resourceVersion of every event, bookmarks
  included, so a stream that ends (server timeout, dropped connection) resumes where it stopped.
- 410 Gone — as the HTTP status of the watch request, or as an ``ERROR`` event in the stream, or
  on a continue token — means the resourceVersion was compacted away: relist, and let the cache
  diff the fresh list against what it holds to synthesise the deletes the lost events carried.
- Any other failure backs off exponentially with jitter, then retries.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubesched.cluster.kube.cache import InformerCache, prepare
from kubesched.cluster.kube.ratelimit import Backoff
from kubesched.cluster.kube.resources import Resource
from kubesched.cluster.kube.transport import Transport, WatchStream
from kubesched.k8s.objects import ApiError, Obj

log = logging.getLogger("kubesched.kube.informer")


@dataclass(frozen=True, slots=True)
class InformerOptions:
    page_size: int = 500
    watch_timeout_min: int = 300  # timeoutSeconds is random in [min, 2*min), as client-go's
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    read_timeout_slack: float = 30.0


class _Relist(Exception):
    """The watch's resourceVersion is gone (410): list again."""


class Informer:
    def __init__(self, resource: Resource, transport: Transport, cache: InformerCache,
                 options: InformerOptions, stop: threading.Event, rng: random.Random | None = None) -> None:
        self.resource = resource
        self.transport = transport
        self.cache = cache
        self.options = options
        self.stop = stop
        self.synced = threading.Event()
        self.resource_version: str | None = None
        self.relists = 0
        self.watches = 0
        self._rng = rng or random.Random()
        self._backoff = Backoff(options.backoff_initial, options.backoff_cap, jitter=1.0, rng=self._rng)
        self._stream: WatchStream | None = None
        self._failures: tuple[type[BaseException], ...] = (ApiError, *transport.connection_errors)
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()

    def interrupt(self) -> None:
        """Close the open watch so the thread notices ``stop`` at once."""
        stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
            except _Relist:
                log.info("resourceVersion expired, relisting",
                         extra={"resource": self.resource.plural, "resourceVersion": self.resource_version})
                self.resource_version = None
            except self._failures as exc:
                if self.stop.is_set():
                    break
                delay = self._backoff.next()
                log.warning("list/watch failed, backing off",
                            extra={"resource": self.resource.plural, "error": str(exc), "delay": round(delay, 3)})
                self.stop.wait(delay)
            except Exception:  # noqa: BLE001 - an informer must outlive a bad object
                delay = self._backoff.next()
                log.exception("informer failed, relisting", extra={"resource": self.resource.plural})
                self.resource_version = None
                self.stop.wait(delay)

    # -- list --------------------------------------------------------------------------------
    def _list(self) -> None:
        path = self.resource.collection_path()
        items: list[Obj] = []
        query: dict[str, Any] = {"limit": self.options.page_size}
        rv = ""
        while True:
            try:
                page = self.transport.call("GET", path, query=query)
            except ApiError as err:
                if err.code == 410 and "continue" in query:
                    log.info("continue token expired, restarting the list", extra={"resource": self.resource.plural})
                    items, query = [], {"limit": self.options.page_size}
                    continue
                raise
            meta = page.get("metadata") or {}
            if not rv:
                rv = str(meta.get("resourceVersion") or "")
            items.extend(prepare(self.resource, o) for o in page.get("items") or ())
            token = meta.get("continue")
            if not token:
                break
            query = {"limit": self.options.page_size, "continue": token}
        self.cache.replace(self.resource, items)
        self.resource_version = rv
        self.relists += 1
        self.synced.set()
        self._backoff.reset()

    # -- watch -------------------------------------------------------------------------------
    def _watch(self) -> None:
        timeout = self._rng.randrange(self.options.watch_timeout_min, 2 * self.options.watch_timeout_min)
        query = {
            "watch": "true",
            "resourceVersion": self.resource_version or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout,
        }
        try:
            stream = self.transport.watch(self.resource.collection_path(), query,
                                          read_timeout=timeout + self.options.read_timeout_slack)
        except ApiError as err:
            if err.code == 410:
                raise _Relist() from err
            raise
        self._stream = stream
        self.watches += 1
        started = time.monotonic()
        events = 0
        try:
            if self.stop.is_set():
                return
            for event in stream:
                self._handle(event)
                events += 1
                if self.stop.is_set():
                    return
        finally:
            self._stream = None
            stream.close()
        if events == 0 and time.monotonic() - started < 1.0:
            # a server that closes every watch at once must not make us spin
            self.stop.wait(self._backoff.next())
        else:
            self._backoff.reset()

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise _Relist()
            raise ApiError(code or 500, str(obj.get("reason") or "InternalError"),
                           str(obj.get("message") or "watch error"))
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self.cache.apply(self.resource, kind, prepare(self.resource, obj))
        elif kind != "BOOKMARK":
            log.warning("unknown watch event type", extra={"resource": self.resource.plural, "type": kind})
            return
        if rv:
            self.resource_version = str(rv)
