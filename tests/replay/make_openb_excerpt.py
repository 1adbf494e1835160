"""Writes the synthetic openb excerpt of tests/replay/data/openb/ (run from the repository root:
``python tests/replay/make_openb_excerpt.py``). The rows are made up, from a fixed seed, in the
column layout of Alibaba's cluster-trace-gpu-v2023 CSV files (see docs/replay.md): 16 nodes and 200
pods, with whole-GPU, GPU-sharing, CPU-only and GPU-model-constrained tasks of every QoS. The
generator is :mod:`kubesched.testkit.openb_trace`, which also makes the benchmarks' full-size trace."""

from __future__ import annotations

from pathlib import Path

from kubesched.testkit.openb_trace import write_openb_trace

OUT = Path(__file__).parent / "data" / "openb"


def main() -> None:
    write_openb_trace(OUT)


if __name__ == "__main__":
    main()
