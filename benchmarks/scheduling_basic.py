"""SchedulingBasic, shaped like upstream scheduler_perf: nodes of 4 CPU / 32Gi / 110 pods,
pods of 100m / 500Mi; N nodes, I initial pods, then M measured pods."""

from __future__ import annotations

import argparse

from harness import Bench, Measurement

from kubesched.testkit.builders import make_node, make_pod


def run(nodes: int = 5000, initial: int = 1000, measured: int = 10000) -> Measurement:
    bench = Bench()
    bench.create(make_node(f"node-{i}") for i in range(nodes))
    bench.create(make_pod(f"init-{i}") for i in range(initial))
    bench.drain()
    pods = [make_pod(f"pod-{i}") for i in range(measured)]
    return bench.measure(f"SchedulingBasic/{nodes}Nodes_{measured}Pods", pods)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--initial", type=int, default=1000)
    parser.add_argument("--measured", type=int, default=10000)
    a = parser.parse_args()
    print(run(a.nodes, a.initial, a.measured).line())
