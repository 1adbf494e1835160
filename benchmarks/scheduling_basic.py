"""SchedulingBasic, shaped like upstream scheduler_perf: nodes of 4 CPU / 32Gi / 110 pods,
pods of 100m / 500Mi; N nodes, I initial pods, then M measured pods."""

from __future__ import annotations

from harness import Bench, Measurement, size_parser

from kubesched.testkit.builders import make_node, make_pod


def run(nodes: int = 5000, initial: int = 1000, measured: int = 10000) -> Measurement:
    bench = Bench()
    bench.create(make_node(f"node-{i}") for i in range(nodes))
    bench.create(make_pod(f"init-{i}") for i in range(initial))
    bench.drain()
    pods = [make_pod(f"pod-{i}") for i in range(measured)]
    return bench.measure(f"SchedulingBasic/{nodes}Nodes_{measured}Pods", pods)


if __name__ == "__main__":
    parser = size_parser(__doc__, measured=10000)
    a = parser.parse_args()
    print(run(a.nodes, a.initial, a.measured).line())
