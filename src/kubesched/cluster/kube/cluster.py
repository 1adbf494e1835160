"""KubeCluster: the :class:`~kubesched.k8s.objects.Cluster` protocol over a real API server.

Reads are served from the informers' caches (upstream's listers), never from the API per call.
Changes seen by the informer threads are queued; the scheduling thread applies them to its handler
with :meth:`KubeCluster.dispatch`, because the scheduler's handlers are not thread-safe. The result
of a write on an assigned pod (a preemption victim) is applied before the write returns, as the
embedded cluster does: kube-scheduler handles those events while the cycle that caused them is
still running, and which queue a failed pod goes back to depends on that.

Writes are the scheduler's actions, as kube-scheduler performs them:

- bind: ``POST pods/{name}/binding`` (the answer is a ``Status``, never decoded as a Binding). A 409
  after a retried bind whose first answer was lost is success when the pod is bound to our node.
- status: a strategic merge patch of ``pods/{name}/status`` (conditions merge by type;
  ``nominatedNodeName: null`` clears the nomination); a failed cycle's patch is sent in the
  background (:mod:`.statuswriter`).
- preemption: ``DELETE pods/{name}`` with a UID precondition and the pod's own grace period (the
  DisruptionTarget condition is patched first by the scheduler through :meth:`patch_pod_status`).
- events: ``events.k8s.io/v1``, sent in the background (:mod:`.events`).

An optional write guard (leader election) runs before every write try and refuses with ApiError when
this replica may not act.
"""

from __future__ import annotations

import builtins
import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubesched.cluster.kube.cache import Change, InformerCache
from kubesched.cluster.kube.changes import ChangeQueue
from kubesched.cluster.kube.events import EventRecorder
from kubesched.cluster.kube.informer import Informer, InformerOptions
from kubesched.cluster.kube.resources import (
    INFORMED,
    OPTIONAL_INFORMED,
    POD,
    Resource,
)
from kubesched.cluster.kube.statuswriter import StatusWriter
from kubesched.cluster.kube.transport import STRATEGIC_MERGE_PATCH, ClientOptions, Transport
from kubesched.k8s.objects import (
    DEFAULT_SCHEDULER_NAME,
    ApiError,
    Obj,
    namespace_of,
    object_key,
    scheduler_name_of,
)
from kubesched.k8s.timefmt import EPOCH
from kubesched.scheduler.ports import ClusterEventHandler, T, deliver

log = logging.getLogger("kubesched.kube.cluster")

#: how long a write on an assigned pod waits for the watch to bring its result back
OWN_WRITE_TIMEOUT = 1.0
#: how long a binding waits for the pod's earlier status patches (sent in the background)
STATUS_BEFORE_BIND_TIMEOUT = 60.0
#: how many API calls ``call_all`` makes at once (upstream's default parallelism)
PARALLELISM = 16


def wall_clock() -> float:
    """Now, in kubesched's time unit: seconds since 2026-01-01T00:00:00Z (see kubesched.k8s.timefmt)."""
    return time.time() - EPOCH.timestamp()


def _ns_name(obj: Obj) -> tuple[str, str]:
    return namespace_of(obj), str((obj.get("metadata") or {})["name"])


