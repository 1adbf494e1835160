"""A synthetic trace in the column layout of Alibaba's ``cluster-trace-gpu-v2023`` (the openb CSV
files, docs/replay.md): made-up rows from a fixed seed, never rows of the real trace.

One generator for the tests' 16-node, 200-pod excerpt (``tests/replay/make_openb_excerpt.py``
writes ``tests/replay/data/openb/`` with the defaults) and for the benchmarks' trace at the real
trace's size (1523 nodes, 8152 pods: ``benchmarks/replay_sweep.py``). The nodes come in five
shapes (V100M32, V100M16, T4 and G3 GPU nodes and CPU-only nodes) in the excerpt's proportions;
the pods are CPU-only (30 %), GPU-sharing (30 %: one GPU's 100..700 thousandths) and whole-GPU
(40 %: 1, 2, 4 or 8 GPUs, a third of them constrained to GPU models), of every QoS; 4 % are never
scheduled (half of those given up by their user), the others bound at once or after up to 400 s
and run ``lifetime`` seconds.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

#: (cpu_milli, memory_mib, gpu, model) and how many of each in the 16-node excerpt
NODE_SHAPES = [
    ((96000, 786432, 8, "V100M32"), 3), ((96000, 393216, 8, "V100M16"), 2), ((64000, 262144, 4, "T4"), 4),
    ((128000, 786432, 8, "G3"), 2), ((32000, 262144, 0, ""), 5)]
QOS = ["LS", "BE", "Burstable", "Guaranteed"]
SEED = 20230710
NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
              "creation_time", "deletion_time", "scheduled_time"]
NODE_FILE = "openb_node_list_all_node.csv"
POD_FILE = "openb_pod_list_default.csv"


def shape_counts(nodes: int) -> list[int]:
    """How many nodes of each shape make ``nodes``: the excerpt's proportions, rounded by largest
    remainder (16 gives the excerpt's own 3, 2, 4, 2, 5)."""
    weights = [count for _, count in NODE_SHAPES]
    total = sum(weights)
    exact = [nodes * w / total for w in weights]
    counts = [int(e) for e in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[:nodes - sum(counts)]:
        counts[i] += 1
    return counts


def write_openb_trace(directory: str | Path, *, nodes: int = 16, pods: int = 200, seed: int = SEED,
                      gap: tuple[int, int] = (0, 90), lifetime: tuple[int, int] = (60, 7200)) -> Path:
    """Write the node list and ``openb_pod_list_default.csv`` into ``directory`` (made if missing)
    and return it. ``gap``: seconds between two creations (uniform); ``lifetime``: seconds a
    scheduled pod runs (uniform)."""
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    with (out_dir / NODE_FILE).open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(NODE_HEADER)
        number = 200
        for ((cpu, memory, gpu, model), _), count in zip(NODE_SHAPES, shape_counts(nodes), strict=True):
            for _ in range(count):
                number += rng.randint(1, 9)
                out.writerow([f"openb-node-{number:04d}", cpu, memory, gpu, model])
    with (out_dir / POD_FILE).open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(POD_HEADER)
        now = 9_400_000
        number = 0
        for _ in range(pods):
            number += rng.randint(1, 6)
            now += rng.randint(*gap)
            out.writerow(_pod_row(rng, f"openb-pod-{number:04d}", now, lifetime))
    return out_dir


def _pod_row(rng: random.Random, name: str, created: int, lifetime: tuple[int, int]) -> list[object]:
    kind = rng.random()
    if kind < 0.3:  # CPU only
        gpus, milli, spec = 0, 0, ""
    elif kind < 0.6:  # GPU sharing
        gpus, milli, spec = 1, rng.choice([100, 220, 250, 500, 700]), ""
    else:  # whole GPUs, a third of them constrained to models
        gpus = rng.choice([1, 1, 2, 4, 8])
        milli = 1000
        spec = rng.choice(["", "", "V100M16|V100M32", "T4", "G3"])
        if spec == "T4" and gpus > 4:
            spec = ""
    cpu = rng.choice([2000, 4000, 8000, 16000]) * max(gpus, 1)
    memory = rng.choice([8192, 15258, 32768, 65536]) * max(gpus, 1)
    qos = rng.choice(QOS)
    deleted: int | str
    if rng.random() < 0.04:  # never scheduled: gave up, or still pending at the trace's end
        phase, scheduled = "Pending", ""
        deleted = created + rng.randint(300, 3000) if rng.random() < 0.5 else ""
    else:
        scheduled_at = created + (0 if rng.random() < 0.8 else rng.randint(1, 400))
        scheduled = str(scheduled_at)
        deleted = scheduled_at + rng.randint(*lifetime)
        phase = rng.choice(["Succeeded", "Succeeded", "Running", "Failed"])
    return [name, cpu, memory, gpus, milli, spec, qos, phase, created, deleted, scheduled]
