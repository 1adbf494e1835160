"""The scheduler's port to a cluster: what it needs from one (the embedded cluster and the Kubernetes
API are the two implementations)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from kubesched.k8s.objects import Obj

T = TypeVar("T")


class ClusterEventHandler(Protocol):
    def on_add(self, kind: str, obj: Obj) -> None: ...

    def on_update(self, kind: str, old: Obj, new: Obj) -> None: ...

    def on_delete(self, kind: str, obj: Obj) -> None: ...


class Cluster(Protocol):
    def now(self) -> float: ...

    def watch(self, handler: ClusterEventHandler) -> None:
        """Deliver add/update/delete events of every kind to ``handler``."""

    def list(self, kind: str) -> list[Obj]: ...

    def get(self, kind: str, namespace: str, name: str) -> Obj | None: ...

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        """Which objects of ``kind`` changed, as :meth:`list` and :meth:`get` see them: a mark to
        pass next time and the keys (``namespace/name``, or ``name`` of a cluster-scoped kind) of
        the objects created, updated or deleted since ``since`` (a mark this method gave), or None
        for the keys when that cannot be told (no mark yet; a cluster may always answer None):
        then the caller reads every object again."""

    def bind(self, pod: Obj, node_name: str) -> None:
        """POST pods/binding. Raises ApiError (409 if already bound, 404 if gone)."""

    def update(self, obj: Obj) -> Obj:
        """PUT an object (the scheduler writes PersistentVolumes and claims this way when it binds a
        pod's volumes); raises ApiError (409 when its resourceVersion is stale). Returns the
        object as stored."""

    def patch_pod_status(self, pod: Obj, status_patch: Obj, *, wait: bool = True) -> None:
        """Merge ``status_patch`` into the pod's status; ``conditions`` merge by type;
        ``nominatedNodeName: None`` clears the nomination. ``wait=False``: the caller needs no
        answer, and a real API server's cluster may send the patch in the background (after the
        pod's earlier background patches; a failure is logged, not raised)."""

    def delete_pod(self, pod: Obj) -> None:
        """DELETE with default options (the pod's grace period), precondition on UID."""

    def call_all(self, calls: Sequence[Callable[[], T]]) -> builtins.list[T]:
        """Each of ``calls``, their results in order: one after another in a simulation, at the
        same time against a real API server (upstream's Parallelizer, e.g. for a preemptor's
        victims)."""

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
        """Record an Event about ``obj`` (events.k8s.io/v1 fields); ``node`` names the node the event
        is about, as a structured field the timeline keeps (never parsed back out of ``note``)."""


def deliver(handler: ClusterEventHandler, event: str, kind: str, old: Obj | None, new: Obj) -> None:
    """Hand one watch event (``add``, ``update`` or ``delete``; ``new`` is the deleted object for a
    delete) to a handler."""
    if event == "add":
        handler.on_add(kind, new)
    elif event == "update":
        assert old is not None
        handler.on_update(kind, old, new)
    else:
        handler.on_delete(kind, new)


class Timers(Protocol):
    """A clock with one-shot callbacks: the simulator's discrete-event loop, or real timers that a
    long-running scheduler's thread runs between cycles."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None], *, background: bool = False) -> object:
        """Run ``callback`` once at ``when`` (``background``: housekeeping that does not, by
        itself, keep a simulation running)."""

    def run_due(self) -> bool:
        """Run every callback due now; return whether any ran."""

    def cancel(self, timer: Any) -> None:
        """Drop a callback :meth:`call_at` queued (its return value), if it has not run."""
