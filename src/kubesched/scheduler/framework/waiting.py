"""What waits: pods held at Permit (upstream ``framework/runtime/waiting_pods_map.go``), and
binding cycles paused at PreBind (:class:`BindWait`).

A Permit plugin may answer *Wait* with a timeout (at most 15 minutes); the pod, already assumed on
its node, then waits in the profile's :class:`WaitingPods` until every plugin that asked to wait
allows it — or one rejects it, or a plugin's timeout passes ("rejected due to timeout after waiting
<t> at plugin <name>"). Other plugins find waiting pods through the framework handle
(``get_waiting_pod``, ``iterate_waiting_pods``) and call :meth:`WaitingPod.allow` or
:meth:`WaitingPod.reject` on them, as Coscheduling allows a whole gang once its last member arrives.

The outcome is handed to whoever waits on the pod (its binding cycle) exactly once; a decision
made after the first is ignored, as upstream's buffered channel of one does.

A PreBind plugin may answer :class:`~kubesched.scheduler.framework.interface.PendingBind` (volumes
being provisioned, say): the binding cycle then pauses as a :class:`BindWait`, which whoever runs
binding cycles waits on and resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubesched.scheduler.framework.interface import PendingBind, Status
from kubesched.scheduler.framework.types import PodInfo

#: upstream ``maxTimeout``: a Permit plugin's wait is capped at 15 minutes
MAX_WAIT_SECONDS = 15 * 60.0


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String()`` prints whole and fractional seconds
    (``10s``, ``1m0s``, ``1.5s``, ``15m0s``)."""
    whole = int(seconds)
    frac = seconds - whole
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    sec_text = f"{secs + frac:.9f}".rstrip("0").rstrip(".") if frac else str(secs)
    if hours:
        return f"{hours}h{minutes}m{sec_text}s"
    if minutes:
        return f"{minutes}m{sec_text}s"
    return f"{sec_text}s"


class WaitingPod:
    def __init__(self, pod: PodInfo, node_name: str, waits: dict[str, float]) -> None:
        self.pod = pod
        self.node_name = node_name
        self.pending: dict[str, float] = dict(waits)  # plugin -> its timeout (seconds)
        self._timers: list[tuple[Callable[[Any], None], Any]] = []
        self._outcome: tuple[Status | None] | None = None
        self._waiter: Callable[[Status | None], None] | None = None

    @property
    def pending_plugins(self) -> list[str]:
        return sorted(self.pending)

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)
        if not self.pending:
            self._decide(None)

    def reject(self, plugin: str, message: str) -> None:
        self._decide(Status.unschedulable(message, plugin=plugin))

    def _decide(self, status: Status | None) -> None:
        if self._outcome is not None:
            return
        self._outcome = (status,)
        for cancel, handle in self._timers:
            cancel(handle)
        self._timers.clear()
        if self._waiter is not None:
            self._waiter(status)

    def wait(self, then: Callable[[Status | None], None]) -> None:
        """Hand the outcome to ``then`` (at once if already decided)."""
        if self._outcome is not None:
            then(self._outcome[0])
        else:
            self._waiter = then

    def add_timer(self, cancel: Callable[[Any], None], handle: Any) -> None:
        self._timers.append((cancel, handle))


class WaitingPods:
    """The waiting pods of one profile, by pod UID."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, waiting: WaitingPod) -> None:
        self._pods[waiting.pod.uid] = waiting

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)


@dataclass(frozen=True, slots=True)
class BindWait:
    """A binding cycle paused by a waiting PreBind plugin: wait as ``pending`` says, then call
    ``resume`` with the wait's outcome (None: done; a status: failed or timed out) to go on."""

    pending: PendingBind
    resume: Callable[[Status | None], Status | BindWait | None]
