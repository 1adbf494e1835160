"""``kubesched sweep`` end to end: the same sweep run in-process, on one local Dask worker and on two.

The base is a cluster of ``--nodes`` nodes in three zones with ``--deployments`` Deployments
(``--pods`` pods in all, some with zone spreading), a few PriorityClasses, and a Scenario step that
creates a burst of high-priority pods at 30 s (so that preemption runs); the sweep varies the seed
(``--variants`` of them). Each way of running is a separate ``python -m kubesched sweep`` process,
timed from start to exit, its results written with ``--out`` as a user would:

* ``in-process``: ``--workers 0``, the variants one after another in the command's process; its
  per-variant times (the records' ``seconds``) sum to the simulations' own cost;
* ``1 worker`` / ``2 workers``: a local Dask cluster of that many worker processes.

Reported: wall-clock seconds of each and its CPU seconds (the command's and its worker processes',
user and system: what the machine spent, where the wall time is what the user waits), the 2-worker
speed-up over 1 worker, and the sweep
machinery's overhead per variant (1 worker's wall time less the simulations' own cost, per variant,
as a share of a variant's simulation). Every way gives the same metrics (checked).

    python benchmarks/sweep.py                      # 100 variants of a 500-node cluster
    python benchmarks/sweep.py --variants 10 --nodes 50 --pods 400
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

import yaml

from kubesched.testkit.builders import make_deployment, make_node, make_pod, make_priority_class


def write_base(directory: Path, nodes: int, deployments: int, pods: int) -> Path:
    zones = ("zone-a", "zone-b", "zone-c")
    objects = [make_node(f"node-{i:04d}", cpu="16", memory="64Gi", labels={"topology.kubernetes.io/zone": zones[i % 3]})
               for i in range(nodes)]
    objects += [make_priority_class("batch", 100), make_priority_class("online", 100000)]
    per = max(1, pods // deployments)
    for d in range(deployments):
        pod = make_pod(f"app-{d}", cpu=("500m", "1", "2")[d % 3], memory="1Gi",
                       priority_class="batch" if d % 2 else "online")
        if d % 4 == 0:
            pod["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                         "whenUnsatisfiable": "ScheduleAnyway",
                                                         "labelSelector": {"matchLabels": {"app": f"app-{d}"}}}]
        objects.append(make_deployment(f"app-{d}", per, pod))
    burst = make_deployment("burst", nodes // 2, make_pod("burst", cpu="8", memory="4Gi", priority_class="online"))
    objects.append({"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "sweep-bench"},
                    "spec": {"steps": [{"at": "30s", "create": burst}]}})
    path = directory / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def run(sweep: Path, out: Path, *args: str) -> tuple[float, float, dict]:
    """Wall-clock and CPU seconds of one ``kubesched sweep`` process, and its JSON answer. The CPU
    seconds are the process's and its workers' (children it waited for count in its own children's
    usage, which is ours when it exits), user and system time together."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kubesched", "sweep", str(sweep), "--out", str(out), "-o", "json",
                           "--no-progress", *args], capture_output=True, check=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--deployments", type=int, default=40)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--json", metavar="FILE", help="Also write the figures as JSON (- for stdout).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_base(directory, args.nodes, args.deployments, args.pods)
        sweep = directory / "sweep.yaml"
        sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep",
                                         "metadata": {"name": "bench"},
                                         "spec": {"base": "cluster.yaml", "seeds": {"first": 0, "count": args.variants}}}))
        figures = {}
        documents = {}
        for name, extra in (("in-process", ["--workers", "0"]), ("1 worker", ["--workers", "1"]),
                            ("2 workers", ["--workers", "2"])):
            seconds, cpu, documents[name] = run(sweep, directory / name.replace(" ", "-"), *extra)
            figures[name] = round(seconds, 2)
            figures[f"{name} CPU"] = round(cpu, 2)
            print(f"{name:>11}: {seconds:7.1f} s wall, {cpu:7.1f} s CPU", flush=True)
    metrics = {name: [v["metrics"] for v in doc["variants"]] for name, doc in documents.items()}
    assert metrics["in-process"] == metrics["1 worker"] == metrics["2 workers"], "the ways of running disagree"
    simulations = sum(v["seconds"] for v in documents["in-process"]["variants"])
    per_variant = simulations / args.variants
    overhead = (figures["1 worker"] - figures["in-process"]) / args.variants
    figures.update({"variants": args.variants, "nodes": args.nodes, "pods": args.pods,
                    "simulation seconds per variant": round(per_variant, 3),
                    "2 workers / 1 worker": round(figures["2 workers"] / figures["1 worker"], 3),
                    "overhead per variant (1 worker vs in-process)": round(overhead, 3),
                    "overhead share": round(overhead / per_variant, 3)})
    print(f"simulation per variant {per_variant:.2f} s; 2 workers take {figures['2 workers / 1 worker']:.2f}x "
          f"the time of 1; overhead per variant {overhead:.3f} s ({overhead / per_variant:.1%} of a simulation)")
    if args.json:
        text = json.dumps(figures, indent=2)
        print(text) if args.json == "-" else Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
