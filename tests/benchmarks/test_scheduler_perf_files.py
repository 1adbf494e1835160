"""benchmarks/scheduler_perf.py runs workload files written in upstream scheduler_perf's format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).parent / "perf_config" / "config" / "performance-config.yaml"
sys.path.insert(0, str(ROOT / "benchmarks"))

import scheduler_perf  # noqa: E402


def test_workloads_run_and_report_data_items() -> None:
    results = {r.workload: r for r in scheduler_perf.run_all(CONFIG)}
    basic = results["SchedulingBasic/50Nodes"]
    assert basic.skipped is None
    assert [m.pods for m in basic.measurements] == [100]  # every measured pod bound
    throughput = basic.data_items[0]
    assert throughput["labels"] == {"Metric": "SchedulingThroughput", "Name": "SchedulingBasic/50Nodes/namespace-2"}
    assert throughput["unit"] == "pods/s"
    assert set(throughput["data"]) == {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}
    assert throughput["data"]["Average"] > 0
    anti = results["SchedulingPodAntiAffinity/60Nodes"]
    # one pod per node: 10 initial ones, then 40 measured on the 50 nodes left
    assert [m.pods for m in anti.measurements] == [40]
    assert anti.data_items[0]["labels"]["Name"] == "SchedulingPodAntiAffinity/60Nodes/sched-1"
    churn = results["SchedulingWithMixedChurn/10Nodes"]
    assert churn.skipped == "opcode 'churn'" and churn.data_items == []


def test_the_command_line_filters_overrides_and_writes_data_items(tmp_path: Path) -> None:
    out = tmp_path / "items.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scheduler_perf.py"), str(CONFIG),
                          "--filter", "SchedulingBasic", "--param", "measurePods=30", "--data-items", str(out)],
                         capture_output=True, text=True, check=True)
    assert "SchedulingBasic/50Nodes/namespace-2" in run.stdout and " 30 pods" in run.stdout
    document = json.loads(out.read_text())
    assert document["version"] == "v1"
    assert [i["labels"]["Metric"] for i in document["dataItems"]] == ["SchedulingThroughput", "PeakRSS"]
