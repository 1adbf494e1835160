"""The framework runtime: one profile's plugins run at each extension point
(upstream ``framework/runtime/framework.go``).

:class:`Framework` is made of one class per group of points, each in its own module, all on the
profile's plugins sorted once by the points and capabilities they implement
(:class:`~kubesched.scheduler.framework.profile.PluginSet`):

- :mod:`~kubesched.scheduler.framework.filtering`: PreFilter with its extensions, Filter (vector
  forms, windows of nodes, two passes for nominated pods), PostFilter, the preemption dry runs;
- :mod:`~kubesched.scheduler.framework.scoring`: PreScore, Score, NormalizeScore and weights;
- :mod:`~kubesched.scheduler.framework.bind_points`: Reserve, Permit, PreBind, Bind, PostBind;
- :mod:`~kubesched.scheduler.framework.timing`: the points' and plugins' duration metrics.

The queue's two points, PreEnqueue and QueueSort, are here.
"""

from __future__ import annotations

from typing import Any

from kubesched.scheduler.framework.bind_points import BindPoints
from kubesched.scheduler.framework.extender import Extender
from kubesched.scheduler.framework.filtering import FilterPoints
from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.nominated import NominatedSums
from kubesched.scheduler.framework.profile import Profile
from kubesched.scheduler.framework.scoring import ScorePoints
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.views import NominatorView
from kubesched.scheduler.framework.waiting import WaitingPods


class Framework(FilterPoints, ScorePoints, BindPoints):
    """One profile's framework (upstream ``frameworkImpl``); the scheduler keeps one per profile."""

    def __init__(self, profile: Profile, nominator: NominatorView, extenders: list[Extender] | None = None) -> None:
        super().__init__(profile)
        self.extenders = list(extenders or ())
        self.nominator = nominator
        self.nominated_sums = NominatedSums(nominator)
        self.waiting_pods = WaitingPods()

    # -- queue ------------------------------------------------------------------------------
    def sort_key(self, pod: PodInfo, timestamp: float, initial_timestamp: float | None) -> tuple[Any, ...]:
        if self.queue_sort is None:
            return (timestamp,)
        return self.queue_sort.sort_key(pod, timestamp, initial_timestamp)

    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        for pl in self.pre_enqueue_plugins:
            status = pl.pre_enqueue(pod)
            if status is not None and not status.is_success():
                return status.with_plugin(pl.name)
        return None
