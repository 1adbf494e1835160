"""A profile's plugins sorted for the runtime (upstream ``NewFramework`` in
``framework/runtime/framework.go``): which plugins run at each extension point, which optional
capabilities of :mod:`~kubesched.scheduler.framework.capabilities` each offers, and the Score
weights.

Plugins are sorted by the extension points and vector capabilities they implement (the protocols of
:mod:`~kubesched.scheduler.framework.interface` and :mod:`~kubesched.scheduler.framework.capabilities`)
once, when the framework is built; running a point is then a loop over a typed list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.scheduler.framework.capabilities import (
    FailureStatusesVector,
    FilterRejectionsNoted,
    FilterVector,
    FilterVectorAt,
    NormalizeVector,
    PodIndependentFilter,
    PreemptionArithmetic,
    ScoreVector,
)
from kubesched.scheduler.framework.interface import (
    ALL,
    EXTENSION_POINTS,
    BindPlugin,
    ClusterEvent,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)


@dataclass
class Profile:
    """Which plugins run where, as resolved from a KubeSchedulerConfiguration profile."""

    scheduler_name: str
    plugins: dict[str, Plugin]  # name -> instance
    points: dict[str, list[str]]  # extension point -> ordered plugin names
    weights: dict[str, int] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


@dataclass(slots=True)
class Scorer:
    """A Score plugin with the optional forms of its score and normalization."""

    plugin: ScorePlugin
    vector: ScoreVector | None
    normalize_vector: NormalizeVector | None
    normalize: ScoreExtensions | None


class PluginSet:
    """A profile's plugins in typed lists, one per extension point (in the profile's order) and one
    per optional capability (parallel to the point's list, None where a plugin lacks it)."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.name = profile.scheduler_name
        p = profile.plugins

        def at(point: str) -> list[Any]:
            """The plugins enabled at ``point``, in order; each must implement its protocol
            (upstream ``updatePluginList``: "plugin %q does not extend %s plugin")."""
            protocol = EXTENSION_POINTS[point]
            out = [p[n] for n in profile.points.get(point, ())]
            for pl in out:
                if not isinstance(pl, protocol):
                    raise TypeError(f'plugin "{pl.name}" does not extend {point} plugin')
            return out

        sorts: list[QueueSortPlugin] = at("queueSort")
        self.queue_sort = sorts[0] if sorts else None
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = at("preEnqueue")
        self.pre_filter_plugins: list[PreFilterPlugin] = at("preFilter")
        self.filter_plugins: list[FilterPlugin] = at("filter")
        self.post_filter_plugins: list[PostFilterPlugin] = at("postFilter")
        self.pre_score_plugins: list[PreScorePlugin] = at("preScore")
        self.score_plugins: list[ScorePlugin] = at("score")
        self.reserve_plugins: list[ReservePlugin] = at("reserve")
        self.permit_plugins: list[PermitPlugin] = at("permit")
        self.pre_bind_plugins: list[PreBindPlugin] = at("preBind")
        self.bind_plugins: list[BindPlugin] = at("bind")
        self.post_bind_plugins: list[PostBindPlugin] = at("postBind")
        self.weights = {name: (profile.weights.get(name) or 1) for name in profile.points.get("score", ())}
        # the optional capabilities, sorted once
        self.pre_filter_extensions = [pl for pl in self.pre_filter_plugins if isinstance(pl, PreFilterExtensions)]
        self.filter_vectors = [pl if isinstance(pl, FilterVector) else None for pl in self.filter_plugins]
        self.filter_vectors_at = [pl if isinstance(pl, FilterVectorAt) else None for pl in self.filter_plugins]
        self.rejections_noted = [pl if isinstance(pl, FilterRejectionsNoted) else None for pl in self.filter_plugins]
        self.failure_statuses = [
            pl if isinstance(pl, FailureStatusesVector) else None for pl in self.filter_plugins
        ]
        #: the filters whose verdict on a node may change with its pods (all but the
        #: :class:`PodIndependentFilter` ones)
        self.pod_dependent_filters = [
            pl for pl in self.filter_plugins
            if not (isinstance(pl, PodIndependentFilter) and pl.depends_on_pods is False)
        ]
        #: per pod-dependent filter, itself where it offers the preemption arithmetic
        self.arithmetic_filters: list[PreemptionArithmetic | None] = [
            pl if isinstance(pl, PreemptionArithmetic) else None for pl in self.pod_dependent_filters
        ]
        self.scorers = [
            Scorer(
                pl,
                pl if isinstance(pl, ScoreVector) else None,
                pl if isinstance(pl, NormalizeVector) else None,
                pl if isinstance(pl, ScoreExtensions) else None,
            )
            for pl in self.score_plugins
        ]

    @property
    def percentage_of_nodes_to_score(self) -> int | None:
        return self.profile.percentage_of_nodes_to_score

    def events_by_plugin(self) -> dict[str, list[ClusterEvent]]:
        """Each plugin's registered events. A plugin without ``events_to_register`` is interested in
        every event (upstream ``fillEnqueueExtensions`` gives it ``UnrollWildCardResource()``)."""
        out: dict[str, list[ClusterEvent]] = {}
        for name, plugin in self.profile.plugins.items():
            if isinstance(plugin, EnqueueExtensions):
                out[name] = list(plugin.events_to_register())
            else:
                out[name] = [ClusterEvent("*", ALL)]
        return out
