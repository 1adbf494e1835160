"""Counters with upstream's metric names (upstream ``pkg/scheduler/metrics/metrics.go``); exported by kube mode."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Metrics:
    schedule_attempts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (result, profile) -> count
    preemption_attempts: int = 0
    preemption_victims: list[int] = field(default_factory=list)
    pod_scheduling_attempts: list[int] = field(default_factory=list)

    def observe_victims(self, count: int) -> None:
        self.preemption_victims.append(count)
