"""The points from the chosen node on (upstream ``RunReservePluginsReserve``, ``RunPermitPlugins``,
``RunPreBindPlugins``, ``RunBindPlugins`` and ``RunPostBindPlugins`` in
``framework/runtime/framework.go``): Reserve and Unreserve, Permit, then the binding cycle's
PreBind, Bind (or a bind extender) and PostBind. How binding cycles are run, inline or in the
background, is ``scheduler/binding.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter

from kubesched.k8s.objects import ApiError
from kubesched.scheduler.framework.extender import Extender
from kubesched.scheduler.framework.extenders import bind_with, binder_for
from kubesched.scheduler.framework.interface import Code, CycleState, PendingBind, Status
from kubesched.scheduler.framework.timing import TimedPoints, status_label
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.waiting import MAX_WAIT_SECONDS, BindWait, WaitingPod, WaitingPods


class BindPoints(TimedPoints):
    """The framework's points from Reserve to PostBind (PreBind and Bind are timed here, as one)."""

    #: the scheduler's extenders, in calling order (upstream ``Handle.Extenders``)
    extenders: list[Extender]
    #: pods assumed on a node and held at Permit until allowed, rejected or timed out
    waiting_pods: WaitingPods

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.reserve_plugins:
            status = pl.reserve(state, pod, node_name)
            if status is not None and not status.is_success():
                return _failed(status, "Reserve", pl.name)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            pl.unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | WaitingPod | None:
        """Upstream ``RunPermitPlugins``: the first rejection (or error) ends it; when plugins asked
        to wait and none rejected, the pod joins the waiting pods and is returned as a
        :class:`WaitingPod` (its timeouts are the caller's to arm)."""
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            status, timeout = pl.permit(state, pod, node_name)
            if status is None or status.is_success():
                continue
            if status.code == Code.WAIT:
                waits[pl.name] = min(float(timeout), MAX_WAIT_SECONDS)
                continue
            return _failed(status, "Permit", pl.name)
        if waits:
            waiting = WaitingPod(pod, node_name, waits)
            self.waiting_pods.add(waiting)
            return waiting
        return None

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | BindWait | None:
        """PreBind then Bind (the first Bind plugin not returning Skip). A plugin raising an API
        error fails with that error's message, as upstream's DefaultBinder returns it. A PreBind
        plugin that waits (:class:`PendingBind`) pauses the cycle: a :class:`BindWait` is returned
        and the caller resumes it once the wait is over."""
        return self._bind_from(state, pod, node_name, 0)

    def _bind_from(self, state: CycleState, pod: PodInfo, node_name: str, first: int) -> Status | BindWait | None:
        if self.observe is None:
            return self._bind_steps(state, pod, node_name, first)
        started = perf_counter()
        outcome = self._bind_steps(state, pod, node_name, first)
        # PreBind and Bind in one span: a PreBind plugin that waits makes them two calls anyway
        self.observe("Bind", status_label(outcome), perf_counter() - started)
        return outcome

    def _bind_steps(self, state: CycleState, pod: PodInfo, node_name: str, first: int) -> Status | BindWait | None:
        for i in range(first, len(self.pre_bind_plugins)):
            pre = self.pre_bind_plugins[i]
            status = pre.pre_bind(state, pod, node_name)
            if isinstance(status, PendingBind):
                return BindWait(status, self._resume_after(state, pod, node_name, i))
            if status is not None and not status.is_success():
                return _failed(status, "PreBind", pre.name)
        # upstream ``extendersBinding``: the first interested bind extender binds instead of the
        # Bind plugins
        binder = binder_for(self.extenders, pod)
        if binder is not None:
            return bind_with(binder, pod, node_name)
        for pl in self.bind_plugins:
            try:
                status = pl.bind(state, pod, node_name)
            except ApiError as err:
                status = Status.error(err.message)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and not status.is_success():
                return _failed(status, "Bind", pl.name)
            return status
        return None

    def _resume_after(
        self, state: CycleState, pod: PodInfo, node_name: str, index: int
    ) -> Callable[[Status | None], Status | BindWait | None]:
        def resume(result: Status | None) -> Status | BindWait | None:
            if result is not None and not result.is_success():
                return _failed(result, "PreBind", self.pre_bind_plugins[index].name)
            return self._bind_from(state, pod, node_name, index + 1)

        return resume

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)


def _failed(status: Status, point: str, plugin: str) -> Status:
    """A Reserve/Permit/PreBind/Bind failure as upstream's runtime reports it: a rejection keeps
    its reasons and records the plugin; any other code becomes an Error whose message is prefixed
    ``running <point> plugin "<name>": ``."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.error(f'running {point} plugin "{plugin}": {status.message()}', plugin)

