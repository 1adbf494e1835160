"""Prometheus text exposition (format 0.0.4) of the scheduler's metrics, with upstream's names
(upstream ``pkg/scheduler/metrics/metrics.go``), plus a few about the API client.

The scheduler's state is not thread-safe, so the scheduling thread calls :meth:`Exporter.update`
between cycles; it renders a complete text that the HTTP thread serves as is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesched.cluster.kube.cluster import KubeCluster
    from kubesched.cluster.kube.leaderelection import LeaderElector
    from kubesched.scheduler.scheduler import Scheduler

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREEMPTION_VICTIMS_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
POD_SCHEDULING_ATTEMPTS_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0)
QUEUES = ("active", "backoff", "unschedulable", "gated")


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass
class Histogram:
    """A cumulative histogram fed from the scheduler's observation lists."""

    buckets: Sequence[float]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    observed: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.buckets) + 1)

    def drain(self, values: list[int]) -> None:
        """Count ``values`` and empty the list: in a long-running scheduler the lists the simulator
        keeps whole would otherwise grow forever."""
        for value in values:
            self.counts[bisect_left(self.buckets, value)] += 1
            self.total += value
            self.observed += 1
        del values[:]

    def lines(self, name: str) -> Iterable[str]:
        running = 0
        for bound, count in zip(self.buckets, self.counts):
            running += count
            yield f'{name}_bucket{{le="{_number(bound)}"}} {running}'
        yield f'{name}_bucket{{le="+Inf"}} {self.observed}'
        yield f"{name}_sum {_number(self.total)}"
        yield f"{name}_count {self.observed}"


class Exporter:
    def __init__(self, profiles: Sequence[str]) -> None:
        self.profiles = list(profiles)
        self.victims = Histogram(PREEMPTION_VICTIMS_BUCKETS)
        self.attempts = Histogram(POD_SCHEDULING_ATTEMPTS_BUCKETS)
        self.text = ""

    def update(self, scheduler: Scheduler, cluster: KubeCluster | None = None,
               elector: LeaderElector | None = None, leader_name: str = "") -> None:
        m = scheduler.metrics
        self.victims.drain(m.preemption_victims)
        self.attempts.drain(m.pod_scheduling_attempts)
        out: list[str] = []

        def family(name: str, kind: str, help_text: str) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")

        family("scheduler_schedule_attempts_total", "counter",
               "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
               "scheduled, while 'error' means an internal scheduler problem.")
        default_profile = self.profiles[0] if len(self.profiles) == 1 else ""
        for key, count in sorted(m.schedule_attempts.items(), key=lambda kv: str(kv[0])):
            result, profile = (key if isinstance(key, tuple) else (key, default_profile))
            out.append(f"scheduler_schedule_attempts_total{_labels({'profile': str(profile), 'result': str(result)})} "
                       f"{count}")
        family("scheduler_preemption_attempts_total", "counter", "Total preemption attempts in the cluster till now")
        out.append(f"scheduler_preemption_attempts_total {m.preemption_attempts}")
        family("scheduler_preemption_victims", "histogram", "Number of selected preemption victims")
        out.extend(self.victims.lines("scheduler_preemption_victims"))
        family("scheduler_pod_scheduling_attempts", "histogram",
               "Number of attempts to successfully schedule a pod.")
        out.extend(self.attempts.lines("scheduler_pod_scheduling_attempts"))
        family("scheduler_pending_pods", "gauge",
               "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
               "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
               "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable "
               "pods that the scheduler never attempted to schedule because they are gated.")
        pending = scheduler.queue.pending_counts()
        for queue_name in QUEUES:
            out.append(f'scheduler_pending_pods{{queue="{queue_name}"}} {pending.get(queue_name, 0)}')
        if elector is not None:
            family("leader_election_master_status", "gauge",
                   "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
                   "1 indicates master. 'name' is the string used to identify the lease.")
            out.append(f"leader_election_master_status{_labels({'name': leader_name})} {int(elector.is_leader())}")
        if cluster is not None:
            out.extend(self._client_lines(cluster))
        self.text = "\n".join(out) + "\n"

    @staticmethod
    def _client_lines(cluster: KubeCluster) -> list[str]:
        out = ["# HELP kubesched_api_requests_total HTTP requests sent to the API server, by client.",
               "# TYPE kubesched_api_requests_total counter"]
        clients: list[tuple[str, Any]] = [("scheduler", cluster.transport), ("events", cluster.events.transport)]
        out.extend(f'kubesched_api_requests_total{{client="{n}"}} {t.requests}' for n, t in clients)
        out += ["# HELP kubesched_api_retries_total Requests retried after 429, 5xx or a connection failure.",
                "# TYPE kubesched_api_retries_total counter"]
        out.extend(f'kubesched_api_retries_total{{client="{n}"}} {t.retries}' for n, t in clients)
        out += ["# HELP kubesched_informer_lists_total Full lists per resource (the first one, then relists).",
                "# TYPE kubesched_informer_lists_total counter"]
        out.extend(f'kubesched_informer_lists_total{{resource="{i.resource.plural}"}} {i.relists}'
                   for i in cluster.informers.values())
        out += ["# HELP kubesched_events_dropped_total Events not recorded because the send queue was full.",
                "# TYPE kubesched_events_dropped_total counter",
                f"kubesched_events_dropped_total {cluster.events.dropped}"]
        return out
