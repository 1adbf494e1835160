"""PreemptionBasic, shaped like upstream scheduler_perf: nodes of 4 CPU / 32Gi; four low-priority
pods of 900m / 500Mi per node (grace 0), then one high-priority pod of 3000m / 500Mi per node, each
of which must preempt three low pods."""

from __future__ import annotations

import argparse

from harness import Bench, Measurement

from kubesched.testkit.builders import make_node, make_pod, make_priority_class


def run(nodes: int = 500) -> Measurement:
    bench = Bench()
    bench.create([make_priority_class("low", 1), make_priority_class("high", 10)])
    bench.create(make_node(f"node-{i}") for i in range(nodes))
    bench.create(make_pod(f"low-{i}", "900m", "500Mi", priority_class="low", grace=0) for i in range(4 * nodes))
    bench.drain()
    high = [make_pod(f"high-{i}", "3000m", "500Mi", priority_class="high") for i in range(nodes)]
    # preemptors bind on their retry, after the victims are gone and their backoff expired
    return bench.measure(f"PreemptionBasic/{nodes}Nodes", high, settle=30.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    print(run(parser.parse_args().nodes).line())
