"""The framework's duration metrics (upstream ``framework_extension_point_duration_seconds`` and
``plugin_execution_duration_seconds``, ``framework/runtime/framework.go``): each extension point run
is timed, each plugin call in the cycles a sampling picks. Nothing is wrapped until timing is
enabled, so a framework without it runs untouched code.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

from kubesched.scheduler.framework.interface import Code, PendingBind, Status
from kubesched.scheduler.framework.profile import PluginSet
from kubesched.scheduler.framework.waiting import BindWait, WaitingPod

#: upstream's status code names: the ``status`` label of the duration metrics
CODE_LABELS = {Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
               Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
               Code.SKIP: "Skip"}
#: framework methods timed as one extension point each (PreScore/Score and PreBind/Bind are timed
#: inside run_score and the binding)
FRAMEWORK_POINTS = (("run_pre_filter", "PreFilter"), ("filter_all", "Filter"), ("run_post_filter", "PostFilter"),
                    ("run_reserve", "Reserve"), ("run_unreserve", "Unreserve"), ("run_permit", "Permit"),
                    ("run_post_bind", "PostBind"))
#: plugin methods timed when sampled, with their extension points (a vector form counts as the point)
PLUGIN_METHOD_POINTS = (
    ("pre_filter", "PreFilter"), ("filter", "Filter"), ("filter_vector", "Filter"), ("post_filter", "PostFilter"),
    ("pre_score", "PreScore"), ("score", "Score"), ("score_vector", "Score"),
    ("normalize_score", "ScoreExtensionNormalize"), ("normalize_vector", "ScoreExtensionNormalize"),
    ("reserve", "Reserve"), ("unreserve", "Unreserve"), ("permit", "Permit"), ("pre_bind", "PreBind"),
    ("bind", "Bind"), ("post_bind", "PostBind"),
)


class TimedPoints(PluginSet):
    """What the framework's points read and do to be timed. The points of :data:`FRAMEWORK_POINTS`
    are wrapped from outside; those timed in parts (PreScore and Score, PreBind and Bind) report
    to :attr:`observe` themselves."""

    #: ``(extension point, status label, seconds)`` of each point run, once timing is enabled
    observe: Callable[[str, str, float], None] | None = None

    def enable_timing(self, observe_point: Callable[[str, str, float], None],
                      observe_plugin: Callable[[str, str, str, float], None], sampling: Callable[[], bool]) -> None:
        """Measure each extension point run (``framework_extension_point_duration_seconds``) and,
        in the cycles ``sampling()`` picks, each plugin call (``plugin_execution_duration_seconds``):
        the methods are wrapped once, so a framework without timing runs untouched code."""
        if self.observe is not None:
            return
        self.observe = observe_point
        for attr, point in FRAMEWORK_POINTS:
            setattr(self, attr, _timed(getattr(self, attr), point, observe_point))
        for plugin in self.profile.plugins.values():
            for attr, point in PLUGIN_METHOD_POINTS:
                method = getattr(plugin, attr, None)
                if callable(method):
                    setattr(plugin, attr, _sampled(method, plugin.name, point, observe_plugin, sampling))


def status_label(outcome: object) -> str:
    """The status label of whatever an extension point returned."""
    if isinstance(outcome, tuple):
        outcome = next((x for x in outcome if isinstance(x, Status)), None)
    if isinstance(outcome, Status):
        return CODE_LABELS.get(outcome.code, "Success")
    if isinstance(outcome, WaitingPod | BindWait | PendingBind):
        return "Wait"
    return "Success"


def _timed(method: Callable[..., Any], point: str, observe: Callable[[str, str, float], None]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = perf_counter()
        try:
            outcome = method(*args, **kwargs)
        except Exception:
            observe(point, "Error", perf_counter() - started)
            raise
        observe(point, status_label(outcome), perf_counter() - started)
        return outcome

    return timed


def _sampled(method: Callable[..., Any], plugin: str, point: str, observe: Callable[[str, str, str, float], None],
             sampling: Callable[[], bool]) -> Callable[..., Any]:
    def sampled(*args: Any, **kwargs: Any) -> Any:
        if not sampling():
            return method(*args, **kwargs)
        started = perf_counter()
        outcome = method(*args, **kwargs)
        observe(plugin, point, status_label(outcome), perf_counter() - started)
        return outcome

    return sampled
