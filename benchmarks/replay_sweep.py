"""A replay of an openb-shaped trace at the real trace's size, and a sweep of scoring strategies over it.

The trace is made by :mod:`kubesched.testkit.openb_trace` (the generator of the tests' excerpt) at
``--nodes`` x ``--pods`` (default 1523 x 8152, the size of Alibaba's cluster-trace-gpu-v2023 openb
lists), with pods arriving every 0..6 s and running 1..8 h, so that the GPU workload that arrives
exceeds the cluster's GPUs (about 1.6 times): the regime where placement decides how much of it
fits. Then:

1. one ``kubesched replay`` of the whole trace, timed (wall and CPU seconds) with
   ``--scheduler-config`` the first strategy (and, with ``--with-preemption``, the default
   configuration too);
2. ``kubesched sweep`` over the trace (``spec.base: {history: ...}``) of four scoring strategies x
   ``--seeds`` seeds on ``--workers`` local Dask workers: NodeResourcesFit's LeastAllocated,
   MostAllocated and RequestedToCapacityRatio (bin packing on GPUs), and
   NodeResourcesBalancedAllocation weighted 5 over cpu, memory and GPUs; each scores
   ``kubesched.io/gpu-milli`` (the trace's GPUs in thousandths) with weight 3 beside cpu and
   memory. DefaultPreemption is off in all four (``--with-preemption`` leaves it on): the figure
   compares placements, and preemption's dry runs over 1523 nodes dominate a replay of a cluster
   this full (docs/benchmarks.md).

Written to ``--out`` (default: a temporary directory, kept when given): the trace, the sweep's
JSON, ``replay-sweep.html`` (the sweep's report) and ``gpu-allocation.svg``: GPU allocation over
the arrived GPU workload per strategy (x: arrived GPU workload / GPU capacity, y: allocated GPU /
GPU capacity), each line its mean over the seeds with the 95 % interval shaded.

    python benchmarks/replay_sweep.py                          # full size: minutes per replay
    python benchmarks/replay_sweep.py --nodes 150 --pods 800 --seeds 2
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from kubesched.sweep.summary import gpu_curve_chart
from kubesched.testkit.openb_trace import write_openb_trace

GPU = "kubesched.io/gpu-milli"
RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 3}]


def _config(preemption: bool, fit: dict[str, Any] | None = None, balanced: bool = False) -> dict[str, Any]:
    plugins: dict[str, Any] = {}
    if not preemption:
        plugins["postFilter"] = {"disabled": [{"name": "DefaultPreemption"}]}
    args: list[dict[str, Any]] = []
    if fit is not None:
        args.append({"name": "NodeResourcesFit", "args": {"scoringStrategy": {"resources": RESOURCES, **fit}}})
    if balanced:
        plugins["score"] = {"enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 5}]}
        args.append({"name": "NodeResourcesBalancedAllocation", "args": {"resources": RESOURCES}})
    profile = {"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": args}
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [profile]}


def strategies(preemption: bool) -> dict[str, dict[str, Any]]:
    return {
        "least-allocated": _config(preemption, {"type": "LeastAllocated"}),
        "most-allocated": _config(preemption, {"type": "MostAllocated"}),
        "requested-to-capacity": _config(preemption, {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}),
        "balanced-weighted": _config(preemption, balanced=True),
    }


def timed(args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (the child's user and system time) of ``python -m kubesched ARGS``, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kubesched", *args], capture_output=True, text=True, check=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1523)
    parser.add_argument("--pods", type=int, default=8152)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--with-preemption", action="store_true", help="Keep DefaultPreemption on in the strategies "
                        "and also time a replay with the default configuration.")
    parser.add_argument("--out", metavar="DIR", help="Write the trace, the configurations and the results here.")
    parser.add_argument("--json", metavar="FILE", help="Also write the figures as JSON (- for stdout).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        out.mkdir(parents=True, exist_ok=True)
        trace = write_openb_trace(out / "trace", nodes=args.nodes, pods=args.pods, gap=(0, 6), lifetime=(3600, 28800))
        configs = strategies(args.with_preemption)
        for name, config in configs.items():
            (out / f"{name}.yaml").write_text(yaml.safe_dump(config))
        figures: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods}
        first = next(iter(configs))
        wall, cpu, text = timed(["replay", str(trace), "-o", "json", "--scheduler-config", str(out / f"{first}.yaml")])
        summary = json.loads(text)["summary"]
        figures[f"replay ({first})"] = {"wall": round(wall, 1), "cpu": round(cpu, 1),
                                        "bound": summary["replay"]["bound"], "notBound": summary["replay"]["notBound"]}
        print(f"one replay ({first}): {wall:.1f} s wall, {cpu:.1f} s CPU; {summary['replay']['bound']} of "
              f"{summary['pods']} pods bound", flush=True)
        if args.with_preemption:
            wall, cpu, _ = timed(["replay", str(trace), "-o", "json"])
            figures["replay (default configuration)"] = {"wall": round(wall, 1), "cpu": round(cpu, 1)}
            print(f"one replay (default configuration, preemption on): {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        sweep = out / "sweep.yaml"
        sweep.write_text(yaml.safe_dump({
            "apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "openb-scoring"},
            "spec": {"base": {"history": "trace"}, "seeds": {"first": 0, "count": args.seeds},
                     "schedulerConfigs": {name: f"{name}.yaml" for name in configs}}}))
        wall, cpu, text = timed(["sweep", str(sweep), "--workers", str(args.workers), "-o", "json", "--no-progress",
                                 "--report", str(out / "replay-sweep.html")])
        (out / "sweep.json").write_text(text)
        document = json.loads(text)
        figures["sweep"] = {"wall": round(wall, 1), "cpu": round(cpu, 1), "variants": len(document["variants"]),
                            "workers": args.workers}
        print(f"sweep of {len(document['variants'])} replays on {args.workers} workers: {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU (the command's; the workers' are theirs)", flush=True)
        curves = {}
        for c in document["configurations"]:
            name = c["axes"]["schedulerConfig"]
            curves[name] = c["gpuAllocationCurve"]
            m = c["metrics"]
            figures[name] = {k: m[k]["mean"] for k in ("gpuAllocationAtCapacity", "gpuAllocationPeak", "gpuArrived",
                                                       "pending", "agreementBound")}
            print(f"{name:>22}: GPU allocated when the capacity has arrived {m['gpuAllocationAtCapacity']['mean']}, "
                  f"peak {m['gpuAllocationPeak']['mean']}, pending at the end {m['pending']['mean']}", flush=True)
        (out / "gpu-allocation.svg").write_text(gpu_curve_chart(curves))
        if args.json:
            body = json.dumps(figures, indent=2)
            print(body) if args.json == "-" else Path(args.json).write_text(body + "\n")


if __name__ == "__main__":
    main()
