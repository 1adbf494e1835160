"""A tiny harness for scheduler_perf-shaped workloads on the embedded cluster.

Objects are created through the embedded API (admission included); the measured phase times how
fast the scheduler loop drains its queue, in pods per second of wall-clock time.

Like upstream's scheduler_perf, a bench runs the scheduler against a bare API (no controllers, no
result bookkeeping), so it wires the cluster itself rather than running a ``kubesched.sim``
Simulation; it drives the same ``SchedulerLoop`` as the simulator, one instant at a time.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.des.clock import EventLoop
from kubesched.des.heap import long_lived_heap
from kubesched.scheduler.loop import SchedulerLoop
from kubesched.scheduler.scheduler import Scheduler


def write_kubeconfig(directory: Path, url: str) -> Path:
    """A kubeconfig for an API server at ``url`` (a token the fake API server takes), in ``directory``."""
    path = directory / "kubeconfig"
    path.write_text(
        f"apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster:\n    server: {url}\n"
        "users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: f\n  context:\n"
        "    cluster: f\n    user: u\ncurrent-context: f\n")
    return path


def size_parser(description: str | None, measured: int = 1000) -> argparse.ArgumentParser:
    """A workload script's command line with the sizes every workload takes: ``--nodes``,
    ``--initial`` (pods placed before the measurement) and ``--measured`` (default ``measured``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--initial", type=int, default=1000)
    parser.add_argument("--measured", type=int, default=measured)
    return parser


@dataclass
class Measurement:
    name: str
    pods: int
    seconds: float
    peak_mib: float
    #: CPU seconds of this process over the same span (holds up better than wall time on a busy machine)
    cpu_seconds: float = 0.0

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds if self.seconds else float("inf")

    @staticmethod
    def max_rss_mib() -> float:
        """Peak resident memory of this process so far (Linux reports KiB)."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def line(self) -> str:
        cpu = f" ({self.cpu_seconds:.2f} s CPU, {self.pods / self.cpu_seconds:.1f} pods/CPU-s)" if self.cpu_seconds else ""
        return (f"{self.name:<40} {self.pods:>7} pods  {self.seconds:8.2f} s  "
                f"{self.pods_per_second:9.1f} pods/s{cpu}  max RSS {self.max_rss_mib():.0f} MiB"
                + (f"  traced peak {self.peak_mib:.1f} MiB" if self.peak_mib else ""))


class Bench:
    """``cluster``: a Scenario's ``spec.cluster`` settings, for workloads that need the embedded
    cluster's controllers too (they are started only then, or with ``controllers=True``);
    ``config``: a KubeSchedulerConfiguration (default: the default profile)."""

    def __init__(self, seed: int = 0, *, cluster: dict[str, Any] | None = None, controllers: bool = False,
                 config: dict[str, Any] | None = None) -> None:
        self.loop = EventLoop()
        self.log = EventLog(self.loop.now)
        self.cluster = EmbeddedCluster(self.loop, self.log, np.random.default_rng(seed))
        self.cluster.api.ensure_system_priority_classes()
        if cluster is not None or controllers:
            self.cluster.configure(cluster or {})
            self.cluster.start_controllers()
        self.scheduler = Scheduler(self.cluster, config, np.random.default_rng(seed + 1), self.loop.now)
        self.scheduler.start()
        self.scheduler_loop = SchedulerLoop(self.scheduler, self.loop)

    def create(self, objs: Iterable[dict[str, Any]]) -> None:
        for obj in objs:
            self.cluster.create(obj)

    def drain(self) -> int:
        """Run the event loop and scheduler until nothing is due now; return cycles run."""
        return self.scheduler_loop.run_instant()

    def advance(self, seconds: float) -> None:
        target = self.loop.now() + seconds
        while self.loop.advance(target):
            self.drain()
            if self.loop.now() >= target:
                break
        self.drain()

    def bound(self, names: set[str] | None = None) -> int:
        return sum(
            1 for p in self.cluster.api.iter("Pod")
            if (p.get("spec") or {}).get("nodeName") and (names is None or p["metadata"]["name"] in names)
        )

    def bound_in(self, namespace: str) -> int:
        """Pods of ``namespace`` that have a node."""
        return sum(1 for p in self.cluster.api.iter("Pod")
                   if p["metadata"].get("namespace") == namespace and (p.get("spec") or {}).get("nodeName"))

    def measure(self, name: str, objs: list[dict[str, Any]], settle: float = 0.0,
                trace_memory: bool = False) -> Measurement:
        """Time creating ``objs`` and scheduling until quiet (``settle`` more simulated seconds).
        ``trace_memory`` adds tracemalloc's peak, which slows the run down by about 2x."""
        if trace_memory:
            tracemalloc.start()
        with long_lived_heap():  # as `kubesched simulate` runs once the scenario is loaded
            start, cpu_start = time.perf_counter(), time.process_time()
            self.create(objs)
            self.drain()
            if settle:
                self.advance(settle)
            seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        peak = 0
        if trace_memory:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        names = {o["metadata"]["name"] for o in objs if o.get("kind") == "Pod"}
        return Measurement(name, self.bound(names), seconds, peak / 2**20, cpu_seconds)