class KubeCluster:
    def __init__(
        self,
        api_client: Any,
        *,
        profiles: Sequence[str],
        identity: str | None = None,
        client_options: ClientOptions | None = None,
        informer_options: InformerOptions | None = None,
        clock: Callable[[], float] = wall_clock,
    ) -> None:
        options = client_options or ClientOptions()
        self.identity = identity or socket.gethostname()
        self.profiles = list(profiles)
        self.clock = clock
        # separate rate limiters, as kube-scheduler's separate clients: scheduling and events
        self.transport = Transport(api_client, options, user_agent=f"kubesched/{self.identity}")
        self.events = EventRecorder(
            Transport(api_client, options, user_agent=f"kubesched/{self.identity} events"),
            clock, self.identity,
        )
        self.informer_options = informer_options or InformerOptions()
        self.cache = InformerCache()
        self.stop_event = threading.Event()
        self.informers: dict[str, Informer] = {}
        self._resources: dict[str, Resource] = {r.kind: r for r in (*INFORMED, *OPTIONAL_INFORMED)}
        self._changes = ChangeQueue()
        self._handler: ClusterEventHandler | None = None
        #: the thread that handles the watch's events (the scheduling thread): the only one that
        #: applies an own write to the handler
        self._handler_thread: int | None = None
        #: per thread: where call_all's workers leave the own writes they made for that thread
        self._on_behalf = threading.local()
        self._guard: Callable[[], None] | None = None
        self._pool: ThreadPoolExecutor | None = None  # for call_all, made when first needed
        self.status_writer = StatusWriter()

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def lock(self) -> threading.RLock:
        return self.cache.lock

    def start(self) -> None:
        """Start the informers (and the event sender); see :meth:`wait_for_sync`."""
        resources = list(INFORMED) + [r for r in OPTIONAL_INFORMED if self._served(r)]
        for resource in resources:
            informer = Informer(resource, self.transport, self.cache, self.informer_options, self.stop_event)
            self.informers[resource.kind] = informer
            informer.start()
        self.events.start()
        log.info("informers started", extra={"resources": [r.plural for r in resources]})

    def _served(self, resource: Resource) -> bool:
        """Does the API server serve this (CRD) resource? Checked once, at start."""
        try:
            found = self.transport.call("GET", resource.prefix)
        except ApiError as err:
            if err.code != 404:
                log.warning("API discovery failed", extra={"groupVersion": resource.api_version,
                                                           "error": err.message})
            return False
        return any(r.get("name") == resource.plural for r in (found or {}).get("resources") or ())

    def has_synced(self) -> bool:
        return bool(self.informers) and all(i.synced.is_set() for i in self.informers.values())

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers.values():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.synced.wait(remaining):
                return False
        return True

    def stop(self, event_flush_timeout: float = 5.0) -> None:
        self.stop_event.set()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.status_writer.close(event_flush_timeout)
        for informer in self.informers.values():
            informer.interrupt()
        self.events.stop(event_flush_timeout)
        for informer in self.informers.values():
            informer.join(2.0)

    def set_write_guard(self, guard: Callable[[], None] | None) -> None:
        """``guard()`` runs before each write attempt; it raises ApiError to refuse the write."""
        self._guard = guard

    # -- Cluster protocol: reading -----------------------------------------------------------
    def now(self) -> float:
        return self.clock()

    def watch(self, handler: ClusterEventHandler) -> None:
        """Register the handler; changes seen from now on are queued for :meth:`dispatch`. Call it
        with :attr:`lock` held together with the initial :meth:`list`, so nothing is seen twice."""
        with self.cache.lock:
            self._handler = handler
            self._handler_thread = threading.get_ident()
            self.cache.set_sink(self._changes.put)

    def dispatch(self, timeout: float = 0.0) -> int:
        """Apply the queued changes to the handler (on the calling thread); wait up to ``timeout``
        seconds for the first one. Returns how many were applied."""
        handler = self._handler
        if handler is None:
            if timeout > 0:
                self.stop_event.wait(timeout)
            return 0
        changes = self._changes.take_all(timeout)
        for change in changes:
            self._apply(handler, change)
        return len(changes)

    @staticmethod
    def _apply(handler: ClusterEventHandler, change: Change) -> None:
        event, kind, old, new = change
        try:
            deliver(handler, event, kind, old, new)
        except Exception:  # noqa: BLE001 - one bad object must not stop the scheduler
            log.exception("event handler failed", extra={"event": event, "kind": kind})

    def _own_write_applies(self, pod: Obj) -> bool:
        """Writes on assigned pods (preemption victims) have their result applied before the write
        returns, as in the embedded cluster: kube-scheduler handles those events concurrently with
        the cycle that caused them, and the failed-pod requeue rules depend on it. Only for the
        thread that handles events (the scheduling thread), itself or through :meth:`call_all`'s
        workers: the handler is that thread's alone. A write made on another thread (asynchronous
        preemption's) comes back through the watch, as anyone's."""
        if self._handler is None or not (pod.get("spec") or {}).get("nodeName"):
            return False
        return threading.get_ident() == self._handler_thread or getattr(self._on_behalf, "writes", None) is not None

    def _own_write_done(self, pod: Obj, before: str | None, answer: Any) -> None:
        """Apply an own write now (on the scheduling thread), or leave it for the call_all that made
        it on that thread's behalf."""
        writes: list[tuple[Obj, str | None, Any]] | None = getattr(self._on_behalf, "writes", None)
        if writes is not None:
            writes.append((pod, before, answer))
        else:
            self._apply_own_write(pod, before, answer)

    def _cached_rv(self, pod: Obj) -> str | None:
        namespace, name = _ns_name(pod)
        cached = self.cache.get(POD, namespace, name)
        return None if cached is None else (cached.get("metadata") or {}).get("resourceVersion")

    def _apply_own_write(self, pod: Obj, before: str | None, answer: Any) -> None:
        handler = self._handler
        after = ((answer or {}).get("metadata") or {}).get("resourceVersion") if isinstance(answer, dict) else None
        if handler is None or after is None or after == before:
            return  # nothing changed (a no-op patch), or nothing to wait for
        namespace, name = _ns_name(pod)
        uid = (pod.get("metadata") or {}).get("uid")

        def seen() -> bool:
            cached = self.cache.get(POD, namespace, name)
            meta = (cached or {}).get("metadata") or {}
            return cached is None or meta.get("uid") != uid or meta.get("resourceVersion") != before

        if not self._changes.wait_until(seen, OWN_WRITE_TIMEOUT):
            log.debug("own write not seen through the watch yet", extra={"pod": object_key("Pod", namespace, name)})
            return
        for change in self._changes.take_for(("Pod", namespace, name)):
            self._apply(handler, change)

    def list(self, kind: str) -> list[Obj]:
        return self.cache.list(kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        resource = self._resources.get(kind)
        if resource is None:
            return None
        return self.cache.get(resource, namespace, name)

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        return self.cache.changes(kind, since)

    # -- Cluster protocol: scheduler actions -------------------------------------------------
    def bind(self, pod: Obj, node_name: str) -> None:
        namespace, name = _ns_name(pod)
        uid = (pod.get("metadata") or {}).get("uid")
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        # an earlier failed cycle's status patch must not land after the binding
        if not self.status_writer.wait_for(f"{namespace}/{name}", STATUS_BEFORE_BIND_TIMEOUT):
            log.warning("binding before an earlier status patch of the pod was answered",
                        extra={"pod": object_key("Pod", namespace, name)})
        try:
            self.transport.call("POST", POD.object_path(namespace, name, "binding"), body=body, guard=self._guard,
                                decode=False)
        except ApiError as err:
            if err.code == 409 and self._bound_to(namespace, name, uid, node_name):
                log.info("binding already done by an earlier try",
                         extra={"pod": object_key("Pod", namespace, name), "node": node_name})
                return
            log.warning("binding failed", extra={"pod": object_key("Pod", namespace, name), "node": node_name,
                                                 "code": err.code, "error": err.message})
            raise
        if log.isEnabledFor(logging.DEBUG):  # kube-scheduler logs each binding at -v=2, not by default
            log.debug("bound pod", extra={"pod": object_key("Pod", namespace, name), "node": node_name})

    def _bound_to(self, namespace: str, name: str, uid: str | None, node_name: str) -> bool:
        try:
            current = self.transport.call("GET", POD.object_path(namespace, name))
        except ApiError:
            return False
        meta = (current or {}).get("metadata") or {}
        return (uid is None or meta.get("uid") == uid) and ((current or {}).get("spec") or {}).get(
            "nodeName") == node_name

    def update(self, obj: Obj) -> Obj:
        """PUT ``obj`` (a PersistentVolume or claim the scheduler binds); the answer is the object as
        stored."""
        resource = self._resources[obj["kind"]]
        meta = obj.get("metadata") or {}
        answer = self.transport.call("PUT", resource.object_path(meta.get("namespace"), meta["name"]), body=obj,
                                     guard=self._guard)
        log.debug("updated object", extra={"kind": obj["kind"], "name": object_key(obj["kind"], meta.get("namespace"),
                                                                                      meta["name"])})
        return dict(answer or obj)

    def call_all(self, calls: Sequence[Callable[[], T]]) -> builtins.list[T]:
        """At the same time, on up to 16 threads (upstream's Parallelizer), results in order."""
        if len(calls) <= 1:
            return [call() for call in calls]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=PARALLELISM, thread_name_prefix="kubesched-api")
        # the own writes the workers make for the scheduling thread are applied on it, once all are done
        writes: list[tuple[Obj, str | None, Any]] | None = [] if threading.get_ident() == self._handler_thread else None

        def on_behalf(call: Callable[[], T]) -> T:
            self._on_behalf.writes = writes
            try:
                return call()
            finally:
                self._on_behalf.writes = None

        results = list(self._pool.map(on_behalf, calls))
        for pod, before, answer in writes or ():
            self._apply_own_write(pod, before, answer)
        return results

    def patch_pod_status(self, pod: Obj, status_patch: Obj, *, wait: bool = True) -> None:
        namespace, name = _ns_name(pod)
        status = {
            key: (None if value is None or (key == "nominatedNodeName" and value == "") else value)
            for key, value in status_patch.items()
        }
        sync = self._own_write_applies(pod)

        def send(decode: bool) -> Any:
            return self.transport.call("PATCH", POD.object_path(namespace, name, "status"), body={"status": status},
                                       content_type=STRATEGIC_MERGE_PATCH, guard=self._guard, decode=decode)

        if not wait and not sync:
            self.status_writer.submit(f"{namespace}/{name}", lambda: send(False))
            return
        before = self._cached_rv(pod) if sync else None
        answer = send(sync)
        if sync:
            self._own_write_done(pod, before, answer)

    def delete_pod(self, pod: Obj) -> None:
        namespace, name = _ns_name(pod)
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        uid = (pod.get("metadata") or {}).get("uid")
        if uid:
            body["preconditions"] = {"uid": uid}
        sync = self._own_write_applies(pod)
        before = self._cached_rv(pod) if sync else None
        answer = self.transport.call("DELETE", POD.object_path(namespace, name), body=body, guard=self._guard,
                                     decode=sync)
        log.info("deleted pod", extra={"pod": object_key("Pod", namespace, name)})
        if sync:
            self._own_write_done(pod, before, answer)

    def record_event(
        self,
        obj: Obj,
        *,
        type: str,
        reason: str,
        action: str,
        note: str,
        related: Obj | None = None,
        node: str | None = None,
    ) -> None:
        """Post an Event about ``obj``. ``node`` (the node the event is about) is accepted like the
        embedded cluster's; an Event carries it in its note."""
        if self._guard is not None:
            try:
                self._guard()
            except ApiError:
                return  # a replica that may not act does not speak either
        self.events.record(obj, type=type, reason=reason, action=action, note=note, related=related,
                           controller=self._reporting_controller(obj, related))

    def _reporting_controller(self, obj: Obj, related: Obj | None) -> str:
        """The profile that acted: the preemptor's for a victim's event, else the pod's own."""
        for candidate in (related, obj):
            if candidate is not None:
                name = scheduler_name_of(candidate)
                if name in self.profiles:
                    return str(name)
        return self.profiles[0] if self.profiles else DEFAULT_SCHEDULER_NAME
