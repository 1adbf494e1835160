"""Every benchmark workload still runs and schedules all of its measured pods (at a tiny size: the
figures themselves are measured by ``benchmarks/run.py``, never by a test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import node_affinity  # noqa: E402
import pod_affinity  # noqa: E402
import preemption_basic  # noqa: E402
import scheduling_basic  # noqa: E402
import topology_spreading  # noqa: E402


@pytest.mark.parametrize("workload, expected", [
    (lambda: scheduling_basic.run(20, 10, 40), 40),
    (lambda: node_affinity.run(20, 10, 40), 40),
    (lambda: topology_spreading.run(20, 10, 40), 40),
    (lambda: topology_spreading.run_deployments(20, 10, 40), 40),
    (lambda: pod_affinity.run_anti_affinity(40, 10, 20), 20),  # one pod per node: 30 of 40 nodes used
    (lambda: pod_affinity.run_affinity(20, 10, 40), 40),
    (lambda: preemption_basic.run(10), 10),
], ids=["SchedulingBasic", "NodeAffinity", "TopologySpreading", "DeploymentPods", "PodAntiAffinity",
        "PodAffinity", "PreemptionBasic"])
def test_the_workload_schedules_every_measured_pod(workload, expected) -> None:
    measurement = workload()
    assert measurement.pods == expected
