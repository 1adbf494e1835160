"""What the scheduler measures, under upstream's metric names (``pkg/scheduler/metrics/metrics.go``):
counters always, durations when ``timing`` is on (``kubesched run`` turns it on; a simulation
does not pay for clocks it does not report). Histograms keep fixed cumulative buckets, so memory
does not grow with the run; ``serve/metrics.py`` exports them.

kubesched's own opt-in preemption plugins count what they did besides (:attr:`Metrics.policies`,
see :data:`POLICY_COUNTERS`): upstream has no such metrics; they are exported as ``kubesched_*``."""

from __future__ import annotations

import random
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

K = TypeVar("K")


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ``ExponentialBuckets``."""
    return tuple(start * factor**i for i in range(count))


#: upstream's buckets, metric by metric
SCHEDULING_ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
POD_SCHEDULING_SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
PLUGIN_EXECUTION_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
PREEMPTION_VICTIMS_BUCKETS = exponential_buckets(1, 2, 7)
POD_SCHEDULING_ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)
PREEMPTION_GOROUTINES_BUCKETS = exponential_buckets(0.01, 2, 20)
#: upstream ``pluginMetricsSamplePercent``: plugin durations are measured in this share of cycles
PLUGIN_METRICS_SAMPLE_PERCENT = 10


#: what kubesched's opt-in preemption plugins count, per plugin: (counter, its meaning); the
#: simulation result's ``preemptionPolicies`` and ``/metrics`` (``kubesched_<plugin>_<counter>_total``,
#: see serve/metrics.py) report them
POLICY_COUNTERS: dict[str, tuple[tuple[str, str], ...]] = {
    "CrossNodePreemption": (
        ("crossNodeAttempts", "Preemption attempts where some node's dry run also removed lower-priority pods on "
                              "other nodes of its topology domains (named by anti-affinity or hard spreading)."),
        ("crossNodePreemptions", "Preemptions made whose victims include pods on other nodes than the one the "
                                 "preemptor was nominated to."),
        ("victimsElsewhere", "Victims preempted on other nodes than the one the preemptor was nominated to."),
    ),
    "AffinityAwarePreemption": (
        ("affinityAttempts", "Preemption attempts where some node's dry run tried keeping a lower-priority pod the "
                             "preemptor has required pod affinity to."),
        ("affinityKept", "Preemptions made that kept (reprieved) such a pod on the chosen node, where "
                         "DefaultPreemption's dry run would have removed it."),
    ),
}


@dataclass
class Histogram:
    """Cumulative-ready bucket counts (``counts[i]``: observations in ``(bounds[i-1], bounds[i]]``,
    the last one above every bound), their sum and count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    observed: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value
        self.observed += 1

    def copy(self) -> Histogram:
        return Histogram(self.bounds, list(self.counts), self.total, self.observed)

    def merge(self, other: Histogram) -> None:
        """Count ``other``'s observations too (same bounds)."""
        self.counts = [a + b for a, b in zip(self.counts, other.counts)]
        self.total += other.total
        self.observed += other.observed


def attempts_label(attempts: int) -> str:
    """Upstream ``getAttemptsLabel``: the number of attempts, "15+" from 15 on."""
    return "15+" if attempts >= 15 else str(attempts)


@dataclass
class Metrics:
    schedule_attempts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (result, profile) -> count
    preemption_attempts: int = 0
    preemption_victims: Histogram = field(default_factory=lambda: Histogram(PREEMPTION_VICTIMS_BUCKETS))
    pod_scheduling_attempts: Histogram = field(default_factory=lambda: Histogram(POD_SCHEDULING_ATTEMPTS_BUCKETS))
    #: SchedulerAsyncPreemption's background work, by result ("success", "error"): how many ran, and
    #: (timed) how long each took
    preemption_goroutines: Counter[str] = field(default_factory=Counter)
    preemption_goroutines_duration: dict[str, Histogram] = field(default_factory=dict)
    #: measure durations (wall clock); off in simulations
    timing: bool = False
    #: whether this cycle's plugin durations are sampled (upstream: 10% of cycles)
    sampling: bool = False
    attempt_duration: dict[tuple[str, str], Histogram] = field(default_factory=dict)  # (result, profile)
    sli_duration: dict[str, Histogram] = field(default_factory=dict)  # attempts label
    extension_point_duration: dict[tuple[str, str, str], Histogram] = field(default_factory=dict)
    plugin_duration: dict[tuple[str, str, str], Histogram] = field(default_factory=dict)  # (plugin, point, status)
    _sampler: random.Random = field(default_factory=lambda: random.Random(0), repr=False)
    #: kubesched's opt-in preemption plugins' own counts: (plugin, counter of
    #: :data:`POLICY_COUNTERS`) -> count
    policies: Counter[tuple[str, str]] = field(default_factory=Counter)

    def count_policy(self, plugin: str, counter: str, n: int = 1) -> None:
        """Count ``n`` for one of :data:`POLICY_COUNTERS` of ``plugin``."""
        self.policies[plugin, counter] += n

    def policy_report(self, plugins: list[str]) -> dict[str, dict[str, int]]:
        """Per plugin of ``plugins`` that has :data:`POLICY_COUNTERS`, each counter (zeros included)."""
        return {plugin: {name: self.policies[plugin, name] for name, _ in POLICY_COUNTERS[plugin]}
                for plugin in plugins if plugin in POLICY_COUNTERS}

    def observe_victims(self, count: int) -> None:
        self.preemption_victims.observe(count)

    def observe_preemption_goroutine(self, result: str, seconds: float) -> None:
        """``scheduler_preemption_goroutines_execution_total`` and, timed,
        ``scheduler_preemption_goroutines_duration_seconds`` (upstream's from 1.32)."""
        self.preemption_goroutines[result] += 1
        if self.timing:
            _observe(self.preemption_goroutines_duration, result, PREEMPTION_GOROUTINES_BUCKETS, seconds)

    def start_cycle(self) -> None:
        """Decide whether this cycle's plugin executions are timed (a sampler of its own: the
        scheduler's seeded decisions are not touched)."""
        self.sampling = self.timing and self._sampler.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT

    def attempt(self, result: str, profile: str, seconds: float | None = None) -> None:
        """``scheduler_schedule_attempts_total`` and, timed, ``scheduling_attempt_duration_seconds``."""
        self.schedule_attempts[result, profile] += 1
        if seconds is not None:
            _observe(self.attempt_duration, (result, profile), SCHEDULING_ATTEMPT_BUCKETS, seconds)

    def observe_sli(self, attempts: int, seconds: float) -> None:
        """``pod_scheduling_sli_duration_seconds``: from the pod's first attempt to its binding."""
        _observe(self.sli_duration, attempts_label(attempts), POD_SCHEDULING_SLI_BUCKETS, seconds)

    def observe_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        _observe(self.extension_point_duration, (point, status, profile), EXTENSION_POINT_BUCKETS, seconds)

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        _observe(self.plugin_duration, (plugin, point, status), PLUGIN_EXECUTION_BUCKETS, seconds)


def _observe(histograms: dict[K, Histogram], key: K, bounds: tuple[float, ...], value: float) -> None:
    histogram = histograms.get(key)
    if histogram is None:
        histogram = histograms[key] = Histogram(bounds)
    histogram.observe(value)
