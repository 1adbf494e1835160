"""``/metrics``: the scheduler's metrics under upstream's names, labels and buckets (upstream
``pkg/scheduler/metrics/metrics.go``, client-go's ``rest_client_*``, leader election), the
process and Python runtime metrics, and a few of kubesched's own, through prometheus-client.

The scheduler's state is not thread-safe, so the scheduling thread calls :meth:`Exporter.update`
between cycles: it turns the counters and histograms into metric families, which the HTTP
thread's scrape then serves (with the process collectors, read at scrape time). Building the
families costs the scheduling thread time, so it is done when a scrape asks for it, not on a
timer: a scrape (:attr:`Exporter.text`) serves the families if they are younger than
``max_age``, and otherwise asks the scheduling thread for fresh ones between two cycles and waits
for them (at most :data:`FRESH_TIMEOUT` seconds, then it serves what it has). A scheduler nobody
scrapes builds none.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from kubesched.scheduler.metrics import POLICY_COUNTERS, Histogram

if TYPE_CHECKING:
    from kubesched.cluster.kube.cluster import KubeCluster
    from kubesched.cluster.kube.leaderelection import LeaderElector
    from kubesched.scheduler.scheduler import Scheduler

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QUEUES = ("active", "backoff", "unschedulable", "gated")
#: the longest a scrape waits for the scheduling thread to build fresh families
FRESH_TIMEOUT = 2.0


def snake_case(name: str) -> str:
    """``CrossNodePreemption`` -> ``cross_node_preemption``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _histogram(family: HistogramMetricFamily, labels: list[str], histogram: Histogram) -> None:
    buckets: list[tuple[str, float]] = []
    running = 0
    for bound, count in zip(histogram.bounds, histogram.counts):
        running += count
        buckets.append((_bound(bound), running))
    buckets.append(("+Inf", histogram.observed))
    family.add_metric(labels, buckets, histogram.total)


def _bound(value: float) -> str:
    return repr(float(value))


