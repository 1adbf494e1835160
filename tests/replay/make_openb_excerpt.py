"""Writes the synthetic openb excerpt of tests/replay/data/openb/ (run from the repository root:
``python tests/replay/make_openb_excerpt.py``). The rows are made up, from a fixed seed, in the
column layout of Alibaba's cluster-trace-gpu-v2023 CSV files (see docs/replay.md): 16 nodes and 200
pods, with whole-GPU, GPU-sharing, CPU-only and GPU-model-constrained tasks of every QoS."""

from __future__ import annotations

import csv
import random
from pathlib import Path

OUT = Path(__file__).parent / "data" / "openb"
NODE_SHAPES = [  # (cpu_milli, memory_mib, gpu, model), count
    ((96000, 786432, 8, "V100M32"), 3), ((96000, 393216, 8, "V100M16"), 2), ((64000, 262144, 4, "T4"), 4),
    ((128000, 786432, 8, "G3"), 2), ((32000, 262144, 0, ""), 5)]
QOS = ["LS", "BE", "Burstable", "Guaranteed"]


def main() -> None:
    rng = random.Random(20230710)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "openb_node_list_all_node.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        number = 200
        for (cpu, memory, gpu, model), count in NODE_SHAPES:
            for _ in range(count):
                number += rng.randint(1, 9)
                out.writerow([f"openb-node-{number:04d}", cpu, memory, gpu, model])
    with (OUT / "openb_pod_list_default.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                      "creation_time", "deletion_time", "scheduled_time"])
        now = 9_400_000
        number = 0
        for _ in range(200):
            number += rng.randint(1, 6)
            now += rng.randint(0, 90)
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
            created = now
            if rng.random() < 0.04:  # never scheduled: gave up, or still pending at the trace's end
                phase, scheduled = "Pending", ""
                deleted: int | str = created + rng.randint(300, 3000) if rng.random() < 0.5 else ""
            else:
                scheduled_at = created + (0 if rng.random() < 0.8 else rng.randint(1, 400))
                scheduled = str(scheduled_at)
                deleted = scheduled_at + rng.randint(60, 7200)
                phase = rng.choice(["Succeeded", "Succeeded", "Running", "Failed"])
            out.writerow([f"openb-pod-{number:04d}", cpu, memory, gpus, milli, spec, qos, phase, created, deleted,
                          scheduled])


if __name__ == "__main__":
    main()