def _histograms(name: str, help_text: str, label_names: list[str],
                histograms: Iterable[tuple[Sequence[str], Histogram]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, help_text, labels=label_names)
    for labels, histogram in histograms:
        _histogram(family, list(labels), histogram)
    return family


class _Snapshot(Collector):
    """The families the last :meth:`Exporter.update` built (swapped whole, so a scrape sees one
    consistent set)."""

    def __init__(self) -> None:
        self.families: list[Metric] = []

    def collect(self) -> Iterator[Metric]:
        return iter(list(self.families))


class Exporter:
    def __init__(self, profiles: Sequence[str], max_age: float = 0.5) -> None:
        self.profiles = list(profiles)
        self.max_age = max_age
        self._cond = threading.Condition(threading.Lock())
        self.builds = 0  # how many times the families were built
        self._built_at = float("-inf")
        self._wanted = False
        #: whether a scheduling thread builds families on request (else a scrape serves what it has)
        self._live = False
        self.registry = CollectorRegistry(auto_describe=False)
        self._snapshot = _Snapshot()
        self.registry.register(self._snapshot)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    @property
    def text(self) -> str:
        """The exposition a scrape returns now: the scheduler's families at most ``max_age`` old
        when the scheduling thread answers in time."""
        self._refresh()
        return generate_latest(self.registry).decode()

    @property
    def wanted(self) -> bool:
        """Whether a scrape waits for fresh families (the scheduling thread calls :meth:`update`)."""
        return self._wanted

    def set_live(self, live: bool) -> None:
        """The scheduling thread answers requests for fresh families (from now on, or no longer)."""
        with self._cond:
            self._live = live
            if not live:
                self._wanted = False
                self._cond.notify_all()

    def _refresh(self) -> None:
        with self._cond:
            if not self._live or time.monotonic() - self._built_at <= self.max_age:
                return
            built = self.builds
            self._wanted = True
            self._cond.wait_for(lambda: self.builds != built or not self._live, FRESH_TIMEOUT)

    def update(self, scheduler: Scheduler, cluster: KubeCluster | None = None,
               elector: LeaderElector | None = None, leader_name: str = "") -> None:
        m = scheduler.metrics
        out: list[Metric] = []

        attempts = CounterMetricFamily(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.", labels=["profile", "result"])
        default_profile = self.profiles[0] if len(self.profiles) == 1 else ""
        for (result, profile), count in sorted(m.schedule_attempts.items()):
            attempts.add_metric([str(profile or default_profile), str(result)], count)
        out.append(attempts)
        out.append(_histograms(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)", ["profile", "result"],
            [((profile, result), h) for (result, profile), h in sorted(m.attempt_duration.items())]))
        out.append(_histograms(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
            "involve multiple scheduling attempts.", ["attempts"],
            [((label,), h) for label, h in sorted(m.sli_duration.items())]))
        out.append(_histograms(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "profile", "status"],
            [((point, profile, status), h)
             for (point, status, profile), h in sorted(m.extension_point_duration.items())]))
        out.append(_histograms(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.", ["extension_point", "plugin", "status"],
            [((point, plugin, status), h) for (plugin, point, status), h in sorted(m.plugin_duration.items())]))
        incoming = CounterMetricFamily(
            "scheduler_queue_incoming_pods", "Number of pods added to scheduling queues by event and queue type.",
            labels=["event", "queue"])
        for (queue, event), count in sorted(scheduler.queue.incoming.items()):
            incoming.add_metric([event, queue], count)
        out.append(incoming)
        out.append(CounterMetricFamily("scheduler_preemption_attempts", "Total preemption attempts in the cluster "
                                       "till now", value=m.preemption_attempts))
        out.append(_histograms("scheduler_preemption_victims", "Number of selected preemption victims", [],
                               [((), m.preemption_victims)]))
        if m.preemption_goroutines:  # only with SchedulerAsyncPreemption
            executed = CounterMetricFamily("scheduler_preemption_goroutines_execution",
                                           "Number of preemption goroutines executed.", labels=["result"])
            for result, count in sorted(m.preemption_goroutines.items()):
                executed.add_metric([result], count)
            out.append(executed)
            out.append(_histograms("scheduler_preemption_goroutines_duration_seconds",
                                   "Duration in seconds for running goroutines for the preemption.", ["result"],
                                   [((result,), h) for result, h in sorted(m.preemption_goroutines_duration.items())]))
        out.extend(self._policy_families(scheduler))
        out.append(_histograms("scheduler_pod_scheduling_attempts",
                               "Number of attempts to successfully schedule a pod.", [], [((), m.pod_scheduling_attempts)]))
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
            "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
            "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
            "scheduler never attempted to schedule because they are gated.", labels=["queue"])
        counts = scheduler.queue.pending_counts()
        for queue_name in QUEUES:
            pending.add_metric([queue_name], counts.get(queue_name, 0))
        out.append(pending)
        out.append(self._unschedulable(scheduler))
        out.append(self._cache_size(scheduler))
        if elector is not None:
            leader = GaugeMetricFamily(
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
                "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
                labels=["name"])
            leader.add_metric([leader_name], int(elector.is_leader()))
            out.append(leader)
        if cluster is not None:
            out.extend(self._client_families(cluster))
        self._snapshot.families = out
        with self._cond:
            self.builds += 1
            self._built_at = time.monotonic()
            self._wanted = False
            self._cond.notify_all()

    @staticmethod
    def _policy_families(scheduler: Scheduler) -> list[Metric]:
        """kubesched's own counters of its opt-in preemption plugins (none of them upstream's), for
        each such plugin some profile enables: ``kubesched_<plugin in snake case>_<counter in snake
        case>_total``, e.g. ``kubesched_cross_node_preemption_victims_elsewhere_total``."""
        names = sorted({pl.name for fwk in scheduler.frameworks.values() for pl in fwk.post_filter_plugins})
        out: list[Metric] = []
        for plugin, counts in scheduler.metrics.policy_report(names).items():
            meanings = dict(POLICY_COUNTERS[plugin])
            for counter, value in counts.items():
                out.append(CounterMetricFamily(f"kubesched_{snake_case(plugin)}_{snake_case(counter)}",
                                               f"{plugin} (kubesched's own): {meanings[counter]}", value=value))
        return out

    @staticmethod
    def _unschedulable(scheduler: Scheduler) -> GaugeMetricFamily:
        family = GaugeMetricFamily("scheduler_unschedulable_pods",
                                   "The number of unschedulable pods broken down by plugin name. A pod will increment "
                                   "the gauge for all plugins that caused it to not schedule and so this metric have "
                                   "meaning only when broken down by plugin.", labels=["plugin", "profile"])
        counts: dict[tuple[str, str], int] = {}
        for qpi in scheduler.queue.unschedulable_pods():
            for plugin in qpi.unschedulable_plugins:
                key = (plugin, qpi.pod.scheduler_name)
                counts[key] = counts.get(key, 0) + 1
        for (plugin, profile), count in sorted(counts.items()):
            family.add_metric([plugin, profile], count)
        return family

    @staticmethod
    def _cache_size(scheduler: Scheduler) -> GaugeMetricFamily:
        cache = scheduler.cache
        family = GaugeMetricFamily("scheduler_scheduler_cache_size",
                                   "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
                                   labels=["type"])
        family.add_metric(["assumed_pods"], cache.num_assumed())
        family.add_metric(["pods"], cache.num_pods())
        family.add_metric(["nodes"], cache.num_nodes())
        return family

    @staticmethod
    def _client_families(cluster: KubeCluster) -> list[Metric]:
        clients: list[tuple[str, Any]] = [("scheduler", cluster.transport), ("events", cluster.events.transport)]
        requests = CounterMetricFamily("rest_client_requests",
                                       "Number of HTTP requests, partitioned by status code, method, and host.",
                                       labels=["code", "host", "method"])
        latency = HistogramMetricFamily("rest_client_request_duration_seconds",
                                        "Request latency in seconds. Broken down by verb, and host.",
                                        labels=["host", "verb"])
        merged_codes: dict[tuple[str, str, str], int] = {}
        merged_latency: dict[tuple[str, str], Histogram] = {}
        for _, transport in clients:
            for (code, method), count in transport.responses.items():
                key = (code, transport.host, method)
                merged_codes[key] = merged_codes.get(key, 0) + count
            for verb, histogram in transport.latency.items():
                key2 = (transport.host, verb)
                if key2 in merged_latency:
                    merged_latency[key2].merge(histogram)
                else:
                    merged_latency[key2] = histogram.copy()
        for labels, count in sorted(merged_codes.items()):
            requests.add_metric(list(labels), count)
        for (host, verb), histogram in sorted(merged_latency.items()):
            _histogram(latency, [host, verb], histogram)
        retries = CounterMetricFamily("kubesched_api_retries", "Requests retried after 429, 5xx or a connection "
                                      "failure.", labels=["client"])
        for name, transport in clients:
            retries.add_metric([name], transport.retries)
        lists = CounterMetricFamily("kubesched_informer_lists", "Full lists per resource (the first one, then "
                                    "relists).", labels=["resource"])
        for informer in cluster.informers.values():
            lists.add_metric([informer.resource.plural], informer.relists)
        dropped = CounterMetricFamily("kubesched_events_dropped", "Events not recorded because the send queue was "
                                      "full.", value=cluster.events.dropped)
        return [requests, latency, retries, lists, dropped]
